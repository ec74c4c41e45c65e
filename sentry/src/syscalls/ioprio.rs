//! System calls: `ioprio_get`, `ioprio_set`. A thread's I/O priority is
//! recorded (children inherit it) and reported; the sentry's I/O is not
//! scheduled by it. As Linux: the class RT needs CAP_SYS_NICE or
//! CAP_SYS_ADMIN, class NONE takes no level, an unknown class or `which`
//! is EINVAL; changing another user's threads needs CAP_SYS_NICE; a
//! process group or user with no thread is ESRCH. IOPRIO_WHO_PROCESS
//! reads the value as set (0 until set); the group and user forms report
//! the best priority among their threads, a thread with none counting as
//! the class and level its scheduling policy and nice value imply.

use super::args::int;
use super::common::capable;
use super::sched::targets;
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::{Task, Thread};
use std::sync::atomic::Ordering;

const NOT_APPLIED: &str = "recorded, inherited and reported as Linux; the sentry's I/O is not scheduled by it";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_ioprio_set, sys_ioprio_set, Support::Partial(NOT_APPLIED)),
    (libc::SYS_ioprio_get, sys_ioprio_get, Support::Partial(NOT_APPLIED)),
];

const CLASS_NONE: u32 = 0;
const CLASS_RT: u32 = 1;
const CLASS_BE: u32 = 2;
const CLASS_IDLE: u32 = 3;
const CLASS_SHIFT: u32 = 13;
/// The level bits of the data (the rest are hints).
const LEVEL_MASK: u32 = 0x7;

const WHO_PROCESS: i32 = 1;
const WHO_USER: i32 = 3;

/// `ioprio_check_cap`: whether the caller may set `ioprio`.
fn check(task: &Task, ioprio: u32) -> Result<u16, Errno> {
    let class = (ioprio >> CLASS_SHIFT) & 0x7;
    let level = ioprio & LEVEL_MASK;
    match class {
        CLASS_RT if !capable(task, caps::CAP_SYS_NICE) && !capable(task, caps::CAP_SYS_ADMIN) => {
            return Err(Errno::EPERM)
        }
        CLASS_RT | CLASS_BE | CLASS_IDLE => {}
        CLASS_NONE if level == 0 => {}
        _ => return Err(Errno::EINVAL),
    }
    u16::try_from(ioprio).map_err(|_| Errno::EINVAL)
}

/// The `ioprio_set`/`ioprio_get` targets, as getpriority's: the
/// IOPRIO_WHO_* numbers (PROCESS, PGRP, USER) are PRIO_* plus one.
fn who(task: &Task, which: i32, who: i32) -> Result<Vec<std::sync::Arc<Thread>>, Errno> {
    if !(WHO_PROCESS..=WHO_USER).contains(&which) {
        return Err(Errno::EINVAL);
    }
    targets(task, which - WHO_PROCESS, who)
}

fn sys_ioprio_set(task: &mut Task, a: [u64; 6]) -> SysResult {
    let ioprio = check(task, u32::try_from(a[2] & 0xffff_ffff).unwrap_or(u32::MAX))?;
    let threads = who(task, int(a[0]), int(a[1]))?;
    let me = task.thread.creds();
    for t in threads {
        let theirs = t.creds();
        if theirs.uid != me.euid && theirs.uid != me.uid && !capable(task, caps::CAP_SYS_NICE) {
            return Err(Errno::EPERM);
        }
        t.attrs().lock().ioprio = ioprio;
    }
    Ok(0)
}

/// A thread's priority with class NONE replaced by what its policy and
/// nice value imply (`__get_task_ioprio`).
fn effective(t: &Thread) -> u32 {
    let (prio, sched) = {
        let a = t.attrs().lock();
        (u32::from(a.ioprio), a.sched)
    };
    if prio >> CLASS_SHIFT != CLASS_NONE {
        return prio;
    }
    let class = if sched.policy == 5 {
        CLASS_IDLE
    } else if sched.realtime() {
        CLASS_RT
    } else {
        CLASS_BE
    };
    let level = u32::try_from((t.nice().load(Ordering::Relaxed) + 20) / 5).unwrap_or(4);
    class << CLASS_SHIFT | level
}

fn sys_ioprio_get(task: &mut Task, a: [u64; 6]) -> SysResult {
    let which = int(a[0]);
    let threads = who(task, which, int(a[1]))?;
    let prio = if which == WHO_PROCESS {
        threads.first().map(|t| u32::from(t.attrs().lock().ioprio))
    } else {
        threads.iter().map(|t| effective(t)).min()
    };
    prio.map(u64::from).ok_or(Errno::ESRCH)
}
