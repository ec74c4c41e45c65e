//! System calls: signal. Dispositions, masks and alternate stacks are
//! recorded; of sending, only what needs no delivery to a handler works
//! yet: ignored signals are discarded and fatal ones end the process.

use super::args::int;
use super::{ControlEntries, Entries, Support};
use crate::abi::fcntl::O_NONBLOCK;
use crate::abi::layout::{Decoder, Encoder, Layout};
use crate::abi::signal::{
    SA_EXPOSE_TAGBITS, SA_NOCLDSTOP, SA_NOCLDWAIT, SA_NODEFER, SA_ONSTACK, SA_RESETHAND, SA_RESTART, SA_RESTORER,
    SA_SIGINFO, SIGKILL, SIGSTOP, SIG_BLOCK, SIG_DFL, SIG_IGN, SIG_SETMASK, SIG_UNBLOCK, SI_TKILL, SI_USER,
    SS_AUTODISARM, SS_DISABLE, SS_ONSTACK,
};
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::process::INIT_PID;
use crate::kernel::siginfo::{SigInfo, SIGINFO_SIZE};
use crate::kernel::signal::{default_action, sigbit, AltStack, DefaultAction, SigAction};
use crate::kernel::{ExitStatus, Outcome, Task, Thread};
use crate::waiter;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const KILL: &str = "a process is reported stopped before all its threads have parked";
const SIGNALFD: &str = "SIGCHLD records carry no child CPU times (ssi_utime, ssi_stime are 0)";

pub(super) const CONTROL: ControlEntries = &[
    (libc::SYS_rt_sigreturn, sys_rt_sigreturn, Support::Full),
    (libc::SYS_rt_sigqueueinfo, sys_rt_sigqueueinfo, Support::Full),
    (libc::SYS_rt_tgsigqueueinfo, sys_rt_tgsigqueueinfo, Support::Full),
    (libc::SYS_kill, sys_kill, Support::Partial(KILL)),
    (libc::SYS_tkill, sys_tkill, Support::Partial(KILL)),
    (libc::SYS_tgkill, sys_tgkill, Support::Partial(KILL)),
];

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_rt_sigsuspend, sys_rt_sigsuspend, Support::Full),
    (libc::SYS_signalfd, sys_signalfd, Support::Partial(SIGNALFD)),
    (libc::SYS_signalfd4, sys_signalfd4, Support::Partial(SIGNALFD)),
    (libc::SYS_rt_sigtimedwait, sys_rt_sigtimedwait, Support::Full),
    (libc::SYS_pause, sys_pause, Support::Full),
    (libc::SYS_rt_sigaction, sys_rt_sigaction, Support::Full),
    (libc::SYS_rt_sigprocmask, sys_rt_sigprocmask, Support::Full),
    (libc::SYS_rt_sigpending, sys_rt_sigpending, Support::Full),
    (libc::SYS_sigaltstack, sys_sigaltstack, Support::Full),
];

/// `sizeof(sigset_t)` in the kernel.
const SIGSET_SIZE: u64 = 8;
/// Signals that can never be blocked.
const UNBLOCKABLE: u64 = (1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1));

/// `UAPI_SA_FLAGS`: the flags Linux keeps; others are cleared so programs
/// can detect unsupported ones.
const SA_KNOWN: u64 = SA_NOCLDSTOP
    | SA_NOCLDWAIT
    | SA_SIGINFO
    | SA_ONSTACK
    | SA_RESTART
    | SA_NODEFER
    | SA_RESETHAND
    | SA_EXPOSE_TAGBITS
    | SA_RESTORER;

const MINSIGSTKSZ: u64 = 2048;

/// A signal number argument, if it names a signal (1..=64).
fn valid_signal(sig: i32) -> Option<usize> {
    usize::try_from(sig).ok().filter(|&s| (1..=64).contains(&s))
}

fn read_u64(task: &Task, addr: u64) -> Result<u64, Errno> {
    let mut b = [0u8; 8];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(u64::from_le_bytes(b))
}

// ---- dispositions ----

/// What a signal does under its current handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disposition {
    Ignore,
    Fatal,
    Stop,
    Handler,
}

fn disposition(sig: i32, handler: u64) -> Disposition {
    match handler {
        SIG_IGN => Disposition::Ignore,
        SIG_DFL => match default_action(sig) {
            DefaultAction::Ignore => Disposition::Ignore,
            DefaultAction::Stop => Disposition::Stop,
            DefaultAction::Terminate | DefaultAction::CoreDump => Disposition::Fatal,
        },
        _ => Disposition::Handler,
    }
}

/// The handler of `sig` (1..=64) in the task's thread group.
fn handler_of(task: &Task, sig: usize) -> u64 {
    task.thread.sigactions().swap(sig, None).handler
}

/// Why an interrupted wait that Linux never restarts (epoll_wait) ends:
/// EINTR for what Linux sees as a pending signal (one with a handler, a
/// stop, a fatal one) or the thread's exit; a restart for an ignored
/// signal, which Linux drops when it is sent and the sentry at delivery.
pub(super) fn eintr_unless_ignored(task: &Task) -> Errno {
    let t = &task.thread;
    if t.exiting().load(Ordering::SeqCst) || t.stop_requested().load(Ordering::SeqCst) {
        return Errno::EINTR;
    }
    let deliverable = t.pending() & !t.sigmask();
    let acted_on = (1..=64)
        .filter(|&sig| deliverable & sigbit(sig) != 0)
        .any(|sig| usize::try_from(sig).is_ok_and(|s| disposition(sig, handler_of(task, s)) != Disposition::Ignore));
    if acted_on {
        Errno::EINTR
    } else {
        Errno::ERESTARTNOHAND
    }
}

/// The threads of the caller's thread group, the caller first.
fn group(task: &Task) -> Vec<Arc<Thread>> {
    let me = &task.thread;
    let mut threads = vec![me.clone()];
    threads.extend(me.group().threads().into_iter().filter(|t| t.tid() != me.tid()));
    threads
}

fn sys_rt_sigaction(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let mut b = [0u8; SigAction::SIZE];
        task.thread.mm().copy_in(a[1], &mut b)?;
        Some(SigAction::decode(&b))
    } else {
        None
    };
    let sig = int(a[0]);
    let idx = valid_signal(sig).ok_or(Errno::EINVAL)?;
    if new.is_some() && (sig == SIGKILL || sig == SIGSTOP) {
        return Err(Errno::EINVAL);
    }
    let new = new.map(|n| SigAction { flags: n.flags & SA_KNOWN, mask: n.mask & !UNBLOCKABLE, ..n });
    let mut old = task.thread.sigactions().swap(idx, new);
    if new.is_some_and(|n| disposition(sig, n.handler) == Disposition::Ignore) {
        for t in group(task) {
            t.discard_signals(sigbit(sig));
        }
    }
    if a[2] != 0 {
        old.flags &= SA_KNOWN;
        task.thread.mm().copy_out(a[2], &old.encode())?;
    }
    Ok(0)
}

// ---- masks and pending signals ----

/// The mask after `rt_sigprocmask(how, set)`.
fn new_mask(how: i32, old: u64, set: u64) -> Result<u64, Errno> {
    let set = set & !UNBLOCKABLE;
    match how {
        SIG_BLOCK => Ok(old | set),
        SIG_UNBLOCK => Ok(old & !set),
        SIG_SETMASK => Ok(set),
        _ => Err(Errno::EINVAL),
    }
}

fn sys_rt_sigprocmask(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let old = task.thread.sigmask();
    if a[1] != 0 {
        let set = read_u64(task, a[1])?;
        let mask = new_mask(int(a[0]), old, set)?;
        task.thread.set_sigmask(mask);
    }
    if a[2] != 0 {
        task.thread.mm().copy_out(a[2], &old.to_le_bytes())?;
    }
    Ok(0)
}

fn sys_rt_sigpending(task: &mut Task, a: [u64; 6]) -> SysResult {
    let n = usize::try_from(a[1]).ok().filter(|&n| n <= 8).ok_or(Errno::EINVAL)?;
    let pending = task.thread.pending() & task.thread.sigmask();
    task.thread.mm().copy_out(a[0], &pending.to_le_bytes()[..n])?;
    Ok(0)
}

// ---- alternate signal stack ----

fn encode_stack(sp: u64, flags: u32, size: u64) -> Vec<u8> {
    let mut e = Encoder::with_capacity(24);
    e.u64(sp).u32(flags).u32(0).u64(size);
    e.finish()
}

fn decode_stack(b: &[u8]) -> AltStack {
    let mut d = Decoder::new(b);
    let sp = d.u64();
    let flags = d.u32();
    d.skip(4);
    AltStack { sp, size: d.u64(), flags }
}

/// Whether `sp` is on the alternate stack (`on_sig_stack`).
fn on_stack(st: &AltStack, sp: u64) -> bool {
    st.flags & SS_AUTODISARM == 0 && sp > st.sp && sp - st.sp <= st.size
}

/// The flags `sigaltstack` reports for the current stack.
fn reported_flags(st: &AltStack, sp: u64) -> u32 {
    let state = if st.size == 0 {
        SS_DISABLE
    } else if on_stack(st, sp) {
        SS_ONSTACK
    } else {
        0
    };
    state | (st.flags & SS_AUTODISARM)
}

/// The alternate stack after a request to install `new`, with the
/// thread's stack pointer at `sp`.
fn set_altstack(cur: AltStack, new: AltStack, sp: u64) -> Result<AltStack, Errno> {
    if on_stack(&cur, sp) {
        return Err(Errno::EPERM);
    }
    let mode = new.flags & !SS_AUTODISARM;
    if mode != SS_DISABLE && mode != SS_ONSTACK && mode != 0 {
        return Err(Errno::EINVAL);
    }
    if new == cur {
        return Ok(cur);
    }
    if mode == SS_DISABLE {
        return Ok(AltStack { sp: 0, size: 0, flags: new.flags });
    }
    if new.size < MINSIGSTKSZ {
        return Err(Errno::ENOMEM);
    }
    Ok(new)
}

fn sys_sigaltstack(task: &mut Task, a: [u64; 6]) -> SysResult {
    let new = if a[0] != 0 {
        let mut b = [0u8; 24];
        task.thread.mm().copy_in(a[0], &mut b)?;
        Some(decode_stack(&b))
    } else {
        None
    };
    let sp = task.cpu.regs.rsp;
    let cur = *task.thread.altstack().lock();
    if let Some(new) = new {
        *task.thread.altstack().lock() = set_altstack(cur, new, sp)?;
    }
    if a[1] != 0 {
        task.thread.mm().copy_out(a[1], &encode_stack(cur.sp, reported_flags(&cur, sp), cur.size))?;
    }
    Ok(0)
}

// ---- sending ----

/// What sending `sig` to the caller's own process does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Discard,
    /// The process dies of the signal.
    Exit,
    /// The signal waits until the receiving thread unblocks it.
    Queue,
}

fn fate(sig: i32, handler: u64, blocked: bool) -> Fate {
    if sig == SIGKILL {
        return Fate::Exit;
    }
    match (disposition(sig, handler), blocked) {
        // Stopping is acted on at delivery (job control).
        (Disposition::Stop | Disposition::Handler, _) => Fate::Queue,
        (Disposition::Ignore | Disposition::Fatal, true) => Fate::Queue,
        (Disposition::Ignore, false) => Fate::Discard,
        (Disposition::Fatal, false) => Fate::Exit,
    }
}

/// Sends `info`'s signal (1..=64) to the caller's own process, or with
/// `thread` to that thread of it. A signal that is fatal at once ends the
/// caller with its process.
fn signal_own(task: &mut Task, thread: Option<Arc<Thread>>, info: SigInfo, idx: usize) -> Result<Outcome, Errno> {
    let sig = info.signo();
    let bit = sigbit(sig);
    let directed = thread.is_some();
    let receiver = match thread {
        Some(t) => t,
        None => {
            let threads = group(task);
            threads.iter().find(|t| t.wants_signal(sig)).unwrap_or(&task.thread).clone()
        }
    };
    // Job control acts at sending, whatever the disposition (a SIGCONT
    // flushes pending stop signals even when it is then ignored).
    task.kernel.job_control_at_send(task.thread.tgid(), sig);
    let handler = handler_of(task, idx);
    match fate(sig, handler, receiver.sigmask() & bit != 0) {
        Fate::Discard => {}
        Fate::Exit => return Ok(Outcome::Exit { status: ExitStatus::Signal(sig), thread_only: false }),
        Fate::Queue if directed => task.kernel.send_signal_info(&receiver, info),
        Fate::Queue => task.kernel.signal_process_info(task.thread.tgid(), info),
    }
    Ok(Outcome::Value(0))
}

/// Whether the caller may signal `target` (`kill_ok_by_cred`).
fn may_signal(task: &Task, target: &Thread) -> bool {
    let (c, t) = (task.thread.creds(), target.creds());
    c.capable(caps::CAP_KILL) || c.euid == t.suid || c.euid == t.uid || c.uid == t.suid || c.uid == t.uid
}

/// Sends `sig` to `target`'s process, or with `directed` to that thread,
/// carrying the caller's process id and real uid (SI_USER, or SI_TKILL
/// when directed).
pub(super) fn send(task: &mut Task, target: Arc<Thread>, sig: i32, directed: bool) -> Result<Outcome, Errno> {
    let code = if directed { SI_TKILL } else { SI_USER };
    let info = SigInfo::user(sig, code, task.thread.tgid(), task.thread.creds().uid);
    send_info(task, target, directed, info)
}

/// Sends the signal `info` describes (0 only checks) to `target`'s
/// process, or with `directed` to that thread.
pub(super) fn send_info(task: &mut Task, target: Arc<Thread>, directed: bool, info: SigInfo) -> Result<Outcome, Errno> {
    let idx = match info.signo() {
        0 => None,
        s => Some(valid_signal(s).ok_or(Errno::EINVAL)?),
    };
    if target.tgid() != task.thread.tgid() && !may_signal(task, &target) {
        return Err(Errno::EPERM);
    }
    if let Some(idx) = idx {
        // The sandbox's init, like a pid namespace's in Linux
        // (SIGNAL_UNKILLABLE), never gets from inside the sandbox a signal
        // it has no handler for, SIGKILL and SIGSTOP included. (Faults and
        // signals from outside, the runtime's, still reach it.) A blocked
        // signal is queued: its handler may change before it is unblocked.
        let blocked = target.sigmask() & sigbit(info.signo()) != 0;
        if target.tgid() == INIT_PID && !blocked && target.sigactions().swap(idx, None).handler == SIG_DFL {
            task.kernel.job_control_at_send(target.tgid(), info.signo());
            return Ok(Outcome::Value(0));
        }
    }
    if target.tgid() != task.thread.tgid() {
        if idx.is_some() {
            if directed {
                task.kernel.send_signal_info(&target, info);
            } else {
                task.kernel.signal_process_info(target.tgid(), info);
            }
        }
        return Ok(Outcome::Value(0));
    }
    match idx {
        None => Ok(Outcome::Value(0)),
        Some(idx) => signal_own(task, directed.then_some(target), info, idx),
    }
}

/// The siginfo rt_sigqueueinfo's caller gave at `addr` for `sig` to a
/// thread of process `tgid`: a code claiming the kernel or kill(2) is
/// refused (EPERM) unless the caller signals itself, as in Linux.
pub(super) fn given_info(task: &Task, addr: u64, sig: i32, tgid: i32) -> Result<SigInfo, Errno> {
    let mut raw = [0u8; SIGINFO_SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let info = SigInfo::queued(raw, sig);
    if (info.code() >= 0 || info.code() == SI_TKILL) && tgid != task.thread.tgid() {
        return Err(Errno::EPERM);
    }
    Ok(info)
}

/// The thread `tid` names, or ESRCH.
fn lookup(task: &Task, tid: i32) -> Result<Arc<Thread>, Errno> {
    if tid == task.thread.tid() {
        return Ok(task.thread.clone());
    }
    task.kernel.thread(tid).ok_or(Errno::ESRCH)
}

/// A live thread by which to signal `pid`'s process: `pid` itself, or
/// another thread of its process once its leader thread has exited.
fn process_thread(task: &Task, pid: i32) -> Option<Arc<Thread>> {
    lookup(task, pid).ok().or_else(|| task.kernel.thread_group(pid)?.threads().into_iter().next())
}

/// `kill(-1, sig)`: every process but init and the caller's.
fn kill_all(task: &mut Task, sig: i32) -> SysResult {
    let others: Vec<Arc<Thread>> =
        task.kernel.threads().into_iter().filter(|t| t.tgid() > 1 && t.tgid() != task.thread.tgid()).collect();
    if others.is_empty() {
        return Err(Errno::ESRCH);
    }
    if sig != 0 && valid_signal(sig).is_none() {
        return Err(Errno::EINVAL);
    }
    let allowed: Vec<&Arc<Thread>> = others.iter().filter(|t| may_signal(task, t)).collect();
    if allowed.is_empty() {
        return Err(Errno::EPERM);
    }
    if sig != 0 {
        let info = SigInfo::user(sig, SI_USER, task.thread.tgid(), task.thread.creds().uid);
        for t in allowed.into_iter().filter(|t| t.tid() == t.tgid()) {
            task.kernel.signal_process_info(t.tgid(), info.clone());
        }
    }
    Ok(0)
}

/// A signal to a process that is exiting (its last thread is gone) or a
/// zombie: it is there until reaped, and the signal does nothing.
pub(super) fn to_exiting(sig: i32) -> SysResult {
    if sig != 0 && valid_signal(sig).is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

fn sys_kill(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (pid, sig) = (int(a[0]), int(a[1]));
    match pid {
        p if p > 0 => match process_thread(task, p) {
            Some(target) => send(task, target, sig, false),
            None if task.kernel.procs().exists(p) => to_exiting(sig).map(Outcome::Value),
            None => Err(Errno::ESRCH),
        },
        -1 => kill_all(task, sig).map(Outcome::Value),
        i32::MIN => Err(Errno::ESRCH),
        p => {
            // A process group: every process in it, zombies included.
            let me = task.thread.tgid();
            let pgid = if p == 0 { task.kernel.procs().pgid(me).unwrap_or(me) } else { -p };
            let members = task.kernel.procs().group_members(pgid);
            if members.is_empty() {
                return if task.kernel.procs().group_exists(pgid) {
                    to_exiting(sig).map(Outcome::Value)
                } else {
                    Err(Errno::ESRCH)
                };
            }
            if sig != 0 && valid_signal(sig).is_none() {
                return Err(Errno::EINVAL);
            }
            // Every member is signalled, the caller's own process too; its
            // death (a fatal signal to its own group) comes after.
            let mut result = Err(Errno::EPERM);
            for pid in members {
                match process_thread(task, pid) {
                    Some(t) => match send(task, t, sig, false) {
                        Ok(exit @ Outcome::Exit { .. }) => result = Ok(exit),
                        Ok(_) if result.is_err() => result = Ok(Outcome::Value(0)),
                        _ => {}
                    },
                    None if result.is_err() => result = Ok(Outcome::Value(0)),
                    None => {}
                }
            }
            result
        }
    }
}

fn sys_tkill(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let tid = int(a[0]);
    if tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = lookup(task, tid)?;
    send(task, target, int(a[1]), true)
}

fn sys_tgkill(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (tgid, tid) = (int(a[0]), int(a[1]));
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = lookup(task, tid).ok().filter(|t| t.tgid() == tgid).ok_or(Errno::ESRCH)?;
    send(task, target, int(a[2]), true)
}

/// Sleeps until a signal the thread does not block is pending.
fn wait_for_signal() -> SysResult {
    waiter::sleep_until(std::time::Instant::now() + std::time::Duration::from_secs(1 << 40))?;
    Err(Errno::ERESTARTNOHAND)
}

fn sys_rt_sigsuspend(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[1] != 8 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 8];
    task.thread.mm().copy_in(a[0], &mut raw)?;
    let mask = u64::from_le_bytes(raw) & !(sigbit(SIGKILL) | sigbit(SIGSTOP));
    let old = task.thread.swap_sigmask(mask);
    *task.thread.saved_sigmask().lock() = Some(old);
    wait_for_signal().map_err(|e| if e == Errno::ERESTARTSYS { Errno::ERESTARTNOHAND } else { e })
}

fn sys_pause(_task: &mut Task, _a: [u64; 6]) -> SysResult {
    wait_for_signal().map_err(|e| if e == Errno::ERESTARTSYS { Errno::ERESTARTNOHAND } else { e })
}

/// rt_sigreturn: the interrupted code's register file comes back whole,
/// rax included.
fn sys_rt_sigreturn(task: &mut Task, _a: [u64; 6]) -> Result<Outcome, Errno> {
    match crate::kernel::signal_frame::sigreturn(task) {
        Ok(()) => Ok(Outcome::RegistersReplaced),
        Err(e) => {
            // A corrupt frame kills the process, as Linux's force_sigsegv does.
            log::debug!("task {}: bad signal frame ({e})", task.thread.tid());
            Ok(Outcome::Exit { status: ExitStatus::Signal(libc::SIGSEGV), thread_only: false })
        }
    }
}

/// rt_sigtimedwait(set, info, timeout, sigsetsize): takes a pending signal
/// of `set` (normally blocked) without running a handler.
fn sys_rt_sigtimedwait(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let mm = task.thread.mm();
    let mut raw = [0u8; 8];
    mm.copy_in(a[0], &mut raw)?;
    let set = u64::from_le_bytes(raw) & !(sigbit(SIGKILL) | sigbit(SIGSTOP));
    let deadline = if a[2] == 0 {
        None
    } else {
        let mut raw = [0u8; Timespec::SIZE];
        mm.copy_in(a[2], &mut raw)?;
        let ts = Timespec::decode(&raw);
        if !ts.is_valid() {
            return Err(Errno::EINVAL);
        }
        Some(waiter::deadline_in(ts.duration()))
    };
    // While it waits, a process-directed signal of `set` comes to this
    // thread even though it blocks it (Linux unblocks `set` for the wait).
    task.thread.sigwaiting().store(set, Ordering::SeqCst);
    let taken = wait_for_one_of(task, set, deadline);
    task.thread.sigwaiting().store(0, Ordering::SeqCst);
    let info = taken?;
    if a[1] != 0 {
        mm.copy_out(a[1], &info.0)?;
    }
    u64::try_from(info.signo()).map_err(|_| Errno::EINVAL)
}

/// Waits until a signal of `set` is pending for the thread and takes it;
/// another signal it accepts, its exit or the deadline end the wait.
fn wait_for_one_of(task: &Task, set: u64, deadline: Option<std::time::Instant>) -> Result<SigInfo, Errno> {
    loop {
        if let Some(info) = task.thread.take_any(set) {
            return Ok(info);
        }
        // Another signal the thread accepts ends the wait (a handler runs).
        if task.thread.pending() & !task.thread.sigmask() != 0 {
            return Err(Errno::ERESTARTNOHAND);
        }
        let until = deadline.unwrap_or_else(|| std::time::Instant::now() + std::time::Duration::from_secs(1 << 32));
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(Errno::EAGAIN);
        }
        // Any signal sent to the thread wakes the sleep; look again.
        if waiter::sleep_until(until).is_err() {
            task.thread.interrupted().store(false, Ordering::SeqCst);
            if task.thread.exiting().load(Ordering::SeqCst) {
                return Err(Errno::EINTR);
            }
            // A job-control stop parks the thread; the wait then restarts.
            if task.thread.stop_requested().load(Ordering::SeqCst) {
                return Err(Errno::ERESTARTNOHAND);
            }
        }
    }
}

fn sys_rt_sigqueueinfo(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let pid = int(a[0]);
    if pid <= 0 {
        return Err(Errno::ESRCH);
    }
    let target = lookup(task, pid)?;
    let info = given_info(task, a[2], int(a[1]), target.tgid())?;
    send_info(task, target, false, info)
}

fn sys_rt_tgsigqueueinfo(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (tgid, tid) = (int(a[0]), int(a[1]));
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = lookup(task, tid).ok().filter(|t| t.tgid() == tgid).ok_or(Errno::ESRCH)?;
    let info = given_info(task, a[3], int(a[2]), tgid)?;
    send_info(task, target, true, info)
}

fn signalfd(task: &Task, fd: u64, mask_addr: u64, size: u64, flags: i32) -> SysResult {
    use crate::fs::signalfd::SignalFd;
    use crate::vfs::FileDescription;
    if size != 8 || flags & !(libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 8];
    task.thread.mm().copy_in(mask_addr, &mut raw)?;
    let mask = u64::from_le_bytes(raw) & !(sigbit(SIGKILL) | sigbit(SIGSTOP));
    if int(fd) != -1 {
        let f = super::args::file(task, fd)?;
        let s = f.ops.clone().into_any().downcast::<SignalFd>().map_err(|_| Errno::EINVAL)?;
        s.set_mask(mask);
        return Ok(fd & 0xffff_ffff);
    }
    let k = &task.kernel;
    let nonblock = flags & libc::SFD_NONBLOCK != 0;
    let s = SignalFd::new(k.anon_ino(), super::fd::now(), mask);
    let d = k.anon_dentry(b"anon_inode:[signalfd]", s.clone());
    let status = if nonblock { O_NONBLOCK } else { 0 };
    let f = FileDescription::new(d, s, status);
    let fd = task.thread.fds().install(f, flags & libc::SFD_CLOEXEC != 0, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_signalfd(task: &mut Task, a: [u64; 6]) -> SysResult {
    signalfd(task, a[0], a[1], a[2], 0)
}

fn sys_signalfd4(task: &mut Task, a: [u64; 6]) -> SysResult {
    signalfd(task, a[0], a[1], a[2], int(a[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigaction_layout() {
        let act = SigAction { handler: 0x1000, flags: SA_SIGINFO | SA_RESTORER, restorer: 0x2000, mask: 1 << 9 };
        let b = act.encode();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[8..16], &(SA_SIGINFO | SA_RESTORER).to_le_bytes());
        assert_eq!(SigAction::decode(&b), act);
        assert_eq!(SA_KNOWN & 0x400, 0, "SA_UNSUPPORTED is cleared");
    }

    #[test]
    fn dispositions() {
        assert_eq!(disposition(libc::SIGTERM, SIG_DFL), Disposition::Fatal);
        assert_eq!(disposition(libc::SIGABRT, SIG_DFL), Disposition::Fatal);
        assert_eq!(disposition(libc::SIGTERM, SIG_IGN), Disposition::Ignore);
        assert_eq!(disposition(libc::SIGCHLD, SIG_DFL), Disposition::Ignore);
        assert_eq!(disposition(libc::SIGTSTP, SIG_DFL), Disposition::Stop);
        assert_eq!(disposition(libc::SIGTSTP, SIG_IGN), Disposition::Ignore);
        assert_eq!(disposition(libc::SIGUSR1, 0x40_1000), Disposition::Handler);
    }

    #[test]
    fn outcomes() {
        assert_eq!(fate(SIGKILL, SIG_DFL, false), Fate::Exit);
        assert_eq!(fate(libc::SIGTERM, SIG_DFL, false), Fate::Exit);
        assert_eq!(fate(libc::SIGTERM, SIG_DFL, true), Fate::Queue);
        assert_eq!(fate(libc::SIGTERM, SIG_IGN, false), Fate::Discard);
        assert_eq!(fate(libc::SIGTERM, SIG_IGN, true), Fate::Queue);
        assert_eq!(fate(libc::SIGWINCH, SIG_DFL, false), Fate::Discard);
        assert_eq!(fate(libc::SIGUSR1, 0x40_1000, false), Fate::Queue, "delivered at the next kernel exit");
        assert_eq!(fate(libc::SIGUSR1, 0x40_1000, true), Fate::Queue);
        assert_eq!(fate(SIGSTOP, SIG_DFL, false), Fate::Queue);
        assert_eq!(fate(libc::SIGTTIN, SIG_DFL, false), Fate::Queue);
    }

    #[test]
    fn masks() {
        assert_eq!(new_mask(SIG_BLOCK, 0b1, 0b10), Ok(0b11));
        assert_eq!(new_mask(SIG_UNBLOCK, 0b11, 0b10), Ok(0b1));
        assert_eq!(new_mask(SIG_SETMASK, 0b11, 0b100), Ok(0b100));
        assert_eq!(new_mask(3, 0, 0), Err(Errno::EINVAL));
        assert_eq!(new_mask(SIG_SETMASK, 0, u64::MAX), Ok(!UNBLOCKABLE), "SIGKILL and SIGSTOP stay unblocked");
        assert_eq!(valid_signal(0), None);
        assert_eq!(valid_signal(64), Some(64));
        assert_eq!(valid_signal(65), None);
        assert_eq!(valid_signal(-1), None);
    }

    #[test]
    fn altstack() {
        let b = encode_stack(0x1000, SS_DISABLE, 8192);
        assert_eq!(b.len(), 24);
        assert_eq!(decode_stack(&b), AltStack { sp: 0x1000, size: 8192, flags: SS_DISABLE });
        let none = AltStack::default();
        assert_eq!(reported_flags(&none, 0x5000), SS_DISABLE);
        let st = AltStack { sp: 0x1000, size: 0x2000, flags: 0 };
        assert_eq!(set_altstack(none, st, 0x7000_0000), Ok(st));
        assert_eq!(reported_flags(&st, 0x2000), SS_ONSTACK);
        assert_eq!(reported_flags(&st, 0x7000_0000), 0);
        assert_eq!(set_altstack(st, none, 0x2000), Err(Errno::EPERM), "can't change it while on it");
        let small = AltStack { sp: 0x1000, size: 100, flags: 0 };
        assert_eq!(set_altstack(none, small, 0x7000_0000), Err(Errno::ENOMEM));
        let bad = AltStack { flags: 4, ..st };
        assert_eq!(set_altstack(none, bad, 0x7000_0000), Err(Errno::EINVAL));
        let off = AltStack { sp: 0x1000, size: 5, flags: SS_DISABLE };
        assert_eq!(set_altstack(st, off, 0x7000_0000), Ok(AltStack { sp: 0, size: 0, flags: SS_DISABLE }));
        let autodisarm = AltStack { flags: SS_AUTODISARM, ..st };
        assert_eq!(reported_flags(&autodisarm, 0x2000), SS_AUTODISARM, "never reported on-stack");
    }
}
