//! Namespace identities: the inode numbers `/proc/PID/ns/*` links show
//! ("mnt:[4026531841]") and `stat` reports for them. The sandbox's first
//! namespaces have the numbers Linux gives the initial ones; a namespace
//! made later (`unshare`, `clone`) takes the next free number, as Linux's
//! `proc_alloc_inum` hands them out past the initial ones.

use std::sync::atomic::{AtomicU64, Ordering};

/// `PROC_IPC_INIT_INO` and the other initial namespaces' numbers.
pub const IPC_INIT_INO: u64 = 0xEFFF_FFFF;
pub const UTS_INIT_INO: u64 = 0xEFFF_FFFE;
pub const USER_INIT_INO: u64 = 0xEFFF_FFFD;
pub const PID_INIT_INO: u64 = 0xEFFF_FFFC;
pub const CGROUP_INIT_INO: u64 = 0xEFFF_FFFB;
pub const TIME_INIT_INO: u64 = 0xEFFF_FFFA;
/// The initial network and mount namespaces: the first two numbers
/// Linux allocates at boot.
pub const NET_INIT_INO: u64 = 0xF000_0000;
pub const MNT_INIT_INO: u64 = 0xF000_0001;

/// A number for a new namespace.
pub fn alloc() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0xF000_0100);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
