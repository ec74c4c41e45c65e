//! A task: one guest thread run by one host thread. The loop switches into
//! the guest until it makes a system call or faults, handles that, and
//! repeats until the thread exits.

use super::futex::FutexKey;
use super::siginfo;
use super::signal::{sigbit, SA_RESTART};
use super::signal_frame::{self, SigInfo};
use super::thread::{self, Thread};
use super::Kernel;
use super::{syscall_hooks, syscall_table};
use crate::abi::Errno;
use crate::mm::Segv;
use crate::platform::{Context, CpuState, Event, Interrupter, PlatformError};
use crate::waiter;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Faults on an already mapped page tolerated in a row before the access
/// is taken as forbidden.
const MAX_SPURIOUS_FAULTS: u32 = 3;
/// How long a process that ran out of memory waits for the OOM victim's
/// memory to come back before it retries anyway.
const OOM_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// How a thread group ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    /// The `wait` status word.
    pub fn wait_status(self) -> i32 {
        match self {
            ExitStatus::Code(c) => (c & 0xff) << 8,
            ExitStatus::Signal(s) => s & 0x7f,
        }
    }
}

pub struct Task {
    pub kernel: Arc<Kernel>,
    pub thread: Arc<Thread>,
    pub cpu: CpuState,
    ctx: Box<dyn Context>,
    /// Set when the thread must stop running: the whole thread group
    /// exits with this status, unless `thread_only`. The kernel sets it
    /// (signal delivery, faults, seccomp, a system call's outcome), never
    /// a handler.
    pub(super) exit: Option<ExitStatus>,
    /// `exit` ends only this thread (the exit system call).
    pub(super) thread_only: bool,
    /// Faults in a row that found their page already mapped.
    spurious_faults: u32,
    /// The process's continue count when a stop signal was last taken.
    pub stop_continues: u64,
    /// An interrupted sleep's deadline, kept for its restart: (the
    /// return address of its syscall instruction, its number, the
    /// deadline).
    restart_deadline: Option<(u64, u64, std::time::Instant)>,
    /// The deadline the system call being serviced restarts with.
    resumed_deadline: Option<std::time::Instant>,
}

impl Task {
    /// A task for `thread`, run by the calling host thread.
    pub fn new(kernel: Arc<Kernel>, thread: Arc<Thread>) -> Result<Task, PlatformError> {
        let ctx = kernel.platform.new_context()?;
        *thread.interrupter.lock() = Some(ctx.interrupter());
        let cpu = CpuState::new(kernel.platform.fpu_template());
        Ok(Task {
            kernel,
            thread,
            cpu,
            ctx,
            exit: None,
            thread_only: false,
            spurious_faults: 0,
            stop_continues: 0,
            restart_deadline: None,
            resumed_deadline: None,
        })
    }

    /// Runs the guest until it exits.
    pub fn run(&mut self) -> Result<ExitStatus, PlatformError> {
        let load = self.kernel.load.clone();
        let _ = self.thread.load.set(load.clone());
        load.thread_runs(true);
        thread::set_current(Some(self.thread.clone()));
        self.thread.cpu.start();
        let result = self.run_loop();
        thread::set_current(None);
        load.thread_runs(false);
        result
    }

    fn run_loop(&mut self) -> Result<ExitStatus, PlatformError> {
        if self.thread.ptraced.load(Ordering::SeqCst) {
            // An auto-attached child stops before its first instruction.
            self.deliver_pending();
            super::ptrace::interrupt_stop(self);
        }
        loop {
            let mm = self.thread.mm();
            mm.unmap_stale();
            let space = mm.space().clone();
            drop(mm);
            let (start, stub_start) = (std::time::Instant::now(), space.cpu_time());
            self.thread.cpu.run_started(start, stub_start);
            let event = self.ctx.switch(&space, &mut self.cpu)?;
            let stub = stub_start.and_then(|a| space.cpu_time().map(|b| b.saturating_sub(a)));
            self.thread.cpu.charge_user(start.elapsed(), stub);
            match event {
                Event::Syscall => self.syscall(),
                Event::Fault { addr, .. } => match self.thread.mm().fault(addr) {
                    Ok(true) => self.spurious_faults = 0,
                    // Another thread fixed the page first; retry. A fault
                    // that keeps recurring on a page mapped with every access
                    // its area allows is an access the area forbids.
                    Ok(false) if self.spurious_faults < MAX_SPURIOUS_FAULTS => self.spurious_faults += 1,
                    Err(Segv::OutOfMemory) => self.out_of_memory(),
                    Err(Segv::Bus) => {
                        self.spurious_faults = 0;
                        log::debug!("task {}: SIGBUS at {addr:#x}: its filesystem is full", self.thread.tid);
                        self.deliver_fault(SigInfo::fault(libc::SIGBUS, libc::BUS_ADRERR, addr));
                    }
                    result => {
                        self.spurious_faults = 0;
                        let code = if result == Err(Segv::MapErr) { 1 } else { 2 };
                        log::debug!("task {}: SIGSEGV at {addr:#x}, rip {:#x}", self.thread.tid, self.cpu.regs.rip);
                        self.deliver_fault(SigInfo::fault(libc::SIGSEGV, code, addr));
                    }
                },
                Event::Exception { signo, code, addr } => {
                    if signo == libc::SIGTRAP {
                        super::ptrace::end_step(self);
                    }
                    log::debug!(
                        "task {}: exception signal {signo} code {code} addr {addr:#x} rip {:#x}",
                        self.thread.tid,
                        self.cpu.regs.rip
                    );
                    self.deliver_fault(SigInfo::fault(signo, code, addr));
                }
                Event::Interrupted => {}
                Event::CompatSyscall => {
                    // i386 numbers mean other calls: never read them as
                    // x86-64 ones.
                    log::debug!("task {}: 32-bit system call {} refused", self.thread.tid, self.cpu.regs.orig_rax);
                    self.cpu.regs.rax = errno_to_rax(Errno::ENOSYS);
                }
                Event::BadState => {
                    log::debug!("task {}: register state refused by the host", self.thread.tid);
                    self.kernel.exit_group(self.thread.tgid, ExitStatus::Signal(libc::SIGSEGV));
                }
                Event::Killed => {
                    log::warn!("the host killed process {}'s stub: the process dies of SIGKILL", self.thread.tgid);
                    self.kernel.exit_group(self.thread.tgid, ExitStatus::Signal(libc::SIGKILL));
                }
            }
            if self.exit.is_none() {
                if let Some(status) = self.kernel.procs.group_exit(self.thread.tgid) {
                    self.exit = Some(status);
                } else if self.thread.exiting.load(Ordering::SeqCst) {
                    // Another thread of the process execs.
                    self.exit = Some(ExitStatus::Code(0));
                    self.thread_only = true;
                }
            }
            if self.exit.is_none() {
                self.deliver_pending();
                super::ptrace::interrupt_stop(self);
            }
            // A temporary mask (rt_sigsuspend, ppoll …) is undone only after
            // delivery ran under it, as Linux's restore_saved_sigmask: a
            // signal it let through is acted on (an ignored one dropped, a
            // fatal one fatal) before the original mask blocks it again. A
            // handler's frame took the original mask already.
            if let Some(mask) = self.thread.saved_sigmask.lock().take() {
                self.thread.sigmask.store(mask, Ordering::SeqCst);
            }
            if self.exit.is_none()
                && self.thread.stop_requested.load(Ordering::Relaxed)
                && self.thread.stop_requested.swap(false, Ordering::SeqCst)
            {
                self.job_control_stop();
                self.deliver_pending();
            }
            if let Some(status) = self.exit {
                if self.thread.ptraced.load(Ordering::SeqCst) {
                    let msg = u64::try_from(status.wait_status()).unwrap_or_default();
                    super::ptrace::event(self, super::ptrace::EVENT_EXIT, super::ptrace::O_TRACEEXIT, msg);
                }
                return Ok(status);
            }
        }
    }

    /// Job control: parked until SIGCONT, SIGKILL or the process's exit;
    /// then pending signals are acted on. A tracee's group-stop is a
    /// ptrace-stop its tracer ends; a tracer taking hold of the parked
    /// thread turns its stop into one at once (Linux's JOBCTL_TRAP_STOP at
    /// attach: strace seizes a program that stopped itself).
    fn job_control_stop(&mut self) {
        let t = self.thread.clone();
        loop {
            let sig = self.kernel.procs.stopped_by(t.tgid).unwrap_or(libc::SIGSTOP);
            let was_traced = t.ptraced.load(Ordering::SeqCst);
            if was_traced
                && !matches!(
                    super::ptrace::stop(self, super::ptrace::StopKind::Group(sig), None),
                    super::ptrace::Outcome::NotTraced
                )
            {
                return;
            }
            let ends = || t.pending() & sigbit(libc::SIGKILL) != 0 || t.exiting.load(Ordering::SeqCst);
            self.kernel
                .procs
                .wait_while_stopped(t.tgid, || ends() || (!was_traced && t.ptraced.load(Ordering::SeqCst)));
            // Woken by an attach: the stop goes on, as a ptrace-stop (or
            // parked again if the tracer already let go).
            let stopped =
                self.kernel.procs.stopped_by(t.tgid).is_some() && self.kernel.procs.group_exit(t.tgid).is_none();
            if !stopped || ends() {
                return;
            }
        }
    }

    /// Acts on the lowest pending, unblocked signal (SIGKILL cannot be
    /// blocked): runs its handler or its default action.
    fn deliver_pending(&mut self) {
        let pending = self.thread.pending();
        let deliverable = pending & (!self.thread.sigmask() | sigbit(libc::SIGKILL) | sigbit(libc::SIGSTOP));
        if deliverable == 0 {
            return;
        }
        let bit = deliverable & deliverable.wrapping_neg();
        if bit & crate::kernel::signal::STOP_SIGNALS != 0 {
            // A SIGCONT sent after this point cancels the stop.
            self.stop_continues = self.kernel.procs.continues(self.thread.tgid);
        }
        let Some(info) = self.thread.take_any(bit) else { return };
        // A tracee's tracer sees the signal first and decides.
        let Some(info) = super::ptrace::signal_stop(self, info) else { return };
        let sig = info.signo();
        if sig != libc::SIGKILL && self.thread.sigmask() & sigbit(sig) != 0 {
            // The tracer put a blocked signal in its place: it waits.
            self.thread.queue_signal(info);
            return;
        }
        signal_frame::deliver(self, &info, false);
    }

    /// A synchronous fault's signal: forced on the thread (fatal when
    /// blocked or ignored), after its tracer, if any, let it through.
    fn deliver_fault(&mut self, info: SigInfo) {
        let sig = info.signo();
        if let Some(info) = super::ptrace::signal_stop(self, info) {
            let forced = info.signo() == sig;
            signal_frame::deliver(self, &info, forced);
        }
    }

    /// The handle that interrupts this task's guest code.
    pub fn interrupter(&self) -> Arc<dyn Interrupter> {
        self.ctx.interrupter()
    }

    /// Ends this thread after `run`: an exit of the whole group is passed
    /// on to the other threads; the thread's CLONE_CHILD_CLEARTID word is
    /// cleared and woken (pthread_join waits on it); the last thread out
    /// ends the process, whose descriptors close (pipe peers see EOF) and
    /// which becomes a zombie for its parent.
    pub fn finish(&mut self, status: ExitStatus) {
        let k = self.kernel.clone();
        let tgid = self.thread.tgid;
        if !self.thread_only {
            k.exit_group(tgid, status);
        }
        *self.thread.interrupter.lock() = None;
        self.thread.cpu.finish();
        // Locks it held on its robust list are released to their waiters.
        let robust_head = self.thread.robust_list.lock().0;
        super::robust::exit_robust_list(&self.thread.mm(), &k.futexes, self.thread.tid, robust_head);
        super::ptrace::thread_exited(&k, &self.thread, status);
        self.thread.release_vfork_waiter(&k);
        let last = k.remove_thread(&self.thread);
        self.thread.group().thread_left().notify(crate::abi::poll::POLLIN | crate::abi::poll::POLLRDNORM);
        if last {
            super::ptrace::tracer_exited(&k, tgid);
        } else {
            k.procs.thread_exited(tgid, self.thread.tid);
        }
        // The thread is gone from its group before a joiner can return.
        let ctid = self.thread.clear_child_tid.load(Ordering::Relaxed);
        if ctid != 0 {
            let mm = self.thread.mm();
            if mm.copy_out(ctid, &0u32.to_le_bytes()).is_ok() {
                k.futexes.wake(FutexKey::of(&mm, ctid), 1, u32::MAX);
            }
        }
        if last {
            // The descriptors close unless another process shares the
            // table (CLONE_FILES); the last one out closes them.
            let fds = std::mem::replace(&mut *self.thread.fds.lock(), Arc::new(crate::vfs::FdTable::new()));
            if Arc::strong_count(&fds) == 1 {
                for f in fds.clear() {
                    f.closed_by(tgid);
                }
            }
            k.record_locks.release(super::record_lock::Owner::Process(tgid), None);
            let ipc = super::namespaces::ipc_ns(&k, &self.thread);
            ipc.process_exited(tgid);
            // Its SysV shared memory attachments go now, unless another
            // process (a vfork parent) shares the address space; the rest
            // of the address space goes when the last reference does.
            let mm = self.thread.mm();
            if Arc::strong_count(&mm) == 2 {
                ipc.shm.detached_by(mm.shm_detach_all(), tgid);
            }
            self.thread.group().timers().exit();
            // A session leader's exit takes its controlling terminal away
            // from the session (SIGHUP to the foreground group).
            if k.procs.sid(tgid) == Some(tgid) {
                k.session_ended(tgid);
            }
            let status = k.procs.group_exit(tgid).unwrap_or(status);
            // Before the parent can learn of it (and act on it).
            k.package_exit(tgid);
            let _ = k.audit(|| crate::audit::Record::ProcessExit { pid: tgid, outcome: status.into() });
            let uid = self.thread.creds().uid;
            let mut told = Vec::new();
            let moved = k.procs.exit(tgid, status, |parent, exit_signal, moved| {
                // As Linux's exit_notify, with the zombies: the adopted dead
                // children's news to their new parent first, then our own
                // parent's SIGCHLD.
                for child in moved {
                    if let Some(st) = child.zombie {
                        told.extend(k.queue_exit_signal(child.pid, child.new_parent, libc::SIGCHLD, uid, st));
                    }
                }
                told.extend(k.queue_exit_signal(tgid, parent, exit_signal, uid, status));
                k.thread(parent).is_some_and(|p| super::signal::reaps_children(&p))
            });
            for child in moved {
                match (child.zombie, k.thread(child.pid)) {
                    // A dead child's new parent was told above.
                    (Some(_), _) => {}
                    // A live one gets its parent-death signal, from us.
                    (None, Some(t)) => {
                        let sig = t.attrs.lock().pdeathsig;
                        if sig != 0 {
                            let info = siginfo::SigInfo::user(sig, siginfo::SI_USER, tgid, uid);
                            k.signal_process_info(child.pid, info);
                        }
                    }
                    (None, None) => {}
                }
            }
            for parent in told {
                k.signal_queued(&parent);
            }
        }
        // The stub thread goes with the thread, unless the address space
        // goes too: it does when no other process shares it (CLONE_VM).
        let mm = self.thread.mm();
        if !last || Arc::strong_count(&mm) > 2 {
            mm.space().release_thread();
        }
    }

    /// Makes the thread stop running once the current event is handled:
    /// the whole group exits with `status`, unless `thread_only`.
    pub(super) fn stop_running(&mut self, status: ExitStatus, thread_only: bool) {
        self.exit = Some(status);
        self.thread_only = thread_only;
    }

    /// The deadline of the sleep this system call restarts, if it is one.
    pub fn restarted_deadline(&mut self) -> Option<std::time::Instant> {
        self.resumed_deadline.take()
    }

    /// A fault found no memory left: the process holding the most is
    /// killed, as Linux's OOM killer does. When that is another process,
    /// this one waits (bounded) for the victim to be gone and then retries
    /// the access, so one shortage does not cost two processes.
    fn out_of_memory(&mut self) {
        let k = self.kernel.clone();
        let now = std::time::Instant::now();
        // A victim whose memory is still going away is waited for, not
        // joined by another: its threads leave the thread table before its
        // address space is dropped, and a second choice in that window
        // would take a process that did nothing wrong.
        let pending = k.oom_pending.lock().clone().filter(|(mm, at)| mm.strong_count() > 0 && now < *at + OOM_WAIT);
        let (mm, killed_at) = match pending {
            Some(p) => p,
            None => {
                let victim = k.oom_victim().unwrap_or(self.thread.tgid);
                let target = k.thread(victim);
                let comm = target.as_ref().map(|t| String::from_utf8_lossy(&t.comm.lock()).into_owned());
                log::warn!("out of memory: killed process {victim} ({})", comm.unwrap_or_default());
                if let Some(t) = &target {
                    k.oom_killing(t, t.mm().resident_bytes());
                }
                let mm = target.map(|t| Arc::downgrade(&t.mm()));
                k.exit_group(victim, ExitStatus::Signal(libc::SIGKILL));
                // Pending even when the victim is this process: until its
                // memory is back, a fault elsewhere (its parent woken by
                // the death) must wait for it, not take a second victim.
                if let Some(mm) = &mm {
                    *k.oom_pending.lock() = Some((mm.clone(), now));
                }
                let Some(mm) = mm.filter(|_| victim != self.thread.tgid) else { return };
                (mm, now)
            }
        };
        // Interrupted or out of time, the fault is retried all the same.
        let _ = waiter::until_ready(k.memory.released(), waiter::ALL, Some(killed_at + OOM_WAIT), || {
            if mm.strong_count() > 0 {
                Err(Errno::EAGAIN)
            } else {
                Ok(())
            }
        });
    }

    /// Keeps `deadline` for the restart of the sleep being interrupted.
    pub fn keep_deadline_for_restart(&mut self, deadline: std::time::Instant) {
        self.restart_deadline = Some((self.cpu.regs.rip, self.cpu.regs.orig_rax, deadline));
    }

    /// Services the system call the guest stopped at and puts its result
    /// in rax (or restarts it).
    pub(super) fn syscall(&mut self) {
        let traced = self.thread.ptraced.load(Ordering::SeqCst);
        let stops = traced && super::ptrace::of(&self.kernel).syscall_stops(self.thread.tid);
        if stops {
            // As Linux's syscall entry: rax reads -ENOSYS at the stop; the
            // tracer may change the number (-1 skips the call) and args.
            self.cpu.regs.rax = errno_to_rax(Errno::ENOSYS);
            if matches!(
                super::ptrace::stop(self, super::ptrace::StopKind::SyscallEnter, None),
                super::ptrace::Outcome::Killed
            ) {
                return;
            }
            if self.cpu.regs.orig_rax == u64::MAX {
                self.syscall_exit_stop();
                return;
            }
        }
        let kept_deadline = self.restart_deadline.take();
        self.thread.interrupted.store(false, Ordering::SeqCst);
        if self.thread.seccomp.mode() != super::seccomp::MODE_DISABLED && !super::seccomp::permits(self) {
            // Decided by the policy (ERRNO, TRAP, a skip at a tracer's
            // seccomp stop): a tracer still sees the call's exit, as in
            // Linux, unless the thread dies of it; no exec or fork event,
            // the call did not run.
            if traced && self.exit.is_none() {
                let (nr, args) = (self.cpu.regs.orig_rax, self.cpu.syscall_args());
                self.ptrace_after_syscall(nr, &args, Err(Errno::ENOSYS));
            }
            return;
        }
        // Read after the policy ran: a tracer's PTRACE_EVENT_SECCOMP stop
        // may have changed the call.
        let nr = self.cpu.regs.orig_rax;
        let args = self.cpu.syscall_args();
        // A kept deadline belongs to the restart of the same instruction.
        self.resumed_deadline = match kept_deadline {
            Some((rip, n, deadline)) if rip == self.cpu.regs.rip && n == nr => Some(deadline),
            _ => None,
        };
        let result = if self.kernel.syscall_observers.any() {
            syscall_hooks::dispatch_observed(self, nr, args)
        } else {
            syscall_table::dispatch(self, nr, args)
        };
        if result == Err(Errno::EMFILE) {
            self.kernel.descriptors_refused(&self.thread);
        }
        self.cpu.regs.rax = match result {
            Ok(v) => v,
            Err(e) if e.is_restart() => self.restart_or_eintr(e),
            Err(e) => errno_to_rax(e),
        };
        // exit and exit_group do not return: no exit stop, as in Linux
        // (strace prints their result as `?`, and checks it).
        if traced && self.exit.is_none() {
            self.ptrace_after_syscall(nr, &args, result);
        }
    }

    /// A tracee's events at the end of a system call: exec and fork
    /// events, then the syscall-exit stop, where the tracer may change the
    /// result.
    fn ptrace_after_syscall(&mut self, nr: u64, args: &[u64; 6], result: Result<u64, Errno>) {
        use super::ptrace;
        use crate::abi::sched::CLONE_VFORK;
        let nr = i64::try_from(nr).unwrap_or(-1);
        match (nr, result) {
            (libc::SYS_execve | libc::SYS_execveat, Ok(_)) => ptrace::exec_done(self, self.thread.tid),
            (libc::SYS_fork, Ok(child)) => ptrace::clone_done(self, 17, child),
            (libc::SYS_vfork, Ok(child)) => ptrace::clone_done(self, CLONE_VFORK | 17, child),
            (libc::SYS_clone, Ok(child)) => ptrace::clone_done(self, args[0], child),
            (libc::SYS_clone3, Ok(child)) => {
                let mut raw = [0u8; 8];
                let flags = self.thread.mm().copy_in(args[0], &mut raw).map(|()| u64::from_le_bytes(raw));
                // The exit signal is the struct's fourth word.
                let mut sig = [0u8; 8];
                let exit_signal = self.thread.mm().copy_in(args[0] + 32, &mut sig).map(|()| u64::from_le_bytes(sig));
                ptrace::clone_done(self, flags.unwrap_or(0) | exit_signal.unwrap_or(0), child);
            }
            _ => {}
        }
        if ptrace::of(&self.kernel).syscall_stops(self.thread.tid) {
            self.syscall_exit_stop();
        }
        // A step over a system call ends after it, as Linux's.
        if ptrace::end_step(self) {
            self.deliver_fault(ptrace::step_trap(self.cpu.regs.rip));
        }
    }

    fn syscall_exit_stop(&mut self) {
        super::ptrace::stop(self, super::ptrace::StopKind::SyscallExit, None);
    }

    /// An interrupted system call: it ends with EINTR if the signal about
    /// to be delivered runs a handler (unless SA_RESTART allows ERESTARTSYS
    /// to restart); otherwise it restarts: the guest re-executes the
    /// `syscall` instruction.
    pub(super) fn restart_or_eintr(&mut self, e: Errno) -> u64 {
        let deliverable = self.thread.pending() & !self.thread.sigmask();
        let handler = (deliverable != 0)
            .then(|| usize::try_from(deliverable.trailing_zeros() + 1).unwrap_or(1))
            .map(|sig| self.thread.sigactions().swap(sig, None))
            .filter(|a| a.handler > 1);
        match handler {
            Some(a) if e == Errno::ERESTARTNOHAND || a.flags & SA_RESTART == 0 => {
                // Not restarted: a later call starts afresh.
                self.restart_deadline = None;
                errno_to_rax(Errno::EINTR)
            }
            _ => {
                self.cpu.regs.rip -= 2;
                self.cpu.regs.orig_rax
            }
        }
    }

    /// Installs a fresh register file (after execve, whose result, 0,
    /// is then the new file's rax).
    pub fn reset_registers(&mut self, entry: u64, sp: u64) {
        self.cpu = CpuState::new(self.kernel.platform.fpu_template());
        self.cpu.regs.rip = entry;
        self.cpu.regs.rsp = sp;
    }
}

/// The value of rax for a failed system call.
pub(crate) fn errno_to_rax(e: Errno) -> u64 {
    u64::try_from(e.0).map_or(u64::MAX, |v| v.wrapping_neg())
}
