//! The sandbox's task budget (`--pids-limit`, OCI
//! `linux.resources.pids.limit`, shown as /sys/fs/cgroup/pids.max): as
//! Linux's pids cgroup, every task (a process's thread, the first one
//! included) counts, and a fork, vfork or clone that would pass the limit
//! fails with EAGAIN. Each guest task costs the host a sentry thread and a
//! stub thread, so this is what keeps a fork or thread bomb off the
//! host's process table. Zombies hold no host task and do not count.
//!
//! A refused clone is recorded (`limit.pids`) once per breach episode: the
//! episode ends when the sandbox has fallen back to nine tenths of its
//! limit, so a bomb that keeps knocking is one record, not thousands.

use super::{Kernel, Thread};
use crate::abi::Errno;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether one more task fits when `used` are counted under `limit`.
pub(crate) fn admits(used: u64, limit: Option<u64>) -> bool {
    limit.is_none_or(|l| used < l)
}

/// Whether a limit is being breached now, so that only the first refusal
/// of an episode is reported.
#[derive(Default)]
pub(crate) struct Episode {
    active: AtomicBool,
}

impl Episode {
    /// A request was refused: true when this starts an episode (report it).
    pub(crate) fn refused(&self) -> bool {
        !self.active.swap(true, Ordering::SeqCst)
    }

    /// A request was granted with `used` of `limit` now in use: the
    /// episode is over once use is back to nine tenths of the limit.
    pub(crate) fn granted(&self, used: u64, limit: u64) {
        if used <= limit.saturating_sub((limit / 10).max(1)) {
            self.active.store(false, Ordering::SeqCst);
        }
    }
}

/// A task being created: counted against the budget from the
/// reservation until it is dropped, by which time the task is in the
/// thread table (and counted there) or has failed to start.
pub struct PidSlot<'k> {
    kernel: &'k Kernel,
}

impl Drop for PidSlot<'_> {
    fn drop(&mut self) {
        let mut table = self.kernel.threads.lock();
        table.reserved = table.reserved.saturating_sub(1);
    }
}

impl Kernel {
    /// The tasks counted against the budget: the live ones and those
    /// being created.
    pub fn pids_used(&self) -> u64 {
        let table = self.threads.lock();
        u64::try_from(table.threads.len()).unwrap_or(u64::MAX).saturating_add(table.reserved)
    }

    /// Reserves a place for a new task `caller` creates; EAGAIN past the
    /// limit, as the pids cgroup answers fork and clone.
    pub fn reserve_pid(&self, caller: &Thread) -> Result<PidSlot<'_>, Errno> {
        self.reserve_pid_for(caller.tgid, || String::from_utf8_lossy(&caller.comm.lock()).into_owned())
    }

    /// Reserves a place for a new task on behalf of process `pid` named
    /// `comm` (as a refusal's record names them): a process `husk exec`
    /// starts from outside the guest is pid 0 and its program's name.
    pub fn reserve_pid_for(&self, pid: i32, comm: impl FnOnce() -> String) -> Result<PidSlot<'_>, Errno> {
        let limit = self.cgroup_limits.lock().pids_max;
        let mut table = self.threads.lock();
        let used = u64::try_from(table.threads.len()).unwrap_or(u64::MAX).saturating_add(table.reserved);
        if admits(used, limit) {
            table.reserved += 1;
            drop(table);
            if let Some(l) = limit {
                self.pids_breach.granted(used + 1, l);
            }
            return Ok(PidSlot { kernel: self });
        }
        drop(table);
        if self.pids_breach.refused() {
            let limit = limit.unwrap_or(u64::MAX);
            let comm = comm();
            log::warn!("pids limit {limit} reached: process {pid} ({comm}) cannot create a task");
            let _ = self.audit(|| crate::audit::Record::LimitPids { pid, comm, limit });
        }
        Err(Errno::EAGAIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::limits::defaults;
    use crate::kernel::ThreadGroup;
    use crate::mm::MemoryFile;
    use crate::testing;
    use std::sync::Arc;

    #[test]
    fn limits_admit_below_and_refuse_at_them() {
        assert!(admits(0, Some(1)) && !admits(1, Some(1)) && admits(1 << 40, None));
    }

    #[test]
    fn threads_and_creations_under_way_count_against_the_limit() {
        let k = testing::kernel(Arc::new(MemoryFile::new(1 << 24).unwrap()));
        k.cgroup_limits.lock().pids_max = Some(3);
        let init = testing::thread(&k, 1, ThreadGroup::new(1, defaults()));
        let a = k.reserve_pid(&init).unwrap();
        let b = k.reserve_pid(&init).unwrap();
        assert_eq!(k.pids_used(), 3);
        assert_eq!(k.reserve_pid(&init).err(), Some(Errno::EAGAIN), "two under way and init fill 3");
        drop(a);
        let thread = testing::thread(&k, 2, init.group().clone());
        assert_eq!(k.reserve_pid(&init).err(), Some(Errno::EAGAIN), "a thread counts as a task");
        drop(b);
        assert_eq!(k.pids_used(), 2);
        k.remove_thread(&thread);
        let c = k.reserve_pid(&init).unwrap();
        assert_eq!(k.pids_used(), 2);
        drop(c);
        k.cgroup_limits.lock().pids_max = None;
        let many: Vec<_> = (0..100).map(|_| k.reserve_pid(&init).unwrap()).collect();
        assert_eq!(k.pids_used(), 101, "no limit: any number");
        drop(many);
    }

    #[test]
    fn a_task_started_from_outside_counts_and_is_refused_at_the_limit() {
        let k = testing::kernel(Arc::new(MemoryFile::new(1 << 24).unwrap()));
        k.cgroup_limits.lock().pids_max = Some(2);
        let _init = testing::thread(&k, 1, ThreadGroup::new(1, defaults()));
        let exec = k.reserve_pid_for(0, || "sh".into()).unwrap();
        assert_eq!(k.pids_used(), 2);
        assert_eq!(k.reserve_pid_for(0, || "sh".into()).err(), Some(Errno::EAGAIN));
        drop(exec);
        assert!(k.reserve_pid_for(0, || "sh".into()).is_ok());
    }

    #[test]
    fn one_report_per_breach_episode() {
        let e = Episode::default();
        assert!(e.refused(), "the first refusal starts an episode");
        assert!(!e.refused() && !e.refused(), "more refusals are the same episode");
        e.granted(64, 64);
        e.granted(59, 64);
        assert!(!e.refused(), "still near the limit");
        e.granted(57, 64);
        assert!(e.refused(), "back under nine tenths: a new episode");
        e.granted(0, 1);
        assert!(e.refused());
    }
}
