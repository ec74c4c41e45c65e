//! Futexes: wait queues keyed by an address in an address space.

use crate::abi::Errno;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Identifies a futex word: the address space (by identity) and address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FutexKey {
    pub space: usize,
    pub addr: u64,
}

impl FutexKey {
    /// The key of a futex word in shared memory, by its place in the
    /// memory file.
    pub fn shared(at: u64) -> FutexKey {
        FutexKey { space: 0, addr: at }
    }

    /// The key of the word at `addr` in `mm` (private to the address
    /// space).
    pub fn of(mm: &Arc<crate::mm::MemoryManager>, addr: u64) -> FutexKey {
        FutexKey { space: Arc::as_ptr(mm) as usize, addr }
    }
}

struct Waiter {
    /// The guest thread waiting (so it can be interrupted).
    tid: i32,
    bitset: u32,
    woken: Mutex<Wake>,
    cond: Condvar,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    Waiting,
    Woken,
    Interrupted,
}

/// The futex wait queues of a sandbox.
#[derive(Default)]
pub struct Futexes {
    queues: Mutex<HashMap<FutexKey, Vec<Arc<Waiter>>>>,
}

impl Futexes {
    /// Sleeps on `key` if `check()` (run under the queue lock, reading the
    /// futex word) says the value still matches; returns EAGAIN if not and
    /// ETIMEDOUT at `deadline`. `tid` is the waiting guest thread;
    /// `interrupt(tid)` ends the wait with EINTR.
    pub fn wait(
        &self,
        key: FutexKey,
        tid: i32,
        bitset: u32,
        deadline: Option<Instant>,
        check: impl FnOnce() -> Result<bool, Errno>,
    ) -> Result<(), Errno> {
        let w = Arc::new(Waiter { tid, bitset, woken: Mutex::new(Wake::Waiting), cond: Condvar::new() });
        {
            let mut q = self.queues.lock();
            if !check()? {
                return Err(Errno::EAGAIN);
            }
            // A signal (or exit) that came before the waiter is queued
            // found no waiter to interrupt: see it here, under the lock
            // `interrupt` takes after making it pending, or it is lost
            // and the thread sleeps on with it pending (as Linux's
            // schedule() does not sleep with a signal pending).
            if crate::waiter::interrupt_pending() {
                return Err(Errno::EINTR);
            }
            q.entry(key).or_default().push(w.clone());
        }
        let mut woken = w.woken.lock();
        let _asleep = crate::waiter::Asleep::begin();
        loop {
            match *woken {
                Wake::Woken => return Ok(()),
                Wake::Interrupted => {
                    drop(woken);
                    return self.cancel(key, &w, Errno::EINTR);
                }
                Wake::Waiting => {}
            }
            match deadline {
                Some(d) => {
                    if w.cond.wait_until(&mut woken, d).timed_out() && *woken == Wake::Waiting {
                        drop(woken);
                        return self.cancel(key, &w, Errno::ETIMEDOUT);
                    }
                }
                None => w.cond.wait(&mut woken),
            }
        }
    }

    /// Ends the futex wait of guest thread `tid`, if any, with EINTR.
    pub fn interrupt(&self, tid: i32) {
        let q = self.queues.lock();
        for w in q.values().flatten().filter(|w| w.tid == tid) {
            let mut state = w.woken.lock();
            if *state == Wake::Waiting {
                *state = Wake::Interrupted;
            }
            w.cond.notify_all();
        }
    }

    /// Removes a timed-out or interrupted waiter; if a wake raced with it,
    /// the wake wins.
    fn cancel(&self, key: FutexKey, w: &Arc<Waiter>, why: Errno) -> Result<(), Errno> {
        let mut q = self.queues.lock();
        if let Some(v) = q.get_mut(&key) {
            if let Some(i) = v.iter().position(|x| Arc::ptr_eq(x, w)) {
                v.remove(i);
                if v.is_empty() {
                    q.remove(&key);
                }
                return Err(why);
            }
        }
        Ok(())
    }

    /// Wakes up to `n` waiters on `key` whose bitset intersects `bitset`.
    pub fn wake(&self, key: FutexKey, n: usize, bitset: u32) -> usize {
        let mut q = self.queues.lock();
        Self::wake_locked(&mut q, key, n, bitset)
    }

    fn wake_locked(q: &mut HashMap<FutexKey, Vec<Arc<Waiter>>>, key: FutexKey, n: usize, bitset: u32) -> usize {
        let Some(v) = q.get_mut(&key) else { return 0 };
        let mut woken = 0;
        let mut i = 0;
        while i < v.len() && woken < n {
            if v[i].bitset & bitset != 0 {
                let w = v.remove(i);
                *w.woken.lock() = Wake::Woken;
                w.cond.notify_one();
                woken += 1;
            } else {
                i += 1;
            }
        }
        if v.is_empty() {
            q.remove(&key);
        }
        woken
    }

    /// Wakes `n` waiters of `from` and moves up to `m` more to `to`, if
    /// `check()` passes (CMP_REQUEUE); returns how many were woken or moved.
    pub fn requeue(
        &self,
        from: FutexKey,
        to: FutexKey,
        n: usize,
        m: usize,
        check: impl FnOnce() -> Result<bool, Errno>,
    ) -> Result<usize, Errno> {
        let mut q = self.queues.lock();
        if !check()? {
            return Err(Errno::EAGAIN);
        }
        let woken = Self::wake_locked(&mut q, from, n, u32::MAX);
        let mut moved = Vec::new();
        if let Some(v) = q.get_mut(&from) {
            let k = m.min(v.len());
            moved.extend(v.drain(..k));
            if v.is_empty() {
                q.remove(&from);
            }
        }
        let count = moved.len();
        if count > 0 {
            q.entry(to).or_default().extend(moved);
        }
        Ok(woken + count)
    }

    /// FUTEX_WAKE_OP: runs `op` (which updates the second word and says
    /// whether its old value passes the comparison) under the queue lock,
    /// then wakes `n` on `k1` and, if it passed, `n2` on `k2`.
    pub fn wake_op(
        &self,
        k1: FutexKey,
        k2: FutexKey,
        n: usize,
        n2: usize,
        op: impl FnOnce() -> Result<bool, Errno>,
    ) -> Result<usize, Errno> {
        let mut q = self.queues.lock();
        let pass = op()?;
        let mut woken = Self::wake_locked(&mut q, k1, n, u32::MAX);
        if pass {
            woken += Self::wake_locked(&mut q, k2, n2, u32::MAX);
        }
        Ok(woken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const K: FutexKey = FutexKey { space: 1, addr: 0x1000 };

    #[test]
    fn mismatched_value_does_not_sleep() {
        let f = Futexes::default();
        assert_eq!(f.wait(K, 1, u32::MAX, None, || Ok(false)), Err(Errno::EAGAIN));
    }

    #[test]
    fn timeout_and_wake() {
        let f = Arc::new(Futexes::default());
        let d = Instant::now() + Duration::from_millis(10);
        assert_eq!(f.wait(K, 1, u32::MAX, Some(d), || Ok(true)), Err(Errno::ETIMEDOUT));
        let f2 = f.clone();
        let h = std::thread::spawn(move || f2.wait(K, 1, u32::MAX, None, || Ok(true)));
        while f.wake(K, 1, u32::MAX) == 0 {
            std::thread::yield_now();
        }
        assert_eq!(h.join().unwrap(), Ok(()));
    }

    #[test]
    fn interrupt_ends_a_wait_with_eintr() {
        let f = Arc::new(Futexes::default());
        let f2 = f.clone();
        let h = std::thread::spawn(move || f2.wait(K, 7, u32::MAX, None, || Ok(true)));
        std::thread::sleep(Duration::from_millis(20));
        f.interrupt(8);
        f.interrupt(7);
        assert_eq!(h.join().unwrap(), Err(Errno::EINTR));
        assert_eq!(f.wake(K, 1, u32::MAX), 0, "the interrupted waiter left the queue");
    }

    #[test]
    fn a_signal_sent_before_the_waiter_is_queued_ends_the_wait() {
        use crate::kernel::thread::set_current;
        use crate::kernel::thread_group::ThreadGroup;
        let k = crate::testing::kernel(Arc::new(crate::mm::MemoryFile::new(1 << 24).unwrap()));
        let t = crate::testing::thread(&k, 1, ThreadGroup::new(1, crate::kernel::limits::defaults()));
        set_current(Some(t.clone()));
        let soon = || Some(Instant::now() + Duration::from_secs(5));
        // kill(2) of the process while its thread is between the futex
        // call's entry and its queueing: the interruption finds no waiter.
        k.signal_process(1, libc::SIGTERM);
        assert_eq!(k.futexes.wait(K, 1, u32::MAX, soon(), || Ok(true)), Err(Errno::EINTR));
        // Sent even before the call, whose entry cleared the interruption:
        // the pending signal alone ends the wait.
        t.interrupted.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(k.futexes.wait(K, 1, u32::MAX, soon(), || Ok(true)), Err(Errno::EINTR));
        assert_eq!(k.futexes.wait(K, 1, u32::MAX, soon(), || Ok(false)), Err(Errno::EAGAIN), "a changed word first");
        // A blocked signal does not end it.
        t.discard_signals(u64::MAX);
        t.sigmask.store(crate::kernel::signal::sigbit(libc::SIGTERM), std::sync::atomic::Ordering::SeqCst);
        k.signal_process(1, libc::SIGTERM);
        t.interrupted.store(false, std::sync::atomic::Ordering::SeqCst);
        let d = Instant::now() + Duration::from_millis(10);
        assert_eq!(k.futexes.wait(K, 1, u32::MAX, Some(d), || Ok(true)), Err(Errno::ETIMEDOUT));
        set_current(None);
    }

    #[test]
    fn bitsets_select_waiters() {
        let f = Arc::new(Futexes::default());
        let f2 = f.clone();
        let h = std::thread::spawn(move || f2.wait(K, 1, 0b10, None, || Ok(true)));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(f.wake(K, 10, 0b01), 0);
        assert_eq!(f.wake(K, 10, 0b10), 1);
        assert_eq!(h.join().unwrap(), Ok(()));
    }
}
