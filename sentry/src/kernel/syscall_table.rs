//! The kernel's side of the system call table: the row the syscall layer
//! fills in for every number, and dispatch by number. The kernel never
//! names a handler: the syscall layer registers its table on the Kernel
//! at start-up (gVisor's `RegisterSyscallTable`), so the dependency runs
//! from the handlers to the kernel only.

use super::{Kernel, Task};
use crate::abi::{Errno, SysResult};

/// A system call handler: the task and the six raw arguments. Its result
/// is the guest's rax; a handler that replaced the whole register file
/// (execve, rt_sigreturn) returns the value the new file holds in rax, as
/// Linux's do.
pub(crate) type Handler = fn(&mut Task, [u64; 6]) -> SysResult;

/// How completely a system call is implemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Full,
    /// Works for the common cases; the note says what is missing.
    Partial(&'static str),
    /// Returns ENOSYS (or the noted errno); the note says why.
    Unimplemented(&'static str),
}

/// One row of the table: system call `nr`.
#[derive(Clone, Copy, Debug)]
pub struct Syscall {
    pub nr: usize,
    /// Empty for a number Linux never assigned.
    pub name: &'static str,
    pub handler: Option<Handler>,
    pub support: Support,
}

impl Kernel {
    /// Installs the system call table, indexed by number, that every task
    /// of this kernel dispatches through. Done once, at start-up; a second
    /// table is refused.
    pub fn register_syscall_table(&self, table: &'static [Syscall]) {
        if self.syscall_table.set(table).is_err() {
            log::warn!("a system call table is registered already; the new one is ignored");
        }
    }
}

/// Runs the handler of system call `nr`. A number without one fails with
/// ENOSYS, reported once per number.
pub(super) fn dispatch(task: &mut Task, nr: u64, args: [u64; 6]) -> SysResult {
    let table: &'static [Syscall] = task.kernel.syscall_table.get().copied().unwrap_or_default();
    let Some(entry) = usize::try_from(nr).ok().and_then(|n| table.get(n)) else {
        return Err(Errno::ENOSYS);
    };
    match entry.handler {
        Some(h) => h(task, args),
        None => {
            task.kernel.report_unimplemented(entry.nr, entry.name, &task.thread);
            Err(Errno::ENOSYS)
        }
    }
}
