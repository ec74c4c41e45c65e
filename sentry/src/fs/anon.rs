//! What anonymous files (pipes, sockets, eventfds, epoll instances) share:
//! the attributes `fstat` reports for them.

use crate::abi::fcntl::O_NONBLOCK;
use crate::vfs::{Stat, TimeSpec};

/// The status of an anonymous file: one link, created (and last changed)
/// at `created`, on the pseudo device `dev`.
pub(crate) fn stat(dev: u64, ino: u64, mode: u32, created: TimeSpec) -> Stat {
    Stat { dev, ino, nlink: 1, mode, blksize: 4096, atime: created, mtime: created, ctime: created, ..Stat::default() }
}

/// Whether status flags ask for non-blocking I/O.
pub(crate) fn nonblocking(flags: u32) -> bool {
    flags & O_NONBLOCK != 0
}

/// `Node` for a socket file type with `ino` and `created` fields: a
/// socket inode of the socket pseudo-filesystem.
macro_rules! socket_node {
    ($t:ty) => {
        impl crate::vfs::Node for $t {
            fn stat(&self) -> Result<crate::vfs::Stat, crate::abi::Errno> {
                Ok(crate::fs::anon::stat(0x08, self.ino, crate::vfs::S_IFSOCK | 0o777, self.created))
            }

            fn fs_id(&self) -> usize {
                usize::MAX - 2
            }

            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}
pub(crate) use socket_node;

/// `Node` for an anonymous-inode file type (eventfd, epoll, inotify …) with
/// `ino` and `created` fields, on filesystem `fs_id`: the inode of Linux's
/// anon_inodefs, mode 0600.
macro_rules! anon_inode_node {
    ($t:ty, $fs_id:expr) => {
        impl crate::vfs::Node for $t {
            fn stat(&self) -> Result<crate::vfs::Stat, crate::abi::Errno> {
                Ok(crate::fs::anon::stat(0x0e, self.ino, 0o600, self.created))
            }

            fn fs_id(&self) -> usize {
                $fs_id
            }

            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}
pub(crate) use anon_inode_node;
