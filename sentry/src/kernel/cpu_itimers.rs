//! ITIMER_VIRTUAL and ITIMER_PROF, per process, as Linux's
//! `check_process_timers`: ITIMER_VIRTUAL counts down the process's user
//! CPU time (all its threads'), ITIMER_PROF its user and system time; at
//! zero the process gets SIGVTALRM or SIGPROF and the timer reloads with
//! its interval (or disarms without one). The process's `ThreadGroup`
//! holds them (`ProcessTimers`): fork does not inherit them, exec keeps
//! them, exit drops them. One sentry thread watches the groups that armed
//! one, started by the first setitimer that does, so a sandbox that arms
//! none pays nothing.

use super::cputime::CpuTimes;
use super::{Kernel, ThreadGroup};
use parking_lot::{Condvar, Mutex};
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
pub(crate) struct Armed {
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

/// A process's [ITIMER_VIRTUAL, ITIMER_PROF].
pub(crate) type Slots = [Option<Armed>; 2];

#[derive(Default)]
struct State {
    /// The processes that armed a timer since the watcher last looked.
    groups: Vec<Weak<ThreadGroup>>,
    watched: bool,
}

/// The watcher of the sandbox's CPU-time interval timers.
#[derive(Default)]
pub struct CpuItimers {
    state: Mutex<State>,
    changed: Condvar,
}

impl Kernel {
    /// setitimer(ITIMER_VIRTUAL / ITIMER_PROF): arms (a zero `value`
    /// disarms) process `group`'s timer; returns the old setting.
    pub fn set_cpu_itimer(
        self: &Arc<Kernel>,
        group: &Arc<ThreadGroup>,
        which: Which,
        value: Duration,
        interval: Duration,
    ) -> Setting {
        let used = which.used(self.process_cpu_times(group));
        let old = group.timers().update_cpu(|slots| {
            let slot = &mut slots[which.index()];
            let old = setting(*slot, used);
            *slot = (!value.is_zero())
                .then(|| Armed { expires: used.saturating_add(value).saturating_add(TICK), interval });
            old
        });
        if value.is_zero() {
            return old;
        }
        let t = &self.cpu_itimers;
        let mut s = t.state.lock();
        if !s.groups.iter().any(|g| std::ptr::eq(g.as_ptr(), Arc::as_ptr(group))) {
            s.groups.push(Arc::downgrade(group));
        }
        if !s.watched {
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
    pub fn get_cpu_itimer(&self, group: &ThreadGroup, which: Which) -> Setting {
        let used = which.used(self.process_cpu_times(group));
        setting(group.timers().update_cpu(|slots| slots[which.index()]), used)
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
            if s.groups.is_empty() {
                sleep = MAX_POLL;
            }
            k.cpu_itimers.changed.wait_for(&mut s, sleep);
        }
        let groups: Vec<Arc<ThreadGroup>> =
            k.cpu_itimers.state.lock().groups.iter().filter_map(Weak::upgrade).collect();
        sleep = MAX_POLL;
        let mut fire = Vec::new();
        for group in groups {
            // Read outside the group's timer lock: it takes the threads'
            // locks. A process that exited has no timers left.
            let times = k.process_cpu_times(&group);
            group.timers().update_cpu(|slots| {
                for which in [Which::Virtual, Which::Prof] {
                    let Some(armed) = slots[which.index()] else { continue };
                    let used = which.used(times);
                    let (fired, next) = step(armed, used);
                    slots[which.index()] = next;
                    if fired {
                        fire.push((group.tgid(), which.signal()));
                    }
                    if let Some(n) = next {
                        let left = n.expires.saturating_sub(used);
                        sleep = sleep.min((left / cpus).max(MIN_POLL));
                    }
                }
            });
        }
        // Groups with nothing armed (disarmed, fired for good, exited) are
        // let go; one armed meanwhile is kept or added back by its setitimer.
        k.cpu_itimers.state.lock().groups.retain(|g| g.upgrade().is_some_and(|g| g.timers().cpu_armed()));
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
