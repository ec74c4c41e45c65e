//! A set of pending signals with what each carries: a thread's own
//! (signals sent to that thread) and a process's shared one (signals sent
//! to the process, which any of its threads may take), as Linux's
//! `task->pending` and `signal->shared_pending`.

use super::siginfo::SigInfo;
use super::signal::sigbit;
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

// From the first real-time signal (SIGRTMIN) on, signals queue.
use crate::abi::signal::SIGRTMIN;
/// The most signal instances queued on one queue (Linux's default
/// RLIMIT_SIGPENDING is of this order).
const MAX_QUEUED: usize = 1024;

#[derive(Default)]
pub struct SigQueue {
    /// One bit per pending signal (bit `n - 1` for signal `n`); changed
    /// only with `info` held, read without it.
    bits: AtomicU64,
    /// What each pending signal carries: one siginfo for a standard
    /// signal, a queue for a real-time one.
    info: Mutex<BTreeMap<i32, VecDeque<SigInfo>>>,
}

impl SigQueue {
    /// The pending signals as a set.
    pub fn bits(&self) -> u64 {
        self.bits.load(Ordering::SeqCst)
    }

    /// Makes the signal `info` describes pending. A standard signal
    /// already pending stays as it was; a real-time one queues another
    /// instance, up to `MAX_QUEUED` (then it is dropped, as Linux drops
    /// past RLIMIT_SIGPENDING).
    pub fn queue(&self, info: SigInfo) {
        let sig = info.signo();
        let bit = sigbit(sig);
        let mut q = self.info.lock();
        if self.bits() & bit == 0 {
            q.insert(sig, VecDeque::from([info]));
            self.bits.fetch_or(bit, Ordering::SeqCst);
        } else if sig >= SIGRTMIN && q.values().map(VecDeque::len).sum::<usize>() < MAX_QUEUED {
            q.entry(sig).or_default().push_back(info);
        }
    }

    /// Takes one pending instance of `sig`: its siginfo, if it was
    /// pending.
    pub fn take(&self, sig: i32) -> Option<SigInfo> {
        let bit = sigbit(sig);
        let mut q = self.info.lock();
        if self.bits() & bit == 0 {
            return None;
        }
        let queue = q.entry(sig).or_default();
        let info = queue.pop_front().unwrap_or_else(|| SigInfo::kernel(sig));
        if queue.is_empty() {
            q.remove(&sig);
            self.bits.fetch_and(!bit, Ordering::SeqCst);
        }
        Some(info)
    }

    /// Takes the lowest pending signal of `set`.
    pub fn take_any(&self, set: u64) -> Option<SigInfo> {
        let pending = self.bits() & set;
        if pending == 0 {
            return None;
        }
        let sig = i32::try_from(pending.trailing_zeros() + 1).ok()?;
        self.take(sig)
    }

    /// Whether a signal `sig` from POSIX timer `id` waits in the queue.
    pub fn timer_signal_queued(&self, sig: i32, id: i32) -> bool {
        self.info.lock().get(&sig).is_some_and(|q| q.iter().any(|i| i.timer_id() == Some(id)))
    }

    /// Discards every pending instance of the signals in `set`.
    pub fn discard(&self, set: u64) {
        let mut q = self.info.lock();
        q.retain(|&sig, _| sigbit(sig) & set == 0);
        self.bits.fetch_and(!set, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_signals_do_not_queue_real_time_ones_do() {
        let q = SigQueue::default();
        q.queue(SigInfo::kernel(libc::SIGUSR1));
        q.queue(SigInfo::kernel(libc::SIGUSR1));
        q.queue(SigInfo::kernel(40));
        q.queue(SigInfo::kernel(40));
        assert_eq!(q.bits(), sigbit(libc::SIGUSR1) | sigbit(40));
        assert_eq!(q.take_any(u64::MAX).map(|i| i.signo()), Some(libc::SIGUSR1));
        assert!(q.take(libc::SIGUSR1).is_none());
        assert_eq!(q.take(40).map(|i| i.signo()), Some(40));
        assert_eq!(q.bits(), sigbit(40));
        q.discard(sigbit(40));
        assert_eq!(q.bits(), 0);
        assert!(q.take_any(u64::MAX).is_none());
    }
}
