//! Operations that change the file system: create, mkdir, mknod, symlink,
//! link, unlink, rename, setattr. All fail with `EROFS` on a read-only
//! server.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{OFlag, RenameFlags};
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::UnlinkatFlags;

use super::fids::Node;
use super::{host, names, Outcome, Server};
use crate::protocol::Reply;
use crate::{Fid, SetAttr, Stat};

type Result<T> = std::result::Result<T, Errno>;

/// Permission bits of a mode.
fn perm(mode: u32) -> Mode {
    Mode::from_bits_truncate(mode & 0o7777)
}

/// Ownership and permissions for a new entry.
struct Owner {
    uid: u32,
    gid: u32,
    /// Permission bits to set exactly (regardless of the umask); `None`
    /// for a symlink.
    mode: Option<u32>,
}

/// Finishes making the entry `name` in `dir`: gives `path` (an `O_PATH` fd
/// on the entry) its owner and mode and stats it. On failure the entry is
/// removed again, so a failed operation leaves nothing behind.
fn settle(
    proc_fds: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    name: &CStr,
    path: Result<OwnedFd>,
    owner: &Owner,
    unlink: UnlinkatFlags,
) -> Result<(OwnedFd, Stat)> {
    let settled = path.and_then(|path| {
        host::chown(path.as_fd(), Some(owner.uid), Some(owner.gid))?;
        if let Some(mode) = owner.mode {
            host::chmod(proc_fds, path.as_fd(), mode)?;
        }
        let stat = host::fstat(path.as_fd())?;
        Ok((path, stat))
    });
    if let Err(errno) = settled {
        log::warn!("gofer: removing {name:?} after a failed create: {errno}");
        if let Err(e) = nix::unistd::unlinkat(Some(dir.as_raw_fd()), name, unlink) {
            log::warn!("gofer: cannot remove {name:?}: {e}");
        }
    }
    settled
}

impl Server {
    /// Adds a settled entry to the fid table.
    fn insert(&mut self, (fd, stat): (OwnedFd, Stat)) -> Reply {
        let fid = self.fids.insert(Node::new(fd, stat.mode));
        Reply::FidStat { fid, stat }
    }

    /// Creates and opens a new regular file (`O_CREAT|O_EXCL`).
    pub(super) fn create(&mut self, dir: Fid, name: &[u8], flags: i32, mode: u32, uid: u32, gid: u32) -> Outcome {
        self.writable()?;
        let name = names::component(name)?;
        let access = flags & libc::O_ACCMODE;
        if access == libc::O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        let dir = self.fids.get(dir)?.fd();
        let proc_fds = self.proc_fds.as_fd();
        let flags = OFlag::from_bits_truncate(access | (flags & libc::O_APPEND))
            | OFlag::O_CREAT
            | OFlag::O_EXCL
            | OFlag::O_NOFOLLOW
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY;
        let file = host::open_at(dir, &name, flags, perm(mode))?;
        let path = host::reopen(proc_fds, file.as_fd(), OFlag::O_PATH | OFlag::O_CLOEXEC);
        let owner = Owner { uid, gid, mode: Some(mode) };
        let settled = settle(proc_fds, dir, &name, path, &owner, UnlinkatFlags::NoRemoveDir)?;
        Ok((self.insert(settled), Some(file)))
    }

    pub(super) fn mkdir(&mut self, dir: Fid, name: &[u8], mode: u32, uid: u32, gid: u32) -> Result<Reply> {
        self.writable()?;
        let name = names::component(name)?;
        let dir = self.fids.get(dir)?.fd();
        nix::sys::stat::mkdirat(Some(dir.as_raw_fd()), name.as_c_str(), perm(mode))?;
        let owner = Owner { uid, gid, mode: Some(mode) };
        let path = host::open_path(dir, &name);
        let settled = settle(self.proc_fds.as_fd(), dir, &name, path, &owner, UnlinkatFlags::RemoveDir)?;
        Ok(self.insert(settled))
    }

    /// Makes a regular file, FIFO or socket node. Device nodes are `EPERM`:
    /// the sentry provides the devices a sandbox may use.
    pub(super) fn mknod(&mut self, dir: Fid, name: &[u8], mode: u32, uid: u32, gid: u32) -> Result<Reply> {
        self.writable()?;
        let name = names::component(name)?;
        let kind = match mode & libc::S_IFMT {
            0 | libc::S_IFREG => SFlag::S_IFREG,
            libc::S_IFIFO => SFlag::S_IFIFO,
            libc::S_IFSOCK => SFlag::S_IFSOCK,
            libc::S_IFCHR | libc::S_IFBLK => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        };
        let dir = self.fids.get(dir)?.fd();
        nix::sys::stat::mknodat(Some(dir.as_raw_fd()), name.as_c_str(), kind, perm(mode), 0)?;
        let owner = Owner { uid, gid, mode: Some(mode) };
        let path = host::open_path(dir, &name);
        let settled = settle(self.proc_fds.as_fd(), dir, &name, path, &owner, UnlinkatFlags::NoRemoveDir)?;
        Ok(self.insert(settled))
    }

    pub(super) fn symlink(&mut self, dir: Fid, name: &[u8], target: &[u8], uid: u32, gid: u32) -> Result<Reply> {
        self.writable()?;
        let name = names::component(name)?;
        let target = names::link_target(target)?;
        let dir = self.fids.get(dir)?.fd();
        nix::unistd::symlinkat(target.as_c_str(), Some(dir.as_raw_fd()), name.as_c_str())?;
        let owner = Owner { uid, gid, mode: None };
        let path = host::open_path(dir, &name);
        let settled = settle(self.proc_fds.as_fd(), dir, &name, path, &owner, UnlinkatFlags::NoRemoveDir)?;
        Ok(self.insert(settled))
    }

    /// Makes a regular file with no name in `dir` (`O_TMPFILE`): linkable
    /// later (by `link`, through its magic link as every link is) unless
    /// `flags` is `O_EXCL`, when the host refuses any link. Nothing is left
    /// behind on failure: the file goes with its last descriptor.
    pub(super) fn tmpfile(&mut self, dir: Fid, flags: i32, mode: u32, uid: u32, gid: u32) -> Result<Reply> {
        self.writable()?;
        if flags & !libc::O_EXCL != 0 {
            return Err(Errno::EINVAL);
        }
        let dir = self.fids.get(dir)?;
        if dir.file_type() != libc::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let flags = OFlag::from_bits_truncate(flags) | OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC;
        let file = host::open_at(dir.fd(), c".", flags, perm(mode))?;
        let proc_fds = self.proc_fds.as_fd();
        let path = host::reopen(proc_fds, file.as_fd(), OFlag::O_PATH | OFlag::O_CLOEXEC)?;
        drop(file);
        host::chown(path.as_fd(), Some(uid), Some(gid))?;
        host::chmod(proc_fds, path.as_fd(), mode)?;
        let stat = host::fstat(path.as_fd())?;
        Ok(self.insert((path, stat)))
    }

    /// Makes `name` in `dir` a hard link to `target`.
    pub(super) fn link(&self, target: Fid, dir: Fid, name: &[u8]) -> Result<Reply> {
        self.writable()?;
        let name = names::component(name)?;
        let target = self.fids.get(target)?;
        if target.file_type() == libc::S_IFDIR {
            return Err(Errno::EPERM);
        }
        let dir = self.fids.get(dir)?.fd();
        host::link(self.proc_fds.as_fd(), target.fd(), dir, &name)?;
        host::fstat(target.fd()).map(Reply::Stat)
    }

    /// Removes `name` from `dir`; `flags` is 0 or `AT_REMOVEDIR`.
    pub(super) fn unlink(&self, dir: Fid, name: &[u8], flags: i32) -> Result<Reply> {
        self.writable()?;
        let name = names::component(name)?;
        let flags = match flags {
            0 => UnlinkatFlags::NoRemoveDir,
            libc::AT_REMOVEDIR => UnlinkatFlags::RemoveDir,
            _ => return Err(Errno::EINVAL),
        };
        let dir = self.fids.get(dir)?.fd();
        nix::unistd::unlinkat(Some(dir.as_raw_fd()), name.as_c_str(), flags)?;
        Ok(Reply::Empty)
    }

    /// `renameat2` with `RENAME_NOREPLACE` or `RENAME_EXCHANGE`;
    /// `RENAME_WHITEOUT` (which makes a device node) is refused.
    pub(super) fn rename(
        &self,
        old_dir: Fid,
        old_name: &[u8],
        new_dir: Fid,
        new_name: &[u8],
        flags: u32,
    ) -> Result<Reply> {
        self.writable()?;
        let old_name = names::component(old_name)?;
        let new_name = names::component(new_name)?;
        let allowed = RenameFlags::RENAME_NOREPLACE | RenameFlags::RENAME_EXCHANGE;
        let flags = RenameFlags::from_bits(flags).filter(|flags| allowed.contains(*flags)).ok_or(Errno::EINVAL)?;
        let old_dir = self.fids.get(old_dir)?.fd();
        let new_dir = self.fids.get(new_dir)?.fd();
        nix::fcntl::renameat2(
            Some(old_dir.as_raw_fd()),
            old_name.as_c_str(),
            Some(new_dir.as_raw_fd()),
            new_name.as_c_str(),
            flags,
        )?;
        Ok(Reply::Empty)
    }

    /// Applies `attr` in the order owner, mode, size, times (so a new owner
    /// cannot clear set-id bits that `attr` sets) and returns the result.
    pub(super) fn setattr(&self, fid: Fid, attr: &SetAttr) -> Result<Reply> {
        let node = self.fids.get(fid)?;
        if !attr.is_empty() {
            self.writable()?;
        }
        let fd = node.fd();
        if attr.uid.is_some() || attr.gid.is_some() {
            host::chown(fd, attr.uid, attr.gid)?;
        }
        if let Some(mode) = attr.mode {
            if node.file_type() == libc::S_IFLNK {
                return Err(Errno::EOPNOTSUPP);
            }
            host::chmod(self.proc_fds.as_fd(), fd, mode)?;
        }
        if let Some(size) = attr.size {
            match node.file_type() {
                libc::S_IFREG => host::truncate(self.proc_fds.as_fd(), fd, size)?,
                libc::S_IFDIR => return Err(Errno::EISDIR),
                _ => return Err(Errno::EINVAL),
            }
        }
        if attr.atime.is_some() || attr.mtime.is_some() {
            host::utimens(fd, attr.atime, attr.mtime)?;
        }
        host::fstat(fd).map(Reply::Stat)
    }

    /// `fallocate(2)` on a regular file, in the modes the protocol allows
    /// (the seccomp filter allows no other).
    pub(super) fn fallocate(&self, fid: Fid, mode: i32, offset: u64, len: u64) -> Result<Reply> {
        let node = self.fids.get(fid)?;
        self.writable()?;
        if !crate::protocol::FALLOCATE_MODES.contains(&mode) {
            return Err(Errno::EOPNOTSUPP);
        }
        if node.file_type() != libc::S_IFREG {
            return Err(Errno::ENODEV);
        }
        host::fallocate(self.proc_fds.as_fd(), node.fd(), mode, offset, len)?;
        Ok(Reply::Empty)
    }
}
