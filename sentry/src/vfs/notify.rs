//! Filesystem change notification (Linux's fsnotify, for inotify and
//! dnotify): the watches of the sandbox, kept by inode, and the hooks the VFS and the
//! system calls call where an operation happens, so every filesystem
//! reports events without implementing them.
//!
//! An inode is named by its filesystem's identity and its inode number
//! (`Node::fs_id`, `st_ino`), which the overlay keeps across a copy-up.
//! Watches belong to inotify instances or dnotify marks, which receive
//! events through `Sink`; the table here owns every watch descriptor, so a watch is
//! added, fired and removed under one lock (instances only queue events
//! under theirs, taken after it).

use super::{Dentry, FileOps, IoctlContext, Node, S_IFDIR, S_IFMT};
use crate::abi::Errno;
use crate::mm::Mappable;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Weak};

pub(crate) const IN_ACCESS: u32 = 0x1;
pub(crate) const IN_MODIFY: u32 = 0x2;
pub(crate) const IN_ATTRIB: u32 = 0x4;
pub(crate) const IN_CLOSE_WRITE: u32 = 0x8;
pub(crate) const IN_CLOSE_NOWRITE: u32 = 0x10;
pub(crate) const IN_OPEN: u32 = 0x20;
pub(crate) const IN_MOVED_FROM: u32 = 0x40;
pub(crate) const IN_MOVED_TO: u32 = 0x80;
pub(crate) const IN_CREATE: u32 = 0x100;
pub(crate) const IN_DELETE: u32 = 0x200;
pub(crate) const IN_DELETE_SELF: u32 = 0x400;
pub(crate) const IN_MOVE_SELF: u32 = 0x800;
pub(crate) const IN_UNMOUNT: u32 = 0x2000;
pub(crate) const IN_Q_OVERFLOW: u32 = 0x4000;
pub(crate) const IN_IGNORED: u32 = 0x8000;
pub(crate) const IN_ONLYDIR: u32 = 0x0100_0000;
pub(crate) const IN_DONT_FOLLOW: u32 = 0x0200_0000;
pub(crate) const IN_EXCL_UNLINK: u32 = 0x0400_0000;
pub(crate) const IN_MASK_CREATE: u32 = 0x1000_0000;
pub(crate) const IN_MASK_ADD: u32 = 0x2000_0000;
pub(crate) const IN_ISDIR: u32 = 0x4000_0000;
pub(crate) const IN_ONESHOT: u32 = 0x8000_0000;
/// Every event an inotify watch may ask for.
pub(crate) const IN_ALL_EVENTS: u32 = 0xfff;
/// An entry of the watched directory was renamed within it (Linux's
/// `FS_RENAME` as dnotify sees it): asked for by dnotify marks only,
/// never by an inotify watch (their masks keep `IN_ALL_EVENTS`).
pub(crate) const DIR_RENAME: u32 = 0x1000;
/// Every event a watch of either kind may ask for.
const EVENTS: u32 = IN_ALL_EVENTS | DIR_RENAME;
/// What a watch's mask keeps: its events and the flags that last.
const KEPT: u32 = IN_ALL_EVENTS | IN_EXCL_UNLINK | IN_ONESHOT;

/// /proc/sys/fs/inotify/max_queued_events.
pub(crate) const MAX_QUEUED_EVENTS: usize = 16384;
/// /proc/sys/fs/inotify/max_user_instances.
pub(crate) const MAX_USER_INSTANCES: usize = 128;
/// /proc/sys/fs/inotify/max_user_watches.
pub(crate) const MAX_USER_WATCHES: usize = 65536;
/// Instances in the whole sandbox: the per-user limits count the guest's
/// own uids, which a guest that may change its uid multiplies.
pub(crate) const MAX_SANDBOX_INSTANCES: usize = 1024;
/// Watches in the whole sandbox, for the same reason.
pub(crate) const MAX_SANDBOX_WATCHES: usize = 65536;

/// An inode: (filesystem identity, inode number).
pub(crate) type InodeKey = (usize, u64);

/// Where a watch's events go: an inotify instance.
pub(crate) trait Sink: Send + Sync {
    /// Queues one event (`name` empty for an event on the watched inode
    /// itself).
    fn deliver(&self, wd: i32, mask: u32, cookie: u32, name: &[u8]);
}

struct Watch {
    instance: u64,
    wd: i32,
    mask: u32,
    /// The user an inotify watch counts against (max_user_watches); None
    /// for a dnotify mark, which Linux does not count there.
    uid: Option<u32>,
    sink: Weak<dyn Sink>,
}

/// The wd of a dnotify mark: each is an instance of its own, with one
/// watch.
const MARK_WD: i32 = 1;

/// A fresh instance id (an inotify instance's or a dnotify mark's).
pub(crate) fn fresh_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[derive(Default)]
struct Table {
    by_inode: HashMap<InodeKey, Vec<Watch>>,
    by_wd: HashMap<(u64, i32), InodeKey>,
    /// The last wd each instance gave out (they are given cyclically).
    last_wd: HashMap<u64, i32>,
    watches_of: HashMap<u32, usize>,
    instances_of: HashMap<u32, usize>,
    /// Instances in the sandbox.
    instances: usize,
    /// Watches per filesystem: what a hook looks up before it stats.
    watches_on_fs: HashMap<usize, usize>,
    /// Watched inodes whose last link went while something still held
    /// them (an open description, a working directory): they end
    /// (`IN_DELETE_SELF`) when the last holder lets go, as Linux's come
    /// at the last reference to the dentry.
    doomed: HashMap<InodeKey, Weak<dyn Node>>,
    /// The doomed inodes by the address of their node: what a holder's
    /// release looks up, in constant time.
    doomed_at: HashMap<usize, InodeKey>,
}

/// The address of a node, as holders and the doomed table name it.
fn node_addr<T: ?Sized>(ptr: *const T) -> usize {
    ptr.cast::<()>().addr()
}

/// The watches of the sandbox.
#[derive(Default)]
pub(crate) struct Registry {
    /// How many watches exist: all a hook reads when there are none.
    count: AtomicUsize,
    /// How many doomed inodes wait for their holders: all a release
    /// reads when there are none.
    doomed: AtomicUsize,
    table: Mutex<Table>,
}

/// The sandbox's registry (the sentry serves one sandbox).
pub(crate) fn registry() -> &'static Registry {
    static R: LazyLock<Registry> = LazyLock::new(Registry::default);
    &R
}

/// Why a watch could not be added.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AddError {
    /// `IN_MASK_CREATE` and the inode is watched already.
    Exists,
    /// max_user_watches or the sandbox's limit reached.
    NoSpace,
}

/// One event to hand to a sink once the table's lock is released.
type Pending = (Arc<dyn Sink>, i32, u32, u32, Vec<u8>);

impl Registry {
    /// A new instance for `uid`; None past max_user_instances or the
    /// sandbox's limit.
    pub(crate) fn new_instance(&self, uid: u32) -> Option<u64> {
        let mut t = self.table.lock();
        if t.instances >= MAX_SANDBOX_INSTANCES {
            return None;
        }
        let n = t.instances_of.entry(uid).or_default();
        if *n >= MAX_USER_INSTANCES {
            return None;
        }
        *n += 1;
        t.instances += 1;
        Some(fresh_instance())
    }

    /// Drops every watch of a closed instance (no events: no one reads them).
    pub(crate) fn release_instance(&self, instance: u64, uid: u32) {
        let mut t = self.table.lock();
        let wds: Vec<(u64, i32)> = t.by_wd.keys().filter(|(i, _)| *i == instance).copied().collect();
        for k in wds {
            Self::drop_watch(&mut t, &self.count, k);
        }
        t.last_wd.remove(&instance);
        if let Some(n) = t.instances_of.get_mut(&uid) {
            *n = n.saturating_sub(1);
        }
        t.instances = t.instances.saturating_sub(1);
    }

    /// Adds a watch on `key` for `instance`, or changes the instance's
    /// watch there (same inode, same wd): the mask is replaced, or with
    /// `IN_MASK_ADD` extended. Returns the wd.
    pub(crate) fn add_watch(
        &self,
        instance: u64,
        uid: u32,
        sink: Weak<dyn Sink>,
        key: InodeKey,
        mask: u32,
    ) -> Result<i32, AddError> {
        let mut t = self.table.lock();
        let kept = mask & KEPT;
        if let Some(w) = t.by_inode.get_mut(&key).and_then(|v| v.iter_mut().find(|w| w.instance == instance)) {
            if mask & IN_MASK_CREATE != 0 {
                return Err(AddError::Exists);
            }
            w.mask = if mask & IN_MASK_ADD != 0 { w.mask | kept } else { kept };
            return Ok(w.wd);
        }
        let n = t.watches_of.get(&uid).copied().unwrap_or(0);
        if n >= MAX_USER_WATCHES || self.count.load(Ordering::Relaxed) >= MAX_SANDBOX_WATCHES {
            return Err(AddError::NoSpace);
        }
        let mut wd = t.last_wd.get(&instance).copied().unwrap_or(0);
        loop {
            wd = if wd == i32::MAX { 1 } else { wd + 1 };
            if !t.by_wd.contains_key(&(instance, wd)) {
                break;
            }
        }
        t.last_wd.insert(instance, wd);
        t.by_wd.insert((instance, wd), key);
        t.by_inode.entry(key).or_default().push(Watch { instance, wd, mask: kept, uid: Some(uid), sink });
        *t.watches_of.entry(uid).or_default() += 1;
        *t.watches_on_fs.entry(key.0).or_default() += 1;
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(wd)
    }

    /// Adds dnotify mark `instance` (from [`fresh_instance`]) on `key`,
    /// asking for `mask` (events, `DIR_RENAME`, `IN_ONESHOT`). It counts
    /// against the sandbox's watches only: Linux's dnotify has no
    /// per-user limit.
    pub(crate) fn add_mark(
        &self,
        instance: u64,
        sink: Weak<dyn Sink>,
        key: InodeKey,
        mask: u32,
    ) -> Result<(), AddError> {
        let mut t = self.table.lock();
        if self.count.load(Ordering::Relaxed) >= MAX_SANDBOX_WATCHES {
            return Err(AddError::NoSpace);
        }
        t.by_wd.insert((instance, MARK_WD), key);
        t.by_inode.entry(key).or_default().push(Watch { instance, wd: MARK_WD, mask, uid: None, sink });
        *t.watches_on_fs.entry(key.0).or_default() += 1;
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Adds `mask`'s events to dnotify mark `instance`, as Linux's
    /// `attach_dn` (the mark stays one-shot only if both are); false if
    /// the mark is gone (a one-shot mark after its event).
    pub(crate) fn extend_mark(&self, instance: u64, mask: u32) -> bool {
        let mut t = self.table.lock();
        let Some(&key) = t.by_wd.get(&(instance, MARK_WD)) else { return false };
        let Some(w) = t.by_inode.get_mut(&key).and_then(|v| v.iter_mut().find(|w| w.instance == instance)) else {
            return false;
        };
        let oneshot = w.mask & mask & IN_ONESHOT;
        w.mask = ((w.mask | mask) & !IN_ONESHOT) | oneshot;
        true
    }

    /// Removes dnotify mark `instance`, if it is still there (no event).
    pub(crate) fn remove_mark(&self, instance: u64) {
        Self::drop_watch(&mut self.table.lock(), &self.count, (instance, MARK_WD));
    }

    /// Removes watch `wd` of `instance`, queueing `IN_IGNORED`; false if
    /// there is no such watch.
    pub(crate) fn rm_watch(&self, instance: u64, wd: i32) -> bool {
        let sink = {
            let mut t = self.table.lock();
            match Self::drop_watch(&mut t, &self.count, (instance, wd)) {
                Some(w) => w.sink.upgrade(),
                None => return false,
            }
        };
        if let Some(s) = sink {
            s.deliver(wd, IN_IGNORED, 0, b"");
        }
        true
    }

    fn drop_watch(t: &mut Table, count: &AtomicUsize, k: (u64, i32)) -> Option<Watch> {
        let key = t.by_wd.remove(&k)?;
        let list = t.by_inode.get_mut(&key)?;
        let pos = list.iter().position(|w| (w.instance, w.wd) == k)?;
        let w = list.remove(pos);
        if list.is_empty() {
            t.by_inode.remove(&key);
        }
        if let Some(n) = w.uid.and_then(|uid| t.watches_of.get_mut(&uid)) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = t.watches_on_fs.get_mut(&key.0) {
            *n -= 1;
            if *n == 0 {
                t.watches_on_fs.remove(&key.0);
            }
        }
        count.fetch_sub(1, Ordering::Relaxed);
        Some(w)
    }

    /// How many watches `key` has.
    #[cfg(test)]
    pub fn table_len_for_tests(&self, key: InodeKey) -> usize {
        self.table.lock().by_inode.get(&key).map_or(0, Vec::len)
    }

    /// Whether the table's lock is free: waits for other threads to let
    /// it go, fails when this thread holds it.
    #[cfg(test)]
    pub fn lock_free_for_tests(&self) -> bool {
        self.table.try_lock_for(std::time::Duration::from_secs(10)).is_some()
    }

    /// Whether any watch exists.
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Whether any watch is on an inode of filesystem `fs_id`: the cheap
    /// look a hook takes before it stats anything.
    pub(crate) fn watches_fs(&self, fs_id: usize) -> bool {
        self.any() && self.table.lock().watches_on_fs.contains_key(&fs_id)
    }

    /// Whether a watch of `key` asks for `mask`: None if none does, else
    /// whether one of them excludes unlinked children (and so needs the
    /// caller to look the name up, which it does without the lock).
    fn wants(&self, key: InodeKey, mask: u32) -> Option<bool> {
        let t = self.table.lock();
        let mut asking = t.by_inode.get(&key)?.iter().filter(|w| w.mask & mask & EVENTS != 0).peekable();
        asking.peek()?;
        Some(asking.any(|w| w.mask & IN_EXCL_UNLINK != 0))
    }

    /// Fires `mask` (with `name` and `cookie`) at the watches of `key`
    /// that ask for it, leaving out those with `IN_EXCL_UNLINK` when
    /// `unlinked` (found before, outside the lock: the lock is the
    /// sandbox's, and the lookup may take a filesystem's locks or a gofer
    /// round trip). One-shot watches are removed after their event.
    /// Every sink reference taken under the lock is dropped after it: the
    /// last one going runs the instance's release, which takes the lock.
    fn fire(&self, key: InodeKey, mask: u32, cookie: u32, name: &[u8], unlinked: bool) {
        let mut out: Vec<Pending> = Vec::new();
        {
            let mut t = self.table.lock();
            let Some(list) = t.by_inode.get(&key) else { return };
            let mut oneshots = Vec::new();
            for w in list {
                if w.mask & mask & EVENTS == 0 || (unlinked && w.mask & IN_EXCL_UNLINK != 0) {
                    continue;
                }
                if let Some(s) = w.sink.upgrade() {
                    out.push((s.clone(), w.wd, mask, cookie, name.to_vec()));
                    if w.mask & IN_ONESHOT != 0 {
                        oneshots.push((w.instance, w.wd, s));
                    }
                }
            }
            for (instance, wd, s) in oneshots {
                Self::drop_watch(&mut t, &self.count, (instance, wd));
                out.push((s, wd, IN_IGNORED, 0, Vec::new()));
            }
        }
        for (s, wd, m, c, n) in out {
            s.deliver(wd, m, c, &n);
        }
    }

    /// The inode `key` lost its last link (a directory: was removed).
    /// It ends now if nothing holds `node` any more, else when the last
    /// holder lets go ([`ReleaseCheck`]).
    fn unlinked(&self, key: InodeKey, node: &Weak<dyn Node>) {
        if node.strong_count() == 0 {
            return self.removed(key);
        }
        let addr = node_addr(node.as_ptr());
        let mut out: Vec<Pending> = Vec::new();
        {
            let mut t = self.table.lock();
            if !t.by_inode.contains_key(&key) {
                return;
            }
            if let Some(old) = t.doomed.insert(key, node.clone()) {
                t.doomed_at.remove(&node_addr(old.as_ptr()));
            }
            t.doomed_at.insert(addr, key);
            // Entries whose watches went, or whose holder let go unseen,
            // are swept once they outnumber the watched inodes: the table
            // stays in proportion to the watches.
            if t.doomed.len() > 2 * t.by_inode.len() + 64 {
                let addrs: Vec<usize> = t.doomed_at.keys().copied().collect();
                for a in addrs {
                    Self::check(&mut t, &self.count, a, &mut out);
                }
            }
            // The holder may have let go before the entry was there to see.
            Self::check(&mut t, &self.count, addr, &mut out);
            self.doomed.store(t.doomed.len(), Ordering::Relaxed);
        }
        for (s, wd, m, c, n) in out {
            s.deliver(wd, m, c, &n);
        }
    }

    /// The doomed inode of the node at `addr`, if any: it ends if nothing
    /// holds the node any more; its entry goes if its watches went.
    fn check(t: &mut Table, count: &AtomicUsize, addr: usize, out: &mut Vec<Pending>) {
        let Some(&key) = t.doomed_at.get(&addr) else { return };
        let watched = t.by_inode.contains_key(&key);
        let held = t.doomed.get(&key).is_some_and(|n| n.strong_count() > 0);
        if watched && held {
            return;
        }
        t.doomed_at.remove(&addr);
        t.doomed.remove(&key);
        if watched {
            Self::end_watches(t, count, key, out);
        }
    }

    /// A holder of the node at `addr` went (None: of some node): the
    /// doomed inodes nothing holds any more end.
    fn let_go(&self, addr: Option<usize>) {
        if self.doomed.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut out: Vec<Pending> = Vec::new();
        {
            let mut t = self.table.lock();
            let addrs: Vec<usize> = match addr {
                Some(a) => vec![a],
                None => t.doomed_at.keys().copied().collect(),
            };
            for a in addrs {
                Self::check(&mut t, &self.count, a, &mut out);
            }
            self.doomed.store(t.doomed.len(), Ordering::Relaxed);
        }
        for (s, wd, m, c, n) in out {
            s.deliver(wd, m, c, &n);
        }
    }

    /// The inode is gone: `IN_DELETE_SELF` to the watches asking for it,
    /// then `IN_IGNORED` to every watch, which are removed.
    fn removed(&self, key: InodeKey) {
        let mut out: Vec<Pending> = Vec::new();
        Self::end_watches(&mut self.table.lock(), &self.count, key, &mut out);
        for (s, wd, m, c, n) in out {
            s.deliver(wd, m, c, &n);
        }
    }

    /// `removed`'s events and removals under the table's lock, the events
    /// queued to `out`. (Events on an inode alone carry no `IN_ISDIR`, as
    /// Linux reports them.)
    fn end_watches(t: &mut Table, count: &AtomicUsize, key: InodeKey, out: &mut Vec<Pending>) {
        let Some(list) = t.by_inode.get(&key) else { return };
        let wds: Vec<(u64, i32)> = list.iter().map(|w| (w.instance, w.wd)).collect();
        for w in list.iter().filter(|w| w.mask & IN_DELETE_SELF != 0) {
            if let Some(s) = w.sink.upgrade() {
                out.push((s, w.wd, IN_DELETE_SELF, 0, Vec::new()));
            }
        }
        for k in wds {
            if let Some(w) = Self::drop_watch(t, count, k) {
                if let Some(s) = w.sink.upgrade() {
                    out.push((s, w.wd, IN_IGNORED, 0, Vec::new()));
                }
            }
        }
    }
}

/// Declared last in what holds a node (a dentry, an open file
/// description): when the holder goes, after the node it held, that node's
/// inode may end if it was removed while held (`Registry::unlinked`). It
/// names the node by address: a look-up, not a scan, at every release.
pub(crate) struct ReleaseCheck(usize);

impl ReleaseCheck {
    pub(crate) fn of(node: &Arc<dyn Node>) -> ReleaseCheck {
        ReleaseCheck(node_addr(Arc::as_ptr(node)))
    }
}

impl Drop for ReleaseCheck {
    fn drop(&mut self) {
        registry().let_go(Some(self.0));
    }
}

/// Something that may have held a removed file let go of it other than
/// by a dentry or a description going (munmap of its last mapping).
pub(crate) fn let_go() {
    registry().let_go(None);
}

/// The inode `node` is, for watches.
pub(crate) fn key_of(node: &dyn Node) -> Option<InodeKey> {
    node.stat().ok().map(|st| (node.fs_id(), st.ino))
}

/// A fresh cookie tying an `IN_MOVED_FROM` to its `IN_MOVED_TO`.
fn next_cookie() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// An event on the file `d` names (Linux's `fsnotify_parent` then the
/// inode's own watches): the parent directory's watches see it with the
/// name, unless they exclude unlinked children and the name is gone; then
/// the inode's watches see it. Nothing is stat'ed unless a watch is on
/// the file's or the parent's filesystem, and the name is looked up only
/// for a watch excluding unlinked children, once, without the
/// registry's lock.
pub(crate) fn file_event(d: &Dentry, mask: u32) {
    let r = registry();
    if !r.any() {
        return;
    }
    let parent = d.parent.as_ref().filter(|p| r.watches_fs(p.node.fs_id()));
    let own = r.watches_fs(d.node.fs_id());
    if parent.is_none() && !own {
        return;
    }
    let Ok(st) = d.node.stat() else { return };
    let key = (d.node.fs_id(), st.ino);
    let mask = mask | if st.mode & S_IFMT == S_IFDIR { IN_ISDIR } else { 0 };
    if let Some(p) = parent {
        if let Some(pkey) = key_of(p.node.as_ref()) {
            if let Some(excluding) = r.wants(pkey, mask) {
                let unlinked = excluding
                    && match p.node.lookup(&d.name) {
                        Ok(n) => key_of(n.as_ref()) != Some(key),
                        Err(_) => true,
                    };
                r.fire(pkey, mask, 0, &d.name, unlinked);
            }
        }
    }
    if own {
        r.fire(key, mask, 0, b"", false);
    }
}

/// An event on a node alone (a link count's `IN_ATTRIB`), with no name
/// and, as Linux reports these, no `IN_ISDIR`.
fn inode_event(node: &dyn Node, mask: u32) {
    if let Some(key) = key_of(node) {
        registry().fire(key, mask, 0, b"", false);
    }
}

/// An event on directory `dir` about its entry `name` (`IN_CREATE`,
/// `IN_DELETE`, `IN_MOVED_*`); `isdir` when that entry is a directory.
fn dir_event(dir: &dyn Node, mask: u32, cookie: u32, name: &[u8], isdir: bool) {
    let r = registry();
    if let Some(key) = key_of(dir) {
        r.fire(key, mask | if isdir { IN_ISDIR } else { 0 }, cookie, name, false);
    }
}

/// `name` was made in `dir` (`IN_CREATE`).
pub(crate) fn created(dir: &dyn Node, name: &[u8], isdir: bool) {
    if registry().any() {
        dir_event(dir, IN_CREATE, 0, name, isdir);
    }
}

/// `name` in `dir` became another name of `target` (`link`): the link
/// count changed (`IN_ATTRIB`), then the name appeared (`IN_CREATE`).
pub(crate) fn linked(dir: &dyn Node, name: &[u8], target: &dyn Node) {
    if registry().any() {
        inode_event(target, IN_ATTRIB);
        dir_event(dir, IN_CREATE, 0, name, false);
    }
}

/// What a removal (unlink, rmdir, a rename's replaced target) took away:
/// the inode, whether it was a directory, whether that was its last link
/// (a directory's always is), and the node, held weakly to see when
/// nothing holds it any more.
pub(crate) struct Victim {
    pub key: InodeKey,
    pub isdir: bool,
    pub last: bool,
    pub node: Weak<dyn Node>,
}

impl Victim {
    /// The victim `node`, looked at before the removal.
    pub(crate) fn of(node: &Arc<dyn Node>, last_link_goes: bool) -> Option<Victim> {
        let st = node.stat().ok()?;
        let isdir = st.mode & S_IFMT == S_IFDIR;
        let last = isdir || (last_link_goes && st.nlink <= 1);
        Some(Victim { key: (node.fs_id(), st.ino), isdir, last, node: Arc::downgrade(node) })
    }
}

/// `name` in `dir`, which was `victim`, was removed. As Linux's
/// `vfs_unlink`/`vfs_rmdir`: a file's link count changed (`IN_ATTRIB`);
/// an inode without links left ends (`IN_DELETE_SELF`, and its watches
/// go with `IN_IGNORED`) if nothing holds it, else when the last holder
/// lets go; then the directory reports `IN_DELETE`. The caller has let
/// go of the victim itself.
pub(crate) fn removed(dir: &dyn Node, name: &[u8], victim: Option<&Victim>, isdir: bool) {
    let r = registry();
    if !r.any() {
        return;
    }
    if let Some(v) = victim {
        if !v.isdir {
            r.fire(v.key, IN_ATTRIB, 0, b"", false);
        }
        if v.last {
            r.unlinked(v.key, &v.node);
        }
    }
    dir_event(dir, IN_DELETE, 0, name, isdir);
}

/// What a rename touched, taken before it ran.
pub(crate) struct RenameSubjects {
    pub source: Option<InodeKey>,
    pub source_isdir: bool,
    /// The replaced target (or, for an exchange, the other entry).
    pub target: Option<Victim>,
}

/// `old_name` in `old_dir` is now `new_name` in `new_dir`: for a rename
/// within one directory `DIR_RENAME` (dnotify's), then `IN_MOVED_FROM`
/// and `IN_MOVED_TO` with one cookie, a replaced file's link count
/// (`IN_ATTRIB`), the moved inode's `IN_MOVE_SELF`, then the replaced
/// target's removal, in Linux's `fsnotify_move` order.
pub(crate) fn renamed(old_dir: &dyn Node, old_name: &[u8], new_dir: &dyn Node, new_name: &[u8], s: &RenameSubjects) {
    let r = registry();
    if !r.any() {
        return;
    }
    if let Some(key) = key_of(old_dir).filter(|k| Some(*k) == key_of(new_dir)) {
        r.fire(key, DIR_RENAME | if s.source_isdir { IN_ISDIR } else { 0 }, 0, old_name, false);
    }
    let cookie = next_cookie();
    dir_event(old_dir, IN_MOVED_FROM, cookie, old_name, s.source_isdir);
    dir_event(new_dir, IN_MOVED_TO, cookie, new_name, s.source_isdir);
    if let Some(t) = s.target.as_ref().filter(|t| !t.isdir) {
        r.fire(t.key, IN_ATTRIB, 0, b"", false);
    }
    if let Some(key) = s.source {
        r.fire(key, IN_MOVE_SELF, 0, b"", false);
    }
    if let Some(t) = s.target.as_ref().filter(|t| t.last) {
        r.unlinked(t.key, &t.node);
    }
}

/// Whether hooks need to look at anything (a watch exists).
pub(crate) fn active() -> bool {
    registry().any()
}

/// The description of `d` was released: `IN_CLOSE_WRITE` if it was
/// opened for writing, else `IN_CLOSE_NOWRITE`.
pub(crate) fn closed(d: &Dentry, writable: bool) {
    if active() {
        file_event(d, if writable { IN_CLOSE_WRITE } else { IN_CLOSE_NOWRITE });
    }
}

/// Makes a weak sink from an instance.
pub(crate) fn weak_sink<S: Sink + 'static>(s: &Arc<S>) -> Weak<dyn Sink> {
    let w: Weak<S> = Arc::downgrade(s);
    w
}

/// A regular file's operations, reporting what its I/O does: a read that
/// returned data is `IN_ACCESS`, a write that wrote, a truncation or an
/// allocation that grew the file `IN_MODIFY` (Linux's `vfs_read`,
/// `vfs_write`, `do_truncate`, `vfs_fallocate`). Every path that does I/O
/// on an opened file (read, pread, readv, sendfile, splice) goes through
/// its operations, so each reports as Linux's does.
pub(crate) struct WatchedFile {
    dentry: Arc<Dentry>,
    inner: Arc<dyn FileOps>,
}

impl WatchedFile {
    pub(crate) fn wrap(dentry: Arc<Dentry>, inner: Arc<dyn FileOps>) -> Arc<dyn FileOps> {
        Arc::new(WatchedFile { dentry, inner })
    }

    fn report<T>(&self, r: Result<T, Errno>, mask: u32, did: impl Fn(&T) -> bool) -> Result<T, Errno> {
        if let Ok(v) = &r {
            if active() && did(v) {
                file_event(&self.dentry, mask);
            }
        }
        r
    }
}

impl FileOps for WatchedFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        self.report(self.inner.read(buf, off), IN_ACCESS, |n| *n > 0)
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        self.report(self.inner.write(buf, off), IN_MODIFY, |n| *n > 0)
    }

    fn append(&self, buf: &[u8]) -> Option<Result<(usize, u64), Errno>> {
        let r = self.inner.append(buf)?;
        Some(self.report(r, IN_MODIFY, |(n, _)| *n > 0))
    }

    fn set_append(&self, append: bool) -> Result<(), Errno> {
        self.inner.set_append(append)
    }

    fn seekable(&self) -> bool {
        self.inner.seekable()
    }

    fn seeks_from_end(&self) -> bool {
        self.inner.seeks_from_end()
    }

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        self.inner.ioctl(ctx, req, arg)
    }

    fn truncate(&self, len: u64) -> Result<(), Errno> {
        self.report(self.inner.truncate(len), IN_MODIFY, |_| true)
    }

    fn allocate(&self, off: u64, len: u64, how: super::Allocate) -> Result<(), Errno> {
        self.report(self.inner.allocate(off, len, how), IN_MODIFY, |_| true)
    }

    fn fsync(&self) -> Result<(), Errno> {
        self.inner.fsync()
    }

    fn nowait(&self) -> bool {
        self.inner.nowait()
    }

    fn poll_events(&self) -> u32 {
        self.inner.poll_events()
    }

    fn event_register(&self, e: &crate::waiter::Entry) {
        self.inner.event_register(e)
    }

    fn event_unregister(&self, e: &crate::waiter::Entry) {
        self.inner.event_unregister(e)
    }

    fn io_timeout(&self, write: bool) -> Option<std::time::Duration> {
        self.inner.io_timeout(write)
    }

    fn pipe_capacity(&self, set: Option<(usize, bool)>) -> Result<usize, Errno> {
        self.inner.pipe_capacity(set)
    }

    fn seals(&self) -> Result<u32, Errno> {
        self.inner.seals()
    }

    fn add_seals(&self, seals: u32) -> Result<(), Errno> {
        self.inner.add_seals(seals)
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        self.inner.mappable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nobody;

    impl Sink for Nobody {
        fn deliver(&self, _wd: i32, _mask: u32, _cookie: u32, _name: &[u8]) {}
    }

    fn sink() -> Weak<dyn Sink> {
        Weak::<Nobody>::new()
    }

    /// max_user_instances and max_user_watches, per user: None and
    /// NoSpace past them, room again once instances go.
    #[test]
    fn per_user_limits() {
        let r = Registry::default();
        let uid = 1000;
        let all: Vec<u64> = (0..MAX_USER_INSTANCES).map(|_| r.new_instance(uid).unwrap()).collect();
        assert_eq!(r.new_instance(uid), None);
        assert!(r.new_instance(uid + 1).is_some(), "another user's count");
        for ino in 0..MAX_USER_WATCHES as u64 {
            r.add_watch(all[0], uid, sink(), (7, ino), IN_ATTRIB).unwrap();
        }
        assert_eq!(r.add_watch(all[1], uid, sink(), (7, u64::MAX), IN_ATTRIB), Err(AddError::NoSpace));
        for i in all {
            r.release_instance(i, uid);
        }
        let again = r.new_instance(uid).unwrap();
        assert_eq!(r.add_watch(again, uid, sink(), (7, 0), IN_ATTRIB), Ok(1), "the closed instances' watches are gone");
    }

    struct Recorder(Mutex<Vec<u32>>);

    impl Sink for Recorder {
        fn deliver(&self, _wd: i32, mask: u32, _cookie: u32, _name: &[u8]) {
            self.0.lock().push(mask);
        }
    }

    /// A dnotify mark: events added to it keep it one-shot only if both
    /// were, a one-shot mark goes after its event (with `IN_IGNORED`),
    /// and it is not counted against its user's inotify watches.
    #[test]
    fn dnotify_marks_accumulate_and_a_one_shot_mark_ends_at_its_event() {
        let r = Registry::default();
        let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
        let key = (11, 5);
        let once = fresh_instance();
        r.add_mark(once, weak_sink(&rec), key, IN_CREATE | IN_ONESHOT).unwrap();
        assert!(r.extend_mark(once, IN_DELETE | IN_ONESHOT));
        r.fire(key, IN_DELETE, 0, b"x", false);
        assert_eq!(*rec.0.lock(), [IN_DELETE, IN_IGNORED]);
        assert!(!r.extend_mark(once, IN_CREATE), "gone after its event");
        rec.0.lock().clear();
        let many = fresh_instance();
        r.add_mark(many, weak_sink(&rec), key, IN_CREATE | IN_ONESHOT).unwrap();
        assert!(r.extend_mark(many, DIR_RENAME));
        r.fire(key, DIR_RENAME, 0, b"x", false);
        r.fire(key, IN_CREATE, 0, b"y", false);
        r.fire(key, IN_MODIFY, 0, b"y", false);
        assert_eq!(*rec.0.lock(), [DIR_RENAME, IN_CREATE], "multishot once either asked for it");
        assert_eq!(r.table.lock().watches_of.len(), 0);
        r.remove_mark(many);
        assert_eq!(r.table_len_for_tests(key), 0);
        assert!(!r.any());
    }

    /// An inotify watch never sees dnotify's rename event.
    #[test]
    fn inotify_watches_do_not_see_dir_rename() {
        let r = Registry::default();
        let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
        let i = r.new_instance(0).unwrap();
        r.add_watch(i, 0, weak_sink(&rec), (12, 1), IN_ALL_EVENTS | DIR_RENAME).unwrap();
        r.fire((12, 1), DIR_RENAME, 0, b"x", false);
        assert!(rec.0.lock().is_empty());
    }

    /// The sandbox's limits hold whatever uids the guest takes on: the
    /// per-user counts alone would let each new uid start over.
    #[test]
    fn sandbox_limits_bound_every_uid_together() {
        let r = Registry::default();
        let users = u32::try_from(MAX_SANDBOX_INSTANCES / MAX_USER_INSTANCES).unwrap();
        let mut made = Vec::new();
        for uid in 0..users {
            for _ in 0..MAX_USER_INSTANCES {
                made.push((r.new_instance(uid).unwrap(), uid));
            }
        }
        let fresh = users + 1;
        assert_eq!(r.new_instance(fresh), None, "a uid with no instance yet is refused too");
        let (first, first_uid) = made[0];
        r.release_instance(first, first_uid);
        let spare = r.new_instance(fresh).unwrap();
        let per = MAX_USER_WATCHES / 2;
        for (uid, (i, _)) in (10_000..).zip(made[1..].iter().take(MAX_SANDBOX_WATCHES / per)) {
            for ino in 0..per as u64 {
                r.add_watch(*i, uid, sink(), (9, ino), IN_ATTRIB).unwrap();
            }
        }
        assert_eq!(r.add_watch(spare, 20_000, sink(), (9, 0), IN_ATTRIB), Err(AddError::NoSpace));
        assert!(r.watches_fs(9));
        assert!(!r.watches_fs(10));
    }
}
