//! The CPU time of guest threads and processes, as Linux's utime and
//! stime: user time is the guest's own code (the platform's stub while it
//! runs the thread), system time the sentry's host thread that serves the
//! thread's system calls and faults. A process's time adds up its threads',
//! the exited ones included; its children's is what it reaped.

use crate::host;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

/// User and system CPU time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: Duration,
    pub system: Duration,
}

impl CpuTimes {
    pub fn plus(self, o: CpuTimes) -> CpuTimes {
        CpuTimes { user: self.user.saturating_add(o.user), system: self.system.saturating_add(o.system) }
    }

    /// Both together (the CPU-time clocks).
    pub fn total(self) -> Duration {
        self.user.saturating_add(self.system)
    }
}

/// Nanoseconds in a `u64` (585 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One thread's CPU time.
#[derive(Default)]
pub struct ThreadCpu {
    /// Guest code time, in nanoseconds.
    user_ns: AtomicU64,
    /// The CPU clock of the sentry host thread running the thread's task
    /// (0 before it runs and after it ended).
    host_clock: AtomicI32,
    /// The host thread's CPU time when it stopped running the task.
    final_system_ns: AtomicU64,
    /// When the run of guest code under way started, in nanoseconds
    /// since `epoch()` plus one (0: none under way), and the stub's CPU
    /// time then (u64::MAX: not measured): a run not yet charged counts
    /// towards the sandbox's CPU limit (a busy loop's run never ends).
    run_start_ns: AtomicU64,
    run_stub_ns: AtomicU64,
}

/// The instant run starts are counted from.
fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

impl ThreadCpu {
    /// Called on the host thread that runs the task, before it runs.
    pub fn start(&self) {
        self.host_clock.store(host::own_thread_cpu_clock(), Ordering::SeqCst);
    }

    /// The task's host thread stops running it: its system time stays as
    /// it is now.
    pub fn finish(&self) {
        self.final_system_ns.store(nanos(self.system()), Ordering::SeqCst);
        self.host_clock.store(0, Ordering::SeqCst);
    }

    /// Charges one run of guest code: the stub's CPU time over it when the
    /// platform measures it (bounded by the wall time, as other threads of
    /// the stub may have run too), else the wall time.
    pub fn charge_user(&self, wall: Duration, stub: Option<Duration>) {
        let d = stub.map_or(wall, |s| s.min(wall));
        self.user_ns.fetch_add(nanos(d), Ordering::Relaxed);
        self.run_start_ns.store(0, Ordering::Relaxed);
    }

    /// A run of guest code starts at `at`, with the stub's CPU time `stub`.
    pub fn run_started(&self, at: std::time::Instant, stub: Option<Duration>) {
        self.run_stub_ns.store(stub.map_or(u64::MAX, nanos), Ordering::Relaxed);
        let since = nanos(at.saturating_duration_since(epoch()));
        self.run_start_ns.store(since.saturating_add(1), Ordering::Relaxed);
    }

    /// Whether a run of guest code is under way.
    pub fn running(&self) -> bool {
        self.run_start_ns.load(Ordering::Relaxed) != 0
    }

    /// The user time of the run under way, not yet charged, as
    /// `charge_user` would charge it were it to end now with the stub's
    /// CPU time at `stub_now`.
    pub fn running_user(&self, stub_now: Option<Duration>) -> Duration {
        let start = self.run_start_ns.load(Ordering::Relaxed);
        if start == 0 {
            return Duration::ZERO;
        }
        let started = epoch() + Duration::from_nanos(start - 1);
        let wall = started.elapsed();
        let stub_start = self.run_stub_ns.load(Ordering::Relaxed);
        let stub =
            stub_now.filter(|_| stub_start != u64::MAX).map(|n| n.saturating_sub(Duration::from_nanos(stub_start)));
        stub.map_or(wall, |s| s.min(wall))
    }

    pub fn user(&self) -> Duration {
        Duration::from_nanos(self.user_ns.load(Ordering::Relaxed))
    }

    pub fn system(&self) -> Duration {
        let clock = self.host_clock.load(Ordering::SeqCst);
        let frozen = Duration::from_nanos(self.final_system_ns.load(Ordering::SeqCst));
        if clock == 0 {
            return frozen;
        }
        host::cpu_clock_time(clock).unwrap_or(frozen)
    }

    pub fn times(&self) -> CpuTimes {
        CpuTimes { user: self.user(), system: self.system() }
    }
}

/// What a process keeps of CPU time beyond its live threads'.
#[derive(Default)]
pub struct GroupCpu {
    /// Its exited threads'.
    exited: Mutex<CpuTimes>,
    /// Its reaped children's (theirs and their own reaped children's).
    children: Mutex<CpuTimes>,
}

impl GroupCpu {
    /// A thread of the process ended with `t`.
    pub fn thread_exited(&self, t: CpuTimes) {
        let mut e = self.exited.lock();
        *e = e.plus(t);
    }

    /// The process's own time, with its live threads' `live`.
    pub fn own(&self, live: CpuTimes) -> CpuTimes {
        self.exited.lock().plus(live)
    }

    pub fn children(&self) -> CpuTimes {
        *self.children.lock()
    }

    /// The process reaped a child that used `t`.
    pub fn child_reaped(&self, t: CpuTimes) {
        let mut c = self.children.lock();
        *c = c.plus(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_time_is_the_stubs_bounded_by_the_wall_time() {
        let t = ThreadCpu::default();
        t.charge_user(Duration::from_millis(5), Some(Duration::from_millis(3)));
        t.charge_user(Duration::from_millis(2), Some(Duration::from_millis(9)));
        t.charge_user(Duration::from_millis(1), None);
        assert_eq!(t.user(), Duration::from_millis(6));
    }

    #[test]
    fn a_run_under_way_counts_until_it_is_charged() {
        let t = ThreadCpu::default();
        assert!(!t.running());
        assert_eq!(t.running_user(None), Duration::ZERO);
        t.run_started(std::time::Instant::now(), Some(Duration::from_millis(100)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(t.running());
        assert_eq!(t.running_user(Some(Duration::from_millis(130))), Duration::from_millis(30), "the stub's time");
        assert!(t.running_user(Some(Duration::from_secs(10))) >= Duration::from_millis(50), "bounded by the wall");
        assert!(t.running_user(None) >= Duration::from_millis(50), "unmeasured: the wall time");
        t.charge_user(Duration::from_millis(50), Some(Duration::from_millis(30)));
        assert!(!t.running());
        assert_eq!((t.user(), t.running_user(None)), (Duration::from_millis(30), Duration::ZERO));
    }

    #[test]
    fn system_time_is_the_host_threads_until_it_finishes() {
        let t = ThreadCpu::default();
        assert_eq!(t.system(), Duration::ZERO);
        t.start();
        let spin = std::time::Instant::now();
        while t.system() < Duration::from_millis(2) && spin.elapsed() < Duration::from_secs(5) {}
        assert!(t.system() >= Duration::from_millis(2));
        t.finish();
        let frozen = t.system();
        let spin = std::time::Instant::now();
        while spin.elapsed() < Duration::from_millis(5) {}
        assert_eq!(t.system(), frozen);
    }

    #[test]
    fn a_process_adds_its_exited_threads_and_reaped_children() {
        let g = GroupCpu::default();
        let ms = |u, s| CpuTimes { user: Duration::from_millis(u), system: Duration::from_millis(s) };
        g.thread_exited(ms(1, 2));
        g.thread_exited(ms(3, 4));
        assert_eq!(g.own(ms(10, 0)), ms(14, 6));
        g.child_reaped(ms(5, 5));
        assert_eq!(g.children(), ms(5, 5));
        assert_eq!(ms(1, 2).total(), Duration::from_millis(3));
    }
}
