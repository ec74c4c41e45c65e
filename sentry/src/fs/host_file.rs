//! Files backed by a host descriptor: regular files donated by the gofer,
//! and the stdio streams the sandbox was started with.

use super::tty::termios::{TERMIOS_SIZE, WINSIZE_SIZE};
use crate::abi::ioctl::{FIONREAD, TCGETS, TCSETS, TCSETSF, TCSETSW, TIOCGWINSZ, TIOCSWINSZ};
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT};
use crate::abi::Errno;
use crate::host;
use crate::mm::{Mappable, MemoryManager};
use crate::vfs::{FileOps, IoctlContext};
use crate::waiter::{self, Entry, Queue};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A regular file read and written with `pread`/`pwrite` on a host fd.
/// Appends happen on the host, at the end the host file has then, so a
/// write the host makes meanwhile (a bind mount's file) is not overwritten.
pub(crate) struct HostFile {
    fd: Arc<OwnedFd>,
    name: String,
    ids: (u64, u64),
    /// The host descriptor is O_APPEND (as the guest opened it: an
    /// append-only host file opens no other way), so a write at an offset
    /// must say it does not append.
    host_appends: AtomicBool,
}

impl HostFile {
    /// `name`, `dev` and `ino` are what /proc/[pid]/maps shows;
    /// `host_appends` whether `fd` was opened O_APPEND.
    pub(crate) fn new(fd: Arc<OwnedFd>, name: String, dev: u64, ino: u64, host_appends: bool) -> HostFile {
        HostFile { fd, name, ids: (dev, ino), host_appends: AtomicBool::new(host_appends) }
    }

    /// Whether the host descriptor is O_APPEND.
    pub(crate) fn host_appends(&self) -> bool {
        self.host_appends.load(Ordering::Relaxed)
    }
}

/// `pread` on a host fd.
pub(crate) fn pread(fd: &OwnedFd, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
    host::fd::pread(fd.as_fd(), buf, off)
}

impl FileOps for HostFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        pread(&self.fd, buf, off)
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        if self.host_appends() {
            return host::fd::pwrite_noappend(self.fd.as_fd(), buf, off);
        }
        host::fd::pwrite(self.fd.as_fd(), buf, off)
    }

    fn append(&self, buf: &[u8]) -> Option<Result<(usize, u64), Errno>> {
        Some(host::fd::append(self.fd.as_fd(), buf))
    }

    /// The host descriptor follows (the host refuses for an append-only
    /// file).
    fn set_append(&self, append: bool) -> Result<(), Errno> {
        host::fd::set_append(self.fd.as_fd(), append)?;
        self.host_appends.store(append, Ordering::Relaxed);
        Ok(())
    }

    fn truncate(&self, len: u64) -> Result<(), Errno> {
        host::fd::ftruncate(self.fd.as_fd(), len)
    }

    fn fsync(&self) -> Result<(), Errno> {
        host::fd::fsync(self.fd.as_fd())
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        Some(Arc::new(HostFile {
            fd: self.fd.clone(),
            name: self.name.clone(),
            ids: self.ids,
            host_appends: AtomicBool::new(self.host_appends()),
        }))
    }
}

impl Mappable for HostFile {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        pread(&self.fd, buf, off)
    }

    fn map_name(&self) -> String {
        self.name.clone()
    }

    fn map_ids(&self) -> (u64, u64) {
        self.ids
    }

    fn size(&self) -> Option<u64> {
        host::fd::fstat(self.fd.as_fd()).ok().and_then(|st| u64::try_from(st.st_size).ok())
    }
}

/// One of the sandbox's standard streams: a host pipe, file or terminal
/// handed to the sentry by the runtime. Reads and writes go straight to it
/// when the host says they would not block, else fail with EAGAIN so the
/// caller waits on the host notifier, where an interruption reaches it.
/// The descriptor itself stays as the runtime gave it (its O_NONBLOCK is
/// shared with the host's other users of the same pipe or terminal).
pub(crate) struct HostStream {
    fd: Arc<OwnedFd>,
    /// The most one write hands the host: a pipe that polls writable has
    /// a free page, so a write of PIPE_BUF bytes does not block in the
    /// host; a longer one could. A regular file never blocks.
    chunk: usize,
    /// Waiters for the host descriptor's readiness, which the host
    /// notifier announces once it watches the descriptor.
    events: Arc<Queue>,
    /// Whether the host notifier watches the descriptor (set when the
    /// first waiter comes).
    watched: OnceLock<bool>,
    /// With secrets, writes go out redacted through this.
    redacted: Option<super::redacted::RedactedOutput>,
}

impl HostStream {
    pub(crate) fn new(fd: OwnedFd) -> HostStream {
        let regular = host::fd::fstat(fd.as_fd()).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG);
        let chunk = if regular { usize::MAX } else { libc::PIPE_BUF };
        let fd = Arc::new(fd);
        let redacted =
            crate::audit::redact::stream().map(|s| super::redacted::RedactedOutput::new(fd.clone(), chunk, s));
        HostStream { fd, chunk, events: Arc::default(), watched: OnceLock::new(), redacted }
    }

    /// An ioctl that copies a fixed-size struct out of the host.
    fn ioctl_out(&self, mm: &MemoryManager, req: u64, arg: u64, size: usize) -> Result<u64, Errno> {
        let mut buf = vec![0u8; size];
        host::fd::tty_ioctl(self.fd.as_fd(), req, &mut buf)?;
        mm.copy_out(arg, &buf)?;
        Ok(0)
    }

    /// An ioctl that copies a fixed-size struct into the host.
    fn ioctl_in(&self, mm: &MemoryManager, req: u64, arg: u64, size: usize) -> Result<u64, Errno> {
        let mut buf = vec![0u8; size];
        mm.copy_in(arg, &mut buf)?;
        host::fd::tty_ioctl(self.fd.as_fd(), req, &mut buf)?;
        Ok(0)
    }
}

impl HostStream {
    /// The host descriptor's poll events now.
    fn host_events(&self) -> u32 {
        match host::fd::poll_now(self.fd.as_fd(), libc::POLLIN | libc::POLLOUT) {
            Ok(revents) => u32::from(u16::from_ne_bytes(revents.to_ne_bytes())),
            Err(_) => POLLERR,
        }
    }
}

impl Drop for HostStream {
    fn drop(&mut self) {
        if self.watched.get() == Some(&true) {
            waiter::host::unwatch(self.fd.as_raw_fd());
        }
    }
}

impl FileOps for HostStream {
    /// Reads what the host descriptor holds; EAGAIN when a read would
    /// block, so the caller waits on the queue instead of in the host.
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if self.host_events() & (POLLIN | POLLHUP | POLLERR) == 0 {
            return Err(Errno::EAGAIN);
        }
        host::fd::read(self.fd.as_fd(), buf)
    }

    /// Writes what the host descriptor takes without blocking; EAGAIN
    /// when it has no room (a full pipe nobody reads), so the caller
    /// waits on the queue instead of in the host.
    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        if self.host_events() & (POLLOUT | POLLHUP | POLLERR) == 0 {
            return Err(Errno::EAGAIN);
        }
        if let Some(r) = &self.redacted {
            return r.write(buf);
        }
        let buf = &buf[..buf.len().min(self.chunk)];
        host::fd::write(self.fd.as_fd(), buf)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        self.host_events()
    }

    fn event_register(&self, e: &Entry) {
        self.watched.get_or_init(|| waiter::host::watch(self.fd.as_raw_fd(), &self.events));
        self.events.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        let mm = ctx.mm();
        match req {
            TCGETS => self.ioctl_out(mm, req, arg, TERMIOS_SIZE),
            TCSETS | TCSETSW | TCSETSF => self.ioctl_in(mm, req, arg, TERMIOS_SIZE),
            TIOCGWINSZ => self.ioctl_out(mm, req, arg, WINSIZE_SIZE),
            TIOCSWINSZ => self.ioctl_in(mm, req, arg, WINSIZE_SIZE),
            FIONREAD => self.ioctl_out(mm, req, arg, 4),
            _ => Err(Errno::ENOTTY),
        }
    }
}

/// The node behind a standard stream: `fstat` reports the host object
/// (a pipe, a terminal or a file) as Linux would.
pub(crate) struct HostStreamNode {
    stream: Arc<HostStream>,
}

impl HostStreamNode {
    pub(crate) fn new(fd: OwnedFd) -> HostStreamNode {
        HostStreamNode { stream: Arc::new(HostStream::new(fd)) }
    }

    /// The stream itself, to open it.
    pub(crate) fn stream(&self) -> Arc<HostStream> {
        self.stream.clone()
    }
}

impl crate::vfs::Node for HostStreamNode {
    fn stat(&self) -> Result<crate::vfs::Stat, Errno> {
        Ok(crate::vfs::Stat::from(&host::fd::fstat(self.stream.fd.as_fd())?))
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(self.stream.clone())
    }

    fn fs_id(&self) -> usize {
        usize::MAX
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
