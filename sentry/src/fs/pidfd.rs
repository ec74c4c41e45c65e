//! A pidfd (`pidfd_open`): a descriptor naming one process. It becomes
//! readable when the process exits, so poll, select and epoll can wait
//! for a process that is not one's child; `pidfd_send_signal` and
//! `waitid(P_PIDFD)` act on the process it names.

use crate::abi::poll::{POLLHUP, POLLIN, POLLRDNORM};
use crate::kernel::ThreadGroup;
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::Entry;
use std::sync::Arc;

pub(crate) struct PidFd {
    ino: u64,
    created: TimeSpec,
    group: Arc<ThreadGroup>,
    /// PIDFD_THREAD: it names this thread (a signal goes to the thread).
    /// A leader's is readable when the whole process exited, another
    /// thread's as soon as that thread exited.
    thread: Option<i32>,
}

impl PidFd {
    pub(crate) fn new(ino: u64, created: TimeSpec, group: Arc<ThreadGroup>) -> Arc<PidFd> {
        Arc::new(PidFd { ino, created, group, thread: None })
    }

    /// A PIDFD_THREAD pidfd of thread `tid` of `group`.
    pub(crate) fn of_thread(ino: u64, created: TimeSpec, group: Arc<ThreadGroup>, tid: i32) -> Arc<PidFd> {
        Arc::new(PidFd { ino, created, group, thread: Some(tid) })
    }

    /// The thread it names (PIDFD_THREAD), if any.
    pub(crate) fn thread(&self) -> Option<i32> {
        self.thread
    }

    /// It names a thread other than the leader, which exited.
    fn thread_exited(&self) -> bool {
        self.thread.is_some_and(|t| t != self.group.tgid() && !self.group.has_thread(t))
    }

    /// The process it names.
    pub(crate) fn group(&self) -> &Arc<ThreadGroup> {
        &self.group
    }

    pub(crate) fn pid(&self) -> i32 {
        self.group.tgid()
    }
}

super::anon::anon_inode_node!(PidFd, usize::MAX - 9);

impl FileOps for PidFd {
    fn seekable(&self) -> bool {
        false
    }

    /// Readable once the process exited; hung up too once it was reaped
    /// (Linux 6.10's pidfd_poll).
    fn poll_events(&self) -> u32 {
        if self.group.is_reaped() {
            POLLIN | POLLRDNORM | POLLHUP
        } else if self.group.process().status.is_some() || self.thread_exited() {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    fn event_register(&self, e: &Entry) {
        self.group.exited().register(e);
        if self.thread.is_some() {
            self.group.thread_left().register(e);
        }
    }

    fn event_unregister(&self, e: &Entry) {
        self.group.exited().unregister(e);
        if self.thread.is_some() {
            self.group.thread_left().unregister(e);
        }
    }
}
