//! Dentries (a node reached by a path, with its mount) and mounts.

use super::{notify, Node, S_IFDIR, S_IFLNK, S_IFMT};
use crate::abi::Errno;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// A mounted filesystem.
pub struct Mount {
    pub id: u64,
    pub root: Arc<dyn Node>,
    /// Where it is mounted (None for the namespace root).
    pub mountpoint: Option<Arc<Dentry>>,
    /// Filesystem type and source, for /proc/mounts.
    pub fs_type: String,
    pub source: String,
    /// The per-mount flags as they are now, shared by the objects that
    /// stand for this mount in its namespace one after another (a remount
    /// or a move makes a new one): a dentry reached before a remount (a
    /// working directory, an open directory) sees them as Linux's
    /// vfsmount would.
    pub live: Arc<MountFlags>,
    /// The per-mount flags and state that `mount(2)` sets (`mounts`).
    pub opts: MountOpts,
}

impl Mount {
    /// Whether the mount refuses changes (EROFS).
    pub fn read_only(&self) -> bool {
        self.live.has(MNT_READONLY)
    }

    /// Whether nothing on it may be executed (execve, PROT_EXEC).
    pub fn noexec(&self) -> bool {
        self.live.has(MNT_NOEXEC)
    }

    /// Whether its device files may not be opened.
    pub fn nodev(&self) -> bool {
        self.live.has(MNT_NODEV)
    }
}

/// Linux's per-mount flags (`MNT_*` of include/linux/mount.h).
pub const MNT_NOSUID: u32 = 0x01;
pub const MNT_NODEV: u32 = 0x02;
pub const MNT_NOEXEC: u32 = 0x04;
pub const MNT_NOATIME: u32 = 0x08;
pub const MNT_NODIRATIME: u32 = 0x10;
pub const MNT_RELATIME: u32 = 0x20;
pub const MNT_READONLY: u32 = 0x40;
pub const MNT_NOSYMFOLLOW: u32 = 0x80;

/// A mount's `MNT_*` flags, changed in place by a remount.
#[derive(Debug, Default)]
pub struct MountFlags(AtomicU32);

impl MountFlags {
    pub fn new(bits: u32) -> Arc<MountFlags> {
        Arc::new(MountFlags(AtomicU32::new(bits)))
    }

    pub fn get(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    pub fn set(&self, bits: u32) {
        self.0.store(bits, Ordering::Release)
    }

    pub fn has(&self, bit: u32) -> bool {
        self.get() & bit != 0
    }
}

/// How a mount receives and passes on mount events (recorded and shown
/// in mountinfo; events are not propagated between peers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Private,
    /// A member of peer group `n`.
    Shared(u64),
    /// Receives from peer group `n`.
    Slave(u64),
    Unbindable,
}

/// A mount's flags beyond read-only, and what `mount(2)` needs to change
/// them.
#[derive(Clone, Default)]
pub struct MountOpts {
    /// The `MNT_*` flags a new mount starts with (`MNT_READONLY` is
    /// added for a read-only filesystem).
    pub flags: u32,
    pub propagation: Propagation,
    /// The directory of the filesystem the mount shows ("" for its root,
    /// a bind mount's source otherwise), mountinfo's fourth field.
    pub fs_root: Vec<u8>,
    /// Set up by the runtime: the guest may not unmount it, move it or
    /// make it writable (Linux's MNT_LOCKED for mounts a less privileged
    /// namespace inherits).
    pub locked: bool,
    /// For a mount the guest made read-only: its writable root.
    pub rw_root: Option<Arc<dyn Node>>,
    /// The filesystem's own options as mountinfo's last field lists them
    /// after rw/ro (",size=8k,mode=123"), for filesystems the guest made.
    pub super_opts: String,
}

/// A node reached through a path: Linux's `struct path` and dentry in one.
pub struct Dentry {
    pub mount: Arc<Mount>,
    pub parent: Option<Arc<Dentry>>,
    pub name: Vec<u8>,
    pub node: Arc<dyn Node>,
    /// Last, so it runs after the node is let go: a file removed while
    /// this held it may be gone now.
    _release: notify::ReleaseCheck,
}

impl Dentry {
    pub fn new(mount: Arc<Mount>, parent: Option<Arc<Dentry>>, name: Vec<u8>, node: Arc<dyn Node>) -> Arc<Dentry> {
        let release = notify::ReleaseCheck::of(&node);
        Arc::new(Dentry { mount, parent, name, node, _release: release })
    }

    /// The root dentry of a mount.
    pub fn mount_root(mount: &Arc<Mount>) -> Arc<Dentry> {
        Dentry::new(mount.clone(), None, Vec::new(), mount.root.clone())
    }

    pub fn child(self: &Arc<Dentry>, name: &[u8], node: Arc<dyn Node>) -> Arc<Dentry> {
        Dentry::new(self.mount.clone(), Some(self.clone()), name.to_vec(), node)
    }

    /// The path from the mount's root ("" for the root itself).
    pub fn path_in_mount(&self) -> Vec<u8> {
        let mut parts = Vec::new();
        let mut d = Some(self);
        while let Some(x) = d {
            if x.parent.is_some() {
                parts.push(x.name.as_slice());
            }
            d = x.parent.as_deref();
        }
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        out
    }

    /// The absolute path as seen from `root` (Linux's d_path). Dentries not
    /// under `root` are shown relative to the namespace root.
    pub fn path_from(self: &Arc<Dentry>, root: &Arc<Dentry>) -> Vec<u8> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut d = self.clone();
        loop {
            if same(&d, root) {
                break;
            }
            match (&d.parent, &d.mount.mountpoint) {
                (Some(p), _) => {
                    parts.push(d.name.clone());
                    d = p.clone();
                }
                (None, Some(mp)) => d = mp.clone(),
                (None, None) => break,
            }
        }
        if parts.is_empty() {
            return b"/".to_vec();
        }
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        out
    }

    /// Whether `root` is this dentry or one of the places above it
    /// (through mount points).
    pub fn is_under(self: &Arc<Dentry>, root: &Arc<Dentry>) -> bool {
        let mut d = self.clone();
        loop {
            if same(&d, root) {
                return true;
            }
            d = match (&d.parent, &d.mount.mountpoint) {
                (Some(p), _) => p.clone(),
                (None, Some(mp)) => mp.clone(),
                (None, None) => return false,
            };
        }
    }

    pub fn mode(&self) -> Result<u32, Errno> {
        Ok(self.node.stat()?.mode)
    }

    pub fn is_dir(&self) -> bool {
        self.mode().map(|m| m & S_IFMT == S_IFDIR).unwrap_or(false)
    }

    pub fn is_symlink(&self) -> bool {
        self.mode().map(|m| m & S_IFMT == S_IFLNK).unwrap_or(false)
    }
}

/// Whether two dentries name the same place (same mount, same path).
pub(crate) fn same(a: &Arc<Dentry>, b: &Arc<Dentry>) -> bool {
    Arc::ptr_eq(a, b) || (a.mount.id == b.mount.id && a.path_in_mount() == b.path_in_mount())
}

/// The most mounts a namespace holds, its root included (Linux's
/// `fs.mount-max` default): past it a mount fails with ENOSPC.
pub const MAX_MOUNTS: usize = 100_000;

/// Mounts by where they sit: (parent mount id, path in the parent mount).
pub(super) type MountTable = HashMap<(u64, Vec<u8>), Arc<Mount>>;

/// The mounts of a sandbox.
pub struct MountNamespace {
    pub(super) root: RwLock<Arc<Mount>>,
    pub(super) mounts: RwLock<MountTable>,
    /// Mount ids and peer group ids, shared by every copy of the namespace.
    pub(super) next_id: Arc<AtomicU64>,
    /// Its identity (`/proc/PID/ns/mnt`).
    pub ino: u64,
}

impl MountNamespace {
    pub fn new(root: Arc<dyn Node>, fs_type: &str, source: &str) -> MountNamespace {
        let root = Arc::new(Mount {
            id: 1,
            mountpoint: None,
            fs_type: fs_type.to_string(),
            source: source.to_string(),
            live: MountFlags::new(MNT_RELATIME | if root.read_only() { MNT_READONLY } else { 0 }),
            opts: MountOpts { locked: true, ..MountOpts::default() },
            root,
        });
        MountNamespace {
            root: RwLock::new(root),
            mounts: RwLock::new(HashMap::new()),
            next_id: Arc::new(AtomicU64::new(2)),
            ino: super::nsid::MNT_INIT_INO,
        }
    }

    pub fn root(&self) -> Arc<Dentry> {
        Dentry::mount_root(&self.root.read())
    }

    /// `d`'s path from this namespace's root with every bind mount on the
    /// way spelled from where its filesystem is mounted whole: a file
    /// reached through a bind of /etc at /tmp/e is /etc/FILE, so the audit
    /// log's watched-path globs see it whatever binds a guest makes. A
    /// bind whose filesystem is mounted whole nowhere keeps its own place.
    pub fn source_path(&self, d: &Arc<Dentry>) -> Vec<u8> {
        let top = self.root.read().clone();
        let mut path = self.place(d, &top, 0).unwrap_or_else(|| d.path_from(&Dentry::mount_root(&top)));
        if path.is_empty() {
            path.push(b'/');
        }
        path
    }

    /// `source_path` without its leading "/" for the root; None past
    /// `MAX_HOPS` mounts (a cycle pivot_root can leave).
    fn place(&self, d: &Dentry, top: &Arc<Mount>, hops: usize) -> Option<Vec<u8>> {
        const MAX_HOPS: usize = 64;
        if hops > MAX_HOPS {
            return None;
        }
        let is_whole = |m: &Mount| m.opts.fs_root.is_empty() || m.opts.fs_root == b"/";
        let m = &d.mount;
        let mut base = if m.id == top.id {
            Vec::new()
        } else if is_whole(m) {
            match &m.mountpoint {
                Some(mp) => self.place(mp, top, hops + 1)?,
                None => Vec::new(),
            }
        } else {
            // A bind: where its filesystem's first whole mount is.
            let fs = m.root.fs_id();
            let first = std::iter::once(top.clone())
                .chain(self.mounts.read().values().cloned())
                .filter(|w| is_whole(w) && w.root.fs_id() == fs)
                .min_by_key(|w| w.id);
            match (first, &m.mountpoint) {
                (Some(w), _) => {
                    let mut p = self.place(&Dentry::mount_root(&w), top, hops + 1)?;
                    p.extend_from_slice(&m.opts.fs_root);
                    p
                }
                (None, Some(mp)) => self.place(mp, top, hops + 1)?,
                (None, None) => Vec::new(),
            }
        };
        base.extend_from_slice(&d.path_in_mount());
        Some(base)
    }

    /// Mounts `fs` on `at` for the runtime (the mount is locked against
    /// the guest): a directory on a directory, a non-directory (a
    /// bind-mounted file) on a non-directory, as Linux requires.
    pub fn mount(&self, at: &Arc<Dentry>, fs: Arc<dyn Node>, fs_type: &str, source: &str) -> Result<(), Errno> {
        let opts = MountOpts { locked: true, flags: MNT_RELATIME, ..MountOpts::default() };
        self.mount_with(at, fs, fs_type, source, opts).map(drop)
    }

    /// Mounts `fs` on `at` with `opts`, returning the new mount.
    pub fn mount_with(
        &self,
        at: &Arc<Dentry>,
        fs: Arc<dyn Node>,
        fs_type: &str,
        source: &str,
        opts: MountOpts,
    ) -> Result<Arc<Mount>, Errno> {
        let fs_is_dir = fs.stat()?.mode & super::S_IFMT == super::S_IFDIR;
        if at.is_dir() != fs_is_dir {
            return Err(Errno::ENOTDIR);
        }
        let at = self.crossed(at.clone());
        if self.mounts.read().len() + 1 >= MAX_MOUNTS {
            return Err(Errno::ENOSPC);
        }
        let key = (at.mount.id, at.path_in_mount());
        let m = Arc::new(Mount {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            live: MountFlags::new(opts.flags | if fs.read_only() { MNT_READONLY } else { 0 }),
            root: fs,
            mountpoint: Some(at),
            fs_type: fs_type.to_string(),
            source: source.to_string(),
            opts,
        });
        self.mounts.write().insert(key, m.clone());
        Ok(m)
    }

    /// Follows mounts stacked on `d` down to the topmost one's root.
    pub fn crossed(&self, d: Arc<Dentry>) -> Arc<Dentry> {
        let mounts = self.mounts.read();
        let mut d = d;
        while let Some(m) = mounts.get(&(d.mount.id, d.path_in_mount())) {
            d = Dentry::mount_root(m);
        }
        d
    }

    /// Whether some mount sits on `d` (so it cannot be removed or renamed).
    pub fn is_mountpoint(&self, d: &Dentry) -> bool {
        self.mounts.read().contains_key(&(d.mount.id, d.path_in_mount()))
    }

    /// Every mount, root first, for /proc/mounts.
    pub fn all(&self) -> Vec<Arc<Mount>> {
        let mut v: Vec<Arc<Mount>> = self.mounts.read().values().cloned().collect();
        v.sort_by_key(|m| m.id);
        v.insert(0, self.root.read().clone());
        v
    }
}
