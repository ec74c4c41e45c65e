//! System calls: locking memory — mlock, mlock2, munlock, mlockall,
//! munlockall. Locks are accounted against RLIMIT_MEMLOCK and shown as
//! VmLck, and locked pages are populated (counted against the sandbox's
//! memory limit); the host is not asked to pin them.

use super::mmap::vm_limits;
use super::{Entries, Support::*};
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::kernel::Task;
use crate::mm::{Lock, LockAll};

const NOT_PINNED: &str = "locks are accounted (RLIMIT_MEMLOCK, VmLck, EBUSY/EINVAL of msync and madvise) and locked pages populated, but not pinned in host memory";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_mlock, sys_mlock, Partial(NOT_PINNED)),
    (libc::SYS_mlock2, sys_mlock2, Partial(NOT_PINNED)),
    (libc::SYS_munlock, sys_munlock, Full),
    (libc::SYS_mlockall, sys_mlockall, Partial(NOT_PINNED)),
    (libc::SYS_munlockall, sys_munlockall, Full),
];

const MLOCK_ONFAULT: u64 = 1;
const MCL_CURRENT: u64 = 1;
const MCL_FUTURE: u64 = 2;
const MCL_ONFAULT: u64 = 4;

/// The page-aligned start and the length of `len` bytes at `addr`,
/// rounded out to whole pages with Linux's wrapping arithmetic.
fn lock_range(addr: u64, len: u64) -> (u64, u64) {
    let offset = addr % PAGE_SIZE;
    let len = len.wrapping_add(offset).wrapping_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1);
    (addr - offset, len)
}

fn lock(task: &Task, a: [u64; 6], lock: Lock) -> SysResult {
    let (start, len) = lock_range(a[0], a[1]);
    let limits = vm_limits(task);
    task.thread.mm().mlock(start, len, lock, &limits)?;
    Ok(0)
}

fn sys_mlock(task: &mut Task, a: [u64; 6]) -> SysResult {
    lock(task, a, Lock::Locked)
}

/// mlock2(2): mlock(2) with flags; MLOCK_ONFAULT is the only one.
fn sys_mlock2(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    lock(task, a, if a[2] & MLOCK_ONFAULT != 0 { Lock::OnFault } else { Lock::Locked })
}

fn sys_munlock(task: &mut Task, a: [u64; 6]) -> SysResult {
    lock(task, a, Lock::None)
}

/// mlockall(2): some flag, known ones, and not MCL_ONFAULT alone.
fn sys_mlockall(task: &mut Task, a: [u64; 6]) -> SysResult {
    let flags = a[0];
    if flags == 0 || flags & !(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0 || flags == MCL_ONFAULT {
        return Err(Errno::EINVAL);
    }
    let how = LockAll {
        current: flags & MCL_CURRENT != 0,
        future: flags & MCL_FUTURE != 0,
        on_fault: flags & MCL_ONFAULT != 0,
    };
    let limits = vm_limits(task);
    task.thread.mm().mlockall(how, &limits)?;
    Ok(0)
}

fn sys_munlockall(task: &mut Task, _a: [u64; 6]) -> SysResult {
    let how = LockAll { current: false, future: false, on_fault: false };
    task.thread.mm().mlockall(how, &crate::mm::VmLimits::NONE)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_out_and_wrap_as_linux() {
        assert_eq!(lock_range(0x1001, 1), (0x1000, 0x1000));
        assert_eq!(lock_range(0x1000, 0), (0x1000, 0));
        assert_eq!(lock_range(0x1000, 0x1001), (0x1000, 0x2000));
        assert_eq!(lock_range(0x1000, u64::MAX - 100), (0x1000, 0), "wraps to nothing");
    }
}
