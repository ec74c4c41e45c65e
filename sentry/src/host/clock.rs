//! Host clocks and the sentry's CPU time.

use crate::abi::Errno;
use std::time::Duration;

/// Reads host clock `id`, or with `res` its resolution, as (seconds,
/// nanoseconds).
fn read(id: libc::clockid_t, res: bool) -> Result<(i64, i64), Errno> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let r = if res {
        // SAFETY: `ts` is a valid, writable timespec.
        unsafe { libc::clock_getres(id, &mut ts) }
    } else {
        // SAFETY: `ts` is a valid, writable timespec.
        unsafe { libc::clock_gettime(id, &mut ts) }
    };
    if r != 0 {
        return Err(Errno::last_os_error());
    }
    Ok((ts.tv_sec, ts.tv_nsec))
}

/// The time of host clock `id`, as (seconds, nanoseconds).
pub fn clock_time(id: libc::clockid_t) -> Result<(i64, i64), Errno> {
    read(id, false)
}

/// The resolution of host clock `id`, as (seconds, nanoseconds).
pub fn clock_resolution(id: libc::clockid_t) -> Result<(i64, i64), Errno> {
    read(id, true)
}

/// The host's CLOCK_MONOTONIC, which the guest's monotonic clock is.
pub fn monotonic_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}

/// User and system CPU time of the sentry (`RUSAGE_SELF`) or of the
/// calling host thread (`RUSAGE_THREAD`), as (seconds, microseconds).
pub fn cpu_times(who: libc::c_int) -> [(i64, i64); 2] {
    // SAFETY: rusage is integers only; all-zero is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        log::warn!("host getrusage failed: {}", std::io::Error::last_os_error());
    }
    [(ru.ru_utime.tv_sec, ru.ru_utime.tv_usec), (ru.ru_stime.tv_sec, ru.ru_stime.tv_usec)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_read_and_the_monotonic_one_advances() {
        let (_, nsec) = clock_time(libc::CLOCK_REALTIME).unwrap();
        assert!((0..1_000_000_000).contains(&nsec));
        assert!(clock_resolution(libc::CLOCK_MONOTONIC).unwrap() > (0, 0));
        assert_eq!(clock_time(1_000), Err(Errno::EINVAL));
        let a = monotonic_now();
        assert!(monotonic_now() >= a);
        let [user, _] = cpu_times(libc::RUSAGE_SELF);
        assert!(user.1 < 1_000_000);
    }
}
