//! Helpers the process-attribute families (ids, limits, scheduling,
//! prctl, capabilities …) share: small copies to and from guest memory,
//! the thread a pid argument names, signed return values.

use crate::abi::{Errno, SysResult};
use crate::kernel::{Task, Thread};
use std::sync::Arc;

/// A signed value as the raw return register.
pub(super) fn ret(v: i32) -> u64 {
    u64::from_ne_bytes(i64::from(v).to_ne_bytes())
}

/// Whether capability `cap` is in the task's effective set.
pub(super) fn capable(task: &Task, cap: u32) -> bool {
    task.thread.creds().capable(cap)
}

pub(super) fn read_array<const N: usize>(task: &Task, addr: u64) -> Result<[u8; N], Errno> {
    let mut b = [0u8; N];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(b)
}

pub(super) fn put_u32(task: &Task, addr: u64, v: u32) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

pub(super) fn put_i32(task: &Task, addr: u64, v: i32) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

pub(super) fn put_u64(task: &Task, addr: u64, v: u64) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

/// Writes three ids to three guest pointers, stopping at the first fault.
pub(super) fn put_three(task: &Task, ptrs: [u64; 3], ids: [u32; 3]) -> SysResult {
    for (p, id) in ptrs.into_iter().zip(ids) {
        put_u32(task, p, id)?;
    }
    Ok(0)
}

/// The thread `pid` names (0 is the caller), or ESRCH.
pub(super) fn find_thread(task: &Task, pid: i32) -> Result<Arc<Thread>, Errno> {
    if pid == 0 || pid == task.thread.tid() {
        return Ok(task.thread.clone());
    }
    task.kernel.thread(pid).ok_or(Errno::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_return_values() {
        assert_eq!(ret(7), 7);
        assert_eq!(ret(-1), u64::MAX);
    }
}
