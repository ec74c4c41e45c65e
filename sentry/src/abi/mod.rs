//! The Linux x86-64 ABI as the guest sees it: errnos, constants and the
//! layouts of structures copied in and out of guest memory.

pub(crate) mod arch;
pub(crate) mod errno;
pub(crate) mod fcntl;
pub(crate) mod ioctl;
pub(crate) mod ipc;
pub(crate) mod layout;
pub(crate) mod limits;
pub(crate) mod netdevice;
pub(crate) mod poll;
pub(crate) mod sched;
pub(crate) mod seccomp;
pub(crate) mod signal;
pub(crate) mod sockaddr;
pub(crate) mod socket;
pub(crate) mod stat;
pub(crate) mod time;
pub(crate) mod uio;
pub(crate) mod xattr;

pub(crate) use errno::{Errno, SysResult};

/// The guest's page size.
pub const PAGE_SIZE: u64 = 4096;
/// Linux's `TASK_SIZE_MAX` with 4-level page tables: the end of x86-64
/// user space (the limit of an fs/gs base).
pub const TASK_SIZE_MAX: u64 = 0x7fff_ffff_f000;

/// Rounds `v` down to a page boundary.
pub const fn page_down(v: u64) -> u64 {
    v & !(PAGE_SIZE - 1)
}

/// Rounds `v` up to a page boundary, or `None` if that overflows.
pub const fn page_up(v: u64) -> Option<u64> {
    match v.checked_add(PAGE_SIZE - 1) {
        Some(x) => Some(x & !(PAGE_SIZE - 1)),
        None => None,
    }
}
