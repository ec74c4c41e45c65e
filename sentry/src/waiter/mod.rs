//! Waiting, as gVisor's `pkg/waiter`: every waitable object owns a
//! [`Queue`] of entries, each registered with the events it cares about;
//! a change notifies only the entries whose mask it meets. A guest thread
//! that must wait registers a [`Waiter`] on the queues it waits for and
//! blocks on it, interruptibly and with a deadline.
//!
//! This is a leaf module: it knows nothing of the kernel's threads. The
//! kernel marks the guest thread a host thread runs with
//! [`set_current`], so a wait can end when that thread is interrupted
//! (a signal, its process exiting): the wait then fails with
//! ERESTARTSYS, which the task's system call exit turns into EINTR or a
//! restart.

pub(crate) mod alarm;
pub(crate) mod host;

use crate::abi::Errno;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Every event: what a change that concerns all waiters notifies.
pub(crate) const ALL: u32 = !0;

/// The hook that wakes a blocked thread.
pub(crate) type Waker = Arc<dyn Fn() + Send + Sync>;

/// What a queue entry calls when an event it waits for happens.
pub trait Notify: Send + Sync {
    /// `mask` holds the events that happened. Called outside the queue's
    /// lock, possibly with the notifying object's own locks held: it must
    /// not call back into that object.
    fn notify(&self, mask: u32);

    /// Whether the entry's owner is gone, so the queue may drop it (an
    /// epoll instance's entry on a file closed under it).
    fn stale(&self) -> bool {
        false
    }
}

/// One registration on a queue: an event mask and what to call.
#[derive(Clone)]
pub struct Entry {
    id: u64,
    mask: u32,
    target: Arc<dyn Notify>,
}

impl Entry {
    pub fn new(mask: u32, target: Arc<dyn Notify>) -> Entry {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Entry { id: NEXT.fetch_add(1, Ordering::Relaxed), mask, target }
    }

    pub fn mask(&self) -> u32 {
        self.mask
    }
}

/// The entries waiting on one object.
#[derive(Default)]
pub struct Queue {
    entries: Mutex<Vec<Entry>>,
}

impl Queue {
    pub fn register(&self, e: &Entry) {
        let mut v = self.entries.lock();
        v.retain(|x| !x.target.stale());
        v.push(e.clone());
    }

    pub fn unregister(&self, e: &Entry) {
        self.entries.lock().retain(|x| x.id != e.id);
    }

    /// Notifies the entries waiting for any event in `mask`, outside the
    /// queue's lock.
    pub fn notify(&self, mask: u32) {
        let hit: Vec<Arc<dyn Notify>> = {
            let v = self.entries.lock();
            if v.is_empty() {
                return;
            }
            v.iter().filter(|e| e.mask & mask != 0).map(|e| e.target.clone()).collect()
        };
        for t in hit {
            t.notify(mask);
        }
    }

    /// How many entries are registered.
    #[cfg(test)]
    pub fn entry_count(&self) -> usize {
        self.entries.lock().len()
    }

    /// The union of the registered masks (what the queue's owner may
    /// need to watch for).
    pub fn events(&self) -> u32 {
        self.entries.lock().iter().fold(0, |m, e| m | e.mask)
    }
}

/// Passes the notifications of one queue on to another for as long as
/// the second lives: how an object whose readiness comes from others'
/// queues (a socket over its buffers) offers one queue of its own.
pub(crate) struct Forward(pub std::sync::Weak<Queue>);

impl Notify for Forward {
    fn notify(&self, mask: u32) {
        if let Some(q) = self.0.upgrade() {
            q.notify(mask);
        }
    }

    fn stale(&self) -> bool {
        self.0.strong_count() == 0
    }
}

/// What the kernel's thread offers a wait: whether it must give up, and
/// where to hang the hook that wakes it.
pub(crate) trait Interruptible: Send + Sync {
    /// The thread was interrupted, its process is exiting, or a signal it
    /// does not block is pending.
    fn interrupt_pending(&self) -> bool;
    /// Sets (or clears) the hook an interruption calls.
    fn set_waker(&self, w: Option<Waker>);
    /// The thread goes to sleep in a wait (`true`) or wakes from it: it is
    /// not runnable meanwhile (/proc's state, the load average).
    fn set_sleeping(&self, _sleeping: bool) {}
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn Interruptible>>> = const { RefCell::new(None) };
}

/// Marks what interrupts the calling host thread's waits (its guest
/// thread), or nothing.
pub(crate) fn set_current(t: Option<Arc<dyn Interruptible>>) {
    CURRENT.with(|c| *c.borrow_mut() = t);
}

fn current() -> Option<Arc<dyn Interruptible>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the calling guest thread's wait must give up before it
/// sleeps (see `Interruptible::interrupt_pending`); false on a host
/// thread that runs no guest thread.
pub(crate) fn interrupt_pending() -> bool {
    current().is_some_and(|t| t.interrupt_pending())
}

/// The calling guest thread sleeps until this is dropped (see
/// `Interruptible::set_sleeping`).
pub(crate) struct Asleep(Option<Arc<dyn Interruptible>>);

impl Asleep {
    pub(crate) fn begin() -> Asleep {
        Asleep::of(current())
    }

    fn of(t: Option<Arc<dyn Interruptible>>) -> Asleep {
        if let Some(t) = &t {
            t.set_sleeping(true);
        }
        Asleep(t)
    }
}

impl Drop for Asleep {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.set_sleeping(false);
        }
    }
}

/// Clears the thread's wake-up hook when the wait ends.
struct Registration(Option<Arc<dyn Interruptible>>);

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.set_waker(None);
        }
    }
}

/// Runs `f` (a wait that is not ended by every interruption, only by
/// conditions it checks itself) with `wake` as the calling thread's
/// wake-up hook, so the interruption that changes those conditions wakes
/// it. `wake` must take the lock the wait holds before notifying.
pub(crate) fn with_waker<R>(wake: Waker, f: impl FnOnce() -> R) -> R {
    let me = current();
    if let Some(t) = &me {
        t.set_waker(Some(wake));
    }
    let _registration = Registration(me);
    f()
}

/// Blocks on `cond` with `guard` held until `ready` returns true (Ok), the
/// calling guest thread is interrupted (ERESTARTSYS) or `deadline` passes
/// (ETIMEDOUT). `wake` must take the lock `guard` belongs to before
/// notifying `cond`, so a wake-up is never lost.
pub(crate) fn block_on<T>(
    guard: &mut MutexGuard<'_, T>,
    cond: &Condvar,
    wake: Waker,
    deadline: Option<Instant>,
    mut ready: impl FnMut(&mut T) -> bool,
) -> Result<(), Errno> {
    let me = current();
    if let Some(t) = &me {
        t.set_waker(Some(wake));
    }
    let registration = Registration(me);
    loop {
        if ready(guard) {
            return Ok(());
        }
        if registration.0.as_ref().is_some_and(|t| t.interrupt_pending()) {
            return Err(Errno::ERESTARTSYS);
        }
        let asleep = Asleep::of(registration.0.clone());
        match deadline {
            Some(d) => {
                if cond.wait_until(guard, d).timed_out() && !ready(guard) {
                    return Err(Errno::ETIMEDOUT);
                }
            }
            None => cond.wait(guard),
        }
        drop(asleep);
    }
}

/// Waits once on `cond` (the caller re-checks its condition and loops),
/// unless the calling guest thread is interrupted (ERESTARTSYS). `wake`
/// must take the lock `guard` belongs to before notifying `cond`.
pub(crate) fn wait_once<T>(guard: &mut MutexGuard<'_, T>, cond: &Condvar, wake: Waker) -> Result<(), Errno> {
    let mut first = true;
    block_on(guard, cond, wake, None, |_| !std::mem::replace(&mut first, false))
}

/// A blocked thread's end of its queue entries: a notification sets a
/// flag the thread sleeps on.
#[derive(Default)]
pub(crate) struct Waiter {
    fired: Mutex<bool>,
    cond: Condvar,
}

impl Notify for Waiter {
    fn notify(&self, _mask: u32) {
        *self.fired.lock() = true;
        self.cond.notify_all();
    }
}

impl Waiter {
    pub(crate) fn new() -> Arc<Waiter> {
        Arc::new(Waiter::default())
    }

    /// Sleeps until a notification since the last wait (Ok), the calling
    /// guest thread is interrupted (ERESTARTSYS) or `deadline` passes
    /// (ETIMEDOUT).
    pub(crate) fn wait(self: &Arc<Self>, deadline: Option<Instant>) -> Result<(), Errno> {
        // An interruption wakes the thread without counting as an event.
        let me = self.clone();
        let wake: Waker = Arc::new(move || {
            let _g = me.fired.lock();
            me.cond.notify_all();
        });
        let mut g = self.fired.lock();
        block_on(&mut g, &self.cond, wake, deadline, |f| std::mem::replace(f, false))
    }
}

/// Registers `entry` with `register`, and undoes it with `unregister`
/// when dropped.
pub(crate) struct Registered<F: FnMut(&Entry)> {
    entry: Entry,
    unregister: F,
}

impl<F: FnMut(&Entry)> Registered<F> {
    pub(crate) fn new(entry: Entry, register: impl FnOnce(&Entry), unregister: F) -> Registered<F> {
        register(&entry);
        Registered { entry, unregister }
    }
}

impl<F: FnMut(&Entry)> Drop for Registered<F> {
    fn drop(&mut self) {
        (self.unregister)(&self.entry);
    }
}

/// Runs `attempt` until it stops failing with EAGAIN, waiting on `queue`
/// for an event in `mask` between attempts; ETIMEDOUT at `deadline`,
/// ERESTARTSYS when interrupted. For an object's own blocking paths.
pub(crate) fn until_ready<T>(
    queue: &Queue,
    mask: u32,
    deadline: Option<Instant>,
    mut attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match attempt() {
        Err(Errno::EAGAIN) => {}
        r => return r,
    }
    let w = Waiter::new();
    let _r = Registered::new(Entry::new(mask, w.clone()), |e| queue.register(e), |e| queue.unregister(e));
    loop {
        match attempt() {
            Err(Errno::EAGAIN) => w.wait(deadline)?,
            r => return r,
        }
    }
}

/// A span no wait reaches (about 136 years): what a deadline too far for
/// the clock becomes.
const FOREVER: Duration = Duration::from_secs(1 << 32);

/// `at` plus `d`, a guest-given span: a sum past what the clock holds
/// becomes a time no wait reaches, instead of overflowing.
pub(crate) fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d).or_else(|| at.checked_add(FOREVER)).unwrap_or(at)
}

/// The deadline `d` from now (see `later`).
pub(crate) fn deadline_in(d: Duration) -> Instant {
    later(Instant::now(), d)
}

/// Sleeps until `deadline`, or until the calling guest thread is
/// interrupted (ERESTARTSYS).
pub(crate) fn sleep_until(deadline: Instant) -> Result<(), Errno> {
    if current().is_none() {
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        return Ok(());
    }
    let w = Waiter::new();
    loop {
        match w.wait(Some(deadline)) {
            Err(Errno::ETIMEDOUT) => return Ok(()),
            Err(e) => return Err(e),
            Ok(()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Count;

    #[test]
    fn only_entries_whose_mask_meets_the_event_are_notified() {
        let q = Queue::default();
        let (a, b) = (Arc::new(Count::default()), Arc::new(Count::default()));
        let (ea, eb) = (Entry::new(0x1, a.clone()), Entry::new(0x4, b.clone()));
        q.register(&ea);
        q.register(&eb);
        q.notify(0x1);
        q.notify(0x1 | 0x4);
        q.unregister(&ea);
        q.notify(ALL);
        assert_eq!(a.get(), 2);
        assert_eq!(b.get(), 2);
    }

    #[test]
    fn a_waiter_wakes_for_a_notification_in_another_thread_and_times_out_without() {
        let q = Arc::new(Queue::default());
        let ready = Arc::new(Mutex::new(false));
        let (q2, r2) = (q.clone(), ready.clone());
        let t = std::thread::spawn(move || {
            until_ready(&q2, 0x1, None, || if *r2.lock() { Ok(7) } else { Err(Errno::EAGAIN) })
        });
        std::thread::sleep(Duration::from_millis(20));
        *ready.lock() = true;
        q.notify(0x1);
        assert_eq!(t.join().unwrap(), Ok(7));
        let soon = Instant::now() + Duration::from_millis(10);
        assert_eq!(until_ready(&q, 0x1, Some(soon), || Err::<(), _>(Errno::EAGAIN)), Err(Errno::ETIMEDOUT));
    }
}
