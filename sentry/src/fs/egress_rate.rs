//! `--egress-rate`: the bytes a sandbox's carried connections may move
//! each second, each direction on its own, as two token buckets shared
//! by all of them. A connection that finds its bucket empty fails its
//! attempt with EAGAIN and reads as not ready; an alarm (the sandbox's
//! alarm thread) wakes its waiters when the bucket has refilled enough,
//! so nobody polls and a blocked guest thread sleeps on its queue.

use crate::waiter::{alarm, Notify, Queue, ALL};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

const NANOS: u128 = 1_000_000_000;

/// A token bucket: `rate` bytes a second, holding at most `burst`.
pub(crate) struct Bucket {
    rate: u64,
    burst: i64,
    /// Bytes a connection waits for before it is called ready: a quarter
    /// of the burst, so a paced stream moves in chunks, not a byte a wake.
    low: i64,
    /// Tokens now (negative after a datagram larger than what was left),
    /// and when they were last counted.
    state: Mutex<(i64, Instant)>,
}

impl Bucket {
    /// A full bucket: a tenth of a second's worth (at least 16 KiB, so a
    /// 1K rate still takes a full-sized datagram's burst).
    pub(crate) fn new(rate: u64, now: Instant) -> Bucket {
        let burst = i64::try_from((rate / 10).max(16 * 1024)).unwrap_or(i64::MAX);
        Bucket { rate: rate.max(1), burst, low: (burst / 4).max(1), state: Mutex::new((burst, now)) }
    }

    /// Adds what has dripped in since the last count.
    fn refill(&self, s: &mut (i64, Instant), now: Instant) {
        let elapsed = now.saturating_duration_since(s.1).as_nanos();
        let add = elapsed.saturating_mul(u128::from(self.rate)) / NANOS;
        let add = i64::try_from(add).unwrap_or(i64::MAX);
        if add == 0 {
            return;
        }
        if s.0.saturating_add(add) >= self.burst {
            *s = (self.burst, now);
        } else {
            s.0 += add;
            // Only the time those whole bytes took: the fraction of the
            // next one is kept.
            let spent = u128::try_from(add).unwrap_or(0) * NANOS / u128::from(self.rate);
            s.1 += Duration::from_nanos(u64::try_from(spent).unwrap_or(u64::MAX));
        }
    }

    /// How many bytes a connection needs before an attempt of `want`
    /// bytes goes ahead.
    fn needed(&self, want: usize) -> i64 {
        i64::try_from(want).unwrap_or(i64::MAX).clamp(1, self.low)
    }

    /// When the bucket will hold `need` bytes, from its state `s`.
    fn when(&self, s: &(i64, Instant), need: i64) -> Instant {
        let short = u128::try_from(need.saturating_sub(s.0)).unwrap_or(0);
        let nanos = (short * NANOS).div_ceil(u128::from(self.rate));
        s.1 + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Takes up to `want` bytes (all of them with `whole`, which may
    /// leave the bucket in debt: a datagram is not cut): the bytes
    /// granted, or when to try again.
    pub(crate) fn take(&self, want: usize, whole: bool, now: Instant) -> Result<usize, Instant> {
        let mut s = self.state.lock();
        self.refill(&mut s, now);
        let need = self.needed(want);
        if s.0 < need {
            return Err(self.when(&s, need));
        }
        let have = usize::try_from(s.0).unwrap_or(usize::MAX);
        let granted = if whole { want } else { want.min(have) };
        s.0 = s.0.saturating_sub(i64::try_from(granted).unwrap_or(i64::MAX));
        Ok(granted)
    }

    /// Whether an attempt of any size would go ahead now; if not, when.
    pub(crate) fn ready(&self, now: Instant) -> Result<(), Instant> {
        let mut s = self.state.lock();
        self.refill(&mut s, now);
        if s.0 >= self.low {
            Ok(())
        } else {
            Err(self.when(&s, self.low))
        }
    }

    /// Returns granted bytes that were not moved.
    pub(crate) fn refund(&self, n: usize) {
        let mut s = self.state.lock();
        s.0 = s.0.saturating_add(i64::try_from(n).unwrap_or(i64::MAX)).min(self.burst);
    }

    /// Charges bytes moved without a grant first (a datagram received).
    pub(crate) fn charge(&self, n: usize) {
        let mut s = self.state.lock();
        s.0 = s.0.saturating_sub(i64::try_from(n).unwrap_or(i64::MAX));
    }
}

/// The sandbox's two buckets.
pub(crate) struct Rate {
    /// Bytes out of the sandbox.
    pub up: Bucket,
    /// Bytes into it.
    pub down: Bucket,
}

impl Rate {
    pub(crate) fn new(bytes_per_second: u64) -> Arc<Rate> {
        let now = Instant::now();
        Arc::new(Rate { up: Bucket::new(bytes_per_second, now), down: Bucket::new(bytes_per_second, now) })
    }
}

/// One connection's side of the rate: the buckets, and the alarm that
/// wakes its queue when a bucket it found empty has refilled.
pub(crate) struct Shaper {
    pub rate: Arc<Rate>,
    wake: Arc<Wake>,
}

/// Notifies a connection's queue; remembers the earliest alarm set, so a
/// connection holds one alarm at a time however often it is retried.
struct Wake {
    queue: Weak<Queue>,
    armed: Mutex<Option<Instant>>,
}

impl Notify for Wake {
    fn notify(&self, _mask: u32) {
        *self.armed.lock() = None;
        if let Some(q) = self.queue.upgrade() {
            q.notify(ALL);
        }
    }
}

impl Shaper {
    pub(crate) fn new(rate: Arc<Rate>, queue: &Arc<Queue>) -> Shaper {
        Shaper { rate, wake: Arc::new(Wake { queue: Arc::downgrade(queue), armed: Mutex::new(None) }) }
    }

    /// Wakes the connection's waiters at `at` (an earlier alarm set
    /// already covers it).
    pub(crate) fn wake_at(&self, at: Instant) {
        let mut armed = self.wake.armed.lock();
        if armed.is_some_and(|t| t <= at) {
            return;
        }
        *armed = Some(at);
        let target: Weak<dyn Notify> = Arc::downgrade(&self.wake) as Weak<dyn Notify>;
        if alarm::at(at, target).is_none() {
            *armed = None;
        }
    }

    /// `take` on `bucket`, with an alarm set when it must wait.
    pub(crate) fn take(&self, bucket: &Bucket, want: usize, whole: bool) -> Option<usize> {
        match bucket.take(want, whole, Instant::now()) {
            Ok(n) => Some(n),
            Err(at) => {
                self.wake_at(at);
                None
            }
        }
    }

    /// `ready` on `bucket`, with an alarm set when it is not.
    pub(crate) fn ready(&self, bucket: &Bucket) -> bool {
        match bucket.ready(Instant::now()) {
            Ok(()) => true,
            Err(at) => {
                self.wake_at(at);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waiter::Entry;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const K: u64 = 1024;

    #[test]
    fn a_bucket_grants_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let b = Bucket::new(1024 * K, t0);
        let burst = usize::try_from(1024 * K / 10).unwrap();
        assert_eq!(b.take(1 << 20, false, t0), Ok(burst), "a full bucket gives its burst");
        let again = b.take(1, false, t0).unwrap_err();
        assert!(again > t0 && again <= t0 + Duration::from_millis(1), "one byte is a microsecond away");
        // A stream waits for a quarter of the burst, not a byte.
        let chunk = b.take(1 << 20, false, t0).unwrap_err();
        let quarter = Duration::from_nanos(u64::try_from(burst / 4).unwrap() * 1_000_000_000 / (1024 * K));
        assert!(chunk >= t0 + quarter && chunk <= t0 + quarter + Duration::from_micros(2), "{:?}", chunk - t0);
        assert_eq!(b.take(1 << 20, false, chunk), Ok(burst / 4));
        // Over ten seconds, ten seconds' worth and no more.
        let mut moved = 0;
        let mut now = chunk;
        while now < chunk + Duration::from_secs(10) {
            match b.take(1 << 20, false, now) {
                Ok(n) => moved += n,
                Err(at) => now = at,
            }
        }
        let expect = 10 * 1024 * K;
        let moved = u64::try_from(moved).unwrap();
        assert!(moved.abs_diff(expect) <= 1024 * K / 10, "{moved} in 10 s at 1M");
    }

    #[test]
    fn a_datagram_goes_whole_and_leaves_the_bucket_in_debt() {
        let t0 = Instant::now();
        let b = Bucket::new(16 * K, t0);
        assert_eq!(b.take(60_000, true, t0), Ok(60_000));
        let at = b.ready(t0).unwrap_err();
        // 60000 - 16384 bytes owed, then a quarter of the burst.
        let owed = 60_000 - 16 * 1024 + 4 * 1024;
        let expect = Duration::from_nanos(owed * 1_000_000_000 / (16 * K));
        assert!((at - t0).abs_diff(expect) < Duration::from_millis(1), "{:?}", at - t0);
        assert!(b.ready(at).is_ok());
    }

    #[test]
    fn refunds_and_charges_move_the_balance_within_the_burst() {
        let t0 = Instant::now();
        let b = Bucket::new(16 * K, t0);
        b.refund(1 << 30);
        assert_eq!(b.take(1 << 30, false, t0), Ok(16 * 1024), "a refund does not grow the burst");
        b.refund(5000);
        assert_eq!(b.take(1 << 30, false, t0), Ok(5000));
        b.charge(1000);
        assert!(b.ready(t0).is_err());
        assert!(b.take(1, false, t0).is_err());
    }

    #[test]
    fn a_shaper_holds_one_alarm_and_wakes_the_queue_when_it_goes_off() {
        struct Count(AtomicUsize);
        impl Notify for Count {
            fn notify(&self, _: u32) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let queue = Arc::new(Queue::default());
        let count = Arc::new(Count(AtomicUsize::new(0)));
        queue.register(&Entry::new(ALL, count.clone()));
        let s = Shaper::new(Rate::new(16 * K), &queue);
        assert_eq!(s.take(&s.rate.up, 1 << 20, false), Some(16 * 1024));
        assert_eq!(s.take(&s.rate.up, 1 << 20, false), None);
        let first = *s.wake.armed.lock();
        assert!(first.is_some());
        for _ in 0..1000 {
            assert_eq!(s.take(&s.rate.up, 1 << 20, false), None);
            assert!(!s.ready(&s.rate.up));
        }
        assert_eq!(*s.wake.armed.lock(), first, "a retried connection set alarms of its own");
        let start = Instant::now();
        while count.0.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(5), "the queue was never woken");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(start.elapsed() >= Duration::from_millis(150), "woken before 4K could drip in at 16K/s");
        assert!(s.ready(&s.rate.up));
    }
}
