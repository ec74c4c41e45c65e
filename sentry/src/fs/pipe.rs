//! Pipes: a bounded byte buffer between a read end and a write end.

use crate::abi::Errno;
use crate::kernel::wait::{wait_once, Waker};
use crate::mm::accounting::{self, Charge};
use crate::vfs::{FileOps, Node, Stat, TimeSpec, POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM, S_IFIFO};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Linux's default pipe capacity.
pub const PIPE_CAPACITY: usize = 65536;
/// Writes up to this size are atomic.
pub const PIPE_BUF: usize = 4096;

struct State {
    buf: VecDeque<u8>,
    readers: usize,
    writers: usize,
    /// Bytes ever written and ever read: stream positions that Unix
    /// sockets attach in-flight descriptors to.
    produced: u64,
    consumed: u64,
    /// The queued bytes, charged to the sandbox's memory: the number of
    /// pipes times their capacity does not bound what pipes hold, this
    /// does.
    charge: Charge,
}

/// The shared buffer, which is also the pipe's inode.
pub struct Pipe {
    state: Mutex<State>,
    cond: Condvar,
    ino: u64,
    created: TimeSpec,
}

impl Pipe {
    pub fn new(ino: u64, now: TimeSpec) -> Arc<Pipe> {
        Arc::new(Pipe {
            state: Mutex::new(State {
                buf: VecDeque::new(),
                readers: 0,
                writers: 0,
                produced: 0,
                consumed: 0,
                charge: Charge::new(accounting::sandbox()),
            }),
            cond: Condvar::new(),
            ino,
            created: now,
        })
    }

    /// The read end (counted until dropped).
    pub fn reader(self: &Arc<Pipe>, nonblock: bool) -> Arc<PipeEnd> {
        self.state.lock().readers += 1;
        Arc::new(PipeEnd { pipe: self.clone(), write: false, nonblock: AtomicBool::new(nonblock) })
    }

    /// The write end (counted until dropped).
    pub fn writer(self: &Arc<Pipe>, nonblock: bool) -> Arc<PipeEnd> {
        self.state.lock().writers += 1;
        Arc::new(PipeEnd { pipe: self.clone(), write: true, nonblock: AtomicBool::new(nonblock) })
    }

    /// Wakes whoever waits on this pipe (to notice an interruption).
    fn waker(self: &Arc<Pipe>) -> Waker {
        let p = self.clone();
        Arc::new(move || {
            let _g = p.state.lock();
            p.cond.notify_all();
        })
    }

    /// Bytes waiting to be read (FIONREAD).
    pub fn available(&self) -> usize {
        self.state.lock().buf.len()
    }
}

impl Node for Pipe {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x0d, self.ino, S_IFIFO | 0o600, self.created))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 1
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// One end of a pipe.
pub struct PipeEnd {
    pipe: Arc<Pipe>,
    write: bool,
    nonblock: AtomicBool,
}

impl PipeEnd {
    /// (bytes ever written, bytes ever read).
    pub fn positions(&self) -> (u64, u64) {
        let s = self.pipe.state.lock();
        (s.produced, s.consumed)
    }

    fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        let mut s = self.pipe.state.lock();
        if self.write {
            s.writers -= 1;
        } else {
            s.readers -= 1;
        }
        self.pipe.cond.notify_all();
        crate::kernel::wait::readiness_changed();
    }
}

impl PipeEnd {
    /// Reads; `dontwait` makes this one call non-blocking (MSG_DONTWAIT);
    /// `peek` copies the bytes out but leaves them queued (MSG_PEEK).
    pub fn read_with(&self, buf: &mut [u8], dontwait: bool, peek: bool) -> Result<usize, Errno> {
        if self.write {
            return Err(Errno::EBADF);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let mut s = self.pipe.state.lock();
        loop {
            if !s.buf.is_empty() {
                let n = buf.len().min(s.buf.len());
                if peek {
                    for (dst, src) in buf.iter_mut().zip(s.buf.iter()) {
                        *dst = *src;
                    }
                    return Ok(n);
                }
                for (dst, src) in buf.iter_mut().zip(s.buf.drain(..n)) {
                    *dst = src;
                }
                s.charge.shrink(n as u64);
                s.consumed = s.consumed.wrapping_add(n as u64);
                self.pipe.cond.notify_all();
                crate::kernel::wait::readiness_changed();
                return Ok(n);
            }
            if s.writers == 0 {
                return Ok(0);
            }
            if dontwait || self.nonblocking() {
                return Err(Errno::EAGAIN);
            }
            wait_once(&mut s, &self.pipe.cond, self.pipe.waker())?;
        }
    }

    /// Waits until the pipe has room (unless `dontwait`: EAGAIN) and
    /// returns how much; EPIPE without readers. For splice, which moves
    /// only what fits rather than blocking mid-transfer.
    pub fn wait_room(&self, dontwait: bool) -> Result<usize, Errno> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let mut s = self.pipe.state.lock();
        loop {
            if s.readers == 0 {
                return Err(Errno::EPIPE);
            }
            let room = PIPE_CAPACITY - s.buf.len();
            if room > 0 {
                return Ok(room);
            }
            if dontwait || self.nonblocking() {
                return Err(Errno::EAGAIN);
            }
            wait_once(&mut s, &self.pipe.cond, self.pipe.waker())?;
        }
    }

    /// Whether `other` is an end of the same pipe.
    pub fn same_pipe(&self, other: &PipeEnd) -> bool {
        Arc::ptr_eq(&self.pipe, &other.pipe)
    }

    /// Writes; `dontwait` makes this one call non-blocking.
    pub fn write_with(&self, buf: &[u8], dontwait: bool) -> Result<usize, Errno> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let mut s = self.pipe.state.lock();
        let mut done = 0;
        while done < buf.len() {
            if s.readers == 0 {
                return if done > 0 { Ok(done) } else { Err(Errno::EPIPE) };
            }
            let room = PIPE_CAPACITY - s.buf.len();
            let rest = buf.len() - done;
            // Writes of at most PIPE_BUF bytes go in whole or not at all.
            let fits = if rest <= PIPE_BUF { room >= rest } else { room > 0 };
            if fits {
                let n = rest.min(room);
                // Past the sandbox's memory limit a write fails as Linux's
                // does when it cannot get a page: ENOMEM, after any bytes
                // already written.
                if !s.charge.grow(n as u64) {
                    return if done > 0 { Ok(done) } else { Err(Errno::ENOMEM) };
                }
                s.buf.extend(&buf[done..done + n]);
                s.produced = s.produced.wrapping_add(n as u64);
                done += n;
                self.pipe.cond.notify_all();
                crate::kernel::wait::readiness_changed();
                continue;
            }
            if dontwait || self.nonblocking() {
                return if done > 0 { Ok(done) } else { Err(Errno::EAGAIN) };
            }
            match wait_once(&mut s, &self.pipe.cond, self.pipe.waker()) {
                Ok(()) => {}
                Err(_) if done > 0 => return Ok(done),
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl FileOps for PipeEnd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.read_with(buf, false, false)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.write_with(buf, false)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let s = self.pipe.state.lock();
        if self.write {
            let mut ev = 0;
            if s.readers == 0 {
                ev |= POLLERR;
            } else if PIPE_CAPACITY - s.buf.len() >= PIPE_BUF {
                ev |= POLLOUT | POLLWRNORM;
            }
            ev
        } else {
            let mut ev = 0;
            if !s.buf.is_empty() {
                ev |= POLLIN | POLLRDNORM;
            }
            if s.writers == 0 {
                ev |= POLLHUP;
            }
            ev
        }
    }

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_eof() {
        let p = Pipe::new(1, TimeSpec::default());
        let (r, w) = (p.reader(false), p.writer(false));
        assert_eq!(w.write(b"hello", 0).unwrap(), 5);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf, 0).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        drop(w);
        assert_eq!(r.read(&mut buf, 0).unwrap(), 0, "EOF once every writer is gone");
    }

    #[test]
    fn broken_pipe_and_nonblocking() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = p.reader(true);
        let w = p.writer(true);
        let mut buf = [0u8; 4];
        assert_eq!(r.read(&mut buf, 0), Err(Errno::EAGAIN));
        let big = vec![0u8; PIPE_CAPACITY + 10];
        assert_eq!(w.write(&big, 0).unwrap(), PIPE_CAPACITY);
        assert_eq!(w.write(b"x", 0), Err(Errno::EAGAIN));
        drop(r);
        assert_eq!(w.write(b"x", 0), Err(Errno::EPIPE));
    }

    #[test]
    fn blocking_reader_wakes_for_writer_in_another_thread() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = p.reader(false);
        let w = p.writer(false);
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 3];
            let n = r.read(&mut buf, 0).unwrap();
            buf[..n].to_vec()
        });
        w.write(b"abc", 0).unwrap();
        assert_eq!(t.join().unwrap(), b"abc");
    }
}
