//! System calls: resource limits. The kernel checks and applies a new
//! limit (`kernel::limits`); these decode `struct rlimit` and find the
//! process.

use super::args::{int, uint};
use super::common::{capable, find_thread, read_array};
use super::{Entries, Support};
use crate::abi::layout::Decoder;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::limits::{self, Rlimit, RLIMIT_NLIMITS};
use crate::kernel::rlimit_cpu;
use crate::kernel::{Task, Thread};
use std::sync::Arc;

const RECORDED: &str = "limits are recorded; only those the sentry consults (NOFILE, STACK, CPU, FSIZE) take effect; NOFILE never above the sandbox's --nofile ceiling";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getrlimit, sys_getrlimit, Support::Full),
    (libc::SYS_setrlimit, sys_setrlimit, Support::Partial(RECORDED)),
    (libc::SYS_prlimit64, sys_prlimit64, Support::Partial(RECORDED)),
];

fn encode_rlimit(l: Rlimit) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&l.cur.to_le_bytes());
    b[8..].copy_from_slice(&l.max.to_le_bytes());
    b
}

fn decode_rlimit(b: &[u8; 16]) -> Rlimit {
    let mut d = Decoder::new(b);
    Rlimit { cur: d.u64(), max: d.u64() }
}

fn rlimit_index(resource: u64) -> Result<usize, Errno> {
    usize::try_from(uint(resource)).ok().filter(|&r| r < RLIMIT_NLIMITS).ok_or(Errno::EINVAL)
}

/// Reads and optionally replaces a limit of `target`'s process; returns
/// the old limit.
fn do_prlimit(task: &Task, target: &Arc<Thread>, resource: u64, new: Option<Rlimit>) -> Result<Rlimit, Errno> {
    let res = rlimit_index(resource)?;
    // The sandbox's ceiling holds for the privileged too, as fs.nr_open.
    if res == limits::RLIMIT_NOFILE && new.is_some_and(|n| n.cur <= n.max && n.max > task.kernel.nofile().get()) {
        return Err(Errno::EPERM);
    }
    let old = limits::prlimit(target, res, new, capable(task, caps::CAP_SYS_RESOURCE))?;
    if let Some(n) = new.filter(|_| res == rlimit_cpu::RLIMIT_CPU) {
        task.kernel.watch_rlimit_cpu(n);
    }
    Ok(old)
}

fn sys_getrlimit(task: &mut Task, a: [u64; 6]) -> SysResult {
    let old = do_prlimit(task, &task.thread, a[0], None)?;
    task.thread.mm().copy_out(a[1], &encode_rlimit(old))?;
    Ok(0)
}

fn sys_setrlimit(task: &mut Task, a: [u64; 6]) -> SysResult {
    rlimit_index(a[0])?;
    let new = decode_rlimit(&read_array(task, a[1])?);
    do_prlimit(task, &task.thread, a[0], Some(new))?;
    Ok(0)
}

fn sys_prlimit64(task: &mut Task, a: [u64; 6]) -> SysResult {
    let new = if a[2] != 0 { Some(decode_rlimit(&read_array(task, a[2])?)) } else { None };
    let target = find_thread(task, int(a[0]))?;
    if !Arc::ptr_eq(&target, &task.thread) && !task.thread.creds().may_prlimit(&target.creds()) {
        return Err(Errno::EPERM);
    }
    let old = do_prlimit(task, &target, a[1], new)?;
    if a[3] != 0 {
        task.thread.mm().copy_out(a[3], &encode_rlimit(old))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlimit_arguments() {
        assert_eq!(rlimit_index(16), Err(Errno::EINVAL));
        assert_eq!(rlimit_index(1 << 32 | 3), Ok(3));
        let l = Rlimit { cur: 1024, max: 4096 };
        assert_eq!(decode_rlimit(&encode_rlimit(l)), l);
    }
}
