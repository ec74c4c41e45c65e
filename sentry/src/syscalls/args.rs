//! Decoding of system call arguments shared by the families: descriptors,
//! paths, `*at` directory resolution.

use crate::abi::Errno;
use crate::kernel::Task;
use crate::vfs::walk::{ParentAndName, Walker, PATH_MAX};
use crate::vfs::{Dentry, FileDescription};
use std::sync::Arc;

pub const AT_FDCWD: i32 = -100;
/// AT_FDCWD as a raw system call argument.
pub const AT_FDCWD_ARG: u64 = 0xffff_ff9c;
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
pub const AT_REMOVEDIR: u64 = 0x200;
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub const AT_EMPTY_PATH: u64 = 0x1000;

/// An `int` argument (the kernel looks only at the low 32 bits).
pub fn int(a: u64) -> i32 {
    i32::from_ne_bytes(uint(a).to_ne_bytes())
}

/// An `unsigned int` argument.
pub fn uint(a: u64) -> u32 {
    u32::try_from(a & 0xffff_ffff).unwrap_or(0)
}

/// Linux's access_ok: `[addr, addr+len)` must lie in user space (whether
/// it is mapped is found out when it is touched).
pub fn user_range(addr: u64, len: usize) -> Result<(), Errno> {
    let len = u64::try_from(len).map_err(|_| Errno::EFAULT)?;
    match addr.checked_add(len) {
        Some(end) if end <= crate::mm::manager::TASK_SIZE => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// The open file behind descriptor `fd`.
pub fn file(task: &Task, fd: u64) -> Result<Arc<FileDescription>, Errno> {
    task.thread.fds().get(int(fd))
}

/// A path argument.
pub fn path(task: &Task, addr: u64) -> Result<Vec<u8>, Errno> {
    task.thread.mm().read_cstring(addr, PATH_MAX - 1)
}

/// Runs `f` with a walker that uses the task's root and credentials.
pub fn with_walker<R>(task: &Task, f: impl FnOnce(&Walker<'_>) -> R) -> R {
    let creds = task.thread.creds();
    let w = Walker { ns: &task.kernel.mounts, root: task.thread.fs().root(), creds: &creds };
    f(&w)
}

/// The directory a relative path of an `*at` call starts from.
pub fn start_dir(task: &Task, dirfd: u64, path: &[u8]) -> Result<Arc<Dentry>, Errno> {
    if path.starts_with(b"/") {
        return Ok(task.thread.fs().root());
    }
    let dirfd = int(dirfd);
    if dirfd == AT_FDCWD {
        return Ok(task.thread.fs().cwd());
    }
    let f = task.thread.fds().get(dirfd)?;
    if !path.is_empty() && !f.dentry.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(f.dentry.clone())
}

/// Resolves `(dirfd, path)`; with `empty_ok` an empty path names `dirfd`
/// itself (AT_EMPTY_PATH).
pub fn resolve_at(task: &Task, dirfd: u64, path: &[u8], follow: bool, empty_ok: bool) -> Result<Arc<Dentry>, Errno> {
    if path.is_empty() {
        if !empty_ok {
            return Err(Errno::ENOENT);
        }
        let dirfd = int(dirfd);
        if dirfd == AT_FDCWD {
            return Ok(task.thread.fs().cwd());
        }
        return Ok(task.thread.fds().get(dirfd)?.dentry.clone());
    }
    let start = start_dir(task, dirfd, path)?;
    with_walker(task, |w| w.resolve(&start, path, follow))
}

/// Resolves all but the last component of `(dirfd, path)`.
pub fn parent_at(task: &Task, dirfd: u64, path: &[u8]) -> Result<ParentAndName, Errno> {
    let start = start_dir(task, dirfd, path)?;
    with_walker(task, |w| w.resolve_parent(&start, path))
}
