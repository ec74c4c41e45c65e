//! The kernel's side of the system call table: the row the syscall layer
//! fills in for every number, and dispatch by number. The kernel never
//! names a handler: the syscall layer registers its table on the Kernel
//! at start-up (gVisor's `RegisterSyscallTable`), so the dependency runs
//! from the handlers to the kernel only.

use super::{ExitStatus, Kernel, Task};
use crate::abi::{Errno, SysResult};

/// The common handler shape: the task and the six raw arguments; its
/// result (a value or an errno) is the guest's rax.
pub(crate) type ValueHandler = fn(&mut Task, [u64; 6]) -> SysResult;

/// The shape of the few handlers that may do more than return a value:
/// end the thread or process, or replace the whole register file.
pub(crate) type ControlHandler = fn(&mut Task, [u64; 6]) -> Result<Outcome, Errno>;

/// What a system call did, beyond an errno, as its handler reports it
/// (gVisor's `SyscallControl`). Dispatch turns it into the task's state in
/// one place; no handler sets that state itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The value goes to rax.
    Value(u64),
    /// The handler installed a whole new register file (execve,
    /// rt_sigreturn); rax is the one it holds.
    RegistersReplaced,
    /// The thread stops running: only it (`exit`), or with its whole
    /// process (exit_group, a fatal signal sent to itself, a corrupt
    /// signal frame).
    Exit { status: ExitStatus, thread_only: bool },
}

/// A handler of either shape.
#[derive(Clone, Copy, Debug)]
pub enum Handler {
    Value(ValueHandler),
    Control(ControlHandler),
}

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

/// Runs the handler of system call `nr` and applies its outcome to the
/// task; the result is what rax gets (before a restart is resolved). A
/// number without a handler fails with ENOSYS, reported once per number.
pub(super) fn dispatch(task: &mut Task, nr: u64, args: [u64; 6]) -> SysResult {
    let table: &'static [Syscall] = task.kernel.syscall_table.get().copied().unwrap_or_default();
    let Some(entry) = usize::try_from(nr).ok().and_then(|n| table.get(n)) else {
        return Err(Errno::ENOSYS);
    };
    match entry.handler {
        Some(Handler::Value(h)) => h(task, args),
        Some(Handler::Control(h)) => h(task, args).map(|outcome| settle(task, outcome)),
        None => {
            task.kernel.report_unimplemented(entry.nr, entry.name, &task.thread);
            Err(Errno::ENOSYS)
        }
    }
}

/// Applies a control handler's outcome to its task; the value rax gets.
/// An exiting thread's rax is never seen by its guest; 0 is what
/// observers and tracers are shown.
fn settle(task: &mut Task, outcome: Outcome) -> u64 {
    match outcome {
        Outcome::Value(v) => v,
        Outcome::RegistersReplaced => task.cpu.regs.rax,
        Outcome::Exit { status, thread_only } => {
            task.stop_running(status, thread_only);
            0
        }
    }
}
