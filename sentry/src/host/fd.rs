//! Host descriptors the sentry reads and writes for the guest (regular
//! files the gofer donated, the stdio streams the sandbox started with),
//! behind safe wrappers: the files in `fs/` call these and stay safe Rust.

use crate::abi::Errno;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Runs a host call that returns a byte count, retrying on EINTR.
fn io(mut f: impl FnMut() -> isize) -> Result<usize, Errno> {
    loop {
        let n = f();
        if let Ok(n) = usize::try_from(n) {
            return Ok(n);
        }
        let e = Errno::last_os_error();
        if e != Errno::EINTR {
            return Err(e);
        }
    }
}

/// Fails with the host's errno when `r` is not 0.
fn check(r: libc::c_int) -> Result<(), Errno> {
    if r == 0 {
        Ok(())
    } else {
        Err(Errno::last_os_error())
    }
}

fn off_t(off: u64) -> Result<libc::off_t, Errno> {
    libc::off_t::try_from(off).map_err(|_| Errno::EINVAL)
}

pub(crate) fn pread(fd: BorrowedFd<'_>, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
    let off = off_t(off)?;
    // SAFETY: the kernel writes at most buf.len() bytes into `buf`.
    io(|| unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), off) })
}

pub(crate) fn pwrite(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> Result<usize, Errno> {
    let off = off_t(off)?;
    // SAFETY: the kernel reads at most buf.len() bytes from `buf`.
    io(|| unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), off) })
}

/// `pwritev2(fd, [buf], off, flags)`, the offset -1 meaning the
/// descriptor's own position (used and advanced).
fn pwritev2(fd: BorrowedFd<'_>, buf: &[u8], off: libc::off_t, flags: libc::c_int) -> Result<usize, Errno> {
    let iov = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
    // The kernel splits the offset into a low and a high word; on x86_64
    // the low one holds it all.
    let (low, high): (libc::off_t, libc::off_t) = (off, 0);
    io(|| {
        // SAFETY: one iovec describing `buf`, which the kernel only reads
        // (at most buf.len() bytes); the other arguments are integers.
        let r = unsafe { libc::syscall(libc::SYS_pwritev2, fd.as_raw_fd(), &iov, 1, low, high, flags) };
        // (A syscall's result is an isize on x86_64.)
        isize::try_from(r).unwrap_or(-1)
    })
}

/// Appends `buf` at the end the host file has now, atomically against
/// the host's other writers (`RWF_APPEND`, whatever the descriptor's
/// O_APPEND), and returns the bytes written and the offset just past
/// them. The descriptor's own position records that offset: callers
/// serialize their appends on one descriptor and read nothing else from
/// its position.
pub(crate) fn append(fd: BorrowedFd<'_>, buf: &[u8]) -> Result<(usize, u64), Errno> {
    let n = pwritev2(fd, buf, -1, libc::RWF_APPEND)?;
    // SAFETY: lseek takes integers.
    let end = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_CUR) };
    let end = u64::try_from(end).map_err(|_| Errno::last_os_error())?;
    Ok((n, end))
}

/// `pwrite` at `off` on a descriptor opened O_APPEND, where a plain
/// `pwrite` would append (`RWF_NOAPPEND`, Linux 6.9; EOPNOTSUPP before,
/// and EPERM on an append-only file).
pub(crate) fn pwrite_noappend(fd: BorrowedFd<'_>, buf: &[u8], off: u64) -> Result<usize, Errno> {
    pwritev2(fd, buf, off_t(off)?, libc::RWF_NOAPPEND)
}

/// Turns `fd`'s O_APPEND on or off, its other status flags kept.
pub(crate) fn set_append(fd: BorrowedFd<'_>, append: bool) -> Result<(), Errno> {
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(Errno::last_os_error());
    }
    let flags = if append { flags | libc::O_APPEND } else { flags & !libc::O_APPEND };
    // SAFETY: F_SETFL takes an int.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags) })
}

pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: the kernel writes at most buf.len() bytes into `buf`.
    io(|| unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: the kernel reads at most buf.len() bytes from `buf`.
    io(|| unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

pub(crate) fn ftruncate(fd: BorrowedFd<'_>, len: u64) -> Result<(), Errno> {
    let len = off_t(len)?;
    // SAFETY: ftruncate takes integers.
    check(unsafe { libc::ftruncate(fd.as_raw_fd(), len) })
}

pub(crate) fn fsync(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: fsync takes an integer.
    check(unsafe { libc::fsync(fd.as_raw_fd()) })
}

pub(crate) fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, Errno> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a whole struct stat on success.
    check(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so the struct is initialized.
    Ok(unsafe { st.assume_init() })
}

/// The poll events (`revents`) of `fd` for `events` now, without waiting.
pub(crate) fn poll_now(fd: BorrowedFd<'_>, events: libc::c_short) -> Result<libc::c_short, Errno> {
    poll_for(fd, events, 0)
}

/// The poll events of `fd` for `events`, waiting up to `timeout_ms` for
/// one (0 when none came).
pub(crate) fn poll_for(fd: BorrowedFd<'_>, events: libc::c_short, timeout_ms: i32) -> Result<libc::c_short, Errno> {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events, revents: 0 };
    // SAFETY: one valid pollfd.
    if unsafe { libc::poll(&mut p, 1, timeout_ms) } < 0 {
        return Err(Errno::last_os_error());
    }
    Ok(p.revents)
}

/// The size of the struct a forwarded terminal request's argument points
/// at, and whether the host writes it (true) or reads it; None for a
/// request the sentry does not forward.
fn tty_request(req: u64) -> Option<(usize, bool)> {
    /// The kernel's `struct termios` and `struct winsize`.
    const TERMIOS: usize = 36;
    const WINSIZE: usize = 8;
    match req {
        libc::TCGETS => Some((TERMIOS, true)),
        libc::TCSETS | libc::TCSETSW | libc::TCSETSF => Some((TERMIOS, false)),
        libc::TIOCGWINSZ => Some((WINSIZE, true)),
        libc::TIOCSWINSZ => Some((WINSIZE, false)),
        libc::FIONREAD => Some((4, true)),
        _ => None,
    }
}

/// A terminal request forwarded to a host stdio descriptor: one of
/// TCGETS, TCSETS(W/F), TIOCGWINSZ, TIOCSWINSZ, FIONREAD, with `arg` the
/// struct it takes (filled in for the requests that read from the host).
/// ENOTTY for any other request, EINVAL when `arg` is not that struct's size.
pub(crate) fn tty_ioctl(fd: BorrowedFd<'_>, req: u64, arg: &mut [u8]) -> Result<(), Errno> {
    let (size, out) = tty_request(req).ok_or(Errno::ENOTTY)?;
    if arg.len() != size {
        return Err(Errno::EINVAL);
    }
    let r = if out {
        // SAFETY: `req` is a request whose argument is a struct of `size`
        // bytes, which `arg` holds; the host writes at most that.
        unsafe { libc::ioctl(fd.as_raw_fd(), req, arg.as_mut_ptr()) }
    } else {
        // SAFETY: as above; the host only reads `arg`.
        unsafe { libc::ioctl(fd.as_raw_fd(), req, arg.as_ptr()) }
    };
    if r < 0 {
        return Err(Errno::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn file_io_and_refused_requests() {
        let f = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(std::env::temp_dir().join(format!("husk-host-fd-{}", std::process::id())))
            .unwrap();
        let fd = f.as_fd();
        assert_eq!(pwrite(fd, b"hello", 2).unwrap(), 5);
        let mut buf = [0u8; 8];
        assert_eq!(pread(fd, &mut buf, 0).unwrap(), 7);
        assert_eq!(&buf[..7], b"\0\0hello");
        ftruncate(fd, 3).unwrap();
        assert_eq!(fstat(fd).unwrap().st_size, 3);
        fsync(fd).unwrap();
        assert_eq!(poll_now(fd, libc::POLLIN).unwrap() & libc::POLLIN, libc::POLLIN);
        let mut small = [0u8; 2];
        assert_eq!(tty_ioctl(fd, libc::TCGETS, &mut small), Err(Errno::EINVAL), "wrong size");
        assert_eq!(tty_ioctl(fd, libc::TIOCSTI, &mut small), Err(Errno::ENOTTY), "not forwarded");
        let mut termios = [0u8; 36];
        assert_eq!(tty_ioctl(fd, libc::TCGETS, &mut termios), Err(Errno::ENOTTY), "a file is no terminal");
        assert_eq!(pread(fd, &mut buf, u64::MAX), Err(Errno::EINVAL));
        drop(f);
        std::fs::remove_file(std::env::temp_dir().join(format!("husk-host-fd-{}", std::process::id()))).unwrap();
    }
}
