//! The `*at` calls' flags and directory argument (Linux's
//! `include/uapi/linux/fcntl.h`). Flags are compared against raw 64-bit
//! argument registers, so they are `u64`; open flags are `libc`'s `O_*`.

/// The open-file status flags as an open file description keeps them
/// (`u32`); the `int` forms that system call arguments carry are `libc`'s.
pub const O_WRONLY: u32 = 0o1;
pub const O_RDWR: u32 = 0o2;
pub const O_NONBLOCK: u32 = 0o4000;

/// The working directory as an `*at` call's directory descriptor.
pub const AT_FDCWD: i32 = libc::AT_FDCWD;
/// `AT_FDCWD` as a raw system call argument (the `int` zero-extended).
pub const AT_FDCWD_ARG: u64 = 0xffff_ff9c;

pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
pub const AT_REMOVEDIR: u64 = 0x200;
/// `faccessat`: check with the effective ids (same value as AT_REMOVEDIR).
pub const AT_EACCESS: u64 = 0x200;
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub const AT_NO_AUTOMOUNT: u64 = 0x800;
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// `statx`: the mask of the sync-type bits.
pub const AT_STATX_SYNC_TYPE: u64 = 0x6000;

#[cfg(test)]
mod tests {
    use super::*;

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
        for (ours, linux) in [(O_WRONLY, libc::O_WRONLY), (O_RDWR, libc::O_RDWR), (O_NONBLOCK, libc::O_NONBLOCK)] {
            assert_eq!(Ok(ours), u32::try_from(linux));
        }
        assert_eq!(AT_FDCWD_ARG, u64::from(u32::from_ne_bytes(AT_FDCWD.to_ne_bytes())));
    }
}
