//! inotify instances (man 7 inotify): the file `inotify_init1` returns.
//! Its watches live in the VFS's registry (`vfs::notify`), which fires
//! events into the instance's queue; reading the file takes them out as
//! `struct inotify_event` records. The file never blocks: an empty queue
//! reads as EAGAIN and the system call waits on the file's queue.

use crate::abi::ioctl::FIONREAD;
use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::mm::accounting::{self, Accountant, Charge};
use crate::vfs::notify::{self, InodeKey, Sink, IN_Q_OVERFLOW, MAX_QUEUED_EVENTS};
use crate::vfs::{FileOps, IoctlContext, TimeSpec};
use crate::waiter::{Entry, Queue};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// `sizeof(struct inotify_event)` without its name.
pub(crate) const EVENT_HEADER: usize = 16;

/// What a queued event costs besides its header and name: the queue's
/// slot and the event's allocation.
pub(crate) const EVENT_OVERHEAD: usize = 64;

/// One queued event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub wd: i32,
    pub mask: u32,
    pub cookie: u32,
    pub name: Vec<u8>,
}

impl Event {
    /// The length of the name field: the name, its NUL, padded to a
    /// multiple of the header's size (Linux's `round_up(len + 1, 16)`);
    /// 0 without a name.
    fn name_len(&self) -> usize {
        if self.name.is_empty() {
            0
        } else {
            (self.name.len() + 1).div_ceil(EVENT_HEADER) * EVENT_HEADER
        }
    }

    /// The size of the record a read returns.
    pub(crate) fn size(&self) -> usize {
        EVENT_HEADER + self.name_len()
    }

    /// What the event is charged while queued; the overflow event is
    /// not charged (Linux keeps one per instance beforehand).
    fn cost(&self) -> u64 {
        if self.mask == IN_Q_OVERFLOW {
            0
        } else {
            (EVENT_HEADER + self.name.len() + EVENT_OVERHEAD) as u64
        }
    }

    fn encode(&self, out: &mut [u8]) {
        let len = self.name_len();
        out[0..4].copy_from_slice(&self.wd.to_ne_bytes());
        out[4..8].copy_from_slice(&self.mask.to_ne_bytes());
        out[8..12].copy_from_slice(&self.cookie.to_ne_bytes());
        out[12..16].copy_from_slice(&u32::try_from(len).unwrap_or(0).to_ne_bytes());
        out[EVENT_HEADER..EVENT_HEADER + len].fill(0);
        out[EVENT_HEADER..EVENT_HEADER + self.name.len()].copy_from_slice(&self.name);
    }
}

/// The queue of events, bounded as Linux bounds it, each event charged
/// to the sandbox's memory until it is read or the instance closed.
pub(crate) struct EventQueue {
    events: VecDeque<Event>,
    max: usize,
    charge: Charge,
}

impl EventQueue {
    pub(crate) fn new(max: usize, acct: Arc<Accountant>) -> EventQueue {
        EventQueue { events: VecDeque::new(), max, charge: Charge::new(acct) }
    }

    /// Queues `e` as Linux's `fsnotify_insert_event` with inotify's
    /// merge: a full queue takes one `IN_Q_OVERFLOW` (wd -1) and nothing
    /// more; an event identical to the last queued one is dropped. An
    /// event the sandbox's memory cannot hold overflows the queue too, as
    /// a failed allocation does in Linux. Returns whether the queue
    /// changed.
    pub(crate) fn push(&mut self, e: Event) -> bool {
        if self.events.len() >= self.max {
            return self.overflow();
        }
        if self.events.back() == Some(&e) {
            return false;
        }
        if !self.charge.grow(e.cost()) {
            return self.overflow();
        }
        self.events.push_back(e);
        true
    }

    /// Ends the queue with one `IN_Q_OVERFLOW` (wd -1) unless it does.
    fn overflow(&mut self) -> bool {
        if self.events.back().is_some_and(|l| l.mask == IN_Q_OVERFLOW) {
            return false;
        }
        self.events.push_back(Event { wd: -1, mask: IN_Q_OVERFLOW, cookie: 0, name: Vec::new() });
        true
    }

    /// Takes as many whole events as fit into `buf`: EINVAL when even the
    /// first does not, EAGAIN when there is none.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> Result<usize, Errno> {
        let first = self.events.front().ok_or(Errno::EAGAIN)?;
        if first.size() > buf.len() {
            return Err(Errno::EINVAL);
        }
        let mut done = 0;
        while let Some(e) = self.events.front() {
            let n = e.size();
            if done + n > buf.len() {
                break;
            }
            e.encode(&mut buf[done..done + n]);
            done += n;
            let cost = e.cost();
            self.events.pop_front();
            self.charge.shrink(cost);
        }
        Ok(done)
    }

    /// The bytes a read would return with an unbounded buffer (FIONREAD).
    pub(crate) fn bytes(&self) -> usize {
        self.events.iter().map(Event::size).sum()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// One inotify instance.
pub(crate) struct Inotify {
    ino: u64,
    created: TimeSpec,
    id: u64,
    uid: u32,
    events: Mutex<EventQueue>,
    queue: Queue,
}

impl Inotify {
    /// A new instance for `uid`: EMFILE past max_user_instances or the
    /// sandbox's limit.
    pub(crate) fn new(ino: u64, created: TimeSpec, uid: u32) -> Result<Arc<Inotify>, Errno> {
        let id = notify::registry().new_instance(uid).ok_or(Errno::EMFILE)?;
        Ok(Arc::new(Inotify {
            ino,
            created,
            id,
            uid,
            events: Mutex::new(EventQueue::new(MAX_QUEUED_EVENTS, accounting::sandbox())),
            queue: Queue::default(),
        }))
    }

    /// inotify_add_watch on the inode `key` (the caller resolved the path
    /// and checked the flags): the watch descriptor.
    pub(crate) fn add_watch(self: &Arc<Self>, key: InodeKey, mask: u32) -> Result<i32, Errno> {
        let sink = notify::weak_sink(self);
        notify::registry().add_watch(self.id, self.uid, sink, key, mask).map_err(|e| match e {
            notify::AddError::Exists => Errno::EEXIST,
            notify::AddError::NoSpace => Errno::ENOSPC,
        })
    }

    /// inotify_rm_watch: EINVAL for a wd the instance does not have.
    pub(crate) fn rm_watch(&self, wd: i32) -> Result<(), Errno> {
        if notify::registry().rm_watch(self.id, wd) {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        notify::registry().release_instance(self.id, self.uid);
    }
}

impl Sink for Inotify {
    fn deliver(&self, wd: i32, mask: u32, cookie: u32, name: &[u8]) {
        let changed = self.events.lock().push(Event { wd, mask, cookie, name: name.to_vec() });
        if changed {
            self.queue.notify(POLLIN | POLLRDNORM);
        }
    }
}

super::anon::anon_inode_node!(Inotify, usize::MAX - 4);

impl FileOps for Inotify {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.events.lock().read(buf)
    }

    fn write(&self, _buf: &[u8], _off: u64) -> Result<usize, Errno> {
        Err(Errno::EINVAL)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        let mm = ctx.mm();
        if req != FIONREAD {
            return Err(Errno::ENOTTY);
        }
        let n = i32::try_from(self.events.lock().bytes()).unwrap_or(i32::MAX);
        mm.copy_out(arg, &n.to_ne_bytes())?;
        Ok(0)
    }

    fn poll_events(&self) -> u32 {
        if self.events.lock().is_empty() {
            0
        } else {
            POLLIN | POLLRDNORM
        }
    }

    fn event_register(&self, e: &Entry) {
        self.queue.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.queue.unregister(e);
    }

    fn fasync(&self) -> Option<crate::vfs::Fasync> {
        Some(crate::vfs::Fasync::Stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::at::DirFd;
    use crate::vfs::notify::*;
    use crate::vfs::walk::Walker;
    use crate::vfs::{names, MountNamespace, NewNode, Node, Stat};

    fn ev(wd: i32, mask: u32, cookie: u32, name: &str) -> Event {
        Event { wd, mask, cookie, name: name.as_bytes().to_vec() }
    }

    #[test]
    fn records_padding_and_short_buffers() {
        let mut q = EventQueue::new(10, Accountant::unlimited());
        q.push(ev(1, IN_CREATE, 0, "abc"));
        q.push(ev(1, IN_DELETE, 0, "0123456789abcdef"));
        q.push(ev(2, IN_ATTRIB, 0, ""));
        assert_eq!(q.bytes(), 32 + 48 + 16);
        let mut small = [0u8; 31];
        assert_eq!(q.read(&mut small), Err(Errno::EINVAL), "the first event does not fit");
        let mut buf = [0xffu8; 90];
        assert_eq!(q.read(&mut buf), Ok(80), "whole events only");
        assert_eq!(i32::from_ne_bytes(buf[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(buf[4..8].try_into().unwrap()), IN_CREATE);
        assert_eq!(u32::from_ne_bytes(buf[12..16].try_into().unwrap()), 16);
        assert_eq!(&buf[16..20], b"abc\0");
        assert!(buf[20..32].iter().all(|b| *b == 0), "the padding is zeros");
        assert_eq!(u32::from_ne_bytes(buf[44..48].try_into().unwrap()), 32, "16 bytes of name need 32");
        assert_eq!(q.read(&mut buf), Ok(16));
        assert_eq!(u32::from_ne_bytes(buf[12..16].try_into().unwrap()), 0, "no name, no length");
        assert_eq!(q.read(&mut buf), Err(Errno::EAGAIN));
    }

    #[test]
    fn coalescing_and_overflow() {
        let mut q = EventQueue::new(3, Accountant::unlimited());
        assert!(q.push(ev(1, IN_MODIFY, 0, "f")));
        assert!(!q.push(ev(1, IN_MODIFY, 0, "f")), "identical to the last: merged");
        assert!(q.push(ev(1, IN_ACCESS, 0, "f")));
        assert!(q.push(ev(1, IN_MODIFY, 0, "f")), "identical to an earlier one only: kept");
        assert!(q.push(ev(1, IN_OPEN, 0, "f")), "full: the overflow event");
        assert!(!q.push(ev(1, IN_CLOSE_WRITE, 0, "f")), "one overflow event only");
        let mut buf = [0u8; 4096];
        assert_eq!(q.read(&mut buf), Ok(4 * 32 - 16));
        assert_eq!(i32::from_ne_bytes(buf[96..100].try_into().unwrap()), -1);
        assert_eq!(u32::from_ne_bytes(buf[100..104].try_into().unwrap()), IN_Q_OVERFLOW);
    }

    /// Each queued event is charged to the sandbox's memory: an event
    /// the memory cannot hold overflows the queue; reading returns its
    /// charge and closing returns the rest.
    #[test]
    fn events_are_charged_until_read() {
        let one = (EVENT_HEADER + 3 + EVENT_OVERHEAD) as u64;
        let acct = Accountant::new(2 * one * 16 / 15 + 1);
        let mut q = EventQueue::new(MAX_QUEUED_EVENTS, acct.clone());
        assert!(q.push(ev(1, IN_CREATE, 0, "abc")));
        assert!(q.push(ev(1, IN_DELETE, 0, "abc")));
        assert_eq!(acct.charged(), 2 * one);
        assert!(q.push(ev(1, IN_CREATE, 0, "abc")), "no memory: the overflow event");
        assert!(!q.push(ev(1, IN_ATTRIB, 0, "")), "one overflow event only");
        assert_eq!(acct.charged(), 2 * one, "the overflow event is not charged");
        let mut buf = [0u8; 32];
        assert_eq!(q.read(&mut buf), Ok(32));
        assert_eq!(acct.charged(), one, "a read event is uncharged");
        drop(q);
        assert_eq!(acct.charged(), 0, "a closed queue is uncharged");
    }

    /// A node of a filesystem of its own that counts its stats and, when
    /// looked up in, records whether the registry's lock was free.
    struct Probe {
        fs: usize,
        ino: u64,
        child: Option<(&'static [u8], Arc<dyn Node>)>,
        stats: std::sync::atomic::AtomicUsize,
        lookups: Mutex<Vec<bool>>,
    }

    impl Probe {
        fn new(fs: usize, ino: u64, child: Option<(&'static [u8], Arc<dyn Node>)>) -> Arc<Probe> {
            Arc::new(Probe { fs, ino, child, stats: Default::default(), lookups: Mutex::new(Vec::new()) })
        }
    }

    impl Node for Probe {
        fn stat(&self) -> Result<Stat, Errno> {
            self.stats.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mode = if self.child.is_some() { crate::vfs::S_IFDIR } else { crate::vfs::S_IFREG };
            Ok(Stat { ino: self.ino, mode: mode | 0o755, ..Stat::default() })
        }

        fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
            self.lookups.lock().push(notify::registry().lock_free_for_tests());
            match &self.child {
                Some((n, c)) if *n == name => Ok(c.clone()),
                _ => Err(Errno::ENOENT),
            }
        }

        fn fs_id(&self) -> usize {
            self.fs
        }

        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    /// A close stats nothing on a filesystem without watches, and the
    /// `IN_EXCL_UNLINK` lookup of the name runs without the registry's
    /// lock (the lookup may take a filesystem's locks or ask the gofer).
    #[test]
    fn close_events_look_up_without_the_lock() {
        let ns = MountNamespace::new(Tmpfs::new(0o755, 0, 0), "tmpfs", "root");
        let fs = usize::MAX - 78;
        let f = Probe::new(fs, 2, None);
        let p = Probe::new(fs, 1, Some((b"f", f.clone() as Arc<dyn Node>)));
        let pd = ns.root().child(b"p", p.clone());
        let linked = pd.child(b"f", f.clone());
        let gone = pd.child(b"gone", f.clone());
        let i = Inotify::new(1, TimeSpec::default(), 0).unwrap();
        let elsewhere = i.add_watch((usize::MAX - 79, 1), IN_ALL_EVENTS).unwrap();
        notify::closed(&linked, false);
        assert_eq!(f.stats.load(std::sync::atomic::Ordering::Relaxed), 0, "no watch on its filesystem: no stat");
        assert_eq!(p.stats.load(std::sync::atomic::Ordering::Relaxed), 0);
        let wd = i.add_watch((fs, 1), IN_CLOSE_NOWRITE | IN_EXCL_UNLINK).unwrap();
        assert_ne!(wd, elsewhere);
        notify::closed(&linked, false);
        notify::closed(&gone, false);
        assert_eq!(drain(&i), vec![ev(wd, IN_CLOSE_NOWRITE, 0, "f")], "the unlinked name is excluded");
        assert_eq!(*p.lookups.lock(), vec![true, true], "looked up once per event, without the lock");
    }

    const DIR: NewNode = NewNode { mode: 0o755, uid: 0, gid: 0 };

    fn drain(i: &Inotify) -> Vec<Event> {
        let mut q = i.events.lock();
        q.events.drain(..).collect()
    }

    /// The events of namespace changes on a tmpfs, in Linux's order.
    #[test]
    fn namespace_events_in_linux_order() {
        let root = Tmpfs::new(0o755, 0, 0);
        root.mkdir(b"d", DIR).unwrap();
        let ns = MountNamespace::new(root, "tmpfs", "root");
        let creds = Credentials::new(0, 0);
        let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
        let cwd = || DirFd::Cwd(ns.root());
        let i = Inotify::new(1, TimeSpec::default(), 0).unwrap();
        let d = w.resolve(&ns.root(), b"/d", true).unwrap();
        let dwd = i.add_watch(key_of(d.node.as_ref()).unwrap(), IN_ALL_EVENTS).unwrap();
        names::mknod_at(&w, cwd(), b"/d/f", NewNode { mode: crate::vfs::S_IFREG | 0o644, ..DIR }, 0).unwrap();
        let f = w.resolve(&ns.root(), b"/d/f", true).unwrap();
        let fkey = key_of(f.node.as_ref()).unwrap();
        // Nothing holds the file when it goes: it ends with its name.
        drop(f);
        let fwd = i.add_watch(fkey, IN_ALL_EVENTS).unwrap();
        assert_ne!(dwd, fwd);
        assert_eq!(i.add_watch(fkey, IN_ATTRIB), Ok(fwd), "same inode, same wd");
        assert_eq!(i.add_watch(fkey, IN_ALL_EVENTS | IN_MASK_CREATE), Err(Errno::EEXIST));
        i.add_watch(fkey, IN_ALL_EVENTS | IN_MASK_ADD).unwrap();
        names::rename_at(&w, (cwd(), b"/d/f"), (cwd(), b"/d/g"), 0).unwrap();
        names::mkdir_at(&w, cwd(), b"/d/s", DIR).unwrap();
        names::remove_at(&w, cwd(), b"/d/s", true).unwrap();
        names::remove_at(&w, cwd(), b"/d/g", false).unwrap();
        let got = drain(&i);
        let cookie = got[1].cookie;
        assert_ne!(cookie, 0);
        assert_eq!(
            got,
            vec![
                ev(dwd, IN_CREATE, 0, "f"),
                ev(dwd, IN_MOVED_FROM, cookie, "f"),
                ev(dwd, IN_MOVED_TO, cookie, "g"),
                ev(fwd, IN_MOVE_SELF, 0, ""),
                ev(dwd, IN_CREATE | IN_ISDIR, 0, "s"),
                ev(dwd, IN_DELETE | IN_ISDIR, 0, "s"),
                ev(fwd, IN_ATTRIB, 0, ""),
                ev(fwd, IN_DELETE_SELF, 0, ""),
                ev(fwd, IN_IGNORED, 0, ""),
                ev(dwd, IN_DELETE, 0, "g"),
            ]
        );
        assert_eq!(i.rm_watch(fwd), Err(Errno::EINVAL), "the watch went with its inode");
        i.rm_watch(dwd).unwrap();
        assert_eq!(drain(&i), vec![ev(dwd, IN_IGNORED, 0, "")]);
    }

    /// A file removed while something holds it (here a dentry, as an open
    /// description or a working directory does) ends when the last
    /// holder goes: its link count and the name at the unlink, its
    /// `IN_DELETE_SELF` and `IN_IGNORED` then.
    #[test]
    fn a_held_file_ends_when_let_go() {
        let root = Tmpfs::new(0o755, 0, 0);
        let ns = MountNamespace::new(root, "tmpfs", "root");
        let creds = Credentials::new(0, 0);
        let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
        let cwd = || DirFd::Cwd(ns.root());
        let i = Inotify::new(1, TimeSpec::default(), 0).unwrap();
        let dwd = i.add_watch(key_of(ns.root().node.as_ref()).unwrap(), IN_DELETE).unwrap();
        names::mknod_at(&w, cwd(), b"/f", NewNode { mode: crate::vfs::S_IFREG | 0o644, ..DIR }, 0).unwrap();
        let held = w.resolve(&ns.root(), b"/f", true).unwrap();
        let again = w.resolve(&ns.root(), b"/f", true).unwrap();
        let fwd = i.add_watch(key_of(held.node.as_ref()).unwrap(), IN_ATTRIB | IN_DELETE_SELF).unwrap();
        names::remove_at(&w, cwd(), b"/f", false).unwrap();
        assert_eq!(drain(&i), vec![ev(fwd, IN_ATTRIB, 0, ""), ev(dwd, IN_DELETE, 0, "f")]);
        drop(held);
        assert_eq!(drain(&i), vec![], "another holder is left");
        drop(again);
        assert_eq!(drain(&i), vec![ev(fwd, IN_DELETE_SELF, 0, ""), ev(fwd, IN_IGNORED, 0, "")]);
        assert_eq!(i.rm_watch(fwd), Err(Errno::EINVAL), "the watch went with its inode");
    }

    /// A one-shot watch reports one event, then `IN_IGNORED`; a closed
    /// instance leaves no watch behind.
    #[test]
    fn oneshot_and_release() {
        let root = Tmpfs::new(0o755, 0, 0);
        let ns = MountNamespace::new(root, "tmpfs", "root");
        let creds = Credentials::new(0, 0);
        let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
        let cwd = || DirFd::Cwd(ns.root());
        let key = key_of(ns.root().node.as_ref()).unwrap();
        let i = Inotify::new(1, TimeSpec::default(), 0).unwrap();
        let wd = i.add_watch(key, IN_CREATE | IN_ONESHOT).unwrap();
        names::mkdir_at(&w, cwd(), b"/a", DIR).unwrap();
        names::mkdir_at(&w, cwd(), b"/b", DIR).unwrap();
        assert_eq!(drain(&i), vec![ev(wd, IN_CREATE | IN_ISDIR, 0, "a"), ev(wd, IN_IGNORED, 0, "")]);
        let j = Inotify::new(2, TimeSpec::default(), 0).unwrap();
        let jwd = j.add_watch(key, IN_DELETE).unwrap();
        assert_eq!(jwd, 1, "wds are per instance");
        drop(j);
        let t = notify::registry().table_len_for_tests(key);
        assert_eq!(t, 0, "the closed instance's watch is gone");
    }
}
