//! Host clocks and CPU-time clocks.

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
pub(crate) fn clock_time(id: libc::clockid_t) -> Result<(i64, i64), Errno> {
    read(id, false)
}

/// The resolution of host clock `id`, as (seconds, nanoseconds).
pub(crate) fn clock_resolution(id: libc::clockid_t) -> Result<(i64, i64), Errno> {
    read(id, true)
}

/// The host's CLOCK_MONOTONIC, which the guest's monotonic clock is.
pub(crate) fn monotonic_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}

/// The CPU clock of the calling host thread, which other threads of the
/// sentry may read (`pthread_getcpuclockid`: `~tid << 3 | PERTHREAD |
/// SCHED`).
pub(crate) fn own_thread_cpu_clock() -> libc::clockid_t {
    // SAFETY: gettid takes no arguments and cannot fail.
    let tid = unsafe { libc::gettid() };
    (!tid).wrapping_shl(3) | 6
}

/// The CPU clock of host process `pid` (all its threads), which Linux
/// lets any process read (`~pid << 3 | SCHED`).
pub(crate) fn process_cpu_clock(pid: libc::pid_t) -> libc::clockid_t {
    (!pid).wrapping_shl(3) | 2
}

/// The time of CPU clock `clock`; None once its thread or process is
/// gone.
pub(crate) fn cpu_clock_time(clock: libc::clockid_t) -> Option<Duration> {
    let (sec, nsec) = read(clock, false).ok()?;
    Some(Duration::new(u64::try_from(sec).ok()?, u32::try_from(nsec).ok()?))
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
        let mine = cpu_clock_time(own_thread_cpu_clock()).unwrap();
        assert!(mine > Duration::ZERO);
        // SAFETY: getpid cannot fail.
        let all = cpu_clock_time(process_cpu_clock(unsafe { libc::getpid() })).unwrap();
        assert!(all >= mine);
    }
}
