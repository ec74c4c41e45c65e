//! The sandbox's run-state counters and load average (Linux's
//! `calc_global_load`): the number of guest threads that are runnable
//! (running guest code or a system call, not sleeping in a wait) is
//! sampled every 5 seconds into three exponentially decayed averages.
//!
//! Nothing wakes to take the samples: each change of the count first
//! applies the samples due since the last change (the count was constant
//! in between), and so does each read, so an idle sandbox stays idle.

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// Linux's fixed-point load: 11 bits of fraction.
const FSHIFT: u32 = 11;
const FIXED_1: u64 = 1 << FSHIFT;
/// 1/exp(5s/1min), 1/exp(5s/5min), 1/exp(5s/15min) in fixed point.
const EXP: [u64; 3] = [1884, 2014, 2037];
/// The sampling period (Linux's LOAD_FREQ).
const LOAD_FREQ: Duration = Duration::from_secs(5);
/// Past this many samples owed, the averages have converged to the count
/// (0.995^4096 is below the fixed point's resolution).
const CONVERGED: u32 = 4096;

/// Linux's `calc_load`: one sample of `active` (fixed point) into `load`.
fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut new = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        new += FIXED_1 - 1;
    }
    new / FIXED_1
}

struct State {
    /// Guest threads runnable now.
    runnable: u64,
    /// The averages, in fixed point.
    avenrun: [u64; 3],
    /// When the next sample is due.
    next_sample: Instant,
    /// Times a guest thread went to sleep in a wait (its voluntary
    /// context switches).
    switches: u64,
}

impl State {
    /// Takes the samples due by `now`, all of the current count.
    fn catch_up(&mut self, now: Instant) {
        if now < self.next_sample {
            return;
        }
        let due = now.duration_since(self.next_sample).as_nanos() / LOAD_FREQ.as_nanos() + 1;
        let active = self.runnable * FIXED_1;
        if due >= u128::from(CONVERGED) {
            self.avenrun = [active; 3];
        } else {
            for _ in 0..due {
                for (avg, exp) in self.avenrun.iter_mut().zip(EXP) {
                    *avg = calc_load(*avg, exp, active);
                }
            }
        }
        let steps = u32::try_from(due).unwrap_or(u32::MAX);
        self.next_sample = LOAD_FREQ.checked_mul(steps).and_then(|d| self.next_sample.checked_add(d)).unwrap_or(now);
    }
}

/// The run-state counters of a sandbox.
pub struct LoadAvg {
    state: Mutex<State>,
}

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSnapshot {
    /// The 1, 5 and 15-minute averages, in Linux's fixed point (11 bits).
    pub avenrun: [u64; 3],
    pub runnable: u64,
    pub switches: u64,
}

impl LoadAvg {
    /// Counters of a sandbox started at `boot`: the first sample is due 5
    /// seconds later.
    pub fn new(boot: Instant) -> LoadAvg {
        LoadAvg {
            state: Mutex::new(State { runnable: 0, avenrun: [0; 3], next_sample: boot + LOAD_FREQ, switches: 0 }),
        }
    }

    /// A guest thread starts (`true`) or ends running (`false`).
    pub fn thread_runs(&self, runs: bool) {
        self.change(runs, false);
    }

    /// A guest thread goes to sleep in a wait (`true`) or wakes (`false`).
    pub fn thread_sleeps(&self, sleeps: bool) {
        self.change(!sleeps, sleeps);
    }

    fn change(&self, up: bool, switch: bool) {
        let mut s = self.state.lock();
        s.catch_up(Instant::now());
        s.runnable = if up { s.runnable + 1 } else { s.runnable.saturating_sub(1) };
        s.switches += u64::from(switch);
    }

    /// The counters as of `now`.
    pub fn snapshot(&self, now: Instant) -> LoadSnapshot {
        let mut s = self.state.lock();
        s.catch_up(now);
        LoadSnapshot { avenrun: s.avenrun, runnable: s.runnable, switches: s.switches }
    }
}

/// One average as /proc/loadavg prints it (`loadavg_proc_show`): two
/// decimals, rounded.
pub(crate) fn format_load(avg: u64) -> String {
    let x = avg + FIXED_1 / 200;
    format!("{}.{:02}", x >> FSHIFT, ((x & (FIXED_1 - 1)) * 100) >> FSHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_decay_as_linux() {
        // Two runnable threads for one minute (12 samples): Linux's
        // 1-minute average reaches 1.27 (about 1 - e^-1 of 2, in its
        // fixed-point steps, which round up while the load rises).
        let boot = Instant::now();
        let l = LoadAvg::new(boot);
        l.thread_runs(true);
        l.thread_runs(true);
        let s = l.snapshot(boot + Duration::from_secs(60));
        assert_eq!(s.runnable, 2);
        assert_eq!(format_load(s.avenrun[0]), "1.27");
        assert!(s.avenrun[0] > s.avenrun[1] && s.avenrun[1] > s.avenrun[2], "{:?}", s.avenrun);
    }

    #[test]
    fn nothing_counts_before_the_first_sample_and_sleepers_do_not() {
        let boot = Instant::now();
        let l = LoadAvg::new(boot);
        l.thread_runs(true);
        l.thread_sleeps(true);
        assert_eq!(l.snapshot(boot + Duration::from_secs(4)).avenrun, [0; 3]);
        let s = l.snapshot(boot + Duration::from_secs(600));
        assert_eq!((s.avenrun, s.runnable, s.switches), ([0; 3], 0, 1));
    }

    #[test]
    fn a_long_busy_stretch_converges_to_the_count() {
        let boot = Instant::now();
        let l = LoadAvg::new(boot);
        for _ in 0..3 {
            l.thread_runs(true);
        }
        let s = l.snapshot(boot + Duration::from_secs(24 * 3600));
        assert_eq!(s.avenrun.map(format_load), ["3.00", "3.00", "3.00"]);
    }

    #[test]
    fn formats_with_linux_rounding() {
        assert_eq!(format_load(0), "0.00");
        assert_eq!(format_load(FIXED_1), "1.00");
        assert_eq!(format_load(FIXED_1 / 2), "0.50");
        assert_eq!(format_load(3 * FIXED_1 + FIXED_1 / 4), "3.25");
    }
}
