//! timerfd: a timer read as a file. Expirations are counted from the
//! deadline when the file is read or polled; an alarm at the deadline
//! wakes the file's waiters. A timer holds at most one alarm, cancelled
//! when re-armed, disarmed or closed, and set only while someone waits
//! and nothing is pending: a periodic timer's alarm goes off once per
//! wait, however short its interval (the expirations in between are
//! counted when read), so no guest keeps the shared alarm thread busy.

use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::{self, alarm, Entry, Notify, Queue};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Timer {
    deadline: Option<Instant>,
    interval: Duration,
    /// Expirations counted but not yet read.
    pending: u64,
    /// The alarm that wakes the waiters, if one is set.
    alarm: Option<alarm::Key>,
}

pub(crate) struct TimerFd {
    ino: u64,
    created: TimeSpec,
    /// The clock absolute settings are on (CLOCK_REALTIME or MONOTONIC).
    pub clock: i32,
    timer: Mutex<Timer>,
    /// Readers and pollers wait here for an expiry.
    events: Queue,
    me: Weak<TimerFd>,
}

impl Timer {
    /// Moves expirations up to `now` into `pending`.
    fn advance(&mut self, now: Instant) {
        let Some(d) = self.deadline else { return };
        if now < d {
            return;
        }
        if self.interval.is_zero() {
            self.pending += 1;
            self.deadline = None;
        } else {
            let n = (now - d).as_nanos() / self.interval.as_nanos() + 1;
            self.pending = self.pending.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
            self.deadline = Some(waiter::later(d, self.interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))));
        }
    }
}

impl TimerFd {
    pub(crate) fn new(ino: u64, created: TimeSpec, clock: i32) -> Arc<TimerFd> {
        Arc::new_cyclic(|me| TimerFd {
            ino,
            created,
            clock,
            timer: Mutex::default(),
            events: Queue::default(),
            me: me.clone(),
        })
    }

    /// Arms (`value` zero disarms); returns the old (value, interval).
    pub(crate) fn set(&self, value: Duration, interval: Duration) -> (Duration, Duration) {
        let old = self.get();
        let mut t = self.timer.lock();
        t.deadline = (!value.is_zero()).then(|| waiter::deadline_in(value));
        t.interval = interval;
        t.pending = 0;
        if let Some(k) = t.alarm.take() {
            alarm::cancel(k);
        }
        self.set_alarm(&mut t);
        old
    }

    /// Sets an alarm for the next expiry if someone waits for it and
    /// nothing is pending (then the file is ready already), unless one
    /// is set for it.
    fn set_alarm(&self, t: &mut Timer) {
        let Some(d) = t.deadline else { return };
        if t.pending > 0 || t.alarm.is_some_and(|k| k.when() == d) || self.events.events() == 0 {
            return;
        }
        if let Some(k) = t.alarm.take() {
            alarm::cancel(k);
        }
        let me: Weak<dyn Notify> = self.me.clone();
        t.alarm = alarm::at(d, me);
    }

    /// The time left and the interval.
    pub(crate) fn get(&self) -> (Duration, Duration) {
        let mut t = self.timer.lock();
        let now = Instant::now();
        t.advance(now);
        (t.deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now)), t.interval)
    }
}

super::anon::anon_inode_node!(TimerFd, usize::MAX - 5);

impl FileOps for TimerFd {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let mut t = self.timer.lock();
        t.advance(Instant::now());
        if t.pending == 0 {
            // The caller waits for the alarm (a disarmed timer: for a
            // signal).
            return Err(Errno::EAGAIN);
        }
        buf[..8].copy_from_slice(&t.pending.to_ne_bytes());
        t.pending = 0;
        // A periodic timer's waiters (an epoll instance's entry) hear of
        // its next expiry.
        self.set_alarm(&mut t);
        Ok(8)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let mut t = self.timer.lock();
        t.advance(Instant::now());
        if t.pending > 0 {
            POLLIN | POLLRDNORM
        } else {
            self.set_alarm(&mut t);
            0
        }
    }

    fn event_register(&self, e: &Entry) {
        self.events.register(e);
        self.set_alarm(&mut self.timer.lock());
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        if let Some(k) = self.timer.get_mut().alarm.take() {
            alarm::cancel(k);
        }
    }
}

/// The alarm went off: the timer expired (or was reset since).
impl Notify for TimerFd {
    fn notify(&self, _mask: u32) {
        {
            let mut t = self.timer.lock();
            let now = Instant::now();
            t.advance(now);
            // The alarm that went off is gone from the set; a newer one
            // (the timer re-armed meanwhile) stays.
            if t.alarm.is_some_and(|k| k.when() <= now) {
                t.alarm = None;
            }
            // Pending expirations keep the file ready; if the timer was
            // re-armed meanwhile, the alarm for it waits on.
            self.set_alarm(&mut t);
        }
        self.events.notify(POLLIN | POLLRDNORM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Count;

    fn watched() -> (Arc<TimerFd>, Arc<Count>) {
        let t = TimerFd::new(1, TimeSpec::default(), libc::CLOCK_MONOTONIC);
        let c = Arc::new(Count::default());
        t.event_register(&Entry::new(POLLIN, c.clone()));
        (t, c)
    }

    #[test]
    fn re_arming_disarming_and_closing_leave_no_alarm_behind() {
        let (t, _c) = watched();
        for _ in 0..20_000 {
            t.set(Duration::from_secs(3600), Duration::ZERO);
        }
        assert!(alarm::count() < 1000, "{} alarms set", alarm::count());
        t.set(Duration::from_secs(3600), Duration::ZERO);
        let with = alarm::count();
        t.set(Duration::ZERO, Duration::ZERO);
        t.set(Duration::from_secs(3600), Duration::ZERO);
        drop(t);
        assert!(alarm::count() < with + 1000);
    }

    #[test]
    fn a_fast_periodic_timer_rings_once_per_wait_and_counts_every_expiry() {
        let (t, c) = watched();
        t.set(Duration::from_nanos(1), Duration::from_nanos(1));
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(c.get(), 1);
        let mut buf = [0u8; 8];
        assert_eq!(t.read(&mut buf, 0), Ok(8));
        assert!(u64::from_ne_bytes(buf) > 1000);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(c.get(), 2);
    }
}
