//! The virtual file system: nodes and files that filesystems implement,
//! mounts and dentries, path resolution, file descriptions and fd tables.

pub(crate) mod acl;
pub(crate) mod at;
pub(crate) mod dentry;
pub(crate) mod dnotify;
pub(crate) mod fasync;
pub(crate) mod fd_table;
pub(crate) mod file;
pub(crate) mod ioctl;
pub(crate) mod mounts;
pub(crate) mod names;
pub(crate) mod notify;
pub(crate) mod nsid;
pub(crate) mod open;
pub(crate) mod perm;
pub(crate) mod rename;
pub(crate) mod walk;

pub(crate) use dentry::{Dentry, Mount, MountFlags, MountNamespace, MountOpts, Propagation};
pub(crate) use fasync::{Fasync, OwnerSignal, SignalOwner, UrgentSignal};
pub(crate) use fd_table::FdTable;
pub(crate) use file::{Cursor, FileDescription};

/// What fallocate(2) does to a range of a regular file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocate {
    /// Holds the range's blocks (mode 0); the size grows to cover it
    /// unless `keep_size` (`FALLOC_FL_KEEP_SIZE`).
    Reserve { keep_size: bool },
    /// Lets the range's blocks go: it reads as zeros, the size stays
    /// (`FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE`).
    PunchHole,
    /// Zeroes the range and holds its blocks; the size grows unless
    /// `keep_size` (`FALLOC_FL_ZERO_RANGE`).
    ZeroRange { keep_size: bool },
}

impl Allocate {
    /// The fallocate(2) mode bits.
    pub(crate) fn mode(self) -> i32 {
        let keep = |k: bool| if k { libc::FALLOC_FL_KEEP_SIZE } else { 0 };
        match self {
            Allocate::Reserve { keep_size } => keep(keep_size),
            Allocate::PunchHole => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            Allocate::ZeroRange { keep_size } => libc::FALLOC_FL_ZERO_RANGE | keep(keep_size),
        }
    }
}
pub(crate) use husk_gofer::{SetAttr, SetTime, Stat, StatFs, TimeSpec};
pub(crate) use ioctl::IoctlContext;
pub(crate) use open::OpenHow;

use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::mm::Mappable;
use std::sync::Arc;

/// File type bits of `st_mode`, which every filesystem uses.
pub(crate) use crate::abi::stat::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};

/// The `d_type` of a mode.
pub(crate) fn dtype(mode: u32) -> u8 {
    u8::try_from((mode & S_IFMT) >> 12).unwrap_or(0)
}

/// What a reader waits for: data, or the end of it.
pub(crate) const READ_EVENTS: u32 = POLLIN | POLLRDNORM | POLLHUP | POLLERR;
/// What a writer waits for: room, or the reader gone.
pub(crate) const WRITE_EVENTS: u32 = POLLOUT | POLLWRNORM | POLLHUP | POLLERR;
/// What a file that never blocks reports.
pub(crate) const POLL_ALWAYS: u32 = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;

/// One directory entry as `getdents64` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    pub kind: u8,
    pub name: Vec<u8>,
}

/// The owner and mode of a new node.
#[derive(Clone, Copy, Debug)]
pub struct NewNode {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
}

/// A file system object. Every operation a filesystem does not support
/// fails the way Linux fails it for such an object.
pub trait Node: Send + Sync {
    fn stat(&self) -> Result<Stat, Errno>;

    /// Looks up one name (never "." or ".."; symlinks are not followed).
    fn lookup(&self, _name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        Err(Errno::ENOTDIR)
    }

    /// Every entry except "." and "..".
    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        Err(Errno::ENOTDIR)
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        Err(Errno::EINVAL)
    }

    /// A "magic" link (in /proc) that resolves to a dentry directly
    /// instead of through its text.
    fn magic_link(&self) -> Option<Result<Arc<Dentry>, Errno>> {
        None
    }

    /// Opens the node; `flags` are the open(2) flags after resolution.
    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Err(Errno::ENXIO)
    }

    /// An `O_TMPFILE` regular file in this directory, with no name; it
    /// may be linked later if `linkable`.
    fn tmpfile(&self, _new: NewNode, _linkable: bool) -> Result<Arc<dyn Node>, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn create(&self, _name: &[u8], _new: NewNode) -> Result<Arc<dyn Node>, Errno> {
        Err(Errno::EPERM)
    }

    fn mkdir(&self, _name: &[u8], _new: NewNode) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn mknod(&self, _name: &[u8], _new: NewNode, _rdev: u64) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn symlink(&self, _name: &[u8], _target: &[u8], _new: NewNode) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// Makes `name` in this directory another name for `target`.
    fn link(&self, _name: &[u8], _target: &Arc<dyn Node>) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// Removes a non-directory (`dir == false`) or an empty directory.
    fn unlink(&self, _name: &[u8], _dir: bool) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// Moves `name` to `new_name` in `new_dir` (same filesystem).
    fn rename(&self, _name: &[u8], _new_dir: &Arc<dyn Node>, _new_name: &[u8], _flags: u32) -> Result<(), Errno> {
        Err(Errno::EXDEV)
    }

    fn setattr(&self, _attr: &SetAttr) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    /// The value of extended attribute `name` (the full name, namespace
    /// prefix included; the system call checked who may read it). A
    /// filesystem that stores none finds none.
    fn getxattr(&self, _name: &[u8]) -> Result<Vec<u8>, Errno> {
        Err(Errno::ENODATA)
    }

    /// Sets extended attribute `name`: `XATTR_CREATE` fails with EEXIST
    /// if it exists, `XATTR_REPLACE` with ENODATA if it does not.
    fn setxattr(&self, _name: &[u8], _value: &[u8], _flags: u32) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// The names of the node's extended attributes.
    fn listxattr(&self) -> Result<Vec<Vec<u8>>, Errno> {
        Ok(Vec::new())
    }

    /// Removes extended attribute `name`: ENODATA if there is none.
    fn removexattr(&self, _name: &[u8]) -> Result<(), Errno> {
        Err(Errno::ENODATA)
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(StatFs { fs_type: 0x0102_1994, bsize: 4096, namelen: 255, frsize: 4096, ..StatFs::default() })
    }

    /// The filesystem's identity, so cross-filesystem renames and links
    /// fail with `EXDEV`.
    fn fs_id(&self) -> usize;

    /// Whether the whole filesystem refuses changes (a read-only mount, as
    /// /proc/mounts says).
    fn read_only(&self) -> bool {
        false
    }

    fn as_any(&self) -> &dyn std::any::Any;
}

/// An open file's operations. Offsets are managed by `FileDescription`.
/// What one read call keeps across its attempts: whether it may wait
/// (O_NONBLOCK, MSG_DONTWAIT), and the state of a read that also ends
/// by time (a terminal's VMIN/VTIME timers).
pub struct ReadCall {
    /// The call must not wait: an attempt takes what there is.
    pub nonblock: bool,
    /// When the call began.
    pub started: std::time::Instant,
    /// The bytes the file held at the last attempt, and since when.
    pub seen: Option<(usize, std::time::Instant)>,
    /// Set by an attempt that failed with EAGAIN: when to attempt again
    /// even if no event comes.
    pub retry_at: Option<std::time::Instant>,
}

impl ReadCall {
    pub fn new(nonblock: bool) -> ReadCall {
        ReadCall { nonblock, started: std::time::Instant::now(), seen: None, retry_at: None }
    }
}

pub trait FileOps: Send + Sync + AsAny {
    /// Reads at `off` (ignored by streams).
    fn read(&self, _buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// One attempt of a stream's read call (see [`ReadCall`]): files
    /// whose reads depend on more than their data (a terminal's timers)
    /// implement it; others read.
    fn read_call(&self, buf: &mut [u8], _call: &mut ReadCall) -> Result<usize, Errno> {
        self.read(buf, 0)
    }

    /// Writes at `off` (ignored by streams).
    fn write(&self, _buf: &[u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    /// Appends `buf` at the end the file has at that moment, atomically
    /// against everyone else who writes it, and returns the bytes written
    /// and the offset just past them. `None` for a file that has no such
    /// append of its own: only the sandbox changes it, so the caller writes
    /// at the size it reads. (A host file, which the host may append to
    /// meanwhile, appends on the host.)
    fn append(&self, _buf: &[u8]) -> Option<Result<(usize, u64), Errno>> {
        None
    }

    /// fcntl(F_SETFL) turns O_APPEND on or off: a file whose holder
    /// keeps the flag too (a host file) passes it on, and may refuse (an
    /// append-only host file cannot stop appending: EPERM, as Linux).
    fn set_append(&self, _append: bool) -> Result<(), Errno> {
        Ok(())
    }

    /// Whether the file has a position (`lseek` works).
    fn seekable(&self) -> bool {
        true
    }

    /// Whether `lseek` may seek from the end (`SEEK_END`, `SEEK_DATA`,
    /// `SEEK_HOLE`); Linux's `seq_lseek` (/proc's files) takes only
    /// `SEEK_SET` and `SEEK_CUR` (EINVAL).
    fn seeks_from_end(&self) -> bool {
        true
    }

    /// An ioctl of the file's own (the descriptor's generic ones are the
    /// syscall layer's): the file copies its argument in and out of the
    /// caller's memory and asks `ctx` what it needs of the caller (a
    /// terminal: the session and process group, for job control).
    fn ioctl(&self, _ctx: &dyn IoctlContext, _req: u64, _arg: u64) -> Result<u64, Errno> {
        Err(Errno::ENOTTY)
    }

    /// F_GETPIPE_SZ (`set` None) and F_SETPIPE_SZ (`set` the size asked
    /// for and whether the caller has CAP_SYS_RESOURCE), which answers the
    /// capacity set. EBADF for a file that is no pipe, as in Linux.
    fn pipe_capacity(&self, _set: Option<(usize, bool)>) -> Result<usize, Errno> {
        Err(Errno::EBADF)
    }

    fn truncate(&self, _len: u64) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }

    /// fallocate(2) of a regular file, the arguments checked: does `how`
    /// to the range `off..off+len`. EOPNOTSUPP where the file cannot
    /// (glibc's posix_fallocate then writes zeros instead).
    fn allocate(&self, _off: u64, _len: u64, _how: Allocate) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    fn fsync(&self) -> Result<(), Errno> {
        Ok(())
    }

    /// Whether `RWF_NOWAIT` I/O is possible (Linux's `FMODE_NOWAIT`):
    /// streams, which fail with EAGAIN instead of waiting, can; regular
    /// files only where the filesystem serves them from a cache without
    /// waiting (Linux's tmpfs and overlayfs cannot: EOPNOTSUPP).
    fn nowait(&self) -> bool {
        !self.seekable()
    }

    /// The poll events the file is ready for now (POLLIN, POLLOUT, POLLHUP
    /// …). Files that never block are always readable and writable.
    fn poll_events(&self) -> u32 {
        POLL_ALWAYS
    }

    /// Registers `e` on the queue(s) that announce changes of the file's
    /// readiness. A file that never blocks has none: it is always ready.
    fn event_register(&self, _e: &crate::waiter::Entry) {}

    /// Undoes `event_register`.
    fn event_unregister(&self, _e: &crate::waiter::Entry) {}

    /// Whether the open that made this file is complete. A file whose
    /// open must wait for something (a FIFO end for its partner, as
    /// Linux's `fifo_open`) fails with EAGAIN until then, and the opener
    /// waits on the file's queue: files never block.
    fn open_ready(&self) -> Result<(), Errno> {
        Ok(())
    }

    /// F_SETOWN gave the file an owner, which `urgent` tells of a
    /// socket's urgent data; None when it has none.
    fn set_signal_owner(&self, _urgent: Option<UrgentSignal>) {}

    /// Which readiness changes signal the owner of a description with
    /// O_ASYNC (Linux's `->fasync`); None for a file without it, where
    /// O_ASYNC has no effect.
    fn fasync(&self) -> Option<Fasync> {
        None
    }

    /// How long a blocking read (`write` false) or write may wait before
    /// it fails with EAGAIN (a socket's SO_RCVTIMEO, SO_SNDTIMEO).
    fn io_timeout(&self, _write: bool) -> Option<std::time::Duration> {
        None
    }

    /// F_GET_SEALS: the file's seals; EINVAL for a file that has none
    /// (only tmpfs and memfd files have).
    fn seals(&self) -> Result<u32, Errno> {
        Err(Errno::EINVAL)
    }

    /// F_ADD_SEALS, the descriptor writable and the seals known.
    fn add_seals(&self, _seals: u32) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }

    /// For private mappings of this file.
    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        None
    }
}

/// Conversion of an `Arc<dyn FileOps>` to `Arc<dyn Any>`, so a system call
/// can reach the concrete file (a socket) behind a descriptor.
pub trait AsAny {
    fn into_any(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn std::any::Any + Send + Sync>;
}

impl<T: std::any::Any + Send + Sync> AsAny for T {
    fn into_any(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
