//! eventfd: a 64-bit counter with read/write semantics for wake-ups.

use crate::abi::poll::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::{Entry, Queue};
use parking_lot::Mutex;
use std::sync::Arc;

/// An eventfd. It never blocks: a read of zero or a write that would
/// overflow fails with EAGAIN, and the caller waits on its queue.
pub(crate) struct EventFd {
    ino: u64,
    created: TimeSpec,
    semaphore: bool,
    count: Mutex<u64>,
    queue: Queue,
}

const MAX: u64 = u64::MAX - 1;

impl EventFd {
    pub(crate) fn new(ino: u64, created: TimeSpec, initial: u64, semaphore: bool) -> Arc<EventFd> {
        Arc::new(EventFd { ino, created, semaphore, count: Mutex::new(initial), queue: Queue::default() })
    }
}

super::anon::anon_inode_node!(EventFd, usize::MAX - 4);

impl FileOps for EventFd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let v = {
            let mut c = self.count.lock();
            if *c == 0 {
                return Err(Errno::EAGAIN);
            }
            let v = if self.semaphore { 1 } else { *c };
            *c -= v;
            v
        };
        self.queue.notify(POLLOUT | POLLWRNORM);
        buf[..8].copy_from_slice(&v.to_ne_bytes());
        Ok(8)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        let v = buf.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_ne_bytes).ok_or(Errno::EINVAL)?;
        if v == u64::MAX {
            return Err(Errno::EINVAL);
        }
        {
            let mut c = self.count.lock();
            if MAX - *c < v {
                return Err(Errno::EAGAIN);
            }
            *c += v;
        }
        self.queue.notify(POLLIN | POLLRDNORM);
        Ok(8)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let c = *self.count.lock();
        let mut ev = 0;
        if c > 0 {
            ev |= POLLIN | POLLRDNORM;
        }
        // At its maximum the counter takes no write: not writable (Linux
        // reports POLLERR only for a count past it, which no write makes).
        if c < MAX {
            ev |= POLLOUT | POLLWRNORM;
        }
        ev
    }

    fn event_register(&self, e: &Entry) {
        self.queue.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.queue.unregister(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_and_semaphore_modes() {
        let e = EventFd::new(1, TimeSpec::default(), 0, false);
        let mut b = [0u8; 8];
        assert_eq!(e.read(&mut b, 0), Err(Errno::EAGAIN));
        e.write(&3u64.to_ne_bytes(), 0).unwrap();
        e.write(&4u64.to_ne_bytes(), 0).unwrap();
        assert_eq!(e.read(&mut b, 0), Ok(8));
        assert_eq!(u64::from_ne_bytes(b), 7);
        let s = EventFd::new(2, TimeSpec::default(), 2, true);
        s.read(&mut b, 0).unwrap();
        assert_eq!(u64::from_ne_bytes(b), 1);
        assert_eq!(s.poll_events() & POLLIN, POLLIN);
        assert_eq!(s.write(&u64::MAX.to_ne_bytes(), 0), Err(Errno::EINVAL));
        assert_eq!(s.read(&mut [0u8; 4], 0), Err(Errno::EINVAL));
        let full = EventFd::new(3, TimeSpec::default(), MAX, false);
        assert_eq!(full.poll_events(), POLLIN | POLLRDNORM, "readable, not writable, no error");
        assert_eq!(full.write(&1u64.to_ne_bytes(), 0), Err(Errno::EAGAIN));
    }
}
