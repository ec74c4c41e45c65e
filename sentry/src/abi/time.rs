//! Clock ids, timer flags and the time structures `timespec` and
//! `timeval` (Linux's `include/uapi/linux/time.h`, `time64.h`).

use super::layout::{Decoder, Encoder, Layout};
use std::time::Duration;

pub(crate) const CLOCK_REALTIME: i32 = libc::CLOCK_REALTIME;
pub(crate) const CLOCK_MONOTONIC: i32 = libc::CLOCK_MONOTONIC;
pub(crate) const CLOCK_PROCESS_CPUTIME_ID: i32 = libc::CLOCK_PROCESS_CPUTIME_ID;
pub(crate) const CLOCK_THREAD_CPUTIME_ID: i32 = libc::CLOCK_THREAD_CPUTIME_ID;
pub(crate) const CLOCK_MONOTONIC_RAW: i32 = libc::CLOCK_MONOTONIC_RAW;
pub(crate) const CLOCK_REALTIME_COARSE: i32 = libc::CLOCK_REALTIME_COARSE;
pub(crate) const CLOCK_MONOTONIC_COARSE: i32 = libc::CLOCK_MONOTONIC_COARSE;
pub(crate) const CLOCK_BOOTTIME: i32 = libc::CLOCK_BOOTTIME;
pub(crate) const CLOCK_REALTIME_ALARM: i32 = libc::CLOCK_REALTIME_ALARM;
pub(crate) const CLOCK_BOOTTIME_ALARM: i32 = libc::CLOCK_BOOTTIME_ALARM;
pub(crate) const CLOCK_TAI: i32 = libc::CLOCK_TAI;

/// `clock_nanosleep` and `timer_settime`: the time is absolute.
pub(crate) const TIMER_ABSTIME: i32 = libc::TIMER_ABSTIME;

/// `setitimer`'s timers.
pub(crate) const ITIMER_REAL: i32 = libc::ITIMER_REAL;
pub(crate) const ITIMER_VIRTUAL: i32 = libc::ITIMER_VIRTUAL;
pub(crate) const ITIMER_PROF: i32 = libc::ITIMER_PROF;

pub(crate) const NSEC_PER_SEC: i64 = 1_000_000_000;
pub(crate) const USEC_PER_SEC: i64 = 1_000_000;
/// `TIME_SETTOD_SEC_MAX`: `KTIME_SEC_MAX` less 30 years of uptime.
pub(crate) const SETTOD_SEC_MAX: i64 = 9_223_372_036 - 30 * 365 * 24 * 3600;

/// A `struct timespec`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timespec {
    pub sec: i64,
    pub nsec: i64,
}

impl Layout for Timespec {
    const SIZE: usize = 16;

    fn encode_to(&self, e: &mut Encoder) {
        e.i64(self.sec).i64(self.nsec);
    }

    fn decode_from(d: &mut Decoder) -> Timespec {
        Timespec { sec: d.i64(), nsec: d.i64() }
    }
}

impl Timespec {
    /// A duration, the seconds saturating at `i64::MAX`.
    pub(crate) fn from_duration(d: Duration) -> Timespec {
        Timespec { sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), nsec: i64::from(d.subsec_nanos()) }
    }

    /// `timespec64_valid`.
    pub(crate) fn is_valid(self) -> bool {
        self.sec >= 0 && (0..NSEC_PER_SEC).contains(&self.nsec)
    }

    /// `timespec64_valid_settod`.
    pub(crate) fn is_valid_settod(self) -> bool {
        self.is_valid() && self.sec < SETTOD_SEC_MAX
    }

    pub(crate) fn nanos(self) -> i128 {
        i128::from(self.sec) * i128::from(NSEC_PER_SEC) + i128::from(self.nsec)
    }

    /// The time from `now` until `self`, if any is left.
    pub(crate) fn remaining_after(self, now: Timespec) -> Option<Duration> {
        let left = self.nanos() - now.nanos();
        (left > 0).then(|| Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX)))
    }

    /// A valid timespec as a duration.
    pub(crate) fn duration(self) -> Duration {
        let nanos = u32::try_from(self.nsec).unwrap_or(0);
        Duration::new(u64::try_from(self.sec).unwrap_or(0), nanos)
    }
}

/// A `struct timeval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Timeval {
    pub sec: i64,
    pub usec: i64,
}

impl Layout for Timeval {
    const SIZE: usize = 16;

    fn encode_to(&self, e: &mut Encoder) {
        e.i64(self.sec).i64(self.usec);
    }

    fn decode_from(d: &mut Decoder) -> Timeval {
        Timeval { sec: d.i64(), usec: d.i64() }
    }
}

impl Timeval {
    /// A duration to the microsecond, the seconds saturating at `i64::MAX`.
    pub(crate) fn from_duration(d: Duration) -> Timeval {
        Timeval { sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), usec: i64::from(d.subsec_micros()) }
    }
}

impl Timeval {
    /// The same time as a timespec (an out-of-range `usec` stays out of
    /// range, for `Timespec::is_valid` to refuse).
    pub(crate) fn to_timespec(self) -> Timespec {
        Timespec { sec: self.sec, nsec: self.usec.saturating_mul(1000) }
    }
}

/// A `struct itimerval` (setitimer, getitimer): the reload interval, then
/// the time to the next expiry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Itimerval {
    pub interval: Timeval,
    pub value: Timeval,
}

impl Layout for Itimerval {
    const SIZE: usize = 32;

    fn encode_to(&self, e: &mut Encoder) {
        self.interval.encode_to(e);
        self.value.encode_to(e);
    }

    fn decode_from(d: &mut Decoder) -> Itimerval {
        let interval = Timeval::decode_from(d);
        Itimerval { interval, value: Timeval::decode_from(d) }
    }
}

/// A `struct itimerspec` (timer_settime, timerfd_settime): as itimerval,
/// to the nanosecond.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Itimerspec {
    pub interval: Timespec,
    pub value: Timespec,
}

impl Layout for Itimerspec {
    const SIZE: usize = 32;

    fn encode_to(&self, e: &mut Encoder) {
        self.interval.encode_to(e);
        self.value.encode_to(e);
    }

    fn decode_from(d: &mut Decoder) -> Itimerspec {
        let interval = Timespec::decode_from(d);
        Itimerspec { interval, value: Timespec::decode_from(d) }
    }
}

/// A `struct rusage` (getrusage, wait4): the user and system CPU times
/// and the peak resident set in KiB; the sentry keeps none of its other
/// fourteen counters, which read as zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rusage {
    pub utime: Timeval,
    pub stime: Timeval,
    pub maxrss: i64,
}

impl Layout for Rusage {
    const SIZE: usize = 144;

    fn encode_to(&self, e: &mut Encoder) {
        self.utime.encode_to(e);
        self.stime.encode_to(e);
        e.i64(self.maxrss).zeros(13 * 8);
    }

    fn decode_from(d: &mut Decoder) -> Rusage {
        let (utime, stime) = (Timeval::decode_from(d), Timeval::decode_from(d));
        Rusage { utime, stime, maxrss: d.i64() }
    }
}

/// getrusage(2)'s `who` (`linux/resource.h`).
pub(crate) const RUSAGE_SELF: i32 = 0;
pub(crate) const RUSAGE_CHILDREN: i32 = -1;
pub(crate) const RUSAGE_THREAD: i32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_settings_match_linux() {
        assert_eq!(Itimerval::SIZE, std::mem::size_of::<libc::itimerval>());
        assert_eq!(Itimerspec::SIZE, std::mem::size_of::<libc::itimerspec>());
        let v = Itimerval { interval: Timeval { sec: 1, usec: 2 }, value: Timeval { sec: 3, usec: 4 } };
        assert_eq!(v.encode()[16..24], 3i64.to_le_bytes(), "it_value follows it_interval");
        assert_eq!(Itimerval::decode(&v.encode()), v);
        let s = Itimerspec { interval: Timespec { sec: 5, nsec: 6 }, value: Timespec { sec: 7, nsec: 8 } };
        assert_eq!(Itimerspec::decode(&s.encode()), s);
        assert!(!Timeval { sec: 0, usec: 1_000_000 }.to_timespec().is_valid());
        assert!(!Timeval { sec: 0, usec: i64::MAX }.to_timespec().is_valid());
        assert_eq!(Timeval { sec: 1, usec: 999_999 }.to_timespec(), Timespec { sec: 1, nsec: 999_999_000 });
    }

    #[test]
    fn rusage_matches_linux() {
        assert_eq!(Rusage::SIZE, std::mem::size_of::<libc::rusage>());
        let r = Rusage { utime: Timeval { sec: 1, usec: 2 }, stime: Timeval { sec: 3, usec: 4 }, maxrss: 5 };
        let b = r.encode();
        assert_eq!(b.len(), Rusage::SIZE);
        assert_eq!(b[32..40], 5i64.to_le_bytes(), "ru_maxrss follows the two timevals");
        assert_eq!(Rusage::decode(&b), r);
    }

    #[test]
    fn rusage_who_matches_linux() {
        assert_eq!(RUSAGE_SELF, libc::RUSAGE_SELF);
        assert_eq!(RUSAGE_CHILDREN, libc::RUSAGE_CHILDREN);
        assert_eq!(RUSAGE_THREAD, 1);
    }

    #[test]
    fn timespec_validity() {
        let ts = |sec, nsec| Timespec { sec, nsec };
        assert!(ts(0, 0).is_valid());
        assert!(ts(1, 999_999_999).is_valid());
        assert!(!ts(1, 1_000_000_000).is_valid());
        assert!(!ts(-1, 0).is_valid());
        assert!(!ts(0, -1).is_valid());
        assert!(!ts(SETTOD_SEC_MAX, 0).is_valid_settod());
        assert_eq!(ts(3, 5).duration(), Duration::new(3, 5));
        assert_eq!(ts(2, 0).remaining_after(ts(1, 500_000_000)), Some(Duration::from_millis(500)));
        assert_eq!(ts(1, 0).remaining_after(ts(1, 0)), None);
    }

    #[test]
    fn layouts_round_trip() {
        let ts = Timespec { sec: -7, nsec: 9 };
        assert_eq!(Timespec::decode(&ts.encode()), ts);
        let tv = Timeval { sec: 3, usec: -4 };
        assert_eq!(Timeval::decode(&tv.encode()), tv);
        assert_eq!(Timespec::from_duration(Duration::new(u64::MAX, 5)), Timespec { sec: i64::MAX, nsec: 5 });
        assert_eq!(Timeval::from_duration(Duration::new(2, 3_999)), Timeval { sec: 2, usec: 3 });
        assert_eq!(std::mem::size_of::<libc::timespec>(), Timespec::SIZE);
        assert_eq!(std::mem::size_of::<libc::timeval>(), Timeval::SIZE);
    }
}
