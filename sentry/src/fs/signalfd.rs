//! signalfd: the reading thread's pending signals of a mask, read as
//! `struct signalfd_siginfo` records instead of running handlers.

use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::kernel::siginfo::SigInfo;
use crate::kernel::thread;
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::{Entry, Forward, Queue, ALL};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// The size of `struct signalfd_siginfo`.
const RECORD: usize = 128;

pub(crate) struct SignalFd {
    ino: u64,
    created: TimeSpec,
    mask: AtomicU64,
    /// Pollers wait here; the signal queues of the threads that
    /// registered forward to it.
    events: Arc<Queue>,
    forwarded: Mutex<Vec<Weak<thread::Thread>>>,
}

impl SignalFd {
    pub(crate) fn new(ino: u64, created: TimeSpec, mask: u64) -> Arc<SignalFd> {
        Arc::new(SignalFd {
            ino,
            created,
            mask: AtomicU64::new(mask),
            events: Arc::default(),
            forwarded: Mutex::default(),
        })
    }

    /// Changes the mask (signalfd on this file) and wakes the pollers, as
    /// Linux does: a signal already pending may now make it readable.
    pub(crate) fn set_mask(&self, mask: u64) {
        self.mask.store(mask, Ordering::Relaxed);
        self.events.notify(ALL);
    }

    /// Takes one pending signal of the mask from the calling thread.
    fn take(&self) -> Option<SigInfo> {
        thread::current()?.take_any(self.mask.load(Ordering::Relaxed))
    }
}

super::anon::anon_inode_node!(SignalFd, usize::MAX - 6);

impl FileOps for SignalFd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if buf.len() < RECORD {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while done + RECORD <= buf.len() {
            let Some(info) = self.take() else { break };
            buf[done..done + RECORD].copy_from_slice(&info.signalfd_record());
            done += RECORD;
        }
        // Without a signal the caller waits on the thread's signal queue.
        if done > 0 {
            Ok(done)
        } else {
            Err(Errno::EAGAIN)
        }
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let ready = thread::current().is_some_and(|t| t.pending() & self.mask.load(Ordering::Relaxed) != 0);
        if ready {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    /// Readiness is the calling thread's pending signals (as in Linux):
    /// its signal queue forwards to this file's.
    fn event_register(&self, e: &Entry) {
        if let Some(t) = thread::current() {
            let mut f = self.forwarded.lock();
            f.retain(|w| w.strong_count() > 0);
            if !f.iter().any(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(&t))) {
                t.signal_events().register(&Entry::new(ALL, Arc::new(Forward(Arc::downgrade(&self.events)))));
                f.push(Arc::downgrade(&t));
            }
        }
        self.events.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }
}
