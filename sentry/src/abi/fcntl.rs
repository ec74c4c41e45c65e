//! Open-file status flags, `fcntl` commands, record and `flock` locks,
//! `lseek` origins, and the `*at` calls' flags and directory argument
//! (Linux's `include/uapi/asm-generic/fcntl.h`, `linux/fcntl.h`, `fs.h`).
//! The `*at` flags are compared against raw 64-bit argument registers, so
//! they are `u64`; open flags as the guest passes them are `libc`'s `O_*`.

/// The open-file status flags as an open file description keeps them
/// (`u32`); the `int` forms that system call arguments carry are `libc`'s.
pub(crate) const O_ACCMODE: u32 = 0o3;
pub(crate) const O_RDONLY: u32 = 0o0;
pub(crate) const O_WRONLY: u32 = 0o1;
pub(crate) const O_RDWR: u32 = 0o2;
pub(crate) const O_APPEND: u32 = 0o2000;
pub(crate) const O_NONBLOCK: u32 = 0o4000;
pub(crate) const O_ASYNC: u32 = 0o20000;
pub(crate) const O_PATH: u32 = 0o10000000;
/// x86-64's `O_LARGEFILE`, which Linux's open(2) sets on every file it
/// opens (`force_o_largefile`); libc's constant for it is 0.
pub(crate) const O_LARGEFILE: u32 = 0o100000;

/// `fcntl` commands.
pub(crate) const F_DUPFD: u32 = 0;
pub(crate) const F_GETFD: u32 = 1;
pub(crate) const F_SETFD: u32 = 2;
pub(crate) const F_GETFL: u32 = 3;
pub(crate) const F_SETFL: u32 = 4;
pub(crate) const F_GETLK: u32 = 5;
pub(crate) const F_SETLK: u32 = 6;
pub(crate) const F_SETLKW: u32 = 7;
pub(crate) const F_SETOWN: u32 = 8;
pub(crate) const F_GETOWN: u32 = 9;
/// F_SETSIG and F_GETSIG (uapi asm-generic/fcntl.h; not in the libc
/// crate).
pub(crate) const F_SETSIG: u32 = 10;
pub(crate) const F_GETSIG: u32 = 11;
/// F_SETOWN_EX and F_GETOWN_EX (uapi asm-generic/fcntl.h; not in the
/// libc crate).
pub(crate) const F_SETOWN_EX: u32 = 15;
pub(crate) const F_GETOWN_EX: u32 = 16;
/// struct f_owner_ex's kinds of owner.
pub(crate) const F_OWNER_TID: i32 = 0;
pub(crate) const F_OWNER_PID: i32 = 1;
pub(crate) const F_OWNER_PGRP: i32 = 2;
pub(crate) const F_OFD_GETLK: u32 = 36;
pub(crate) const F_OFD_SETLK: u32 = 37;
pub(crate) const F_OFD_SETLKW: u32 = 38;
/// F_NOTIFY (dnotify) and the events its argument asks for (uapi
/// linux/fcntl.h; the DN_ values are not in the libc crate).
pub(crate) const F_NOTIFY: u32 = 1026;
pub(crate) const DN_ACCESS: u32 = 0x1;
pub(crate) const DN_MODIFY: u32 = 0x2;
pub(crate) const DN_CREATE: u32 = 0x4;
pub(crate) const DN_DELETE: u32 = 0x8;
pub(crate) const DN_RENAME: u32 = 0x10;
pub(crate) const DN_ATTRIB: u32 = 0x20;
/// Keep the registration after its first event.
pub(crate) const DN_MULTISHOT: u32 = 0x8000_0000;
pub(crate) const F_DUPFD_CLOEXEC: u32 = 1030;
pub(crate) const F_SETPIPE_SZ: u32 = 1031;
pub(crate) const F_GETPIPE_SZ: u32 = 1032;
pub(crate) const F_ADD_SEALS: u32 = 1033;
pub(crate) const F_GET_SEALS: u32 = 1034;
/// The descriptor flag F_GETFD and F_SETFD carry.
pub(crate) const FD_CLOEXEC: u64 = 1;

/// `struct flock`'s `l_type`.
pub(crate) const F_RDLCK: i16 = 0;
pub(crate) const F_WRLCK: i16 = 1;
pub(crate) const F_UNLCK: i16 = 2;

/// `flock` operations.
pub(crate) const LOCK_SH: i32 = libc::LOCK_SH;
pub(crate) const LOCK_EX: i32 = libc::LOCK_EX;
pub(crate) const LOCK_NB: i32 = libc::LOCK_NB;
pub(crate) const LOCK_UN: i32 = libc::LOCK_UN;

/// `lseek`'s origins (and `struct flock`'s `l_whence`).
pub(crate) const SEEK_SET: u32 = 0;
pub(crate) const SEEK_CUR: u32 = 1;
pub(crate) const SEEK_END: u32 = 2;
pub(crate) const SEEK_DATA: u32 = 3;
pub(crate) const SEEK_HOLE: u32 = 4;

/// The working directory as an `*at` call's directory descriptor.
pub(crate) const AT_FDCWD: i32 = libc::AT_FDCWD;
/// `AT_FDCWD` as a raw system call argument (the `int` zero-extended).
pub(crate) const AT_FDCWD_ARG: u64 = 0xffff_ff9c;

pub(crate) const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
pub(crate) const AT_REMOVEDIR: u64 = 0x200;
/// `faccessat`: check with the effective ids (same value as AT_REMOVEDIR).
pub(crate) const AT_EACCESS: u64 = 0x200;
pub(crate) const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub(crate) const AT_NO_AUTOMOUNT: u64 = 0x800;
pub(crate) const AT_EMPTY_PATH: u64 = 0x1000;
/// `statx`: the mask of the sync-type bits.
pub(crate) const AT_STATX_SYNC_TYPE: u64 = 0x6000;

/// eventfd2(2)'s own flag (`linux/eventfd.h`; the others are O_CLOEXEC
/// and O_NONBLOCK).
pub(crate) const EFD_SEMAPHORE: i32 = 1;

/// memfd_create(2)'s flags (`linux/memfd.h`) and the longest name it takes
/// (NAME_MAX minus "memfd:").
pub(crate) const MFD_CLOEXEC: u32 = 0x1;
pub(crate) const MFD_ALLOW_SEALING: u32 = 0x2;
pub(crate) const MFD_NOEXEC_SEAL: u32 = 0x8;
pub(crate) const MFD_EXEC: u32 = 0x10;
pub(crate) const MFD_NAME_MAX: usize = 249;

/// close_range(2)'s flags (`linux/close_range.h`).
pub(crate) const CLOSE_RANGE_UNSHARE: u64 = 1 << 1;
pub(crate) const CLOSE_RANGE_CLOEXEC: u64 = 1 << 2;

/// renameat2(2)'s flags.
pub(crate) const RENAME_NOREPLACE: u32 = 1;
pub(crate) const RENAME_EXCHANGE: u32 = 2;
pub(crate) const RENAME_WHITEOUT: u32 = 4;

/// The most one read or write transfers (Linux's `MAX_RW_COUNT`).
pub(crate) const MAX_RW_COUNT: usize = 0x7fff_f000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_making_flags_match_linux() {
        assert_eq!(EFD_SEMAPHORE, libc::EFD_SEMAPHORE);
        assert_eq!(CLOSE_RANGE_UNSHARE, u64::from(libc::CLOSE_RANGE_UNSHARE));
        assert_eq!(CLOSE_RANGE_CLOEXEC, u64::from(libc::CLOSE_RANGE_CLOEXEC));
        // Not in libc for glibc targets: memfd.h's values.
        assert_eq!([MFD_CLOEXEC, MFD_ALLOW_SEALING, MFD_NOEXEC_SEAL, MFD_EXEC], [1, 2, 8, 16]);
        assert_eq!(MFD_NAME_MAX, 255 - "memfd:".len());
    }

    #[test]
    fn match_linux() {
        let flags = [
            (AT_SYMLINK_NOFOLLOW, libc::AT_SYMLINK_NOFOLLOW),
            (AT_REMOVEDIR, libc::AT_REMOVEDIR),
            (AT_EACCESS, libc::AT_EACCESS),
            (AT_SYMLINK_FOLLOW, libc::AT_SYMLINK_FOLLOW),
            (AT_NO_AUTOMOUNT, libc::AT_NO_AUTOMOUNT),
            (AT_EMPTY_PATH, libc::AT_EMPTY_PATH),
            (AT_STATX_SYNC_TYPE, libc::AT_STATX_SYNC_TYPE),
        ];
        for (ours, linux) in flags {
            assert_eq!(Ok(ours), u64::try_from(linux));
        }
        let status = [
            (O_ACCMODE, libc::O_ACCMODE),
            (O_RDONLY, libc::O_RDONLY),
            (O_WRONLY, libc::O_WRONLY),
            (O_RDWR, libc::O_RDWR),
            (O_APPEND, libc::O_APPEND),
            (O_NONBLOCK, libc::O_NONBLOCK),
            (O_ASYNC, libc::O_ASYNC),
            (O_PATH, libc::O_PATH),
        ];
        let commands = [
            (F_DUPFD, libc::F_DUPFD),
            (F_GETFD, libc::F_GETFD),
            (F_SETFD, libc::F_SETFD),
            (F_GETFL, libc::F_GETFL),
            (F_SETFL, libc::F_SETFL),
            (F_GETLK, libc::F_GETLK),
            (F_SETLK, libc::F_SETLK),
            (F_SETLKW, libc::F_SETLKW),
            (F_SETOWN, libc::F_SETOWN),
            (F_GETOWN, libc::F_GETOWN),
            (F_OFD_GETLK, libc::F_OFD_GETLK),
            (F_OFD_SETLK, libc::F_OFD_SETLK),
            (F_OFD_SETLKW, libc::F_OFD_SETLKW),
            (F_NOTIFY, libc::F_NOTIFY),
            (F_DUPFD_CLOEXEC, libc::F_DUPFD_CLOEXEC),
            (F_SETPIPE_SZ, libc::F_SETPIPE_SZ),
            (F_GETPIPE_SZ, libc::F_GETPIPE_SZ),
            (F_ADD_SEALS, libc::F_ADD_SEALS),
            (F_GET_SEALS, libc::F_GET_SEALS),
            (SEEK_SET, libc::SEEK_SET),
            (SEEK_CUR, libc::SEEK_CUR),
            (SEEK_END, libc::SEEK_END),
            (SEEK_DATA, libc::SEEK_DATA),
            (SEEK_HOLE, libc::SEEK_HOLE),
        ];
        for (ours, linux) in status.into_iter().chain(commands) {
            assert_eq!(Ok(ours), u32::try_from(linux));
        }
        assert_eq!(Ok(FD_CLOEXEC), u64::try_from(libc::FD_CLOEXEC));
        for (ours, linux) in [(F_RDLCK, libc::F_RDLCK), (F_WRLCK, libc::F_WRLCK), (F_UNLCK, libc::F_UNLCK)] {
            assert_eq!(Ok(ours), i16::try_from(linux));
        }
        assert_eq!(AT_FDCWD_ARG, u64::from(u32::from_ne_bytes(AT_FDCWD.to_ne_bytes())));
    }
}
