//! preadv2(2) and pwritev2(2): preadv/pwritev with a position that may be
//! the file's own (-1) and per-call flags (`RWF_*`), checked as Linux's
//! `kiocb_set_rw_flags` checks them.

use super::file::{iovecs, readv_into, sigpipe_on_epipe, stream_read, stream_write, writev_from};
use super::{args, Entries, Support::*};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::{Cursor, FileDescription};

const NOTE: &str = "offset -1 is the file position; RWF_HIPRI is a hint (nothing is polled); RWF_DSYNC/RWF_SYNC \
    fsync what was written; RWF_NOWAIT on streams (EAGAIN instead of waiting) and gofer-served files, EOPNOTSUPP \
    on tmpfs and the overlay as on Linux's (a socket's write waits as write(2) would); RWF_APPEND/RWF_NOAPPEND; RWF_ATOMIC and RWF_DONTCACHE are EOPNOTSUPP \
    (as on tmpfs)";

pub(super) const ENTRIES: Entries =
    &[(libc::SYS_preadv2, sys_preadv2, Partial(NOTE)), (libc::SYS_pwritev2, sys_pwritev2, Partial(NOTE))];

const RWF_HIPRI: u64 = 0x1;
const RWF_DSYNC: u64 = 0x2;
const RWF_SYNC: u64 = 0x4;
const RWF_NOWAIT: u64 = 0x8;
const RWF_APPEND: u64 = 0x10;
const RWF_NOAPPEND: u64 = 0x20;
const RWF_ATOMIC: u64 = 0x40;
const RWF_DONTCACHE: u64 = 0x80;
/// The flags Linux 6.x knows (`RWF_SUPPORTED`); others are EOPNOTSUPP.
const RWF_SUPPORTED: u64 =
    RWF_HIPRI | RWF_DSYNC | RWF_SYNC | RWF_NOWAIT | RWF_APPEND | RWF_NOAPPEND | RWF_ATOMIC | RWF_DONTCACHE;

/// The position argument: `None` for -1 (the file position), EINVAL for
/// any other negative one.
fn position(a: u64) -> Result<Option<u64>, Errno> {
    match i64::from_ne_bytes(a.to_ne_bytes()) {
        -1 => Ok(None),
        p if p < 0 => Err(Errno::EINVAL),
        _ => Ok(Some(a)),
    }
}

/// The flags checked against the file, in `kiocb_set_rw_flags`'s order.
fn check_flags(f: &FileDescription, flags: u64) -> Result<(), Errno> {
    if flags & !RWF_SUPPORTED != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if flags & RWF_APPEND != 0 && flags & RWF_NOAPPEND != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & RWF_NOWAIT != 0 && !f.ops.nowait() {
        return Err(Errno::EOPNOTSUPP);
    }
    // No sentry file does untorn writes or uncached buffered I/O.
    if flags & (RWF_ATOMIC | RWF_DONTCACHE) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(())
}

/// The descriptor, ESPIPE for a position on a file that has none (before
/// the access check, as Linux's `FMODE_PREAD` test comes first).
fn file_at(task: &Task, fd: u64, pos: Option<u64>) -> Result<std::sync::Arc<FileDescription>, Errno> {
    let f = args::file(task, fd)?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    if pos.is_some() && !f.ops.seekable() {
        return Err(Errno::ESPIPE);
    }
    Ok(f)
}

fn sys_preadv2(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pos = position(a[3])?;
    let f = file_at(task, a[0], pos)?;
    if !f.readable() {
        return Err(Errno::EBADF);
    }
    if f.dentry.is_dir() {
        return Err(Errno::EISDIR);
    }
    let iov = iovecs(task, a[1], a[2])?;
    if iov.iter().all(|&(_, len)| len == 0) {
        return Ok(0);
    }
    let flags = a[5];
    check_flags(&f, flags)?;
    if !f.ops.seekable() {
        return stream_read(task, &f, &iov, flags & RWF_NOWAIT != 0);
    }
    match pos {
        Some(off) => readv_into(task, &iov, false, |buf, p| f.pread(buf, off + p)),
        None => f.positioned(|off| readv_into(task, &iov, false, |buf, p| f.ops.read(buf, off + p))),
    }
}

fn sys_pwritev2(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pos = position(a[3])?;
    let f = file_at(task, a[0], pos)?;
    if !f.writable() {
        return Err(Errno::EBADF);
    }
    super::audit_files::write(task, &f)?;
    let iov = iovecs(task, a[1], a[2])?;
    if iov.iter().all(|&(_, len)| len == 0) {
        return Ok(0);
    }
    let flags = a[5];
    check_flags(&f, flags)?;
    if !f.ops.seekable() {
        // A socket's write is a send without flags (its SIGPIPE included).
        if let Some(s) = super::socket_ops::of(&f) {
            return s.write(task, &f, &iov);
        }
        return sigpipe_on_epipe(task, stream_write(task, &f, &iov, flags & RWF_NOWAIT != 0));
    }
    let append = match flags & (RWF_APPEND | RWF_NOAPPEND) {
        RWF_APPEND => true,
        RWF_NOAPPEND => false,
        _ => f.appends(),
    };
    let write = |c: &mut Cursor<'_>| writev_from(task, &iov, |buf, _| c.write(buf));
    let n = match pos {
        Some(off) => f.write_at(append, off, write)?,
        None => f.positioned_write(append, write)?,
    };
    if flags & (RWF_DSYNC | RWF_SYNC) != 0 && n > 0 {
        f.ops.fsync()?;
    }
    Ok(n)
}
