//! Hook points before and after every system call (gVisor's syscall
//! points): observers such as `--strace` and the audit log attach to the
//! Kernel and see each call's arguments, result and the calling task's
//! identity. Nothing attached costs one predictable branch per call.

use super::syscall_table::dispatch;
use super::{Kernel, Task};
use crate::abi::SysResult;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Who made a system call, as an observer records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskIdentity {
    pub tid: i32,
    pub tgid: i32,
    pub uid: u32,
    pub gid: u32,
    pub euid: u32,
    pub egid: u32,
    /// The thread's name (`/proc/PID/comm`).
    pub comm: Vec<u8>,
}

impl TaskIdentity {
    /// The identity of `task` now (an execve or setuid changes it between
    /// a call's entry and its exit).
    pub fn of(task: &Task) -> TaskIdentity {
        let t = &task.thread;
        let (uid, gid, euid, egid) = {
            let c = t.creds.read();
            (c.uid, c.gid, c.euid, c.egid)
        };
        TaskIdentity { tid: t.tid, tgid: t.tgid, uid, gid, euid, egid, comm: t.comm.lock().clone() }
    }
}

/// Sees every system call the kernel dispatches, from any task's thread.
pub trait SyscallObserver: Send + Sync {
    /// Before the handler runs.
    fn enter(&self, _who: &TaskIdentity, _nr: u64, _args: &[u64; 6]) {}
    /// After it returned, with its result as the handler gave it (a
    /// restart code not yet turned into EINTR or a restart).
    fn exit(&self, _who: &TaskIdentity, _nr: u64, _args: &[u64; 6], _result: &SysResult) {}
}

/// The observers attached to a kernel.
#[derive(Default)]
pub(super) struct Observers {
    /// Whether `list` is non-empty: the only thing a call reads when
    /// nothing is attached.
    any: AtomicBool,
    list: RwLock<Arc<[Arc<dyn SyscallObserver>]>>,
}

impl Observers {
    pub(super) fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }
}

impl Kernel {
    /// Attaches `observer` to every system call from now on.
    pub fn attach_syscall_observer(&self, observer: Arc<dyn SyscallObserver>) {
        let mut list = self.syscall_observers.list.write();
        *list = list.iter().cloned().chain([observer]).collect();
        self.syscall_observers.any.store(true, Ordering::Relaxed);
    }
}

/// Dispatches system call `nr` between its observers' entry and exit hooks.
pub(super) fn dispatch_observed(task: &mut Task, nr: u64, args: [u64; 6]) -> SysResult {
    let observers = task.kernel.syscall_observers.list.read().clone();
    let who = TaskIdentity::of(task);
    for o in observers.iter() {
        o.enter(&who, nr, &args);
    }
    let result = dispatch(task, nr, args);
    // Taken again: the call may have changed it (execve's comm, setuid).
    let who = TaskIdentity::of(task);
    for o in observers.iter() {
        o.exit(&who, nr, &args, &result);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Errno;
    use crate::auth::Credentials;
    use crate::kernel::task::errno_to_rax;
    use crate::kernel::{ExitStatus, FsContext, Handler, Outcome, Support, Syscall, Thread};
    use crate::mm::{MemoryFile, MemoryManager};
    use crate::testing::{self, Idle};
    use parking_lot::Mutex;

    const ADD_ONE: u64 = 0;
    const REPLACE_REGISTERS: u64 = 1;
    const MISSING: u64 = 2;
    const EXIT_THREAD: u64 = 3;
    const EXIT_GROUP: u64 = 4;
    const OUT_OF_TABLE: u64 = 5;
    /// What `replace_registers` leaves in rax: a value that would read as
    /// -EINTR were it taken for an errno.
    const RESTORED_RAX: u64 = u64::MAX - 3;

    fn add_one(_: &mut Task, a: [u64; 6]) -> SysResult {
        Ok(a[0] + 1)
    }

    /// As rt_sigreturn does: a whole new register file, rax included.
    fn replace_registers(task: &mut Task, _: [u64; 6]) -> Result<Outcome, Errno> {
        task.cpu.regs.rip = 0x5000;
        task.cpu.regs.rax = RESTORED_RAX;
        Ok(Outcome::RegistersReplaced)
    }

    /// As exit does.
    fn exit_thread(_: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
        Ok(Outcome::Exit { status: ExitStatus::Code(i32::try_from(a[0]).unwrap()), thread_only: true })
    }

    /// As a fatal signal sent to the caller's own process does.
    fn exit_group(_: &mut Task, _: [u64; 6]) -> Result<Outcome, Errno> {
        Ok(Outcome::Exit { status: ExitStatus::Signal(libc::SIGTERM), thread_only: false })
    }

    static TABLE: [Syscall; 5] = [
        Syscall { nr: 0, name: "add_one", handler: Some(Handler::Value(add_one)), support: Support::Full },
        Syscall {
            nr: 1,
            name: "replace_registers",
            handler: Some(Handler::Control(replace_registers)),
            support: Support::Full,
        },
        Syscall { nr: 2, name: "missing", handler: None, support: Support::Unimplemented("test") },
        Syscall { nr: 3, name: "exit_thread", handler: Some(Handler::Control(exit_thread)), support: Support::Full },
        Syscall { nr: 4, name: "exit_group", handler: Some(Handler::Control(exit_group)), support: Support::Full },
    ];

    /// A task of a kernel dispatching through `TABLE`, its guest stopped
    /// at a `syscall` instruction.
    fn task() -> Task {
        let memory = Arc::new(MemoryFile::new(1 << 20).unwrap());
        let kernel = testing::kernel(memory.clone());
        kernel.register_syscall_table(&TABLE);
        let mm = Arc::new(MemoryManager::new(memory, Arc::new(Idle), 1 << 30));
        let fs = Arc::new(FsContext::new(kernel.mounts.clone(), kernel.mounts.root(), kernel.mounts.root()));
        let thread = Arc::new(Thread::new_init(7, Credentials::new(1000, 100), mm, fs));
        *thread.comm.lock() = b"prog".to_vec();
        let mut task = Task::new(kernel, thread).unwrap();
        task.cpu.regs.rip = 0x1002;
        task
    }

    fn call(task: &mut Task, nr: u64, args: [u64; 6]) {
        task.cpu.regs.orig_rax = nr;
        [task.cpu.regs.rdi, task.cpu.regs.rsi, task.cpu.regs.rdx] = [args[0], args[1], args[2]];
        [task.cpu.regs.r10, task.cpu.regs.r8, task.cpu.regs.r9] = [args[3], args[4], args[5]];
        task.syscall();
    }

    #[derive(Debug, PartialEq)]
    enum Seen {
        Enter(TaskIdentity, u64, [u64; 6]),
        Exit(TaskIdentity, u64, [u64; 6], SysResult),
    }

    #[derive(Default)]
    struct Recorder(Mutex<Vec<Seen>>);

    impl SyscallObserver for Recorder {
        fn enter(&self, who: &TaskIdentity, nr: u64, args: &[u64; 6]) {
            self.0.lock().push(Seen::Enter(who.clone(), nr, *args));
        }
        fn exit(&self, who: &TaskIdentity, nr: u64, args: &[u64; 6], result: &SysResult) {
            self.0.lock().push(Seen::Exit(who.clone(), nr, *args, *result));
        }
    }

    #[test]
    fn dispatch_puts_the_result_in_rax() {
        let mut task = task();
        call(&mut task, ADD_ONE, [41, 0, 0, 0, 0, 0]);
        assert_eq!((task.cpu.regs.rax, task.cpu.regs.rip), (42, 0x1002));
        call(&mut task, MISSING, [0; 6]);
        assert_eq!(task.cpu.regs.rax, errno_to_rax(Errno::ENOSYS));
        call(&mut task, OUT_OF_TABLE, [0; 6]);
        assert_eq!(task.cpu.regs.rax, errno_to_rax(Errno::ENOSYS));
    }

    #[test]
    fn a_replaced_register_file_keeps_the_rax_its_handler_set() {
        let mut task = task();
        call(&mut task, REPLACE_REGISTERS, [0; 6]);
        assert_eq!((task.cpu.regs.rax, task.cpu.regs.rip), (RESTORED_RAX, 0x5000));
    }

    #[test]
    fn an_exit_outcome_stops_the_thread_and_reads_as_zero() {
        let mut task = task();
        let recorder = Arc::new(Recorder::default());
        task.kernel.attach_syscall_observer(recorder.clone());
        assert_eq!((task.exit, task.thread_only), (None, false));
        let args = [3, 0, 0, 0, 0, 0];
        call(&mut task, EXIT_THREAD, args);
        assert_eq!((task.exit, task.thread_only), (Some(ExitStatus::Code(3)), true));
        assert_eq!(task.cpu.regs.rax, 0);
        let who = TaskIdentity::of(&task);
        let last = recorder.0.lock().pop();
        assert_eq!(last, Some(Seen::Exit(who, EXIT_THREAD, args, Ok(0))), "--strace shows exit's result as before");

        let mut task = self::task();
        call(&mut task, EXIT_GROUP, [0; 6]);
        assert_eq!((task.exit, task.thread_only), (Some(ExitStatus::Signal(libc::SIGTERM)), false));
    }

    #[test]
    fn observers_see_entry_and_exit_with_identity_arguments_and_result() {
        let mut task = task();
        let recorder = Arc::new(Recorder::default());
        task.kernel.attach_syscall_observer(recorder.clone());
        let second = Arc::new(Recorder::default());
        task.kernel.attach_syscall_observer(second.clone());
        let args = [41, 2, 3, 4, 5, 6];
        call(&mut task, ADD_ONE, args);
        call(&mut task, MISSING, args);
        let who = TaskIdentity { tid: 7, tgid: 7, uid: 1000, gid: 100, euid: 1000, egid: 100, comm: b"prog".to_vec() };
        let expected = vec![
            Seen::Enter(who.clone(), ADD_ONE, args),
            Seen::Exit(who.clone(), ADD_ONE, args, Ok(42)),
            Seen::Enter(who.clone(), MISSING, args),
            Seen::Exit(who, MISSING, args, Err(Errno::ENOSYS)),
        ];
        assert_eq!(*recorder.0.lock(), expected);
        assert_eq!(*second.0.lock(), expected);
        assert_eq!(task.cpu.regs.rax, errno_to_rax(Errno::ENOSYS));
    }
}
