//! The gofer wire protocol.
//!
//! The transport is an `AF_UNIX` `SOCK_SEQPACKET` socketpair; every message
//! is one frame:
//!
//! * request: `u32 length | u16 opcode | payload`
//! * response: `u32 length | u16 status | payload`, status 0 (ok, payload
//!   per operation) or 1 (error, payload an `i32` errno)
//!
//! `length` counts the bytes after itself. Integers are little-endian, byte
//! strings are a `u32` length followed by the bytes. Donated host fds ride as
//! `SCM_RIGHTS` on the response frame of `Open` and `Create`. A frame longer
//! than [`MAX_FRAME`], truncated, with trailing bytes, an unknown opcode or
//! a bad field is a protocol error and ends the connection.

mod codec;
mod message;

pub use codec::{Decoder, Encoder};
pub use message::{Opcode, Reply, ReplyKind, Request, Response};

/// The largest frame either side accepts, header included.
pub const MAX_FRAME: usize = 1 << 20;

/// The `fallocate(2)` modes a `Fallocate` request may ask for: allocate
/// (growing the size or not), punch a hole, zero a range (growing the size
/// or not).
pub const FALLOCATE_MODES: [i32; 5] = [
    0,
    libc::FALLOC_FL_KEEP_SIZE,
    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
    libc::FALLOC_FL_ZERO_RANGE,
    libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE,
];

/// A gofer serving one file (a file bind mount) serves a directory that
/// holds just that file, under this name.
pub const SINGLE_FILE: &[u8] = b"file";

/// Size of the frame header: `u32` length and `u16` opcode or status.
pub const HEADER_LEN: usize = 6;

/// Identifies a file the server holds open for the client. Never reused
/// within a connection.
pub type Fid = u64;

/// A point in time, as in `struct timespec`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeSpec {
    /// Seconds since the epoch.
    pub sec: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nsec: i64,
}

/// File attributes, as from `fstat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    /// Host device of the file system.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Number of hard links.
    pub nlink: u64,
    /// File type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number for device files.
    pub rdev: u64,
    /// Size in bytes.
    pub size: u64,
    /// Preferred I/O block size.
    pub blksize: u64,
    /// Number of 512-byte blocks allocated.
    pub blocks: u64,
    /// Last access.
    pub atime: TimeSpec,
    /// Last modification.
    pub mtime: TimeSpec,
    /// Last status change.
    pub ctime: TimeSpec,
}

impl From<&libc::stat> for Stat {
    /// The attributes a host `fstat` reported: the one conversion both the
    /// gofer server and the sentry's host-backed files use. Negative sizes
    /// (which the host never reports) read as 0.
    fn from(st: &libc::stat) -> Stat {
        let u = |v: i64| u64::try_from(v).unwrap_or(0);
        Stat {
            dev: st.st_dev,
            ino: st.st_ino,
            nlink: st.st_nlink,
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev,
            size: u(st.st_size),
            blksize: u(st.st_blksize),
            blocks: u(st.st_blocks),
            atime: TimeSpec { sec: st.st_atime, nsec: st.st_atime_nsec },
            mtime: TimeSpec { sec: st.st_mtime, nsec: st.st_mtime_nsec },
            ctime: TimeSpec { sec: st.st_ctime, nsec: st.st_ctime_nsec },
        }
    }
}

/// A directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirent {
    /// Inode number.
    pub ino: u64,
    /// File type, one of the `DT_*` constants.
    pub kind: u8,
    /// Name, a single component.
    pub name: Vec<u8>,
}

/// File system statistics, as from `fstatfs`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatFs {
    /// File system magic number.
    pub fs_type: u64,
    /// Optimal transfer block size.
    pub bsize: u64,
    /// Total data blocks.
    pub blocks: u64,
    /// Free blocks.
    pub bfree: u64,
    /// Free blocks available to unprivileged users.
    pub bavail: u64,
    /// Total inodes.
    pub files: u64,
    /// Free inodes.
    pub ffree: u64,
    /// Maximum length of a name.
    pub namelen: u64,
    /// Fragment size.
    pub frsize: u64,
    /// Mount flags (`ST_*`).
    pub flags: u64,
}

/// A timestamp to set with [`SetAttr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    /// The current time (`UTIME_NOW`).
    Now,
    /// This time.
    At(TimeSpec),
}

/// Attribute changes; `None` leaves an attribute as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (`chmod`).
    pub mode: Option<u32>,
    /// New owner (`chown`).
    pub uid: Option<u32>,
    /// New group (`chown`).
    pub gid: Option<u32>,
    /// New size (`truncate`); regular files only.
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<SetTime>,
    /// New modification time.
    pub mtime: Option<SetTime>,
}

impl SetAttr {
    /// Whether this changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == SetAttr::default()
    }
}
