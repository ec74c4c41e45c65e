//! System call: `membarrier`. Each guest thread runs as a host thread (of
//! a stub process, or a vCPU thread), so a barrier on the guest's threads
//! is a barrier on host threads: every barrier command is served by the
//! host's `MEMBARRIER_CMD_GLOBAL` (the one host membarrier the sentry's
//! seccomp filter allows), which makes every running thread on every CPU
//! pass a full memory barrier — a superset of what the expedited commands
//! promise, at the cost of an RCU grace period (milliseconds, where
//! Linux's expedited commands take microseconds); a single-threaded
//! caller's private barrier returns at once, as on Linux. Registrations are kept
//! per address space, as Linux keeps them per mm: a fork's copy keeps
//! them, an exec starts unregistered, and an unregistered private
//! expedited barrier is EPERM.

use super::args::{int, uint};
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::host::membarrier::{global_barrier, have_global_barrier};
use crate::kernel::Task;
use std::sync::atomic::Ordering;

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_membarrier,
    sys_membarrier,
    Support::Partial(
        "QUERY, GLOBAL, GLOBAL_EXPEDITED, PRIVATE_EXPEDITED, their REGISTER_* and GET_REGISTRATIONS, each \
         served by the host's MEMBARRIER_CMD_GLOBAL (milliseconds, not microseconds); SYNC_CORE and RSEQ \
         variants are not offered (QUERY omits them; EINVAL)",
    ),
)];

const CMD_QUERY: i32 = 0;
const CMD_GLOBAL: i32 = 1;
const CMD_GLOBAL_EXPEDITED: i32 = 1 << 1;
const CMD_REGISTER_GLOBAL_EXPEDITED: i32 = 1 << 2;
const CMD_PRIVATE_EXPEDITED: i32 = 1 << 3;
const CMD_REGISTER_PRIVATE_EXPEDITED: i32 = 1 << 4;
const CMD_PRIVATE_EXPEDITED_RSEQ: i32 = 1 << 7;
const CMD_GET_REGISTRATIONS: i32 = 1 << 9;
/// `MEMBARRIER_CMD_FLAG_CPU`, valid only with the RSEQ command.
const FLAG_CPU: u32 = 1;

/// The commands QUERY reports when the host has the global barrier.
const OFFERED: i32 = CMD_GLOBAL
    | CMD_GLOBAL_EXPEDITED
    | CMD_REGISTER_GLOBAL_EXPEDITED
    | CMD_PRIVATE_EXPEDITED
    | CMD_REGISTER_PRIVATE_EXPEDITED
    | CMD_GET_REGISTRATIONS;

fn barrier() -> SysResult {
    global_barrier().map(|()| 0).map_err(Errno)
}

fn sys_membarrier(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (cmd, flags) = (int(a[0]), uint(a[1]));
    // Flags are checked before the command, as Linux does.
    let flags_ok = if cmd == CMD_PRIVATE_EXPEDITED_RSEQ { flags & !FLAG_CPU == 0 } else { flags == 0 };
    if !flags_ok {
        return Err(Errno::EINVAL);
    }
    if !have_global_barrier() {
        // As a kernel without membarrier support: nothing offered.
        return if cmd == CMD_QUERY { Ok(0) } else { Err(Errno::EINVAL) };
    }
    let registered = &task.thread.mm().membarrier_registrations;
    let reg = |bit: i32| u32::try_from(bit).unwrap_or(0);
    match cmd {
        CMD_QUERY => Ok(u64::try_from(OFFERED).unwrap_or(0)),
        // A global expedited barrier reaches the registered processes
        // only; the caller need not be one of them.
        CMD_GLOBAL | CMD_GLOBAL_EXPEDITED => barrier(),
        CMD_PRIVATE_EXPEDITED => {
            if registered.load(Ordering::Acquire) & reg(CMD_REGISTER_PRIVATE_EXPEDITED) == 0 {
                return Err(Errno::EPERM);
            }
            // As Linux: with no other thread on the address space (a
            // process sharing memory without being a thread does not
            // exist in the sentry) there is nothing to order.
            if task.thread.group().thread_count() == 1 {
                return Ok(0);
            }
            barrier()
        }
        CMD_REGISTER_GLOBAL_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED => {
            registered.fetch_or(reg(cmd), Ordering::AcqRel);
            Ok(0)
        }
        CMD_GET_REGISTRATIONS => Ok(u64::from(registered.load(Ordering::Acquire))),
        _ => Err(Errno::EINVAL),
    }
}
