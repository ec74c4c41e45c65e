//! System calls: time. Clocks are the host's, read by the sentry; CPU-time
//! clocks, `times` and `getrusage` count the guest's CPU time
//! (`kernel::cputime`).

use super::args::int;
use super::{Entries, Support};
use crate::abi::layout::{Encoder, Layout};
use crate::abi::time::{Rusage, Timespec, Timeval, RUSAGE_CHILDREN, RUSAGE_SELF, RUSAGE_THREAD, USEC_PER_SEC};
use crate::abi::time::{
    CLOCK_BOOTTIME, CLOCK_BOOTTIME_ALARM, CLOCK_MONOTONIC, CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC_RAW,
    CLOCK_PROCESS_CPUTIME_ID, CLOCK_REALTIME, CLOCK_REALTIME_ALARM, CLOCK_REALTIME_COARSE, CLOCK_TAI,
    CLOCK_THREAD_CPUTIME_ID, TIMER_ABSTIME,
};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::host;
use crate::kernel::cputime::CpuTimes;
use crate::kernel::Task;
use crate::waiter as wait;
use std::time::Duration;

const CPU_CLOCKS: &str = "CPU-time clocks count the guest's user time (its stub's) and system time (the sentry \
                          thread serving it); CPU clocks of other threads and processes and fd clocks return EINVAL";
const SLEEP: &str = "sleeping on CPU-time clocks returns EOPNOTSUPP (PROCESS_CPUTIME_ID) or EINVAL (clocks of \
                     a pid)";
const SET_CLOCK: &str = "the sandbox may not set the host clock: valid requests get EPERM, even from root";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_clock_gettime, sys_clock_gettime, Support::Partial(CPU_CLOCKS)),
    (libc::SYS_clock_getres, sys_clock_getres, Support::Partial(CPU_CLOCKS)),
    (libc::SYS_gettimeofday, sys_gettimeofday, Support::Full),
    (libc::SYS_time, sys_time, Support::Full),
    (libc::SYS_nanosleep, sys_nanosleep, Support::Full),
    (libc::SYS_clock_nanosleep, sys_clock_nanosleep, Support::Partial(SLEEP)),
    (libc::SYS_clock_settime, sys_clock_settime, Support::Partial(SET_CLOCK)),
    (libc::SYS_settimeofday, sys_settimeofday, Support::Partial(SET_CLOCK)),
    (libc::SYS_times, sys_times, Support::Partial("returns clock ticks since the sandbox booted")),
    (
        libc::SYS_getrusage,
        sys_getrusage,
        Support::Partial(
            "only CPU times and maxrss (the current resident size; 0 for children) are reported; user time is the \
             guest stub's, system time the sentry thread's serving it",
        ),
    ),
];

/// `USER_HZ`: the unit of `clock_t`.
const USER_HZ: i64 = 100;

/// What a clock id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Clock {
    /// A host clock the sentry reads directly.
    Host(libc::clockid_t),
    /// The CPU time of the calling process.
    ProcessCpu,
    /// The CPU time of the calling thread.
    ThreadCpu,
}

/// Decodes a clock id for a thread `tid` of process `tgid`. Negative ids
/// are dynamic clocks: `~pid << 3 | perthread << 2 | which`.
fn classify(id: i32, tid: i32, tgid: i32) -> Result<Clock, Errno> {
    match id {
        CLOCK_REALTIME
        | CLOCK_MONOTONIC
        | CLOCK_MONOTONIC_RAW
        | CLOCK_REALTIME_COARSE
        | CLOCK_MONOTONIC_COARSE
        | CLOCK_BOOTTIME
        | CLOCK_REALTIME_ALARM
        | CLOCK_BOOTTIME_ALARM
        | CLOCK_TAI => Ok(Clock::Host(id)),
        CLOCK_PROCESS_CPUTIME_ID => Ok(Clock::ProcessCpu),
        CLOCK_THREAD_CPUTIME_ID => Ok(Clock::ThreadCpu),
        id if id < 0 && id & 3 != 3 => {
            let pid = !(id >> 3);
            let per_thread = id & 4 != 0;
            match (per_thread, pid) {
                (true, p) if p == 0 || p == tid => Ok(Clock::ThreadCpu),
                (false, p) if p == 0 || p == tgid => Ok(Clock::ProcessCpu),
                _ => Err(Errno::EINVAL),
            }
        }
        _ => Err(Errno::EINVAL),
    }
}

fn task_clock(task: &Task, id: u64) -> Result<Clock, Errno> {
    classify(int(id), task.thread.tid(), task.thread.tgid())
}

fn host_id(c: Clock) -> libc::clockid_t {
    match c {
        Clock::Host(id) => id,
        Clock::ProcessCpu => libc::CLOCK_PROCESS_CPUTIME_ID,
        Clock::ThreadCpu => libc::CLOCK_THREAD_CPUTIME_ID,
    }
}

/// Reads (or with `res`, the resolution of) a host clock.
fn host_clock(id: libc::clockid_t, res: bool) -> Result<Timespec, Errno> {
    let (sec, nsec) = if res { host::clock_resolution(id)? } else { host::clock_time(id)? };
    Ok(Timespec { sec, nsec })
}

fn now(id: libc::clockid_t) -> Result<Timespec, Errno> {
    host_clock(id, false)
}

fn read_timespec(task: &Task, addr: u64) -> Result<Timespec, Errno> {
    let mut b = [0u8; 16];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(Timespec::decode(&b))
}

/// A signed value as the raw return register.
fn ret(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// The calling thread's (`ThreadCpu`) or process's CPU time.
fn cpu_clock(task: &Task, c: Clock) -> Option<Timespec> {
    let t = match c {
        Clock::Host(_) => return None,
        Clock::ThreadCpu => task.thread.cpu().times(),
        Clock::ProcessCpu => task.thread.group().cpu_times(),
    };
    Some(Timespec::from_duration(t.total()))
}

fn sys_clock_gettime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let c = task_clock(task, a[0])?;
    let t = match cpu_clock(task, c) {
        Some(t) => t,
        None => now(host_id(c))?,
    };
    task.thread.mm().copy_out(a[1], &t.encode())?;
    Ok(0)
}

fn sys_clock_getres(task: &mut Task, a: [u64; 6]) -> SysResult {
    let t = host_clock(host_id(task_clock(task, a[0])?), true)?;
    if a[1] != 0 {
        task.thread.mm().copy_out(a[1], &t.encode())?;
    }
    Ok(0)
}

fn sys_gettimeofday(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let t = now(libc::CLOCK_REALTIME)?;
        task.thread.mm().copy_out(a[0], &Timeval { sec: t.sec, usec: t.nsec / 1000 }.encode())?;
    }
    if a[1] != 0 {
        task.thread.mm().copy_out(a[1], &[0u8; 8])?;
    }
    Ok(0)
}

fn sys_time(task: &mut Task, a: [u64; 6]) -> SysResult {
    let sec = now(libc::CLOCK_REALTIME)?.sec;
    if a[0] != 0 {
        task.thread.mm().copy_out(a[0], &sec.to_le_bytes())?;
    }
    Ok(ret(sec))
}

/// Sleeps for `t`, or with `absolute` until host clock `id` reaches `t`.
/// Ends with ERESTARTNOHAND when a signal interrupts the sleep (EINTR
/// for a handler, else the call restarts).
/// Sleeps for `t` (relative) or until `t` on clock `id` (absolute). An
/// interrupted relative sleep writes the time left to `rem` (if given) and
/// keeps its deadline for the restart, so stopping and continuing the
/// process, or an ignored signal, does not lengthen it.
fn sleep(task: &mut Task, id: libc::clockid_t, t: Timespec, absolute: bool, rem: u64) -> Result<(), Errno> {
    if !absolute {
        let until = task.restarted_deadline().unwrap_or_else(|| wait::deadline_in(t.duration()));
        return wait::sleep_until(until).or_else(|_| {
            task.keep_deadline_for_restart(until);
            if rem != 0 {
                let left = until.saturating_duration_since(std::time::Instant::now());
                task.thread.mm().copy_out(rem, &Timespec::from_duration(left).encode())?;
            }
            Err(Errno::ERESTARTNOHAND)
        });
    }
    while let Some(left) = t.remaining_after(now(id)?) {
        wait::sleep_until(std::time::Instant::now() + left).map_err(|_| Errno::ERESTARTNOHAND)?;
    }
    Ok(())
}

fn sys_nanosleep(task: &mut Task, a: [u64; 6]) -> SysResult {
    let t = read_timespec(task, a[0])?;
    if !t.is_valid() {
        return Err(Errno::EINVAL);
    }
    sleep(task, libc::CLOCK_MONOTONIC, t, false, a[1])?;
    Ok(0)
}

fn sys_clock_nanosleep(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = int(a[0]);
    let flags = int(a[1]);
    let host = match id {
        CLOCK_REALTIME | CLOCK_MONOTONIC | CLOCK_BOOTTIME | CLOCK_TAI | CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM => {
            Some(id)
        }
        CLOCK_PROCESS_CPUTIME_ID
        | CLOCK_THREAD_CPUTIME_ID
        | CLOCK_MONOTONIC_RAW
        | CLOCK_REALTIME_COARSE
        | CLOCK_MONOTONIC_COARSE => return Err(Errno::EOPNOTSUPP),
        id if id < 0 => None,
        _ => return Err(Errno::EINVAL),
    };
    let t = read_timespec(task, a[2])?;
    if !t.is_valid() {
        return Err(Errno::EINVAL);
    }
    let Some(host) = host else {
        log::debug!("clock_nanosleep on CPU clock {id}: unsupported");
        return Err(Errno::EINVAL);
    };
    if host == CLOCK_REALTIME_ALARM || host == CLOCK_BOOTTIME_ALARM {
        if now(host).is_err() {
            return Err(Errno::EOPNOTSUPP);
        }
        if flags & !TIMER_ABSTIME != 0 {
            return Err(Errno::EINVAL);
        }
        if !task.thread.creds().capable(caps::CAP_WAKE_ALARM) {
            return Err(Errno::EPERM);
        }
    }
    let absolute = flags & TIMER_ABSTIME != 0;
    sleep(task, host, t, absolute, if absolute { 0 } else { a[3] })?;
    Ok(0)
}

fn sys_clock_settime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = int(a[0]);
    if id >= 0 && id != CLOCK_REALTIME {
        return Err(Errno::EINVAL);
    }
    let t = read_timespec(task, a[1])?;
    if id == CLOCK_REALTIME {
        if !t.is_valid_settod() {
            return Err(Errno::EINVAL);
        }
    } else {
        task_clock(task, a[0])?;
    }
    Err(Errno::EPERM)
}

/// A `struct timeval` as `settimeofday` converts it.
fn timeval_to_timespec(tv: Timeval) -> Result<Timespec, Errno> {
    if !(0..=USEC_PER_SEC).contains(&tv.usec) {
        return Err(Errno::EINVAL);
    }
    Ok(Timespec { sec: tv.sec, nsec: tv.usec * 1000 })
}

fn sys_settimeofday(task: &mut Task, a: [u64; 6]) -> SysResult {
    let tv = if a[0] != 0 {
        let mut b = [0u8; Timeval::SIZE];
        task.thread.mm().copy_in(a[0], &mut b)?;
        Some(timeval_to_timespec(Timeval::decode(&b))?)
    } else {
        None
    };
    if a[1] != 0 {
        let mut tz = [0u8; 8];
        task.thread.mm().copy_in(a[1], &mut tz)?;
    }
    if tv.is_some_and(|t| !t.is_valid_settod()) {
        return Err(Errno::EINVAL);
    }
    Err(Errno::EPERM)
}

/// A time in clock ticks.
fn ticks(d: Duration) -> i64 {
    let per_tick = u128::try_from(USEC_PER_SEC / USER_HZ).unwrap_or(1);
    i64::try_from(d.as_micros() / per_tick).unwrap_or(i64::MAX)
}

/// `struct tms`: four `clock_t` (utime, stime, cutime, cstime).
fn encode_tms(t: [i64; 4]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(32);
    for v in t {
        e.i64(v);
    }
    e.finish()
}

fn sys_times(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[0] != 0 {
        let group = task.thread.group();
        let (own, children) = (group.cpu_times(), group.cpu().children());
        let tms = encode_tms([own.user, own.system, children.user, children.system].map(ticks));
        task.thread.mm().copy_out(a[0], &tms)?;
    }
    let up = task.kernel.uptime();
    let up_ticks = i64::try_from(up.as_millis() / 10).unwrap_or(i64::MAX);
    Ok(ret(up_ticks))
}

/// `struct rusage` of CPU times `t` and peak resident set `maxrss_kb`.
pub(super) fn encode_rusage(t: CpuTimes, maxrss_kb: i64) -> Vec<u8> {
    let (utime, stime) = (Timeval::from_duration(t.user), Timeval::from_duration(t.system));
    Rusage { utime, stime, maxrss: maxrss_kb }.encode()
}

fn sys_getrusage(task: &mut Task, a: [u64; 6]) -> SysResult {
    let rss_kb = || i64::try_from(task.thread.mm().resident_bytes() / 1024).unwrap_or(i64::MAX);
    let buf = match int(a[0]) {
        RUSAGE_CHILDREN => encode_rusage(task.thread.group().cpu().children(), 0),
        RUSAGE_SELF => encode_rusage(task.thread.group().cpu_times(), rss_kb()),
        RUSAGE_THREAD => encode_rusage(task.thread.cpu().times(), rss_kb()),
        _ => return Err(Errno::EINVAL),
    };
    task.thread.mm().copy_out(a[1], &buf)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::Decoder;

    #[test]
    fn clock_ids() {
        assert_eq!(classify(CLOCK_REALTIME, 5, 5), Ok(Clock::Host(0)));
        assert_eq!(classify(CLOCK_TAI, 5, 5), Ok(Clock::Host(11)));
        assert_eq!(classify(10, 5, 5), Err(Errno::EINVAL));
        assert_eq!(classify(12, 5, 5), Err(Errno::EINVAL));
        assert_eq!(classify(CLOCK_PROCESS_CPUTIME_ID, 5, 5), Ok(Clock::ProcessCpu));
        // clock_getcpuclockid(0) / pthread_getcpuclockid encodings.
        let process = |pid: i32| (!pid << 3) | 2;
        let thread = |tid: i32| (!tid << 3) | 4 | 2;
        assert_eq!(classify(process(0), 6, 5), Ok(Clock::ProcessCpu));
        assert_eq!(classify(process(5), 6, 5), Ok(Clock::ProcessCpu));
        assert_eq!(classify(process(6), 6, 5), Err(Errno::EINVAL), "a tid is not a process clock");
        assert_eq!(classify(process(9), 6, 5), Err(Errno::EINVAL));
        assert_eq!(classify(thread(6), 6, 5), Ok(Clock::ThreadCpu));
        assert_eq!(classify(thread(7), 6, 5), Err(Errno::EINVAL));
        assert_eq!(classify((!3 << 3) | 3, 6, 5), Err(Errno::EINVAL), "fd clock");
    }

    #[test]
    fn host_clocks_are_readable() {
        for id in [CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_MONOTONIC_COARSE] {
            let t = now(host_id(Clock::Host(id))).unwrap();
            assert!(t.is_valid());
        }
        assert!(now(host_id(Clock::ThreadCpu)).unwrap().is_valid());
    }

    #[test]
    fn settimeofday_validation() {
        let tv = |sec, usec| timeval_to_timespec(Timeval { sec, usec });
        assert_eq!(tv(1, 1_000_001), Err(Errno::EINVAL));
        assert_eq!(tv(1, -1), Err(Errno::EINVAL));
        assert_eq!(tv(1, 2), Ok(Timespec { sec: 1, nsec: 2000 }));
        let edge = tv(1, 1_000_000).unwrap();
        assert!(!edge.is_valid_settod(), "passes the usec check, fails as a time");
    }

    #[test]
    fn struct_layouts() {
        assert_eq!(ticks(Duration::from_micros(2_345_678)), 234);
        let tms = encode_tms([7, 8, 9, 10]);
        assert_eq!(tms.len(), 32);
        assert_eq!((tms[8], tms[24]), (8, 10));
        let t = CpuTimes { user: Duration::from_micros(1_000_002), system: Duration::from_micros(3_000_004) };
        let ru = encode_rusage(t, 5);
        assert_eq!(ru.len(), 144);
        let mut d = Decoder::new(&ru);
        assert_eq!([d.i64(), d.i64(), d.i64(), d.i64(), d.i64()], [1, 2, 3, 4, 5]);
    }
}
