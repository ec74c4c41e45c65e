//! /dev/pts and the terminals behind it: the sentry's own pseudo-terminals
//! (opened through /dev/ptmx, or made for a container's console), and the
//! host terminals `husk do` passes through as standard streams, so that
//! /dev/pts/N names the very node a process's descriptor is and ttyname
//! finds it. Also /dev/tty, the caller's controlling terminal.

use super::synthetic::{dir_entry, Attr, Entries, Entry};
use super::tty::terminal::{Terminal, TtyFile};
use crate::abi::Errno;
use crate::auth::Credentials;
use crate::kernel::{thread, Kernel, Terminals};
use crate::vfs::walk::Walker;
use crate::vfs::{Dentry, DirEntry, FileOps, Node, Stat, TimeSpec};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};

/// A host terminal's name and node, not kept alive by the registry.
type WeakEntry = (Vec<u8>, Weak<dyn Node>);

/// The sandbox's terminals.
#[derive(Default)]
pub(crate) struct Devpts {
    kernel: OnceLock<Weak<Kernel>>,
    host: Mutex<Vec<WeakEntry>>,
    terminals: Mutex<BTreeMap<u32, Weak<Terminal>>>,
}

impl Devpts {
    /// Connects the registry to its kernel (terminals signal process
    /// groups); call once the kernel is shared.
    pub(crate) fn attach(&self, kernel: Weak<Kernel>) {
        let _ = self.kernel.set(kernel);
    }

    /// Shows host terminal `node` as /dev/pts/`name`. A terminal may have
    /// several nodes (stdin, stdout, stderr): the name shows the oldest
    /// still open.
    pub(crate) fn add_host(&self, name: &[u8], node: &Arc<dyn Node>) {
        let mut t = self.host.lock();
        t.retain(|(_, n)| n.strong_count() > 0);
        t.push((name.to_vec(), Arc::downgrade(node)));
    }

    fn live_hosts(&self) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        for (name, n) in self.host.lock().iter() {
            if let Some(node) = n.upgrade().filter(|_| !out.iter().any(|(o, _)| o == name)) {
                out.push((name.clone(), node));
            }
        }
        out
    }

    /// The terminals whose master is open (those /dev/pts shows).
    fn live_terminals(&self) -> Vec<Arc<Terminal>> {
        let mut t = self.terminals.lock();
        t.retain(|_, w| w.strong_count() > 0);
        t.values().filter_map(Weak::upgrade).filter(|t| t.alive()).collect()
    }

    /// A new pseudo-terminal with the lowest free number, owned by
    /// `owner`; opens its master. A number stays taken until both sides
    /// of its terminal are closed, as in Linux; host terminals' numbers
    /// are taken too.
    pub(crate) fn new_terminal(&self, owner: u32, now: TimeSpec) -> Arc<TtyFile> {
        let hosts = self.live_hosts();
        let kernel = self.kernel.get().cloned().unwrap_or_default();
        let mut terminals = self.terminals.lock();
        terminals.retain(|_, w| w.strong_count() > 0);
        let taken = |n: u32| {
            let name = n.to_string().into_bytes();
            terminals.contains_key(&n) || hosts.iter().any(|(h, _)| *h == name)
        };
        let index = (0..).find(|&n| !taken(n)).unwrap_or(u32::MAX);
        let term = Terminal::new(index, kernel, owner, now);
        let master = term.open_master();
        terminals.insert(index, Arc::downgrade(&term));
        master
    }

    /// The controlling terminal of session `sid`.
    pub(crate) fn controlling(&self, sid: i32) -> Option<Arc<Terminal>> {
        self.live_terminals().into_iter().find(|t| t.session() == Some(sid))
    }
}

impl Terminals for Devpts {
    fn has_controlling(&self, sid: i32) -> bool {
        self.controlling(sid).is_some()
    }

    fn session_ended(&self, sid: i32) {
        if let Some(t) = self.controlling(sid) {
            t.release_controlling(sid, true, true);
        }
    }
}

/// The dentry of terminal `term`'s replica: /dev/pts/N of the sandbox's
/// /dev (so /proc/PID/fd and ttyname show that name), or an anonymous
/// one of the same name where /dev is not mounted.
pub(crate) fn replica_dentry(kernel: &Kernel, term: &Arc<Terminal>) -> Arc<Dentry> {
    let name = term.name();
    let creds = Credentials::new(0, 0);
    let w = Walker { ns: kernel.mounts(), root: kernel.mounts().root(), creds: &creds };
    w.resolve(&w.root, name.as_bytes(), true)
        .unwrap_or_else(|_| kernel.anon_dentry(name.as_bytes(), Arc::new(ReplicaNode(term.clone()))))
}

/// /dev/pts/N of a sentry terminal.
pub(crate) struct ReplicaNode(pub Arc<Terminal>);

impl Node for ReplicaNode {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.0.stat())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(self.0.open_replica(flags)?)
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 3
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The /dev/pts directory.
pub(crate) struct Pts(pub Arc<Devpts>);

impl Pts {
    fn entries(&self) -> Vec<Entry> {
        let mut out = self.0.live_hosts();
        for t in self.0.live_terminals() {
            out.push((t.index.to_string().into_bytes(), Arc::new(ReplicaNode(t))));
        }
        out
    }
}

impl Entries for Pts {
    fn lookup(&self, _dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.entries().into_iter().find(|(n, _)| n == name).map(|(_, node)| node).ok_or(Errno::ENOENT)
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.entries().iter().map(|(name, node)| dir_entry(name, node.as_ref())).collect()
    }
}

/// /dev/ptmx: each open makes a new terminal and is its master.
pub(crate) struct Ptmx {
    pub attr: Attr,
    pub devpts: Arc<Devpts>,
}

impl Node for Ptmx {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let owner = thread::current().map_or(0, |t| t.creds().euid);
        Ok(self.devpts.new_terminal(owner, crate::fs::tmpfs::now()))
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// /dev/tty: the caller's controlling terminal (ENXIO without one).
pub(crate) struct ControllingTty {
    pub attr: Attr,
    pub devpts: Arc<Devpts>,
}

impl Node for ControllingTty {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let t = thread::current().ok_or(Errno::ENXIO)?;
        let k = self.devpts.kernel.get().and_then(Weak::upgrade).ok_or(Errno::ENXIO)?;
        let sid = k.procs().sid(t.tgid()).ok_or(Errno::ENXIO)?;
        let term = self.devpts.controlling(sid).ok_or(Errno::ENXIO)?;
        Ok(term.open_replica(flags | libc::O_NOCTTY)?)
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
