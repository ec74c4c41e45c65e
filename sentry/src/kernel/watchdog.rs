//! The limits that end a whole sandbox, watched by one sentry thread:
//!
//! * `--cpu-limit`: the guest's total CPU time (every process's, ended
//!   ones included). At the limit every process gets SIGXCPU, and
//!   `CPU_GRACE` later SIGKILL, as RLIMIT_CPU's soft then hard limit.
//! * `--timeout`: wall-clock time from the start of the sandbox's first
//!   process. Then every process gets SIGTERM, and `--timeout-grace`
//!   later SIGKILL; the sentry then exits with `TIMEOUT_STATUS`, as
//!   timeout(1) does.
//!
//! Each breach is a `limit.cpu` or `limit.timeout` audit record, and the
//! sandbox's `sandbox.exit` reason. The thread exists only when one of the
//! limits is set, and sleeps until the next deadline (for the CPU limit,
//! at most the time the remaining budget takes on every CPU at once), so
//! an idle sandbox costs no more than before.

use super::{ExitStatus, Kernel};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// The sentry's exit status after `--timeout` ended the sandbox (as
/// timeout(1)'s).
pub(crate) const TIMEOUT_STATUS: i32 = 124;
/// How long processes have between SIGXCPU and SIGKILL.
pub(crate) const CPU_GRACE: Duration = Duration::from_secs(1);
/// The longest sleep between two looks at the CPU time.
const MAX_POLL: Duration = Duration::from_secs(1);
/// The shortest.
const MIN_POLL: Duration = Duration::from_millis(10);

/// The sandbox-wide limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub cpu: Option<Duration>,
    pub timeout: Option<Duration>,
    /// Between the timeout's SIGTERM and its SIGKILL.
    pub timeout_grace: Duration,
}

/// Which limit ended the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breach {
    Cpu,
    Timeout,
}

/// The watchdog's state the rest of the sentry reads.
#[derive(Default)]
pub struct State {
    ended_by: Mutex<Option<Breach>>,
    /// Whether the RLIMIT_CPU watcher runs (`rlimit_cpu`).
    pub(super) rlimit_cpu_watched: std::sync::atomic::AtomicBool,
}

impl State {
    /// The limit that is ending (or ended) the sandbox, if one did.
    pub fn ended_by(&self) -> Option<Breach> {
        *self.ended_by.lock()
    }

    /// The first breach is the sandbox's reason.
    fn breached(&self, b: Breach) {
        self.ended_by.lock().get_or_insert(b);
    }
}

/// What the watchdog does at a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// The timeout: SIGTERM to every process.
    Terminate,
    /// The CPU limit: SIGXCPU to every process.
    CpuExceeded,
    /// A grace period ran out: SIGKILL to every process.
    KillAll,
}

/// The watchdog's decisions, apart from the clock and the kernel.
struct Watch {
    limits: Limits,
    started: Instant,
    cpus: u32,
    terminated_at: Option<Instant>,
    cpu_exceeded_at: Option<Instant>,
}

impl Watch {
    /// What to do at `now` with `used` CPU time spent, and how long to
    /// sleep before the next look.
    fn step(&mut self, now: Instant, used: Duration) -> (Vec<Action>, Duration) {
        let mut actions = Vec::new();
        let mut next = MAX_POLL;
        let mut kill_at = None;
        if let Some(t) = self.limits.timeout {
            let deadline = self.started + t;
            if self.terminated_at.is_none() {
                if now >= deadline {
                    self.terminated_at = Some(now);
                    actions.push(Action::Terminate);
                } else {
                    next = next.min(deadline - now);
                }
            }
            kill_at = self.terminated_at.map(|at| at + self.limits.timeout_grace);
        }
        if let Some(limit) = self.limits.cpu {
            if self.cpu_exceeded_at.is_none() {
                if used >= limit {
                    self.cpu_exceeded_at = Some(now);
                    actions.push(Action::CpuExceeded);
                } else {
                    next = next.min(((limit - used) / self.cpus.max(1)).max(MIN_POLL));
                }
            }
            let cpu_kill = self.cpu_exceeded_at.map(|at| at + CPU_GRACE);
            kill_at = match (kill_at, cpu_kill) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        match kill_at {
            // Again and again, for a process a racing fork made.
            Some(at) if now >= at => {
                actions.push(Action::KillAll);
                next = next.min(Duration::from_millis(100));
            }
            Some(at) => next = next.min(at - now),
            None => {}
        }
        (actions, next)
    }
}

/// Starts watching `kernel` for `limits` from now, if any is set.
pub(crate) fn start(kernel: &Arc<Kernel>, limits: Limits) -> std::io::Result<()> {
    if limits.cpu.is_none() && limits.timeout.is_none() {
        return Ok(());
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
    let mut watch = Watch { limits, started: Instant::now(), cpus, terminated_at: None, cpu_exceeded_at: None };
    let weak: Weak<Kernel> = Arc::downgrade(kernel);
    std::thread::Builder::new().name("limits".into()).spawn(move || loop {
        let Some(k) = weak.upgrade() else { return };
        let used = if limits.cpu.is_some() { k.cpu_time() } else { Duration::ZERO };
        let (actions, next) = watch.step(Instant::now(), used);
        for a in actions {
            act(&k, a, &limits, used);
        }
        drop(k);
        std::thread::sleep(next);
    })?;
    Ok(())
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn act(k: &Kernel, action: Action, limits: &Limits, used: Duration) {
    let live = k.procs.live();
    match action {
        Action::Terminate => {
            k.watchdog.breached(Breach::Timeout);
            log::warn!("the sandbox's timeout ran out: SIGTERM to its {} processes", live.len());
            let _ = k.audit(|| crate::audit::Record::LimitTimeout {
                timeout_ms: limits.timeout.map_or(0, millis),
                grace_ms: millis(limits.timeout_grace),
                processes: live.len(),
            });
            k.signal_processes(&live, libc::SIGTERM);
        }
        Action::CpuExceeded => {
            k.watchdog.breached(Breach::Cpu);
            log::warn!("the sandbox's CPU limit is spent: SIGXCPU to its {} processes", live.len());
            let _ = k.audit(|| crate::audit::Record::LimitCpu {
                limit_ms: limits.cpu.map_or(0, millis),
                usage_ms: millis(used),
                processes: live.len(),
            });
            k.signal_processes(&live, libc::SIGXCPU);
        }
        Action::KillAll => {
            for pid in live {
                k.exit_group(pid, ExitStatus::Signal(libc::SIGKILL));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(limits: Limits, at: Instant) -> Watch {
        Watch { limits, started: at, cpus: 2, terminated_at: None, cpu_exceeded_at: None }
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_timeout_terminates_then_kills_after_the_grace() {
        let t0 = Instant::now();
        let limits = Limits { timeout: Some(2000 * MS), timeout_grace: 500 * MS, ..Limits::default() };
        let mut w = watch(limits, t0);
        assert_eq!(w.step(t0, Duration::ZERO), (vec![], 1000 * MS), "at most a second's sleep");
        assert_eq!(w.step(t0 + 1500 * MS, Duration::ZERO), (vec![], 500 * MS), "wakes at the deadline");
        assert_eq!(w.step(t0 + 2000 * MS, Duration::ZERO), (vec![Action::Terminate], 500 * MS));
        assert_eq!(w.step(t0 + 2100 * MS, Duration::ZERO), (vec![], 400 * MS), "SIGTERM once");
        let (a, next) = w.step(t0 + 2500 * MS, Duration::ZERO);
        assert_eq!(a, vec![Action::KillAll]);
        assert!(next <= 100 * MS);
        assert_eq!(w.step(t0 + 2600 * MS, Duration::ZERO).0, vec![Action::KillAll], "until the sandbox is gone");
    }

    #[test]
    fn no_grace_terminates_and_kills_at_once() {
        let t0 = Instant::now();
        let mut w = watch(Limits { timeout: Some(MS), ..Limits::default() }, t0);
        assert_eq!(w.step(t0 + MS, Duration::ZERO).0, vec![Action::Terminate, Action::KillAll]);
    }

    #[test]
    fn the_cpu_limit_is_polled_by_the_budget_left_and_acts_once() {
        let t0 = Instant::now();
        let mut w = watch(Limits { cpu: Some(1000 * MS), ..Limits::default() }, t0);
        assert_eq!(w.step(t0, 600 * MS), (vec![], 200 * MS), "400 ms left on 2 CPUs");
        assert_eq!(w.step(t0, 999 * MS), (vec![], MIN_POLL));
        assert_eq!(w.step(t0 + 300 * MS, 1000 * MS), (vec![Action::CpuExceeded], CPU_GRACE));
        assert_eq!(w.step(t0 + 800 * MS, 1400 * MS).0, vec![], "SIGXCPU once");
        assert_eq!(w.step(t0 + 1300 * MS, 1900 * MS).0, vec![Action::KillAll]);
    }

    #[test]
    fn the_first_breach_is_the_reason() {
        let s = State::default();
        assert_eq!(s.ended_by(), None);
        s.breached(Breach::Cpu);
        s.breached(Breach::Timeout);
        assert_eq!(s.ended_by(), Some(Breach::Cpu));
    }
}
