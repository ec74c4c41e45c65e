//! The kernel proper: the sandbox-wide state, tasks and threads,
//! credentials, limits and signal bookkeeping.

pub(crate) mod audit;
pub(crate) mod audit_reads;
pub(crate) mod caller;
pub(crate) mod cpu_itimers;
pub(crate) mod cputime;
pub(crate) mod exec;
pub(crate) mod extensions;
pub(crate) mod flock;
pub(crate) mod fork;
pub(crate) mod fs_context;
pub(crate) mod futex;
pub(crate) mod ipc;
pub mod limits;
pub(crate) mod loadavg;
pub(crate) mod namespaces;
pub(crate) mod package;
pub(crate) mod pids;
pub(crate) mod process;
pub(crate) mod process_timers;
pub(crate) mod ptrace;
pub(crate) mod record_lock;
pub(crate) mod rlimit_cpu;
pub(crate) mod robust;
pub mod seccomp;
pub(crate) mod siginfo;
pub(crate) mod signal;
pub(crate) mod signal_frame;
pub(crate) mod sigqueue;
pub(crate) mod syscall_hooks;
pub(crate) mod syscall_table;
pub(crate) mod sysctl;
pub(crate) mod task;
pub(crate) mod thread;
pub(crate) mod thread_group;
pub(crate) mod timers;
pub mod watchdog;

pub(crate) use fs_context::FsContext;
pub(crate) use syscall_hooks::{SyscallObserver, TaskIdentity};
pub use syscall_table::Handler;
pub(crate) use syscall_table::{ControlHandler, Outcome, ValueHandler};
pub use syscall_table::{Support, Syscall};
pub use task::ExitStatus;
pub(crate) use task::Task;
pub(crate) use thread::Thread;
pub(crate) use thread_group::ThreadGroup;

use crate::mm::{MemoryFile, MemoryManager};
use crate::platform::Platform;
use crate::vfs::{Dentry, Mount, MountNamespace, Node};
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

/// What the kernel needs of the terminal layer, which sits above it
/// (gVisor's `TTYOperations`, for the same reason: the kernel never
/// imports a filesystem).
pub trait Terminals: Send + Sync {
    /// Whether session `sid` has a controlling terminal.
    fn has_controlling(&self, sid: i32) -> bool;
    /// Session `sid`'s leader exited: its terminal is released and the
    /// foreground group hears SIGHUP.
    fn session_ended(&self, sid: i32);
}

/// Options that shape a sandbox's kernel.
#[derive(Clone, Debug, Default)]
pub struct KernelOptions {
    pub hostname: Vec<u8>,
    /// The init process is a container's, the init of a pid namespace: it
    /// receives only the signals it has handlers for (faults and the OOM
    /// killer still end it; the runtime's SIGKILL ends the sandbox).
    /// `husk do` leaves it off, so Ctrl-C ends a handler-less command.
    pub protect_init: bool,
}

/// The live threads by tid and their processes by tgid, changed together.
#[derive(Default)]
struct ThreadTable {
    threads: BTreeMap<i32, Arc<Thread>>,
    groups: BTreeMap<i32, Arc<ThreadGroup>>,
    /// Tasks being created, counted against the pids limit (`pids`).
    reserved: u64,
    /// The CPU time of every thread that left the table.
    exited_cpu: cputime::CpuTimes,
}

/// The state of one sandbox.
pub struct Kernel {
    platform: Arc<dyn Platform>,
    memory: Arc<MemoryFile>,
    /// The sandbox's first mount namespace (a process may have a copy:
    /// `FsContext::mounts`).
    mounts: Arc<MountNamespace>,
    /// The pseudo-filesystem that holds anonymous files (pipes …).
    anon: Arc<Mount>,
    /// The sandbox's network stack (IP sockets).
    net: Arc<husk_netstack::Stack>,
    /// The state that filesystems and handlers keep per sandbox.
    extensions: extensions::Extensions,
    /// The terminal layer, told of session changes (set at boot).
    terminals: OnceLock<Arc<dyn Terminals>>,
    /// Every live thread, and every process with a live thread.
    threads: Mutex<ThreadTable>,
    procs: process::ProcessTable,
    futexes: futex::Futexes,
    /// Runnable guest threads and the load average (/proc/loadavg).
    load: Arc<loadavg::LoadAvg>,
    /// The service that fires ITIMER_REAL and POSIX timers, which each
    /// process's `ThreadGroup` owns.
    timers: timers::Timers,
    /// The watcher of the processes' ITIMER_VIRTUAL and ITIMER_PROF.
    cpu_itimers: cpu_itimers::CpuItimers,
    flocks: flock::Flocks,
    record_locks: record_lock::RecordLocks,
    next_tid: AtomicI32,
    next_anon_ino: AtomicU64,
    boot_instant: Instant,
    boot_time: SystemTime,
    hostname: Mutex<Vec<u8>>,
    domainname: Mutex<Vec<u8>>,
    net_sysctls: sysctl::NetSysctls,
    /// The host cgroup's limits, shown at /sys/fs/cgroup.
    cgroup_limits: Arc<Mutex<limits::CgroupLimits>>,
    opts: KernelOptions,
    unimplemented_seen: Mutex<HashSet<usize>>,
    /// The address space of the last OOM victim and when it was killed:
    /// until its memory is released (or the wait gives up) no other
    /// process is chosen, as Linux's OOM killer waits for its victim.
    oom_pending: Mutex<Option<(std::sync::Weak<MemoryManager>, Instant)>>,
    /// The syscall layer's table, registered at start-up.
    syscall_table: std::sync::OnceLock<&'static [Syscall]>,
    syscall_observers: syscall_hooks::Observers,
    /// The sandbox's audit log, when it keeps one (set at boot).
    audit_log: OnceLock<Arc<crate::audit::AuditLog>>,
    /// The processes the OOM killer ended.
    oom_killed: Mutex<HashSet<i32>>,
    /// Whether clones are being refused at the pids limit.
    pids_breach: pids::Episode,
    /// The sandbox-wide limits that act on every process (`watchdog`),
    /// and the one that ended the sandbox.
    watchdog: watchdog::State,
    /// The RLIMIT_NOFILE ceiling of every process (`--nofile`).
    nofile: limits::NofileCeiling,
}

impl Kernel {
    pub fn new(
        platform: Arc<dyn Platform>,
        memory: Arc<MemoryFile>,
        root: Arc<dyn Node>,
        anon_root: Arc<dyn Node>,
        opts: KernelOptions,
    ) -> Kernel {
        let anon = Arc::new(Mount {
            id: 0,
            root: anon_root,
            mountpoint: None,
            fs_type: "anon_inodefs".into(),
            source: "anon_inodefs".into(),
            live: crate::vfs::MountFlags::new(0),
            opts: crate::vfs::MountOpts::default(),
        });
        let boot_instant = Instant::now();
        Kernel {
            platform,
            memory,
            mounts: Arc::new(MountNamespace::new(root, "overlay", "root")),
            anon,
            net: husk_netstack::Stack::new(),
            extensions: extensions::Extensions::default(),
            terminals: OnceLock::new(),
            threads: Mutex::default(),
            procs: process::ProcessTable::default(),
            futexes: futex::Futexes::default(),
            load: Arc::new(loadavg::LoadAvg::new(boot_instant)),
            timers: timers::Timers::default(),
            cpu_itimers: cpu_itimers::CpuItimers::default(),
            flocks: flock::Flocks::default(),
            record_locks: record_lock::RecordLocks::default(),
            next_tid: AtomicI32::new(1),
            next_anon_ino: AtomicU64::new(1),
            boot_instant,
            boot_time: SystemTime::now(),
            hostname: Mutex::new(opts.hostname.clone()),
            domainname: Mutex::new(b"(none)".to_vec()),
            net_sysctls: sysctl::NetSysctls::default(),
            cgroup_limits: Arc::default(),
            opts,
            unimplemented_seen: Mutex::new(HashSet::new()),
            oom_pending: Mutex::new(None),
            syscall_table: std::sync::OnceLock::new(),
            syscall_observers: syscall_hooks::Observers::default(),
            audit_log: OnceLock::new(),
            oom_killed: Mutex::new(HashSet::new()),
            pids_breach: pids::Episode::default(),
            watchdog: watchdog::State::default(),
            nofile: limits::NofileCeiling::default(),
        }
    }

    pub(crate) fn platform(&self) -> &Arc<dyn Platform> {
        &self.platform
    }

    /// The sandbox's guest memory.
    pub(crate) fn memory(&self) -> &Arc<MemoryFile> {
        &self.memory
    }

    /// The sandbox's first mount namespace.
    pub fn mounts(&self) -> &Arc<MountNamespace> {
        &self.mounts
    }

    /// The sandbox's network stack.
    pub(crate) fn net(&self) -> &Arc<husk_netstack::Stack> {
        &self.net
    }

    pub(crate) fn procs(&self) -> &process::ProcessTable {
        &self.procs
    }

    pub(crate) fn futexes(&self) -> &futex::Futexes {
        &self.futexes
    }

    /// Runnable guest threads and the load average.
    pub(crate) fn load(&self) -> &Arc<loadavg::LoadAvg> {
        &self.load
    }

    pub(crate) fn timers(&self) -> &timers::Timers {
        &self.timers
    }

    pub(crate) fn flocks(&self) -> &flock::Flocks {
        &self.flocks
    }

    pub(crate) fn record_locks(&self) -> &record_lock::RecordLocks {
        &self.record_locks
    }

    /// Process `pid` closed a descriptor of `f` (close, dup2 over it,
    /// close-on-exec, exit): as Linux's `filp_flush`, its record locks on
    /// the file go, and its dnotify registration through `f`.
    pub(crate) fn descriptor_closed(&self, pid: i32, f: &crate::vfs::FileDescription) {
        self.record_locks.closed(pid, f);
        f.closed_by(pid);
    }

    /// When the sandbox booted, on the monotonic clock.
    pub(crate) fn boot_instant(&self) -> Instant {
        self.boot_instant
    }

    /// When the sandbox booted, on the wall clock.
    pub(crate) fn boot_time(&self) -> SystemTime {
        self.boot_time
    }

    /// The sandbox's host name (its first UTS namespace's).
    pub(crate) fn hostname(&self) -> Vec<u8> {
        self.hostname.lock().clone()
    }

    /// The sandbox's NIS domain name (its first UTS namespace's).
    pub(crate) fn domainname(&self) -> Vec<u8> {
        self.domainname.lock().clone()
    }

    pub(crate) fn net_sysctls(&self) -> &sysctl::NetSysctls {
        &self.net_sysctls
    }

    /// The host cgroup's limits, shown at /sys/fs/cgroup.
    pub(crate) fn cgroup_limits(&self) -> &Arc<Mutex<limits::CgroupLimits>> {
        &self.cgroup_limits
    }

    /// The sandbox-wide limits that act on every process.
    pub(crate) fn watchdog(&self) -> &watchdog::State {
        &self.watchdog
    }

    /// The RLIMIT_NOFILE ceiling of every process.
    pub(crate) fn nofile(&self) -> &limits::NofileCeiling {
        &self.nofile
    }

    /// The sandbox's instance of a higher layer's state `T` (see
    /// `extensions`).
    pub fn ext<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.extensions.get()
    }

    /// Connects the terminal layer; the first call wins.
    pub fn set_terminals(&self, t: Arc<dyn Terminals>) {
        let _ = self.terminals.set(t);
    }

    /// Whether session `sid` has a controlling terminal.
    pub fn has_controlling_terminal(&self, sid: i32) -> bool {
        self.terminals.get().is_some_and(|t| t.has_controlling(sid))
    }

    /// Session `sid`'s leader exited: the terminal layer releases its
    /// controlling terminal.
    pub fn session_ended(&self, sid: i32) {
        if let Some(t) = self.terminals.get() {
            t.session_ended(sid);
        }
    }

    /// A new task's id. Ids are never reused, so an id names one task
    /// (and a group id one group) for the sandbox's life: a file owner
    /// (F_SETOWN) kept as a number never reaches a later task.
    pub fn alloc_tid(&self) -> i32 {
        self.next_tid.fetch_add(1, Ordering::Relaxed)
    }

    /// The last tid given out (tids are not reused): how many processes
    /// and threads were created since boot.
    pub fn last_tid(&self) -> i32 {
        self.next_tid.load(Ordering::Relaxed) - 1
    }

    /// An inode number for an anonymous file.
    pub fn anon_ino(&self) -> u64 {
        self.next_anon_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// A dentry for an anonymous file named like Linux names them
    /// (`pipe:[123]`, `anon_inode:[eventfd]`).
    pub fn anon_dentry(&self, name: &[u8], node: Arc<dyn Node>) -> Arc<Dentry> {
        Dentry::new(self.anon.clone(), None, name.to_vec(), node)
    }

    pub fn thread(&self, tid: i32) -> Option<Arc<Thread>> {
        self.threads.lock().threads.get(&tid).cloned()
    }

    /// Makes `t` live: found by its tid, and one of its process's threads.
    pub fn add_thread(&self, t: Arc<Thread>) {
        let mut table = self.threads.lock();
        let group = t.group().clone();
        group.join(t.clone());
        table.groups.insert(group.tgid(), group);
        table.threads.insert(t.tid, t);
    }

    /// Thread `t` is gone (it exited, or never started); true if no
    /// thread of its process is left.
    pub fn remove_thread(&self, t: &Thread) -> bool {
        // Its seccomp filters are no longer in use by it (a listener
        // reports POLLHUP when no thread uses its filter).
        t.seccomp.release();
        let mut table = self.threads.lock();
        if table.threads.remove(&t.tid).is_some() {
            table.exited_cpu = table.exited_cpu.plus(t.cpu.times());
        }
        let last = t.group().leave(t.tid);
        if last {
            table.groups.remove(&t.tgid);
        }
        last
    }

    /// Every live thread, in tid order.
    pub fn threads(&self) -> Vec<Arc<Thread>> {
        self.threads.lock().threads.values().cloned().collect()
    }

    /// The CPU time (user and system) the sandbox's guest has used: its
    /// live threads' (their runs of guest code under way included) and
    /// every ended one's.
    pub fn cpu_time(&self) -> std::time::Duration {
        self.cpu_times().total()
    }

    /// The user and system time the sandbox's guest has used (`cpu_time`
    /// split; runs of guest code under way count as user time).
    pub fn cpu_times(&self) -> cputime::CpuTimes {
        // One snapshot of the table, read without its lock held (a thread
        // that ends meanwhile is counted once, by its final times).
        let (live, exited): (Vec<Arc<Thread>>, _) = {
            let table = self.threads.lock();
            (table.threads.values().cloned().collect(), table.exited_cpu)
        };
        live.iter().fold(exited, |sum, t| {
            let running =
                if t.cpu.running() { t.cpu.running_user(t.mm().space().cpu_time()) } else { Default::default() };
            let own = t.cpu.times();
            sum.plus(cputime::CpuTimes { user: own.user.saturating_add(running), system: own.system })
        })
    }

    /// The CPU time process `group` has used: its threads' (their runs of
    /// guest code under way included) and its ended threads'.
    pub fn process_cpu_time(&self, group: &ThreadGroup) -> std::time::Duration {
        self.process_cpu_times(group).total()
    }

    /// The user and system time process `group` has used, its threads'
    /// runs of guest code under way counted as user time.
    pub fn process_cpu_times(&self, group: &ThreadGroup) -> cputime::CpuTimes {
        let running = group.threads().iter().filter(|t| t.cpu.running()).fold(std::time::Duration::ZERO, |sum, t| {
            sum.saturating_add(t.cpu.running_user(t.mm().space().cpu_time()))
        });
        let own = group.cpu_times();
        cputime::CpuTimes { user: own.user.saturating_add(running), system: own.system }
    }

    /// The tids of every live thread, in order.
    pub fn tids(&self) -> Vec<i32> {
        self.threads.lock().threads.keys().copied().collect()
    }

    /// Process `tgid`, while it has a live thread.
    pub fn thread_group(&self, tgid: i32) -> Option<Arc<ThreadGroup>> {
        self.threads.lock().groups.get(&tgid).cloned()
    }

    /// Reports an unimplemented system call once per number, in the debug
    /// log and the audit log, with the process `caller` that made it.
    pub fn report_unimplemented(&self, nr: usize, name: &str, caller: &Thread) {
        if self.unimplemented_seen.lock().insert(nr) {
            log::info!("unimplemented system call {name} ({nr}): returning ENOSYS");
            let _ = self.audit(|| crate::audit::Record::SyscallUnimplemented {
                nr: u64::try_from(nr).unwrap_or(u64::MAX),
                name: name.to_string(),
                pid: caller.tgid,
                comm: String::from_utf8_lossy(&caller.comm.lock()).into_owned(),
            });
        }
    }

    /// Makes `sig` pending for `target`, raised by the kernel itself
    /// (SI_KERNEL), and interrupts it.
    pub fn send_signal(&self, target: &Thread, sig: i32) {
        self.send_signal_info(target, siginfo::SigInfo::kernel(sig));
    }

    /// SIGPIPE for a write to a closed pipe or socket: sent by the writer
    /// to itself (SI_USER with its own ids), as Linux's send_sig does.
    pub fn raise_sigpipe(&self, t: &Thread) {
        self.raise_self(t, libc::SIGPIPE);
    }

    /// `sig` sent by `t` to itself (SI_USER with its own ids), as Linux's
    /// send_sig: SIGPIPE, SIGXFSZ.
    pub fn raise_self(&self, t: &Thread, sig: i32) {
        self.send_signal_info(t, siginfo::SigInfo::user(sig, siginfo::SI_USER, t.tgid, t.creds().uid));
    }

    /// A signal from outside the sandbox (the runtime, the host's
    /// terminal): the sender is in no process of the sandbox, so its pid
    /// and uid read 0, as for a sender outside a pid namespace.
    pub fn signal_from_outside(&self, tgid: i32, sig: i32) {
        self.signal_process_info(tgid, siginfo::SigInfo::user(sig, siginfo::SI_USER, 0, 0));
    }

    /// Makes the signal `info` describes pending for `target` and
    /// interrupts it so the signal is acted on at its next kernel entry.
    pub fn send_signal_info(&self, target: &Thread, info: siginfo::SigInfo) {
        self.job_control_at_send(target.tgid, info.signo());
        if signal::ignored_by(target, info.signo()) {
            return;
        }
        target.queue_signal(info);
        self.signal_queued(target);
    }

    /// Interrupts `target` for a signal just made pending for it.
    pub fn signal_queued(&self, target: &Thread) {
        self.interrupt(target);
        // A signalfd may have become readable.
        target.signal_events.notify(crate::waiter::ALL);
    }

    /// Job control acts when a signal is sent, as in Linux: SIGCONT
    /// resumes a stopped process and discards its pending stop signals, a
    /// stop signal discards a pending SIGCONT, and SIGKILL wakes a stopped
    /// process so it can die.
    pub fn job_control_at_send(&self, tgid: i32, sig: i32) {
        match sig {
            libc::SIGCONT => {
                for t in self.group(tgid) {
                    t.discard_signals(signal::STOP_SIGNALS);
                }
                if self.procs.resume(tgid, true) {
                    self.notify_parent_of_job_change(tgid);
                }
            }
            libc::SIGKILL => {
                self.procs.resume(tgid, false);
            }
            s if signal::sigbit(s) & signal::STOP_SIGNALS != 0 => {
                for t in self.group(tgid) {
                    t.discard_signals(signal::sigbit(libc::SIGCONT));
                }
            }
            _ => {}
        }
    }

    /// Stops process `tgid` (a stop signal's default action): each of its
    /// threads parks at its next kernel entry until SIGCONT or SIGKILL.
    /// `continues` is the process's continue count when the stop signal
    /// was taken: a SIGCONT sent since then cancels the stop.
    pub fn stop_process(&self, tgid: i32, sig: i32, continues: u64) {
        if !self.procs.stop(tgid, sig, continues) {
            return;
        }
        for t in self.group(tgid) {
            t.stop_requested.store(true, std::sync::atomic::Ordering::SeqCst);
            self.interrupt(&t);
        }
        self.notify_parent_of_job_change(tgid);
    }

    /// SIGCHLD to the parent of a process that stopped or continued,
    /// unless the parent asked not to hear of it (SA_NOCLDSTOP).
    fn notify_parent_of_job_change(&self, tgid: i32) {
        let Some(parent) = self.thread(self.procs.ppid(tgid)) else { return };
        let Ok(idx) = usize::try_from(libc::SIGCHLD) else { return };
        if parent.sigactions().swap(idx, None).flags & signal::SA_NOCLDSTOP == 0 {
            let (code, status) = match self.procs.stopped_by(tgid) {
                Some(sig) => (siginfo::CLD_STOPPED, sig),
                None => (siginfo::CLD_CONTINUED, libc::SIGCONT),
            };
            let uid = self.thread(tgid).map_or(0, |t| t.creds().uid);
            self.send_signal_info(&parent, siginfo::SigInfo::child(libc::SIGCHLD, code, tgid, uid, status));
        }
    }

    /// Makes SIGCHLD pending at `parent` for child `pid` (owned by `uid`)
    /// that ended with `status`, without interrupting the parent (its
    /// waker may take the process table's lock, under which this runs as
    /// the child becomes a zombie). The caller then interrupts the parent
    /// it returns (`signal_queued`).
    /// The signal is the child's exit signal `sig`: none for 0 or an
    /// invalid one (as Linux's do_notify_parent).
    pub fn queue_exit_signal(
        &self,
        pid: i32,
        parent: i32,
        sig: i32,
        uid: u32,
        status: ExitStatus,
    ) -> Option<Arc<Thread>> {
        if !usize::try_from(sig).is_ok_and(|s| (1..=crate::abi::signal::NSIG).contains(&s)) {
            return None;
        }
        let parent = self.thread(parent).filter(|p| !signal::ignored_by(p, sig))?;
        let (code, st) = match status {
            ExitStatus::Code(c) => (siginfo::CLD_EXITED, c),
            ExitStatus::Signal(sig) => (siginfo::CLD_KILLED, sig),
        };
        parent.queue_signal(siginfo::SigInfo::child(sig, code, pid, uid, st));
        Some(parent)
    }

    /// Whether a signal `sig` of POSIX timer `id` waits undelivered at
    /// `target` (any thread of a process target).
    pub fn timer_signal_queued(&self, target: timers::Target, sig: i32, id: i32) -> bool {
        let threads = match target {
            timers::Target::Process(pid) => self.group(pid),
            timers::Target::Thread(tid) => self.thread(tid).into_iter().collect(),
        };
        let shared = match target {
            timers::Target::Process(pid) => {
                self.thread_group(pid).is_some_and(|g| g.shared_pending.timer_signal_queued(sig, id))
            }
            timers::Target::Thread(_) => false,
        };
        shared || threads.iter().any(|t| t.timer_signal_queued(sig, id))
    }

    /// Sends a process-directed signal raised by the kernel (SI_KERNEL).
    pub fn signal_process(&self, tgid: i32, sig: i32) {
        self.signal_process_info(tgid, siginfo::SigInfo::kernel(sig));
    }

    /// Sends a process-directed signal, as Linux's `complete_signal`: it
    /// is pending for the whole process, and the first thread that wants
    /// it (does not block it, or waits for it in `rt_sigtimedwait`) is
    /// interrupted to take it. When every thread blocks it, it waits for
    /// one to unblock it or to take it (`sigwait`, a signalfd read).
    pub fn signal_process_info(&self, tgid: i32, info: siginfo::SigInfo) {
        if let Some(t) = self.queue_process_signal(tgid, info) {
            self.interrupt(&t);
        }
    }

    /// Sends `sig` (SI_KERNEL) to each process of `pids`, queued at all of
    /// them before any is interrupted, as Linux signals a process group
    /// under one lock: none can act on it (die, and have its parent reap
    /// it) before the others have it too.
    pub fn signal_processes(&self, pids: &[i32], sig: i32) {
        let woken: Vec<Arc<Thread>> =
            pids.iter().filter_map(|&pid| self.queue_process_signal(pid, siginfo::SigInfo::kernel(sig))).collect();
        for t in woken {
            self.interrupt(&t);
        }
    }

    /// Sends `info` to a file's F_SETOWN owner: the thread (`kind` 0,
    /// F_OWNER_TID), process (1) or process group (2) `id`. As Linux's
    /// sigio_perm, only those the owner's setter (real and effective uid
    /// `setter`) could signal are told: any for root, else those sharing
    /// its uid.
    pub fn signal_owner(&self, kind: i32, id: i32, info: siginfo::SigInfo, setter: (u32, u32)) {
        let (uid, euid) = setter;
        let permitted = |t: &Thread| {
            let c = t.creds();
            euid == 0 || euid == c.suid || euid == c.uid || uid == c.suid || uid == c.uid
        };
        if kind == 0 {
            if let Some(t) = self.thread(id).filter(|t| permitted(t)) {
                self.send_signal_info(&t, info);
            }
            return;
        }
        let pids = if kind == 1 { vec![id] } else { self.procs().group_members(id) };
        let leader = |pid: &i32| self.thread_group(*pid).and_then(|g| g.threads().into_iter().next());
        let woken: Vec<Arc<Thread>> = pids
            .into_iter()
            .filter(|pid| leader(pid).is_some_and(|t| permitted(&t)))
            .filter_map(|pid| self.queue_process_signal(pid, info.clone()))
            .collect();
        for t in woken {
            self.interrupt(&t);
        }
    }

    /// The queueing half of `signal_process_info`: returns the thread to
    /// interrupt, if one wants the signal.
    fn queue_process_signal(&self, tgid: i32, info: siginfo::SigInfo) -> Option<Arc<Thread>> {
        let group = self.thread_group(tgid)?;
        let sig = info.signo();
        self.job_control_at_send(tgid, sig);
        let threads = group.threads();
        let leader = threads.iter().find(|t| t.tid == tgid).or(threads.first());
        if leader.is_some_and(|t| signal::ignored_by(t, sig)) {
            return None;
        }
        group.shared_pending.queue(info);
        // A signalfd of any thread may have become readable.
        for t in &threads {
            t.signal_events.notify(crate::waiter::ALL);
        }
        threads.into_iter().find(|t| t.wants_signal(sig))
    }

    /// After a write from outside left old frames mapped in `mm`
    /// (`MemoryManager::has_stale`): stops the guest code of every thread
    /// running it, so each passes through `unmap_stale` before it runs on.
    /// Unlike `interrupt` nothing else notices: no system call ends with
    /// EINTR.
    pub fn flush_stale_mappings(&self, mm: &std::sync::Arc<crate::mm::MemoryManager>) {
        if !mm.has_stale() {
            return;
        }
        for t in self.threads() {
            if std::sync::Arc::ptr_eq(&t.mm(), mm) {
                if let Some(i) = t.interrupter.lock().clone() {
                    i.interrupt();
                }
            }
        }
    }

    /// Interrupts `t`: its running guest code stops and a futex wait it is
    /// blocked in ends with EINTR.
    pub fn interrupt(&self, t: &Thread) {
        t.interrupted.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(i) = t.interrupter.lock().clone() {
            i.interrupt();
        }
        self.futexes.interrupt(t.tid);
        let waker = t.waker.lock().clone();
        if let Some(w) = waker {
            w();
        }
    }

    /// The process an out-of-memory kill takes, as Linux's OOM killer
    /// chooses: the one holding the most resident memory (its first
    /// thread's address space; threads share it). None when no process
    /// holds any.
    pub fn oom_victim(&self) -> Option<i32> {
        let leaders: Vec<Arc<Thread>> = self.threads().into_iter().filter(|t| t.tid == t.tgid).collect();
        leaders
            .iter()
            .map(|t| (t.mm().resident_bytes(), t.tgid))
            .filter(|&(bytes, _)| bytes > 0)
            .max()
            .map(|(_, tgid)| tgid)
    }

    /// The live threads of process `tgid`.
    pub fn group(&self, tgid: i32) -> Vec<Arc<Thread>> {
        self.thread_group(tgid).map(|g| g.threads()).unwrap_or_default()
    }

    /// Ends every thread of process `tgid` with `status` (exit_group, a
    /// fatal signal).
    pub fn exit_group(&self, tgid: i32, status: ExitStatus) {
        if self.procs.start_group_exit(tgid, status) {
            for t in self.group(tgid) {
                t.exiting.store(true, std::sync::atomic::Ordering::SeqCst);
                self.interrupt(&t);
            }
        }
    }

    /// Seconds since the sandbox booted.
    pub fn uptime(&self) -> std::time::Duration {
        self.boot_instant.elapsed()
    }
}
