//! fcntl(2) record locks: byte-range advisory locks, read (shared) or
//! write (exclusive). A POSIX lock belongs to a process and goes when the
//! process closes any descriptor of the file or exits; an open file
//! description lock (F_OFD_*) belongs to the description and goes when it
//! is released. A process's own locks never conflict with each other: a
//! new one replaces, splits or merges what it held over the range.

use super::flock::FileId;
use crate::abi::Errno;
use crate::vfs::FileDescription;
use crate::waiter::{wait_once, Waker};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Who holds a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A POSIX lock of this process.
    Process(i32),
    /// An OFD lock of this open file description.
    Description(usize),
}

/// A locked range, `start..=end` (`end` u64::MAX: to end of file and on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lock {
    pub owner: Owner,
    pub start: u64,
    pub end: u64,
    pub exclusive: bool,
}

impl Lock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }

    fn conflicts(&self, other: &Lock) -> bool {
        self.owner != other.owner && self.overlaps(other.start, other.end) && (self.exclusive || other.exclusive)
    }
}

/// What a set request does over its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Unlock,
}

#[derive(Default)]
struct State {
    locks: HashMap<FileId, Vec<Lock>>,
    /// Owners blocked in F_SETLKW, and whom they wait for.
    waiting: HashMap<Owner, Owner>,
}

/// The record locks of a sandbox.
#[derive(Default)]
pub struct RecordLocks {
    state: Arc<(Mutex<State>, Condvar)>,
    /// Locks held sandbox-wide: closing a file looks no further when 0.
    held: AtomicUsize,
}

impl RecordLocks {
    /// The first lock of another owner that a `request` would conflict
    /// with (F_GETLK).
    pub fn test(&self, file: FileId, request: &Lock) -> Option<Lock> {
        let s = self.state.0.lock();
        s.locks.get(&file)?.iter().find(|l| l.conflicts(request)).copied()
    }

    /// Takes, changes or releases `owner`'s locks over `start..=end`;
    /// with `wait` blocks while another owner's lock conflicts (else
    /// EAGAIN), failing with EDEADLK when that owner waits for us.
    pub fn set(&self, file: FileId, owner: Owner, start: u64, end: u64, kind: Kind, wait: bool) -> Result<(), Errno> {
        let (m, cond) = (&self.state.0, &self.state.1);
        let mut s = m.lock();
        let request = Lock { owner, start, end, exclusive: kind == Kind::Write };
        loop {
            let blocker = match kind {
                Kind::Unlock => None,
                _ => s.locks.get(&file).and_then(|v| v.iter().find(|l| l.conflicts(&request)).map(|l| l.owner)),
            };
            let Some(blocker) = blocker else {
                s.waiting.remove(&owner);
                self.apply(&mut s, file, request, kind);
                cond.notify_all();
                return Ok(());
            };
            if !wait {
                return Err(Errno::EAGAIN);
            }
            if Self::waits_for(&s, blocker, owner) {
                s.waiting.remove(&owner);
                return Err(Errno::EDEADLK);
            }
            s.waiting.insert(owner, blocker);
            let state = self.state.clone();
            let wake: Waker = Arc::new(move || {
                let _g = state.0.lock();
                state.1.notify_all();
            });
            if let Err(e) = wait_once(&mut s, cond, wake) {
                s.waiting.remove(&owner);
                return Err(e);
            }
        }
    }

    /// Does `from` wait, directly or through others, for `target`?
    fn waits_for(s: &State, from: Owner, target: Owner) -> bool {
        let mut at = from;
        for _ in 0..=s.waiting.len() {
            match s.waiting.get(&at) {
                Some(&next) if next == target => return true,
                Some(&next) => at = next,
                None => return false,
            }
        }
        false
    }

    /// Replaces `request.owner`'s locks over the range with `request`
    /// (none for an unlock), keeping the parts outside it, and merges it
    /// with adjacent locks of the same owner and kind.
    fn apply(&self, s: &mut State, file: FileId, request: Lock, kind: Kind) {
        let v = s.locks.entry(file).or_default();
        let before = v.len();
        let mut kept = Vec::with_capacity(v.len() + 2);
        let mut new = request;
        for l in v.drain(..) {
            if l.owner != request.owner || !l.overlaps(request.start.saturating_sub(1), request.end.saturating_add(1)) {
                kept.push(l);
                continue;
            }
            let same = kind != Kind::Unlock && l.exclusive == request.exclusive;
            if same {
                // Adjacent or overlapping with the same kind: one lock.
                new.start = new.start.min(l.start);
                new.end = new.end.max(l.end);
                continue;
            }
            if !l.overlaps(request.start, request.end) {
                kept.push(l);
                continue;
            }
            if l.start < request.start {
                kept.push(Lock { end: request.start - 1, ..l });
            }
            if l.end > request.end {
                kept.push(Lock { start: request.end + 1, ..l });
            }
        }
        if kind != Kind::Unlock {
            kept.push(new);
        }
        let after = kept.len();
        *v = kept;
        if v.is_empty() {
            s.locks.remove(&file);
        }
        if after >= before {
            self.held.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.held.fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    /// Drops `owner`'s locks: on `file` only, or on every file.
    pub fn release(&self, owner: Owner, file: Option<FileId>) {
        if self.held.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut s = self.state.0.lock();
        let mut gone = 0;
        s.locks.retain(|f, v| {
            if file.is_none_or(|x| x == *f) {
                let before = v.len();
                v.retain(|l| l.owner != owner);
                gone += before - v.len();
            }
            !v.is_empty()
        });
        self.held.fetch_sub(gone, Ordering::Relaxed);
        self.state.1.notify_all();
    }

    /// Process `pid` closed a descriptor of `f`: its POSIX locks on the
    /// file go, as in Linux, whichever descriptor took them.
    pub fn closed(&self, pid: i32, f: &FileDescription) {
        if self.held.load(Ordering::Relaxed) == 0 {
            return;
        }
        if let Ok(id) = file_id(f) {
            self.release(Owner::Process(pid), Some(id));
        }
    }
}

/// The file a description is open on, as locks name it.
pub(crate) fn file_id(f: &FileDescription) -> Result<FileId, Errno> {
    let st = f.stat()?;
    Ok((st.dev, st.ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileId = (1, 2);
    const A: Owner = Owner::Process(10);
    const B: Owner = Owner::Process(11);

    fn req(owner: Owner, start: u64, end: u64, exclusive: bool) -> Lock {
        Lock { owner, start, end, exclusive }
    }

    #[test]
    fn readers_share_writers_exclude() {
        let r = RecordLocks::default();
        assert_eq!(r.set(F, A, 0, 99, Kind::Read, false), Ok(()));
        assert_eq!(r.set(F, B, 50, 60, Kind::Read, false), Ok(()));
        assert_eq!(r.set(F, B, 50, 60, Kind::Write, false), Err(Errno::EAGAIN));
        assert_eq!(r.test(F, &req(B, 0, 10, true)), Some(req(A, 0, 99, false)));
        assert_eq!(r.set(F, B, 100, u64::MAX, Kind::Write, false), Ok(()));
        r.release(A, None);
        assert_eq!(r.set(F, B, 0, 10, Kind::Write, false), Ok(()));
        assert_eq!(r.held.load(Ordering::Relaxed), 3);
        r.release(B, Some(F));
        assert_eq!(r.held.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn unlocking_the_middle_splits_and_same_kinds_merge() {
        let r = RecordLocks::default();
        assert_eq!(r.set(F, A, 0, 99, Kind::Write, false), Ok(()));
        assert_eq!(r.set(F, A, 40, 59, Kind::Unlock, false), Ok(()));
        assert_eq!(r.test(F, &req(B, 40, 59, true)), None);
        assert_eq!(r.test(F, &req(B, 60, 60, false)), Some(req(A, 60, 99, true)));
        assert_eq!(r.set(F, A, 40, 59, Kind::Write, false), Ok(()));
        assert_eq!(r.test(F, &req(B, 0, u64::MAX, false)), Some(req(A, 0, 99, true)));
        // Changing a part's kind splits the lock in three.
        assert_eq!(r.set(F, A, 10, 19, Kind::Read, false), Ok(()));
        assert_eq!(r.set(F, B, 10, 19, Kind::Read, false), Ok(()));
        assert_eq!(r.held.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn a_wait_that_would_close_a_cycle_is_a_deadlock() {
        let r = Arc::new(RecordLocks::default());
        assert_eq!(r.set(F, A, 0, 0, Kind::Write, false), Ok(()));
        assert_eq!(r.set(F, B, 1, 1, Kind::Write, false), Ok(()));
        let r2 = r.clone();
        let waiter = std::thread::spawn(move || r2.set(F, A, 1, 1, Kind::Write, true));
        while !r.state.0.lock().waiting.contains_key(&A) {
            std::thread::yield_now();
        }
        assert_eq!(r.set(F, B, 0, 0, Kind::Write, true), Err(Errno::EDEADLK));
        r.release(B, None);
        assert_eq!(waiter.join().unwrap(), Ok(()));
    }
}
