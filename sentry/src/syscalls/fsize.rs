//! RLIMIT_FSIZE, as Linux's `generic_write_check_limits` and
//! `inode_newsize_ok` apply it to regular files: the write handlers ask
//! here how much of a write may go, and truncate and fallocate whether a
//! new size may be set. Past the limit the thread gets SIGXFSZ and the
//! call EFBIG. Pipes, sockets and devices have no such limit.

use crate::abi::{Errno, SysResult};
use crate::kernel::limits::RLIMIT_FSIZE;
use crate::kernel::Task;
use crate::vfs::{Cursor, FileDescription, S_IFMT, S_IFREG};

/// The soft limit of the calling process, if it has one.
pub(super) fn limit(task: &Task) -> Option<u64> {
    Some(task.thread.rlimit(RLIMIT_FSIZE).cur).filter(|&l| l != libc::RLIM_INFINITY)
}

pub(super) fn is_regular(f: &FileDescription) -> Result<bool, Errno> {
    Ok(f.stat()?.mode & S_IFMT == S_IFREG)
}

fn exceeded(task: &Task) -> Errno {
    task.kernel.raise_self(&task.thread, libc::SIGXFSZ);
    Errno::EFBIG
}

/// How many of `len` bytes a write at `off` of `f` may write: all but
/// what would go past the limit; none at or past it (EFBIG). `off` is
/// asked only under a limit (an append's offset costs a stat).
pub(super) fn writable_len(
    task: &Task,
    f: &FileDescription,
    off: impl FnOnce() -> Result<u64, Errno>,
    len: usize,
) -> Result<usize, Errno> {
    let Some(max) = limit(task) else { return Ok(len) };
    if !is_regular(f)? {
        return Ok(len);
    }
    let off = off()?;
    if off >= max {
        return Err(exceeded(task));
    }
    Ok(usize::try_from(max - off).map_or(len, |room| room.min(len)))
}

/// Whether `f` may be made `size` bytes long (truncate, fallocate): only
/// growing a regular file past the limit is refused.
pub(super) fn check_size(task: &Task, f: &FileDescription, size: u64) -> SysResult {
    let Some(max) = limit(task) else { return Ok(0) };
    let st = f.stat()?;
    if size > max && size > st.size && st.mode & S_IFMT == S_IFREG {
        return Err(exceeded(task));
    }
    Ok(0)
}

/// write(2) of `buf` at `f`'s position, cut at the file size limit.
pub(super) fn write(task: &Task, f: &FileDescription, buf: &[u8]) -> Result<usize, Errno> {
    if !f.ops.seekable() || !f.writable() {
        return f.write(buf);
    }
    let n = f.positioned_write(f.appends(), |c| chunk(task, f, c, buf).map(|n| n as u64))?;
    usize::try_from(n).map_err(|_| Errno::EOVERFLOW)
}

/// One chunk of a write at the file position (or end), cut at the
/// process's file size limit.
pub(super) fn chunk(task: &Task, f: &FileDescription, c: &mut Cursor<'_>, buf: &[u8]) -> Result<usize, Errno> {
    let n = writable_len(task, f, || c.position(), buf.len())?;
    c.write(&buf[..n])
}

/// One chunk of a write at `off` (pwrite), cut at the file size limit. An
/// O_APPEND file's chunk goes to its end, so the limit is checked there.
pub(super) fn pwrite(task: &Task, f: &FileDescription, buf: &[u8], off: u64) -> Result<usize, Errno> {
    let at = || if f.appends() { Ok(f.stat()?.size) } else { Ok(off) };
    let n = writable_len(task, f, at, buf.len())?;
    f.pwrite(&buf[..n], off)
}
