//! System calls: interval timers (alarm, setitimer) and POSIX timers.

use super::args::{int, uint};
use super::{Entries, Support::*};
use crate::abi::fcntl::{O_NONBLOCK, O_RDWR};
use crate::abi::layout::{Decoder, Layout};
use crate::abi::signal::{SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD_ID};
use crate::abi::time::{
    Itimerspec, Itimerval, Timespec, Timeval, ITIMER_PROF, ITIMER_REAL, ITIMER_VIRTUAL, TIMER_ABSTIME,
};
use crate::abi::{Errno, SysResult};
use crate::kernel::cpu_itimers;
use crate::kernel::timers::{Setting, Target};
use crate::kernel::Task;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_alarm, sys_alarm, Full),
    (
        libc::SYS_setitimer,
        sys_setitimer,
        Partial("ITIMER_VIRTUAL/PROF sample the process's CPU time at 4 ms granularity, not each tick"),
    ),
    (libc::SYS_getitimer, sys_getitimer, Full),
    (libc::SYS_timer_create, sys_timer_create, Partial("CPU-time clocks are not supported (EINVAL)")),
    (libc::SYS_timer_settime, sys_timer_settime, Full),
    (libc::SYS_timer_gettime, sys_timer_gettime, Full),
    (libc::SYS_timer_getoverrun, sys_timer_getoverrun, Full),
    (libc::SYS_timer_delete, sys_timer_delete, Full),
    (
        libc::SYS_timerfd_create,
        sys_timerfd_create,
        Partial(
            "TFD_TIMER_CANCEL_ON_SET is accepted but clock changes never cancel (the sandbox cannot set the clock)",
        ),
    ),
    (libc::SYS_timerfd_settime, sys_timerfd_settime, Full),
    (libc::SYS_timerfd_gettime, sys_timerfd_gettime, Full),
];

/// TIMER_ABSTIME as the raw flags argument is compared.
const ABSTIME: u64 = TIMER_ABSTIME.unsigned_abs() as u64;

/// Reads a `struct itimerspec` (`unit` 1, nanoseconds) or `struct
/// itimerval` (`unit` 1000, microseconds): (interval, value), EINVAL when
/// either is out of range.
fn read_pair(task: &Task, addr: u64, unit: u32) -> Result<(Duration, Duration), Errno> {
    let mut raw = [0u8; Itimerspec::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let t = if unit == 1 {
        Itimerspec::decode(&raw)
    } else {
        let v = Itimerval::decode(&raw);
        Itimerspec { interval: v.interval.to_timespec(), value: v.value.to_timespec() }
    };
    if !t.interval.is_valid() || !t.value.is_valid() {
        return Err(Errno::EINVAL);
    }
    Ok((t.interval.duration(), t.value.duration()))
}

/// Writes setting `s` as a `struct itimerspec` (`unit` 1) or `struct
/// itimerval` (`unit` 1000).
fn write_pair(task: &Task, addr: u64, s: Setting, unit: u32) -> Result<(), Errno> {
    let raw = if unit == 1 {
        Itimerspec { interval: Timespec::from_duration(s.interval), value: Timespec::from_duration(s.value) }.encode()
    } else {
        Itimerval { interval: Timeval::from_duration(s.interval), value: Timeval::from_duration(s.value) }.encode()
    };
    task.thread.mm().copy_out(addr, &raw)
}

fn sys_alarm(task: &mut Task, a: [u64; 6]) -> SysResult {
    let secs = Duration::from_secs(u64::from(uint(a[0])));
    let old = task.kernel.set_real_itimer(task.thread.group(), secs, Duration::ZERO);
    // Linux rounds the time left to the nearest second, and reports at
    // least one second if any is left.
    let mut left = old.value.as_secs() + u64::from(old.value.subsec_micros() >= 500_000);
    if left == 0 && !old.value.is_zero() {
        left = 1;
    }
    Ok(left)
}

fn sys_setitimer(task: &mut Task, a: [u64; 6]) -> SysResult {
    let which = int(a[0]);
    let (interval, value) = if a[1] == 0 { (Duration::ZERO, Duration::ZERO) } else { read_pair(task, a[1], 1000)? };
    match which {
        ITIMER_REAL => {
            let old = task.kernel.set_real_itimer(task.thread.group(), value, interval);
            if a[2] != 0 {
                write_pair(task, a[2], old, 1000)?;
            }
            Ok(0)
        }
        ITIMER_VIRTUAL | ITIMER_PROF => {
            let old = task.kernel.set_cpu_itimer(task.thread.group(), cpu_timer(which), value, interval);
            if a[2] != 0 {
                write_pair(task, a[2], Setting { value: old.value, interval: old.interval }, 1000)?;
            }
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// The CPU-time timer `which` names (ITIMER_VIRTUAL or ITIMER_PROF).
fn cpu_timer(which: i32) -> cpu_itimers::Which {
    if which == ITIMER_VIRTUAL {
        cpu_itimers::Which::Virtual
    } else {
        cpu_itimers::Which::Prof
    }
}

fn sys_getitimer(task: &mut Task, a: [u64; 6]) -> SysResult {
    match int(a[0]) {
        ITIMER_REAL => {
            let s = task.kernel.get_real_itimer(task.thread.group());
            write_pair(task, a[1], s, 1000)?;
            Ok(0)
        }
        which @ (ITIMER_VIRTUAL | ITIMER_PROF) => {
            let s = task.kernel.get_cpu_itimer(task.thread.group(), cpu_timer(which));
            write_pair(task, a[1], Setting { value: s.value, interval: s.interval }, 1000)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn timer_id(task: &Task, raw: u64) -> Result<u64, Errno> {
    let id = u64::try_from(int(raw)).map_err(|_| Errno::EINVAL)?;
    if !task.thread.group().timers().has_posix(id) {
        return Err(Errno::EINVAL);
    }
    Ok(id)
}

fn sys_timer_create(task: &mut Task, a: [u64; 6]) -> SysResult {
    let clock = int(a[0]);
    if !matches!(clock, 0 | 1 | 7 | 8 | 9 | 11) {
        return Err(Errno::EINVAL);
    }
    let me = task.thread.tgid();
    let (target, signo, value) = if a[1] == 0 {
        (Target::Process(me), libc::SIGALRM, None)
    } else {
        let mut raw = [0u8; 20];
        task.thread.mm().copy_in(a[1], &mut raw)?;
        let mut d = Decoder::new(&raw);
        let value = d.u64();
        let (signo, notify, tid) = (d.i32(), d.i32(), d.i32());
        let valid_sig = (1..=64).contains(&signo);
        match notify {
            SIGEV_NONE => (Target::Process(me), 0, Some(value)),
            SIGEV_SIGNAL if valid_sig => (Target::Process(me), signo, Some(value)),
            SIGEV_THREAD_ID if valid_sig => {
                let t = task.kernel.thread(tid).filter(|t| t.tgid() == me).ok_or(Errno::EINVAL)?;
                (Target::Thread(t.tid()), signo, Some(value))
            }
            _ => return Err(Errno::EINVAL),
        }
    };
    let timer = task.kernel.timers().create(clock, target, signo, value);
    let out = i32::try_from(timer.id()).map_err(|_| Errno::EAGAIN)?;
    // A timer whose id the caller never learns is deleted (dropped).
    task.thread.mm().copy_out(a[2], &out.to_le_bytes())?;
    task.thread.group().timers().add_posix(timer);
    Ok(0)
}

/// The time from now until `at` on `clock` (realtime clocks count from
/// the epoch, the others from boot; both are the host's).
fn until(clock: i32, at: Duration) -> Duration {
    let now = if matches!(clock, 0 | 8 | 11) {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
    } else {
        crate::host::monotonic_now()
    };
    // An expired absolute time fires at once (a tiny delay, not "disarm").
    at.checked_sub(now).filter(|d| !d.is_zero()).unwrap_or(Duration::from_nanos(1))
}

fn sys_timer_settime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = timer_id(task, a[0])?;
    if a[1] & !ABSTIME != 0 {
        return Err(Errno::EINVAL);
    }
    let (interval, mut value) = read_pair(task, a[2], 1)?;
    if a[1] & ABSTIME != 0 && !value.is_zero() {
        value = until(task.kernel.timers().clock(id).unwrap_or(0), value);
    }
    let old = task.kernel.timers().set(&task.kernel, id, value, interval).ok_or(Errno::EINVAL)?;
    if a[3] != 0 {
        write_pair(task, a[3], old, 1)?;
    }
    Ok(0)
}

fn sys_timer_gettime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = timer_id(task, a[0])?;
    let s = task.kernel.timers().get(id).ok_or(Errno::EINVAL)?;
    write_pair(task, a[1], s, 1)?;
    Ok(0)
}

fn sys_timer_getoverrun(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = timer_id(task, a[0])?;
    Ok(u64::from(task.kernel.timers().overrun(id).ok_or(Errno::EINVAL)?))
}

fn sys_timer_delete(task: &mut Task, a: [u64; 6]) -> SysResult {
    let id = timer_id(task, a[0])?;
    // Another thread may have deleted it since.
    if !task.thread.group().timers().delete_posix(id) {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

fn timerfd_of(task: &Task, fd: u64) -> Result<std::sync::Arc<crate::fs::timerfd::TimerFd>, Errno> {
    let f = super::args::file(task, fd)?;
    f.ops.clone().into_any().downcast::<crate::fs::timerfd::TimerFd>().map_err(|_| Errno::EINVAL)
}

fn sys_timerfd_create(task: &mut Task, a: [u64; 6]) -> SysResult {
    let clock = int(a[0]);
    let flags = int(a[1]);
    if !matches!(clock, 0 | 1 | 7 | 8 | 9) {
        return Err(Errno::EINVAL);
    }
    if flags & !(libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let k = &task.kernel;
    let nonblock = flags & libc::TFD_NONBLOCK != 0;
    let t = crate::fs::timerfd::TimerFd::new(k.anon_ino(), super::fd::now(), clock);
    let d = k.anon_dentry(b"anon_inode:[timerfd]", t.clone());
    let status = O_RDWR | if nonblock { O_NONBLOCK } else { 0 };
    let f = crate::vfs::FileDescription::new(d, t, status);
    let fd = task.thread.fds().install(f, flags & libc::TFD_CLOEXEC != 0, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_timerfd_settime(task: &mut Task, a: [u64; 6]) -> SysResult {
    const TFD_TIMER_ABSTIME: u64 = 1;
    const TFD_TIMER_CANCEL_ON_SET: u64 = 2;
    let t = timerfd_of(task, a[0])?;
    if a[1] & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let (interval, mut value) = read_pair(task, a[2], 1)?;
    if a[1] & TFD_TIMER_ABSTIME != 0 && !value.is_zero() {
        value = until(t.clock, value);
    }
    let (old_value, old_interval) = t.set(value, interval);
    if a[3] != 0 {
        write_pair(task, a[3], Setting { value: old_value, interval: old_interval }, 1)?;
    }
    Ok(0)
}

fn sys_timerfd_gettime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let t = timerfd_of(task, a[0])?;
    let (value, interval) = t.get();
    write_pair(task, a[1], Setting { value, interval }, 1)?;
    Ok(0)
}
