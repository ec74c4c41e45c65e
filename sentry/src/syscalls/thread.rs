//! System calls: a thread's and its process's ids, and the thread's
//! bookkeeping addresses (the tid to clear at exit, the robust futex
//! list, restartable sequences).

use super::args::int;
use super::common::{find_thread, put_u64, ret};
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use std::sync::atomic::Ordering;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getpid, sys_getpid, Support::Full),
    (libc::SYS_gettid, sys_gettid, Support::Full),
    (libc::SYS_getppid, sys_getppid, Support::Full),
    (libc::SYS_set_tid_address, sys_set_tid_address, Support::Full),
    (libc::SYS_set_robust_list, sys_set_robust_list, Support::Full),
    (libc::SYS_get_robust_list, sys_get_robust_list, Support::Full),
    (libc::SYS_rseq, sys_rseq, Support::Unimplemented("restartable sequences are not supported; glibc falls back")),
];

/// `sizeof(struct robust_list_head)`.
const ROBUST_LIST_HEAD_LEN: u64 = 24;

fn sys_getpid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.thread.tgid()))
}

fn sys_gettid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.thread.tid()))
}

fn sys_getppid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.kernel.procs().ppid(task.thread.tgid())))
}

fn sys_set_tid_address(task: &mut Task, a: [u64; 6]) -> SysResult {
    task.thread.clear_child_tid().store(a[0], Ordering::Relaxed);
    Ok(ret(task.thread.tid()))
}

fn sys_set_robust_list(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[1] != ROBUST_LIST_HEAD_LEN {
        return Err(Errno::EINVAL);
    }
    *task.thread.robust_list().lock() = (a[0], a[1]);
    Ok(0)
}

fn sys_get_robust_list(task: &mut Task, a: [u64; 6]) -> SysResult {
    let target = find_thread(task, int(a[0]))?;
    if target.tgid() != task.thread.tgid() {
        let dumpable = target.group().dumpable() != 0;
        if !task.thread.creds().may_read_process(&target.creds(), dumpable) {
            return Err(Errno::EPERM);
        }
    }
    let head = target.robust_list().lock().0;
    put_u64(task, a[2], ROBUST_LIST_HEAD_LEN)?;
    put_u64(task, a[1], head)?;
    Ok(0)
}

fn sys_rseq(_: &mut Task, _: [u64; 6]) -> SysResult {
    Err(Errno::ENOSYS)
}
