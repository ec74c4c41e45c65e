//! timerfd: a timer read as a file. Expirations are counted from the
//! deadline when the file is read or polled; no thread is needed.

use crate::abi::Errno;
use crate::kernel::wait;
use crate::vfs::{FileOps, Node, Stat, TimeSpec, POLLIN, POLLRDNORM};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Timer {
    deadline: Option<Instant>,
    interval: Duration,
    /// Expirations counted but not yet read.
    pending: u64,
}

pub struct TimerFd {
    ino: u64,
    created: TimeSpec,
    /// The clock absolute settings are on (CLOCK_REALTIME or MONOTONIC).
    pub clock: i32,
    nonblock: AtomicBool,
    timer: Mutex<Timer>,
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
            self.deadline = Some(wait::later(d, self.interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX))));
        }
    }
}

impl TimerFd {
    pub fn new(ino: u64, created: TimeSpec, clock: i32, nonblock: bool) -> Arc<TimerFd> {
        Arc::new(TimerFd { ino, created, clock, nonblock: AtomicBool::new(nonblock), timer: Mutex::default() })
    }

    /// Arms (`value` zero disarms); returns the old (value, interval).
    pub fn set(&self, value: Duration, interval: Duration) -> (Duration, Duration) {
        let old = self.get();
        let mut t = self.timer.lock();
        t.deadline = (!value.is_zero()).then(|| wait::deadline_in(value));
        t.interval = interval;
        t.pending = 0;
        old
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
        loop {
            let next = {
                let mut t = self.timer.lock();
                t.advance(Instant::now());
                if t.pending > 0 {
                    buf[..8].copy_from_slice(&t.pending.to_ne_bytes());
                    t.pending = 0;
                    return Ok(8);
                }
                t.deadline
            };
            if self.nonblock.load(Ordering::Relaxed) {
                return Err(Errno::EAGAIN);
            }
            // A disarmed timer blocks until a signal interrupts the read.
            let until = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32));
            wait::sleep_until(until)?;
        }
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

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), Ordering::Relaxed);
    }
}
