//! A guest thread as the rest of the kernel sees it: identity, address
//! space, files, credentials and bookkeeping that /proc reports. The
//! thread's registers and platform context live in its `Task`, owned by
//! the host thread that runs it.

use super::cputime::ThreadCpu;
use super::fs_context::FsContext;
use super::limits::{self, Rlimit};
use super::siginfo::SigInfo;
use super::signal::sigbit;
use super::signal::{AltStack, SigActions};
use super::sigqueue::SigQueue;
use super::thread_group::ThreadGroup;
use crate::auth::Credentials;
use crate::loader::ArgRanges;
use crate::mm::MemoryManager;
use crate::platform::Interrupter;
use crate::vfs::{Dentry, FdTable};
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Attributes set by `prctl` and `sched_setaffinity` that Linux keeps per
/// thread (the per-process ones are the `ThreadGroup`'s). On fork the
/// child copies them except `pdeathsig` (cleared); exec clears `keepcaps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadAttrs {
    /// The signal sent when the parent dies (PR_SET_PDEATHSIG); 0 for none.
    pub pdeathsig: i32,
    pub no_new_privs: bool,
    pub keepcaps: bool,
    /// The CPU affinity mask in 64-bit words; `None` means every CPU.
    pub cpu_affinity: Option<Vec<u64>>,
    /// The execution domain and its flags (`personality`).
    pub personality: u32,
    /// The scheduling policy (`sched_setscheduler`, `sched_setattr`).
    pub sched: SchedPolicy,
    /// The I/O priority (`ioprio_set`): class << 13 | data; 0 is
    /// IOPRIO_CLASS_NONE (derived from the nice value).
    pub ioprio: u16,
    /// The memory policy (`set_mempolicy`): kept across fork and exec.
    pub mempolicy: crate::mm::MemPolicy,
}

/// A thread's scheduling policy, recorded and reported (the host, not the
/// sentry, schedules guest threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedPolicy {
    /// SCHED_OTHER (0), SCHED_FIFO (1), SCHED_RR (2), SCHED_BATCH (3),
    /// SCHED_IDLE (5).
    pub policy: i32,
    /// The real-time priority, 1..=99 for FIFO and RR, else 0.
    pub priority: u32,
    /// SCHED_RESET_ON_FORK: children start with a normal policy.
    pub reset_on_fork: bool,
}

impl SchedPolicy {
    /// Whether the policy is SCHED_FIFO or SCHED_RR.
    pub fn realtime(&self) -> bool {
        matches!(self.policy, 1 | 2)
    }
}

/// What a child inherits of its parent's policy and nice value: all of
/// it, unless SCHED_RESET_ON_FORK asks for a real-time policy to become
/// SCHED_OTHER with nice 0, and any other a negative nice value 0
/// (Linux's `sched_fork`).
pub fn forked_sched(parent: SchedPolicy, nice: i32) -> (SchedPolicy, i32) {
    if !parent.reset_on_fork {
        return (parent, nice);
    }
    if parent.realtime() {
        return (SchedPolicy::default(), 0);
    }
    (SchedPolicy { reset_on_fork: false, ..parent }, nice.max(0))
}

pub struct Thread {
    pub(super) tid: i32,
    /// The thread group (process) id: `group.tgid()`.
    pub(super) tgid: i32,
    /// The process: what its threads share.
    group: Arc<ThreadGroup>,
    pub(super) comm: Mutex<Vec<u8>>,
    pub(super) creds: RwLock<Credentials>,
    pub(super) mm: Mutex<Arc<MemoryManager>>,
    pub(super) fds: Mutex<Arc<FdTable>>,
    pub(super) fs: Mutex<Arc<FsContext>>,
    pub(super) exe: Mutex<Option<Arc<Dentry>>>,
    pub(super) args: Mutex<ArgRanges>,
    /// The auxiliary vector the program started with.
    pub(super) auxv: Mutex<Vec<u8>>,
    /// The nice value (-20..=19), recorded and reported.
    pub(super) nice: AtomicI32,
    /// Its process's signal handlers, shared with the processes it
    /// shares them with (CLONE_SIGHAND); an exec unshares them.
    sigactions: Mutex<Arc<SigActions>>,
    pub(super) sigmask: AtomicU64,
    /// Signals sent to this thread itself and not yet taken.
    private: SigQueue,
    /// The signals `rt_sigtimedwait` waits for, while it waits: a
    /// process-directed one goes to this thread even if it blocks it.
    pub(super) sigwaiting: AtomicU64,
    pub(super) altstack: Mutex<AltStack>,
    pub(super) attrs: Mutex<ThreadAttrs>,
    pub(super) clear_child_tid: AtomicU64,
    pub(super) robust_list: Mutex<(u64, u64)>,
    pub(super) start: Instant,
    /// Stops this thread's guest code (set once its task runs).
    pub(super) interrupter: Mutex<Option<Arc<dyn Interrupter>>>,
    /// Something (a signal, an exit) wants this thread out of any wait;
    /// cleared when its next system call starts.
    pub(super) interrupted: AtomicBool,
    /// Its process is exiting (never cleared).
    pub(super) exiting: AtomicBool,
    /// Its process was stopped (job control): park at the next kernel
    /// entry until continued.
    pub(super) stop_requested: AtomicBool,
    /// Wakes the wait the thread is blocked in, if any.
    pub(super) waker: Mutex<Option<crate::waiter::Waker>>,
    /// Notified when a signal becomes pending for the thread (signalfd
    /// pollers wait here).
    pub(super) signal_events: crate::waiter::Queue,
    /// Its CPU time.
    pub(super) cpu: ThreadCpu,
    /// It sleeps in a wait (not runnable).
    pub(super) sleeping: AtomicBool,
    /// The sandbox's run-state counters, once its task runs.
    pub(super) load: std::sync::OnceLock<Arc<super::loadavg::LoadAvg>>,
    /// The mask rt_sigsuspend replaced; a handler frame saves this one
    /// instead of the temporary mask.
    pub(super) saved_sigmask: Mutex<Option<u64>>,
    /// Its guest seccomp mode and filters.
    pub(super) seccomp: super::seccomp::Seccomp,
    /// The UTS and IPC namespaces it is in.
    pub(super) namespaces: Mutex<super::namespaces::Namespaces>,
    /// A guest ptrace tracer traces it (`ptrace`): the task loop asks the
    /// relation about stops only then.
    pub(super) ptraced: AtomicBool,
    /// A thread made with CLONE_VFORK whose creator waits for its exec or
    /// exit (`release_vfork`).
    pub(super) vfork: AtomicBool,
}

impl Thread {
    /// The first thread of a sandbox: it leads a new process with the
    /// default limits.
    pub fn new_init(tid: i32, creds: Credentials, mm: Arc<MemoryManager>, fs: Arc<FsContext>) -> Thread {
        let group = ThreadGroup::new(tid, limits::defaults());
        Thread::new(tid, group, Arc::new(SigActions::default()), creds, mm, fs)
    }

    /// A thread `tid` of process `group`, with signal handlers `sigactions`.
    /// It joins the group's list when the kernel's thread table adds it.
    pub fn new(
        tid: i32,
        group: Arc<ThreadGroup>,
        sigactions: Arc<SigActions>,
        creds: Credentials,
        mm: Arc<MemoryManager>,
        fs: Arc<FsContext>,
    ) -> Thread {
        Thread {
            tid,
            tgid: group.tgid(),
            group,
            comm: Mutex::new(Vec::new()),
            creds: RwLock::new(creds),
            mm: Mutex::new(mm),
            fds: Mutex::new(Arc::new(FdTable::new())),
            fs: Mutex::new(fs),
            exe: Mutex::new(None),
            args: Mutex::new(ArgRanges::default()),
            auxv: Mutex::new(Vec::new()),
            nice: AtomicI32::new(0),
            sigactions: Mutex::new(sigactions),
            sigmask: AtomicU64::new(0),
            private: SigQueue::default(),
            sigwaiting: AtomicU64::new(0),
            altstack: Mutex::new(AltStack::default()),
            attrs: Mutex::new(ThreadAttrs::default()),
            clear_child_tid: AtomicU64::new(0),
            robust_list: Mutex::new((0, 0)),
            start: Instant::now(),
            interrupter: Mutex::new(None),
            interrupted: AtomicBool::new(false),
            exiting: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            waker: Mutex::new(None),
            signal_events: crate::waiter::Queue::default(),
            saved_sigmask: Mutex::new(None),
            cpu: ThreadCpu::default(),
            sleeping: AtomicBool::new(false),
            load: std::sync::OnceLock::new(),
            seccomp: super::seccomp::Seccomp::default(),
            namespaces: Mutex::default(),
            ptraced: AtomicBool::new(false),
            vfork: AtomicBool::new(false),
        }
    }

    pub fn mm(&self) -> Arc<MemoryManager> {
        self.mm.lock().clone()
    }

    pub fn fds(&self) -> Arc<FdTable> {
        self.fds.lock().clone()
    }

    pub fn fs(&self) -> Arc<FsContext> {
        self.fs.lock().clone()
    }

    pub fn creds(&self) -> Credentials {
        self.creds.read().clone()
    }

    /// Its thread id.
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Its process's id.
    pub fn tgid(&self) -> i32 {
        self.tgid
    }

    /// Its name (`comm`).
    pub(crate) fn comm(&self) -> Vec<u8> {
        self.comm.lock().clone()
    }

    pub(crate) fn set_comm(&self, name: Vec<u8>) {
        *self.comm.lock() = name;
    }

    /// Changes its credentials with `f`, under their lock. Like Linux's
    /// `commit_creds`, a change of effective or filesystem ids or new
    /// permitted capabilities make the process non-dumpable (suid_dumpable
    /// 0), so a same-uid task cannot read what it held under the old ones.
    pub(crate) fn update_creds<R>(&self, f: impl FnOnce(&mut Credentials) -> R) -> R {
        let mut creds = self.creds.write();
        let old = creds.clone();
        let r = f(&mut creds);
        if old.change_resets_dumpable(&creds) {
            self.group().set_dumpable(0);
        }
        r
    }

    pub(crate) fn set_fs(&self, fs: Arc<FsContext>) {
        *self.fs.lock() = fs;
    }

    pub(crate) fn set_fds(&self, fds: Arc<FdTable>) {
        *self.fds.lock() = fds;
    }

    pub(crate) fn set_sigmask(&self, mask: u64) {
        self.sigmask.store(mask, Ordering::SeqCst);
    }

    /// Sets its signal mask to `mask`, returning the one it replaced.
    pub(crate) fn swap_sigmask(&self, mask: u64) -> u64 {
        self.sigmask.swap(mask, Ordering::SeqCst)
    }

    /// When it started.
    pub(crate) fn start(&self) -> Instant {
        self.start
    }

    /// The executable it runs.
    pub(crate) fn exe(&self) -> &Mutex<Option<Arc<Dentry>>> {
        &self.exe
    }

    /// Where its arguments and environment are in its memory.
    pub(crate) fn args(&self) -> &Mutex<ArgRanges> {
        &self.args
    }

    /// The auxiliary vector the program started with.
    pub(crate) fn auxv(&self) -> &Mutex<Vec<u8>> {
        &self.auxv
    }

    /// The nice value (-20..=19).
    pub(crate) fn nice(&self) -> &AtomicI32 {
        &self.nice
    }

    pub(crate) fn sigactions(&self) -> Arc<SigActions> {
        self.sigactions.lock().clone()
    }

    /// A thread made with CLONE_VFORK execs or exits: its creator goes on.
    pub(super) fn release_vfork_waiter(&self, k: &super::Kernel) {
        if self.vfork.swap(false, Ordering::SeqCst) {
            k.procs.notify();
        }
    }

    /// Gives the thread its own copy of its handlers if another process
    /// shares them (exec's `unshare_sighand`).
    pub(super) fn unshare_sigactions(&self) {
        let mut a = self.sigactions.lock();
        // This thread's reference and no other: not shared.
        if Arc::strong_count(&a) > 1 {
            *a = Arc::new(a.copy());
        }
    }

    /// The signals `rt_sigtimedwait` waits for, while it waits.
    pub(crate) fn sigwaiting(&self) -> &AtomicU64 {
        &self.sigwaiting
    }

    pub(crate) fn altstack(&self) -> &Mutex<AltStack> {
        &self.altstack
    }

    /// What `prctl` and `sched_setaffinity` set.
    pub(crate) fn attrs(&self) -> &Mutex<ThreadAttrs> {
        &self.attrs
    }

    pub(crate) fn clear_child_tid(&self) -> &AtomicU64 {
        &self.clear_child_tid
    }

    pub(crate) fn robust_list(&self) -> &Mutex<(u64, u64)> {
        &self.robust_list
    }

    /// Something wants it out of any wait.
    pub(crate) fn interrupted(&self) -> &AtomicBool {
        &self.interrupted
    }

    /// Its process is exiting.
    pub(crate) fn exiting(&self) -> &AtomicBool {
        &self.exiting
    }

    /// Its process was stopped (job control).
    pub(crate) fn stop_requested(&self) -> &AtomicBool {
        &self.stop_requested
    }

    /// Notified when a signal becomes pending for it.
    pub(crate) fn signal_events(&self) -> &crate::waiter::Queue {
        &self.signal_events
    }

    /// Its CPU time.
    pub(crate) fn cpu(&self) -> &ThreadCpu {
        &self.cpu
    }

    /// It sleeps in a wait.
    pub(crate) fn sleeping(&self) -> &AtomicBool {
        &self.sleeping
    }

    /// The mask rt_sigsuspend replaced.
    pub(crate) fn saved_sigmask(&self) -> &Mutex<Option<u64>> {
        &self.saved_sigmask
    }

    /// Its guest seccomp mode and filters.
    pub(crate) fn seccomp(&self) -> &super::seccomp::Seccomp {
        &self.seccomp
    }

    /// The UTS and IPC namespaces it is in.
    pub(crate) fn namespaces(&self) -> &Mutex<super::namespaces::Namespaces> {
        &self.namespaces
    }

    /// The process this thread belongs to.
    pub fn group(&self) -> &Arc<ThreadGroup> {
        &self.group
    }

    /// Its process's limit `which`.
    pub fn rlimit(&self, which: usize) -> Rlimit {
        self.group.rlimit(which)
    }

    pub fn nofile(&self) -> u64 {
        self.rlimit(limits::RLIMIT_NOFILE).cur
    }

    pub fn sigmask(&self) -> u64 {
        self.sigmask.load(Ordering::Relaxed)
    }

    /// The signals pending for this thread: its own and its process's.
    pub fn pending(&self) -> u64 {
        self.private.bits() | self.group.shared_pending.bits()
    }

    /// The signals sent to this thread itself and not yet taken.
    pub fn own_pending(&self) -> u64 {
        self.private.bits()
    }

    /// Whether the thread would take a process-directed `sig` now (Linux's
    /// `wants_signal`): it does not block it, or it waits for it in
    /// `rt_sigtimedwait`.
    pub fn wants_signal(&self, sig: i32) -> bool {
        (self.sigmask() & !self.sigwaiting.load(Ordering::SeqCst)) & sigbit(sig) == 0
    }

    /// Makes the signal `info` describes pending for this thread alone
    /// (see `SigQueue::queue`).
    pub fn queue_signal(&self, info: SigInfo) {
        self.private.queue(info);
    }

    /// Takes one pending instance of `sig`, the thread's own before its
    /// process's (as Linux's `dequeue_signal`): its siginfo, if it was
    /// pending.
    pub fn take_signal(&self, sig: i32) -> Option<SigInfo> {
        self.private.take(sig).or_else(|| self.group.shared_pending.take(sig))
    }

    /// Takes the lowest pending signal of `set`, the thread's own before
    /// its process's.
    pub fn take_any(&self, set: u64) -> Option<SigInfo> {
        self.private.take_any(set).or_else(|| self.group.shared_pending.take_any(set))
    }

    /// Whether a signal `sig` from POSIX timer `id` waits in the thread's
    /// own queue.
    pub fn timer_signal_queued(&self, sig: i32, id: i32) -> bool {
        self.private.timer_signal_queued(sig, id)
    }

    /// Discards every pending instance of the signals in `set`, the
    /// thread's own and its process's.
    pub fn discard_signals(&self, set: u64) {
        self.private.discard(set);
        self.group.shared_pending.discard(set);
    }

    /// Whether a blocking operation of this thread must give up: it was
    /// interrupted, its process is exiting, or a signal it does not block
    /// is pending.
    pub fn interrupt_pending(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
            || self.exiting.load(Ordering::SeqCst)
            || self.pending() & !self.sigmask() != 0
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Thread>>> = const { RefCell::new(None) };
}

/// The guest thread the calling host thread runs (for /proc/self).
pub(crate) fn current() -> Option<Arc<Thread>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Marks `t` as the calling host thread's guest thread: its waits end
/// when it is interrupted.
pub(crate) fn set_current(t: Option<Arc<Thread>>) {
    crate::waiter::set_current(t.clone().map(|t| -> Arc<dyn crate::waiter::Interruptible> { t }));
    CURRENT.with(|c| *c.borrow_mut() = t);
}

impl crate::waiter::Interruptible for Thread {
    fn interrupt_pending(&self) -> bool {
        Thread::interrupt_pending(self)
    }

    fn set_waker(&self, w: Option<crate::waiter::Waker>) {
        *self.waker.lock() = w;
    }

    fn set_sleeping(&self, sleeping: bool) {
        self.sleeping.store(sleeping, Ordering::Relaxed);
        if let Some(load) = self.load.get() {
            load.thread_sleeps(sleeping);
        }
    }
}
