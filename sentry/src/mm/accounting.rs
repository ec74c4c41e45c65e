//! The sandbox's memory charge: one counter that every holder of sandbox
//! memory charges and uncharges — guest pages of the MemoryFile, the pages
//! of memory-backed files (tmpfs, the overlay's upper layer, /dev/shm,
//! memfds), and the bytes queued in pipes and sockets — so that their sum
//! is bounded by the sandbox's memory limit (`--memory-mb`).
//!
//! File data and buffers ([`Charge`]) may not take the last sixteenth of
//! the limit: that stays for anonymous memory, so a process filling /tmp
//! sees ENOSPC and can still run to handle it, instead of being OOM-killed
//! at its next page fault.
//!
//! A charge is one atomic compare-and-swap, never a lock. What fails to
//! charge fails the way Linux fails when the memory cgroup is full: a file
//! write with ENOSPC, a pipe write with ENOMEM, an anonymous page fault
//! with the OOM kill (the MemoryFile's callers decide).
//!
//! One sentry process serves one sandbox, so the accountant the boot
//! installs ([`install`]) is the one that objects made without a kernel at
//! hand (pipes, socket buffers, filesystems) charge; before that (unit
//! tests) each gets an unlimited accountant of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A bounded count of bytes held.
#[derive(Debug)]
pub struct Accountant {
    limit: u64,
    charged: AtomicU64,
}

impl Accountant {
    /// An accountant that lets at most `limit` bytes be charged.
    pub fn new(limit: u64) -> Arc<Accountant> {
        Arc::new(Accountant { limit, charged: AtomicU64::new(0) })
    }

    /// An accountant without a limit (it still counts).
    pub fn unlimited() -> Arc<Accountant> {
        Accountant::new(u64::MAX)
    }

    /// Charges `bytes`; false (and nothing charged) when that would pass
    /// the limit.
    pub fn try_charge(&self, bytes: u64) -> bool {
        self.charge_up_to(bytes, self.limit)
    }

    /// Charges `bytes` of file data or buffers: false when that would pass
    /// the limit less the reserve kept for anonymous memory.
    pub fn try_charge_data(&self, bytes: u64) -> bool {
        self.charge_up_to(bytes, self.data_limit())
    }

    /// What file data and buffers may take together with everything else.
    pub fn data_limit(&self) -> u64 {
        if self.is_limited() {
            self.limit - self.limit / 16
        } else {
            self.limit
        }
    }

    fn charge_up_to(&self, bytes: u64, limit: u64) -> bool {
        self.charged
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_add(bytes).filter(|&n| n <= limit))
            .is_ok()
    }

    /// Returns `bytes` charged before.
    pub fn uncharge(&self, bytes: u64) {
        let r = self.charged.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| Some(c.saturating_sub(bytes)));
        if let Ok(c) = r {
            if c < bytes {
                log::warn!("memory accounting: uncharged {bytes} bytes with only {c} charged");
            }
        }
    }

    /// Bytes charged now.
    pub fn charged(&self) -> u64 {
        self.charged.load(Ordering::Acquire)
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes of file data or buffers that can still be charged.
    pub fn data_available(&self) -> u64 {
        self.data_limit().saturating_sub(self.charged())
    }

    /// Whether this accountant has a limit at all.
    pub fn is_limited(&self) -> bool {
        self.limit != u64::MAX
    }
}

static SANDBOX: OnceLock<Arc<Accountant>> = OnceLock::new();

/// Makes `a` the sandbox's accountant (the boot does this once, with the
/// MemoryFile's); later calls change nothing and return false.
pub(crate) fn install(a: Arc<Accountant>) -> bool {
    SANDBOX.set(a).is_ok()
}

/// The sandbox's accountant, or a new unlimited one before [`install`].
pub(crate) fn sandbox() -> Arc<Accountant> {
    SANDBOX.get().cloned().unwrap_or_else(Accountant::unlimited)
}

/// Bytes charged to an accountant, returned when this is dropped.
#[derive(Debug)]
pub(crate) struct Charge {
    acct: Arc<Accountant>,
    bytes: u64,
}

impl Charge {
    /// No bytes yet, against `acct`.
    pub(crate) fn new(acct: Arc<Accountant>) -> Charge {
        Charge { acct, bytes: 0 }
    }

    /// Adds `bytes`; false past the limit (nothing added).
    pub(crate) fn grow(&mut self, bytes: u64) -> bool {
        if bytes == 0 {
            return true;
        }
        let ok = self.acct.try_charge_data(bytes);
        if ok {
            self.bytes += bytes;
        }
        ok
    }

    /// Returns `bytes` (at most what is held).
    pub(crate) fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        if bytes > 0 {
            self.bytes -= bytes;
            self.acct.uncharge(bytes);
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.acct.uncharge(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_up_to_the_limit_and_no_further() {
        let a = Accountant::new(100);
        assert!(a.try_charge(60));
        assert!(!a.try_charge(41), "61..101 would pass the limit");
        assert_eq!(a.charged(), 60, "a refused charge leaves nothing behind");
        assert!(a.try_charge(40));
        assert!(!a.try_charge(1));
        a.uncharge(50);
        assert_eq!(a.charged(), 50);
        assert!(!a.try_charge(u64::MAX), "an overflowing charge is refused");
    }

    #[test]
    fn a_charge_returns_its_bytes_when_dropped() {
        let a = Accountant::new(160);
        let mut c = Charge::new(a.clone());
        assert!(c.grow(140));
        assert!(!c.grow(11), "data may not take the last sixteenth");
        assert!(a.try_charge(20), "anonymous memory may");
        assert_eq!(a.data_available(), 0);
        a.uncharge(20);
        c.shrink(1000);
        assert_eq!((c.bytes(), a.charged()), (0, 0));
        assert!(c.grow(150));
        drop(c);
        assert_eq!(a.charged(), 0);
    }

    #[test]
    fn concurrent_charges_never_pass_the_limit() {
        let a = Accountant::new(1000);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || (0..1000).filter(|_| a.try_charge(1)).count())
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 1000);
        assert_eq!(a.charged(), 1000);
    }
}
