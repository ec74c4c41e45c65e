//! seccomp(2) as the guest uses it (`<linux/seccomp.h>`): modes,
//! operations, filter flags and filter verdicts. Names drop Linux's
//! `SECCOMP_` prefix (`RET_ALLOW` is `SECCOMP_RET_ALLOW`).

/// The modes prctl(PR_GET_SECCOMP) reports.
pub const MODE_DISABLED: u8 = 0;
pub const MODE_STRICT: u8 = 1;
pub const MODE_FILTER: u8 = 2;

/// seccomp(2) operations.
pub const SET_MODE_STRICT: u32 = 0;
pub const SET_MODE_FILTER: u32 = 1;
pub const GET_ACTION_AVAIL: u32 = 2;
pub const GET_NOTIF_SIZES: u32 = 3;

/// `SECCOMP_FILTER_FLAG_*`.
pub const FLAG_TSYNC: u32 = 1;
pub const FLAG_LOG: u32 = 2;
pub const FLAG_SPEC_ALLOW: u32 = 4;
pub const FLAG_NEW_LISTENER: u32 = 8;
pub const FLAG_TSYNC_ESRCH: u32 = 16;
pub const FLAG_WAIT_KILLABLE_RECV: u32 = 32;

/// Filter verdicts (`SECCOMP_RET_*`).
pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
pub const RET_KILL_THREAD: u32 = 0;
pub const RET_TRAP: u32 = 0x0003_0000;
pub const RET_ERRNO: u32 = 0x0005_0000;
pub const RET_USER_NOTIF: u32 = 0x7fc0_0000;
pub const RET_TRACE: u32 = 0x7ff0_0000;
pub const RET_LOG: u32 = 0x7ffc_0000;
pub const RET_ALLOW: u32 = 0x7fff_0000;
/// `SECCOMP_RET_ACTION_FULL`: the action part of a verdict.
pub const RET_ACTION: u32 = 0xffff_0000;
/// `SECCOMP_RET_DATA`.
pub const RET_DATA: u32 = 0x0000_ffff;
/// `AUDIT_ARCH_X86_64`, the only architecture a guest's calls have.
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // libc constants that fit
mod tests {
    use super::*;

    #[test]
    fn constants_match_linux() {
        let modes = [
            (MODE_DISABLED, libc::SECCOMP_MODE_DISABLED),
            (MODE_STRICT, libc::SECCOMP_MODE_STRICT),
            (MODE_FILTER, libc::SECCOMP_MODE_FILTER),
        ];
        for (ours, linux) in modes {
            assert_eq!(u32::from(ours), linux);
        }
        let values = [
            (SET_MODE_STRICT, libc::SECCOMP_SET_MODE_STRICT),
            (SET_MODE_FILTER, libc::SECCOMP_SET_MODE_FILTER),
            (GET_ACTION_AVAIL, libc::SECCOMP_GET_ACTION_AVAIL),
            (GET_NOTIF_SIZES, libc::SECCOMP_GET_NOTIF_SIZES),
            (RET_KILL_PROCESS, libc::SECCOMP_RET_KILL_PROCESS),
            (RET_KILL_THREAD, libc::SECCOMP_RET_KILL_THREAD),
            (RET_TRAP, libc::SECCOMP_RET_TRAP),
            (RET_ERRNO, libc::SECCOMP_RET_ERRNO),
            (RET_USER_NOTIF, libc::SECCOMP_RET_USER_NOTIF),
            (RET_TRACE, libc::SECCOMP_RET_TRACE),
            (RET_LOG, libc::SECCOMP_RET_LOG),
            (RET_ALLOW, libc::SECCOMP_RET_ALLOW),
            (RET_ACTION, libc::SECCOMP_RET_ACTION_FULL),
            (RET_DATA, libc::SECCOMP_RET_DATA),
        ];
        for (ours, linux) in values {
            assert_eq!(ours, linux);
        }
        let flags = [
            (FLAG_TSYNC, libc::SECCOMP_FILTER_FLAG_TSYNC),
            (FLAG_LOG, libc::SECCOMP_FILTER_FLAG_LOG),
            (FLAG_SPEC_ALLOW, libc::SECCOMP_FILTER_FLAG_SPEC_ALLOW),
            (FLAG_NEW_LISTENER, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER),
            (FLAG_TSYNC_ESRCH, libc::SECCOMP_FILTER_FLAG_TSYNC_ESRCH),
            (FLAG_WAIT_KILLABLE_RECV, libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV),
        ];
        for (ours, linux) in flags {
            assert_eq!(u64::from(ours), linux);
        }
    }
}
