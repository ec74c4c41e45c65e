//! RLIMIT_CPU, per process, as Linux's `check_process_timers`: a process
//! whose CPU time (all its threads') reaches its soft limit gets SIGXCPU
//! and its soft limit moves a second on (so SIGXCPU comes again each
//! second); at its hard limit, SIGKILL. One
//! sentry thread watches, started the first time a process has a finite
//! limit (setrlimit, prlimit, or the limits the runtime gives the first
//! process), so a sandbox that sets none pays nothing.

use super::limits::{Rlimit, RLIM_INFINITY};
use super::{ExitStatus, Kernel};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

pub(crate) const RLIMIT_CPU: usize = 0;
/// The longest sleep between two looks at the processes' CPU time.
const MAX_POLL: Duration = Duration::from_secs(1);
/// The shortest.
const MIN_POLL: Duration = Duration::from_millis(10);
/// The least CPU time at which a limit acts.
const FIRST_CHECK: Duration = Duration::from_secs(1);

/// What a process's CPU time calls for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The hard limit: SIGKILL.
    Kill,
    /// The soft limit: SIGXCPU, and the soft limit moves a second on (as
    /// Linux moves it, so the signal comes again each second).
    Xcpu,
    /// Nothing before `left` more CPU time (None: never).
    Wait(Option<Duration>),
}

fn seconds(v: u64) -> Option<Duration> {
    (v != RLIM_INFINITY).then(|| Duration::from_secs(v))
}

/// The verdict on `used` CPU time under `limit` (a soft limit above the
/// hard one is refused by setrlimit).
fn verdict(used: Duration, limit: Rlimit) -> Verdict {
    let Some(soft) = seconds(limit.cur) else { return Verdict::Wait(None) };
    // Linux arms its timer for a second when asked for 0 (zero means
    // "never set" there): no limit acts before a second of CPU time.
    if used < FIRST_CHECK {
        return Verdict::Wait(Some(FIRST_CHECK - used));
    }
    if seconds(limit.max).is_some_and(|h| used >= h) {
        Verdict::Kill
    } else if used >= soft {
        Verdict::Xcpu
    } else {
        Verdict::Wait(Some(soft - used))
    }
}

/// Whether `limit` can ever act.
fn finite(limit: Rlimit) -> bool {
    limit.cur != RLIM_INFINITY
}

impl Kernel {
    /// Starts watching every process's RLIMIT_CPU, if `limit` is finite
    /// and nothing watches yet.
    pub fn watch_rlimit_cpu(self: &Arc<Kernel>, limit: Rlimit) {
        if !finite(limit) || self.watchdog.rlimit_cpu_watched.swap(true, Ordering::SeqCst) {
            return;
        }
        let weak = Arc::downgrade(self);
        let cpus = std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
        let started = std::thread::Builder::new().name("rlimit-cpu".into()).spawn(move || watch(&weak, cpus));
        if let Err(e) = started {
            log::warn!("RLIMIT_CPU goes unwatched: {e}");
            self.watchdog.rlimit_cpu_watched.store(false, Ordering::SeqCst);
        }
    }
}

fn watch(kernel: &Weak<Kernel>, cpus: u32) {
    loop {
        let Some(k) = kernel.upgrade() else { return };
        let mut sleep = MAX_POLL;
        for pid in k.procs.live() {
            let Some(group) = k.thread_group(pid) else { continue };
            let limit = group.rlimit(RLIMIT_CPU);
            match verdict(k.process_cpu_time(&group), limit) {
                Verdict::Kill => k.exit_group(pid, ExitStatus::Signal(libc::SIGKILL)),
                Verdict::Xcpu => {
                    let soft = limit.cur.saturating_add(1).min(limit.max);
                    let _ = group.set_rlimit(RLIMIT_CPU, Rlimit { cur: soft, max: limit.max }, |_, _| Ok(()));
                    k.signal_process(pid, libc::SIGXCPU);
                }
                Verdict::Wait(Some(left)) => sleep = sleep.min((left / cpus.max(1)).max(MIN_POLL)),
                Verdict::Wait(None) => {}
            }
        }
        drop(k);
        std::thread::sleep(sleep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn soft_then_hard() {
        let lim = Rlimit { cur: 1, max: 3 };
        assert_eq!(verdict(400 * MS, lim), Verdict::Wait(Some(600 * MS)));
        assert_eq!(verdict(S, lim), Verdict::Xcpu);
        assert_eq!(verdict(1500 * MS, Rlimit { cur: 2, max: 3 }), Verdict::Wait(Some(500 * MS)), "a second on");
        assert_eq!(verdict(3 * S, Rlimit { cur: 3, max: 3 }), Verdict::Kill);
    }

    #[test]
    fn a_zero_limit_acts_after_a_second_as_in_linux() {
        let zero = Rlimit { cur: 0, max: 0 };
        assert_eq!(verdict(600 * MS, zero), Verdict::Wait(Some(400 * MS)));
        assert_eq!(verdict(S, zero), Verdict::Kill);
        assert_eq!(verdict(S, Rlimit { cur: 0, max: 5 }), Verdict::Xcpu);
    }

    #[test]
    fn equal_limits_kill_and_infinite_ones_never_act() {
        assert_eq!(verdict(S, Rlimit { cur: 1, max: 1 }), Verdict::Kill);
        let inf = Rlimit { cur: RLIM_INFINITY, max: RLIM_INFINITY };
        assert_eq!(verdict(100 * S, inf), Verdict::Wait(None));
        assert!(!finite(inf));
        let soft_only = Rlimit { cur: 2, max: RLIM_INFINITY };
        assert!(finite(soft_only));
        assert_eq!(verdict(S, soft_only), Verdict::Wait(Some(S)));
        assert_eq!(verdict(5 * S, soft_only), Verdict::Xcpu);
    }
}
