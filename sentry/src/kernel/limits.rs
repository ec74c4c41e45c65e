//! Resource limits: the per-process ones (getrlimit/setrlimit/prlimit64)
//! and the container's host cgroup limits.

pub const RLIM_INFINITY: u64 = u64::MAX;
pub const RLIMIT_NLIMITS: usize = 16;
pub const RLIMIT_STACK: usize = 3;
pub const RLIMIT_NOFILE: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rlimit {
    pub cur: u64,
    pub max: u64,
}

/// The limits a sandbox's first process starts with (Linux's defaults for
/// init, with the NOFILE limit of a typical container).
pub fn defaults() -> [Rlimit; RLIMIT_NLIMITS] {
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
