//! The fid table: what each fid the client holds refers to.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;

use crate::Fid;

/// A file the client holds: an `O_PATH|O_NOFOLLOW` fd on it and its file
/// type, which cannot change for the life of the inode.
pub(super) struct Node {
    fd: OwnedFd,
    file_type: u32,
}

impl Node {
    /// A node for `fd`, an `O_PATH` fd whose `st_mode` is `mode`.
    pub(super) fn new(fd: OwnedFd, mode: u32) -> Node {
        Node { fd, file_type: mode & libc::S_IFMT }
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The `S_IFMT` bits of the file's mode.
    pub(super) fn file_type(&self) -> u32 {
        self.file_type
    }
}

/// Fids of one connection. Fids are handed out from a counter and never
/// reused; an unknown fid is `EBADF`.
pub(super) struct FidTable {
    nodes: HashMap<Fid, Node>,
    next: Fid,
}

impl FidTable {
    pub(super) fn new() -> FidTable {
        FidTable { nodes: HashMap::new(), next: 1 }
    }

    /// Adds `node` under a fresh fid. A 64-bit counter cannot run out
    /// within the life of a connection, so fids are never reused.
    pub(super) fn insert(&mut self, node: Node) -> Fid {
        let fid = self.next;
        self.next = fid.wrapping_add(1);
        self.nodes.insert(fid, node);
        fid
    }

    pub(super) fn get(&self, fid: Fid) -> Result<&Node, Errno> {
        self.nodes.get(&fid).ok_or(Errno::EBADF)
    }

    /// Drops `fid`, closing its fd.
    pub(super) fn remove(&mut self, fid: Fid) -> Result<(), Errno> {
        self.nodes.remove(&fid).map(drop).ok_or(Errno::EBADF)
    }
}
