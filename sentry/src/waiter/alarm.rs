//! Alarms: a notification at a given time, for objects whose readiness
//! comes with the clock (a timerfd's expiry). One service thread per
//! sandbox sleeps until the earliest alarm.

use super::{Notify, ALL};
use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::sync::{OnceLock, Weak};
use std::time::Instant;

/// The alarms set, keyed by (time, sequence number), and the next
/// sequence number.
#[derive(Default)]
struct Due(BTreeMap<(Instant, u64), Weak<dyn Notify>>, u64);

struct Alarms {
    due: Mutex<Due>,
    cond: Condvar,
}

static ALARMS: OnceLock<Option<&'static Alarms>> = OnceLock::new();

fn alarms() -> Option<&'static Alarms> {
    *ALARMS.get_or_init(|| {
        let a: &'static Alarms = Box::leak(Box::new(Alarms { due: Mutex::default(), cond: Condvar::new() }));
        match std::thread::Builder::new().name("alarms".into()).spawn(move || service(a)) {
            Ok(_) => Some(a),
            Err(e) => {
                log::warn!("cannot start the alarm thread: {e}");
                None
            }
        }
    })
}

/// One alarm set, to cancel it: its owner keeps it so the set holds at
/// most one alarm per owner, however often the guest re-arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key(Instant, u64);

impl Key {
    /// When the alarm goes off.
    pub(crate) fn when(self) -> Instant {
        self.0
    }
}

/// Notifies `target` (with every event) at `at`, unless it is gone or the
/// alarm cancelled by then. None when no alarm thread runs.
pub(crate) fn at(at: Instant, target: Weak<dyn Notify>) -> Option<Key> {
    let a = alarms()?;
    let mut g = a.due.lock();
    let seq = g.1;
    g.1 += 1;
    let earliest = g.0.keys().next().is_none_or(|k| at < k.0);
    g.0.insert((at, seq), target);
    if earliest {
        a.cond.notify_one();
    }
    Some(Key(at, seq))
}

/// Removes the alarm `key` if it has not gone off yet.
pub(crate) fn cancel(key: Key) {
    if let Some(a) = alarms() {
        a.due.lock().0.remove(&(key.0, key.1));
    }
}

/// How many alarms are set (what a test checks for leaks).
#[cfg(test)]
pub fn count() -> usize {
    alarms().map_or(0, |a| a.due.lock().0.len())
}

fn service(a: &'static Alarms) {
    let mut g = a.due.lock();
    loop {
        let now = Instant::now();
        let mut fired = Vec::new();
        while let Some(e) = g.0.first_entry() {
            if e.key().0 > now {
                break;
            }
            fired.push(e.remove());
        }
        if !fired.is_empty() {
            drop(g);
            for t in fired.iter().filter_map(Weak::upgrade) {
                t.notify(ALL);
            }
            g = a.due.lock();
            continue;
        }
        match g.0.keys().next().map(|k| k.0) {
            Some(next) => {
                a.cond.wait_until(&mut g, next);
            }
            None => a.cond.wait(&mut g),
        }
    }
}
