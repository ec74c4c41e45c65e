//! Decoding of system call arguments shared by the families: descriptors,
//! paths, and the directory descriptor of `*at` calls (resolution itself
//! is the VFS's, `vfs::at`).

use crate::abi::fcntl::AT_FDCWD;
use crate::abi::limits::PATH_MAX;
use crate::abi::Errno;
use crate::kernel::Task;
use crate::vfs::at::DirFd;
use crate::vfs::walk::{ParentAndName, Walker};
use crate::vfs::{Dentry, FileDescription};
use std::sync::Arc;

/// An `int` argument (the kernel looks only at the low 32 bits).
pub(super) fn int(a: u64) -> i32 {
    i32::from_ne_bytes(uint(a).to_ne_bytes())
}

/// An `unsigned int` argument.
pub(super) fn uint(a: u64) -> u32 {
    u32::try_from(a & 0xffff_ffff).unwrap_or(0)
}

/// Linux's access_ok: `[addr, addr+len)` must lie in user space (whether
/// it is mapped is found out when it is touched).
pub(super) fn user_range(addr: u64, len: usize) -> Result<(), Errno> {
    let len = u64::try_from(len).map_err(|_| Errno::EFAULT)?;
    match addr.checked_add(len) {
        Some(end) if end <= crate::mm::manager::TASK_SIZE => Ok(()),
        _ => Err(Errno::EFAULT),
    }
}

/// The open file behind descriptor `fd`.
pub(super) fn file(task: &Task, fd: u64) -> Result<Arc<FileDescription>, Errno> {
    task.thread.fds().get(int(fd))
}

/// A path argument.
pub(super) fn path(task: &Task, addr: u64) -> Result<Vec<u8>, Errno> {
    task.thread.mm().read_cstring(addr, PATH_MAX - 1)
}

/// Runs `f` with a walker that uses the task's root and credentials.
pub(super) fn with_walker<R>(task: &Task, f: impl FnOnce(&Walker<'_>) -> R) -> R {
    let creds = task.thread.creds();
    let fs = task.thread.fs();
    let ns = fs.mounts();
    let w = Walker { ns: &ns, root: fs.root(), creds: &creds };
    f(&w)
}

/// The directory argument of an `*at` call: the working directory for
/// `AT_FDCWD`, else the descriptor's dentry (its lookup error is kept for
/// the VFS to report only if the path needs it).
pub(super) fn dirfd(task: &Task, dirfd: u64) -> DirFd {
    let dirfd = int(dirfd);
    if dirfd == AT_FDCWD {
        return DirFd::Cwd(task.thread.fs().cwd());
    }
    DirFd::Fd(task.thread.fds().get(dirfd).map(|f| f.dentry.clone()))
}

/// Resolves `(dirfd, path)`; with `empty_ok` an empty path names `dirfd`
/// itself (AT_EMPTY_PATH).
pub(super) fn resolve_at(
    task: &Task,
    fd: u64,
    path: &[u8],
    follow: bool,
    empty_ok: bool,
) -> Result<Arc<Dentry>, Errno> {
    let at = dirfd(task, fd);
    with_walker(task, |w| w.resolve_at(at, path, follow, empty_ok))
}

/// Resolves `(dirfd, path)` with an `*at` call's `AT_SYMLINK_NOFOLLOW` and
/// `AT_EMPTY_PATH` flags.
pub(super) fn resolve_at_flags(task: &Task, fd: u64, path: &[u8], at_flags: u64) -> Result<Arc<Dentry>, Errno> {
    let at = dirfd(task, fd);
    with_walker(task, |w| w.resolve_at_flags(at, path, at_flags))
}

/// Resolves all but the last component of `(dirfd, path)`.
pub(super) fn parent_at(task: &Task, fd: u64, path: &[u8]) -> Result<ParentAndName, Errno> {
    let at = dirfd(task, fd);
    with_walker(task, |w| w.parent_at(at, path))
}
