//! Creating processes and threads: fork, vfork and clone. A new process
//! runs on a host thread of its own, which creates (and so traces) the
//! child's address space, or, when it shares its parent's memory
//! (CLONE_VM), takes over a new thread of the parent's address space. A
//! new process may get new mount, UTS and IPC namespaces (the ones the
//! sentry emulates), as with `unshare`.

use super::task::{ExitStatus, Task};
use super::thread::Thread;
use super::thread_group::ThreadGroup;
use crate::abi::sched::{CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWUTS};
use crate::abi::{Errno, SysResult};
use crate::mm::MemoryManager;
use crate::platform::CpuState;
use std::sync::mpsc;
use std::sync::Arc;

pub(crate) use crate::abi::sched::{
    CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_CLEAR_SIGHAND, CLONE_DETACHED, CLONE_FILES, CLONE_FS, CLONE_NEWNS,
    CLONE_PARENT, CLONE_PARENT_SETTID, CLONE_PIDFD, CLONE_SETTLS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD,
    CLONE_VFORK, CLONE_VM,
};

const NAMESPACE_FLAGS: u64 = 0x7e02_0000;
/// The namespaces a new process may get: the ones the sentry emulates.
const EMULATED_NAMESPACES: u64 = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;

/// Whether a new process may have the namespaces `flags` ask for, in the
/// order Linux's `copy_process` and `copy_namespaces` check: EINVAL for
/// a new mount or user namespace with a shared filesystem context, EPERM
/// without CAP_SYS_ADMIN (or for a namespace the sentry does not
/// emulate: network, pid, cgroup, and user, as under Docker's default
/// seccomp profile), EINVAL for a new IPC namespace with shared SysV
/// semaphore undo lists.
pub fn check_namespaces(t: &Thread, flags: u64) -> Result<(), Errno> {
    let ns = flags & NAMESPACE_FLAGS;
    if ns == 0 {
        return Ok(());
    }
    if flags & CLONE_FS != 0 && ns & (CLONE_NEWNS | CLONE_NEWUSER) != 0 {
        return Err(Errno::EINVAL);
    }
    if !t.creds().capable(crate::auth::caps::CAP_SYS_ADMIN) || ns & !EMULATED_NAMESPACES != 0 {
        return Err(Errno::EPERM);
    }
    if flags & CLONE_NEWIPC != 0 && flags & CLONE_SYSVSEM != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// The arguments of clone, decoded.
pub(crate) struct CloneArgs {
    pub flags: u64,
    pub stack: u64,
    pub parent_tid: u64,
    pub child_tid: u64,
    pub tls: u64,
}

/// Makes the parent's pidfd of a new child process (CLONE_PIDFD): the
/// layer above the kernel owns the file type. It runs once the child
/// exists, before clone returns; an error ends the child (SIGKILL) and is
/// clone's.
pub(crate) type PidfdMaker<'a> = &'a mut dyn FnMut(&Arc<ThreadGroup>) -> Result<(), Errno>;

impl CloneArgs {
    /// The child's registers: the caller's, returning 0 from clone, on the
    /// new stack and TLS when given.
    fn child_cpu(&self, parent: &CpuState) -> CpuState {
        let mut cpu = parent.clone();
        cpu.regs.rax = 0;
        cpu.fpu_dirty = true;
        if self.stack != 0 {
            cpu.regs.rsp = self.stack;
        }
        if self.flags & CLONE_SETTLS != 0 {
            cpu.regs.fs_base = self.tls;
        }
        cpu
    }
}

/// A new process's memory: a copy-on-write copy of its parent's, or its
/// parent's own (CLONE_VM), on a new thread of the parent's address space.
enum ChildMemory {
    Copy(crate::mm::manager::ForkImage),
    Shared(Arc<MemoryManager>, crate::platform::ThreadToken),
}

/// Everything the child host thread needs to start.
struct ChildStart {
    tid: i32,
    /// The new process, already in the process table.
    group: Arc<ThreadGroup>,
    memory: Option<ChildMemory>,
    cpu: CpuState,
    parent: Arc<Thread>,
    args: CloneArgs,
}

/// clone/fork/vfork. New threads (CLONE_THREAD) share the caller's
/// memory; new processes get a copy-on-write copy, or share it too with
/// CLONE_VM (vfork, or clone with a stack of the caller's), and share
/// descriptors, filesystem context and handlers as CLONE_FILES, CLONE_FS
/// and CLONE_SIGHAND ask.
pub(crate) fn clone_process(task: &mut Task, args: CloneArgs) -> SysResult {
    clone_with_pidfd(task, args, None)
}

/// `clone_process`, with CLONE_PIDFD's pidfd made by `pidfd`.
pub(crate) fn clone_with_pidfd(task: &mut Task, args: CloneArgs, pidfd: Option<PidfdMaker<'_>>) -> SysResult {
    let f = args.flags;
    if (f & CLONE_PIDFD != 0) != pidfd.is_some() || (f & CLONE_PIDFD != 0 && f & (CLONE_THREAD | CLONE_DETACHED) != 0) {
        return Err(Errno::EINVAL);
    }
    if f & (CLONE_THREAD | CLONE_SIGHAND) != 0 && f & CLONE_VM == 0 {
        return Err(Errno::EINVAL);
    }
    if f & CLONE_THREAD != 0 && f & CLONE_SIGHAND == 0 {
        return Err(Errno::EINVAL);
    }
    // As arch_prctl(ARCH_SET_FS): a TLS base outside user space is EPERM
    // (Linux's set_new_tls), never a register state the host refuses.
    if f & CLONE_SETTLS != 0 && args.tls >= crate::abi::TASK_SIZE_MAX {
        return Err(Errno::EPERM);
    }
    // init has no parent to give a sibling (Linux: SIGNAL_UNKILLABLE).
    if f & CLONE_PARENT != 0 && task.thread.tgid == super::process::INIT_PID {
        return Err(Errno::EINVAL);
    }
    if f & CLONE_THREAD != 0 {
        return clone_thread(task, args);
    }
    check_namespaces(&task.thread, f)?;
    let kernel = task.kernel.clone();
    // Counted until the child is in the thread table, or has failed.
    let slot = kernel.reserve_pid(&task.thread)?;
    let tid = kernel.alloc_tid();
    let ppid = if f & CLONE_PARENT != 0 { kernel.procs.ppid(task.thread.tgid) } else { task.thread.tgid };
    let mm = task.thread.mm();
    let memory = if f & CLONE_VM != 0 {
        let token = mm.space().spawn_thread().map_err(|e| {
            log::warn!("clone: cannot create a stub thread: {e}");
            Errno::EAGAIN
        })?;
        ChildMemory::Shared(mm, token)
    } else {
        ChildMemory::Copy(mm.fork_image()?)
    };
    let cpu = args.child_cpu(&task.cpu);
    if f & CLONE_PARENT_SETTID != 0 {
        let v = tid.to_le_bytes();
        task.thread.mm().copy_out(args.parent_tid, &v)?;
    }
    // A new process: a new group, with its parent's limits.
    let group = task.thread.group().fork(tid);
    // A sibling (CLONE_PARENT) signals its parent as the caller does.
    let exit_signal = if f & CLONE_PARENT != 0 {
        kernel.procs.exit_signal(task.thread.tgid)
    } else {
        i32::try_from(f & 0xff).unwrap_or(libc::SIGCHLD)
    };
    let parent_tid = if f & CLONE_PARENT != 0 { 0 } else { task.thread.tid };
    kernel.procs.add_child(group.clone(), ppid, parent_tid, exit_signal);
    let start = ChildStart { tid, group: group.clone(), memory: Some(memory), cpu, parent: task.thread.clone(), args };
    let (tx, rx) = mpsc::channel();
    let k = kernel.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("task-{tid}"))
        .stack_size(8 << 20)
        .spawn(move || run_child(k, start, tx));
    if spawned.is_err() {
        kernel.procs.remove(tid);
        return Err(Errno::EAGAIN);
    }
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            kernel.procs.remove(tid);
            return Err(e);
        }
        Err(_) => {
            kernel.procs.remove(tid);
            return Err(Errno::EAGAIN);
        }
    }
    drop(slot);
    if let Some(make) = pidfd {
        if let Err(e) = make(&group) {
            kernel.exit_group(tid, ExitStatus::Signal(libc::SIGKILL));
            return Err(e);
        }
    }
    if f & CLONE_VFORK != 0 {
        let me = task.thread.clone();
        kernel.procs.wait_vfork(tid, || {
            me.pending() & super::signal::sigbit(libc::SIGKILL) != 0
                || me.exiting.load(std::sync::atomic::Ordering::SeqCst)
        });
    }
    u64::try_from(tid).map_err(|_| Errno::EAGAIN)
}

fn run_child(kernel: Arc<super::Kernel>, mut start: ChildStart, tx: mpsc::Sender<Result<(), Errno>>) {
    let (thread, token) = match build_child(&kernel, &mut start) {
        Ok(t) => t,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let mut task = match Task::new(kernel.clone(), thread.clone()) {
        Ok(t) => t,
        Err(e) => {
            log::warn!("fork: cannot create a platform context: {e}");
            kernel.remove_thread(&thread);
            let _ = tx.send(Err(Errno::EAGAIN));
            return;
        }
    };
    if let Some(token) = token {
        if let Err(e) = thread.mm().space().adopt_thread(token) {
            log::warn!("clone: cannot take over the stub thread: {e}");
            kernel.remove_thread(&thread);
            let _ = tx.send(Err(Errno::EAGAIN));
            return;
        }
    }
    task.cpu = start.cpu;
    // Recorded before either side runs on (the parent waits for the
    // send); a record the log cannot take fails the fork.
    let (pid, child) = (start.parent.tgid, thread.tgid);
    if kernel.audit_log().is_some_and(|l| l.records_forks())
        && kernel.audit(|| crate::audit::Record::ProcessFork { pid, child }).is_err()
    {
        kernel.remove_thread(&thread);
        let _ = tx.send(Err(Errno::EIO));
        return;
    }
    let _ = tx.send(Ok(()));
    run_to_exit(task);
}

/// Runs a new task's guest code until it exits, then ends its thread.
fn run_to_exit(mut task: Task) {
    let status = match task.run() {
        Ok(s) => s,
        Err(e) => {
            log::error!("task {}: platform failure: {e}", task.thread.tid);
            ExitStatus::Signal(libc::SIGKILL)
        }
    };
    task.finish(status);
}

/// The new process's thread, and the stub thread it is to take over when
/// it shares its parent's memory.
fn build_child(
    kernel: &Arc<super::Kernel>,
    s: &mut ChildStart,
) -> Result<(Arc<Thread>, Option<crate::platform::ThreadToken>), Errno> {
    let f = s.args.flags;
    let (mm, token) = match s.memory.take().ok_or(Errno::EAGAIN)? {
        ChildMemory::Copy(image) => {
            let space = kernel.platform.new_address_space().map_err(|e| {
                log::warn!("fork: cannot create an address space: {e}");
                Errno::EAGAIN
            })?;
            (Arc::new(MemoryManager::from_fork_image(space, image)), None)
        }
        ChildMemory::Shared(mm, token) => (mm, Some(token)),
    };
    if f & CLONE_CHILD_SETTID != 0 {
        mm.copy_out(s.args.child_tid, &s.tid.to_le_bytes())?;
    }
    let p = &s.parent;
    let fs = if f & CLONE_FS != 0 {
        p.fs()
    } else {
        let fs = p.fs().copy();
        if f & CLONE_NEWNS != 0 {
            fs.set_mounts(Arc::new(fs.mounts().copy()));
        }
        Arc::new(fs)
    };
    let sigactions = if f & CLONE_SIGHAND != 0 {
        p.sigactions()
    } else {
        let copy = p.sigactions().copy();
        // clone3's CLONE_CLEAR_SIGHAND: handled signals start at their
        // default, ignored ones stay ignored (as at exec).
        if f & CLONE_CLEAR_SIGHAND != 0 {
            copy.reset_for_exec();
        }
        Arc::new(copy)
    };
    let t = Thread::new(s.tid, s.group.clone(), sigactions, p.creds(), mm, fs);
    *t.comm.lock() = p.comm.lock().clone();
    *t.fds.lock() = if f & CLONE_FILES != 0 { p.fds() } else { Arc::new(p.fds().fork()) };
    *t.exe.lock() = p.exe.lock().clone();
    *t.args.lock() = *p.args.lock();
    *t.auxv.lock() = p.auxv.lock().clone();
    t.nice.store(p.nice.load(std::sync::atomic::Ordering::Relaxed), std::sync::atomic::Ordering::Relaxed);
    t.sigmask.store(p.sigmask(), std::sync::atomic::Ordering::Relaxed);
    *t.altstack.lock() = *p.altstack.lock();
    {
        let mut attrs = p.attrs.lock().clone();
        attrs.pdeathsig = 0;
        inherit_sched(&mut attrs, &t);
        *t.attrs.lock() = attrs;
    }
    t.seccomp.inherit(&p.seccomp);
    *t.namespaces.lock() = p.namespaces.lock().clone();
    if s.args.flags & CLONE_NEWUTS != 0 {
        super::namespaces::unshare_uts(kernel, &t);
    }
    if s.args.flags & CLONE_NEWIPC != 0 {
        super::namespaces::unshare_ipc(&t);
    }
    if s.args.flags & CLONE_CHILD_CLEARTID != 0 {
        t.clear_child_tid.store(s.args.child_tid, std::sync::atomic::Ordering::Relaxed);
    }
    let t = Arc::new(t);
    kernel.add_thread(t.clone());
    super::ptrace::attach_child(kernel, p, &t, s.args.flags);
    Ok((t, token))
}

/// Applies SCHED_RESET_ON_FORK to a child's copy of its parent's
/// attributes and to its nice value (already copied into `t`).
fn inherit_sched(attrs: &mut super::thread::ThreadAttrs, t: &Thread) {
    let nice = t.nice.load(std::sync::atomic::Ordering::Relaxed);
    let (sched, nice) = super::thread::forked_sched(attrs.sched, nice);
    attrs.sched = sched;
    t.nice.store(nice, std::sync::atomic::Ordering::Relaxed);
}

/// A new thread in the caller's thread group: same memory, signal
/// handlers and (with CLONE_FILES, CLONE_FS) descriptors and filesystem
/// context. Its guest code runs on a new stub thread in the same stub,
/// driven by a new host thread.
fn clone_thread(task: &mut Task, args: CloneArgs) -> SysResult {
    let f = args.flags;
    if f & (NAMESPACE_FLAGS | CLONE_PIDFD) != 0 {
        return Err(Errno::EINVAL);
    }
    let kernel = task.kernel.clone();
    let p = task.thread.clone();
    // Counted until the thread is in the thread table, or has failed.
    let _slot = kernel.reserve_pid(&p)?;
    let mm = p.mm();
    let token = mm.space().spawn_thread().map_err(|e| {
        log::warn!("clone: cannot create a stub thread: {e}");
        Errno::EAGAIN
    })?;
    let tid = kernel.alloc_tid();
    let fs = if f & CLONE_FS != 0 { p.fs() } else { Arc::new(p.fs().copy()) };
    // A new thread of the caller's process: its group, its handlers.
    let t = Thread::new(tid, p.group().clone(), p.sigactions(), p.creds(), mm.clone(), fs);
    *t.fds.lock() = if f & CLONE_FILES != 0 { p.fds() } else { Arc::new(p.fds().fork()) };
    *t.comm.lock() = p.comm.lock().clone();
    *t.exe.lock() = p.exe.lock().clone();
    *t.args.lock() = *p.args.lock();
    *t.auxv.lock() = p.auxv.lock().clone();
    t.nice.store(p.nice.load(std::sync::atomic::Ordering::Relaxed), std::sync::atomic::Ordering::Relaxed);
    {
        let mut attrs = p.attrs.lock().clone();
        inherit_sched(&mut attrs, &t);
        *t.attrs.lock() = attrs;
    }
    t.seccomp.inherit(&p.seccomp);
    *t.namespaces.lock() = p.namespaces.lock().clone();
    t.sigmask.store(p.sigmask(), std::sync::atomic::Ordering::Relaxed);
    if f & CLONE_CHILD_CLEARTID != 0 {
        t.clear_child_tid.store(args.child_tid, std::sync::atomic::Ordering::Relaxed);
    }
    t.vfork.store(f & CLONE_VFORK != 0, std::sync::atomic::Ordering::SeqCst);
    let tid_bytes = tid.to_le_bytes();
    if f & CLONE_PARENT_SETTID != 0 {
        mm.copy_out(args.parent_tid, &tid_bytes)?;
    }
    if f & CLONE_CHILD_SETTID != 0 {
        mm.copy_out(args.child_tid, &tid_bytes)?;
    }
    let cpu = args.child_cpu(&task.cpu);
    let t = Arc::new(t);
    kernel.add_thread(t.clone());
    super::ptrace::attach_child(&kernel, &p, &t, f);
    // A TSYNC that raced with this clone reaches the new thread too.
    t.seccomp.catch_up(&p.seccomp);
    // A stop of the process that raced with this clone parks the new
    // thread too.
    if kernel.procs.stopped_by(t.tgid).is_some() {
        t.stop_requested.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    let (tx, rx) = mpsc::channel();
    let (k, thread) = (kernel.clone(), t.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("task-{tid}"))
        .stack_size(8 << 20)
        .spawn(move || run_thread(k, thread, token, cpu, tx));
    let started = spawned.is_ok() && matches!(rx.recv(), Ok(Ok(())));
    if !started {
        kernel.remove_thread(&t);
        return Err(Errno::EAGAIN);
    }
    if f & CLONE_VFORK != 0 {
        // As a vfork child: the caller waits for the new thread's exec
        // (which ends the caller) or exit.
        let me = task.thread.clone();
        kernel.procs.wait_vfork_thread(
            || !t.vfork.load(std::sync::atomic::Ordering::SeqCst),
            || {
                me.pending() & super::signal::sigbit(libc::SIGKILL) != 0
                    || me.exiting.load(std::sync::atomic::Ordering::SeqCst)
            },
        );
    }
    u64::try_from(tid).map_err(|_| Errno::EAGAIN)
}

fn run_thread(
    kernel: Arc<super::Kernel>,
    thread: Arc<Thread>,
    token: crate::platform::ThreadToken,
    cpu: CpuState,
    tx: mpsc::Sender<Result<(), Errno>>,
) {
    let mut task = match Task::new(kernel, thread.clone()) {
        Ok(t) => t,
        Err(e) => {
            log::warn!("clone: cannot create a platform context: {e}");
            let _ = tx.send(Err(Errno::EAGAIN));
            return;
        }
    };
    if let Err(e) = thread.mm().space().adopt_thread(token) {
        log::warn!("clone: cannot take over the stub thread: {e}");
        let _ = tx.send(Err(Errno::EAGAIN));
        return;
    }
    task.cpu = cpu;
    let _ = tx.send(Ok(()));
    run_to_exit(task);
}
