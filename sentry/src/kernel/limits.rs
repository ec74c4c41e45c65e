//! Resource limits: the per-process ones (getrlimit/setrlimit/prlimit64)
//! and the container's host cgroup limits.

use super::{Kernel, Thread};
use crate::abi::Errno;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) const RLIM_INFINITY: u64 = u64::MAX;
pub const RLIMIT_NLIMITS: usize = 16;
pub(crate) const RLIMIT_FSIZE: usize = 1;
pub(crate) const RLIMIT_DATA: usize = 2;
pub(crate) const RLIMIT_STACK: usize = 3;
pub(crate) const RLIMIT_NOFILE: usize = 7;
pub(crate) const RLIMIT_MEMLOCK: usize = 8;
pub(crate) const RLIMIT_AS: usize = 9;
/// `sysctl fs.nr_open`: the ceiling of RLIMIT_NOFILE.
pub(crate) const NR_OPEN: u64 = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rlimit {
    pub cur: u64,
    pub max: u64,
}

/// The limits a sandbox's first process starts with (Linux's defaults for
/// init, with the NOFILE limit of a typical container).
pub(crate) fn defaults() -> [Rlimit; RLIMIT_NLIMITS] {
    let inf = Rlimit { cur: RLIM_INFINITY, max: RLIM_INFINITY };
    let mut l = [inf; RLIMIT_NLIMITS];
    l[RLIMIT_STACK] = Rlimit { cur: 8 << 20, max: RLIM_INFINITY };
    l[4] = Rlimit { cur: 0, max: RLIM_INFINITY }; // RLIMIT_CORE
    l[6] = Rlimit { cur: 63_668, max: 63_668 }; // RLIMIT_NPROC
    l[RLIMIT_NOFILE] = Rlimit { cur: 1024, max: 1_048_576 };
    l[8] = Rlimit { cur: 8 << 20, max: 8 << 20 }; // RLIMIT_MEMLOCK
    l[11] = Rlimit { cur: 63_668, max: 63_668 }; // RLIMIT_SIGPENDING
    l[12] = Rlimit { cur: 819_200, max: 819_200 }; // RLIMIT_MSGQUEUE
    l[13] = Rlimit { cur: 0, max: 0 }; // RLIMIT_NICE
    l[14] = Rlimit { cur: 0, max: 0 }; // RLIMIT_RTPRIO
    l
}

/// Validates a new limit against the old one as `do_prlimit` does:
/// the soft limit may not pass the hard one, NOFILE not `fs.nr_open`, and
/// raising the hard limit needs CAP_SYS_RESOURCE (`privileged`).
pub(crate) fn check_change(resource: usize, old: Rlimit, new: Rlimit, privileged: bool) -> Result<(), Errno> {
    if new.cur > new.max {
        return Err(Errno::EINVAL);
    }
    if resource == RLIMIT_NOFILE && new.max > NR_OPEN {
        return Err(Errno::EPERM);
    }
    if new.max > old.max && !privileged {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// `do_prlimit`: reads limit `res` of `target`'s process and, given `new`,
/// replaces it for the whole process; returns the old limit.
/// `privileged` is CAP_SYS_RESOURCE.
pub(crate) fn prlimit(target: &Thread, res: usize, new: Option<Rlimit>, privileged: bool) -> Result<Rlimit, Errno> {
    let group = target.group();
    match new {
        None => Ok(group.rlimit(res)),
        Some(new) => group.set_rlimit(res, new, |old, new| check_change(res, old, new, privileged)),
    }
}

/// The sandbox's RLIMIT_NOFILE ceiling (`--nofile`): no process's hard
/// limit goes above it, not even with CAP_SYS_RESOURCE (as `fs.nr_open`,
/// which it lowers). A descriptor refused (EMFILE) at it is recorded
/// (`limit.nofile`), at most once a `NOFILE_REPORT_EVERY`.
pub struct NofileCeiling {
    max: AtomicU64,
    last_report: Mutex<Option<Instant>>,
}

/// The shortest time between two `limit.nofile` records.
pub(crate) const NOFILE_REPORT_EVERY: Duration = Duration::from_secs(1);

impl Default for NofileCeiling {
    fn default() -> NofileCeiling {
        NofileCeiling { max: AtomicU64::new(NR_OPEN), last_report: Mutex::new(None) }
    }
}

impl NofileCeiling {
    pub fn get(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    /// Sets the ceiling (at most `fs.nr_open`).
    pub fn set(&self, n: u64) {
        self.max.store(n.min(NR_OPEN), Ordering::Relaxed);
    }

    /// `limit` under the ceiling.
    pub fn clamp(&self, limit: Rlimit) -> Rlimit {
        let c = self.get();
        Rlimit { cur: limit.cur.min(c), max: limit.max.min(c) }
    }

    /// Whether a refusal at `now` is to be recorded (the first, then at
    /// most one per `NOFILE_REPORT_EVERY`).
    fn should_report(&self, now: Instant) -> bool {
        let mut last = self.last_report.lock();
        if last.is_some_and(|t| now.saturating_duration_since(t) < NOFILE_REPORT_EVERY) {
            return false;
        }
        *last = Some(now);
        true
    }
}

impl Kernel {
    /// A system call of `t` failed with EMFILE: recorded when its process
    /// is at the sandbox's ceiling (not merely at a soft limit of its own).
    pub fn descriptors_refused(&self, t: &Thread) {
        let limit = self.nofile.get();
        if t.nofile() >= limit && self.nofile.should_report(Instant::now()) {
            let comm = String::from_utf8_lossy(&t.comm.lock()).into_owned();
            log::info!("process {} ({comm}) has no descriptor left under the ceiling {limit}", t.tgid);
            let _ = self.audit(|| crate::audit::Record::LimitNofile { pid: t.tgid, comm, limit });
        }
    }
}

/// The limits the runtime put on the container's host cgroup (at create,
/// and by `update`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CgroupLimits {
    /// cpu.max: (quota, period) in microseconds; None is "max".
    pub cpu_max: Option<(u64, u64)>,
    /// pids.max; None is "max".
    pub pids_max: Option<u64>,
    /// memory.max in bytes; None is the guest memory the sentry allows.
    pub memory_max: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_changes_are_checked_as_linux_does() {
        let old = Rlimit { cur: 1024, max: 4096 };
        let lim = |cur, max| Rlimit { cur, max };
        assert_eq!(check_change(0, old, lim(10, 5), true), Err(Errno::EINVAL), "soft above hard");
        assert_eq!(check_change(0, old, lim(10, 8192), false), Err(Errno::EPERM), "raising the hard limit");
        assert_eq!(check_change(0, old, lim(10, 8192), true), Ok(()));
        assert_eq!(check_change(0, old, lim(10, 100), false), Ok(()), "anyone may lower it");
        assert_eq!(check_change(RLIMIT_NOFILE, old, lim(10, NR_OPEN + 1), true), Err(Errno::EPERM));
    }

    #[test]
    fn the_nofile_ceiling_clamps_and_reports_at_most_once_a_second() {
        let c = NofileCeiling::default();
        assert_eq!(c.get(), NR_OPEN);
        c.set(64);
        assert_eq!(c.clamp(Rlimit { cur: 1024, max: 4096 }), Rlimit { cur: 64, max: 64 });
        assert_eq!(c.clamp(Rlimit { cur: 10, max: 20 }), Rlimit { cur: 10, max: 20 });
        c.set(u64::MAX);
        assert_eq!(c.get(), NR_OPEN, "never above fs.nr_open");
        let t0 = Instant::now();
        assert!(c.should_report(t0));
        assert!(!c.should_report(t0 + Duration::from_millis(500)));
        assert!(c.should_report(t0 + NOFILE_REPORT_EVERY));
    }
}
