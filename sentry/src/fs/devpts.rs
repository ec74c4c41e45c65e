//! /dev/pts and the terminals behind it: the sentry's own pseudo-terminals
//! (opened through /dev/ptmx, or made for a container's console), and the
//! host terminals `husk do` passes through as standard streams, so that
//! /dev/pts/N names the very node a process's descriptor is and ttyname
//! finds it. Also /dev/tty, the caller's controlling terminal; and the
//! instances `mount -t devpts -o newinstance` makes, each with a ptmx of
//! its own and its own numbering.

use super::synthetic::{dir_entry, Attr, Dir, Entries, Entry, FsInfo};
use super::tty::terminal::{Terminal, TtyFile};
use crate::abi::Errno;
use crate::auth::Credentials;
use crate::kernel::{thread, Kernel, Terminals};
use crate::vfs::walk::Walker;
use crate::vfs::{Dentry, DirEntry, FileOps, Node, Stat, TimeSpec};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::SystemTime;

/// DEVPTS_SUPER_MAGIC.
const DEVPTS_MAGIC: u64 = 0x1cd1;
/// The st_dev of the sandbox's own devpts' terminals.
const SANDBOX_DEV: u64 = 0x19;

/// A host terminal's name and node, not kept alive by the registry.
type WeakEntry = (Vec<u8>, Weak<dyn Node>);

/// The sandbox's terminals (or those of an instance mounted with
/// newinstance).
#[derive(Default)]
pub(crate) struct Devpts {
    kernel: OnceLock<Weak<Kernel>>,
    host: Mutex<Vec<WeakEntry>>,
    terminals: Mutex<BTreeMap<u32, Weak<Terminal>>>,
    /// The instances mounted with newinstance (the sandbox's own devpts
    /// keeps them, so that their terminals are found as controlling
    /// terminals too).
    instances: Mutex<Vec<Weak<Devpts>>>,
    /// An instance's device (None: the sandbox's own devpts).
    dev: Option<u64>,
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
        let term = Terminal::new(index, kernel, owner, now, self.dev.unwrap_or(SANDBOX_DEV));
        let master = term.open_master();
        terminals.insert(index, Arc::downgrade(&term));
        master
    }

    /// The controlling terminal of session `sid`, of this devpts or an
    /// instance of its.
    pub(crate) fn controlling(&self, sid: i32) -> Option<Arc<Terminal>> {
        if let Some(t) = self.live_terminals().into_iter().find(|t| t.session() == Some(sid)) {
            return Some(t);
        }
        let instances: Vec<Arc<Devpts>> = {
            let mut list = self.instances.lock();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        instances.iter().find_map(|d| d.controlling(sid))
    }

    /// A new instance (mount -o newinstance): a devpts root with a ptmx
    /// of mode `ptmx_mode` whose terminals are numbered from 0 and shown
    /// only there.
    pub(crate) fn new_instance(&self, ptmx_mode: u32) -> Arc<dyn Node> {
        let fs = FsInfo::new(DEVPTS_MAGIC, SystemTime::now());
        let devpts = Arc::new(Devpts { dev: Some(fs.dev()), ..Devpts::default() });
        if let Some(k) = self.kernel.get() {
            devpts.attach(k.clone());
        }
        {
            let mut list = self.instances.lock();
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&devpts));
        }
        // Linux's inode numbers: the root 1, ptmx 2, terminal N N+3.
        let mut attr = Attr::new(&fs, 2, libc::S_IFCHR | (ptmx_mode & 0o7777));
        attr.rdev = libc::makedev(5, 2);
        let ptmx: Arc<dyn Node> = Arc::new(Ptmx { attr, devpts: devpts.clone() });
        let mut root = Attr::new(&fs, 1, crate::vfs::S_IFDIR | 0o755);
        root.nlink = 2;
        Dir::new(root, Pts { devpts, ptmx: Some(ptmx) })
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
/// one of the same name where /dev is not mounted or its /dev/pts/N is
/// another terminal (one of another devpts instance).
pub(crate) fn replica_dentry(kernel: &Kernel, term: &Arc<Terminal>) -> Arc<Dentry> {
    let name = term.name();
    let creds = Credentials::new(0, 0);
    let w = Walker { ns: kernel.mounts(), root: kernel.mounts().root(), creds: &creds };
    let is_term =
        |d: &Arc<Dentry>| d.node.as_any().downcast_ref::<ReplicaNode>().is_some_and(|r| Arc::ptr_eq(&r.0, term));
    w.resolve(&w.root, name.as_bytes(), true)
        .ok()
        .filter(is_term)
        .unwrap_or_else(|| kernel.anon_dentry(name.as_bytes(), Arc::new(ReplicaNode(term.clone()))))
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

/// A devpts directory: /dev/pts (whose ptmx is /dev/ptmx), or the root
/// of an instance with its own ptmx.
pub(crate) struct Pts {
    pub devpts: Arc<Devpts>,
    pub ptmx: Option<Arc<dyn Node>>,
}

impl Pts {
    fn entries(&self) -> Vec<Entry> {
        let mut out = self.devpts.live_hosts();
        out.extend(self.ptmx.iter().map(|p| (b"ptmx".to_vec(), p.clone())));
        for t in self.devpts.live_terminals() {
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
