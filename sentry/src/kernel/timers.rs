//! The sandbox's timer service for ITIMER_REAL (alarm) and POSIX timers:
//! each fires a signal at its deadline (and again every interval). One
//! service thread per sandbox sleeps until the earliest deadline. A timer
//! belongs to whoever holds its `TimerHandle` (a process's `ThreadGroup`,
//! as Linux's `signal_struct` holds them); dropping the handle deletes it.

use super::siginfo::SigInfo;
use super::Kernel;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Who a timer signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A process (any thread of it that does not block the signal).
    Process(i32),
    /// One thread (SIGEV_THREAD_ID).
    Thread(i32),
}

#[derive(Clone, Copy, Debug)]
struct Timer {
    /// The clock absolute settings refer to.
    clock: i32,
    target: Target,
    /// 0: no signal (SIGEV_NONE).
    signo: i32,
    /// The sigev_value a POSIX timer's signal carries.
    value: u64,
    deadline: Option<Instant>,
    interval: Duration,
    overrun: u32,
}

/// A timer's setting as the guest sees it: time left and interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    pub value: Duration,
    pub interval: Duration,
}

#[derive(Default)]
struct State {
    timers: HashMap<u64, Timer>,
    /// The next POSIX timer id.
    next_id: u64,
    /// The next ITIMER_REAL timer's number (its id is `real_timer_id`).
    next_real: u64,
    running: bool,
    /// The kernel is gone: the service thread ends.
    closed: bool,
}

/// The timers of a sandbox.
#[derive(Default)]
pub struct Timers {
    state: Arc<(Mutex<State>, Condvar)>,
}

/// The id of the `n`th ITIMER_REAL timer: apart from the POSIX timers'
/// ids (which a guest names as an int), and sent as the kernel's own
/// signal.
fn real_timer_id(n: u64) -> u64 {
    (1u64 << 63) | n
}

/// Owns timer `id`: dropping it deletes the timer.
#[derive(Debug)]
pub struct TimerHandle {
    id: u64,
    state: Weak<(Mutex<State>, Condvar)>,
}

impl TimerHandle {
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        if let Some(state) = self.state.upgrade() {
            state.0.lock().timers.remove(&self.id);
        }
    }
}

impl Timers {
    /// Creates a POSIX timer whose signal carries `value` (by default its
    /// own id, as for a timer_create without sigevent); its id is unique
    /// in the sandbox.
    pub fn create(&self, clock: i32, target: Target, signo: i32, value: Option<u64>) -> TimerHandle {
        let mut s = self.state.0.lock();
        let id = s.next_id;
        s.next_id += 1;
        let value = value.unwrap_or(id);
        let t = Timer { clock, target, signo, value, deadline: None, interval: Duration::ZERO, overrun: 0 };
        s.timers.insert(id, t);
        TimerHandle { id, state: Arc::downgrade(&self.state) }
    }

    /// Creates process `pid`'s ITIMER_REAL (alarm) timer, disarmed: it
    /// sends SIGALRM.
    pub fn create_real(&self, pid: i32) -> TimerHandle {
        let mut s = self.state.0.lock();
        let id = real_timer_id(s.next_real);
        s.next_real += 1;
        let t = Timer {
            clock: libc::CLOCK_REALTIME,
            target: Target::Process(pid),
            signo: libc::SIGALRM,
            value: 0,
            deadline: None,
            interval: Duration::ZERO,
            overrun: 0,
        };
        s.timers.insert(id, t);
        TimerHandle { id, state: Arc::downgrade(&self.state) }
    }

    /// The clock of timer `id`.
    pub fn clock(&self, id: u64) -> Option<i32> {
        self.state.0.lock().timers.get(&id).map(|t| t.clock)
    }

    /// Arms (a zero `value` disarms) timer `id`; returns the old setting.
    pub fn set(&self, kernel: &Arc<Kernel>, id: u64, value: Duration, interval: Duration) -> Option<Setting> {
        let mut s = self.state.0.lock();
        let now = Instant::now();
        let t = s.timers.get_mut(&id)?;
        let old = setting(t, now);
        t.deadline = (!value.is_zero()).then(|| crate::waiter::later(now, value));
        t.interval = interval;
        t.overrun = 0;
        self.ensure_thread(&mut s, kernel);
        self.state.1.notify_all();
        Some(old)
    }

    pub fn get(&self, id: u64) -> Option<Setting> {
        let s = self.state.0.lock();
        s.timers.get(&id).map(|t| setting(t, Instant::now()))
    }

    pub fn overrun(&self, id: u64) -> Option<u32> {
        self.state.0.lock().timers.get(&id).map(|t| t.overrun)
    }

    fn ensure_thread(&self, s: &mut State, kernel: &Arc<Kernel>) {
        if s.running {
            return;
        }
        let state = self.state.clone();
        let k = Arc::downgrade(kernel);
        match std::thread::Builder::new().name("timers".into()).spawn(move || service(state, k)) {
            Ok(_) => s.running = true,
            Err(e) => log::error!("cannot start the timer thread: {e}"),
        }
    }
}

fn setting(t: &Timer, now: Instant) -> Setting {
    Setting { value: t.deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now)), interval: t.interval }
}

/// Fires due timers and sleeps until the next deadline, for as long as the
/// kernel exists.
fn service(state: Arc<(Mutex<State>, Condvar)>, kernel: Weak<Kernel>) {
    let (lock, cond) = (&state.0, &state.1);
    let mut s = lock.lock();
    loop {
        let Some(k) = kernel.upgrade() else { return };
        let now = Instant::now();
        let mut due = Vec::new();
        for (&id, t) in s.timers.iter_mut() {
            if let Some(d) = t.deadline.filter(|&d| d <= now) {
                let late = if t.interval.is_zero() {
                    t.deadline = None;
                    0
                } else {
                    let late = now.duration_since(d).as_nanos() / t.interval.as_nanos().max(1);
                    let skip = u32::try_from(late + 1).unwrap_or(u32::MAX);
                    t.deadline = Some(crate::waiter::later(d, t.interval.saturating_mul(skip)));
                    u32::try_from(late).unwrap_or(u32::MAX)
                };
                if t.signo == 0 {
                    continue;
                }
                // A POSIX timer has one signal at a time: while it waits
                // undelivered, expiries count as overruns (Linux). Alarm's
                // signal is the kernel's own.
                match i32::try_from(id) {
                    Ok(id) if k.timer_signal_queued(t.target, t.signo, id) => {
                        t.overrun = t.overrun.saturating_add(late).saturating_add(1);
                    }
                    Ok(id) => {
                        t.overrun = late;
                        due.push((t.target, SigInfo::timer(t.signo, id, late, t.value)));
                    }
                    Err(_) => due.push((t.target, SigInfo::kernel(t.signo))),
                }
            }
        }
        drop(s);
        for (target, info) in due {
            match target {
                Target::Process(pid) => k.signal_process_info(pid, info),
                Target::Thread(tid) => {
                    if let Some(t) = k.thread(tid) {
                        k.send_signal_info(&t, info);
                    }
                }
            }
        }
        drop(k);
        s = lock.lock();
        if s.closed {
            return;
        }
        // The next deadline is read under the lock the wait releases: a
        // timer armed while the signals went out (its notification then
        // found nobody waiting) is seen here.
        match s.timers.values().filter_map(|t| t.deadline).min() {
            Some(d) => {
                cond.wait_until(&mut s, d);
            }
            None => cond.wait(&mut s),
        }
    }
}

impl Drop for Timers {
    /// Ends the service thread (it sleeps without a deadline when no timer
    /// is armed, so it is told rather than left to notice).
    fn drop(&mut self) {
        self.state.0.lock().closed = true;
        self.state.1.notify_all();
    }
}
