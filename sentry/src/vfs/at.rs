//! The `*at` family's resolution: where a path starts (the directory of a
//! descriptor, the working directory, or the root for absolute paths) and
//! what `AT_EMPTY_PATH` and `AT_SYMLINK_NOFOLLOW` change. The syscall layer
//! only turns the descriptor number into a dentry (`DirFd`).

use super::walk::{ParentAndName, Walker};
use super::Dentry;
use crate::abi::fcntl::{AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW};
use crate::abi::Errno;
use std::sync::Arc;

/// The directory argument of an `*at` call.
pub(crate) enum DirFd {
    /// `AT_FDCWD`: the task's working directory.
    Cwd(Arc<Dentry>),
    /// A descriptor's dentry, or why the descriptor is unusable (`EBADF`);
    /// the error is reported only if the path needs the descriptor.
    Fd(Result<Arc<Dentry>, Errno>),
}

impl Walker<'_> {
    /// The directory a path of an `*at` call starts from: the root for an
    /// absolute path (the descriptor is not looked at), else the
    /// descriptor's directory (`ENOTDIR` if it is not one and the path is
    /// not empty).
    fn start_dir(&self, dirfd: DirFd, path: &[u8]) -> Result<Arc<Dentry>, Errno> {
        if path.starts_with(b"/") {
            return Ok(self.root.clone());
        }
        match dirfd {
            DirFd::Cwd(cwd) => Ok(cwd),
            DirFd::Fd(d) => {
                let d = d?;
                if !path.is_empty() && !d.is_dir() {
                    return Err(Errno::ENOTDIR);
                }
                Ok(d)
            }
        }
    }

    /// Resolves `(dirfd, path)`; with `empty_ok` (`AT_EMPTY_PATH`) an empty
    /// path names the descriptor itself.
    pub(crate) fn resolve_at(
        &self,
        dirfd: DirFd,
        path: &[u8],
        follow: bool,
        empty_ok: bool,
    ) -> Result<Arc<Dentry>, Errno> {
        if path.is_empty() {
            if !empty_ok {
                return Err(Errno::ENOENT);
            }
            return match dirfd {
                DirFd::Cwd(cwd) => Ok(cwd),
                DirFd::Fd(d) => d,
            };
        }
        let start = self.start_dir(dirfd, path)?;
        self.resolve(&start, path, follow)
    }

    /// `resolve_at` with `AT_SYMLINK_NOFOLLOW` and `AT_EMPTY_PATH` taken
    /// from an `*at` call's flags.
    pub(crate) fn resolve_at_flags(&self, dirfd: DirFd, path: &[u8], at_flags: u64) -> Result<Arc<Dentry>, Errno> {
        self.resolve_at(dirfd, path, at_flags & AT_SYMLINK_NOFOLLOW == 0, at_flags & AT_EMPTY_PATH != 0)
    }

    /// Resolves all but the last component of `(dirfd, path)`.
    pub(crate) fn parent_at(&self, dirfd: DirFd, path: &[u8]) -> Result<ParentAndName, Errno> {
        let start = self.start_dir(dirfd, path)?;
        self.resolve_parent(&start, path)
    }
}
