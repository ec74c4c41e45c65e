//! Scheduling policies: `sched_setscheduler`, `sched_getscheduler`,
//! `sched_setparam`, `sched_getparam`, `sched_setattr`, `sched_getattr`.
//! The host, not the sentry, schedules guest threads, so a policy is
//! recorded per thread and reported (SCHED_RESET_ON_FORK applies on fork),
//! after the checks Linux makes: the policy and its priority range, the
//! `struct sched_attr` size protocol (E2BIG with the kernel's size written
//! back), and the privilege rules of `user_check_sched_setscheduler` —
//! RLIMIT_RTPRIO and RLIMIT_NICE, the caller owning the target, leaving
//! SCHED_IDLE, clearing reset-on-fork, else CAP_SYS_NICE.

use super::args::{int, uint};
use super::common::capable;
use super::{Entries, Support::*};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::sched::{
    SCHED_BATCH, SCHED_DEADLINE, SCHED_FIFO, SCHED_IDLE, SCHED_OTHER, SCHED_RESET_ON_FORK, SCHED_RR,
};
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::auth::caps;
use crate::kernel::thread::SchedPolicy;
use crate::kernel::{Task, Thread};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const RECORDED: &str = "policies SCHED_OTHER, BATCH, IDLE, FIFO and RR are checked as Linux, recorded and reported, \
     not applied (the host schedules the sentry); SCHED_DEADLINE parameters are checked, then EBUSY as when \
     admission control refuses; utilization clamps EOPNOTSUPP (a kernel without CONFIG_UCLAMP_TASK)";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_sched_getscheduler, sys_sched_getscheduler, Partial(RECORDED)),
    (libc::SYS_sched_setscheduler, sys_sched_setscheduler, Partial(RECORDED)),
    (libc::SYS_sched_getparam, sys_sched_getparam, Partial(RECORDED)),
    (libc::SYS_sched_setparam, sys_sched_setparam, Partial(RECORDED)),
    (libc::SYS_sched_setattr, sys_sched_setattr, Partial(RECORDED)),
    (libc::SYS_sched_getattr, sys_sched_getattr, Partial(RECORDED)),
];

const FLAG_RESET_ON_FORK: u64 = 0x01;
const FLAG_KEEP_POLICY: u64 = 0x08;
const FLAG_KEEP_PARAMS: u64 = 0x10;
const FLAG_UTIL_CLAMP: u64 = 0x60;
/// `SCHED_FLAG_ALL`.
const FLAG_ALL: u64 = 0x7f;
/// `SCHED_FLAG_SUGOV`, accepted by the flag check (kernel-internal).
const FLAG_SUGOV: u64 = 0x1000_0000;

/// `SCHED_ATTR_SIZE_VER0` and `sizeof(struct sched_attr)` (VER1).
const ATTR_SIZE_VER0: u32 = 48;
const ATTR_SIZE: u32 = 56;

const RLIMIT_NICE: usize = 13;
const RLIMIT_RTPRIO: usize = 14;

/// `struct sched_attr`, the fields this kernel reads.
#[derive(Default)]
struct Attr {
    policy: i32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

impl Attr {
    /// The struct as sched_getattr writes it: no utilization clamps.
    fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::with_capacity(ATTR_SIZE as usize);
        e.u32(ATTR_SIZE).i32(self.policy).u64(self.flags).i32(self.nice).u32(self.priority);
        e.u64(self.runtime).u64(self.deadline).u64(self.period).u32(0).u32(0);
        e.finish()
    }
}

/// The thread a sched_* call names: pid 0 is the caller; a negative pid
/// is EINVAL, an unknown one ESRCH.
pub(super) fn target(task: &Task, pid: i32) -> Result<Arc<Thread>, Errno> {
    match pid {
        0 => Ok(task.thread.clone()),
        p if p < 0 => Err(Errno::EINVAL),
        p => task.kernel.thread(p).ok_or(Errno::ESRCH),
    }
}

/// `t`'s policy and parameters as `get_params` fills a sched_attr.
fn current(t: &Thread) -> Attr {
    let s = t.attrs().lock().sched;
    let mut a = Attr { policy: s.policy, ..Attr::default() };
    if s.reset_on_fork {
        a.flags |= FLAG_RESET_ON_FORK;
    }
    if s.realtime() {
        a.priority = s.priority;
    } else {
        a.nice = t.nice().load(Ordering::Relaxed);
    }
    a
}

/// `__checkparam_dl`: deadline parameters Linux would accept.
fn deadline_ok(a: &Attr) -> bool {
    const DL_SCALE: u32 = 10;
    const PERIOD_MIN_NS: u64 = 100 * 1000;
    const PERIOD_MAX_NS: u64 = (1 << 22) * 1000;
    if a.flags & FLAG_SUGOV != 0 {
        return true;
    }
    let msb = 1u64 << 63;
    if a.deadline == 0 || a.runtime < (1 << DL_SCALE) || a.deadline & msb != 0 || a.period & msb != 0 {
        return false;
    }
    let period = if a.period == 0 { a.deadline } else { a.period };
    period >= a.deadline && a.deadline >= a.runtime && (PERIOD_MIN_NS..=PERIOD_MAX_NS).contains(&period)
}

/// `is_nice_reduction`: RLIMIT_NICE allows `nice` without privilege.
fn nice_allowed(t: &Thread, nice: i32) -> bool {
    u64::try_from(20 - nice).is_ok_and(|n| n <= t.rlimit(RLIMIT_NICE).cur)
}

/// `user_check_sched_setscheduler`: whether the change needs
/// CAP_SYS_NICE.
fn needs_privilege(task: &Task, t: &Thread, a: &Attr, reset_on_fork: bool) -> bool {
    let now = t.attrs().lock().sched;
    let nice = t.nice().load(Ordering::Relaxed);
    let fair = matches!(a.policy, SCHED_OTHER | SCHED_BATCH);
    if fair && a.nice < nice && !nice_allowed(t, a.nice) {
        return true;
    }
    if matches!(a.policy, SCHED_FIFO | SCHED_RR) {
        let rtprio = t.rlimit(RLIMIT_RTPRIO).cur;
        if a.policy != now.policy && rtprio == 0 {
            return true;
        }
        if a.priority > now.priority && u64::from(a.priority) > rtprio {
            return true;
        }
    }
    if a.policy == SCHED_DEADLINE {
        return true;
    }
    if now.policy == SCHED_IDLE && a.policy != SCHED_IDLE && !nice_allowed(t, nice) {
        return true;
    }
    if !task.thread.creds().same_owner(&t.creds()) {
        return true;
    }
    now.reset_on_fork && !reset_on_fork
}

/// `__sched_setscheduler` for a user caller. A negative policy keeps the
/// current one (sched_setparam, SCHED_FLAG_KEEP_POLICY).
fn set(task: &Task, t: &Thread, mut a: Attr) -> SysResult {
    let reset_on_fork = if a.policy < 0 {
        let now = t.attrs().lock().sched;
        a.policy = now.policy;
        now.reset_on_fork
    } else {
        if !matches!(a.policy, SCHED_OTHER | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE) {
            return Err(Errno::EINVAL);
        }
        a.flags & FLAG_RESET_ON_FORK != 0
    };
    if a.flags & !(FLAG_ALL | FLAG_SUGOV) != 0 || a.priority > 99 {
        return Err(Errno::EINVAL);
    }
    let realtime = matches!(a.policy, SCHED_FIFO | SCHED_RR);
    if (a.policy == SCHED_DEADLINE && !deadline_ok(&a)) || realtime != (a.priority != 0) {
        return Err(Errno::EINVAL);
    }
    if needs_privilege(task, t, &a, reset_on_fork) && !capable(task, caps::CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    if a.flags & FLAG_UTIL_CLAMP != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    if a.policy == SCHED_DEADLINE {
        return Err(Errno::EBUSY);
    }
    let mut attrs = t.attrs().lock();
    if a.flags & FLAG_KEEP_PARAMS != 0 {
        // As Linux: the policy and its parameters stay; only the
        // reset-on-fork flag changes.
        attrs.sched.reset_on_fork = reset_on_fork;
        return Ok(0);
    }
    attrs.sched = SchedPolicy { policy: a.policy, priority: a.priority, reset_on_fork };
    if !realtime {
        t.nice().store(a.nice, Ordering::Relaxed);
    }
    Ok(0)
}

/// Reads `struct sched_param`'s priority.
fn read_priority(task: &Task, addr: u64) -> Result<u32, Errno> {
    let mut raw = [0u8; 4];
    task.thread.mm().copy_in(addr, &mut raw)?;
    Ok(u32::from_le_bytes(raw))
}

/// sched_setscheduler and sched_setparam (`policy` None): the nice value
/// stays.
fn set_param(task: &Task, pid: i32, policy: Option<i32>, param: u64) -> SysResult {
    if param == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = read_priority(task, param)?;
    let t = target(task, pid)?;
    let mut a = Attr { policy: -1, priority, nice: t.nice().load(Ordering::Relaxed), ..Attr::default() };
    if let Some(p) = policy {
        a.policy = p & !SCHED_RESET_ON_FORK;
        if p & SCHED_RESET_ON_FORK != 0 {
            a.flags = FLAG_RESET_ON_FORK;
        }
    }
    set(task, &t, a)
}

fn sys_sched_setscheduler(task: &mut Task, a: [u64; 6]) -> SysResult {
    let policy = int(a[1]);
    if policy < 0 {
        return Err(Errno::EINVAL);
    }
    set_param(task, int(a[0]), Some(policy), a[2])
}

fn sys_sched_setparam(task: &mut Task, a: [u64; 6]) -> SysResult {
    set_param(task, int(a[0]), None, a[1])
}

fn sys_sched_getscheduler(task: &mut Task, a: [u64; 6]) -> SysResult {
    let s = target(task, int(a[0]))?.attrs().lock().sched;
    let flag = if s.reset_on_fork { SCHED_RESET_ON_FORK } else { 0 };
    u64::try_from(s.policy | flag).map_err(|_| Errno::EINVAL)
}

fn sys_sched_getparam(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = int(a[0]);
    if a[1] == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let s = target(task, pid)?.attrs().lock().sched;
    task.thread.mm().copy_out(a[1], &s.priority.to_le_bytes())?;
    Ok(0)
}

/// `sched_copy_attr`: the guest's sched_attr, whose `size` says how much
/// of it there is (0: the first version). A size out of range, or a
/// larger struct with non-zero bytes past ours, is E2BIG after writing
/// our size into the guest's `size`.
fn read_attr(task: &Task, addr: u64) -> Result<Attr, Errno> {
    let mm = task.thread.mm();
    let mut size_raw = [0u8; 4];
    mm.copy_in(addr, &mut size_raw)?;
    let size = match u32::from_le_bytes(size_raw) {
        0 => ATTR_SIZE_VER0,
        s => s,
    };
    let too_big = || mm.copy_out(addr, &ATTR_SIZE.to_le_bytes()).map_or(Errno::EFAULT, |()| Errno::E2BIG);
    if size < ATTR_SIZE_VER0 || u64::from(size) > PAGE_SIZE {
        return Err(too_big());
    }
    let mut raw = vec![0u8; size as usize];
    mm.copy_in(addr, &mut raw)?;
    if raw.len() > ATTR_SIZE as usize && raw[ATTR_SIZE as usize..].iter().any(|&b| b != 0) {
        return Err(too_big());
    }
    raw.resize(raw.len().max(ATTR_SIZE as usize), 0);
    let mut d = Decoder::new(&raw);
    d.u32();
    let mut a = Attr { policy: d.i32(), flags: d.u64(), nice: d.i32(), priority: d.u32(), ..Attr::default() };
    (a.runtime, a.deadline, a.period) = (d.u64(), d.u64(), d.u64());
    if a.flags & FLAG_UTIL_CLAMP != 0 && size < ATTR_SIZE {
        return Err(Errno::EINVAL);
    }
    a.nice = a.nice.clamp(-20, 19);
    Ok(a)
}

fn sys_sched_setattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = int(a[0]);
    if a[1] == 0 || pid < 0 || uint(a[2]) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut attr = read_attr(task, a[1])?;
    if attr.policy < 0 {
        return Err(Errno::EINVAL);
    }
    if attr.flags & FLAG_KEEP_POLICY != 0 {
        attr.policy = -1;
    }
    let t = target(task, pid)?;
    if attr.flags & FLAG_KEEP_PARAMS != 0 {
        let now = current(&t);
        (attr.priority, attr.nice) = (now.priority, now.nice);
    }
    set(task, &t, attr)
}

fn sys_sched_getattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (pid, size) = (int(a[0]), uint(a[2]));
    if a[1] == 0 || pid < 0 || u64::from(size) > PAGE_SIZE || size < ATTR_SIZE_VER0 || uint(a[3]) != 0 {
        return Err(Errno::EINVAL);
    }
    let t = target(task, pid)?;
    let bytes = current(&t).encode();
    let n = size.min(ATTR_SIZE) as usize;
    let mut out = bytes[..n].to_vec();
    out[..4].copy_from_slice(&u32::try_from(n).unwrap_or(ATTR_SIZE).to_le_bytes());
    task.thread.mm().copy_out(a[1], &out)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_layout_matches_linux() {
        let a = Attr { policy: 2, flags: 1, nice: -3, priority: 7, runtime: 8, deadline: 9, period: 10 };
        let b = a.encode();
        assert_eq!(b.len(), 56);
        assert_eq!(&b[..4], &56u32.to_le_bytes());
        assert_eq!(&b[4..8], &2i32.to_le_bytes());
        assert_eq!(&b[16..20], &(-3i32).to_le_bytes());
        assert_eq!(&b[20..24], &7u32.to_le_bytes());
        assert_eq!(&b[40..48], &10u64.to_le_bytes());
    }

    #[test]
    fn deadline_parameters() {
        let ok = Attr {
            policy: SCHED_DEADLINE,
            runtime: 10_000_000,
            deadline: 30_000_000,
            period: 30_000_000,
            ..Attr::default()
        };
        assert!(deadline_ok(&ok));
        assert!(!deadline_ok(&Attr { deadline: 0, ..ok }), "a deadline is needed");
        assert!(!deadline_ok(&Attr { runtime: 40_000_000, ..ok }), "runtime above deadline");
        assert!(!deadline_ok(&Attr { period: 20_000_000, ..ok }), "period below deadline");
        assert!(!deadline_ok(&Attr { runtime: 100, ..ok }), "runtime below 1 µs");
        let short = Attr { runtime: 2000, deadline: 50_000, period: 0, ..ok };
        assert!(!deadline_ok(&short), "period below 100 µs");
    }
}
