//! signalfd: the reading thread's pending signals of a mask, read as
//! `struct signalfd_siginfo` records instead of running handlers.

use crate::abi::Errno;
use crate::kernel::siginfo::SigInfo;
use crate::kernel::{thread, wait};
use crate::vfs::{FileOps, Node, Stat, TimeSpec, POLLIN, POLLRDNORM};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The size of `struct signalfd_siginfo`.
const RECORD: usize = 128;

pub struct SignalFd {
    ino: u64,
    created: TimeSpec,
    pub mask: AtomicU64,
    nonblock: AtomicBool,
}

impl SignalFd {
    pub fn new(ino: u64, created: TimeSpec, mask: u64, nonblock: bool) -> Arc<SignalFd> {
        Arc::new(SignalFd { ino, created, mask: AtomicU64::new(mask), nonblock: AtomicBool::new(nonblock) })
    }

    /// Takes one pending signal of the mask from the calling thread.
    fn take(&self) -> Option<SigInfo> {
        thread::current()?.take_any(self.mask.load(Ordering::Relaxed))
    }
}

impl Node for SignalFd {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x0e, self.ino, 0o600, self.created))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 6
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl FileOps for SignalFd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if buf.len() < RECORD {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        loop {
            while done + RECORD <= buf.len() {
                let Some(info) = self.take() else { break };
                buf[done..done + RECORD].copy_from_slice(&info.signalfd_record());
                done += RECORD;
            }
            if done > 0 {
                return Ok(done);
            }
            if self.nonblock.load(Ordering::Relaxed) {
                return Err(Errno::EAGAIN);
            }
            // Any signal sent to the thread ends the sleep; look again.
            if wait::sleep_until(Instant::now() + Duration::from_secs(1 << 32)).is_err() {
                if let Some(t) = thread::current() {
                    if t.exiting.load(Ordering::SeqCst) || t.sigpending.load(Ordering::SeqCst) & !t.sigmask() != 0 {
                        return Err(Errno::ERESTARTSYS);
                    }
                    t.interrupted.store(false, Ordering::SeqCst);
                }
            }
        }
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let ready = thread::current()
            .is_some_and(|t| t.sigpending.load(Ordering::SeqCst) & self.mask.load(Ordering::Relaxed) != 0);
        if ready {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), Ordering::Relaxed);
    }
}
