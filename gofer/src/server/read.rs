//! Operations that only look: attach, walk, stat, open, getdents, readlink,
//! statfs.

use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;

use super::fids::Node;
use super::{dirents, host, names, Outcome, Server};
use crate::protocol::Reply;
use crate::Fid;

type Result<T> = std::result::Result<T, Errno>;

impl Server {
    /// Puts `fd`, a fresh `O_PATH` fd, in the fid table.
    pub(super) fn adopt(&mut self, fd: OwnedFd) -> Result<Reply> {
        let stat = host::fstat(fd.as_fd())?;
        let fid = self.fids.insert(Node::new(fd, stat.mode));
        Ok(Reply::FidStat { fid, stat })
    }

    pub(super) fn attach(&mut self) -> Result<Reply> {
        let fd = self.root.try_clone().map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EIO)))?;
        self.adopt(fd)
    }

    pub(super) fn walk(&mut self, dir: Fid, name: &[u8]) -> Result<Reply> {
        let name = names::component(name)?;
        let fd = host::open_path(self.fids.get(dir)?.fd(), &name)?;
        self.adopt(fd)
    }

    pub(super) fn stat(&self, fid: Fid) -> Result<Reply> {
        host::fstat(self.fids.get(fid)?.fd()).map(Reply::Stat)
    }

    /// Opens a regular file for I/O. Only the access mode, `O_TRUNC` and
    /// `O_APPEND` of `flags` count; the rest is the sentry's business.
    pub(super) fn open(&self, fid: Fid, flags: i32) -> Outcome {
        let node = self.fids.get(fid)?;
        let access = flags & libc::O_ACCMODE;
        if access == libc::O_ACCMODE {
            return Err(Errno::EINVAL);
        }
        if access != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
            self.writable()?;
        }
        if node.file_type() != libc::S_IFREG {
            return Err(Errno::EINVAL);
        }
        let flags = OFlag::from_bits_truncate(access | (flags & (libc::O_TRUNC | libc::O_APPEND)))
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY;
        let file = host::reopen(self.proc_fds.as_fd(), node.fd(), flags)?;
        Ok((Reply::Empty, Some(file)))
    }

    pub(super) fn getdents(&self, fid: Fid, cookie: u64) -> Result<Reply> {
        let node = self.fids.get(fid)?;
        if node.file_type() != libc::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        let dir =
            host::reopen(self.proc_fds.as_fd(), node.fd(), OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)?;
        let page = dirents::read_page(dir.as_fd(), cookie)?;
        Ok(Reply::Dirents { entries: page.entries, next_cookie: page.next_cookie })
    }

    pub(super) fn readlink(&self, fid: Fid) -> Result<Reply> {
        let node = self.fids.get(fid)?;
        if node.file_type() != libc::S_IFLNK {
            return Err(Errno::EINVAL);
        }
        host::readlink(node.fd()).map(Reply::Bytes)
    }

    pub(super) fn statfs(&self, fid: Fid) -> Result<Reply> {
        host::statfs(self.fids.get(fid)?.fd()).map(Reply::StatFs)
    }
}
