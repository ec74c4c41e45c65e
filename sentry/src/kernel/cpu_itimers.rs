//! ITIMER_VIRTUAL and ITIMER_PROF, per process, as Linux's
//! `check_process_timers`: ITIMER_VIRTUAL counts down the process's user
//! CPU time (all its threads'), ITIMER_PROF its user and system time; at
//! zero the process gets SIGVTALRM or SIGPROF and the timer reloads with
//! its interval (or disarms without one). Fork does not inherit them,
//! exec keeps them (the same pid), exit drops them. One sentry thread
//! watches, started by the first setitimer that arms one, so a sandbox
//! that arms none pays nothing.

use super::cputime::CpuTimes;
use super::Kernel;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The longest sleep between two looks at the processes' CPU time.
const MAX_POLL: Duration = Duration::from_secs(1);
/// The shortest (Linux checks at each tick).
const MIN_POLL: Duration = Duration::from_millis(4);
/// What getitimer reports for a timer due but not yet fired (Linux: a
/// tick, so an armed timer never reads as zero).
const DUE: Duration = Duration::from_micros(1);
/// A kernel tick at the usual CONFIG_HZ=250: Linux's `set_cpu_itimer`
/// adds one to a new value (not to the interval), so the first period is
/// never short.
const TICK: Duration = Duration::from_millis(4);

/// Which CPU-time timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// User time; SIGVTALRM.
    Virtual,
    /// User and system time; SIGPROF.
    Prof,
}

impl Which {
    fn index(self) -> usize {
        match self {
            Which::Virtual => 0,
            Which::Prof => 1,
        }
    }

    fn signal(self) -> i32 {
        match self {
            Which::Virtual => libc::SIGVTALRM,
            Which::Prof => libc::SIGPROF,
        }
    }

    /// The CPU time the timer counts.
    fn used(self, t: CpuTimes) -> Duration {
        match self {
            Which::Virtual => t.user,
            Which::Prof => t.total(),
        }
    }
}

/// An armed timer: it fires when the counted CPU time reaches `expires`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Armed {
    expires: Duration,
    interval: Duration,
}

/// A timer's setting as the guest sees it: CPU time left and interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    pub value: Duration,
    pub interval: Duration,
}

fn setting(armed: Option<Armed>, used: Duration) -> Setting {
    armed.map_or_else(Setting::default, |a| Setting {
        value: a.expires.checked_sub(used).filter(|d| *d >= DUE).unwrap_or(DUE),
        interval: a.interval,
    })
}

/// What a timer does with `used` CPU time counted: whether it fires, and
/// its state after.
fn step(armed: Armed, used: Duration) -> (bool, Option<Armed>) {
    if used < armed.expires {
        return (false, Some(armed));
    }
    // As Linux: one signal, and the next expiry an interval after this
    // one's (a late look does not shift the period).
    let next = (!armed.interval.is_zero())
        .then(|| Armed { expires: armed.expires.saturating_add(armed.interval), interval: armed.interval });
    (true, next)
}

#[derive(Default)]
struct State {
    /// Per process: [ITIMER_VIRTUAL, ITIMER_PROF].
    timers: HashMap<i32, [Option<Armed>; 2]>,
    watched: bool,
}

/// The CPU-time interval timers of a sandbox.
#[derive(Default)]
pub struct CpuItimers {
    state: Mutex<State>,
    changed: Condvar,
}

impl CpuItimers {
    /// Process `pid` exited: its timers go.
    pub fn process_exited(&self, pid: i32) {
        self.state.lock().timers.remove(&pid);
    }
}

impl Kernel {
    /// The CPU time process `pid` has used, its threads' runs of guest
    /// code under way counted as user time.
    fn process_times(&self, pid: i32) -> Option<CpuTimes> {
        let group = self.thread_group(pid)?;
        Some(self.process_cpu_times(&group))
    }

    /// setitimer(ITIMER_VIRTUAL / ITIMER_PROF): arms (a zero `value`
    /// disarms) process `pid`'s timer; returns the old setting.
    pub fn set_cpu_itimer(self: &Arc<Kernel>, pid: i32, which: Which, value: Duration, interval: Duration) -> Setting {
        let used = self.process_times(pid).map(|t| which.used(t)).unwrap_or_default();
        let t = &self.cpu_itimers;
        let mut s = t.state.lock();
        let slot = &mut s.timers.entry(pid).or_default()[which.index()];
        let old = setting(*slot, used);
        *slot =
            (!value.is_zero()).then(|| Armed { expires: used.saturating_add(value).saturating_add(TICK), interval });
        if slot.is_some() && !s.watched {
            let weak = Arc::downgrade(self);
            match std::thread::Builder::new().name("cpu-itimers".into()).spawn(move || watch(&weak)) {
                Ok(_) => s.watched = true,
                Err(e) => log::warn!("ITIMER_VIRTUAL/ITIMER_PROF go unwatched: {e}"),
            }
        }
        t.changed.notify_all();
        old
    }

    /// getitimer(ITIMER_VIRTUAL / ITIMER_PROF).
    pub fn get_cpu_itimer(&self, pid: i32, which: Which) -> Setting {
        let used = self.process_times(pid).map(|t| which.used(t)).unwrap_or_default();
        let s = self.cpu_itimers.state.lock();
        setting(s.timers.get(&pid).and_then(|a| a[which.index()]), used)
    }
}

/// How many CPUs a process's time can grow on at once.
fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

fn watch(kernel: &Weak<Kernel>) {
    let cpus = cpus().max(1);
    let mut sleep = MIN_POLL;
    loop {
        let Some(k) = kernel.upgrade() else { return };
        {
            let mut s = k.cpu_itimers.state.lock();
            if !s.timers.values().any(|a| a.iter().any(Option::is_some)) {
                sleep = MAX_POLL;
            }
            k.cpu_itimers.changed.wait_for(&mut s, sleep);
        }
        let pids: Vec<i32> = k.cpu_itimers.state.lock().timers.keys().copied().collect();
        sleep = MAX_POLL;
        let mut fire = Vec::new();
        for pid in pids {
            // Read outside the timers' lock: it takes the threads' locks.
            let times = k.process_times(pid);
            let mut s = k.cpu_itimers.state.lock();
            let Some(times) = times else {
                s.timers.remove(&pid);
                continue;
            };
            let Some(slots) = s.timers.get_mut(&pid) else { continue };
            for which in [Which::Virtual, Which::Prof] {
                let Some(armed) = slots[which.index()] else { continue };
                let used = which.used(times);
                let (fired, next) = step(armed, used);
                slots[which.index()] = next;
                if fired {
                    fire.push((pid, which.signal()));
                }
                if let Some(n) = next {
                    let left = n.expires.saturating_sub(used);
                    sleep = sleep.min((left / cpus).max(MIN_POLL));
                }
            }
        }
        for (pid, sig) in fire {
            k.signal_process(pid, sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn fires_at_expiry_and_reloads_from_it() {
        let a = Armed { expires: 100 * MS, interval: 30 * MS };
        assert_eq!(step(a, 99 * MS), (false, Some(a)));
        assert_eq!(step(a, 110 * MS), (true, Some(Armed { expires: 130 * MS, interval: 30 * MS })));
        let once = Armed { expires: 100 * MS, interval: Duration::ZERO };
        assert_eq!(step(once, 100 * MS), (true, None), "without an interval it disarms");
    }

    #[test]
    fn the_setting_reads_as_linux() {
        let a = Armed { expires: 100 * MS, interval: 30 * MS };
        assert_eq!(setting(Some(a), 40 * MS), Setting { value: 60 * MS, interval: 30 * MS });
        assert_eq!(setting(Some(a), 100 * MS).value, DUE, "due but not fired: never zero");
        assert_eq!(setting(Some(a), 200 * MS).value, DUE);
        assert_eq!(setting(None, 5 * MS), Setting::default());
    }

    #[test]
    fn each_timer_counts_its_time() {
        let t = CpuTimes { user: 3 * MS, system: 4 * MS };
        assert_eq!(Which::Virtual.used(t), 3 * MS);
        assert_eq!(Which::Prof.used(t), 7 * MS);
        assert_eq!((Which::Virtual.signal(), Which::Prof.signal()), (libc::SIGVTALRM, libc::SIGPROF));
    }
}
