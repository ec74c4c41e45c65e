//! Pipes: a bounded byte buffer between a read end and a write end.

use crate::abi::ioctl::FIONREAD;
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::mm::accounting::{self, Charge};
use crate::vfs::{Fasync, FileOps, IoctlContext, Node, Stat, StatFs, TimeSpec, S_IFIFO};
use crate::waiter::{self, Entry, Queue};
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Weak};

/// The `f_type` of an anonymous pipe's filesystem.
const PIPEFS_MAGIC: u64 = 0x5049_5045;

/// Linux's default pipe capacity.
pub(crate) const PIPE_CAPACITY: usize = 65536;
/// The most an unprivileged F_SETPIPE_SZ may ask for: Linux's default
/// /proc/sys/fs/pipe-max-size.
pub(crate) const PIPE_MAX_SIZE: usize = 1 << 20;
/// The largest capacity any F_SETPIPE_SZ may ask for (Linux's bound).
const PIPE_SIZE_LIMIT: usize = 1 << 31;
const PAGE: usize = 4096;
/// Writes up to this size are atomic.
pub(crate) const PIPE_BUF: usize = 4096;

struct State {
    buf: VecDeque<u8>,
    /// How many bytes it holds at most (F_SETPIPE_SZ).
    capacity: usize,
    readers: usize,
    writers: usize,
    /// Read and write ends ever opened: a FIFO opener waits for the other
    /// kind's count to move (Linux's r_counter, w_counter).
    opened_readers: u64,
    opened_writers: u64,
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
pub(crate) struct Pipe {
    me: Weak<Pipe>,
    state: Mutex<State>,
    /// Readers wait here for data, writers for room.
    queue: Queue,
    ino: u64,
    created: TimeSpec,
}

impl Pipe {
    pub(crate) fn new(ino: u64, now: TimeSpec) -> Arc<Pipe> {
        Arc::new_cyclic(|me| Pipe {
            me: me.clone(),
            state: Mutex::new(State {
                buf: VecDeque::new(),
                capacity: PIPE_CAPACITY,
                readers: 0,
                writers: 0,
                opened_readers: 0,
                opened_writers: 0,
                produced: 0,
                consumed: 0,
                charge: Charge::new(accounting::sandbox()),
            }),
            queue: Queue::default(),
            ino,
            created: now,
        })
    }

    /// The read end (counted until dropped).
    pub(crate) fn reader(self: &Arc<Pipe>) -> Arc<PipeEnd> {
        self.end(true, false, 0, None)
    }

    /// The write end (counted until dropped).
    pub(crate) fn writer(self: &Arc<Pipe>) -> Arc<PipeEnd> {
        self.end(false, true, 0, None)
    }

    /// An end that reads, writes or both (a FIFO opened O_RDWR), counted
    /// until dropped (see `PipeEnd::hup_after`, `PipeEnd::awaits`).
    /// Openers waiting for a partner are woken.
    fn end(self: &Arc<Pipe>, read: bool, write: bool, hup_after: u64, awaits: Option<u64>) -> Arc<PipeEnd> {
        {
            let mut s = self.state.lock();
            if read {
                s.readers += 1;
                s.opened_readers += 1;
            }
            if write {
                s.writers += 1;
                s.opened_writers += 1;
            }
        }
        self.queue.notify(waiter::ALL);
        Arc::new(PipeEnd { pipe: self.clone(), read, write, hup_after, awaits })
    }

    /// Its capacity in bytes (F_GETPIPE_SZ).
    pub(crate) fn capacity(&self) -> usize {
        self.state.lock().capacity
    }

    /// F_SETPIPE_SZ: sets the capacity to `size` rounded up to a power of
    /// two pages (at least one) and returns it. EINVAL past 2 GiB, EPERM
    /// past pipe-max-size unless `privileged` (CAP_SYS_RESOURCE), EBUSY
    /// below the bytes queued.
    pub(crate) fn set_capacity(&self, size: usize, privileged: bool) -> Result<usize, Errno> {
        if size > PIPE_SIZE_LIMIT {
            return Err(Errno::EINVAL);
        }
        let size = size.max(1).div_ceil(PAGE).next_power_of_two() * PAGE;
        if size > PIPE_MAX_SIZE && !privileged {
            return Err(Errno::EPERM);
        }
        {
            let mut s = self.state.lock();
            if s.buf.len() > size {
                return Err(Errno::EBUSY);
            }
            s.capacity = size;
        }
        self.queue.notify(POLLOUT | POLLWRNORM);
        Ok(size)
    }

    /// Opens an end as open(2) of a FIFO does (Linux's `fifo_open`): a
    /// reader must wait until a writer opens, a writer until a reader
    /// does, unless O_NONBLOCK (then a writer without a reader fails with
    /// ENXIO); O_RDWR never waits. The end does not wait itself: until
    /// its partner came, its `open_ready` fails with EAGAIN and the opener
    /// waits on the pipe's queue (giving the end up if interrupted).
    /// An `anonymous` pipe (opened by a /proc name) never waits and never
    /// fails, as Linux's pipefs inodes: a reader after the last writer
    /// reads EOF, a writer after the last reader (even O_NONBLOCK) gets
    /// EPIPE.
    pub(crate) fn open_end(self: &Arc<Pipe>, flags: i32, anonymous: bool) -> Result<Arc<PipeEnd>, Errno> {
        let nonblock = flags & libc::O_NONBLOCK != 0;
        let (read, write) = match flags & libc::O_ACCMODE {
            libc::O_RDONLY => (true, false),
            libc::O_WRONLY => (false, true),
            libc::O_RDWR => return Ok(self.end(true, true, 0, None)),
            _ => return Err(Errno::EINVAL),
        };
        let (present, seen) = {
            let s = self.state.lock();
            if read {
                (s.writers, s.opened_writers)
            } else {
                (s.readers, s.opened_readers)
            }
        };
        if anonymous {
            return Ok(self.end(read, write, 0, None));
        }
        if write && nonblock && present == 0 {
            return Err(Errno::ENXIO);
        }
        // A reader that opens without waiting for a writer does not hang up
        // before one came and went.
        let hup_after = if read && nonblock && present == 0 { seen } else { 0 };
        let awaits = (!nonblock && present == 0).then_some(seen);
        Ok(self.end(read, write, hup_after, awaits))
    }
}

impl Node for Pipe {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x0d, self.ino, S_IFIFO | 0o600, self.created))
    }

    /// Opening a pipe by name (/proc/self/fd/N, /dev/stdin) opens another
    /// end of it, as Linux opens its inode as a FIFO.
    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let me = self.me.upgrade().ok_or(Errno::ENXIO)?;
        let end: Arc<dyn FileOps> = me.open_end(flags, true)?;
        Ok(end)
    }

    /// pipefs, as Linux's `simple_statfs` reports it.
    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(StatFs { fs_type: PIPEFS_MAGIC, bsize: 4096, namelen: 255, frsize: 4096, ..StatFs::default() })
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 1
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The pipe of a named FIFO: made by its first open and gone with its
/// last end (with any bytes left in it), as Linux's `inode->i_pipe`.
#[derive(Default)]
pub(crate) struct FifoSlot(Mutex<Weak<Pipe>>);

impl FifoSlot {
    /// Opens the FIFO (inode `ino`) as `Pipe::open_end` does.
    pub(crate) fn open(&self, ino: u64, now: TimeSpec, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let pipe = {
            let mut slot = self.0.lock();
            match slot.upgrade() {
                Some(p) => p,
                None => {
                    let p = Pipe::new(ino, now);
                    *slot = Arc::downgrade(&p);
                    p
                }
            }
        };
        let end: Arc<dyn FileOps> = pipe.open_end(flags, false)?;
        Ok(end)
    }
}

/// The pipes of FIFOs whose filesystem keeps no per-inode state the
/// pipe could live in, by the FIFO's identity: every open of one FIFO,
/// by any path or hard link, meets at one pipe while an end of it is
/// open, as Linux's `inode->i_pipe`.
pub(crate) struct FifoTable<K>(Mutex<BTreeMap<K, Weak<Pipe>>>);

impl<K: Ord> Default for FifoTable<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord> FifoTable<K> {
    pub(crate) const fn new() -> FifoTable<K> {
        FifoTable(Mutex::new(BTreeMap::new()))
    }

    /// Opens the FIFO `key` (inode `ino`) as `Pipe::open_end` does.
    pub(crate) fn open(&self, key: K, ino: u64, now: TimeSpec, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let pipe = {
            let mut fifos = self.0.lock();
            fifos.retain(|_, p| p.strong_count() > 0);
            match fifos.get(&key).and_then(Weak::upgrade) {
                Some(p) => p,
                None => {
                    let p = Pipe::new(ino, now);
                    fifos.insert(key, Arc::downgrade(&p));
                    p
                }
            }
        };
        let end: Arc<dyn FileOps> = pipe.open_end(flags, false)?;
        Ok(end)
    }
}

/// The FIFOs of files a gofer serves, by the host file's (device, inode),
/// whichever gofer serves them. The host FIFO itself is never opened: a
/// sandbox's FIFO does not reach host processes that open the same file
/// outside it.
static HOST_FIFOS: FifoTable<(u64, u64)> = FifoTable::new();

/// Opens the FIFO that is the host file `(dev, ino)`.
pub(crate) fn open_host_fifo(dev: u64, ino: u64, now: TimeSpec, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
    HOST_FIFOS.open((dev, ino), ino, now, flags)
}

/// One end of a pipe. It never blocks: an end that is not ready fails
/// with EAGAIN, and the caller waits on the pipe's queue.
pub(crate) struct PipeEnd {
    pipe: Arc<Pipe>,
    read: bool,
    write: bool,
    /// A reader reports POLLHUP without writers only once the writers ever
    /// opened are not this many: a FIFO reader opened O_NONBLOCK without
    /// a writer does not hang up before one came (Linux's `f_pipe`); 0
    /// for other ends.
    hup_after: u64,
    /// A FIFO end opened to wait for its partner: the partner kind's
    /// ends ever opened when it opened (Linux's r_counter, w_counter);
    /// the open completes once that count moves.
    awaits: Option<u64>,
}

impl PipeEnd {
    /// (bytes ever written, bytes ever read).
    pub(crate) fn positions(&self) -> (u64, u64) {
        let s = self.pipe.state.lock();
        (s.produced, s.consumed)
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        {
            let mut s = self.pipe.state.lock();
            if self.write {
                s.writers -= 1;
            }
            if self.read {
                s.readers -= 1;
            }
        }
        self.pipe.queue.notify(waiter::ALL);
    }
}

impl PipeEnd {
    /// Reads what is queued, EOF without writers, else EAGAIN; `peek`
    /// copies the bytes out but leaves them queued (MSG_PEEK).
    pub(crate) fn try_read(&self, buf: &mut [u8], peek: bool) -> Result<usize, Errno> {
        if !self.read {
            return Err(Errno::EBADF);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let n = {
            let mut s = self.pipe.state.lock();
            if s.buf.is_empty() {
                return if s.writers == 0 { Ok(0) } else { Err(Errno::EAGAIN) };
            }
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
            n
        };
        self.pipe.queue.notify(POLLOUT | POLLWRNORM);
        Ok(n)
    }

    /// Copies the bytes queued past the first `skip` into `buf`, leaving
    /// them queued (a Unix stream's MSG_PEEK beyond urgent data): EOF
    /// without writers when there are none, else EAGAIN.
    pub(crate) fn peek_at(&self, buf: &mut [u8], skip: usize) -> Result<usize, Errno> {
        if !self.read {
            return Err(Errno::EBADF);
        }
        let s = self.pipe.state.lock();
        if s.buf.len() <= skip {
            return if s.writers == 0 { Ok(0) } else { Err(Errno::EAGAIN) };
        }
        let mut n = 0;
        for (dst, src) in buf.iter_mut().zip(s.buf.iter().skip(skip)) {
            *dst = *src;
            n += 1;
        }
        Ok(n)
    }

    /// Tells the pipe's waiters of `mask` (a Unix stream's urgent data,
    /// which the buffer itself does not know of).
    pub(crate) fn notify_waiters(&self, mask: u32) {
        self.pipe.queue.notify(mask);
    }

    /// The room in the pipe now (EAGAIN when there is none); EPIPE
    /// without readers. For splice, which moves only what fits rather
    /// than blocking mid-transfer.
    pub(crate) fn room(&self) -> Result<usize, Errno> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let s = self.pipe.state.lock();
        match s.capacity - s.buf.len() {
            _ if s.readers == 0 => Err(Errno::EPIPE),
            0 => Err(Errno::EAGAIN),
            n => Ok(n),
        }
    }

    /// Whether `other` is an end of the same pipe.
    pub(crate) fn same_pipe(&self, other: &PipeEnd) -> bool {
        Arc::ptr_eq(&self.pipe, &other.pipe)
    }

    /// Writes what fits: all of a write of at most PIPE_BUF bytes or
    /// none of it (EAGAIN), as much as there is room for of a larger one.
    fn try_write(&self, buf: &[u8]) -> Result<usize, Errno> {
        if !self.write {
            return Err(Errno::EBADF);
        }
        let n = {
            let mut s = self.pipe.state.lock();
            if s.readers == 0 {
                return Err(Errno::EPIPE);
            }
            let room = s.capacity - s.buf.len();
            let fits = if buf.len() <= PIPE_BUF { room >= buf.len() } else { room > 0 };
            if !fits {
                return Err(Errno::EAGAIN);
            }
            let n = buf.len().min(room);
            // Past the sandbox's memory limit a write fails as Linux's
            // does when it cannot get a page.
            if !s.charge.grow(n as u64) {
                return Err(Errno::ENOMEM);
            }
            s.buf.extend(&buf[..n]);
            s.produced = s.produced.wrapping_add(n as u64);
            n
        };
        self.pipe.queue.notify(POLLIN | POLLRDNORM);
        Ok(n)
    }
}

impl PipeEnd {
    /// The bytes waiting to be read (FIONREAD).
    pub(crate) fn buffered(&self) -> usize {
        self.pipe.state.lock().buf.len()
    }
}

impl FileOps for PipeEnd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.try_read(buf, false)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.try_write(buf)
    }

    /// A FIFO end is open once an end of the other kind opened after it
    /// began to wait.
    fn open_ready(&self) -> Result<(), Errno> {
        let Some(seen) = self.awaits else { return Ok(()) };
        let s = self.pipe.state.lock();
        let opened = if self.read { s.opened_writers } else { s.opened_readers };
        if opened != seen {
            Ok(())
        } else {
            Err(Errno::EAGAIN)
        }
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let s = self.pipe.state.lock();
        let mut ev = 0;
        if self.write {
            if s.readers == 0 {
                ev |= POLLERR;
            } else if s.capacity - s.buf.len() >= PIPE_BUF.min(s.capacity) {
                ev |= POLLOUT | POLLWRNORM;
            }
        }
        if self.read {
            if !s.buf.is_empty() {
                ev |= POLLIN | POLLRDNORM;
            }
            if s.writers == 0 && s.opened_writers != self.hup_after {
                ev |= POLLHUP;
            }
        }
        ev
    }

    /// FIONREAD: the bytes waiting to be read.
    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        let mm = ctx.mm();
        if req != FIONREAD {
            return Err(Errno::ENOTTY);
        }
        let n = u32::try_from(self.buffered()).unwrap_or(u32::MAX);
        mm.copy_out(arg, &n.to_le_bytes())?;
        Ok(0)
    }

    fn pipe_capacity(&self, set: Option<(usize, bool)>) -> Result<usize, Errno> {
        match set {
            None => Ok(self.pipe.capacity()),
            Some((size, privileged)) => self.pipe.set_capacity(size, privileged),
        }
    }

    fn event_register(&self, e: &Entry) {
        self.pipe.queue.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.pipe.queue.unregister(e);
    }

    fn fasync(&self) -> Option<Fasync> {
        Some(Fasync::Pipe { read: self.read, write: self.write })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_eof() {
        let p = Pipe::new(1, TimeSpec::default());
        let (r, w) = (p.reader(), p.writer());
        assert_eq!(w.write(b"hello", 0).unwrap(), 5);
        let mut buf = [0u8; 8];
        assert_eq!(r.read(&mut buf, 0).unwrap(), 5);
        assert_eq!(&buf[..5], b"hello");
        drop(w);
        assert_eq!(r.read(&mut buf, 0).unwrap(), 0, "EOF once every writer is gone");
    }

    #[test]
    fn broken_pipe_and_would_block() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = p.reader();
        let w = p.writer();
        let mut buf = [0u8; 4];
        assert_eq!(r.read(&mut buf, 0), Err(Errno::EAGAIN));
        let big = vec![0u8; PIPE_CAPACITY + 10];
        assert_eq!(w.write(&big, 0).unwrap(), PIPE_CAPACITY);
        assert_eq!(w.write(b"x", 0), Err(Errno::EAGAIN));
        drop(r);
        assert_eq!(w.write(b"x", 0), Err(Errno::EPIPE));
    }

    #[test]
    fn capacity_is_a_power_of_two_pages_within_limits() {
        let p = Pipe::new(1, TimeSpec::default());
        let w = p.writer();
        let _r = p.reader();
        assert_eq!(p.capacity(), PIPE_CAPACITY);
        assert_eq!(p.set_capacity(0, false), Ok(4096));
        assert_eq!(p.set_capacity(4097, false), Ok(8192));
        assert_eq!(p.set_capacity(PIPE_MAX_SIZE + 1, false), Err(Errno::EPERM));
        assert_eq!(p.set_capacity(PIPE_MAX_SIZE + 1, true), Ok(2 * PIPE_MAX_SIZE));
        assert_eq!(p.set_capacity(PIPE_SIZE_LIMIT + 1, true), Err(Errno::EINVAL));
        assert_eq!(p.set_capacity(8192, false), Ok(8192));
        assert_eq!(w.write(&[0u8; 10_000], 0), Ok(8192), "a write fills the capacity");
        assert_eq!(p.set_capacity(4096, false), Err(Errno::EBUSY));
    }

    #[test]
    fn a_fifo_end_opens_once_its_partner_came() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = p.open_end(libc::O_RDONLY, false).unwrap();
        assert_eq!(r.open_ready(), Err(Errno::EAGAIN), "a reader waits for a writer");
        let woken = Arc::new(crate::testing::Count::default());
        let e = Entry::new(waiter::ALL, woken.clone());
        r.event_register(&e);
        let w = p.open_end(libc::O_WRONLY, false).unwrap();
        assert_eq!(woken.get(), 1, "the writer's open wakes the waiting reader");
        assert_eq!((r.open_ready(), w.open_ready()), (Ok(()), Ok(())), "a reader was there");
        drop((r, w));
        let nb = p.open_end(libc::O_RDONLY | libc::O_NONBLOCK, false).unwrap();
        assert_eq!(nb.open_ready(), Ok(()), "O_NONBLOCK does not wait");
        assert_eq!(p.open_end(libc::O_RDWR, false).unwrap().open_ready(), Ok(()));
        drop(nb);
        assert_eq!(p.open_end(libc::O_WRONLY | libc::O_NONBLOCK, false).err(), Some(Errno::ENXIO));
    }

    #[test]
    fn an_anonymous_pipe_end_never_waits() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = p.open_end(libc::O_RDONLY, true).unwrap();
        assert_eq!(r.open_ready(), Ok(()), "a reader after the last writer reads EOF");
        drop(r);
        let w = p.open_end(libc::O_WRONLY | libc::O_NONBLOCK, true).unwrap();
        assert_eq!(w.open_ready(), Ok(()), "a writer after the last reader opens");
        assert_eq!(w.write(b"x", 0), Err(Errno::EPIPE));
    }
}
