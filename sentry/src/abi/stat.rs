//! File status as the guest reads it: the file type bits of `st_mode`
//! (Linux's `include/uapi/linux/stat.h`), `struct stat`, `struct statx`
//! and `struct statfs`.

use super::layout::{Decoder, Encoder, Layout};
use super::time::Timespec;

pub(crate) const S_IFMT: u32 = 0o170000;
pub(crate) const S_IFSOCK: u32 = 0o140000;
pub(crate) const S_IFLNK: u32 = 0o120000;
pub(crate) const S_IFREG: u32 = 0o100000;
pub(crate) const S_IFBLK: u32 = 0o060000;
pub(crate) const S_IFDIR: u32 = 0o040000;
pub(crate) const S_IFCHR: u32 = 0o020000;
pub(crate) const S_IFIFO: u32 = 0o010000;

/// statx(2)'s mask bits the sentry fills: the basic stats and the mount
/// id.
pub(crate) const STATX_BASIC_STATS: u32 = 0x7ff;
pub(crate) const STATX_MNT_ID: u32 = 0x1000;

/// A `struct stat` (x86-64: 144 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatBuf {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub blocks: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
}

impl Layout for StatBuf {
    const SIZE: usize = 144;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.dev).u64(self.ino).u64(self.nlink).u32(self.mode).u32(self.uid).u32(self.gid).u32(0);
        e.u64(self.rdev).u64(self.size).u64(self.blksize).u64(self.blocks);
        for t in [self.atime, self.mtime, self.ctime] {
            t.encode_to(e);
        }
        e.zeros(24);
    }

    fn decode_from(d: &mut Decoder) -> StatBuf {
        let (dev, ino, nlink) = (d.u64(), d.u64(), d.u64());
        let (mode, uid, gid) = (d.u32(), d.u32(), d.u32());
        d.skip(4);
        let (rdev, size, blksize, blocks) = (d.u64(), d.u64(), d.u64(), d.u64());
        let (atime, mtime) = (Timespec::decode_from(d), Timespec::decode_from(d));
        let ctime = Timespec::decode_from(d);
        StatBuf { dev, ino, nlink, mode, uid, gid, rdev, size, blksize, blocks, atime, mtime, ctime }
    }
}

/// A `struct statx` (256 bytes) with the fields the sentry fills; the
/// rest (attributes, the spare words) reads as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Statx {
    pub mask: u32,
    pub blksize: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub atime: Timespec,
    pub btime: Timespec,
    pub ctime: Timespec,
    pub mtime: Timespec,
    pub rdev: (u32, u32),
    pub dev: (u32, u32),
    pub mnt_id: u64,
}

impl Layout for Statx {
    const SIZE: usize = 256;

    fn encode_to(&self, e: &mut Encoder) {
        let start = e.len();
        e.u32(self.mask).u32(self.blksize).u64(0);
        e.u32(self.nlink).u32(self.uid).u32(self.gid).u16(self.mode).u16(0);
        e.u64(self.ino).u64(self.size).u64(self.blocks).u64(0);
        // struct statx_timestamp: s64 seconds, u32 nanoseconds, padding.
        for t in [self.atime, self.btime, self.ctime, self.mtime] {
            e.i64(t.sec).u32(u32::try_from(t.nsec).unwrap_or(0)).u32(0);
        }
        e.u32(self.rdev.0).u32(self.rdev.1).u32(self.dev.0).u32(self.dev.1).u64(self.mnt_id);
        e.zeros(Self::SIZE - (e.len() - start));
    }

    fn decode_from(d: &mut Decoder) -> Statx {
        let (mask, blksize) = (d.u32(), d.u32());
        d.skip(8);
        let (nlink, uid, gid, mode) = (d.u32(), d.u32(), d.u32(), d.u16());
        d.skip(2);
        let (ino, size, blocks) = (d.u64(), d.u64(), d.u64());
        d.skip(8);
        let mut ts = || {
            let (sec, nsec) = (d.i64(), d.u32());
            d.skip(4);
            Timespec { sec, nsec: i64::from(nsec) }
        };
        let (atime, btime, ctime, mtime) = (ts(), ts(), ts(), ts());
        let (rdev, dev) = ((d.u32(), d.u32()), (d.u32(), d.u32()));
        Statx {
            mask,
            blksize,
            nlink,
            uid,
            gid,
            mode,
            ino,
            size,
            blocks,
            atime,
            btime,
            ctime,
            mtime,
            rdev,
            dev,
            mnt_id: d.u64(),
        }
    }
}

/// A `struct statfs` (x86-64: 120 bytes); f_fsid and the spare words read
/// as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatFsBuf {
    pub fs_type: u64,
    pub bsize: u64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub namelen: u64,
    pub frsize: u64,
    pub flags: u64,
}

impl Layout for StatFsBuf {
    const SIZE: usize = 120;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.fs_type).u64(self.bsize).u64(self.blocks).u64(self.bfree).u64(self.bavail);
        e.u64(self.files).u64(self.ffree).u64(0).u64(self.namelen).u64(self.frsize).u64(self.flags).zeros(32);
    }

    fn decode_from(d: &mut Decoder) -> StatFsBuf {
        let (fs_type, bsize, blocks, bfree, bavail) = (d.u64(), d.u64(), d.u64(), d.u64(), d.u64());
        let (files, ffree) = (d.u64(), d.u64());
        d.skip(8);
        let (namelen, frsize, flags) = (d.u64(), d.u64(), d.u64());
        StatFsBuf { fs_type, bsize, blocks, bfree, bavail, files, ffree, namelen, frsize, flags }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_linux() {
        assert_eq!(StatBuf::SIZE, size_of::<libc::stat>());
        assert_eq!(Statx::SIZE, size_of::<libc::statx>());
        assert_eq!(StatFsBuf::SIZE, size_of::<libc::statfs>());
        let st = StatBuf { size: 7, mtime: Timespec { sec: 8, nsec: 9 }, blocks: 10, ..StatBuf::default() };
        let b = st.encode();
        let at = |off: usize| i64::from_le_bytes(b[off..off + 8].try_into().unwrap());
        assert_eq!(at(offset_of!(libc::stat, st_size)), 7);
        assert_eq!(at(offset_of!(libc::stat, st_blocks)), 10);
        assert_eq!((at(offset_of!(libc::stat, st_mtime)), at(offset_of!(libc::stat, st_mtime_nsec))), (8, 9));
        assert_eq!(StatBuf::decode(&b), st);

        let x = Statx {
            mode: 0o40755,
            size: 5,
            dev: (8, 1),
            mnt_id: 3,
            mtime: Timespec { sec: 4, nsec: 6 },
            ..Statx::default()
        };
        let b = x.encode();
        assert_eq!(b.len(), Statx::SIZE);
        let u64_at = |off: usize| u64::from_le_bytes(b[off..off + 8].try_into().unwrap());
        assert_eq!(u64_at(offset_of!(libc::statx, stx_size)), 5);
        assert_eq!(u64_at(offset_of!(libc::statx, stx_mnt_id)), 3);
        assert_eq!(u64_at(offset_of!(libc::statx, stx_mtime)), 4);
        assert_eq!(b[offset_of!(libc::statx, stx_dev_major)], 8);
        assert_eq!(b[offset_of!(libc::statx, stx_mode)..][..2], 0o40755u16.to_le_bytes());
        assert_eq!(Statx::decode(&b), x);

        let f = StatFsBuf { fs_type: 0x01021994, namelen: 255, flags: 32, ..StatFsBuf::default() };
        let b = f.encode();
        assert_eq!(b[offset_of!(libc::statfs, f_namelen)..][..8], 255u64.to_le_bytes());
        assert_eq!(b[offset_of!(libc::statfs, f_frsize) + 8..][..8], 32u64.to_le_bytes(), "f_flags");
        assert_eq!(StatFsBuf::decode(&b), f);
        assert_eq!((STATX_BASIC_STATS, STATX_MNT_ID), (libc::STATX_BASIC_STATS, libc::STATX_MNT_ID));
    }

    #[test]
    fn match_linux() {
        let bits = [
            (S_IFMT, libc::S_IFMT),
            (S_IFSOCK, libc::S_IFSOCK),
            (S_IFLNK, libc::S_IFLNK),
            (S_IFREG, libc::S_IFREG),
            (S_IFBLK, libc::S_IFBLK),
            (S_IFDIR, libc::S_IFDIR),
            (S_IFCHR, libc::S_IFCHR),
            (S_IFIFO, libc::S_IFIFO),
        ];
        for (ours, linux) in bits {
            assert_eq!(ours, linux);
        }
    }
}
