//! The sandbox's disk budget (`--disk-limit`): one count of the bytes that
//! the overlay's upper layer and every tmpfs the guest writes to (/tmp,
//! /dev/shm, a container's tmpfs mounts) hold together, so that no mix of
//! them passes the limit.
//!
//! It is a second counter beside the memory charge, not a part of it:
//! those bytes live in sentry memory and stay charged to `--memory-mb`
//! too, and a write must pass both. What the budget refuses fails with
//! ENOSPC, as a full disk does; the sandbox runs on, and what is freed
//! (an unlink whose last reference goes, a truncate) can be written again.
//!
//! The first refusal of a breach episode is reported (the boot turns it
//! into a `limit.disk` audit record); the episode ends once usage falls
//! back below [`RELIEF`] of the limit, so a guest hammering a full disk
//! makes one record, not one per write.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The share of the limit (in eighths) usage must fall below to end a
/// breach episode.
const RELIEF: u64 = 7;

/// What a refusal reports: the limit and the usage, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Breach {
    pub limit: u64,
    pub usage: u64,
}

type OnBreach = Box<dyn Fn(Breach) + Send + Sync>;

/// A bounded count of bytes held by the sandbox's writable filesystems.
pub(crate) struct DiskBudget {
    limit: u64,
    charged: AtomicU64,
    /// Inside a breach episode (reported already).
    breached: AtomicBool,
    on_breach: OnceLock<OnBreach>,
    /// The budget this one is a part of (a guest's `tmpfs -o size=`
    /// within the sandbox's): a charge must pass both.
    within: Option<Arc<DiskBudget>>,
}

/// The sandbox's disk budget, if it has one, for the tmpfs mounts the
/// guest makes (set at boot).
#[derive(Default)]
pub(crate) struct SandboxDisk(pub OnceLock<Arc<DiskBudget>>);

impl DiskBudget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Arc<DiskBudget> {
        DiskBudget::within(limit, None)
    }

    /// A budget of `limit` bytes that are charged to `outer` as well.
    pub(crate) fn within(limit: u64, outer: Option<Arc<DiskBudget>>) -> Arc<DiskBudget> {
        Arc::new(DiskBudget {
            limit,
            charged: AtomicU64::new(0),
            breached: AtomicBool::new(false),
            on_breach: OnceLock::new(),
            within: outer,
        })
    }

    /// Calls `f` at the first refusal of each breach episode; the first
    /// call wins.
    pub(crate) fn set_on_breach(&self, f: OnBreach) {
        let _ = self.on_breach.set(f);
    }

    /// The limit, in bytes.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held now.
    pub(crate) fn usage(&self) -> u64 {
        self.charged.load(Ordering::Acquire)
    }

    /// Bytes that can still be charged.
    pub(crate) fn available(&self) -> u64 {
        self.limit.saturating_sub(self.usage())
    }

    /// Charges `bytes`; false (nothing charged, the breach reported if it
    /// starts an episode) when that would pass the limit.
    fn try_charge(&self, bytes: u64) -> bool {
        let r = self
            .charged
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| c.checked_add(bytes).filter(|&n| n <= self.limit));
        match r {
            Ok(_) => match &self.within {
                Some(outer) if !outer.try_charge(bytes) => {
                    self.charged.fetch_sub(bytes, Ordering::AcqRel);
                    false
                }
                _ => true,
            },
            Err(usage) => {
                if !self.breached.swap(true, Ordering::AcqRel) {
                    if let Some(f) = self.on_breach.get() {
                        f(Breach { limit: self.limit, usage });
                    }
                }
                false
            }
        }
    }

    /// Returns `bytes` charged before; ends a breach episode once usage
    /// is well below the limit again.
    fn uncharge(&self, bytes: u64) {
        let r = self.charged.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| Some(c.saturating_sub(bytes)));
        let now = r.map_or(0, |c| c.saturating_sub(bytes));
        if let Some(outer) = &self.within {
            outer.uncharge(bytes);
        }
        if now < self.limit / 8 * RELIEF {
            self.breached.store(false, Ordering::Release);
        }
    }
}

/// Bytes charged to a disk budget (if the filesystem has one), returned
/// when this is dropped.
pub(crate) struct DiskCharge {
    budget: Option<Arc<DiskBudget>>,
    bytes: u64,
}

impl DiskCharge {
    /// No bytes yet, against `budget` (none: nothing is counted).
    pub(crate) fn new(budget: Option<Arc<DiskBudget>>) -> DiskCharge {
        DiskCharge { budget, bytes: 0 }
    }

    /// Adds `bytes`; false past the limit (nothing added).
    pub(crate) fn grow(&mut self, bytes: u64) -> bool {
        let Some(b) = &self.budget else { return true };
        if bytes == 0 || b.try_charge(bytes) {
            self.bytes += bytes;
            return true;
        }
        false
    }

    /// Returns `bytes` (at most what is held).
    pub(crate) fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        if let (Some(b), true) = (&self.budget, bytes > 0) {
            self.bytes -= bytes;
            b.uncharge(bytes);
        }
    }
}

impl Drop for DiskCharge {
    fn drop(&mut self) {
        let all = self.bytes;
        self.shrink(all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;

    fn recorder(b: &DiskBudget) -> Arc<Mutex<Vec<Breach>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        b.set_on_breach(Box::new(move |x| s.lock().push(x)));
        seen
    }

    #[test]
    fn charges_are_shared_and_bounded() {
        let b = DiskBudget::new(100);
        let (mut x, mut y) = (DiskCharge::new(Some(b.clone())), DiskCharge::new(Some(b.clone())));
        assert!(x.grow(60));
        assert!(!y.grow(41), "the two together may not pass the limit");
        assert!(y.grow(40));
        assert_eq!((b.usage(), b.available()), (100, 0));
        assert!(!x.grow(u64::MAX), "an overflowing charge is refused");
        x.shrink(1000);
        assert_eq!(b.usage(), 40, "a shrink returns at most what is held");
        drop(y);
        assert_eq!(b.usage(), 0, "a dropped charge returns its bytes");
    }

    #[test]
    fn a_budget_within_another_passes_both_limits() {
        let outer = DiskBudget::new(100);
        let inner = DiskBudget::within(50, Some(outer.clone()));
        let mut other = DiskCharge::new(Some(outer.clone()));
        let mut c = DiskCharge::new(Some(inner.clone()));
        assert!(!c.grow(51), "the inner limit");
        assert!(c.grow(50));
        assert_eq!((inner.usage(), outer.usage()), (50, 50), "charged to both");
        assert!(!other.grow(51), "the outer limit counts the inner's bytes");
        c.shrink(20);
        assert_eq!((inner.usage(), outer.usage()), (30, 30));
        assert!(other.grow(70));
        assert!(!c.grow(1), "the outer budget is full");
        assert_eq!(inner.usage(), 30, "a refusal by the outer budget leaves the inner as it was");
    }

    #[test]
    fn no_budget_counts_nothing() {
        let mut c = DiskCharge::new(None);
        assert!(c.grow(u64::MAX));
        c.shrink(5);
    }

    #[test]
    fn one_report_per_breach_episode() {
        let b = DiskBudget::new(800);
        let seen = recorder(&b);
        let mut c = DiskCharge::new(Some(b.clone()));
        assert!(c.grow(790));
        assert!(!c.grow(20));
        assert!(!c.grow(20));
        assert_eq!(*seen.lock(), [Breach { limit: 800, usage: 790 }], "reported once");
        c.shrink(50);
        assert!(!c.grow(200));
        assert_eq!(seen.lock().len(), 1, "740 of 800 is no relief yet");
        c.shrink(100);
        assert!(!c.grow(300));
        assert_eq!(seen.lock().len(), 2, "below seven eighths a new episode begins");
        assert_eq!(seen.lock()[1], Breach { limit: 800, usage: 640 });
    }

    #[test]
    fn concurrent_charges_never_pass_the_limit() {
        let b = DiskBudget::new(1000);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let mut c = DiskCharge::new(Some(b));
                    let n = (0..1000).filter(|_| c.grow(1)).count();
                    std::mem::forget(c);
                    n
                })
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!((total, b.usage()), (1000, 1000));
    }
}
