//! Clock ids and timer flags (Linux's `include/uapi/linux/time.h`).

pub const CLOCK_REALTIME: i32 = libc::CLOCK_REALTIME;
pub const CLOCK_MONOTONIC: i32 = libc::CLOCK_MONOTONIC;
pub const CLOCK_PROCESS_CPUTIME_ID: i32 = libc::CLOCK_PROCESS_CPUTIME_ID;
pub const CLOCK_THREAD_CPUTIME_ID: i32 = libc::CLOCK_THREAD_CPUTIME_ID;
pub const CLOCK_MONOTONIC_RAW: i32 = libc::CLOCK_MONOTONIC_RAW;
pub const CLOCK_REALTIME_COARSE: i32 = libc::CLOCK_REALTIME_COARSE;
pub const CLOCK_MONOTONIC_COARSE: i32 = libc::CLOCK_MONOTONIC_COARSE;
pub const CLOCK_BOOTTIME: i32 = libc::CLOCK_BOOTTIME;
pub const CLOCK_REALTIME_ALARM: i32 = libc::CLOCK_REALTIME_ALARM;
pub const CLOCK_BOOTTIME_ALARM: i32 = libc::CLOCK_BOOTTIME_ALARM;
pub const CLOCK_TAI: i32 = libc::CLOCK_TAI;

/// `clock_nanosleep` and `timer_settime`: the time is absolute.
pub const TIMER_ABSTIME: i32 = libc::TIMER_ABSTIME;

/// `setitimer`'s timers.
pub const ITIMER_REAL: i32 = libc::ITIMER_REAL;
pub const ITIMER_VIRTUAL: i32 = libc::ITIMER_VIRTUAL;
pub const ITIMER_PROF: i32 = libc::ITIMER_PROF;
