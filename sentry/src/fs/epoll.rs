//! epoll instances, as Linux's eventpoll: each interest registers an
//! entry on its file's wait queue at EPOLL_CTL_ADD; a notification puts
//! the interest on the instance's ready list and wakes the instance's own
//! queue (its waiters, or an epoll watching this one). A wait looks only
//! at the ready list: level-triggered interests that are still ready go
//! back on it, edge-triggered ones come back with the next event, a
//! one-shot interest is disarmed until EPOLL_CTL_MOD.
//!
//! Instances may watch instances, as on Linux: EPOLL_CTL_ADD refuses a
//! loop or a nesting deeper than [`EP_MAX_NESTS`] (ELOOP), since asking a
//! watched instance for its readiness asks the instances below it.

use crate::abi::poll::{EPOLLERR, EPOLLET, EPOLLHUP, EPOLLONESHOT, POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::vfs::{FileDescription, FileOps, TimeSpec};
use crate::waiter::{Entry, Notify, Queue};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Weak};

/// How many levels of instances may sit below the top one (Linux's
/// EP_MAX_NESTS): a chain holds at most five instances.
pub(crate) const EP_MAX_NESTS: usize = 4;

/// Serializes the nesting checks with the links they allow, as Linux's
/// `epnested_mutex`: two adds racing could otherwise close a loop.
static NESTING: Mutex<()> = Mutex::new(());

thread_local! {
    /// How many instances the calling thread is asking for readiness
    /// (nested): a bound on the recursion even if a loop slipped past
    /// EPOLL_CTL_ADD.
    static POLLING: Cell<usize> = const { Cell::new(0) };
}

/// Keyed by (fd, description address), as Linux keys by (fd, file).
type Key = (i32, usize);

struct Interest {
    file: Weak<FileDescription>,
    events: u32,
    data: u64,
    /// EPOLLONESHOT fired; nothing is reported until EPOLL_CTL_MOD.
    disarmed: bool,
    /// On the ready list.
    queued: bool,
    /// Registered on the file's queue.
    entry: Entry,
}

#[derive(Default)]
struct State {
    interest: BTreeMap<Key, Interest>,
    /// Interests that may be ready, oldest first.
    ready: VecDeque<Key>,
    /// The interest count at which closed files are next swept out.
    sweep_at: usize,
}

/// An epoll instance.
pub(crate) struct Epoll {
    ino: u64,
    created: TimeSpec,
    state: Mutex<State>,
    /// Waiters for this instance (epoll_wait, poll, an outer epoll).
    events: Queue,
    /// The instances watching this one, with their interest's key (the
    /// link counts while that interest exists).
    watchers: Mutex<Vec<(Weak<Epoll>, Key)>>,
    me: Weak<Epoll>,
}

fn key(fd: i32, file: &Arc<FileDescription>) -> Key {
    (fd, Arc::as_ptr(file) as usize)
}

/// An interest's entry on its file's queue.
struct Callback {
    epoll: Weak<Epoll>,
    key: Key,
    file: Weak<FileDescription>,
}

impl Notify for Callback {
    fn notify(&self, _mask: u32) {
        if let Some(ep) = self.epoll.upgrade() {
            ep.mark_ready(self.key);
        }
    }

    fn stale(&self) -> bool {
        self.epoll.strong_count() == 0 || self.file.strong_count() == 0
    }
}

/// What an interest is registered for: its events and the ones always
/// reported.
fn entry_mask(events: u32) -> u32 {
    (events & !(EPOLLET | EPOLLONESHOT)) | EPOLLERR | EPOLLHUP
}

impl Epoll {
    pub(crate) fn new(ino: u64, created: TimeSpec) -> Arc<Epoll> {
        Arc::new_cyclic(|me| Epoll {
            ino,
            created,
            state: Mutex::default(),
            events: Queue::default(),
            watchers: Mutex::default(),
            me: me.clone(),
        })
    }

    /// The instance behind `file`, if it is one.
    fn of(file: &FileDescription) -> Option<Arc<Epoll>> {
        file.ops.clone().into_any().downcast::<Epoll>().ok()
    }

    /// The instances this one watches.
    fn watched(&self) -> Vec<Arc<Epoll>> {
        let s = self.state.lock();
        s.interest.values().filter_map(|i| i.file.upgrade().and_then(|f| Epoll::of(&f))).collect()
    }

    /// The instances watching this one.
    fn watching(&self) -> Vec<Arc<Epoll>> {
        let mut w = self.watchers.lock();
        w.retain(|(ep, _)| ep.strong_count() > 0);
        w.iter().filter_map(|(ep, k)| ep.upgrade().filter(|ep| ep.state.lock().interest.contains_key(k))).collect()
    }

    /// How many levels of instances sit below this one, or None when
    /// `into` is among them or they are deeper than EP_MAX_NESTS (Linux's
    /// `ep_loop_check_proc`). `seen` remembers the instances measured.
    fn depth_below(&self, into: &Epoll, level: usize, seen: &mut HashMap<usize, usize>) -> Option<usize> {
        let me = std::ptr::from_ref(self) as usize;
        if let Some(d) = seen.get(&me) {
            return Some(*d);
        }
        let mut depth = 0;
        for ep in self.watched() {
            if std::ptr::eq(Arc::as_ptr(&ep), into) || level >= EP_MAX_NESTS {
                return None;
            }
            depth = depth.max(ep.depth_below(into, level + 1, seen)? + 1);
        }
        seen.insert(me, depth);
        Some(depth)
    }

    /// How many levels of instances sit above this one, or None when more
    /// than EP_MAX_NESTS (Linux's `ep_get_upwards_depth_proc`).
    fn depth_above(&self, level: usize, seen: &mut HashMap<usize, usize>) -> Option<usize> {
        let me = std::ptr::from_ref(self) as usize;
        if let Some(d) = seen.get(&me) {
            return Some(*d);
        }
        let mut depth = 0;
        for ep in self.watching() {
            if level >= EP_MAX_NESTS {
                return None;
            }
            depth = depth.max(ep.depth_above(level + 1, seen)? + 1);
        }
        seen.insert(me, depth);
        Some(depth)
    }

    /// Whether this instance may watch `inner`: not itself, no loop, at
    /// most EP_MAX_NESTS levels from the top of a chain through both to its
    /// bottom (Linux's `ep_loop_check`).
    fn may_watch(&self, inner: &Epoll) -> Result<(), Errno> {
        if std::ptr::eq(self, inner) {
            return Err(Errno::EINVAL);
        }
        let below = inner.depth_below(self, 0, &mut HashMap::new()).ok_or(Errno::ELOOP)?;
        let above = self.depth_above(0, &mut HashMap::new()).ok_or(Errno::ELOOP)?;
        if below + 1 + above > EP_MAX_NESTS {
            return Err(Errno::ELOOP);
        }
        Ok(())
    }

    /// Puts an interest on the ready list and wakes the waiters.
    fn mark_ready(&self, k: Key) {
        {
            let mut s = self.state.lock();
            let Some(i) = s.interest.get_mut(&k) else { return };
            if i.queued || i.disarmed {
                return;
            }
            i.queued = true;
            s.ready.push_back(k);
        }
        self.events.notify(POLLIN | POLLRDNORM);
    }

    /// EPOLL_CTL_ADD. An instance to watch is checked for loops and depth
    /// first, and linked to this one under the same lock.
    pub(crate) fn add(&self, fd: i32, file: &Arc<FileDescription>, events: u32, data: u64) -> Result<(), Errno> {
        let Some(inner) = Epoll::of(file) else { return self.insert(fd, file, events, data) };
        let _nesting = NESTING.lock();
        self.may_watch(&inner)?;
        self.insert(fd, file, events, data)?;
        inner.watchers.lock().push((self.me.clone(), key(fd, file)));
        Ok(())
    }

    /// Adds an interest.
    fn insert(&self, fd: i32, file: &Arc<FileDescription>, events: u32, data: u64) -> Result<(), Errno> {
        let k = key(fd, file);
        let entry = {
            let mut s = self.state.lock();
            // Descriptions closed everywhere leave the set, as on Linux.
            if s.interest.len() >= s.sweep_at {
                s.interest.retain(|_, i| i.file.strong_count() > 0);
                s.sweep_at = (s.interest.len() * 2).max(64);
                let State { interest, ready, .. } = &mut *s;
                ready.retain(|k| interest.contains_key(k));
            }
            if s.interest.contains_key(&k) {
                return Err(Errno::EEXIST);
            }
            let cb = Arc::new(Callback { epoll: self.me.clone(), key: k, file: Arc::downgrade(file) });
            let entry = Entry::new(entry_mask(events), cb);
            let i = Interest { file: Arc::downgrade(file), events, data, disarmed: false, queued: true, entry };
            let entry = i.entry.clone();
            s.interest.insert(k, i);
            // Checked at the next wait, as Linux checks at once.
            s.ready.push_back(k);
            entry
        };
        file.ops.event_register(&entry);
        self.events.notify(POLLIN | POLLRDNORM);
        Ok(())
    }

    /// EPOLL_CTL_MOD.
    pub(crate) fn modify(&self, fd: i32, file: &Arc<FileDescription>, events: u32, data: u64) -> Result<(), Errno> {
        let k = key(fd, file);
        let (old, new) = {
            let mut s = self.state.lock();
            let i = s.interest.get_mut(&k).ok_or(Errno::ENOENT)?;
            let old = i.entry.clone();
            let cb = Arc::new(Callback { epoll: self.me.clone(), key: k, file: Arc::downgrade(file) });
            i.entry = Entry::new(entry_mask(events), cb);
            i.events = events;
            i.data = data;
            i.disarmed = false;
            let new = i.entry.clone();
            if !std::mem::replace(&mut i.queued, true) {
                s.ready.push_back(k);
            }
            (old, new)
        };
        file.ops.event_unregister(&old);
        file.ops.event_register(&new);
        self.events.notify(POLLIN | POLLRDNORM);
        Ok(())
    }

    /// EPOLL_CTL_DEL. The interest leaves the ready list too: a later ADD
    /// of the same file queues it afresh, so it must not be there twice.
    pub(crate) fn delete(&self, fd: i32, file: &Arc<FileDescription>) -> Result<(), Errno> {
        let k = key(fd, file);
        let i = {
            let mut s = self.state.lock();
            let i = s.interest.remove(&k).ok_or(Errno::ENOENT)?;
            if i.queued {
                s.ready.retain(|r| *r != k);
            }
            i
        };
        file.ops.event_unregister(&i.entry);
        if let Some(inner) = Epoll::of(file) {
            let me = self.me.as_ptr();
            let mut w = inner.watchers.lock();
            if let Some(at) = w.iter().position(|(ep, wk)| std::ptr::eq(ep.as_ptr(), me) && *wk == k) {
                w.swap_remove(at);
            }
        }
        Ok(())
    }

    /// Takes the ready list: each interest with its file and events
    /// (dropping those whose file is gone). The interests are off the list
    /// from here, so an event that comes while they are looked at puts
    /// them back.
    fn take_ready(&self) -> Vec<(Key, Arc<FileDescription>, u32)> {
        // A disarmed interest's file is let go after the lock: if a close
        // made this the last reference, its release (which may notify
        // this very epoll) must not run under it.
        let mut disarmed = Vec::new();
        let mut s = self.state.lock();
        let keys = std::mem::take(&mut s.ready);
        let mut out = Vec::with_capacity(keys.len());
        for k in keys {
            let Some(i) = s.interest.get_mut(&k) else { continue };
            i.queued = false;
            match i.file.upgrade() {
                Some(f) if !i.disarmed => out.push((k, f, i.events)),
                Some(f) => disarmed.push(f),
                None => {
                    s.interest.remove(&k);
                }
            }
        }
        drop(s);
        drop(disarmed);
        out
    }

    /// Puts interests back on the ready list (at the front when `front`,
    /// keeping their order), unless an event already did.
    fn requeue(s: &mut State, keys: impl DoubleEndedIterator<Item = Key>, front: bool) {
        let mut keys: Vec<Key> = keys.collect();
        if front {
            keys.reverse();
        }
        for k in keys {
            let Some(i) = s.interest.get_mut(&k) else { continue };
            if i.queued || i.disarmed {
                continue;
            }
            i.queued = true;
            if front {
                s.ready.push_front(k);
            } else {
                s.ready.push_back(k);
            }
        }
    }

    /// Collects up to `max` ready (events, data) pairs.
    pub(crate) fn ready(&self, max: usize) -> Vec<(u32, u64)> {
        let candidates = self.take_ready();
        // The files are asked outside the instance's lock: their queues
        // call back into it.
        let mut found = Vec::new();
        let mut rest = Vec::new();
        for (k, f, events) in candidates {
            if found.len() >= max {
                rest.push(k);
                continue;
            }
            let now = f.ops.poll_events() & (events | EPOLLERR | EPOLLHUP);
            if now != 0 {
                found.push((k, now, events));
            }
        }
        let mut out = Vec::with_capacity(found.len());
        let mut again = Vec::new();
        let mut s = self.state.lock();
        let was_empty = s.ready.is_empty();
        for (k, now, events) in found {
            let Some(i) = s.interest.get_mut(&k) else { continue };
            if i.disarmed {
                continue;
            }
            out.push((now, i.data));
            if events & EPOLLONESHOT != 0 {
                i.disarmed = true;
            } else if events & EPOLLET == 0 {
                again.push(k);
            }
        }
        Self::requeue(&mut s, rest.into_iter(), true);
        Self::requeue(&mut s, again.into_iter(), false);
        // Another waiter that looked while the list was taken saw it empty
        // and sleeps: wake it for what went back, as Linux's ep_done_scan.
        let requeued = was_empty && !s.ready.is_empty();
        drop(s);
        if requeued {
            self.events.notify(POLLIN | POLLRDNORM);
        }
        out
    }

    /// Whether an interest is ready, without consuming anything (the
    /// instance's own readiness, when it is watched).
    fn ready_without_consuming(&self) -> bool {
        let candidates: Vec<(Arc<FileDescription>, u32)> = {
            let s = self.state.lock();
            s.ready
                .iter()
                .filter_map(|k| s.interest.get(k))
                .filter(|i| !i.disarmed)
                .filter_map(|i| Some((i.file.upgrade()?, i.events)))
                .collect()
        };
        candidates.iter().any(|(f, events)| f.ops.poll_events() & (events | EPOLLERR | EPOLLHUP) != 0)
    }

    /// Registers a waiter for this instance's events.
    pub(crate) fn register(&self, e: &Entry) {
        self.events.register(e);
    }

    pub(crate) fn unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        let interest = std::mem::take(&mut self.state.get_mut().interest);
        for i in interest.into_values() {
            if let Some(f) = i.file.upgrade() {
                f.ops.event_unregister(&i.entry);
            }
        }
    }
}

super::anon::anon_inode_node!(Epoll, usize::MAX - 3);

impl FileOps for Epoll {
    fn seekable(&self) -> bool {
        false
    }

    /// An epoll instance is readable when one of its files is ready (it
    /// can itself be watched).
    fn poll_events(&self) -> u32 {
        let depth = POLLING.with(Cell::get);
        if depth > EP_MAX_NESTS {
            return 0;
        }
        POLLING.with(|p| p.set(depth + 1));
        let ready = self.ready_without_consuming();
        POLLING.with(|p| p.set(depth));
        if ready {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    fn event_register(&self, e: &Entry) {
        self.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.unregister(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::poll::POLLOUT;
    use crate::fs::pipe::Pipe;
    use crate::fs::tmpfs::Tmpfs;
    use crate::testing::Count;
    use crate::vfs::{Dentry, Mount};

    fn desc(ops: Arc<dyn FileOps>) -> Arc<FileDescription> {
        let m = Arc::new(Mount {
            id: 0,
            root: Tmpfs::new(0o755, 0, 0),
            mountpoint: None,
            fs_type: "t".into(),
            source: "t".into(),
            live: crate::vfs::MountFlags::new(0),
            opts: crate::vfs::MountOpts::default(),
        });
        FileDescription::new(Dentry::mount_root(&m), ops, crate::abi::fcntl::O_RDWR)
    }

    #[test]
    fn level_edge_and_oneshot() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = desc(p.reader());
        let w = desc(p.writer());
        let ep = Epoll::new(9, TimeSpec::default());
        ep.add(3, &r, POLLIN, 33).unwrap();
        ep.add(4, &w, POLLOUT | EPOLLET, 44).unwrap();
        assert_eq!(ep.add(3, &r, POLLIN, 0), Err(Errno::EEXIST));
        assert_eq!(ep.ready(8), vec![(POLLOUT, 44)], "writable once (edge)");
        assert!(ep.ready(8).is_empty(), "no new edge, nothing to read");
        w.ops.write(b"x", 0).unwrap();
        assert_eq!(ep.ready(8), vec![(POLLIN, 33)]);
        assert_eq!(ep.ready(8), vec![(POLLIN, 33)], "level-triggered repeats");
        ep.modify(3, &r, POLLIN | EPOLLONESHOT, 5).unwrap();
        assert_eq!(ep.ready(8), vec![(POLLIN, 5)]);
        assert!(ep.ready(8).is_empty(), "one shot");
        ep.delete(3, &r).unwrap();
        assert_eq!(ep.delete(3, &r), Err(Errno::ENOENT));
        drop(w);
        assert!(ep.ready(8).is_empty(), "the closed writer left the set");
    }

    #[test]
    fn a_write_wakes_the_instance_and_an_outer_one_but_not_another_files_waiters() {
        let (p, q) = (Pipe::new(1, TimeSpec::default()), Pipe::new(2, TimeSpec::default()));
        let (r, w) = (desc(p.reader()), desc(p.writer()));
        let (other_r, other_w) = (desc(q.reader()), desc(q.writer()));
        let inner = Epoll::new(9, TimeSpec::default());
        inner.add(3, &r, POLLIN, 33).unwrap();
        assert!(inner.ready(8).is_empty());
        let inner_desc = desc(inner.clone());
        let outer = Epoll::new(10, TimeSpec::default());
        outer.add(5, &inner_desc, POLLIN, 55).unwrap();
        assert!(outer.ready(8).is_empty(), "nothing ready inside");
        let (woken, bystander) = (Arc::new(Count::default()), Arc::new(Count::default()));
        outer.register(&Entry::new(POLLIN, woken.clone()));
        other_r.ops.event_register(&Entry::new(POLLIN, bystander.clone()));
        w.ops.write(b"x", 0).unwrap();
        assert!(woken.get() >= 1, "the outer epoll's waiter woke");
        assert_eq!(bystander.get(), 0, "another pipe's waiter did not");
        assert_eq!(outer.ready(8), vec![(POLLIN, 55)]);
        assert_eq!(inner.ready(8), vec![(POLLIN, 33)]);
        drop(other_w);
    }

    #[test]
    fn a_loop_is_refused_and_polling_ends() {
        let p = Pipe::new(1, TimeSpec::default());
        let (r, w) = (desc(p.reader()), desc(p.writer()));
        let (a, b) = (Epoll::new(9, TimeSpec::default()), Epoll::new(10, TimeSpec::default()));
        let (a_desc, b_desc) = (desc(a.clone()), desc(b.clone()));
        a.add(3, &b_desc, POLLIN, 1).unwrap();
        assert_eq!(b.add(4, &a_desc, POLLIN, 2), Err(Errno::ELOOP));
        b.add(5, &r, POLLIN, 5).unwrap();
        w.ops.write(b"x", 0).unwrap();
        assert_eq!(a_desc.ops.poll_events(), POLLIN | POLLRDNORM);
        assert_eq!(a.ready(8), vec![(POLLIN, 1)]);
        a.delete(3, &b_desc).unwrap();
        b.add(4, &a_desc, POLLIN, 2).unwrap();
        assert_eq!(a.add(3, &b_desc, POLLIN, 1), Err(Errno::ELOOP), "the loop the other way");
    }

    /// A chain of `n` instances, each watching the next; the error of the
    /// first link refused.
    fn chain(n: usize, top_down: bool) -> Result<(), Errno> {
        let eps: Vec<_> = (9u64..).take(n).map(|ino| Epoll::new(ino, TimeSpec::default())).collect();
        let descs: Vec<_> = eps.iter().map(|ep| desc(ep.clone())).collect();
        let mut links: Vec<usize> = (0..n - 1).collect();
        if !top_down {
            links.reverse();
        }
        links.into_iter().try_for_each(|i| eps[i].add(3, &descs[i + 1], POLLIN, 0))
    }

    #[test]
    fn nesting_stops_at_five_instances_whichever_way_the_chain_grows() {
        for top_down in [true, false] {
            assert_eq!(chain(EP_MAX_NESTS + 1, top_down), Ok(()));
            assert_eq!(chain(EP_MAX_NESTS + 2, top_down), Err(Errno::ELOOP));
        }
    }

    #[test]
    fn add_delete_add_reports_the_file_once() {
        let p = Pipe::new(1, TimeSpec::default());
        let (r, w) = (desc(p.reader()), desc(p.writer()));
        let ep = Epoll::new(9, TimeSpec::default());
        w.ops.write(b"x", 0).unwrap();
        ep.add(3, &r, POLLIN, 33).unwrap();
        ep.delete(3, &r).unwrap();
        ep.add(3, &r, POLLIN, 34).unwrap();
        assert_eq!(ep.ready(8), vec![(POLLIN, 34)]);
        for _ in 0..1000 {
            ep.delete(3, &r).unwrap();
            ep.add(3, &r, POLLIN, 34).unwrap();
        }
        assert_eq!(ep.state.lock().ready.len(), 1, "no stale keys pile up");
    }

    #[test]
    fn entries_put_back_wake_the_other_waiters() {
        let p = Pipe::new(1, TimeSpec::default());
        let (r, w) = (desc(p.reader()), desc(p.writer()));
        let ep = Epoll::new(9, TimeSpec::default());
        ep.add(3, &r, POLLIN, 33).unwrap();
        ep.add(4, &w, POLLOUT, 44).unwrap();
        w.ops.write(b"x", 0).unwrap();
        let woken = Arc::new(Count::default());
        ep.register(&Entry::new(POLLIN, woken.clone()));
        assert_eq!(ep.ready(1).len(), 1, "one of two");
        assert!(woken.get() >= 1, "the one left over wakes the others");
        assert_eq!(ep.ready(8).len(), 2, "both still ready (level)");
    }
}
