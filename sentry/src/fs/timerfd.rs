//! timerfd: a timer read as a file. Expirations are counted from the
//! deadline when the file is read or polled; an alarm at the deadline
//! wakes the file's waiters.

use crate::abi::Errno;
use crate::vfs::{FileOps, Node, Stat, TimeSpec, POLLIN, POLLRDNORM};
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
    /// When the alarm that wakes the waiters goes off, if one is set.
    alarm: Option<Instant>,
}

pub struct TimerFd {
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
    pub fn new(ino: u64, created: TimeSpec, clock: i32) -> Arc<TimerFd> {
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
    pub fn set(&self, value: Duration, interval: Duration) -> (Duration, Duration) {
        let old = self.get();
        let mut t = self.timer.lock();
        t.deadline = (!value.is_zero()).then(|| waiter::deadline_in(value));
        t.interval = interval;
        t.pending = 0;
        self.set_alarm(&mut t);
        old
    }

    /// Sets an alarm for the next expiry, unless one is set for it.
    fn set_alarm(&self, t: &mut Timer) {
        if let Some(d) = t.deadline.filter(|&d| t.alarm != Some(d)) {
            t.alarm = Some(d);
            let me: Weak<dyn Notify> = self.me.clone();
            alarm::at(d, me);
        }
    }

    /// The time left and the interval.
    pub fn get(&self) -> (Duration, Duration) {
        let mut t = self.timer.lock();
        let now = Instant::now();
        t.advance(now);
        (t.deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now)), t.interval)
    }
}

impl Node for TimerFd {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x0e, self.ino, 0o600, self.created))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 5
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

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

/// The alarm went off: the timer expired (or was reset since).
impl Notify for TimerFd {
    fn notify(&self, _mask: u32) {
        {
            let mut t = self.timer.lock();
            t.advance(Instant::now());
            t.alarm = None;
            // A periodic timer keeps ringing while anyone waits.
            if self.events.events() != 0 {
                self.set_alarm(&mut t);
            }
        }
        self.events.notify(POLLIN | POLLRDNORM);
    }
}
