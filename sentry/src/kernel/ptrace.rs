//! Guest ptrace, emulated entirely by the sentry: one guest process traces
//! another of the same sandbox. Nothing here traces a host process; the
//! tracee's registers are the `CpuState` its task holds, its memory the
//! MemoryManager's.
//!
//! A tracee enters a ptrace-stop on its own host thread (`stop`): it
//! leaves a copy of its registers in the relation's record, wakes its
//! tracer's `wait` and sleeps until the tracer resumes it (the registers,
//! maybe changed, are taken back), detaches, exits, or SIGKILL or its
//! process's exit ends the stop. The record lives in a per-sandbox table
//! keyed by the tracee's tid; the tracer is a process (tgid), whose every
//! thread may wait for and command it, as in Linux.

use super::siginfo::SigInfo;
use super::signal::sigbit;
use super::task::{ExitStatus, Task};
use super::thread::Thread;
use super::Kernel;
use crate::abi::sched::{CLONE_THREAD, CLONE_VFORK};
use crate::abi::Errno;
use crate::platform::CpuState;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) const EVENT_FORK: u32 = 1;
pub(crate) const EVENT_VFORK: u32 = 2;
pub(crate) const EVENT_CLONE: u32 = 3;
pub(crate) const EVENT_EXEC: u32 = 4;
pub(crate) const EVENT_EXIT: u32 = 6;
pub(crate) const EVENT_SECCOMP: u32 = 7;
pub(crate) const EVENT_STOP: u32 = 128;

pub(crate) const O_TRACESYSGOOD: u32 = 1;
pub(crate) const O_TRACEFORK: u32 = 2;
pub(crate) const O_TRACEVFORK: u32 = 4;
pub(crate) const O_TRACECLONE: u32 = 8;
pub(crate) const O_TRACEEXEC: u32 = 0x10;
pub(crate) const O_TRACEEXIT: u32 = 0x40;
pub(crate) const O_TRACESECCOMP: u32 = 0x80;
pub(crate) const O_EXITKILL: u32 = 0x10_0000;
/// Every option Linux accepts (SETOPTIONS refuses other bits with EINVAL).
pub(crate) const O_MASK: u32 = 0x30_00ff;

/// si_code of a tracer's SIGCHLD for a ptrace-stop.
const CLD_TRAPPED: i32 = 4;
const CSIGNAL: u64 = 0xff;

/// Why a tracee is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopKind {
    /// Signal-delivery-stop: the tracer decides which signal, if any, is
    /// delivered on resume.
    Signal(i32),
    /// Group-stop: its process is stopped by this signal.
    Group(i32),
    SyscallEnter,
    SyscallExit,
    /// A PTRACE_EVENT_* stop (EVENT_STOP: PTRACE_INTERRUPT, or a seized
    /// child's first stop).
    Event(u32),
}

/// How a tracee goes on after a stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    /// PTRACE_CONT (or a detach).
    Cont,
    /// PTRACE_SYSCALL: stop at the next system call entry or exit.
    Syscall,
    /// PTRACE_LISTEN: stay in the group-stop, not reported again.
    Listen,
    /// PTRACE_SINGLESTEP: run one instruction (the trap flag), then stop
    /// with SIGTRAP.
    Step,
}

/// The trap flag of eflags.
const TF: u64 = 0x100;
/// si_code of a single-step's SIGTRAP.
const TRAP_TRACE: i32 = 2;

/// A tracee in a ptrace-stop, as its tracer sees and changes it.
pub(crate) struct Stop {
    pub kind: StopKind,
    /// Its registers: the tracer's changes take effect on resume.
    pub cpu: CpuState,
    /// What PTRACE_GETSIGINFO reports (None: EINVAL, as Linux's group-stop
    /// of a seized tracee).
    pub siginfo: Option<SigInfo>,
    reported: bool,
    resumed: Option<(Resume, i32)>,
}

/// One tracer/tracee relation.
pub(crate) struct Tracee {
    pub tgid: i32,
    /// The tracing process.
    pub tracer: i32,
    pub seized: bool,
    pub options: u32,
    /// PTRACE_GETEVENTMSG's value.
    pub event_msg: u64,
    /// Resumed with PTRACE_SYSCALL.
    syscalls: bool,
    /// A PTRACE_INTERRUPT (or a seized child's first stop) is due.
    interrupt: bool,
    /// Resumed with PTRACE_SINGLESTEP: the trap flag the sentry set.
    stepping: bool,
    pub stop: Option<Stop>,
}

impl Tracee {
    /// The wait status a stop of `kind` is reported with.
    fn status(&self, kind: StopKind) -> i32 {
        let trap = libc::SIGTRAP;
        let code = match kind {
            StopKind::Signal(sig) => sig,
            StopKind::Group(sig) if self.seized => sig | i32::try_from(EVENT_STOP << 8).unwrap_or(0),
            StopKind::Group(sig) => sig,
            StopKind::SyscallEnter | StopKind::SyscallExit if self.options & O_TRACESYSGOOD != 0 => trap | 0x80,
            StopKind::SyscallEnter | StopKind::SyscallExit => trap,
            StopKind::Event(e) => trap | i32::try_from(e << 8).unwrap_or(0),
        };
        (code << 8) | 0x7f
    }
}

/// What a tracer's wait reports of a tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// In a ptrace-stop, with this wait status.
    Stopped(i32),
    /// A tracee the tracer is not the parent of (or a thread) exited.
    Exited(ExitStatus),
}

impl Report {
    /// The wait status word.
    pub(crate) fn wait_status(self) -> i32 {
        match self {
            Report::Stopped(s) => s,
            Report::Exited(s) => s.wait_status(),
        }
    }

    /// waitid's (si_code, si_status).
    pub(crate) fn siginfo_code(self) -> (i32, i32) {
        match self {
            Report::Stopped(s) => (CLD_TRAPPED, s >> 8),
            Report::Exited(ExitStatus::Code(c)) => (super::siginfo::CLD_EXITED, c),
            Report::Exited(ExitStatus::Signal(s)) => (super::siginfo::CLD_KILLED, s),
        }
    }
}

/// An exited tracee its tracer has not waited for.
struct Exited {
    tid: i32,
    tgid: i32,
    tracer: i32,
    status: ExitStatus,
}

#[derive(Default)]
struct State {
    tracees: HashMap<i32, Tracee>,
    exited: Vec<Exited>,
    /// Stops ended by a detach (or the tracer's exit): the tracee takes
    /// its registers and signal back from here.
    released: HashMap<i32, Stop>,
}

/// The sandbox's ptrace relations (a kernel extension).
#[derive(Default)]
pub(crate) struct Ptrace {
    state: Mutex<State>,
    changed: Condvar,
}

/// The sandbox's table.
pub(crate) fn of(k: &Kernel) -> Arc<Ptrace> {
    k.ext::<Ptrace>()
}

/// How a stop ended.
pub(crate) enum Outcome {
    /// The thread is not traced: it goes on as if untraced.
    NotTraced,
    /// SIGKILL or its process's exit ended the stop.
    Killed,
    /// Resumed (or detached): the signal the tracer chose (0 for none) and
    /// the siginfo it carries.
    Resumed { sig: i32, siginfo: Option<SigInfo> },
}

/// Whether `t` must not stay stopped: SIGKILL always wins.
fn killed(t: &Thread, kind: StopKind) -> bool {
    t.pending() & sigbit(libc::SIGKILL) != 0
        || (kind != StopKind::Event(EVENT_EXIT) && t.exiting.load(Ordering::SeqCst))
}

impl Ptrace {
    fn waker(self: &Arc<Self>) -> crate::waiter::Waker {
        let me = self.clone();
        Arc::new(move || {
            let _g = me.state.lock();
            me.changed.notify_all();
        })
    }

    /// Runs `f` on tracee `tid` of `tracer`; ESRCH if it is not one, or
    /// (`stopped`) is not in a ptrace-stop, as Linux's ptrace_check_attach.
    pub(crate) fn with_tracee<R>(
        &self,
        tracer: i32,
        tid: i32,
        stopped: bool,
        f: impl FnOnce(&mut Tracee) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let mut s = self.state.lock();
        let t = s.tracees.get_mut(&tid).filter(|t| t.tracer == tracer).ok_or(Errno::ESRCH)?;
        if stopped && t.stop.as_ref().is_none_or(|st| st.resumed.is_some()) {
            return Err(Errno::ESRCH);
        }
        f(t)
    }

    /// Whether traced thread `tid` stops at system calls.
    pub(crate) fn syscall_stops(&self, tid: i32) -> bool {
        self.state.lock().tracees.get(&tid).is_some_and(|t| t.syscalls)
    }

    /// Makes `target` a tracee of process `tracer`. EPERM if it is traced
    /// already.
    pub(crate) fn link(&self, tracer: i32, target: &Thread, seized: bool, options: u32) -> Result<(), Errno> {
        let mut s = self.state.lock();
        if s.tracees.contains_key(&target.tid) {
            return Err(Errno::EPERM);
        }
        let t = Tracee {
            tgid: target.tgid,
            tracer,
            seized,
            options,
            event_msg: 0,
            syscalls: false,
            interrupt: false,
            stepping: false,
            stop: None,
        };
        s.tracees.insert(target.tid, t);
        target.ptraced.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Resumes stopped tracee `tid` of `tracer` with `sig` (0 for none).
    pub(crate) fn resume(&self, tracer: i32, tid: i32, how: Resume, sig: i32) -> Result<(), Errno> {
        if !(0..=64).contains(&sig) {
            return Err(Errno::EIO);
        }
        self.with_tracee(tracer, tid, true, |t| {
            let seized = t.seized;
            let st = t.stop.as_mut().ok_or(Errno::ESRCH)?;
            if how == Resume::Listen && (!seized || !matches!(st.kind, StopKind::Group(_))) {
                return Err(Errno::EIO);
            }
            st.resumed = Some((how, sig));
            // PTRACE_LISTEN leaves the tracee's syscall and step tracing
            // as they were (Linux's ptrace_request does not touch them).
            if how != Resume::Listen {
                t.syscalls = how == Resume::Syscall;
                t.stepping = how == Resume::Step;
            }
            if t.stepping {
                st.cpu.regs.eflags |= TF;
            }
            Ok(())
        })?;
        self.changed.notify_all();
        Ok(())
    }

    /// Ends tracing of `tid` by `tracer`; a stopped tracee goes on with
    /// `sig`, which is delivered if it was in a signal-delivery-stop.
    pub(crate) fn detach(&self, k: &Kernel, tracer: i32, tid: i32, sig: i32) -> Result<(), Errno> {
        if !(0..=64).contains(&sig) {
            return Err(Errno::EIO);
        }
        {
            let mut s = self.state.lock();
            let t = s.tracees.get(&tid).filter(|t| t.tracer == tracer).ok_or(Errno::ESRCH)?;
            // A running tracee may be detached only by PTRACE_DETACH from
            // a stop, as in Linux; a seized one only when stopped too.
            if t.stop.as_ref().is_none_or(|st| st.resumed.is_some()) {
                return Err(Errno::ESRCH);
            }
            let mut t = s.tracees.remove(&tid).ok_or(Errno::ESRCH)?;
            if let Some(mut st) = t.stop.take() {
                st.resumed = Some((Resume::Cont, sig));
                s.released.insert(tid, st);
            }
        }
        if let Some(th) = k.thread(tid) {
            th.ptraced.store(false, Ordering::SeqCst);
        }
        self.changed.notify_all();
        Ok(())
    }

    /// PTRACE_INTERRUPT: a running seized tracee stops (PTRACE_EVENT_STOP)
    /// at its next kernel entry; a stopped one is left as it is.
    pub(crate) fn interrupt(&self, k: &Kernel, tracer: i32, tid: i32) -> Result<(), Errno> {
        let run = self.with_tracee(tracer, tid, false, |t| {
            if !t.seized {
                return Err(Errno::EIO);
            }
            let running = t.stop.is_none();
            t.interrupt |= running;
            Ok(running)
        })?;
        if run {
            if let Some(th) = k.thread(tid) {
                k.interrupt(&th);
            }
        }
        Ok(())
    }

    /// Takes a due PTRACE_INTERRUPT of `tid`.
    fn take_interrupt(&self, tid: i32) -> bool {
        self.state.lock().tracees.get_mut(&tid).is_some_and(|t| std::mem::take(&mut t.interrupt))
    }

    /// For `wait` by `tracer`: whether it has a tracee `matches` accepts
    /// (tid, tgid), and the first one with news, reported (and, unless
    /// `peek`, consumed). Exits only with `exited`.
    pub(crate) fn wait_report(
        &self,
        tracer: i32,
        matches: &dyn Fn(i32, i32) -> bool,
        exited: bool,
        peek: bool,
    ) -> (bool, Option<(i32, Report)>) {
        let mut s = self.state.lock();
        let mut any = false;
        if let Some(i) = s.exited.iter().position(|e| e.tracer == tracer && matches(e.tid, e.tgid)) {
            any = true;
            if exited {
                let (tid, status) = (s.exited[i].tid, s.exited[i].status);
                if !peek {
                    s.exited.remove(i);
                }
                return (true, Some((tid, Report::Exited(status))));
            }
        }
        let mut found = None;
        for (&tid, t) in s.tracees.iter_mut().filter(|(&tid, t)| t.tracer == tracer && matches(tid, t.tgid)) {
            any = true;
            let status = t.stop.as_ref().map(|st| t.status(st.kind));
            if let (Some(st), Some(status)) = (t.stop.as_mut(), status) {
                if !st.reported && st.resumed.is_none() {
                    if !peek {
                        st.reported = true;
                    }
                    found = Some((tid, Report::Stopped(status)));
                    break;
                }
            }
        }
        (any, found)
    }
}

/// Puts `task` in a ptrace-stop of `kind` until its tracer resumes it.
pub(crate) fn stop(task: &mut Task, kind: StopKind, siginfo: Option<SigInfo>) -> Outcome {
    let k = task.kernel.clone();
    let p = of(&k);
    let me = task.thread.clone();
    let (tracer, status) = {
        let mut s = p.state.lock();
        let Some(t) = s.tracees.get_mut(&me.tid) else { return Outcome::NotTraced };
        if killed(&me, kind) {
            return Outcome::Killed;
        }
        let status = t.status(kind);
        if matches!(kind, StopKind::Group(_) | StopKind::Event(EVENT_STOP)) {
            // This stop is the one a due PTRACE_INTERRUPT asked for.
            t.interrupt = false;
        }
        let siginfo = siginfo.or_else(|| {
            // Linux's ptrace_do_notify: SIGTRAP with the stop's code.
            let code = status >> 8;
            (!matches!(kind, StopKind::Group(_)) || !t.seized)
                .then(|| SigInfo::user(code & 0x7f, code, me.tgid, me.creds().uid))
        });
        t.stop = Some(Stop { kind, cpu: task.cpu.clone(), siginfo, reported: false, resumed: None });
        (t.tracer, status)
    };
    // The tracer's wait wakes; it hears SIGCHLD (CLD_TRAPPED).
    k.procs.notify();
    k.signal_process_info(tracer, SigInfo::child(libc::SIGCHLD, CLD_TRAPPED, me.tid, me.creds().uid, status >> 8));
    let ended = crate::waiter::with_waker(p.waker(), || {
        let mut s = p.state.lock();
        loop {
            if let Some(st) = s.released.remove(&me.tid) {
                return Some(st);
            }
            let t = s.tracees.get_mut(&me.tid)?;
            if killed(&me, kind) {
                t.stop = None;
                return None;
            }
            if t.stop.as_ref().is_some_and(|st| st.resumed.is_some()) {
                return t.stop.take();
            }
            p.changed.wait(&mut s);
        }
    });
    let Some(st) = ended else { return Outcome::Killed };
    task.cpu = st.cpu;
    let (how, sig) = st.resumed.unwrap_or((Resume::Cont, 0));
    if how == Resume::Listen {
        // Stays stopped with its process, as an untraced one would; once
        // continued it traps again (PTRACE_EVENT_STOP with SIGTRAP), as
        // Linux's JOBCTL_TRAP_NOTIFY, before its SIGCONT is delivered.
        let t = me.clone();
        k.procs.wait_while_stopped(me.tgid, || t.pending() & sigbit(libc::SIGKILL) != 0 || killed(&t, kind));
        if killed(&me, kind) {
            return Outcome::Killed;
        }
        return stop(task, StopKind::Event(EVENT_STOP), None);
    }
    let siginfo = st.siginfo.map(|mut i| {
        if sig != i.signo() {
            i = SigInfo::user(sig, super::siginfo::SI_USER, tracer, 0);
        }
        i
    });
    Outcome::Resumed { sig, siginfo }
}

/// A single step of `task` ended (its trap, or a system call it stepped
/// over): the trap flag the sentry set is cleared, and true returned.
pub(crate) fn end_step(task: &mut Task) -> bool {
    if !task.thread.ptraced.load(Ordering::SeqCst) {
        return false;
    }
    let stepped = of(&task.kernel)
        .state
        .lock()
        .tracees
        .get_mut(&task.thread.tid)
        .is_some_and(|t| std::mem::take(&mut t.stepping));
    if stepped {
        task.cpu.regs.eflags &= !TF;
    }
    stepped
}

/// The SIGTRAP a finished single step reports.
pub(crate) fn step_trap(rip: u64) -> SigInfo {
    SigInfo::fault(libc::SIGTRAP, TRAP_TRACE, rip)
}

/// A signal-delivery-stop for `info` (never SIGKILL): the signal the
/// tracer lets through, if any (None also when untraced: Some(info)).
pub(crate) fn signal_stop(task: &mut Task, info: SigInfo) -> Option<SigInfo> {
    let sig = info.signo();
    if sig == libc::SIGKILL || !task.thread.ptraced.load(Ordering::SeqCst) {
        return Some(info);
    }
    match stop(task, StopKind::Signal(sig), Some(info.clone())) {
        Outcome::NotTraced => Some(info),
        Outcome::Killed => None,
        Outcome::Resumed { sig: 0, .. } => None,
        Outcome::Resumed { sig, siginfo } => {
            Some(siginfo.filter(|i| i.signo() == sig).unwrap_or_else(|| SigInfo::kernel(sig)))
        }
    }
}

/// A PTRACE_EVENT_* stop of `task` with `msg` for PTRACE_GETEVENTMSG, if
/// its tracer asked for `event` with `option`.
pub(crate) fn event(task: &mut Task, event: u32, option: u32, msg: u64) {
    if !task.thread.ptraced.load(Ordering::SeqCst) {
        return;
    }
    let p = of(&task.kernel);
    let wanted = {
        let mut s = p.state.lock();
        s.tracees.get_mut(&task.thread.tid).filter(|t| t.options & option != 0).map(|t| t.event_msg = msg).is_some()
    };
    if wanted {
        stop(task, StopKind::Event(event), None);
    }
}

/// A seccomp RET_TRACE verdict with `data`: the PTRACE_EVENT_SECCOMP
/// stop, with `data` for PTRACE_GETEVENTMSG, if the task's tracer asked
/// for it (PTRACE_O_TRACESECCOMP); None when nobody did.
pub(crate) fn seccomp_stop(task: &mut Task, data: u32) -> Option<Outcome> {
    if !task.thread.ptraced.load(Ordering::SeqCst) {
        return None;
    }
    {
        let p = of(&task.kernel);
        let mut s = p.state.lock();
        let t = s.tracees.get_mut(&task.thread.tid).filter(|t| t.options & O_TRACESECCOMP != 0)?;
        t.event_msg = u64::from(data);
    }
    Some(stop(task, StopKind::Event(EVENT_SECCOMP), None))
}

/// After a successful execve: PTRACE_EVENT_EXEC, or (traced, not seized,
/// without the option) a SIGTRAP, as Linux's ptrace_event.
pub(crate) fn exec_done(task: &mut Task, old_tid: i32) {
    if !task.thread.ptraced.load(Ordering::SeqCst) {
        return;
    }
    let p = of(&task.kernel);
    let (options, seized) = {
        let s = p.state.lock();
        match s.tracees.get(&task.thread.tid) {
            Some(t) => (t.options, t.seized),
            None => return,
        }
    };
    if options & O_TRACEEXEC != 0 {
        event(task, EVENT_EXEC, O_TRACEEXEC, u64::try_from(old_tid).unwrap_or_default());
    } else if !seized {
        let me = &task.thread;
        me.queue_signal(SigInfo::user(libc::SIGTRAP, super::siginfo::SI_USER, 0, 0));
    }
}

/// After a successful fork, vfork or clone with these flags (clone's
/// flags, or SIGCHLD for fork and CLONE_VFORK for vfork): the event the
/// tracer asked for, with the child's pid.
pub(crate) fn clone_done(task: &mut Task, flags: u64, child: u64) {
    let (ev, opt) = clone_event(flags);
    event(task, ev, opt, child);
}

/// The PTRACE_EVENT and option of a clone with `flags`, as Linux's
/// kernel_clone chooses.
fn clone_event(flags: u64) -> (u32, u32) {
    if flags & CLONE_VFORK != 0 {
        (EVENT_VFORK, O_TRACEVFORK)
    } else if flags & CSIGNAL != u64::try_from(libc::SIGCHLD).unwrap_or(17) || flags & CLONE_THREAD != 0 {
        (EVENT_CLONE, O_TRACECLONE)
    } else {
        (EVENT_FORK, O_TRACEFORK)
    }
}

/// A traced `parent` made `child` with clone `flags`: the child is traced
/// by the same tracer if the tracer asked for that kind of child; it
/// starts in a stop (SIGSTOP, or PTRACE_EVENT_STOP if seized).
pub(crate) fn attach_child(k: &Kernel, parent: &Thread, child: &Thread, flags: u64) {
    if !parent.ptraced.load(Ordering::SeqCst) {
        return;
    }
    let p = of(k);
    let (_, opt) = clone_event(flags);
    let linked = {
        let mut s = p.state.lock();
        let Some(t) = s.tracees.get(&parent.tid).filter(|t| t.options & opt != 0) else { return };
        let new = Tracee {
            tgid: child.tgid,
            tracer: t.tracer,
            seized: t.seized,
            options: t.options,
            event_msg: 0,
            syscalls: false,
            interrupt: t.seized,
            stepping: false,
            stop: None,
        };
        let seized = new.seized;
        s.tracees.insert(child.tid, new);
        child.ptraced.store(true, Ordering::SeqCst);
        !seized
    };
    if linked {
        child.queue_signal(SigInfo::kernel(libc::SIGSTOP));
    }
}

/// At a kernel entry of a traced task: a due PTRACE_INTERRUPT stops it.
pub(crate) fn interrupt_stop(task: &mut Task) {
    if task.thread.ptraced.load(Ordering::SeqCst) && of(&task.kernel).take_interrupt(task.thread.tid) {
        stop(task, StopKind::Event(EVENT_STOP), None);
    }
}

/// Thread `t` ends with `status`: its tracer (if not its parent, which
/// learns of the process's exit the usual way) is told.
pub(crate) fn thread_exited(k: &Kernel, t: &Thread, status: ExitStatus) {
    let p = of(k);
    // Read before the table's lock: the process table's lock comes first.
    let ppid = k.procs.ppid(t.tgid);
    let mut parent_learns = false;
    {
        let mut s = p.state.lock();
        if let Some(tr) = s.tracees.remove(&t.tid) {
            parent_learns = t.tid == t.tgid && ppid == tr.tracer;
            if !parent_learns {
                s.exited.push(Exited { tid: t.tid, tgid: t.tgid, tracer: tr.tracer, status });
            }
        }
        s.released.remove(&t.tid);
        t.ptraced.store(false, Ordering::SeqCst);
    }
    if parent_learns {
        k.procs.exiting_traced(t.tgid);
    }
    k.procs.notify();
}

/// The last thread of process `tgid` is gone: its tracees are detached
/// (a stopped one goes on), or killed (PTRACE_O_EXITKILL).
pub(crate) fn tracer_exited(k: &Kernel, tgid: i32) {
    let p = of(k);
    let mut kill = Vec::new();
    let mut detached = Vec::new();
    {
        let mut s = p.state.lock();
        s.exited.retain(|e| e.tracer != tgid);
        let mine: Vec<i32> = s.tracees.iter().filter(|(_, tr)| tr.tracer == tgid).map(|(&tid, _)| tid).collect();
        for tid in mine {
            let Some(mut tr) = s.tracees.remove(&tid) else { continue };
            if tr.options & O_EXITKILL != 0 {
                kill.push(tr.tgid);
            }
            if let Some(mut st) = tr.stop.take() {
                st.resumed = Some((Resume::Cont, 0));
                s.released.insert(tid, st);
            }
            detached.push(tid);
        }
    }
    p.changed.notify_all();
    for tid in detached {
        if let Some(th) = k.thread(tid) {
            th.ptraced.store(false, Ordering::SeqCst);
        }
    }
    for tgid in kill {
        k.signal_process(tgid, libc::SIGKILL);
    }
}
