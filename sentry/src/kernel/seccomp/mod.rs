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

use super::siginfo::SigInfo;
use super::task::errno_to_rax;
use super::thread::Thread;
use super::{ExitStatus, Task};
use crate::abi::Errno;
use bpf::Program;
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
/// performs (`SECCOMP_GET_ACTION_AVAIL`). USER_NOTIF is not: no listener
/// can be created.
pub fn action_available(action: u32) -> bool {
    [RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP, RET_ERRNO, RET_TRACE, RET_LOG, RET_ALLOW].contains(&action)
}

/// One attached filter and the ones attached before it.
pub struct Filter {
    prog: Program,
    /// SECCOMP_FILTER_FLAG_LOG: actions other than ALLOW are logged.
    log: bool,
    prev: Option<Arc<Filter>>,
    /// Instructions on the chain's path, penalties included.
    path_len: usize,
    /// Filters on the chain, this one included.
    depth: usize,
}

impl Filter {
    /// `prog` on top of `prev`, unless the chain would grow too long.
    pub fn new(prog: Program, log: bool, prev: Option<Arc<Filter>>) -> Result<Arc<Filter>, Errno> {
        let below = prev.as_ref().map_or((0, 0), |p| (p.path_len, p.depth));
        let path_len = below.0 + prog.len() + 4;
        if path_len > MAX_INSNS_PER_PATH {
            return Err(Errno::ENOMEM);
        }
        Ok(Arc::new(Filter { prog, log, prev, path_len, depth: below.1 + 1 }))
    }

    fn chain(self: &Arc<Filter>) -> impl Iterator<Item = &Filter> {
        std::iter::successors(Some(&**self), |f| f.prev.as_deref())
    }

    /// Runs every filter of the chain on `data` and keeps the most
    /// restrictive verdict (the lowest action as a signed number; the
    /// newest filter's on a tie), with whether its filter asked for
    /// logging.
    fn run(self: &Arc<Filter>, data: &[u8; bpf::DATA_LEN as usize]) -> (u32, bool) {
        let mut best = (RET_ALLOW, false);
        for f in self.chain() {
            let v = f.prog.run(data);
            if signed(v & RET_ACTION) < signed(best.0 & RET_ACTION) {
                best = (v, f.log);
            }
        }
        best
    }

    /// Whether `self` is `other` or attached below it.
    fn is_ancestor_of(self: &Arc<Filter>, other: &Arc<Filter>) -> bool {
        other.chain().any(|f| std::ptr::eq(f, &**self))
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

/// Attaches `prog` to `thread`'s chain; with `tsync`, every thread of its
/// process gets the new chain (and the caller's no_new_privs), provided
/// none has filters of its own the caller lacks.
pub fn attach(thread: &Thread, prog: Program, log: bool, tsync: bool) -> Result<(), AttachError> {
    let _g = ATTACH.lock();
    let mine = thread.seccomp.state.lock().clone();
    if mine.mode == MODE_STRICT {
        return Err(AttachError::Errno(Errno::EINVAL));
    }
    let new = Filter::new(prog, log, mine.filter.clone()).map_err(AttachError::Errno)?;
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

/// Runs the task's seccomp policy on the system call it stopped at, whose
/// number and arguments are given. `true`: dispatch it. `false`: the
/// policy decided (rax is set, a signal forced, or the task is to exit).
pub(super) fn permits(task: &mut Task, nr: u64, args: &[u64; 6]) -> bool {
    match task.thread.seccomp.mode() {
        MODE_DISABLED => true,
        MODE_STRICT => {
            if STRICT_ALLOWED.contains(&nr) {
                return true;
            }
            log::info!("seccomp: task {} killed by strict mode at system call {nr}", task.thread.tid);
            kill(task, libc::SIGKILL, true);
            false
        }
        _ => {
            let Some(filter) = task.thread.seccomp.filter() else { return true };
            let data = seccomp_data(nr, task.cpu.regs.rip, args);
            let (verdict, log) = filter.run(&data);
            act(task, nr, verdict, log)
        }
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

fn act(task: &mut Task, nr: u64, verdict: u32, log: bool) -> bool {
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
        // No guest can trace here, and no listener exists for USER_NOTIF:
        // both end as Linux's do without one.
        RET_TRACE | RET_USER_NOTIF => {
            if log {
                logged("no tracer or listener");
            }
            task.cpu.regs.rax = errno_to_rax(Errno::ENOSYS);
            false
        }
        // KILL_THREAD, KILL_PROCESS and any unknown action.
        _ => {
            logged("killed");
            kill(task, libc::SIGSYS, action == RET_KILL_THREAD);
            false
        }
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
                let a = Filter::new(ret(strong), false, None).unwrap();
                let chain = Filter::new(ret(weak), false, Some(a)).unwrap();
                assert_eq!(chain.run(&data()).0, strong, "{strong:#x} over {weak:#x}");
                let b = Filter::new(ret(weak), false, None).unwrap();
                let chain = Filter::new(ret(strong), false, Some(b)).unwrap();
                assert_eq!(chain.run(&data()).0, strong);
            }
        }
    }

    #[test]
    fn on_a_tie_the_newest_filter_s_data_is_kept() {
        let old = Filter::new(ret(RET_ERRNO | 1), false, None).unwrap();
        let new = Filter::new(ret(RET_ERRNO | 13), true, Some(old)).unwrap();
        assert_eq!(new.run(&data()), (RET_ERRNO | 13, true));
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
            chain = Some(Filter::new(big(), false, chain).unwrap());
        }
        assert_eq!(Filter::new(big(), false, chain).err(), Some(Errno::ENOMEM));
    }

    #[test]
    fn ancestry() {
        let a = Filter::new(ret(RET_ALLOW), false, None).unwrap();
        let b = Filter::new(ret(RET_ALLOW), false, Some(a.clone())).unwrap();
        let c = Filter::new(ret(RET_ALLOW), false, None).unwrap();
        assert!(a.is_ancestor_of(&b) && b.is_ancestor_of(&b));
        assert!(!b.is_ancestor_of(&a) && !c.is_ancestor_of(&b));
    }
}
