//! The calling guest process as a file sees it in an ioctl or a call
//! subject to job control: the kernel's implementation of
//! `vfs::IoctlContext`.

use super::signal::sigbit;
use super::{Kernel, Thread};
use crate::abi::signal::SIG_IGN;
use crate::abi::Errno;
use crate::mm::MemoryManager;
use crate::vfs::{FileDescription, IoctlContext};
use std::sync::{Arc, Weak};

/// A guest thread making a call, with its process's ids taken once.
pub(crate) struct Caller {
    kernel: Arc<Kernel>,
    thread: Arc<Thread>,
    mm: Arc<MemoryManager>,
    pgid: i32,
    sid: i32,
}

impl Caller {
    pub(crate) fn new(kernel: Arc<Kernel>, thread: Arc<Thread>) -> Caller {
        let tgid = thread.tgid;
        let pgid = kernel.procs.pgid(tgid).unwrap_or(tgid);
        let sid = kernel.procs.sid(tgid).unwrap_or(0);
        let mm = thread.mm();
        Caller { kernel, thread, mm, pgid, sid }
    }

    /// The guest thread the calling host thread runs, if it runs one and
    /// `kernel` is still there (a call from the console bridge has none).
    pub(crate) fn current(kernel: &Weak<Kernel>) -> Option<Caller> {
        Some(Caller::new(kernel.upgrade()?, super::thread::current()?))
    }
}

impl IoctlContext for Caller {
    fn mm(&self) -> &MemoryManager {
        &self.mm
    }

    fn capable(&self, cap: u32) -> bool {
        self.thread.creds().capable(cap)
    }

    fn tgid(&self) -> i32 {
        self.thread.tgid
    }

    fn pgid(&self) -> i32 {
        self.pgid
    }

    fn sid(&self) -> i32 {
        self.sid
    }

    fn session_has_terminal(&self) -> bool {
        self.kernel.has_controlling_terminal(self.sid)
    }

    fn session_of_group(&self, pgid: i32) -> Option<i32> {
        let member = *self.kernel.procs.group_members(pgid).first()?;
        self.kernel.procs.sid(member)
    }

    fn signal_held(&self, sig: i32) -> bool {
        let Ok(idx) = usize::try_from(sig) else { return true };
        let ignored = self.thread.sigactions().swap(idx, None).handler == SIG_IGN;
        ignored || self.thread.sigmask() & sigbit(sig) != 0
    }

    fn group_orphaned(&self) -> bool {
        self.kernel.procs.group_orphaned(self.pgid)
    }

    fn signal_group(&self, pgid: i32, sig: i32) {
        self.kernel.signal_processes(&self.kernel.procs.group_members(pgid), sig);
    }

    fn install(&self, f: Arc<FileDescription>, cloexec: bool) -> Result<i32, Errno> {
        self.thread.fds().install(f, cloexec, 0, self.thread.nofile())
    }

    fn file(&self, fd: i32) -> Result<Arc<FileDescription>, Errno> {
        self.thread.fds().get(fd)
    }
}
