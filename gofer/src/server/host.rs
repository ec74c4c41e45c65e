//! Thin wrappers around the host syscalls the server makes, all fd-relative
//! and none following a symlink on the host.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;
use nix::unistd::{Gid, Uid};

use crate::{SetTime, Stat, StatFs};

/// `openat(dir, name, flags, mode)` returning an owned fd.
pub(super) fn open_at(dir: BorrowedFd<'_>, name: &CStr, flags: OFlag, mode: Mode) -> Result<OwnedFd, Errno> {
    let raw = nix::fcntl::openat(Some(dir.as_raw_fd()), name, flags, mode)?;
    // SAFETY: openat just returned `raw`, a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// An `O_PATH` fd for the entry `name` of `dir`; a symlink is not followed.
pub(super) fn open_path(dir: BorrowedFd<'_>, name: &CStr) -> Result<OwnedFd, Errno> {
    open_at(dir, name, OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC, Mode::empty())
}

/// The name of `fd` in `/proc/self/fd`.
fn proc_name(fd: BorrowedFd<'_>) -> Result<CString, Errno> {
    CString::new(fd.as_raw_fd().to_string()).map_err(|_| Errno::EINVAL)
}

/// Opens the file `fd` refers to anew, with `flags`, through its magic link
/// in `proc_fds` (`/proc/self/fd`). This is how an `O_PATH` fd becomes a
/// readable or writable one. The magic link is followed (it must be, so
/// `O_NOFOLLOW` cannot be set); it leads to the inode `fd` already holds,
/// which was found without following a symlink.
pub(super) fn reopen(proc_fds: BorrowedFd<'_>, fd: BorrowedFd<'_>, flags: OFlag) -> Result<OwnedFd, Errno> {
    open_at(proc_fds, &proc_name(fd)?, flags, Mode::empty())
}

/// Attributes of the file `fd` refers to (an `O_PATH` fd works).
pub(super) fn fstat(fd: BorrowedFd<'_>) -> Result<Stat, Errno> {
    nix::sys::stat::fstat(fd.as_raw_fd()).map(|st| Stat::from(&st))
}

/// Mode of `name` in `dir`, not following a symlink.
pub(super) fn lstat_mode(dir: BorrowedFd<'_>, name: &CStr) -> Result<u32, Errno> {
    nix::sys::stat::fstatat(Some(dir.as_raw_fd()), name, AtFlags::AT_SYMLINK_NOFOLLOW).map(|st| st.st_mode)
}

/// The target of the symlink `fd` (an `O_PATH` fd on the link itself).
pub(super) fn readlink(fd: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
    nix::fcntl::readlinkat(Some(fd.as_raw_fd()), c"").map(OsStringExt::into_vec)
}

/// A signed kernel field as the unsigned wire field: the same bits.
fn bits(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// Statistics of the file system holding `fd`.
pub(super) fn statfs(fd: BorrowedFd<'_>) -> Result<StatFs, Errno> {
    let mut st = MaybeUninit::<libc::statfs64>::uninit();
    // SAFETY: `fd` is a valid open fd and `st` is writable memory of the
    // size fstatfs64 fills.
    let rc = unsafe { libc::fstatfs64(fd.as_raw_fd(), st.as_mut_ptr()) };
    Errno::result(rc)?;
    // SAFETY: fstatfs64 succeeded, so it initialized `st`.
    let st = unsafe { st.assume_init() };
    Ok(StatFs {
        fs_type: bits(st.f_type),
        bsize: bits(st.f_bsize),
        blocks: st.f_blocks,
        bfree: st.f_bfree,
        bavail: st.f_bavail,
        files: st.f_files,
        ffree: st.f_ffree,
        namelen: bits(st.f_namelen),
        frsize: bits(st.f_frsize),
        flags: bits(st.f_flags),
    })
}

/// Changes the owner and/or group of the file `fd` refers to; a symlink's
/// own ownership changes, not its target's.
pub(super) fn chown(fd: BorrowedFd<'_>, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
    nix::unistd::fchownat(
        Some(fd.as_raw_fd()),
        c"",
        uid.map(Uid::from_raw),
        gid.map(Gid::from_raw),
        AtFlags::AT_EMPTY_PATH,
    )
}

/// Sets the permission bits of the file `fd` refers to (not a symlink:
/// Linux cannot chmod one), through its magic link in `proc_fds`.
pub(super) fn chmod(proc_fds: BorrowedFd<'_>, fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    nix::sys::stat::fchmodat(
        Some(proc_fds.as_raw_fd()),
        proc_name(fd)?.as_c_str(),
        Mode::from_bits_truncate(mode & 0o7777),
        nix::sys::stat::FchmodatFlags::FollowSymlink,
    )
}

fn utime(t: Option<SetTime>) -> libc::timespec {
    match t {
        None => libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT },
        Some(SetTime::Now) => libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_NOW },
        Some(SetTime::At(t)) => libc::timespec { tv_sec: t.sec, tv_nsec: t.nsec },
    }
}

/// Sets the access and/or modification time of the file `fd` refers to (a
/// symlink's own times, not its target's).
pub(super) fn utimens(fd: BorrowedFd<'_>, atime: Option<SetTime>, mtime: Option<SetTime>) -> Result<(), Errno> {
    let times = [utime(atime), utime(mtime)];
    // SAFETY: `fd` is a valid open fd, the path is a NUL-terminated empty
    // string (AT_EMPTY_PATH: the fd itself) and `times` is an array of two
    // timespecs that outlives the call.
    let rc = unsafe {
        libc::utimensat(fd.as_raw_fd(), c"".as_ptr(), times.as_ptr(), libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
    };
    Errno::result(rc).map(drop)
}

/// Sets the size of the regular file `fd` refers to.
pub(super) fn truncate(proc_fds: BorrowedFd<'_>, fd: BorrowedFd<'_>, size: u64) -> Result<(), Errno> {
    let size = i64::try_from(size).map_err(|_| Errno::EFBIG)?;
    let file = reopen(proc_fds, fd, OFlag::O_WRONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK)?;
    nix::unistd::ftruncate(file, size)
}

/// `fallocate(2)` on the file `fd` refers to, reopened for writing.
pub(super) fn fallocate(
    proc_fds: BorrowedFd<'_>,
    fd: BorrowedFd<'_>,
    mode: i32,
    offset: u64,
    len: u64,
) -> Result<(), Errno> {
    let offset = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
    let len = i64::try_from(len).map_err(|_| Errno::EINVAL)?;
    let file = reopen(proc_fds, fd, OFlag::O_WRONLY | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK)?;
    nix::fcntl::fallocate(file.as_raw_fd(), nix::fcntl::FallocateFlags::from_bits_retain(mode), offset, len)
}

/// Makes a hard link `name` in `dir` to the file `fd` refers to, through its
/// magic link in `proc_fds` (unlike `AT_EMPTY_PATH` this needs no
/// `CAP_DAC_READ_SEARCH`).
pub(super) fn link(
    proc_fds: BorrowedFd<'_>,
    fd: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    name: &CStr,
) -> Result<(), Errno> {
    nix::unistd::linkat(
        Some(proc_fds.as_raw_fd()),
        proc_name(fd)?.as_c_str(),
        Some(dir.as_raw_fd()),
        name,
        AtFlags::AT_SYMLINK_FOLLOW,
    )
}
