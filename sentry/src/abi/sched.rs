//! clone(2) and clone3(2) flags and `struct clone_args`' sizes (Linux's
//! `include/uapi/linux/sched.h`). Flags are compared against the raw
//! 64-bit argument, so they are `u64`.

pub(crate) const CLONE_VM: u64 = 0x100;
pub(crate) const CLONE_FS: u64 = 0x200;
pub(crate) const CLONE_FILES: u64 = 0x400;
pub(crate) const CLONE_SIGHAND: u64 = 0x800;
pub(crate) const CLONE_PIDFD: u64 = 0x1000;
pub(crate) const CLONE_VFORK: u64 = 0x4000;
pub(crate) const CLONE_PARENT: u64 = 0x8000;
pub(crate) const CLONE_THREAD: u64 = 0x10000;
pub(crate) const CLONE_NEWNS: u64 = 0x20000;
pub(crate) const CLONE_SYSVSEM: u64 = 0x40000;
pub(crate) const CLONE_SETTLS: u64 = 0x80000;
pub(crate) const CLONE_PARENT_SETTID: u64 = 0x100000;
pub(crate) const CLONE_CHILD_CLEARTID: u64 = 0x200000;
pub(crate) const CLONE_DETACHED: u64 = 0x400000;
pub(crate) const CLONE_CHILD_SETTID: u64 = 0x1000000;
/// clone3 only (beyond the 32 bits clone's flags have).
pub(crate) const CLONE_CLEAR_SIGHAND: u64 = 0x1_0000_0000;
pub(crate) const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args`' sizes: the first version's and this kernel's
/// (version 2, with `cgroup`).
pub(crate) const CLONE_ARGS_SIZE_VER0: u64 = 64;
pub(crate) const CLONE_ARGS_SIZE: usize = 88;

/// The exit signal fork(2) and vfork(2) give a child, in clone's flags.
pub(crate) const SIGCHLD_FLAG: u64 = 17;

/// The namespace flags clone(2), unshare(2) and setns(2) take.
pub(crate) const CLONE_NEWCGROUP: u64 = 0x0200_0000;
pub(crate) const CLONE_NEWUTS: u64 = 0x0400_0000;
pub(crate) const CLONE_NEWIPC: u64 = 0x0800_0000;
pub(crate) const CLONE_NEWUSER: u64 = 0x1000_0000;
pub(crate) const CLONE_NEWPID: u64 = 0x2000_0000;
pub(crate) const CLONE_NEWNET: u64 = 0x4000_0000;

/// Scheduling policies (sched_setscheduler(2)), and the flag that may be
/// or-ed into one.
pub(crate) const SCHED_OTHER: i32 = 0;
pub(crate) const SCHED_FIFO: i32 = 1;
pub(crate) const SCHED_RR: i32 = 2;
pub(crate) const SCHED_BATCH: i32 = 3;
pub(crate) const SCHED_IDLE: i32 = 5;
pub(crate) const SCHED_DEADLINE: i32 = 6;
pub(crate) const SCHED_RESET_ON_FORK: i32 = 0x4000_0000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_linux() {
        let flag = |f: i32| u64::from(f.cast_unsigned());
        let pairs = [
            (CLONE_VM, flag(libc::CLONE_VM)),
            (CLONE_FS, flag(libc::CLONE_FS)),
            (CLONE_FILES, flag(libc::CLONE_FILES)),
            (CLONE_SIGHAND, flag(libc::CLONE_SIGHAND)),
            (CLONE_PIDFD, flag(libc::CLONE_PIDFD)),
            (CLONE_VFORK, flag(libc::CLONE_VFORK)),
            (CLONE_PARENT, flag(libc::CLONE_PARENT)),
            (CLONE_THREAD, flag(libc::CLONE_THREAD)),
            (CLONE_NEWNS, flag(libc::CLONE_NEWNS)),
            (CLONE_SYSVSEM, flag(libc::CLONE_SYSVSEM)),
            (CLONE_SETTLS, flag(libc::CLONE_SETTLS)),
            (CLONE_PARENT_SETTID, flag(libc::CLONE_PARENT_SETTID)),
            (CLONE_CHILD_CLEARTID, flag(libc::CLONE_CHILD_CLEARTID)),
            (CLONE_DETACHED, flag(libc::CLONE_DETACHED)),
            (CLONE_CHILD_SETTID, flag(libc::CLONE_CHILD_SETTID)),
        ];
        for (ours, linux) in pairs {
            assert_eq!(ours, linux);
        }
        // clone3's (not in libc for glibc targets): sched.h's values.
        assert_eq!((CLONE_CLEAR_SIGHAND, CLONE_INTO_CGROUP), (1 << 32, 1 << 33));
        // Eight u64 fields, then set_tid_size and cgroup.
        assert_eq!((CLONE_ARGS_SIZE_VER0, CLONE_ARGS_SIZE), (8 * 8, 11 * 8));
        assert_eq!(Ok(SIGCHLD_FLAG), u64::try_from(libc::SIGCHLD));
    }
}
