//! POSIX message queues: named queues of prioritized messages
//! (mq_open/mq_timedsend/mq_timedreceive), their registry, which the
//! mqueue filesystem at /dev/mqueue lists, and the notification a process
//! may register for a message arriving at an empty queue.

use super::synthetic::{dir_entry, Attr, Entries, Entry, FsInfo};
use crate::abi::limits::NAME_MAX;
use crate::abi::poll::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::vfs::{DirEntry, FileOps, Node, Stat, StatFs, TimeSpec, S_IFREG};
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// Priorities are below this (MQ_PRIO_MAX).
pub(crate) const PRIO_MAX: u32 = 32768;
/// The defaults and the ceilings for processes without CAP_SYS_RESOURCE
/// (fs.mqueue.msg_default/msg_max, msgsize_default/msgsize_max).
pub(crate) const DEFAULT_MAXMSG: u64 = 10;
pub(crate) const DEFAULT_MSGSIZE: u64 = 8192;
/// The ceilings for anyone (HARD_MSGMAX, HARD_MSGSIZEMAX).
pub(crate) const HARD_MAXMSG: u64 = 65536;
pub(crate) const HARD_MSGSIZE: u64 = 16 << 20;
/// The bytes all the sandbox's queues may reserve together (each its
/// maxmsg × (msgsize + overhead), as Linux charges RLIMIT_MSGQUEUE at
/// mq_open): the sentry's memory outside guest memory stays bounded.
pub(crate) const RESERVED_BYTES_MAX: u64 = 64 << 20;
/// What Linux charges a message slot beyond its bytes (struct msg_msg and
/// its share of the priority tree).
const SLOT_OVERHEAD: u64 = 64;
/// The number of queues the sandbox may have (fs.mqueue.queues_max), and
/// the ceiling even with CAP_SYS_RESOURCE.
pub(crate) const QUEUES_MAX: usize = 256;
const HARD_QUEUES_MAX: usize = 4096;
/// MQUEUE_MAGIC.
const MQUEUE_MAGIC: u64 = 0x1980_0202;

/// Who is told when a message arrives at an empty queue: process `pid`,
/// with signal `signo` (0: nothing is sent) carrying `value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Notification {
    pub pid: i32,
    pub signo: i32,
    pub value: u64,
}

struct State {
    /// Messages by priority, each priority first in, first out.
    messages: BTreeMap<u32, VecDeque<Vec<u8>>>,
    count: u64,
    bytes: u64,
    notify: Option<Notification>,
    /// Receivers blocked waiting: a notification goes out only when none is.
    waiting_receivers: usize,
}

/// One message queue.
pub(crate) struct Queue {
    pub maxmsg: u64,
    pub msgsize: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    ino: u64,
    created: TimeSpec,
    state: Mutex<State>,
    /// Pollers wait here.
    events: crate::waiter::Queue,
    /// The sandbox's reservations and live queues, which this one leaves
    /// when it is freed (unlinked and closed).
    budget: Arc<Budget>,
}

/// What the sandbox's queues reserve: bytes, and how many queues live
/// (named or not).
#[derive(Default)]
struct Budget {
    bytes: AtomicU64,
    queues: AtomicUsize,
}

impl Drop for Queue {
    fn drop(&mut self) {
        self.budget.bytes.fetch_sub(reservation(self.maxmsg, self.msgsize), Ordering::Relaxed);
        self.budget.queues.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The bytes a queue of `maxmsg` messages of `msgsize` reserves.
fn reservation(maxmsg: u64, msgsize: u64) -> u64 {
    maxmsg.saturating_mul(msgsize.saturating_add(SLOT_OVERHEAD))
}

/// What a send did that the caller acts on: a notification to deliver.
pub(crate) type Notify = Option<Notification>;

/// A receiver blocked on a queue (see [`Queue::receiver_waiting`]).
pub(crate) struct WaitingReceiver(Arc<Queue>);

impl Drop for WaitingReceiver {
    fn drop(&mut self) {
        self.0.state.lock().waiting_receivers -= 1;
    }
}

impl Queue {
    /// Messages queued now.
    pub(crate) fn count(&self) -> u64 {
        self.state.lock().count
    }

    /// Queues `msg` with `prio` (taking it out of `msg`); EAGAIN when the
    /// queue is full (the caller waits on the queue's events for room).
    /// Returns the notification to send, if the queue was empty and a
    /// process registered for it.
    pub(crate) fn send(&self, msg: &mut Vec<u8>, prio: u32) -> Result<Notify, Errno> {
        let len = u64::try_from(msg.len()).map_err(|_| Errno::EMSGSIZE)?;
        if len > self.msgsize {
            return Err(Errno::EMSGSIZE);
        }
        if prio >= PRIO_MAX {
            return Err(Errno::EINVAL);
        }
        let mut s = self.state.lock();
        if s.count >= self.maxmsg {
            return Err(Errno::EAGAIN);
        }
        let was_empty = s.count == 0;
        s.messages.entry(prio).or_default().push_back(std::mem::take(msg));
        s.count += 1;
        s.bytes += len;
        let notify = if was_empty && s.waiting_receivers == 0 { s.notify.take() } else { None };
        drop(s);
        self.events.notify(crate::waiter::ALL);
        Ok(notify)
    }

    /// Takes the oldest message of the highest priority; EAGAIN when there
    /// is none. `room` is the caller's buffer size.
    pub(crate) fn receive(&self, room: u64) -> Result<(Vec<u8>, u32), Errno> {
        if room < self.msgsize {
            return Err(Errno::EMSGSIZE);
        }
        let mut s = self.state.lock();
        let Some((&prio, fifo)) = s.messages.iter_mut().next_back() else { return Err(Errno::EAGAIN) };
        let msg = fifo.pop_front().unwrap_or_default();
        if fifo.is_empty() {
            s.messages.remove(&prio);
        }
        let len = u64::try_from(msg.len()).unwrap_or(0);
        s.count -= 1;
        s.bytes -= len;
        drop(s);
        self.events.notify(crate::waiter::ALL);
        Ok((msg, prio))
    }

    /// Marks a receiver blocked on the queue for as long as the guard
    /// lives: a message arriving then goes to it, not to the registered
    /// notification (mq_notify(3)).
    pub(crate) fn receiver_waiting(self: &Arc<Queue>) -> WaitingReceiver {
        self.state.lock().waiting_receivers += 1;
        WaitingReceiver(self.clone())
    }

    /// mq_notify: registers `n` (None removes the caller's `pid`'s
    /// registration). EBUSY while a registration is held, unless its
    /// process is gone (`alive` says).
    pub(crate) fn set_notify(
        &self,
        pid: i32,
        n: Option<Notification>,
        alive: impl Fn(i32) -> bool,
    ) -> Result<(), Errno> {
        let mut s = self.state.lock();
        if s.notify.is_some_and(|old| !alive(old.pid)) {
            s.notify = None;
        }
        match (n, s.notify) {
            (Some(_), Some(_)) => Err(Errno::EBUSY),
            (Some(n), None) => {
                s.notify = Some(n);
                Ok(())
            }
            (None, Some(old)) if old.pid == pid => {
                s.notify = None;
                Ok(())
            }
            (None, _) => Ok(()),
        }
    }

    /// What reading the queue's file shows.
    fn status_text(&self) -> String {
        let s = self.state.lock();
        let (signo, pid) = s.notify.map_or((0, 0), |n| (n.signo, n.pid));
        let notify = i32::from(s.notify.is_some_and(|n| n.signo == 0));
        format!("QSIZE:{:<10} NOTIFY:{notify:<5} SIGNO:{signo:<5} NOTIFY_PID:{pid:<6}\n", s.bytes)
    }
}

/// The sandbox's queues by name (without the leading slash).
#[derive(Default)]
pub(crate) struct Registry {
    queues: Mutex<BTreeMap<Vec<u8>, Arc<Queue>>>,
    fs: std::sync::OnceLock<Arc<FsInfo>>,
    budget: Arc<Budget>,
}

/// How mq_open should find or make a queue.
pub(crate) struct OpenRequest<'a> {
    pub name: &'a [u8],
    pub create: bool,
    pub exclusive: bool,
    /// The caller's mq_attr (maxmsg, msgsize), if it gave one; checked
    /// only when the queue is made.
    pub attr: Option<(i64, i64)>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// CAP_SYS_RESOURCE: past the number of queues.
    pub privileged: bool,
}

impl Registry {
    fn fs(&self) -> &Arc<FsInfo> {
        self.fs.get_or_init(|| FsInfo::new(MQUEUE_MAGIC, SystemTime::now()))
    }

    /// Checks a queue name as mq_open's kernel half does (glibc has taken
    /// the leading slash off).
    pub(crate) fn check_name(name: &[u8]) -> Result<(), Errno> {
        if name.is_empty() {
            return Err(Errno::ENOENT);
        }
        if name == b"." || name == b".." {
            return Err(Errno::EACCES);
        }
        if name.contains(&b'/') {
            return Err(Errno::EACCES);
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok(())
    }

    /// Finds or creates the queue `req` names; the bool says it was made.
    pub(crate) fn open(&self, req: &OpenRequest<'_>, ino: u64, now: TimeSpec) -> Result<(Arc<Queue>, bool), Errno> {
        Self::check_name(req.name)?;
        let mut queues = self.queues.lock();
        if let Some(q) = queues.get(req.name) {
            if req.create && req.exclusive {
                return Err(Errno::EEXIST);
            }
            return Ok((q.clone(), false));
        }
        if !req.create {
            return Err(Errno::ENOENT);
        }
        let (maxmsg, msgsize) = new_queue_size(req.attr, req.privileged)?;
        let live = self.budget.queues.load(Ordering::Relaxed);
        if live >= HARD_QUEUES_MAX || (live >= QUEUES_MAX && !req.privileged) {
            return Err(Errno::ENOSPC);
        }
        let bytes = reservation(maxmsg, msgsize);
        let reserved = self.budget.bytes.load(Ordering::Relaxed);
        if reserved.saturating_add(bytes) > RESERVED_BYTES_MAX {
            return Err(Errno::EMFILE);
        }
        self.budget.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.budget.queues.fetch_add(1, Ordering::Relaxed);
        let q = Arc::new(Queue {
            maxmsg,
            msgsize,
            mode: req.mode & 0o7777,
            uid: req.uid,
            gid: req.gid,
            ino,
            created: now,
            state: Mutex::new(State {
                messages: BTreeMap::new(),
                count: 0,
                bytes: 0,
                notify: None,
                waiting_receivers: 0,
            }),
            events: crate::waiter::Queue::default(),
            budget: self.budget.clone(),
        });
        queues.insert(req.name.to_vec(), q.clone());
        Ok((q, true))
    }

    /// The queue named `name`, for permission checks before mq_unlink.
    pub(crate) fn get(&self, name: &[u8]) -> Option<Arc<Queue>> {
        self.queues.lock().get(name).cloned()
    }

    /// mq_unlink: the name goes if `allowed` lets the caller remove the
    /// queue (EPERM otherwise); the queue lives while descriptors do.
    pub(crate) fn unlink(&self, name: &[u8], allowed: impl Fn(&Queue) -> bool) -> Result<(), Errno> {
        Self::check_name(name)?;
        let mut queues = self.queues.lock();
        let q = queues.get(name).ok_or(Errno::ENOENT)?;
        if !allowed(q) {
            return Err(Errno::EPERM);
        }
        queues.remove(name);
        Ok(())
    }

    /// The node of queue `q`.
    pub(crate) fn node(&self, q: Arc<Queue>) -> Arc<QueueNode> {
        Arc::new(QueueNode { queue: q, fs: self.fs().clone() })
    }
}

/// The (maxmsg, msgsize) of a new queue: the defaults, or `attr` within
/// the ceilings (the lower ones without CAP_SYS_RESOURCE).
fn new_queue_size(attr: Option<(i64, i64)>, privileged: bool) -> Result<(u64, u64), Errno> {
    let Some((maxmsg, msgsize)) = attr else { return Ok((DEFAULT_MAXMSG, DEFAULT_MSGSIZE)) };
    let maxmsg = u64::try_from(maxmsg).ok().filter(|&m| m > 0).ok_or(Errno::EINVAL)?;
    let msgsize = u64::try_from(msgsize).ok().filter(|&m| m > 0).ok_or(Errno::EINVAL)?;
    let (max_msgs, max_size) = if privileged { (HARD_MAXMSG, HARD_MSGSIZE) } else { (DEFAULT_MAXMSG, DEFAULT_MSGSIZE) };
    if maxmsg > max_msgs || msgsize > max_size {
        return Err(Errno::EINVAL);
    }
    Ok((maxmsg, msgsize))
}

/// A queue as a file: in /dev/mqueue, and behind an mq descriptor.
pub(crate) struct QueueNode {
    pub queue: Arc<Queue>,
    fs: Arc<FsInfo>,
}

impl Node for QueueNode {
    fn stat(&self) -> Result<Stat, Errno> {
        let q = &self.queue;
        let mut st = super::anon::stat(self.fs.dev(), q.ino, S_IFREG | q.mode, q.created);
        st.uid = q.uid;
        st.gid = q.gid;
        st.size = u64::try_from(q.status_text().len()).unwrap_or(0);
        Ok(st)
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(Arc::new(QueueFile::new(self.queue.clone())))
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An open queue (an mq descriptor): reads give its status line.
pub(crate) struct QueueFile {
    pub queue: Arc<Queue>,
}

impl QueueFile {
    pub(crate) fn new(queue: Arc<Queue>) -> QueueFile {
        QueueFile { queue }
    }
}

impl FileOps for QueueFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        let text = self.queue.status_text().into_bytes();
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(text.len());
        let n = buf.len().min(text.len() - start);
        buf[..n].copy_from_slice(&text[start..start + n]);
        Ok(n)
    }

    fn poll_events(&self) -> u32 {
        let s = self.queue.state.lock();
        let mut ev = 0;
        if s.count > 0 {
            ev |= POLLIN | POLLRDNORM;
        }
        if s.count < self.queue.maxmsg {
            ev |= POLLOUT | POLLWRNORM;
        }
        ev
    }

    fn event_register(&self, e: &crate::waiter::Entry) {
        self.queue.events.register(e);
    }

    fn event_unregister(&self, e: &crate::waiter::Entry) {
        self.queue.events.unregister(e);
    }
}

/// The mqueue filesystem's root (/dev/mqueue): one file per queue.
pub(crate) struct Root(pub Arc<Registry>);

impl Root {
    fn entries(&self) -> Vec<Entry> {
        let queues: Vec<(Vec<u8>, Arc<Queue>)> =
            self.0.queues.lock().iter().map(|(n, q)| (n.clone(), q.clone())).collect();
        queues.into_iter().map(|(n, q)| (n.clone(), self.0.node(q) as Arc<dyn Node>)).collect()
    }
}

impl Entries for Root {
    fn lookup(&self, _dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let q = self.0.get(name).ok_or(Errno::ENOENT)?;
        Ok(self.0.node(q))
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.entries().iter().map(|(name, node)| dir_entry(name, node.as_ref())).collect()
    }
}

/// The /dev/mqueue filesystem of `registry`.
pub(crate) fn new_mqueuefs(registry: &Arc<Registry>) -> Arc<dyn Node> {
    let attr = Attr::new(registry.fs(), 1, crate::vfs::S_IFDIR | 0o1777);
    super::synthetic::Dir::new(attr, Root(registry.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &[u8], attr: (i64, i64), privileged: bool) -> OpenRequest<'_> {
        OpenRequest { name, create: true, exclusive: false, attr: Some(attr), mode: 0o600, uid: 0, gid: 0, privileged }
    }

    #[test]
    fn queues_reserve_their_size_and_give_it_back_when_freed() {
        let r = Registry::default();
        let big = (7, 4 << 20);
        let (a, _) = r.open(&request(b"a", big, true), 1, TimeSpec::default()).unwrap();
        let (_b, _) = r.open(&request(b"b", big, true), 2, TimeSpec::default()).unwrap();
        assert_eq!(r.open(&request(b"c", big, true), 3, TimeSpec::default()).err(), Some(Errno::EMFILE));
        a.send(&mut vec![0u8; 4 << 20], 0).unwrap();
        r.unlink(b"a", |_| true).unwrap();
        drop(a);
        assert!(r.open(&request(b"c", big, true), 3, TimeSpec::default()).is_ok(), "a's reservation is back");
        assert_eq!(r.unlink(b"c", |_| false), Err(Errno::EPERM));
    }

    #[test]
    fn the_number_of_queues_is_bounded() {
        let r = Registry::default();
        let small = (1, 1);
        for i in 0..QUEUES_MAX {
            r.open(&request(format!("q{i}").as_bytes(), small, false), 1, TimeSpec::default()).unwrap();
        }
        assert_eq!(r.open(&request(b"one-more", small, false), 1, TimeSpec::default()).err(), Some(Errno::ENOSPC));
        assert!(r.open(&request(b"one-more", small, true), 1, TimeSpec::default()).is_ok());
        assert!(r.open(&request(b"q0", (0, 0), false), 1, TimeSpec::default()).is_ok(), "an existing one opens");
        assert_eq!(r.open(&request(b"bad", (0, 1), true), 1, TimeSpec::default()).err(), Some(Errno::EINVAL));
        assert_eq!(r.open(&request(b"big", (11, 1), false), 1, TimeSpec::default()).err(), Some(Errno::EINVAL));
    }

    #[test]
    fn a_registration_is_held_until_its_process_is_gone() {
        let r = Registry::default();
        let (q, _) = r.open(&request(b"n", (1, 1), false), 1, TimeSpec::default()).unwrap();
        let n = |pid| Some(Notification { pid, signo: 10, value: 0 });
        q.set_notify(5, n(5), |_| true).unwrap();
        assert_eq!(q.set_notify(5, n(5), |_| true), Err(Errno::EBUSY), "even for its own process");
        assert_eq!(q.set_notify(6, n(6), |_| true), Err(Errno::EBUSY));
        assert!(q.set_notify(6, n(6), |pid| pid != 5).is_ok(), "process 5 is gone");
    }
}
