//! The Linux x86-64 ABI as the guest sees it: errnos, constants and the
//! layouts of structures copied in and out of guest memory.

pub mod arch;
pub mod errno;
pub mod fcntl;
pub mod ioctl;
pub mod ipc;
pub mod layout;
pub mod limits;
pub mod netdevice;
pub mod poll;
pub mod sched;
pub mod seccomp;
pub mod signal;
pub mod sockaddr;
pub mod socket;
pub mod stat;
pub mod time;
pub mod uio;
pub mod xattr;

pub use errno::{Errno, SysResult};

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
