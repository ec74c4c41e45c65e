//! System calls: opening, reading, writing and positioning files.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::fcntl::MAX_RW_COUNT;
use crate::abi::fcntl::{AT_FDCWD_ARG, O_RDWR};
use crate::abi::layout::Layout;
use crate::abi::uio::{Iovec, IOV_MAX};
use crate::abi::{Errno, SysResult};
use crate::fs::tmpfs::{Memfd, MemfdFs};
use crate::kernel::Task;
use crate::vfs::{self, Allocate, FileDescription, NewNode, OpenHow, S_IFMT, S_IFREG};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_read, sys_read, Full),
    (libc::SYS_write, sys_write, Full),
    (libc::SYS_open, sys_open, Full),
    (libc::SYS_openat, sys_openat, Full),
    (libc::SYS_creat, sys_creat, Full),
    (libc::SYS_close, sys_close, Full),
    (libc::SYS_lseek, sys_lseek, Full),
    (libc::SYS_pread64, sys_pread64, Full),
    (libc::SYS_pwrite64, sys_pwrite64, Full),
    (libc::SYS_readv, sys_readv, Full),
    (libc::SYS_writev, sys_writev, Full),
    (libc::SYS_preadv, sys_preadv, Full),
    (libc::SYS_pwritev, sys_pwritev, Full),
    (libc::SYS_ftruncate, sys_ftruncate, Full),
    (libc::SYS_truncate, sys_truncate, Full),
    (libc::SYS_fallocate, sys_fallocate, Partial("modes 0, KEEP_SIZE and PUNCH_HOLE on every regular file; ZERO_RANGE on the overlay root and gofer-served files (tmpfs refuses it as Linux's does); gofer files through a gofer request; COLLAPSE_RANGE, INSERT_RANGE, UNSHARE_RANGE and WRITE_ZEROES are EOPNOTSUPP (as on tmpfs)")),
    (libc::SYS_fsync, sys_fsync, Full),
    (libc::SYS_fdatasync, sys_fsync, Full),
    (libc::SYS_sync, sys_sync, Full),
    (libc::SYS_syncfs, sys_syncfs, Full),
    (libc::SYS_fadvise64, sys_fadvise64, Full),
    (
        libc::SYS_readahead,
        sys_readahead,
        Partial("validated as Linux; reads nothing ahead: sentry files are in memory and gofer-served files are cached by the host"),
    ),
    (
        libc::SYS_sync_file_range,
        sys_sync_file_range,
        Partial("validated as Linux; starts no writeback: the sentry's filesystems hold files in memory, and gofer-served files are written through host descriptors whose writeback is the host's (fsync reaches it)"),
    ),
    (libc::SYS_sendfile, sys_sendfile, Full),
    (
        libc::SYS_memfd_create,
        sys_memfd_create,
        Partial("seals as Linux's shmem (F_SEAL_WRITE waits for no shared mapping that may write: EBUSY); MFD_HUGETLB is refused (EINVAL)"),
    ),
];

/// Data is moved through the sentry in pieces of at most this size.
pub(super) const CHUNK: usize = 1 << 20;
fn sys_open(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    open_at(task, AT_FDCWD_ARG, &path, int(a[1]), args::uint(a[2]))
}

fn sys_openat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[1])?;
    open_at(task, a[0], &path, int(a[2]), args::uint(a[3]))
}

fn sys_creat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC;
    open_at(task, AT_FDCWD_ARG, &path, flags, args::uint(a[1]))
}

/// Opens `(dirfd, path)` and installs the new file in the fd table.
fn open_at(task: &Task, dirfd: u64, path: &[u8], flags: i32, mode: u32) -> SysResult {
    let file = open_file(task, dirfd, path, flags, mode)?;
    let cloexec = flags & libc::O_CLOEXEC != 0;
    let fd = task.thread.fds().install(file, cloexec, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

/// Opens a file description through the VFS with the task's credentials
/// and umask.
fn open_file(task: &Task, dirfd: u64, path: &[u8], flags: i32, mode: u32) -> Result<Arc<FileDescription>, Errno> {
    let how = OpenHow { flags, mode, umask: task.thread.fs().umask() };
    let at = args::dirfd(task, dirfd);
    let create = |dir: &Arc<vfs::Dentry>, name: &[u8]| super::audit_files::create(task, dir, name);
    let file = args::with_walker(task, |w| vfs::open::open_at_noting(w, at, path, how, &create))?;
    // A FIFO's open waits for its partner here, interruptibly (the end
    // goes with the description if it is).
    super::block::wait_until(&file, crate::waiter::ALL, false, None, || file.ops.open_ready())?;
    super::audit_files::opened(task, &file)?;
    Ok(file)
}

fn sys_close(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = task.thread.fds().remove(int(a[0]))?;
    task.kernel.descriptor_closed(task.thread.tgid(), &f);
    Ok(0)
}

pub(super) fn count(a: u64) -> usize {
    usize::try_from(a).unwrap_or(usize::MAX).min(MAX_RW_COUNT)
}

/// Reads up to `len` bytes with `read` (given a buffer and how much has
/// been read so far) into guest memory at `addr`. Regular files are read
/// until `len` or end of file; streams return what one read gave.
fn read_into(
    task: &Task,
    addr: u64,
    len: usize,
    stream: bool,
    mut read: impl FnMut(&mut [u8], u64) -> Result<usize, Errno>,
) -> SysResult {
    args::user_range(addr, len)?;
    let mm = task.thread.mm();
    let mut done = 0usize;
    let mut buf = vec![0u8; len.min(CHUNK)];
    while done < len {
        let want = (len - done).min(CHUNK);
        let n = match read(&mut buf[..want], done as u64) {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        let copied = mm.copy_out_partial(addr + done as u64, &buf[..n]);
        done += copied;
        if copied < n {
            if done == 0 {
                return Err(Errno::EFAULT);
            }
            break;
        }
        if stream || n < want {
            break;
        }
    }
    Ok(done as u64)
}

/// Copies `len` bytes of guest memory at `addr` in chunks and passes each
/// to `write`, stopping at a short write.
fn write_from(
    task: &Task,
    addr: u64,
    len: usize,
    mut write: impl FnMut(&[u8], u64) -> Result<usize, Errno>,
) -> SysResult {
    args::user_range(addr, len)?;
    let mm = task.thread.mm();
    let mut done = 0usize;
    let mut buf = vec![0u8; len.min(CHUNK)];
    while done < len {
        let want = (len - done).min(CHUNK);
        let readable = mm.copy_in_partial(addr + done as u64, &mut buf[..want]);
        if readable == 0 {
            if done == 0 {
                return Err(Errno::EFAULT);
            }
            break;
        }
        let n = match write(&buf[..readable], done as u64) {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += n;
        if n < readable || readable < want {
            break;
        }
    }
    Ok(done as u64)
}

pub(super) fn readable_file(task: &Task, fd: u64) -> Result<Arc<FileDescription>, Errno> {
    let f = args::file(task, fd)?;
    ensure_readable(&f)?;
    Ok(f)
}

fn ensure_readable(f: &FileDescription) -> Result<(), Errno> {
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    if f.dentry.is_dir() {
        return Err(Errno::EISDIR);
    }
    Ok(())
}

pub(super) fn writable_file(task: &Task, fd: u64) -> Result<Arc<FileDescription>, Errno> {
    let f = args::file(task, fd)?;
    ensure_writable(task, &f)?;
    Ok(f)
}

fn ensure_writable(task: &Task, f: &FileDescription) -> Result<(), Errno> {
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    super::audit_files::write(task, f)
}

/// The descriptor for a positioned read or write: Linux rejects a
/// negative offset, then a file without a position (ESPIPE, its
/// `FMODE_PREAD` test), and only then checks the access mode.
fn positioned_file(task: &Task, fd: u64, off: u64) -> Result<(Arc<FileDescription>, u64), Errno> {
    let off = offset_arg(off)?;
    let f = args::file(task, fd)?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    if !f.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    Ok((f, off))
}

fn sys_read(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = readable_file(task, a[0])?;
    if !f.ops.seekable() {
        let len = count(a[2]);
        args::user_range(a[1], len)?;
        return stream_read(task, &f, &[(a[1], len)], false);
    }
    f.positioned(|off| read_into(task, a[1], count(a[2]), false, |buf, done| f.ops.read(buf, off + done)))
}

/// read(2) and readv(2) of a file without a position (a pipe, socket,
/// terminal, eventfd …), whatever its type: one read of up to CHUNK bytes,
/// waiting on the file's queue as `block::read` does, scattered over the
/// guest's buffers `iov`. So a datagram is received whole by one call,
/// however the buffers divide it.
pub(super) fn stream_read(task: &Task, f: &FileDescription, iov: &[(u64, usize)], dontwait: bool) -> SysResult {
    let total = iov.iter().map(|&(_, l)| l).fold(0, usize::saturating_add).min(CHUNK);
    if total == 0 {
        return Ok(0);
    }
    let mut buf = vec![0u8; total];
    let n = super::block::read_unless(f, dontwait, |call| f.read_call(&mut buf, call))?;
    let mm = task.thread.mm();
    let mut at = 0;
    for &(base, len) in iov {
        let k = len.min(n - at);
        let copied = mm.copy_out_partial(base, &buf[at..at + k]);
        at += copied;
        if copied < k && at == 0 {
            return Err(Errno::EFAULT);
        }
        if copied < k || at == n {
            break;
        }
    }
    Ok(at as u64)
}

/// write(2) and writev(2) of a file without a position that is not a
/// socket (a pipe, terminal, eventfd …; a socket's write is its send):
/// the guest's buffers `iov` gathered in pieces of up to CHUNK bytes,
/// each written as `block::write` does, until a piece goes short or the
/// guest's memory faults.
pub(super) fn stream_write(task: &Task, f: &FileDescription, iov: &[(u64, usize)], dontwait: bool) -> SysResult {
    let mm = task.thread.mm();
    let total = iov.iter().map(|&(_, l)| l).fold(0, usize::saturating_add);
    let mut buf = Vec::with_capacity(total.min(CHUNK));
    let (mut index, mut offset, mut done) = (0, 0, 0u64);
    loop {
        buf.clear();
        let mut faulted = false;
        while buf.len() < CHUNK && index < iov.len() {
            let (base, len) = iov[index];
            let start = buf.len();
            let want = (len - offset).min(CHUNK - start);
            buf.resize(start + want, 0);
            let got = mm.copy_in_partial(base + offset as u64, &mut buf[start..]);
            buf.truncate(start + got);
            offset += got;
            if got < want {
                faulted = true;
                break;
            }
            if offset == len {
                (index, offset) = (index + 1, 0);
            }
        }
        if buf.is_empty() {
            return if faulted && done == 0 { Err(Errno::EFAULT) } else { Ok(done) };
        }
        let (n, err) = super::block::write_until_error(f, dontwait, &buf, |b| f.write(b));
        done += n as u64;
        if let Some(e) = err {
            if done == 0 {
                return Err(e);
            }
            // A pipe whose readers left mid-write still says so with
            // SIGPIPE, as Linux's `pipe_write` does, though the write
            // returns the bytes that went (the caller signals a plain
            // EPIPE).
            if e == Errno::EPIPE {
                task.kernel.raise_sigpipe(&task.thread);
            }
            return Ok(done);
        }
        if n < buf.len() || faulted {
            return Ok(done);
        }
    }
}

/// A write to a pipe without readers also raises SIGPIPE, as Linux does.
pub(super) fn sigpipe_on_epipe(task: &Task, r: SysResult) -> SysResult {
    if r == Err(Errno::EPIPE) {
        task.kernel.raise_sigpipe(&task.thread);
    }
    r
}

fn sys_write(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = writable_file(task, a[0])?;
    if !f.ops.seekable() {
        let len = count(a[2]);
        args::user_range(a[1], len)?;
        // A socket's write is a send without flags (its SIGPIPE included).
        if let Some(s) = super::socket_ops::of(&f) {
            return s.write(task, &f, &[(a[1], len)]);
        }
        return sigpipe_on_epipe(task, stream_write(task, &f, &[(a[1], len)], false));
    }
    f.positioned_write(f.appends(), |c| {
        write_from(task, a[1], count(a[2]), |buf, _| super::fsize::chunk(task, &f, c, buf))
    })
}

pub(super) fn offset_arg(a: u64) -> Result<u64, Errno> {
    if i64::from_ne_bytes(a.to_ne_bytes()) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(a)
}

fn sys_pread64(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, off) = positioned_file(task, a[0], a[3])?;
    ensure_readable(&f)?;
    read_into(task, a[1], count(a[2]), false, |buf, done| f.pread(buf, off + done))
}

fn sys_pwrite64(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, off) = positioned_file(task, a[0], a[3])?;
    ensure_writable(task, &f)?;
    write_from(task, a[1], count(a[2]), |buf, done| super::fsize::pwrite(task, &f, buf, off + done))
}

/// Reads an iovec array: (base, len) pairs.
pub(super) fn iovecs(task: &Task, addr: u64, cnt: u64) -> Result<Vec<(u64, usize)>, Errno> {
    let n = usize::try_from(cnt).map_err(|_| Errno::EINVAL)?;
    if n > IOV_MAX {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; n * Iovec::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut out = Vec::with_capacity(n);
    let mut total: usize = 0;
    for Iovec { base, len } in Iovec::decode_all(&raw) {
        let len = usize::try_from(len).ok().filter(|&l| isize::try_from(l).is_ok()).ok_or(Errno::EINVAL)?;
        total = total.checked_add(len).filter(|&t| isize::try_from(t).is_ok()).ok_or(Errno::EINVAL)?;
        args::user_range(base, len)?;
        out.push((base, len));
    }
    Ok(out)
}

/// Scatter-reads into the iovecs; `read(buf, pos)` reads at stream
/// position `pos` bytes in.
pub(super) fn readv_into(
    task: &Task,
    iov: &[(u64, usize)],
    stream: bool,
    mut read: impl FnMut(&mut [u8], u64) -> Result<usize, Errno>,
) -> SysResult {
    let mut total = 0u64;
    for &(base, len) in iov {
        if len == 0 {
            continue;
        }
        let len = len.min(MAX_RW_COUNT);
        let got = match read_into(task, base, len, stream, |buf, done| read(buf, total + done)) {
            Ok(n) => n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        total += got;
        if got < len as u64 || stream {
            break;
        }
    }
    Ok(total)
}

pub(super) fn writev_from(
    task: &Task,
    iov: &[(u64, usize)],
    mut write: impl FnMut(&[u8], u64) -> Result<usize, Errno>,
) -> SysResult {
    let mut total = 0u64;
    for &(base, len) in iov {
        if len == 0 {
            continue;
        }
        let len = len.min(MAX_RW_COUNT);
        let put = match write_from(task, base, len, |buf, done| write(buf, total + done)) {
            Ok(n) => n,
            Err(e) if total == 0 => return Err(e),
            Err(_) => break,
        };
        total += put;
        if put < len as u64 {
            break;
        }
    }
    Ok(total)
}

fn sys_readv(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = readable_file(task, a[0])?;
    let iov = iovecs(task, a[1], a[2])?;
    if !f.ops.seekable() {
        return stream_read(task, &f, &iov, false);
    }
    f.positioned(|off| readv_into(task, &iov, false, |buf, pos| f.ops.read(buf, off + pos)))
}

fn sys_writev(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = writable_file(task, a[0])?;
    let iov = iovecs(task, a[1], a[2])?;
    if !f.ops.seekable() {
        if let Some(s) = super::socket_ops::of(&f) {
            return s.write(task, &f, &iov);
        }
        return sigpipe_on_epipe(task, stream_write(task, &f, &iov, false));
    }
    f.positioned_write(f.appends(), |c| writev_from(task, &iov, |buf, _| super::fsize::chunk(task, &f, c, buf)))
}

fn sys_preadv(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, off) = positioned_file(task, a[0], a[3])?;
    ensure_readable(&f)?;
    let iov = iovecs(task, a[1], a[2])?;
    readv_into(task, &iov, false, |buf, pos| f.pread(buf, off + pos))
}

fn sys_pwritev(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, off) = positioned_file(task, a[0], a[3])?;
    ensure_writable(task, &f)?;
    let iov = iovecs(task, a[1], a[2])?;
    writev_from(task, &iov, |buf, pos| super::fsize::pwrite(task, &f, buf, off + pos))
}

fn sys_lseek(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    f.seek(i64::from_ne_bytes(a[1].to_ne_bytes()), args::uint(a[2]))
}

fn truncate_file(f: &FileDescription, len: u64) -> SysResult {
    if f.dentry.is_dir() {
        return Err(Errno::EISDIR);
    }
    f.ops.truncate(len)?;
    Ok(0)
}

fn sys_ftruncate(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    let len = offset_arg(a[1])?;
    if !f.writable() || f.stat()?.mode & S_IFMT != S_IFREG {
        return Err(Errno::EINVAL);
    }
    super::audit_files::truncate(task, &f, len)?;
    super::fsize::check_size(task, &f, len)?;
    truncate_file(&f, len)
}

fn sys_truncate(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let len = offset_arg(a[1])?;
    let f = open_file(task, AT_FDCWD_ARG, &path, libc::O_WRONLY, 0)?;
    super::audit_files::truncate(task, &f, len)?;
    super::fsize::check_size(task, &f, len)?;
    truncate_file(&f, len)
}

/// `FALLOC_FL_WRITE_ZEROES` (Linux 6.17).
const FALLOC_FL_WRITE_ZEROES: i32 = 0x80;
/// The operations of fallocate(2)'s mode (`FALLOC_FL_MODE_MASK`): at most
/// one, besides `FALLOC_FL_KEEP_SIZE`.
const FALLOC_FL_MODE_MASK: i32 = libc::FALLOC_FL_PUNCH_HOLE
    | libc::FALLOC_FL_COLLAPSE_RANGE
    | libc::FALLOC_FL_ZERO_RANGE
    | libc::FALLOC_FL_INSERT_RANGE
    | libc::FALLOC_FL_UNSHARE_RANGE
    | FALLOC_FL_WRITE_ZEROES;

/// fallocate(2)'s mode as Linux 6.x's vfs_fallocate checks it: one
/// operation with the KEEP_SIZE it allows, else EOPNOTSUPP. `None`: a
/// valid operation none of the sentry's filesystems does (collapse,
/// insert, unshare, write zeroes).
fn falloc_mode(mode: i32) -> Result<Option<Allocate>, Errno> {
    use libc::{FALLOC_FL_COLLAPSE_RANGE, FALLOC_FL_INSERT_RANGE, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
    if mode & !(FALLOC_FL_MODE_MASK | FALLOC_FL_KEEP_SIZE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let keep_size = mode & FALLOC_FL_KEEP_SIZE != 0;
    match mode & FALLOC_FL_MODE_MASK {
        0 => Ok(Some(Allocate::Reserve { keep_size })),
        libc::FALLOC_FL_ZERO_RANGE => Ok(Some(Allocate::ZeroRange { keep_size })),
        libc::FALLOC_FL_UNSHARE_RANGE => Ok(None),
        FALLOC_FL_PUNCH_HOLE if keep_size => Ok(Some(Allocate::PunchHole)),
        FALLOC_FL_COLLAPSE_RANGE | FALLOC_FL_INSERT_RANGE | FALLOC_FL_WRITE_ZEROES if !keep_size => Ok(None),
        _ => Err(Errno::EOPNOTSUPP),
    }
}

/// fallocate(2), with Linux's checks in Linux's order (vfs_fallocate).
fn sys_fallocate(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    let mode = int(a[1]);
    let (off, len) = (i64::from_ne_bytes(a[2].to_ne_bytes()), i64::from_ne_bytes(a[3].to_ne_bytes()));
    if off < 0 || len <= 0 {
        return Err(Errno::EINVAL);
    }
    let how = falloc_mode(mode)?;
    if !f.writable() || f.is_path() {
        return Err(Errno::EBADF);
    }
    match f.stat()?.mode & S_IFMT {
        libc::S_IFIFO => return Err(Errno::ESPIPE),
        libc::S_IFDIR => return Err(Errno::EISDIR),
        S_IFREG => {}
        _ => return Err(Errno::ENODEV),
    }
    if off.checked_add(len).is_none() {
        return Err(Errno::EFBIG);
    }
    let how = how.ok_or(Errno::EOPNOTSUPP)?;
    super::audit_files::write(task, &f)?;
    if mode & libc::FALLOC_FL_KEEP_SIZE == 0 {
        super::fsize::check_size(task, &f, (off + len).unsigned_abs())?;
    }
    f.ops.allocate(off.unsigned_abs(), len.unsigned_abs(), how)?;
    Ok(0)
}

fn sys_fsync(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    f.ops.fsync()?;
    Ok(0)
}

fn sys_sync(_task: &mut Task, _a: [u64; 6]) -> SysResult {
    Ok(0)
}

fn sys_syncfs(task: &mut Task, a: [u64; 6]) -> SysResult {
    args::file(task, a[0])?;
    Ok(0)
}

fn sys_fadvise64(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if !f.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    if a[3] > 5 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// readahead(2) with Linux's checks in Linux's order: a descriptor open
/// for reading (EBADF), a regular file (EINVAL), then the count as
/// `POSIX_FADV_WILLNEED` takes it, a signed length (EINVAL if negative).
/// The offset may be anything.
fn sys_readahead(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    if f.stat()?.mode & S_IFMT != S_IFREG {
        return Err(Errno::EINVAL);
    }
    if i64::from_ne_bytes(a[2].to_ne_bytes()) < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

/// sync_file_range(2)'s flags (SYNC_FILE_RANGE_WAIT_BEFORE, _WRITE,
/// _WAIT_AFTER).
const SYNC_FILE_RANGE_VALID: u64 = 1 | 2 | 4;

/// sync_file_range(2) with Linux's checks in Linux's order: the
/// descriptor, then the flags and the range (`offset + nbytes`, 0 bytes
/// meaning to the end of the file), then the file type. Starting
/// writeback early has nothing to do here (see the table's note).
fn sys_sync_file_range(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    if a[3] & !SYNC_FILE_RANGE_VALID != 0 {
        return Err(Errno::EINVAL);
    }
    let (offset, nbytes) = (i64::from_ne_bytes(a[1].to_ne_bytes()), i64::from_ne_bytes(a[2].to_ne_bytes()));
    let end = offset.wrapping_add(nbytes);
    if offset < 0 || end < 0 || end < offset {
        return Err(Errno::EINVAL);
    }
    match f.stat()?.mode & S_IFMT {
        S_IFREG | libc::S_IFBLK | libc::S_IFDIR | libc::S_IFLNK => Ok(0),
        _ => Err(Errno::ESPIPE),
    }
}

fn sys_memfd_create(task: &mut Task, a: [u64; 6]) -> SysResult {
    use crate::abi::fcntl::{MFD_ALLOW_SEALING, MFD_CLOEXEC, MFD_EXEC, MFD_NAME_MAX, MFD_NOEXEC_SEAL};
    let flags = args::uint(a[1]);
    if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = task.thread.mm().read_cstring(a[0], MFD_NAME_MAX).map_err(|e| {
        if e == Errno::ENAMETOOLONG {
            Errno::EINVAL
        } else {
            e
        }
    })?;
    let k = &task.kernel;
    let creds = task.thread.creds();
    // MFD_NOEXEC_SEAL: not executable, and never to be made so.
    let noexec = flags & MFD_NOEXEC_SEAL != 0;
    let new = NewNode { mode: if noexec { 0o666 } else { 0o777 }, uid: creds.fsuid, gid: creds.fsgid };
    let Memfd { node, ops } = k.ext::<MemfdFs>().create(new, flags & MFD_ALLOW_SEALING != 0, noexec)?;
    let mut shown = b"/memfd:".to_vec();
    shown.extend_from_slice(&name);
    shown.extend_from_slice(b" (deleted)");
    let d = k.anon_dentry(&shown, node);
    let status = O_RDWR;
    let f = FileDescription::new(d, ops, status);
    let fd = task.thread.fds().install(f, flags & MFD_CLOEXEC != 0, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_sendfile(task: &mut Task, a: [u64; 6]) -> SysResult {
    let out = writable_file(task, a[0])?;
    let input = readable_file(task, a[1])?;
    if !input.ops.seekable() {
        return Err(Errno::EINVAL);
    }
    if out.appends() {
        return Err(Errno::EINVAL);
    }
    let count = count(a[3]);
    let mm = task.thread.mm();
    let start = if a[2] == 0 {
        None
    } else {
        let mut raw = [0u8; 8];
        mm.copy_in(a[2], &mut raw)?;
        Some(offset_arg(u64::from_le_bytes(raw))?)
    };
    // Moves up to `count` bytes from `off` of the input to the output.
    let copy = |off: u64| -> SysResult {
        let mut buf = vec![0u8; count.min(CHUNK)];
        let mut done = 0usize;
        while done < count {
            let want = (count - done).min(CHUNK);
            let n = match input.ops.read(&mut buf[..want], off + done as u64) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            let w = match super::block::write(&out, &buf[..n], |b| super::fsize::write(task, &out, b)) {
                Ok(w) => w,
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            };
            done += w;
            if w < n {
                // Linux's splice goes on with the rest; for a regular file
                // at the size limit that fails with SIGXFSZ, and the call
                // returns what went.
                if w > 0 && super::fsize::limit(task).is_some() && super::fsize::is_regular(&out).unwrap_or(false) {
                    done += super::fsize::write(task, &out, &buf[w..n]).unwrap_or(0);
                }
                break;
            }
        }
        Ok(done as u64)
    };
    match start {
        Some(off) => {
            let n = copy(off)?;
            mm.copy_out(a[2], &(off + n).to_le_bytes())?;
            Ok(n)
        }
        None => input.positioned(copy),
    }
}
