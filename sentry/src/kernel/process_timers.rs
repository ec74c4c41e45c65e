//! A process's timers, which Linux keeps in its `signal_struct`:
//! ITIMER_REAL (alarm), ITIMER_VIRTUAL and ITIMER_PROF, and its POSIX
//! timers. The `ThreadGroup` holds them, so a fork starts without any
//! (its group is new), an execve keeps the interval timers (the group
//! stays) and deletes the POSIX ones, and the exit drops them all.

use super::cpu_itimers::Slots;
use super::timers::{Setting, TimerHandle};
use super::{Kernel, ThreadGroup};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub(crate) struct ProcessTimers {
    /// ITIMER_REAL, made at its first use.
    real: Mutex<Option<TimerHandle>>,
    /// ITIMER_VIRTUAL and ITIMER_PROF.
    cpu: Mutex<Slots>,
    /// The POSIX timers, by id.
    posix: Mutex<BTreeMap<u64, TimerHandle>>,
}

impl ProcessTimers {
    /// Runs `f` on the CPU-time timers.
    pub(crate) fn update_cpu<R>(&self, f: impl FnOnce(&mut Slots) -> R) -> R {
        f(&mut self.cpu.lock())
    }

    /// Whether a CPU-time timer is armed.
    pub(crate) fn cpu_armed(&self) -> bool {
        self.cpu.lock().iter().any(Option::is_some)
    }

    /// Keeps the POSIX timer `timer` made for the process.
    pub(crate) fn add_posix(&self, timer: TimerHandle) {
        self.posix.lock().insert(timer.id(), timer);
    }

    /// Whether the process owns POSIX timer `id`.
    pub(crate) fn has_posix(&self, id: u64) -> bool {
        self.posix.lock().contains_key(&id)
    }

    /// Deletes POSIX timer `id`; false if the process has none by that id.
    pub(crate) fn delete_posix(&self, id: u64) -> bool {
        let timer = self.posix.lock().remove(&id);
        timer.is_some()
    }

    /// An execve deletes the POSIX timers (Linux's `exit_itimers` in
    /// `begin_new_exec`); the interval timers stay.
    pub(crate) fn exec(&self) {
        let timers = std::mem::take(&mut *self.posix.lock());
        drop(timers);
    }

    /// The process exited: every timer goes.
    pub(crate) fn exit(&self) {
        self.exec();
        let real = self.real.lock().take();
        drop(real);
        *self.cpu.lock() = Slots::default();
    }
}

impl Kernel {
    /// setitimer(ITIMER_REAL) and alarm: arms (a zero `value` disarms)
    /// process `group`'s SIGALRM timer; returns the old setting.
    pub(crate) fn set_real_itimer(
        self: &Arc<Kernel>,
        group: &ThreadGroup,
        value: Duration,
        interval: Duration,
    ) -> Setting {
        let mut real = group.timers().real.lock();
        let timer = real.get_or_insert_with(|| self.timers.create_real(group.tgid()));
        self.timers.set(self, timer.id(), value, interval).unwrap_or_default()
    }

    /// getitimer(ITIMER_REAL).
    pub(crate) fn get_real_itimer(&self, group: &ThreadGroup) -> Setting {
        let real = group.timers().real.lock();
        real.as_ref().and_then(|t| self.timers.get(t.id())).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cpu_itimers::Which;
    use crate::kernel::timers::Target;
    use crate::mm::MemoryFile;
    use crate::testing;

    const SEC: Duration = Duration::from_secs(1);

    fn kernel() -> Arc<Kernel> {
        testing::kernel(Arc::new(MemoryFile::new(1 << 24).unwrap()))
    }

    fn group(tgid: i32) -> Arc<ThreadGroup> {
        ThreadGroup::new(tgid, crate::kernel::limits::defaults())
    }

    #[test]
    fn a_forked_group_starts_without_the_parents_timers() {
        let k = kernel();
        let parent = group(1);
        k.set_real_itimer(&parent, 100 * SEC, 7 * SEC);
        k.set_cpu_itimer(&parent, Which::Virtual, 100 * SEC, Duration::ZERO);
        parent.timers().add_posix(k.timers().create(libc::CLOCK_MONOTONIC, Target::Process(1), 0, None));
        let posix = *parent.timers().posix.lock().keys().next().unwrap();
        let child = parent.fork(2);
        assert_eq!(k.get_real_itimer(&child), Setting::default());
        assert_eq!(k.get_cpu_itimer(&child, Which::Virtual).value, Duration::ZERO);
        assert!(!child.timers().has_posix(posix));
        assert!(!child.timers().delete_posix(posix), "a child cannot delete its parent's timer");
        assert_eq!(k.get_real_itimer(&parent).interval, 7 * SEC, "the parent's stay");
        assert!(k.get_cpu_itimer(&parent, Which::Virtual).value > 99 * SEC);
        assert!(parent.timers().has_posix(posix));
    }

    #[test]
    fn an_exec_keeps_the_interval_timers_and_deletes_the_posix_ones() {
        let k = kernel();
        let g = group(1);
        k.set_real_itimer(&g, 100 * SEC, 7 * SEC);
        k.set_cpu_itimer(&g, Which::Prof, 100 * SEC, SEC);
        g.timers().add_posix(k.timers().create(libc::CLOCK_MONOTONIC, Target::Process(1), 0, None));
        let posix = *g.timers().posix.lock().keys().next().unwrap();
        g.timers().exec();
        assert!(!g.timers().has_posix(posix));
        assert_eq!(k.timers().get(posix), None, "deleted from the timer service too");
        assert_eq!(k.get_real_itimer(&g).interval, 7 * SEC);
        assert_eq!(k.get_cpu_itimer(&g, Which::Prof).interval, SEC);
    }

    #[test]
    fn the_exit_drops_every_timer() {
        let k = kernel();
        let g = group(1);
        k.set_real_itimer(&g, 100 * SEC, Duration::ZERO);
        let real = g.timers().real.lock().as_ref().unwrap().id();
        k.set_cpu_itimer(&g, Which::Virtual, 100 * SEC, Duration::ZERO);
        g.timers().exit();
        assert_eq!(k.timers().get(real), None, "ITIMER_REAL left the timer service");
        assert_eq!(k.get_real_itimer(&g), Setting::default());
        assert!(!g.timers().cpu_armed());
    }

    #[test]
    fn a_real_timers_id_is_not_a_posix_timers() {
        let k = kernel();
        let g = group(1);
        k.set_real_itimer(&g, 100 * SEC, Duration::ZERO);
        let real = g.timers().real.lock().as_ref().unwrap().id();
        assert!(i32::try_from(real).is_err(), "no int a guest passes names it");
        assert!(!g.timers().has_posix(real));
    }
}
