//! Scheduling: nice values (getpriority, setpriority), scheduling
//! policies, CPU affinity, `sched_yield` and `getcpu`. The sentry does not
//! schedule guest threads itself (the host does, with the sentry's own
//! priority), so a nice value is recorded and reported — /proc shows it,
//! children inherit it — and an affinity mask is recorded, within the
//! host's online CPUs; `sched_rr_get_interval` reports the quantum of the
//! recorded policy. Policies are sched_policy.rs's.

use super::args::{int, uint};
use super::common::{capable, find_thread, put_u32};
use super::{Entries, Support::*};
use crate::abi::layout::{Decoder, Layout};
use crate::abi::sched::{SCHED_BATCH, SCHED_DEADLINE, SCHED_FIFO, SCHED_IDLE, SCHED_OTHER, SCHED_RR};
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::{Task, Thread};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const PRIO_PROCESS: i32 = 0;
const PRIO_PGRP: i32 = 1;
const PRIO_USER: i32 = 2;

const NICE_MIN: i32 = -20;
const NICE_MAX: i32 = 19;

const NOT_APPLIED: &str = "nice values are recorded and reported, not applied: the host schedules the sentry";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getpriority, sys_getpriority, Partial(NOT_APPLIED)),
    (libc::SYS_setpriority, sys_setpriority, Partial(NOT_APPLIED)),
    (libc::SYS_sched_get_priority_max, sys_sched_get_priority_max, Full),
    (libc::SYS_sched_get_priority_min, sys_sched_get_priority_min, Full),
    (libc::SYS_sched_getaffinity, sys_sched_getaffinity, Full),
    (libc::SYS_sched_setaffinity, sys_sched_setaffinity, Partial("affinity is recorded, not enforced")),
    (libc::SYS_sched_yield, sys_sched_yield, Full),
    (
        libc::SYS_sched_rr_get_interval,
        sys_sched_rr_get_interval,
        Partial("the host, not the sentry, slices time: 100 ms (RR_TIMESLICE) for a thread whose recorded policy is SCHED_RR, else 0, as Linux reports for a policy without a fixed quantum"),
    ),
    (
        libc::SYS_getcpu,
        sys_getcpu,
        Partial("reports the host CPU of the sentry thread serving the task, and NUMA node 0"),
    ),
];

/// The threads `which` (PRIO_PROCESS, PRIO_PGRP, PRIO_USER) and `who`
/// name; ESRCH if none.
pub(super) fn targets(task: &Task, which: i32, who: i32) -> Result<Vec<Arc<Thread>>, Errno> {
    let k = &task.kernel;
    let found: Vec<Arc<Thread>> = match which {
        PRIO_PROCESS if who == 0 => vec![task.thread.clone()],
        PRIO_PROCESS => k.thread(who).into_iter().collect(),
        PRIO_PGRP => {
            let pgid = if who == 0 { k.procs().pgid(task.thread.tgid()).unwrap_or(task.thread.tgid()) } else { who };
            k.procs().group_members(pgid).iter().flat_map(|&pid| k.group(pid)).collect()
        }
        PRIO_USER => {
            let uid = if who == 0 { task.thread.creds().uid } else { u32::try_from(who).map_err(|_| Errno::ESRCH)? };
            k.threads().into_iter().filter(|t| t.creds().uid == uid).collect()
        }
        _ => return Err(Errno::EINVAL),
    };
    if found.is_empty() {
        Err(Errno::ESRCH)
    } else {
        Ok(found)
    }
}

/// getpriority(2): the highest priority (lowest nice) among the targets,
/// as the system call returns it: 20 - nice, in 1..=40.
fn sys_getpriority(task: &mut Task, a: [u64; 6]) -> SysResult {
    let threads = targets(task, int(a[0]), int(a[1]))?;
    let nice = threads.iter().map(|t| t.nice().load(Ordering::Relaxed)).min().unwrap_or(0);
    u64::try_from(20 - nice).map_err(|_| Errno::EINVAL)
}

/// setpriority(2): sets the nice value (clamped to -20..=19) of every
/// target. Raising priority needs CAP_SYS_NICE; changing another user's
/// threads needs their uid to match our effective one.
fn sys_setpriority(task: &mut Task, a: [u64; 6]) -> SysResult {
    let threads = targets(task, int(a[0]), int(a[1]))?;
    let nice = int(a[2]).clamp(NICE_MIN, NICE_MAX);
    let me = task.thread.creds();
    let privileged = me.capable(caps::CAP_SYS_NICE);
    for t in &threads {
        if !privileged && !me.same_owner(&t.creds()) {
            return Err(Errno::EPERM);
        }
        if !privileged && nice < t.nice().load(Ordering::Relaxed) {
            return Err(Errno::EACCES);
        }
    }
    for t in threads {
        t.nice().store(nice, Ordering::Relaxed);
    }
    Ok(0)
}

/// sched_rr_get_interval(2): the target is checked as Linux (EINVAL for
/// a negative pid, ESRCH for none), then the quantum is written: 0, see
/// the table's note.
fn sys_sched_rr_get_interval(task: &mut Task, a: [u64; 6]) -> SysResult {
    let t = super::sched_policy::target(task, int(a[0]))?;
    // Linux's RR_TIMESLICE (100 ms) for SCHED_RR.
    let nsec = if t.attrs().lock().sched.policy == SCHED_RR { 100_000_000 } else { 0 };
    task.thread.mm().copy_out(a[1], &Timespec { sec: 0, nsec }.encode())?;
    Ok(0)
}

fn priority_range(policy: i32) -> Result<(u64, u64), Errno> {
    match policy {
        SCHED_FIFO | SCHED_RR => Ok((1, 99)),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

fn sys_sched_get_priority_max(_: &mut Task, a: [u64; 6]) -> SysResult {
    priority_range(int(a[0])).map(|(_, max)| max)
}

fn sys_sched_get_priority_min(_: &mut Task, a: [u64; 6]) -> SysResult {
    priority_range(int(a[0])).map(|(min, _)| min)
}

/// The guest-visible bytes of a CPU mask, `len` long.
fn mask_to_bytes(mask: &[u64], len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = mask.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.resize(len, 0);
    out
}

/// `a & b`, as long as `a`.
fn and_masks(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().enumerate().map(|(i, w)| w & b.get(i).copied().unwrap_or(0)).collect()
}

fn sys_sched_getaffinity(task: &mut Task, a: [u64; 6]) -> SysResult {
    let len = uint(a[1]) as usize;
    let host = crate::host::cpus();
    if len.saturating_mul(8) < host.nr_cpu_ids || len % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let target = find_thread(task, int(a[0]))?;
    let mask = match &target.attrs().lock().cpu_affinity {
        Some(m) => and_masks(&host.online, m),
        None => host.online.clone(),
    };
    let n = len.min(host.mask_bytes());
    task.thread.mm().copy_out(a[2], &mask_to_bytes(&mask, n))?;
    Ok(n as u64)
}

fn sys_sched_setaffinity(task: &mut Task, a: [u64; 6]) -> SysResult {
    let host = crate::host::cpus();
    let size = host.mask_bytes();
    let mut buf = vec![0u8; size];
    let n = (uint(a[1]) as usize).min(size);
    task.thread.mm().copy_in(a[2], &mut buf[..n])?;
    let target = find_thread(task, int(a[0]))?;
    if !task.thread.creds().same_owner(&target.creds()) && !capable(task, caps::CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    let mut d = Decoder::new(&buf);
    let requested: Vec<u64> = (0..size / 8).map(|_| d.u64()).collect();
    let mask = and_masks(&requested, &host.online);
    if mask.iter().all(|&w| w == 0) {
        return Err(Errno::EINVAL);
    }
    target.attrs().lock().cpu_affinity = Some(mask);
    Ok(0)
}

fn sys_sched_yield(_: &mut Task, _: [u64; 6]) -> SysResult {
    std::thread::yield_now();
    Ok(0)
}

fn sys_getcpu(task: &mut Task, a: [u64; 6]) -> SysResult {
    let cpu = crate::host::current_cpu();
    let mut ok = true;
    if a[0] != 0 {
        ok &= put_u32(task, a[0], cpu).is_ok();
    }
    if a[1] != 0 {
        ok &= put_u32(task, a[1], 0).is_ok();
    }
    if ok {
        Ok(0)
    } else {
        Err(Errno::EFAULT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_masks() {
        assert_eq!(mask_to_bytes(&[0x0102], 8), vec![2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(mask_to_bytes(&[1, 1], 8), vec![1, 0, 0, 0, 0, 0, 0, 0], "cut to the caller's length");
        assert_eq!(and_masks(&[0b110, 5], &[0b011]), vec![0b010, 0]);
    }
}
