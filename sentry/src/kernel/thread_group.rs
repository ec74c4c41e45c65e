//! A thread group (a process): what Linux keeps per process rather than
//! per thread (`signal_struct`, gVisor's `kernel.ThreadGroup`). Every
//! thread of a process holds the same `Arc<ThreadGroup>`, so a change one
//! thread makes (setrlimit, PR_SET_DUMPABLE) is what every other thread
//! sees, with no copies to keep in step.
//!
//! The group also holds its process's place among processes and its life
//! (`ProcessState`: session, process group, exit and job-control state,
//! subreaper). The process table (`process.rs`) keeps the parent links and
//! a pid → group map, and changes that state only under its one lock, as
//! Linux's `tasklist_lock` guards it: wait, reparenting and the
//! orphaned-group test read many processes at once.

use super::cputime::{CpuTimes, GroupCpu};
use super::limits::{Rlimit, RLIMIT_NLIMITS};
use super::process::ChildEvent;
use super::process_timers::ProcessTimers;
use super::sigqueue::SigQueue;
use super::task::ExitStatus;
use super::thread::Thread;
use crate::abi::Errno;
use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A process's session, process group, exit and job-control state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessState {
    pub pgid: i32,
    pub sid: i32,
    /// Set once the process exited (a zombie until reaped).
    pub status: Option<ExitStatus>,
    /// The whole process is exiting (exit_group or a fatal signal), with
    /// this status.
    pub group_exit: Option<ExitStatus>,
    /// Stopped by this signal (job control) until SIGCONT or SIGKILL.
    pub stopped_by: Option<i32>,
    /// A stop or continue its parent's wait has not reported yet.
    pub unreported: Option<ChildEvent>,
    /// SIGCONTs (and SIGKILLs) sent to it: a stop decided before the latest
    /// one does not happen.
    pub continues: u64,
    /// PR_SET_CHILD_SUBREAPER: orphaned descendants are reparented here
    /// instead of to init.
    pub subreaper: bool,
}

pub struct ThreadGroup {
    tgid: i32,
    /// The live threads, by tid. A thread leaves when it exits (the
    /// kernel's thread table removes it), which also breaks the cycle of
    /// `Arc`s between a thread and its group.
    threads: Mutex<BTreeMap<i32, Arc<Thread>>>,
    /// Notified whenever a thread leaves (an exec waits on it for the
    /// group's other threads to go).
    left: Condvar,
    rlimits: Mutex<[Rlimit; RLIMIT_NLIMITS]>,
    /// PR_SET_DUMPABLE: 0 or 1. Linux keeps it with the address space,
    /// which every thread of a process shares here.
    dumpable: AtomicU8,
    /// Changed by the process table, under its lock.
    process: Mutex<ProcessState>,
    /// Signals sent to the process and not yet taken by any of its
    /// threads.
    pub(super) shared_pending: SigQueue,
    /// CPU time beyond the live threads'.
    pub(super) cpu: GroupCpu,
    /// Notified when the process exits (its pidfds become readable).
    pub(super) exited: crate::waiter::Queue,
    /// Its interval and POSIX timers: a fork's new group starts without.
    timers: ProcessTimers,
    /// Its zombie was reaped (its pidfds hang up).
    reaped: AtomicBool,
    /// Notified when one of its threads exited (PIDFD_THREAD pidfds).
    thread_left: crate::waiter::Queue,
    /// /proc/[pid]/oom_score_adj and the lowest value an unprivileged
    /// writer may set (Linux's `oom_score_adj_min`), inherited by a fork.
    oom_score_adj: Mutex<(i16, i16)>,
    /// /proc/[pid]/coredump_filter: which mappings a core dump would
    /// hold (Linux keeps it with the address space), inherited by a fork
    /// and kept across exec.
    coredump_filter: AtomicU32,
}

/// Linux's default coredump_filter (MMF_DUMP_FILTER_DEFAULT): anonymous
/// private and shared mappings, ELF headers, private huge pages.
pub const COREDUMP_FILTER_DEFAULT: u32 = 0x33;

impl ThreadGroup {
    /// A new process `tgid` with no threads yet and limits `rlimits`.
    pub fn new(tgid: i32, rlimits: [Rlimit; RLIMIT_NLIMITS]) -> Arc<ThreadGroup> {
        Arc::new(ThreadGroup {
            tgid,
            threads: Mutex::new(BTreeMap::new()),
            left: Condvar::new(),
            rlimits: Mutex::new(rlimits),
            dumpable: AtomicU8::new(1),
            process: Mutex::new(ProcessState {
                pgid: tgid,
                sid: tgid,
                status: None,
                group_exit: None,
                stopped_by: None,
                unreported: None,
                continues: 0,
                subreaper: false,
            }),
            shared_pending: SigQueue::default(),
            cpu: GroupCpu::default(),
            exited: crate::waiter::Queue::default(),
            timers: ProcessTimers::default(),
            reaped: AtomicBool::new(false),
            thread_left: crate::waiter::Queue::default(),
            oom_score_adj: Mutex::new((0, 0)),
            coredump_filter: AtomicU32::new(COREDUMP_FILTER_DEFAULT),
        })
    }

    /// The group of a process `tgid` forked from this one: it inherits
    /// the limits, dumpability, oom_score_adj and coredump_filter, not the
    /// threads or the timers (its
    /// process group and session are set as the process table adds it).
    pub fn fork(&self, tgid: i32) -> Arc<ThreadGroup> {
        let child = ThreadGroup::new(tgid, self.rlimits());
        child.set_dumpable(self.dumpable());
        *child.oom_score_adj.lock() = *self.oom_score_adj.lock();
        child.set_coredump_filter(self.coredump_filter());
        child
    }

    /// Signals sent to the process and not yet taken by any thread.
    pub(crate) fn shared_pending(&self) -> &SigQueue {
        &self.shared_pending
    }

    /// CPU time beyond the live threads'.
    pub(crate) fn cpu(&self) -> &GroupCpu {
        &self.cpu
    }

    /// The process's interval and POSIX timers.
    pub(crate) fn timers(&self) -> &ProcessTimers {
        &self.timers
    }

    /// Notified when the process exits, and when it is reaped.
    pub(crate) fn exited(&self) -> &crate::waiter::Queue {
        &self.exited
    }

    /// Notified when one of its threads exited.
    pub(crate) fn thread_left(&self) -> &crate::waiter::Queue {
        &self.thread_left
    }

    /// Whether thread `tid` is one of its live threads.
    pub fn has_thread(&self, tid: i32) -> bool {
        self.threads.lock().contains_key(&tid)
    }

    /// Whether the process was reaped (it is gone from the process table).
    pub(crate) fn is_reaped(&self) -> bool {
        self.reaped.load(Ordering::SeqCst)
    }

    /// The process was reaped: its pidfds' pollers see POLLHUP.
    pub(super) fn reaped(&self) {
        self.reaped.store(true, Ordering::SeqCst);
        self.exited.notify(crate::abi::poll::POLLIN | crate::abi::poll::POLLRDNORM | crate::abi::poll::POLLHUP);
    }

    pub fn tgid(&self) -> i32 {
        self.tgid
    }

    /// The live threads, in tid order.
    pub fn threads(&self) -> Vec<Arc<Thread>> {
        self.threads.lock().values().cloned().collect()
    }

    pub fn thread_count(&self) -> usize {
        self.threads.lock().len()
    }

    /// Adds `t` (called by the kernel's thread table, under its lock).
    pub(super) fn join(&self, t: Arc<Thread>) {
        self.threads.lock().insert(t.tid, t);
    }

    /// Removes thread `tid`, whose CPU time then counts among the exited
    /// threads'; true if no thread is left.
    pub(super) fn leave(&self, tid: i32) -> bool {
        let mut threads = self.threads.lock();
        if let Some(t) = threads.remove(&tid) {
            self.cpu.thread_exited(t.cpu.times());
        }
        self.left.notify_all();
        threads.is_empty()
    }

    /// The CPU time of the process: its live and exited threads'.
    pub fn cpu_times(&self) -> CpuTimes {
        let threads = self.threads.lock();
        let live = threads.values().fold(CpuTimes::default(), |acc, t| acc.plus(t.cpu.times()));
        self.cpu.own(live)
    }

    /// Waits until `tid` is the group's only thread, or `deadline`; true
    /// if it is.
    pub fn wait_until_alone(&self, tid: i32, deadline: Instant) -> bool {
        let mut threads = self.threads.lock();
        loop {
            if threads.keys().all(|&t| t == tid) {
                return true;
            }
            if self.left.wait_until(&mut threads, deadline).timed_out() {
                return threads.keys().all(|&t| t == tid);
            }
        }
    }

    pub fn rlimit(&self, resource: usize) -> Rlimit {
        self.rlimits.lock().get(resource).copied().unwrap_or(Rlimit { cur: 0, max: 0 })
    }

    pub fn rlimits(&self) -> [Rlimit; RLIMIT_NLIMITS] {
        *self.rlimits.lock()
    }

    /// Replaces limit `resource` with `new` if `check(old, new)` allows it
    /// (read and replaced at once, so two changes cannot interleave);
    /// returns the old limit. An unknown resource is EINVAL.
    pub fn set_rlimit(
        &self,
        resource: usize,
        new: Rlimit,
        check: impl FnOnce(Rlimit, Rlimit) -> Result<(), Errno>,
    ) -> Result<Rlimit, Errno> {
        let mut l = self.rlimits.lock();
        let slot = l.get_mut(resource).ok_or(Errno::EINVAL)?;
        let old = *slot;
        check(old, new)?;
        *slot = new;
        Ok(old)
    }

    /// A copy of the process's state.
    pub fn process(&self) -> ProcessState {
        *self.process.lock()
    }

    /// Changes the process's state (the process table does, under its
    /// lock).
    pub(super) fn update_process<R>(&self, f: impl FnOnce(&mut ProcessState) -> R) -> R {
        f(&mut self.process.lock())
    }

    /// PR_SET_CHILD_SUBREAPER.
    pub fn set_subreaper(&self, on: bool) {
        self.update_process(|s| s.subreaper = on);
    }

    pub fn dumpable(&self) -> u8 {
        self.dumpable.load(Ordering::Relaxed)
    }

    pub fn set_dumpable(&self, d: u8) {
        self.dumpable.store(d, Ordering::Relaxed);
    }

    pub fn oom_score_adj(&self) -> i16 {
        self.oom_score_adj.lock().0
    }

    /// Sets oom_score_adj to `adj` (-1000 ..= 1000, checked by the
    /// caller), as Linux's `__set_oom_adj`: below the lowest value set
    /// with CAP_SYS_RESOURCE only with it (EACCES), which a privileged
    /// writer's value then becomes.
    pub fn set_oom_score_adj(&self, adj: i16, privileged: bool) -> Result<(), Errno> {
        let mut s = self.oom_score_adj.lock();
        if adj < s.1 && !privileged {
            return Err(Errno::EACCES);
        }
        if privileged {
            s.1 = adj;
        }
        s.0 = adj;
        Ok(())
    }

    pub fn coredump_filter(&self) -> u32 {
        self.coredump_filter.load(Ordering::Relaxed)
    }

    pub fn set_coredump_filter(&self, filter: u32) {
        self.coredump_filter.store(filter, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::limits::{check_change, prlimit, RLIMIT_NOFILE};
    use crate::kernel::Kernel;
    use crate::mm::MemoryFile;
    use crate::testing;

    fn kernel() -> Arc<Kernel> {
        testing::kernel(Arc::new(MemoryFile::new(1 << 24).unwrap()))
    }

    #[test]
    fn oom_score_adj_and_coredump_filter_pass_to_a_fork() {
        let g = ThreadGroup::new(1, limits_for_test());
        assert_eq!((g.oom_score_adj(), g.coredump_filter()), (0, COREDUMP_FILTER_DEFAULT));
        assert_eq!(g.set_oom_score_adj(-1, false), Err(Errno::EACCES), "below the floor of 0");
        g.set_oom_score_adj(300, false).unwrap();
        g.set_coredump_filter(4);
        let child = g.fork(2);
        assert_eq!((child.oom_score_adj(), child.coredump_filter()), (300, 4));
        child.set_oom_score_adj(-500, true).unwrap();
        assert_eq!(child.set_oom_score_adj(-600, false), Err(Errno::EACCES), "the privileged value is the new floor");
        child.set_oom_score_adj(-400, false).unwrap();
        assert_eq!((g.oom_score_adj(), child.oom_score_adj()), (300, -400));
    }

    #[test]
    fn an_exec_waits_until_the_other_threads_leave() {
        let k = kernel();
        let leader = testing::thread(&k, 1, ThreadGroup::new(1, limits_for_test()));
        let other = testing::thread(&k, 2, leader.group().clone());
        let soon = Instant::now() + std::time::Duration::from_millis(20);
        assert!(!leader.group().wait_until_alone(1, soon), "thread 2 is still there at the deadline");
        let k2 = k.clone();
        let h = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            k2.remove_thread(&other)
        });
        let late = Instant::now() + std::time::Duration::from_secs(60);
        assert!(leader.group().wait_until_alone(1, late));
        assert!(Instant::now() < late, "woken by the leave, not the deadline");
        assert!(!h.join().unwrap());
    }

    fn nofile(cur: u64, max: u64) -> Rlimit {
        Rlimit { cur, max }
    }

    #[test]
    fn a_new_thread_joins_its_creators_group() {
        let k = kernel();
        let leader = testing::thread(&k, 1, ThreadGroup::new(1, limits_for_test()));
        let other = testing::thread(&k, 2, leader.group().clone());
        assert_eq!(other.tgid, 1);
        let tids: Vec<i32> = k.group(1).iter().map(|t| t.tid).collect();
        assert_eq!(tids, [1, 2]);
        assert!(!k.remove_thread(&leader), "thread 2 still runs");
        assert_eq!(k.group(1).len(), 1, "the group outlives its leader");
        assert!(k.remove_thread(&other), "the last thread out");
        assert!(k.thread_group(1).is_none());
    }

    #[test]
    fn a_limit_set_by_one_thread_is_seen_by_another() {
        let k = kernel();
        let a = testing::thread(&k, 1, ThreadGroup::new(1, limits_for_test()));
        let b = testing::thread(&k, 2, a.group().clone());
        let old = prlimit(&a, RLIMIT_NOFILE, Some(nofile(100, 200)), false).unwrap();
        assert_eq!(old, nofile(1024, 4096));
        assert_eq!(b.rlimit(RLIMIT_NOFILE), nofile(100, 200));
        assert_eq!(b.nofile(), 100);
        assert_eq!(prlimit(&b, RLIMIT_NOFILE, Some(nofile(10, 300)), false), Err(Errno::EPERM));
        assert_eq!(a.rlimit(RLIMIT_NOFILE), nofile(100, 200), "a refused change changes nothing");
    }

    #[test]
    fn fork_makes_a_new_group_with_the_parents_limits() {
        let k = kernel();
        let parent = testing::thread(&k, 1, ThreadGroup::new(1, limits_for_test()));
        parent.group().set_dumpable(0);
        let child = testing::thread(&k, 2, parent.group().fork(2));
        assert_eq!(child.tgid, 2);
        assert_eq!(child.rlimit(RLIMIT_NOFILE), nofile(1024, 4096));
        assert_eq!(child.group().dumpable(), 0);
        prlimit(&child, RLIMIT_NOFILE, Some(nofile(5, 5)), false).unwrap();
        assert_eq!(parent.rlimit(RLIMIT_NOFILE), nofile(1024, 4096), "the child's change is its own");
        assert_eq!(k.group(1).len(), 1);
        assert_eq!(k.group(2).len(), 1);
    }

    #[test]
    fn set_rlimit_checks_against_the_current_limit() {
        let g = ThreadGroup::new(1, limits_for_test());
        let check = |old, new| check_change(RLIMIT_NOFILE, old, new, false);
        assert_eq!(g.set_rlimit(RLIMIT_NOFILE, nofile(9, 8), check), Err(Errno::EINVAL));
        assert_eq!(g.set_rlimit(RLIMIT_NLIMITS, nofile(1, 1), |_, _| Ok(())), Err(Errno::EINVAL));
        assert_eq!(g.rlimit(RLIMIT_NLIMITS), nofile(0, 0), "an unknown limit reads as 0");
    }

    /// The default limits with NOFILE at 1024/4096.
    fn limits_for_test() -> [Rlimit; RLIMIT_NLIMITS] {
        let mut l = crate::kernel::limits::defaults();
        l[RLIMIT_NOFILE] = nofile(1024, 4096);
        l
    }
}
