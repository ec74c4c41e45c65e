//! System calls: process groups and sessions. The kernel's process table
//! keeps them; these name the processes and report its answers.

use super::args::int;
use super::common::{find_thread, ret};
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;

const PGRP: &str = "setpgid on a child that already execed is allowed (Linux says EACCES)";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getpgrp, sys_getpgrp, Support::Full),
    (libc::SYS_getpgid, sys_getpgid, Support::Full),
    (libc::SYS_getsid, sys_getsid, Support::Full),
    (libc::SYS_setpgid, sys_setpgid, Support::Partial(PGRP)),
    (libc::SYS_setsid, sys_setsid, Support::Partial(PGRP)),
];

fn sys_getpgrp(task: &mut Task, _: [u64; 6]) -> SysResult {
    let me = task.thread.tgid();
    Ok(ret(task.kernel.procs().pgid(me).unwrap_or(me)))
}

fn sys_getpgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = find_thread(task, int(a[0]))?.tgid();
    task.kernel.procs().pgid(pid).map(ret).ok_or(Errno::ESRCH)
}

fn sys_getsid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = find_thread(task, int(a[0]))?.tgid();
    task.kernel.procs().sid(pid).map(ret).ok_or(Errno::ESRCH)
}

fn sys_setpgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pgid = int(a[1]);
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = task.thread.tgid();
    let pid = match int(a[0]) {
        0 => me,
        p => p,
    };
    let pid = match find_thread(task, pid) {
        Ok(target) => target.tgid(),
        // A child that is exiting or a zombie is still in its group.
        Err(_) if task.kernel.procs().exists(pid) => pid,
        Err(e) => return Err(e),
    };
    if pid != me && task.kernel.procs().ppid(pid) != me {
        return Err(Errno::ESRCH);
    }
    task.kernel.procs().set_pgid(pid, if pgid == 0 { pid } else { pgid })?;
    Ok(0)
}

fn sys_setsid(task: &mut Task, _: [u64; 6]) -> SysResult {
    task.kernel.procs().set_sid(task.thread.tgid()).map(ret)
}
