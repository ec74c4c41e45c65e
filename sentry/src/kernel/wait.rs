//! Interruptible waiting. A guest thread blocked in the sentry (a pipe
//! read, wait4, a sleep) must wake when a signal arrives for it or its
//! process exits, as a Linux task in TASK_INTERRUPTIBLE does. A blocking
//! operation registers a wake-up hook on its thread; `Kernel::interrupt`
//! calls it. The operation then ends with ERESTARTSYS, and the task's
//! system call exit turns that into EINTR or a transparent restart.

use super::thread::{self, Thread};
use crate::abi::Errno;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The hook that wakes a blocked thread.
pub type Waker = Arc<dyn Fn() + Send + Sync>;

/// Clears the thread's wake-up hook when the wait ends.
struct Registration<'a> {
    thread: Option<&'a Thread>,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.thread {
            *t.waker.lock() = None;
        }
    }
}

/// Blocks on `cond` with `guard` held until `ready` returns true (Ok), the
/// calling guest thread is interrupted (ERESTARTSYS) or `deadline` passes
/// (ETIMEDOUT). `wake` must take the lock `guard` belongs to before
/// notifying `cond`, so a wake-up is never lost.
pub fn block_on<T>(
    guard: &mut MutexGuard<'_, T>,
    cond: &Condvar,
    wake: Waker,
    deadline: Option<Instant>,
    mut ready: impl FnMut(&mut T) -> bool,
) -> Result<(), Errno> {
    let me = thread::current();
    if let Some(t) = &me {
        *t.waker.lock() = Some(wake);
    }
    let _registration = Registration { thread: me.as_deref() };
    loop {
        if ready(guard) {
            return Ok(());
        }
        if me.as_ref().is_some_and(|t| t.interrupt_pending()) {
            return Err(Errno::ERESTARTSYS);
        }
        match deadline {
            Some(d) => {
                if cond.wait_until(guard, d).timed_out() && !ready(guard) {
                    return Err(Errno::ETIMEDOUT);
                }
            }
            None => cond.wait(guard),
        }
    }
}

/// Waits once on `cond` (the caller re-checks its condition and loops),
/// unless the calling guest thread is interrupted (ERESTARTSYS). `wake`
/// must take the lock `guard` belongs to before notifying `cond`.
pub fn wait_once<T>(guard: &mut MutexGuard<'_, T>, cond: &Condvar, wake: Waker) -> Result<(), Errno> {
    let mut first = true;
    block_on(guard, cond, wake, None, |_| !std::mem::replace(&mut first, false))
}

/// The readiness generation of the sandbox's files: bumped whenever a
/// pipe, socket or eventfd changes state, so poll, select and epoll can
/// wait for a change instead of only re-checking on a timer. One sentry
/// process is one sandbox, so one count serves it. The bump is a lone
/// atomic add unless a poller waits: pipe and socket I/O is a hot path.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Pollers between registering and leaving `wait_readiness`.
static POLLERS: AtomicUsize = AtomicUsize::new(0);
static WAKE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// Some file's readiness may have changed: wakes the pollers.
pub fn readiness_changed() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    // A poller counted after this load reads the new generation before
    // it sleeps (both orders are SeqCst), so none is missed.
    if POLLERS.load(Ordering::SeqCst) > 0 {
        let _g = WAKE.0.lock();
        WAKE.1.notify_all();
    }
}

/// The current readiness generation; read it before checking the files.
pub fn readiness_generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// Takes a poller off the count when its wait ends.
struct Polling;

impl Drop for Polling {
    fn drop(&mut self) {
        POLLERS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until the readiness generation moves from `seen` (true) or
/// `until` passes (false), unless the calling guest thread is
/// interrupted (ERESTARTSYS).
pub fn wait_readiness(seen: u64, until: Instant) -> Result<bool, Errno> {
    POLLERS.fetch_add(1, Ordering::SeqCst);
    let _polling = Polling;
    let mut g = WAKE.0.lock();
    let wake: Waker = Arc::new(|| {
        let _g = WAKE.0.lock();
        WAKE.1.notify_all();
    });
    match block_on(&mut g, &WAKE.1, wake, Some(until), |_| GENERATION.load(Ordering::SeqCst) != seen) {
        Ok(()) => Ok(true),
        Err(Errno::ETIMEDOUT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// A span no wait reaches (about 136 years): what a deadline too far for
/// the clock becomes.
const FOREVER: std::time::Duration = std::time::Duration::from_secs(1 << 32);

/// `at` plus `d`, a guest-given span: a sum past what the clock holds
/// becomes a time no wait reaches, instead of overflowing.
pub fn later(at: Instant, d: std::time::Duration) -> Instant {
    at.checked_add(d).or_else(|| at.checked_add(FOREVER)).unwrap_or(at)
}

/// The deadline `d` from now (see `later`).
pub fn deadline_in(d: std::time::Duration) -> Instant {
    later(Instant::now(), d)
}

/// A thread's private place to sleep.
#[derive(Default)]
pub struct Sleeper {
    lock: Mutex<()>,
    cond: Condvar,
}

/// Sleeps until `deadline`, or until the calling guest thread is
/// interrupted (ERESTARTSYS).
pub fn sleep_until(deadline: Instant) -> Result<(), Errno> {
    let Some(me) = thread::current() else {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        return Ok(());
    };
    let sleeper = me.sleeper.clone();
    let s = sleeper.clone();
    let wake: Waker = Arc::new(move || {
        let _g = s.lock.lock();
        s.cond.notify_all();
    });
    let mut g = sleeper.lock.lock();
    match block_on(&mut g, &sleeper.cond, wake, Some(deadline), |_| Instant::now() >= deadline) {
        Err(Errno::ETIMEDOUT) => Ok(()),
        other => other,
    }
}
