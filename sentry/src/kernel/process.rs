//! The process table: parent/child links, every process's `ThreadGroup`
//! by pid (zombies' too, until reaped), the wake-ups `wait4` and `vfork`
//! sleep on. Each group owns its session, process group, exit and
//! job-control state; the table changes it under its lock, so that a scan
//! of many processes (wait, reparenting, orphaned groups) sees one
//! consistent picture and a change wakes the waits.

use super::cputime::CpuTimes;
use super::task::ExitStatus;
use super::thread_group::{ProcessState, ThreadGroup};
use crate::waiter::{self, wait_once, Waker};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;

/// The pid of the sandbox's init process.
pub(crate) const INIT_PID: i32 = 1;

struct Entry {
    ppid: i32,
    /// The parent's thread that created it (0: none in particular, as
    /// once reparented): whose children `__WNOTHREAD` waits for.
    parent_tid: i32,
    /// The signal its parent gets at its exit (0: none): a child whose
    /// signal is not SIGCHLD is a "clone" child, which only `__WCLONE`
    /// or `__WALL` waits for.
    exit_signal: i32,
    /// It died traced by its parent: the parent's wait reaps it whatever
    /// its exit signal (Linux's `eligible_child` for a ptrace child).
    traced_exit: bool,
    /// A vfork child released its parent (exec or exit).
    vfork_released: bool,
    group: Arc<ThreadGroup>,
}

impl Entry {
    /// A copy of the process's state.
    fn state(&self) -> ProcessState {
        self.group.process()
    }

    fn update<R>(&self, f: impl FnOnce(&mut ProcessState) -> R) -> R {
        self.group.update_process(f)
    }

    fn alive(&self) -> bool {
        self.state().status.is_none()
    }
}

/// A child given a new parent when its parent exited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reparented {
    pub pid: i32,
    pub new_parent: i32,
    /// It had already exited: the new parent is told (SIGCHLD).
    pub zombie: Option<ExitStatus>,
}

/// What `wait` reports about a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildEvent {
    Exited(ExitStatus),
    /// Stopped by this signal (WUNTRACED).
    Stopped(i32),
    /// Continued by SIGCONT (WCONTINUED).
    Continued,
}

/// Which changes a `wait` call reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitFor {
    pub exited: bool,
    pub stopped: bool,
    pub continued: bool,
    /// Which children by their exit signal (`__WCLONE`, `__WALL`).
    pub kind: ChildKind,
    /// Only the children this thread created (`__WNOTHREAD`).
    pub thread: Option<i32>,
}

/// Which children a wait considers, by their exit signal, as Linux's
/// `eligible_child`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildKind {
    /// Those that signal SIGCHLD at exit (the default).
    Sigchld,
    /// The others ("clone" children, `__WCLONE`).
    Clone,
    /// All (`__WALL`).
    All,
}

impl ChildKind {
    fn admits(self, exit_signal: i32) -> bool {
        match self {
            ChildKind::Sigchld => exit_signal == libc::SIGCHLD,
            ChildKind::Clone => exit_signal != libc::SIGCHLD,
            ChildKind::All => true,
        }
    }
}

impl WaitFor {
    #[cfg(test)]
    pub const EXITED: WaitFor =
        WaitFor { exited: true, stopped: false, continued: false, kind: ChildKind::Sigchld, thread: None };

    /// Whether the wait considers a child of this exit signal, created by
    /// this thread of the parent.
    fn considers(self, e: &Entry) -> bool {
        (e.traced_exit || self.kind.admits(e.exit_signal))
            && self.thread.is_none_or(|t| e.parent_tid == 0 || e.parent_tid == t)
    }

    fn wants(self, e: &ProcessState) -> Option<ChildEvent> {
        if let Some(s) = e.status {
            return self.exited.then_some(ChildEvent::Exited(s));
        }
        match e.unreported {
            Some(ev @ ChildEvent::Stopped(_)) if self.stopped => Some(ev),
            Some(ChildEvent::Continued) if self.continued => Some(ChildEvent::Continued),
            _ => None,
        }
    }
}

/// Why `wait` returned without a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// No child matches the target (ECHILD).
    NoChildren,
    /// The waiting thread was interrupted.
    Interrupted(crate::abi::Errno),
}

/// What `wait4` selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitTarget {
    Any,
    Pid(i32),
    Group(i32),
}

#[derive(Default)]
pub struct ProcessTable {
    procs: Arc<Mutex<HashMap<i32, Entry>>>,
    changed: Arc<Condvar>,
}

impl ProcessTable {
    /// Registers a new process, `group`; its process group and session
    /// are its parent's.
    pub fn add(&self, group: Arc<ThreadGroup>, ppid: i32) {
        self.add_child(group, ppid, 0, libc::SIGCHLD);
    }

    /// `add`, for a child created by thread `parent_tid` of its parent,
    /// which is to signal `exit_signal` at its exit.
    pub fn add_child(&self, group: Arc<ThreadGroup>, ppid: i32, parent_tid: i32, exit_signal: i32) {
        let mut p = self.procs.lock();
        let pid = group.tgid();
        let (pgid, sid) = p.get(&ppid).map_or((pid, pid), |e| {
            let s = e.state();
            (s.pgid, s.sid)
        });
        group.update_process(|s| (s.pgid, s.sid) = (pgid, sid));
        p.insert(pid, Entry { ppid, parent_tid, exit_signal, traced_exit: false, vfork_released: false, group });
    }

    /// Forgets a process that never ran (fork failed).
    pub fn remove(&self, pid: i32) {
        self.procs.lock().remove(&pid);
    }

    /// The signal process `pid` is to send its parent at exit.
    pub fn exit_signal(&self, pid: i32) -> i32 {
        self.procs.lock().get(&pid).map_or(libc::SIGCHLD, |e| e.exit_signal)
    }

    /// Process `pid` is dying traced by its parent, which reaps it as a
    /// tracer does (whatever wait's `__WCLONE` says).
    pub fn exiting_traced(&self, pid: i32) {
        if let Some(e) = self.procs.lock().get_mut(&pid) {
            e.traced_exit = true;
        }
    }

    /// Thread `tid` of process `pid` ended: its children become the whole
    /// process's (Linux hands them to another of its threads).
    pub fn thread_exited(&self, pid: i32, tid: i32) {
        let mut p = self.procs.lock();
        for e in p.values_mut().filter(|e| e.ppid == pid && e.parent_tid == tid) {
            e.parent_tid = 0;
        }
    }

    pub fn ppid(&self, pid: i32) -> i32 {
        self.procs.lock().get(&pid).map_or(0, |e| e.ppid)
    }

    pub fn pgid(&self, pid: i32) -> Option<i32> {
        self.procs.lock().get(&pid).map(|e| e.state().pgid)
    }

    pub fn sid(&self, pid: i32) -> Option<i32> {
        self.procs.lock().get(&pid).map(|e| e.state().sid)
    }

    /// Whether `pid` is alive (not a zombie).
    pub fn alive(&self, pid: i32) -> bool {
        self.procs.lock().get(&pid).is_some_and(Entry::alive)
    }

    /// Starts the exit of every thread of `pid` with `status`; the first
    /// request wins. Returns false if the process is gone.
    pub fn start_group_exit(&self, pid: i32, status: ExitStatus) -> bool {
        let p = self.procs.lock();
        let Some(e) = p.get(&pid).filter(|e| e.alive()) else { return false };
        e.update(|s| {
            s.group_exit.get_or_insert(status);
        });
        // A stopped process must wake up to die.
        self.changed.notify_all();
        true
    }

    /// How many times `pid` was continued (or killed): read when a stop
    /// signal is taken, then given to `stop`.
    pub fn continues(&self, pid: i32) -> u64 {
        self.procs.lock().get(&pid).map_or(0, |e| e.state().continues)
    }

    /// Stops `pid` (job control); false if it was stopped already, is
    /// exiting, or was continued since `continues` was read.
    pub fn stop(&self, pid: i32, sig: i32, continues: u64) -> bool {
        let p = self.procs.lock();
        let Some(e) = p.get(&pid) else { return false };
        let stopped = e.update(|s| {
            let can = s.status.is_none() && s.group_exit.is_none() && s.stopped_by.is_none();
            if !can || s.continues != continues {
                return false;
            }
            s.stopped_by = Some(sig);
            s.unreported = Some(ChildEvent::Stopped(sig));
            true
        });
        if stopped {
            self.changed.notify_all();
        }
        stopped
    }

    /// Resumes a stopped `pid`; `report` makes it a change its parent's
    /// wait(WCONTINUED) sees (SIGCONT; not SIGKILL). False if it was not
    /// stopped.
    pub fn resume(&self, pid: i32, report: bool) -> bool {
        let p = self.procs.lock();
        let Some(e) = p.get(&pid) else { return false };
        // Parked threads re-check their wake conditions (a SIGKILL).
        self.changed.notify_all();
        e.update(|s| {
            s.continues += 1;
            if s.stopped_by.take().is_none() {
                return false;
            }
            s.unreported = report.then_some(ChildEvent::Continued);
            true
        })
    }

    /// POSIX's orphaned process group: no live member has a live parent in
    /// another group of the same session (so no job-control shell could
    /// ever continue it). Terminal stop signals to it are discarded.
    pub fn group_orphaned(&self, pgid: i32) -> bool {
        let p = self.procs.lock();
        let member = |s: &ProcessState| s.pgid == pgid && s.status.is_none();
        !p.values().map(|e| (e, e.state())).filter(|(_, s)| member(s)).any(|(e, s)| {
            p.get(&e.ppid)
                .map(Entry::state)
                .is_some_and(|parent| parent.status.is_none() && parent.pgid != pgid && parent.sid == s.sid)
        })
    }

    /// The signal that stopped `pid`, if it is stopped.
    pub fn stopped_by(&self, pid: i32) -> Option<i32> {
        self.procs.lock().get(&pid).and_then(|e| e.state().stopped_by)
    }

    /// Blocks a thread of `pid` while the process is stopped, not
    /// exiting, and `wake` (the thread's own reasons: SIGKILL pending, an
    /// exec ending it) is false. What sets those interrupts the thread,
    /// which wakes this wait.
    pub fn wait_while_stopped(&self, pid: i32, wake: impl Fn() -> bool) {
        waiter::with_waker(self.waker(), || {
            let mut p = self.procs.lock();
            let stopped = |e: &Entry| {
                let s = e.state();
                s.stopped_by.is_some() && s.group_exit.is_none()
            };
            while p.get(&pid).is_some_and(stopped) && !wake() {
                self.changed.wait(&mut p);
            }
        });
    }

    /// Wakes the waits on the table (to notice an interruption).
    fn waker(&self) -> Waker {
        let (procs, changed) = (self.procs.clone(), self.changed.clone());
        Arc::new(move || {
            let _g = procs.lock();
            changed.notify_all();
        })
    }

    /// The status the whole process `pid` is exiting with, if it is.
    pub fn group_exit(&self, pid: i32) -> Option<ExitStatus> {
        self.procs.lock().get(&pid).and_then(|e| e.state().group_exit)
    }

    /// setpgid: moves `pid` into group `pgid` of the same session (a new
    /// group when pgid == pid). EPERM for a session leader or a group of
    /// another session.
    pub fn set_pgid(&self, pid: i32, pgid: i32) -> Result<(), crate::abi::Errno> {
        use crate::abi::Errno;
        let p = self.procs.lock();
        let Some(e) = p.get(&pid) else { return Err(Errno::ESRCH) };
        let sid = e.state().sid;
        if sid == pid {
            return Err(Errno::EPERM);
        }
        let in_session = |s: ProcessState| s.pgid == pgid && s.sid == sid && s.status.is_none();
        if pgid != pid && !p.values().map(Entry::state).any(in_session) {
            return Err(Errno::EPERM);
        }
        e.update(|s| s.pgid = pgid);
        Ok(())
    }

    /// setsid: `pid` leads a new session and process group. EPERM if it
    /// already leads a process group.
    pub fn set_sid(&self, pid: i32) -> Result<i32, crate::abi::Errno> {
        use crate::abi::Errno;
        let p = self.procs.lock();
        if p.values().map(Entry::state).any(|s| s.pgid == pid && s.status.is_none()) {
            return Err(Errno::EPERM);
        }
        let e = p.get(&pid).ok_or(Errno::ESRCH)?;
        e.update(|s| (s.sid, s.pgid) = (pid, pid));
        Ok(pid)
    }

    /// Process `pid`: alive, exiting or a zombie not yet reaped.
    pub fn group_of(&self, pid: i32) -> Option<Arc<ThreadGroup>> {
        self.procs.lock().get(&pid).map(|e| e.group.clone())
    }

    /// Whether `pid` exists: alive, exiting or a zombie not yet reaped.
    pub fn exists(&self, pid: i32) -> bool {
        self.procs.lock().contains_key(&pid)
    }

    /// Whether process group `pgid` has a member, zombies included.
    pub fn group_exists(&self, pgid: i32) -> bool {
        self.procs.lock().values().any(|e| e.state().pgid == pgid)
    }

    /// Every live process in process group `pgid`.
    pub fn group_members(&self, pgid: i32) -> Vec<i32> {
        let p = self.procs.lock();
        p.iter().filter(|(_, e)| e.state().pgid == pgid && e.alive()).map(|(&k, _)| k).collect()
    }

    /// Every live process.
    pub fn live(&self) -> Vec<i32> {
        self.procs.lock().iter().filter(|(_, e)| e.alive()).map(|(&k, _)| k).collect()
    }

    /// Records an exit: the process becomes a zombie, its children are
    /// reparented to the nearest live subreaper among its ancestors, or
    /// to init; waiters wake. Returns the reparented children.
    /// `tell` gets the parent's pid and the reparented children under the
    /// table's lock, as the zombies appear: as in Linux's exit_notify, the
    /// SIGCHLDs it queues are pending before a wait can reap the zombies,
    /// so none is lost (a reaped zombie's parent is no longer known) nor
    /// late (after the wait returned). `tell` also gets the exit signal,
    /// and returns whether the parent reaps its dying children at once
    /// (SIGCHLD ignored): a child that signals SIGCHLD and is not traced
    /// by its parent then leaves no zombie (nor CPU time for the parent's
    /// RUSAGE_CHILDREN).
    pub fn exit(
        &self,
        pid: i32,
        status: ExitStatus,
        tell: impl FnOnce(i32, i32, &[Reparented]) -> bool,
    ) -> Vec<Reparented> {
        let mut p = self.procs.lock();
        let mut ppid = 0;
        let mut exit_signal = libc::SIGCHLD;
        let mut traced = false;
        let mut group = None;
        if let Some(e) = p.get_mut(&pid) {
            e.update(|s| s.status = Some(status));
            group = Some(e.group.clone());
            e.vfork_released = true;
            ppid = e.ppid;
            exit_signal = e.exit_signal;
            traced = e.traced_exit;
        }
        let new_parent = Self::reaper_for(&p, pid);
        let mut moved = Vec::new();
        for (&child, e) in p.iter_mut().filter(|(_, e)| e.ppid == pid) {
            // As Linux's reparent_leader: an adopted child signals SIGCHLD.
            (e.ppid, e.parent_tid, e.exit_signal) = (new_parent, 0, libc::SIGCHLD);
            moved.push(Reparented { pid: child, new_parent, zombie: e.state().status });
        }
        // Zombies whose parent is gone (or init that never waits for
        // them, once init itself exits) are released right away.
        let orphans: Vec<i32> =
            p.iter().filter(|(_, e)| !e.alive() && e.ppid == pid && pid == INIT_PID).map(|(&k, _)| k).collect();
        let mut gone: Vec<Arc<ThreadGroup>> = orphans.iter().filter_map(|k| p.remove(k)).map(|e| e.group).collect();
        if tell(ppid, exit_signal, &moved) && exit_signal == libc::SIGCHLD && !traced {
            gone.extend(p.remove(&pid).map(|e| e.group));
        }
        self.changed.notify_all();
        drop(p);
        if let Some(g) = group {
            g.exited.notify(crate::abi::poll::POLLIN | crate::abi::poll::POLLRDNORM);
        }
        for g in gone {
            g.reaped();
        }
        moved
    }

    /// Who adopts the children of exiting process `pid`: its nearest live
    /// ancestor that is a subreaper, else init.
    fn reaper_for(p: &HashMap<i32, Entry>, pid: i32) -> i32 {
        let mut at = p.get(&pid).map_or(0, |e| e.ppid);
        // Each step goes to a parent; the bound guards against a cycle.
        for _ in 0..p.len() {
            match p.get(&at) {
                Some(e) if at != INIT_PID => {
                    if e.state().subreaper && e.alive() {
                        return at;
                    }
                    at = e.ppid;
                }
                _ => break,
            }
        }
        INIT_PID
    }

    /// Blocks until process `pid` has exited and returns its status.
    pub fn wait_exit(&self, pid: i32) -> Option<ExitStatus> {
        let mut p = self.procs.lock();
        loop {
            match p.get(&pid) {
                None => return None,
                Some(e) if !e.alive() => return e.state().status,
                Some(_) => self.changed.wait(&mut p),
            }
        }
    }

    /// A vfork child execs or exits: its parent may run again.
    pub fn release_vfork(&self, pid: i32) {
        if let Some(e) = self.procs.lock().get_mut(&pid) {
            e.vfork_released = true;
        }
        self.changed.notify_all();
    }

    /// Blocks until `released` (the vfork thread it watches went, with a
    /// `notify`), or `killed`, as `wait_vfork`.
    pub fn wait_vfork_thread(&self, released: impl Fn() -> bool, killed: impl Fn() -> bool) {
        waiter::with_waker(self.waker(), || {
            let mut p = self.procs.lock();
            while !released() && !killed() {
                self.changed.wait(&mut p);
            }
        });
    }

    /// Blocks until the vfork child `pid` released its parent, or `killed`
    /// says the parent is dying: as in Linux the wait is killable, so a
    /// SIGKILL (or an exit of its group) ends a parent whose child never
    /// execs nor exits.
    pub fn wait_vfork(&self, pid: i32, killed: impl Fn() -> bool) {
        waiter::with_waker(self.waker(), || {
            let mut p = self.procs.lock();
            while p.get(&pid).is_some_and(|e| !e.vfork_released) && !killed() {
                self.changed.wait(&mut p);
            }
        });
    }

    /// Reaps (or, with `peek`, only reports) a child of `parent` matching
    /// `target` that exited — or stopped or continued, as `what` asks.
    /// `Ok(None)` means children exist but none changed and `block` is
    /// false.
    #[cfg(test)]
    pub fn wait(
        &self,
        parent: i32,
        target: WaitTarget,
        what: WaitFor,
        block: bool,
        peek: bool,
    ) -> Result<Option<(i32, ChildEvent)>, WaitError> {
        Ok(self.wait_usage(parent, target, what, block, peek)?.map(|(pid, ev, _)| (pid, ev)))
    }

    /// `wait`, also returning the child's CPU time (its own and its reaped
    /// children's, as wait4's rusage). Reaping it adds that to the
    /// parent's children's time.
    #[cfg(test)]
    pub fn wait_usage(
        &self,
        parent: i32,
        target: WaitTarget,
        what: WaitFor,
        block: bool,
        peek: bool,
    ) -> Result<Option<(i32, ChildEvent, CpuTimes)>, WaitError> {
        let none = |_: &dyn Fn(i32, i32) -> bool| (false, None::<()>);
        Ok(self.wait_with(parent, target, what, block, peek, none)?.and_then(|w| match w {
            Waited::Child(pid, ev, usage) => Some((pid, ev, usage)),
            Waited::Other(()) => None,
        }))
    }

    /// `wait_usage`, also asking `others` (under the table's lock, before
    /// the children) for news of processes the parent waits for without
    /// being their parent (its ptrace tracees): given a matcher of (tid,
    /// tgid) by `target`, it returns whether there are any and the news.
    pub fn wait_with<T>(
        &self,
        parent: i32,
        target: WaitTarget,
        what: WaitFor,
        block: bool,
        peek: bool,
        mut others: impl FnMut(&dyn Fn(i32, i32) -> bool) -> (bool, Option<T>),
    ) -> Result<Option<Waited<T>>, WaitError> {
        let mut p = self.procs.lock();
        loop {
            let matches = |pid: i32, e: &Entry| {
                e.ppid == parent
                    && what.considers(e)
                    && match target {
                        WaitTarget::Any => true,
                        WaitTarget::Pid(t) => t == pid,
                        WaitTarget::Group(g) => e.state().pgid == g,
                    }
            };
            let (other_any, news) = {
                let procs = &*p;
                let other_matches = |tid: i32, tgid: i32| match target {
                    WaitTarget::Any => true,
                    WaitTarget::Pid(t) => t == tid,
                    WaitTarget::Group(g) => procs.get(&tgid).is_some_and(|e| e.state().pgid == g),
                };
                others(&other_matches)
            };
            if let Some(news) = news {
                return Ok(Some(Waited::Other(news)));
            }
            let mut any = other_any;
            let mut found = None;
            for (&pid, e) in p.iter() {
                if matches(pid, e) {
                    // A zombie is a child only to a wait for exits (Linux's
                    // wait_task_zombie without WEXITED): waitid(WSTOPPED)
                    // with only zombies left is ECHILD.
                    any |= what.exited || e.alive();
                    if let Some(ev) = what.wants(&e.state()) {
                        found = Some((pid, ev));
                        break;
                    }
                }
            }
            if let Some((pid, ev)) = found {
                let usage = p.get(&pid).map(|e| e.group.cpu_times().plus(e.group.cpu.children())).unwrap_or_default();
                if !peek {
                    match ev {
                        ChildEvent::Exited(_) => {
                            let gone = p.remove(&pid);
                            if let Some(me) = p.get(&parent) {
                                me.group.cpu.child_reaped(usage);
                            }
                            drop(p);
                            if let Some(e) = gone {
                                e.group.reaped();
                            }
                            return Ok(Some(Waited::Child(pid, ev, usage)));
                        }
                        _ => {
                            if let Some(e) = p.get(&pid) {
                                e.update(|s| s.unreported = None);
                            }
                        }
                    }
                }
                return Ok(Some(Waited::Child(pid, ev, usage)));
            }
            if !any {
                return Err(WaitError::NoChildren);
            }
            if !block {
                return Ok(None);
            }
            wait_once(&mut p, &self.changed, self.waker()).map_err(WaitError::Interrupted)?;
        }
    }

    /// Wakes the waits on the table: news they ask `wait_with`'s `others`
    /// for has come.
    pub fn notify(&self) {
        let _g = self.procs.lock();
        self.changed.notify_all();
    }
}

/// What `wait_with` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited<T> {
    /// A child changed (its pid, the change, its CPU time).
    Child(i32, ChildEvent, CpuTimes),
    /// News from `others`.
    Other(T),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds process `pid`, a child of `ppid`, with a group of its own.
    fn add(t: &ProcessTable, pid: i32, ppid: i32) -> Arc<ThreadGroup> {
        let g = ThreadGroup::new(pid, crate::kernel::limits::defaults());
        t.add(g.clone(), ppid);
        g
    }

    #[test]
    fn wait_reaps_exited_children_only() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        add(&t, 3, 1);
        let exited = WaitFor::EXITED;
        assert_eq!(t.wait(1, WaitTarget::Any, exited, false, false), Ok(None));
        t.exit(3, ExitStatus::Code(4), |_, _, _| false);
        let four = ChildEvent::Exited(ExitStatus::Code(4));
        assert_eq!(t.wait(1, WaitTarget::Pid(2), exited, false, false), Ok(None));
        assert_eq!(t.wait(1, WaitTarget::Any, exited, false, true), Ok(Some((3, four))));
        assert_eq!(t.wait(1, WaitTarget::Any, exited, false, false), Ok(Some((3, four))));
        assert_eq!(t.wait(1, WaitTarget::Pid(3), exited, false, false), Err(WaitError::NoChildren), "already reaped");
        assert_eq!(t.wait(2, WaitTarget::Any, exited, false, false), Err(WaitError::NoChildren), "no children");
    }

    #[test]
    fn waits_choose_children_by_exit_signal_and_creating_thread() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        t.add_child(ThreadGroup::new(2, crate::kernel::limits::defaults()), 1, 1, libc::SIGUSR1);
        t.add_child(ThreadGroup::new(3, crate::kernel::limits::defaults()), 1, 7, libc::SIGCHLD);
        t.exit(2, ExitStatus::Code(0), |_, sig, _| {
            assert_eq!(sig, libc::SIGUSR1);
            false
        });
        t.exit(3, ExitStatus::Code(0), |_, sig, _| {
            assert_eq!(sig, libc::SIGCHLD);
            false
        });
        let exited = WaitFor::EXITED;
        let clone = WaitFor { kind: ChildKind::Clone, ..exited };
        let all = WaitFor { kind: ChildKind::All, ..exited };
        let zero = ChildEvent::Exited(ExitStatus::Code(0));
        assert_eq!(t.wait(1, WaitTarget::Pid(2), exited, false, true), Err(WaitError::NoChildren), "a clone child");
        assert_eq!(t.wait(1, WaitTarget::Pid(3), clone, false, true), Err(WaitError::NoChildren), "not a clone child");
        assert_eq!(t.wait(1, WaitTarget::Pid(2), clone, false, true), Ok(Some((2, zero))));
        assert_eq!(t.wait(1, WaitTarget::Pid(3), all, false, true), Ok(Some((3, zero))));
        let of_1 = WaitFor { thread: Some(1), ..all };
        assert_eq!(t.wait(1, WaitTarget::Pid(3), of_1, false, true), Err(WaitError::NoChildren), "thread 7's child");
        t.thread_exited(1, 7);
        assert_eq!(
            t.wait(1, WaitTarget::Pid(3), of_1, false, false),
            Ok(Some((3, zero))),
            "the process's, once 7 ended"
        );
        assert_eq!(t.wait(1, WaitTarget::Pid(2), of_1, false, false), Ok(Some((2, zero))));
    }

    #[test]
    fn a_parent_ignoring_sigchld_reaps_at_once() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        t.add_child(ThreadGroup::new(3, crate::kernel::limits::defaults()), 1, 1, libc::SIGUSR1);
        t.exit(2, ExitStatus::Code(0), |_, _, _| true);
        assert_eq!(t.wait(1, WaitTarget::Pid(2), WaitFor::EXITED, false, false), Err(WaitError::NoChildren));
        let clone = WaitFor { kind: ChildKind::Clone, ..WaitFor::EXITED };
        t.exit(3, ExitStatus::Code(0), |_, _, _| true);
        let zero = ChildEvent::Exited(ExitStatus::Code(0));
        assert_eq!(t.wait(1, WaitTarget::Pid(3), clone, false, false), Ok(Some((3, zero))), "not a SIGCHLD child");
    }

    #[test]
    fn zombies_are_no_children_to_a_wait_without_exits() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        let stops = WaitFor { exited: false, stopped: true, ..WaitFor::EXITED };
        assert_eq!(t.wait(1, WaitTarget::Any, stops, false, false), Ok(None), "a live child");
        t.exit(2, ExitStatus::Code(0), |_, _, _| false);
        assert_eq!(t.wait(1, WaitTarget::Any, stops, true, false), Err(WaitError::NoChildren));
        let zero = ChildEvent::Exited(ExitStatus::Code(0));
        assert_eq!(t.wait(1, WaitTarget::Any, WaitFor::EXITED, false, false), Ok(Some((2, zero))));
    }

    #[test]
    fn adopted_children_signal_sigchld() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        t.add_child(ThreadGroup::new(3, crate::kernel::limits::defaults()), 2, 2, libc::SIGUSR1);
        t.exit(2, ExitStatus::Code(0), |_, _, _| false);
        t.exit(3, ExitStatus::Code(0), |parent, sig, _| {
            assert_eq!((parent, sig), (1, libc::SIGCHLD));
            false
        });
        let zero = ChildEvent::Exited(ExitStatus::Code(0));
        assert_eq!(t.wait(1, WaitTarget::Pid(3), WaitFor::EXITED, false, false), Ok(Some((3, zero))));
    }

    #[test]
    fn orphaned_process_groups() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        assert!(t.group_orphaned(1), "init's group: its parent is outside");
        add(&t, 2, 1);
        t.set_pgid(2, 2).unwrap();
        assert!(!t.group_orphaned(2), "a job of init's session");
        add(&t, 3, 2);
        assert!(!t.group_orphaned(2));
        t.exit(2, ExitStatus::Code(0), |_, _, _| false);
        assert!(!t.group_orphaned(2), "3 is adopted by init, in another group of the same session");
        add(&t, 4, 1);
        t.set_sid(4).unwrap();
        add(&t, 5, 4);
        assert!(t.group_orphaned(4), "a new session's group: no parent in that session outside it");
    }

    #[test]
    fn stops_and_continues_are_reported_once_when_asked_for() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        let all = WaitFor { exited: true, stopped: true, continued: true, ..WaitFor::EXITED };
        assert!(t.stop(2, libc::SIGTSTP, t.continues(2)));
        assert!(!t.stop(2, libc::SIGSTOP, t.continues(2)), "already stopped");
        assert_eq!(t.stopped_by(2), Some(libc::SIGTSTP));
        assert_eq!(t.wait(1, WaitTarget::Any, WaitFor::EXITED, false, false), Ok(None), "not without WUNTRACED");
        assert_eq!(t.wait(1, WaitTarget::Any, all, false, true), Ok(Some((2, ChildEvent::Stopped(libc::SIGTSTP)))));
        assert_eq!(t.wait(1, WaitTarget::Any, all, false, false), Ok(Some((2, ChildEvent::Stopped(libc::SIGTSTP)))));
        assert_eq!(t.wait(1, WaitTarget::Any, all, false, false), Ok(None), "reported once");
        assert!(t.resume(2, true));
        assert!(!t.resume(2, true), "not stopped any more");
        t.wait_while_stopped(2, || false);
        assert_eq!(t.wait(1, WaitTarget::Any, all, false, false), Ok(Some((2, ChildEvent::Continued))));
        let before = t.continues(2);
        t.resume(2, true);
        assert!(!t.stop(2, libc::SIGSTOP, before), "a SIGCONT since the stop was taken cancels it");
        assert!(t.stop(2, libc::SIGSTOP, t.continues(2)));
        assert!(t.resume(2, false));
        assert_eq!(t.wait(1, WaitTarget::Any, all, false, false), Ok(None), "a SIGKILL wake-up is not reported");
    }

    #[test]
    fn an_exit_tells_the_parent_before_its_wait_can_reap() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        add(&t, 3, 2);
        let mut told = None;
        t.exit(2, ExitStatus::Code(0), |parent, _, moved| {
            told = Some((parent, moved.len(), t.procs.try_lock().is_none()));
            false
        });
        assert_eq!(told, Some((1, 1, true)), "told of its parent and adopted child with the table locked");
    }

    #[test]
    fn orphans_are_reparented_to_init() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        add(&t, 2, 1);
        add(&t, 5, 2);
        t.exit(2, ExitStatus::Code(0), |_, _, _| false);
        assert_eq!(t.ppid(5), INIT_PID);
    }

    #[test]
    fn orphans_go_to_the_nearest_live_subreaper() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        let two = add(&t, 2, 1);
        add(&t, 3, 2);
        add(&t, 4, 3);
        add(&t, 5, 4);
        two.set_subreaper(true);
        t.exit(5, ExitStatus::Code(1), |_, _, _| false);
        let moved = t.exit(4, ExitStatus::Code(0), |_, _, _| false);
        assert_eq!(moved, vec![Reparented { pid: 5, new_parent: 2, zombie: Some(ExitStatus::Code(1)) }]);
        assert_eq!(t.ppid(5), 2);
        t.exit(2, ExitStatus::Code(0), |_, _, _| false);
        t.exit(3, ExitStatus::Code(0), |_, _, _| false);
        assert_eq!(t.ppid(5), INIT_PID);
    }

    #[test]
    fn blocking_wait_wakes_on_exit() {
        let t = Arc::new(ProcessTable::default());
        add(&t, 1, 0);
        add(&t, 2, 1);
        let t2 = t.clone();
        let h = std::thread::spawn(move || t2.wait(1, WaitTarget::Any, WaitFor::EXITED, true, false));
        std::thread::sleep(std::time::Duration::from_millis(20));
        t.exit(2, ExitStatus::Signal(9), |_, _, _| false);
        assert_eq!(h.join().unwrap(), Ok(Some((2, ChildEvent::Exited(ExitStatus::Signal(9))))));
    }

    #[test]
    fn the_tables_changes_are_the_groups_own_state() {
        let t = ProcessTable::default();
        add(&t, 1, 0);
        let child = add(&t, 2, 1);
        assert_eq!((child.process().pgid, child.process().sid), (1, 1), "its parent's group and session");
        t.set_pgid(2, 2).unwrap();
        assert_eq!(child.process().pgid, 2);
        assert!(t.stop(2, libc::SIGTSTP, t.continues(2)));
        assert_eq!(child.process().stopped_by, Some(libc::SIGTSTP));
        child.set_subreaper(true);
        assert!(child.process().subreaper);
        assert!(t.start_group_exit(2, ExitStatus::Code(3)));
        assert_eq!(t.group_exit(2), Some(ExitStatus::Code(3)));
        assert_eq!(child.process().group_exit, Some(ExitStatus::Code(3)));
    }
}
