//! System calls: file status, access checks, symlink contents, filesystem
//! statistics.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::fcntl::{
    AT_EACCESS, AT_EMPTY_PATH, AT_FDCWD_ARG, AT_NO_AUTOMOUNT, AT_STATX_SYNC_TYPE, AT_SYMLINK_NOFOLLOW,
};
use crate::abi::layout::Layout;
use crate::abi::stat::{StatBuf, StatFsBuf, Statx, STATX_BASIC_STATS, STATX_MNT_ID};
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::dentry::{
    MNT_NOATIME, MNT_NODEV, MNT_NODIRATIME, MNT_NOEXEC, MNT_NOSUID, MNT_NOSYMFOLLOW, MNT_READONLY, MNT_RELATIME,
};
use crate::vfs::perm::{self, MAY_EXEC, MAY_READ, MAY_WRITE};
use crate::vfs::{Dentry, Stat, StatFs, TimeSpec, S_IFLNK, S_IFMT};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_stat, sys_stat, Full),
    (libc::SYS_fstat, sys_fstat, Full),
    (libc::SYS_lstat, sys_lstat, Full),
    (libc::SYS_newfstatat, sys_newfstatat, Full),
    (libc::SYS_statx, sys_statx, Partial("no birth time; attributes are always empty")),
    (libc::SYS_statfs, sys_statfs, Full),
    (libc::SYS_fstatfs, sys_fstatfs, Full),
    (libc::SYS_access, sys_access, Full),
    (libc::SYS_faccessat, sys_faccessat, Full),
    (libc::SYS_faccessat2, sys_faccessat2, Full),
    (libc::SYS_readlink, sys_readlink, Full),
    (libc::SYS_readlinkat, sys_readlinkat, Full),
];

/// `struct stat` of `st`.
pub(super) fn encode_stat(st: &Stat) -> Vec<u8> {
    let ts = |t: TimeSpec| Timespec { sec: t.sec, nsec: t.nsec };
    StatBuf {
        dev: st.dev,
        ino: st.ino,
        nlink: st.nlink,
        mode: st.mode,
        uid: st.uid,
        gid: st.gid,
        rdev: st.rdev,
        size: st.size,
        blksize: st.blksize,
        blocks: st.blocks,
        atime: ts(st.atime),
        mtime: ts(st.mtime),
        ctime: ts(st.ctime),
    }
    .encode()
}

fn major(dev: u64) -> u32 {
    u32::try_from(((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)).unwrap_or(0)
}

fn minor(dev: u64) -> u32 {
    u32::try_from((dev & 0xff) | ((dev >> 12) & !0xff)).unwrap_or(0)
}

/// `struct statx` of `st` on mount `mnt_id` (no birth time).
pub(super) fn encode_statx(st: &Stat, mnt_id: u64) -> Vec<u8> {
    let ts = |t: TimeSpec| Timespec { sec: t.sec, nsec: t.nsec };
    Statx {
        mask: STATX_BASIC_STATS | STATX_MNT_ID,
        blksize: u32::try_from(st.blksize).unwrap_or(4096),
        nlink: u32::try_from(st.nlink).unwrap_or(u32::MAX),
        uid: st.uid,
        gid: st.gid,
        mode: u16::try_from(st.mode & 0xffff).unwrap_or(0),
        ino: st.ino,
        size: st.size,
        blocks: st.blocks,
        atime: ts(st.atime),
        btime: Timespec::default(),
        ctime: ts(st.ctime),
        mtime: ts(st.mtime),
        rdev: (major(st.rdev), minor(st.rdev)),
        dev: (major(st.dev), minor(st.dev)),
        mnt_id,
    }
    .encode()
}

/// `struct statfs` of `s`.
pub(super) fn encode_statfs(s: &StatFs) -> Vec<u8> {
    StatFsBuf {
        fs_type: s.fs_type,
        bsize: s.bsize,
        blocks: s.blocks,
        bfree: s.bfree,
        bavail: s.bavail,
        files: s.files,
        ffree: s.ffree,
        namelen: s.namelen,
        frsize: s.frsize,
        flags: s.flags,
    }
    .encode()
}

fn put_stat(task: &Task, d: &Arc<Dentry>, addr: u64) -> SysResult {
    let st = d.node.stat()?;
    task.thread.mm().copy_out(addr, &encode_stat(&st))?;
    Ok(0)
}

fn sys_stat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    put_stat(task, &d, a[1])
}

fn sys_lstat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, false, false)?;
    put_stat(task, &d, a[1])
}

fn sys_fstat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    put_stat(task, &f.dentry, a[1])
}

/// Resolves the path argument of an `*at` call that takes
/// AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH.
fn resolve_flags(task: &Task, dirfd: u64, path_addr: u64, flags: u64, allowed: u64) -> Result<Arc<Dentry>, Errno> {
    if flags & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    let empty_ok = flags & AT_EMPTY_PATH != 0;
    let path = if path_addr == 0 && empty_ok { Vec::new() } else { args::path(task, path_addr)? };
    args::resolve_at_flags(task, dirfd, &path, flags)
}

fn sys_newfstatat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let d = resolve_flags(task, a[0], a[1], a[3], AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT)?;
    put_stat(task, &d, a[2])
}

fn sys_statx(task: &mut Task, a: [u64; 6]) -> SysResult {
    const STATX_RESERVED: u64 = 0x8000_0000;
    if a[3] & STATX_RESERVED != 0 || a[2] & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
        return Err(Errno::EINVAL);
    }
    let allowed = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE;
    let d = resolve_flags(task, a[0], a[1], a[2], allowed)?;
    let st = d.node.stat()?;
    task.thread.mm().copy_out(a[4], &encode_statx(&st, d.mount.id))?;
    Ok(0)
}

/// `f_flags` is valid (`ST_VALID`, which libc does not name).
const ST_VALID: u64 = 0x20;
/// The mount does not follow symlinks (`ST_NOSYMFOLLOW`, likewise).
const ST_NOSYMFOLLOW: u64 = 0x2000;

/// The filesystem's statfs with `f_flags` as Linux's
/// `calculate_f_flags` makes it: `ST_VALID` and the mount's flags.
fn statfs_of(d: &Dentry) -> Result<StatFs, Errno> {
    let mut s = d.node.statfs()?;
    s.flags |= ST_VALID;
    let mnt = d.mount.live.get();
    for (bit, st) in [
        (MNT_READONLY, libc::ST_RDONLY),
        (MNT_NOSUID, libc::ST_NOSUID),
        (MNT_NODEV, libc::ST_NODEV),
        (MNT_NOEXEC, libc::ST_NOEXEC),
        (MNT_NOATIME, libc::ST_NOATIME),
        (MNT_NODIRATIME, libc::ST_NODIRATIME),
        (MNT_RELATIME, libc::ST_RELATIME),
        (MNT_NOSYMFOLLOW, ST_NOSYMFOLLOW),
    ] {
        if mnt & bit != 0 {
            s.flags |= st;
        }
    }
    if d.node.read_only() {
        s.flags |= libc::ST_RDONLY;
    }
    Ok(s)
}

fn sys_statfs(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    let s = statfs_of(&d)?;
    task.thread.mm().copy_out(a[1], &encode_statfs(&s))?;
    Ok(0)
}

fn sys_fstatfs(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    let s = statfs_of(&f.dentry)?;
    task.thread.mm().copy_out(a[1], &encode_statfs(&s))?;
    Ok(0)
}

fn access(task: &Task, dirfd: u64, path_addr: u64, mode: u64, flags: u64) -> SysResult {
    if mode & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    let d = resolve_flags(task, dirfd, path_addr, flags, AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)?;
    if mode == 0 {
        return Ok(0);
    }
    let mut creds = task.thread.creds();
    if flags & AT_EACCESS == 0 {
        // access() checks with the real ids, and the capabilities of
        // root only if the real uid is root.
        creds.fsuid = creds.uid;
        creds.fsgid = creds.gid;
        creds.caps.effective = if creds.uid == 0 { creds.caps.permitted } else { 0 };
    }
    let st = d.node.stat()?;
    let mut want = 0;
    if mode & 4 != 0 {
        want |= MAY_READ;
    }
    if mode & 2 != 0 {
        want |= MAY_WRITE;
    }
    if mode & 1 != 0 {
        want |= MAY_EXEC;
    }
    perm::check_node(&creds, d.node.as_ref(), &st, want)?;
    // SuS asks for a read-only filesystem to be told apart (Linux's
    // do_faccessat): EROFS for write access to anything but a FIFO,
    // socket or device.
    if want & MAY_WRITE != 0 && !perm::special_file(st.mode & S_IFMT) && (d.mount.read_only() || d.node.read_only()) {
        return Err(Errno::EROFS);
    }
    Ok(0)
}

fn sys_access(task: &mut Task, a: [u64; 6]) -> SysResult {
    access(task, AT_FDCWD_ARG, a[0], a[1], 0)
}

fn sys_faccessat(task: &mut Task, a: [u64; 6]) -> SysResult {
    access(task, a[0], a[1], a[2], 0)
}

fn sys_faccessat2(task: &mut Task, a: [u64; 6]) -> SysResult {
    access(task, a[0], a[1], a[2], a[3])
}

fn readlink(task: &Task, dirfd: u64, path_addr: u64, buf: u64, size: u64) -> SysResult {
    let size = usize::try_from(int(size)).map_err(|_| Errno::EINVAL)?;
    if size == 0 {
        return Err(Errno::EINVAL);
    }
    let path = args::path(task, path_addr)?;
    let d = args::resolve_at(task, dirfd, &path, false, true)?;
    if d.node.stat()?.mode & S_IFMT != S_IFLNK {
        return Err(Errno::EINVAL);
    }
    let target = d.node.readlink()?;
    let n = target.len().min(size);
    task.thread.mm().copy_out(buf, &target[..n])?;
    Ok(n as u64)
}

fn sys_readlink(task: &mut Task, a: [u64; 6]) -> SysResult {
    readlink(task, AT_FDCWD_ARG, a[0], a[1], a[2])
}

fn sys_readlinkat(task: &mut Task, a: [u64; 6]) -> SysResult {
    readlink(task, a[0], a[1], a[2], a[3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::Decoder;
    use crate::vfs::TimeSpec;

    #[test]
    fn stat_layout_matches_the_abi() {
        let st = Stat {
            dev: 0x801,
            ino: 42,
            nlink: 3,
            mode: 0o100644,
            uid: 1000,
            gid: 100,
            size: 12345,
            blksize: 4096,
            blocks: 32,
            mtime: TimeSpec { sec: 7, nsec: 9 },
            ..Stat::default()
        };
        let b = encode_stat(&st);
        assert_eq!(b.len(), 144);
        let mut d = Decoder::new(&b);
        assert_eq!((d.u64(), d.u64(), d.u64(), d.u32(), d.u32(), d.u32()), (0x801, 42, 3, 0o100644, 1000, 100));
        d.skip(4 + 8);
        assert_eq!(d.u64(), 12345);
        d.skip(8 + 8 + 16);
        assert_eq!((d.i64(), d.i64()), (7, 9));
    }

    #[test]
    fn statx_layout_matches_the_abi() {
        let st = Stat { dev: 0x801, ino: 5, mode: 0o40755, size: 9, ..Stat::default() };
        let b = encode_statx(&st, 3);
        assert_eq!(b.len(), 256);
        let mut d = Decoder::new(&b);
        assert_eq!(d.u32(), 0x17ff);
        d.skip(4 + 8 + 12);
        assert_eq!(d.u16(), 0o40755);
        d.skip(2);
        assert_eq!((d.u64(), d.u64()), (5, 9));
        let mut d = Decoder::new(&b[136..]);
        assert_eq!((d.u32(), d.u32(), d.u64()), (8, 1, 3));
    }
}
