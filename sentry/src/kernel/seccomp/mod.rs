//! Guest seccomp: the filters a guest thread installs on itself
//! (`seccomp(2)`, `prctl(PR_SET_SECCOMP)`), run by the sentry on each of
//! the thread's system calls before dispatch. Nothing here touches the
//! host: the sentry's own host filter is a different thing and stays as
//! it is.
//!
//! A thread's filters form a chain, newest first, shared with the threads
//! and children that inherited it (Linux's `seccomp_filter` list): every
//! filter runs and the most restrictive action wins.

pub mod bpf;
pub mod notify;

use super::ptrace::{self, Outcome};
use super::siginfo::SigInfo;
use super::task::errno_to_rax;
use super::thread::Thread;
use super::{ExitStatus, Task};
use crate::abi::Errno;
use crate::vfs::FileDescription;
use bpf::Program;
use notify::{AddFd, Answer, Installer, Listener};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

pub use crate::abi::seccomp::{
    AUDIT_ARCH_X86_64, MODE_DISABLED, MODE_FILTER, MODE_STRICT, RET_ACTION, RET_ALLOW, RET_DATA, RET_ERRNO,
    RET_KILL_PROCESS, RET_KILL_THREAD, RET_LOG, RET_TRACE, RET_TRAP, RET_USER_NOTIF,
};

/// `MAX_INSNS_PER_PATH`: the instructions of a whole chain, each filter
/// counted with 4 more (Linux's penalty), beyond which attaching fails
/// with ENOMEM.
const MAX_INSNS_PER_PATH: usize = 32_768;
/// `MAX_ERRNO`: an ERRNO action's data is capped at it.
const MAX_ERRNO: u32 = 4095;

/// Whether `action` (a verdict's action part) is one this kernel
/// performs (`SECCOMP_GET_ACTION_AVAIL`).
pub fn action_available(action: u32) -> bool {
    [RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP, RET_ERRNO, RET_USER_NOTIF, RET_TRACE, RET_LOG, RET_ALLOW]
        .contains(&action)
}

/// One attached filter and the ones attached before it.
pub struct Filter {
    prog: Program,
    /// SECCOMP_FILTER_FLAG_LOG: actions other than ALLOW are logged.
    log: bool,
    /// SECCOMP_FILTER_FLAG_NEW_LISTENER: where its USER_NOTIF verdicts go.
    listener: Option<Arc<Listener>>,
    prev: Option<Arc<Filter>>,
    /// Instructions on the chain's path, penalties included.
    path_len: usize,
    /// Filters on the chain, this one included.
    depth: usize,
}

impl Filter {
    /// `prog` on top of `prev`, unless the chain would grow too long.
    pub fn new(
        prog: Program,
        log: bool,
        listener: Option<Arc<Listener>>,
        prev: Option<Arc<Filter>>,
    ) -> Result<Arc<Filter>, Errno> {
        let below = prev.as_ref().map_or((0, 0), |p| (p.path_len, p.depth));
        let path_len = below.0 + prog.len() + 4;
        if path_len > MAX_INSNS_PER_PATH {
            return Err(Errno::ENOMEM);
        }
        Ok(Arc::new(Filter { prog, log, listener, prev, path_len, depth: below.1 + 1 }))
    }

    fn chain(self: &Arc<Filter>) -> impl Iterator<Item = &Filter> {
        std::iter::successors(Some(&**self), |f| f.prev.as_deref())
    }

    /// Runs every filter of the chain on `data` and keeps the most
    /// restrictive verdict (the lowest action as a signed number; the
    /// newest filter's on a tie), with the filter that gave it.
    fn run(self: &Arc<Filter>, data: &[u8; bpf::DATA_LEN as usize]) -> (u32, Option<&Filter>) {
        let mut best = (RET_ALLOW, None);
        for f in self.chain() {
            let v = f.prog.run(data);
            if signed(v & RET_ACTION) < signed(best.0 & RET_ACTION) {
                best = (v, Some(f));
            }
        }
        best
    }

    /// Whether `self` is `other` or attached below it.
    fn is_ancestor_of(self: &Arc<Filter>, other: &Arc<Filter>) -> bool {
        other.chain().any(|f| std::ptr::eq(f, &**self))
    }
}

/// The filter is no thread's (nor a newer filter's) any more: its
/// listener reports POLLHUP.
impl Drop for Filter {
    fn drop(&mut self) {
        if let Some(l) = &self.listener {
            l.orphan();
        }
    }
}

/// An action as Linux orders them: as a signed number.
fn signed(action: u32) -> i32 {
    i32::from_ne_bytes(action.to_ne_bytes())
}

/// A call number as the int seccomp_data and siginfo carry: its low half.
fn low_half(nr: u64) -> [u8; 4] {
    let b = nr.to_le_bytes();
    [b[0], b[1], b[2], b[3]]
}

#[derive(Clone, Default)]
struct State {
    mode: u8,
    filter: Option<Arc<Filter>>,
}

/// A thread's seccomp state.
#[derive(Default)]
pub struct Seccomp {
    /// The mode, read without the lock on every system call.
    mode: AtomicU8,
    state: Mutex<State>,
}

/// Serializes attaching and thread synchronization across the sandbox,
/// taken before any thread's state (rare calls; Linux holds the
/// process's siglock).
static ATTACH: Mutex<()> = Mutex::new(());

impl Seccomp {
    pub fn mode(&self) -> u8 {
        self.mode.load(Ordering::Acquire)
    }

    /// The filters attached (/proc/[pid]/status `Seccomp_filters`).
    pub fn filter_count(&self) -> usize {
        self.state.lock().filter.as_ref().map_or(0, |f| f.depth)
    }

    /// The newest filter of the chain.
    pub fn filter(&self) -> Option<Arc<Filter>> {
        self.state.lock().filter.clone()
    }

    /// Gives a new thread or child its parent's mode and filters.
    pub fn inherit(&self, parent: &Seccomp) {
        let p = parent.state.lock().clone();
        self.mode.store(p.mode, Ordering::Release);
        *self.state.lock() = p;
    }

    /// After a new thread joined its group: a TSYNC that ran between the
    /// copy and the join gave `parent` a longer chain, which the thread
    /// takes too.
    pub fn catch_up(&self, parent: &Seccomp) {
        let _g = ATTACH.lock();
        let p = parent.state.lock().clone();
        let mut s = self.state.lock();
        if p.filter.as_ref().map_or(0, |f| f.depth) > s.filter.as_ref().map_or(0, |f| f.depth) {
            *s = p;
            self.mode.store(s.mode, Ordering::Release);
        }
    }

    /// The thread is gone: it uses its filters no more (Linux's
    /// `seccomp_filter_release`).
    pub fn release(&self) {
        // Dropped outside the lock: the last reference tells its listener.
        let filters = self.state.lock().filter.take();
        drop(filters);
    }

    /// SECCOMP_SET_MODE_STRICT: refused (EINVAL) once filters are on.
    pub fn set_strict(&self) -> Result<(), Errno> {
        let _g = ATTACH.lock();
        let mut s = self.state.lock();
        if s.mode == MODE_FILTER {
            return Err(Errno::EINVAL);
        }
        s.mode = MODE_STRICT;
        self.mode.store(MODE_STRICT, Ordering::Release);
        Ok(())
    }
}

/// What attaching a filter with TSYNC found in the way: the thread id of
/// a thread whose filters do not descend from the caller's.
#[derive(Debug, PartialEq, Eq)]
pub enum AttachError {
    Errno(Errno),
    Tsync(i32),
}

/// Attaches `prog` (with `listener`, if any) to `thread`'s chain; with
/// `tsync`, every thread of its process gets the new chain (and the
/// caller's no_new_privs), provided none has filters of its own the
/// caller lacks. A chain has one listener at most (EBUSY).
pub fn attach(
    thread: &Thread,
    prog: Program,
    log: bool,
    listener: Option<Arc<Listener>>,
    tsync: bool,
) -> Result<(), AttachError> {
    let _g = ATTACH.lock();
    let mine = thread.seccomp.state.lock().clone();
    if mine.mode == MODE_STRICT {
        return Err(AttachError::Errno(Errno::EINVAL));
    }
    if listener.is_some() && mine.filter.as_ref().is_some_and(|f| f.chain().any(|f| f.listener.is_some())) {
        return Err(AttachError::Errno(Errno::EBUSY));
    }
    let new = Filter::new(prog, log, listener, mine.filter.clone()).map_err(AttachError::Errno)?;
    let others: Vec<Arc<Thread>> =
        if tsync { thread.group().threads().into_iter().filter(|t| t.tid != thread.tid).collect() } else { Vec::new() };
    for t in &others {
        if t.exiting.load(Ordering::SeqCst) {
            continue;
        }
        let s = t.seccomp.state.lock();
        let ok = match (s.mode, &s.filter, &mine.filter) {
            (MODE_DISABLED, _, _) => true,
            (MODE_FILTER, Some(theirs), Some(ours)) => theirs.is_ancestor_of(ours),
            _ => false,
        };
        if !ok {
            return Err(AttachError::Tsync(t.tid));
        }
    }
    let nnp = thread.attrs.lock().no_new_privs;
    for t in others.iter().map(|t| &**t).chain([thread]) {
        let mut s = t.seccomp.state.lock();
        s.mode = MODE_FILTER;
        s.filter = Some(new.clone());
        t.seccomp.mode.store(MODE_FILTER, Ordering::Release);
        if nnp {
            t.attrs.lock().no_new_privs = true;
        }
    }
    Ok(())
}

/// The system calls strict mode allows: read, write, exit, rt_sigreturn.
const STRICT_ALLOWED: [u64; 4] = [0, 1, 60, 15];

/// Runs the task's seccomp policy on the system call it stopped at (the
/// number and arguments in its registers). `true`: dispatch the call
/// the registers then hold (a tracer may have changed it). `false`: the
/// policy decided (rax is set, a signal forced, or the task is to exit).
pub(super) fn permits(task: &mut Task) -> bool {
    match task.thread.seccomp.mode() {
        MODE_DISABLED => true,
        MODE_STRICT => {
            let nr = task.cpu.regs.orig_rax;
            if STRICT_ALLOWED.contains(&nr) {
                return true;
            }
            log::info!("seccomp: task {} killed by strict mode at system call {nr}", task.thread.tid);
            kill(task, libc::SIGKILL, true);
            false
        }
        _ => filtered(task, false),
    }
}

/// Runs the filters on the call in the task's registers and acts on the
/// verdict; `recheck`: again, after a tracer's PTRACE_EVENT_SECCOMP stop,
/// where TRACE allows (Linux's `recheck_after_trace`).
fn filtered(task: &mut Task, recheck: bool) -> bool {
    let Some(filter) = task.thread.seccomp.filter() else { return true };
    let nr = task.cpu.regs.orig_rax;
    let data = seccomp_data(nr, task.cpu.regs.rip, &task.cpu.syscall_args());
    let (verdict, by) = filter.run(&data);
    let log = by.is_some_and(|f| f.log);
    if verdict & RET_ACTION == RET_USER_NOTIF {
        let listener = by.and_then(|f| f.listener.clone());
        if log {
            log::info!("seccomp: task {} system call {nr}: user notification", task.thread.tid);
        }
        return user_notif(task, listener, data);
    }
    act(task, nr, verdict, log, recheck)
}

/// USER_NOTIF: the call waits for the supervisor's answer (ENOSYS when
/// its filter has no listener, or its listener is closed); interrupted,
/// it restarts or fails with EINTR as an interrupted sleep does.
fn user_notif(task: &mut Task, listener: Option<Arc<Listener>>, data: [u8; bpf::DATA_LEN as usize]) -> bool {
    let fds = TaskFds(task);
    let answer = listener.ok_or(Errno::ENOSYS).and_then(|l| l.notify(task.thread.tid, data, &fds));
    task.cpu.regs.rax = match answer {
        Ok(Answer::Continue) => return true,
        // As Linux's syscall_set_return_value: the error if any.
        Ok(Answer::Result { error: 0, val }) => u64::from_ne_bytes(val.to_ne_bytes()),
        Ok(Answer::Result { error, .. }) => u64::from_ne_bytes(i64::from(error).to_ne_bytes()),
        Err(e) if e.is_restart() => task.restart_or_eintr(e),
        Err(e) => errno_to_rax(e),
    };
    false
}

/// A waiting task's descriptor table, where the supervisor's ADDFDs go:
/// as Linux's `receive_fd` (lowest free number, below RLIMIT_NOFILE:
/// EMFILE) or `receive_fd_replace` (as dup2 does: below RLIMIT_NOFILE,
/// else EBADF; the replaced descriptor is closed, its record locks
/// dropped).
struct TaskFds<'a>(&'a Task);

impl Installer for TaskFds<'_> {
    fn install(&self, add: &AddFd) -> Result<(i32, Option<Arc<FileDescription>>), Errno> {
        let (fds, limit) = (self.0.thread.fds(), self.0.thread.nofile());
        match add.at {
            Some(fd) => Ok((fd, fds.install_at(fd, add.file.clone(), add.cloexec, limit)?)),
            None => Ok((fds.install(add.file.clone(), add.cloexec, 0, limit)?, None)),
        }
    }

    fn closed(&self, replaced: Arc<FileDescription>) {
        self.0.kernel.descriptor_closed(self.0.thread.tgid(), &replaced);
    }
}

/// `struct seccomp_data` for a call.
fn seccomp_data(nr: u64, ip: u64, args: &[u64; 6]) -> [u8; bpf::DATA_LEN as usize] {
    let mut d = [0u8; bpf::DATA_LEN as usize];
    // The number is an int: its low 32 bits.
    d[..4].copy_from_slice(&low_half(nr));
    d[4..8].copy_from_slice(&AUDIT_ARCH_X86_64.to_le_bytes());
    d[8..16].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in args.iter().enumerate() {
        d[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    d
}

fn act(task: &mut Task, nr: u64, verdict: u32, log: bool, recheck: bool) -> bool {
    let data = verdict & RET_DATA;
    let action = verdict & RET_ACTION;
    let logged = |what: &str| {
        log::info!("seccomp: task {} system call {nr}: {what} (verdict {verdict:#x})", task.thread.tid);
    };
    match action {
        RET_ALLOW => true,
        RET_LOG => {
            logged("logged");
            true
        }
        RET_ERRNO => {
            if log {
                logged("errno");
            }
            task.cpu.regs.rax = errno_to_rax(Errno(i32::try_from(data.min(MAX_ERRNO)).unwrap_or(4095)));
            false
        }
        RET_TRAP => {
            if log {
                logged("trap");
            }
            // As Linux's syscall_rollback: the handler sees rax as the
            // call number.
            task.cpu.regs.rax = task.cpu.regs.orig_rax;
            let errno = i32::try_from(data).unwrap_or(0);
            let info = SigInfo::seccomp(errno, task.cpu.regs.rip, i32::from_le_bytes(low_half(nr)), AUDIT_ARCH_X86_64);
            super::signal_frame::deliver(task, &info, true);
            false
        }
        RET_TRACE if recheck => true,
        RET_TRACE => {
            if log {
                logged("trace");
            }
            trace(task, data)
        }
        // KILL_THREAD, KILL_PROCESS and any unknown action.
        _ => {
            logged("killed");
            kill(task, libc::SIGSYS, action == RET_KILL_THREAD);
            false
        }
    }
}

/// RET_TRACE: the tracer's PTRACE_EVENT_SECCOMP stop, where it may
/// change the call or skip it (number -1: rax is then the result); a
/// call it lets through is filtered again (Linux 4.8+). ENOSYS when no
/// tracer asked for the event.
fn trace(task: &mut Task, data: u32) -> bool {
    // As at Linux's system call entry: rax reads -ENOSYS at the stop.
    task.cpu.regs.rax = errno_to_rax(Errno::ENOSYS);
    match ptrace::seccomp_stop(task, data) {
        None | Some(Outcome::Killed) => false,
        // The number is an int here too: -1 (or any negative) skips.
        Some(_) => i32::from_le_bytes(low_half(task.cpu.regs.orig_rax)) >= 0 && filtered(task, true),
    }
}

/// Ends the task's thread (`thread_only`, unless it is the last live one)
/// or its whole process with `sig`; no handler or mask can stop it.
fn kill(task: &mut Task, sig: i32, thread_only: bool) {
    let alone = task.thread.group().threads().iter().filter(|t| !t.exiting.load(Ordering::SeqCst)).count() <= 1;
    task.exit = Some(ExitStatus::Signal(sig));
    task.thread_only = thread_only && !alone;
}

#[cfg(test)]
mod tests {
    use super::bpf::{op, Insn};
    use super::*;

    fn ret(v: u32) -> Program {
        Program::new(vec![Insn::stmt(op::RET_K, v)]).unwrap()
    }

    fn data() -> [u8; 64] {
        seccomp_data(39, 0x1000, &[1, 2, 3, 4, 5, 6])
    }

    #[test]
    fn the_most_restrictive_action_wins_whatever_the_order() {
        let order = [
            RET_KILL_PROCESS,
            RET_KILL_THREAD,
            RET_TRAP | 1,
            RET_ERRNO | 2,
            RET_USER_NOTIF,
            RET_TRACE | 3,
            RET_LOG,
            RET_ALLOW,
        ];
        for (i, &strong) in order.iter().enumerate() {
            for &weak in &order[i..] {
                let a = Filter::new(ret(strong), false, None, None).unwrap();
                let chain = Filter::new(ret(weak), false, None, Some(a)).unwrap();
                assert_eq!(chain.run(&data()).0, strong, "{strong:#x} over {weak:#x}");
                let b = Filter::new(ret(weak), false, None, None).unwrap();
                let chain = Filter::new(ret(strong), false, None, Some(b)).unwrap();
                assert_eq!(chain.run(&data()).0, strong);
            }
        }
    }

    #[test]
    fn on_a_tie_the_newest_filter_s_data_is_kept() {
        let old = Filter::new(ret(RET_ERRNO | 1), false, None, None).unwrap();
        let new = Filter::new(ret(RET_ERRNO | 13), true, None, Some(old)).unwrap();
        let (verdict, by) = new.run(&data());
        assert_eq!(verdict, RET_ERRNO | 13);
        assert!(by.is_some_and(|f| f.log));
        assert_eq!(new.depth, 2);
    }

    #[test]
    fn seccomp_data_is_linux_s_layout() {
        let d = data();
        assert_eq!(u32::from_le_bytes(d[..4].try_into().unwrap()), 39);
        assert_eq!(u32::from_le_bytes(d[4..8].try_into().unwrap()), AUDIT_ARCH_X86_64);
        assert_eq!(u64::from_le_bytes(d[8..16].try_into().unwrap()), 0x1000);
        assert_eq!(u64::from_le_bytes(d[56..64].try_into().unwrap()), 6);
    }

    #[test]
    fn a_chain_has_a_length_limit() {
        let big = || Program::new(vec![Insn::stmt(op::RET_K, RET_ALLOW); bpf::MAX_INSNS]).unwrap();
        let mut chain = None;
        for _ in 0..7 {
            chain = Some(Filter::new(big(), false, None, chain).unwrap());
        }
        assert_eq!(Filter::new(big(), false, None, chain).err(), Some(Errno::ENOMEM));
    }

    #[test]
    fn ancestry() {
        let a = Filter::new(ret(RET_ALLOW), false, None, None).unwrap();
        let b = Filter::new(ret(RET_ALLOW), false, None, Some(a.clone())).unwrap();
        let c = Filter::new(ret(RET_ALLOW), false, None, None).unwrap();
        assert!(a.is_ancestor_of(&b) && b.is_ancestor_of(&b));
        assert!(!b.is_ancestor_of(&a) && !c.is_ancestor_of(&b));
    }
}
