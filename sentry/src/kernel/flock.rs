//! flock(2) locks: whole-file advisory locks owned by open file
//! descriptions, shared or exclusive, waited for interruptibly.

use crate::abi::Errno;
use crate::waiter::{wait_once, Waker};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;

/// Identifies a locked file: (device, inode).
pub(crate) type FileId = (u64, u64);

#[derive(Default)]
struct LockState {
    /// Holders: description id → exclusive?
    holders: HashMap<usize, bool>,
}

/// The flock table of a sandbox (a cheap handle to it).
#[derive(Clone, Default)]
pub struct Flocks {
    state: Arc<(Mutex<HashMap<FileId, LockState>>, Condvar)>,
}

/// A lock request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlockOp {
    Shared,
    Exclusive,
    Unlock,
}

impl Flocks {
    /// Takes, converts or releases the lock of description `owner` on
    /// `file`; blocks unless `nonblock` (then EWOULDBLOCK).
    pub fn lock(&self, file: FileId, owner: usize, op: FlockOp, nonblock: bool) -> Result<(), Errno> {
        let (m, cond) = (&self.state.0, &self.state.1);
        let mut t = m.lock();
        if op == FlockOp::Unlock {
            if let Some(s) = t.get_mut(&file) {
                s.holders.remove(&owner);
                if s.holders.is_empty() {
                    t.remove(&file);
                }
            }
            cond.notify_all();
            return Ok(());
        }
        let exclusive = op == FlockOp::Exclusive;
        loop {
            let s = t.entry(file).or_default();
            let conflict = s.holders.iter().any(|(&o, &ex)| o != owner && (ex || exclusive));
            if !conflict {
                s.holders.insert(owner, exclusive);
                cond.notify_all();
                return Ok(());
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let state = self.state.clone();
            let wake: Waker = Arc::new(move || {
                let _g = state.0.lock();
                state.1.notify_all();
            });
            wait_once(&mut t, cond, wake)?;
        }
    }

    /// Drops every lock `owner` holds (its description closed).
    pub fn release_all(&self, owner: usize) {
        let mut t = self.state.0.lock();
        t.retain(|_, s| {
            s.holders.remove(&owner);
            !s.holders.is_empty()
        });
        self.state.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_and_exclusive_conflicts() {
        let f = Flocks::default();
        let file = (1, 2);
        f.lock(file, 1, FlockOp::Shared, true).unwrap();
        f.lock(file, 2, FlockOp::Shared, true).unwrap();
        assert_eq!(f.lock(file, 3, FlockOp::Exclusive, true), Err(Errno::EAGAIN));
        f.lock(file, 1, FlockOp::Unlock, true).unwrap();
        f.release_all(2);
        f.lock(file, 3, FlockOp::Exclusive, true).unwrap();
        assert_eq!(f.lock(file, 1, FlockOp::Shared, true), Err(Errno::EAGAIN));
        f.lock(file, 3, FlockOp::Shared, true).unwrap();
        f.lock(file, 1, FlockOp::Shared, true).unwrap();
    }
}
