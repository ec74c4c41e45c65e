//! overlayfs: a writable upper filesystem (a tmpfs) over a read-only lower
//! one (the image the gofer serves), so guest writes never reach the host.
//!
//! Like Linux's overlayfs: lookups prefer the upper layer, directories in
//! both are merged, removed lower names are recorded as whiteouts, and a
//! lower-only node is copied up before it is changed. Overlay nodes are
//! cached per directory, so a path keeps its identity and state; directories
//! created where a whiteout was are opaque (their node has no lower layer).
//! Namespace changes and copy-ups of one overlay are serialized.

use super::pipe::FifoTable;
use super::tmpfs::{anon_dev, new_fs_id, now, open_writes, DirPair};
use crate::abi::Errno;
use crate::mm::Mappable;
use crate::vfs::rename::{self, Rename, RenameNode};
use crate::vfs::{
    Allocate, DirEntry, FileOps, IoctlContext, NewNode, Node, SetAttr, SetTime, Stat, StatFs, S_IFDIR, S_IFIFO,
    S_IFLNK, S_IFMT, S_IFREG,
};
use parking_lot::{Mutex, MutexGuard};
use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};

/// The `f_type` of an overlay (`OVERLAYFS_SUPER_MAGIC`).
pub(crate) const OVERLAYFS_SUPER_MAGIC: u64 = 0x794c_7630;

/// Bytes copied per read during a copy-up.
const COPY_CHUNK: usize = 64 * 1024;
/// Marks the inode numbers of upper-only nodes, so they cannot collide with
/// the lower layer's (which are shown unchanged).
const UPPER_INO_TAG: u64 = 1 << 62;
/// The device a tagged (upper-only) inode number is unique on, in a node's
/// identity: the lower layer's are its files' own host devices.
const UPPER_DEV: u64 = u64::MAX;

/// A union of `upper` (writable) over `lower` (never written); returns the
/// root directory.
pub(crate) fn new_overlay(upper: Arc<dyn Node>, lower: Arc<dyn Node>) -> Arc<dyn Node> {
    let id = new_fs_id();
    let fs = Arc::new(OverlayFs {
        id,
        dev: anon_dev(id),
        lock: Mutex::new(()),
        upper_root: upper.clone(),
        fifos: FifoTable::new(),
    });
    let id = match (lower.stat(), upper.stat()) {
        (Ok(l), _) => (l.dev, l.ino),
        (Err(_), Ok(u)) => (UPPER_DEV, upper_ino(u.ino)),
        (Err(_), Err(_)) => (UPPER_DEV, UPPER_INO_TAG),
    };
    let layers = Layers { upper: Some(upper), lower: Some(lower), kind: S_IFDIR, id };
    OverlayNode::build(&fs, Place::default(), layers)
}

fn upper_ino(ino: u64) -> u64 {
    ino | UPPER_INO_TAG
}

/// `Ok(None)` for `ENOENT`.
fn found<T>(r: Result<T, Errno>) -> Result<Option<T>, Errno> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// One overlay instance.
struct OverlayFs {
    id: usize,
    dev: u64,
    /// Serializes namespace changes and copy-ups.
    lock: Mutex<()>,
    upper_root: Arc<dyn Node>,
    /// The pipes of its FIFOs, by node identity (device, inode number), as
    /// Linux's overlayfs opens a special file on the overlay inode: the
    /// same pipe from either layer, across a copy-up and through hard
    /// links, and never one pipe for two FIFOs of different host devices.
    fifos: FifoTable<(u64, u64)>,
}

/// Where a node is: its directory (none for the root) and name there.
#[derive(Default)]
struct Place {
    parent: Weak<OverlayNode>,
    name: Vec<u8>,
}

/// What a directory node knows about its entries.
#[derive(Default)]
struct DirState {
    children: HashMap<Vec<u8>, Arc<OverlayNode>>,
    /// Lower names removed through the overlay.
    whiteouts: HashSet<Vec<u8>>,
}

/// The layers and identity of a new node.
struct Layers {
    upper: Option<Arc<dyn Node>>,
    lower: Option<Arc<dyn Node>>,
    /// The file type bits.
    kind: u32,
    /// Its identity: the inode number it shows and the device that number
    /// is unique on (a lower file's host device, or UPPER_DEV).
    id: (u64, u64),
}

struct OverlayNode {
    fs: Arc<OverlayFs>,
    me: Weak<OverlayNode>,
    kind: u32,
    ino: u64,
    /// The device `ino` is unique on (see `Layers::id`): the rootfs of
    /// `husk do` spans several host filesystems.
    ino_dev: u64,
    place: Mutex<Place>,
    upper: Mutex<Option<Arc<dyn Node>>>,
    lower: Option<Arc<dyn Node>>,
    dir: Mutex<DirState>,
}

impl OverlayNode {
    fn build(fs: &Arc<OverlayFs>, place: Place, layers: Layers) -> Arc<OverlayNode> {
        Arc::new_cyclic(|me| OverlayNode {
            fs: fs.clone(),
            me: me.clone(),
            kind: layers.kind,
            ino: layers.id.1,
            ino_dev: layers.id.0,
            place: Mutex::new(place),
            upper: Mutex::new(layers.upper),
            lower: layers.lower,
            dir: Mutex::default(),
        })
    }

    fn arc(&self) -> Result<Arc<OverlayNode>, Errno> {
        self.me.upgrade().ok_or(Errno::ESTALE)
    }

    fn is_dir(&self) -> bool {
        self.kind == S_IFDIR
    }

    fn require_dir(&self) -> Result<(), Errno> {
        if self.is_dir() {
            Ok(())
        } else {
            Err(Errno::ENOTDIR)
        }
    }

    fn upper(&self) -> Option<Arc<dyn Node>> {
        self.upper.lock().clone()
    }

    /// The layer shown: the upper one if the node has it.
    fn layer(&self) -> Result<Arc<dyn Node>, Errno> {
        self.upper().or_else(|| self.lower.clone()).ok_or(Errno::EIO)
    }

    fn place(&self) -> (Option<Arc<OverlayNode>>, Vec<u8>) {
        let p = self.place.lock();
        (p.parent.upgrade(), p.name.clone())
    }

    fn set_place(&self, parent: &OverlayNode, name: &[u8]) {
        *self.place.lock() = Place { parent: parent.me.clone(), name: name.to_vec() };
    }

    /// A child node in this directory.
    fn child(&self, name: &[u8], layers: Layers) -> Arc<OverlayNode> {
        OverlayNode::build(&self.fs, Place { parent: self.me.clone(), name: name.to_vec() }, layers)
    }

    /// Whether `self` is `other` or one of its ancestors.
    fn is_ancestor_of(&self, other: &OverlayNode) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        let mut cur = other.place().0;
        while let Some(p) = cur {
            if std::ptr::eq(self, &*p) {
                return true;
            }
            cur = p.place().0;
        }
        false
    }

    /// The node's path from the overlay's root.
    fn path(&self) -> String {
        let mut parts = Vec::new();
        let mut at = self.place();
        while let (Some(p), name) = at {
            parts.push(name);
            at = p.place();
        }
        let mut out = String::new();
        for p in parts.iter().rev() {
            out.push('/');
            out.push_str(&String::from_utf8_lossy(p));
        }
        if out.is_empty() {
            out.push('/');
        }
        out
    }

    /// The visible child `name`, from the cache or the layers.
    fn lookup_child(&self, name: &[u8]) -> Result<Arc<OverlayNode>, Errno> {
        self.require_dir()?;
        let mut st = self.dir.lock();
        if let Some(c) = st.children.get(name) {
            return Ok(c.clone());
        }
        let upper = match self.upper() {
            Some(u) => found(u.lookup(name))?,
            None => None,
        };
        let upper_st = upper.as_ref().map(|u| u.stat()).transpose()?;
        let upper_hides = upper_st.is_some_and(|s| s.mode & S_IFMT != S_IFDIR);
        let lower = match &self.lower {
            Some(l) if !upper_hides && !st.whiteouts.contains(name) => found(l.lookup(name))?,
            _ => None,
        };
        let lower_st = lower.as_ref().map(|l| l.stat()).transpose()?;
        let layers = match (upper, upper_st, lower, lower_st) {
            (Some(u), Some(us), l, ls) => {
                let merged = ls.filter(|s| s.mode & S_IFMT == S_IFDIR);
                let id = merged.map_or((UPPER_DEV, upper_ino(us.ino)), |s| (s.dev, s.ino));
                Layers { upper: Some(u), lower: merged.and(l), kind: us.mode & S_IFMT, id }
            }
            (None, _, Some(l), Some(ls)) => {
                Layers { upper: None, lower: Some(l), kind: ls.mode & S_IFMT, id: (ls.dev, ls.ino) }
            }
            _ => return Err(Errno::ENOENT),
        };
        let node = self.child(name, layers);
        st.children.insert(name.to_vec(), node.clone());
        Ok(node)
    }

    /// `EEXIST` if `name` is visible.
    fn ensure_absent(&self, name: &[u8]) -> Result<(), Errno> {
        match found(self.lookup_child(name))? {
            Some(_) => Err(Errno::EEXIST),
            None => Ok(()),
        }
    }

    /// Whether the lower layer of this directory has `name`.
    fn lower_has(&self, name: &[u8]) -> Result<bool, Errno> {
        match &self.lower {
            Some(l) => Ok(found(l.lookup(name))?.is_some()),
            None => Ok(false),
        }
    }

    fn is_empty_dir(&self) -> Result<bool, Errno> {
        Ok(self.readdir()?.is_empty())
    }

    /// Whether a rename may move this node: not a directory with lower
    /// contents (Linux's overlayfs without `redirect_dir`).
    fn can_move(&self) -> bool {
        !self.is_dir() || self.lower.is_none()
    }

    /// Makes a new entry in the upper directory with `make` and caches its
    /// node; `id` keeps the identity of a hard link's target. The overlay
    /// lock must be held and `name` must not be visible.
    fn add_entry(
        &self,
        name: &[u8],
        id: Option<(u64, u64)>,
        make: impl FnOnce(&Arc<dyn Node>) -> Result<Arc<dyn Node>, Errno>,
    ) -> Result<Arc<OverlayNode>, Errno> {
        let dir = self.copy_up(u64::MAX)?;
        let mut st = self.dir.lock();
        let upper = make(&dir)?;
        let ust = upper.stat()?;
        st.whiteouts.remove(name);
        let id = id.unwrap_or((UPPER_DEV, upper_ino(ust.ino)));
        let node = self.child(name, Layers { upper: Some(upper), lower: None, kind: ust.mode & S_IFMT, id });
        st.children.insert(name.to_vec(), node.clone());
        Ok(node)
    }

    /// Creates `name` in the upper layer with `make`.
    fn create_entry(
        &self,
        name: &[u8],
        make: impl FnOnce(&Arc<dyn Node>) -> Result<Arc<dyn Node>, Errno>,
    ) -> Result<Arc<OverlayNode>, Errno> {
        let _ns = self.fs.lock.lock();
        self.ensure_absent(name)?;
        self.add_entry(name, None, make)
    }

    /// The upper layer of this node, copying it up (with at most `limit`
    /// bytes of a regular file's data) if it has none. The overlay lock
    /// must be held.
    fn copy_up(&self, limit: u64) -> Result<Arc<dyn Node>, Errno> {
        if let Some(u) = self.upper() {
            return Ok(u);
        }
        let (parent, name) = self.place();
        let parent = parent.ok_or(Errno::ENOENT)?;
        let cached = parent.dir.lock().children.get(&name).is_some_and(|c| std::ptr::eq(&**c, self));
        if !cached {
            return Err(Errno::ENOENT);
        }
        let dir = parent.copy_up(u64::MAX)?;
        let lower = self.lower.clone().ok_or(Errno::EIO)?;
        let times = dir.stat()?;
        let upper = copy_node(&dir, &name, &lower, limit).and_then(|u| copy_xattrs(&lower, &u).map(|()| u));
        let restored = dir.setattr(&SetAttr {
            atime: Some(SetTime::At(times.atime)),
            mtime: Some(SetTime::At(times.mtime)),
            ..SetAttr::default()
        });
        let upper = upper?;
        *self.upper.lock() = Some(upper.clone());
        restored?;
        Ok(upper)
    }

    /// Renames with the overlay lock held.
    fn rename_locked(&self, name: &[u8], dst_dir: &OverlayNode, new_name: &[u8], flags: u32) -> Result<(), Errno> {
        let src = self.lookup_child(name)?;
        let dst = found(dst_dir.lookup_child(new_name))?;
        let op = Rename { src_dir: self, src: &*src, dst_dir, dst: dst.as_deref(), flags };
        if !rename::check_rename(&op)? {
            return Ok(());
        }
        let exchange = flags & rename::RENAME_EXCHANGE != 0;
        let (src_upper, dst_upper) = (self.copy_up(u64::MAX)?, dst_dir.copy_up(u64::MAX)?);
        src.copy_up(u64::MAX)?;
        if let (true, Some(d)) = (exchange, &dst) {
            d.copy_up(u64::MAX)?;
        }
        let whiteout = !exchange && self.lower_has(name)?;
        let same = std::ptr::eq(self, dst_dir);
        let mut dirs = DirPair::lock(&self.dir, (!same).then_some(&dst_dir.dir), false);
        src_upper.rename(name, &dst_upper, new_name, flags & libc::RENAME_EXCHANGE)?;
        match (exchange, dst) {
            (true, Some(d)) => {
                dirs.src().children.insert(name.to_vec(), d.clone());
                d.set_place(self, name);
            }
            _ => {
                dirs.src().children.remove(name);
                if whiteout {
                    dirs.src().whiteouts.insert(name.to_vec());
                }
                dirs.dst().whiteouts.remove(new_name);
            }
        }
        dirs.dst().children.insert(new_name.to_vec(), src.clone());
        src.set_place(dst_dir, new_name);
        Ok(())
    }
}

impl RenameNode for OverlayNode {
    fn is_dir(&self) -> bool {
        OverlayNode::is_dir(self)
    }

    fn is_empty_dir(&self) -> Result<bool, Errno> {
        OverlayNode::is_empty_dir(self)
    }

    fn is_ancestor_of(&self, other: &OverlayNode) -> bool {
        OverlayNode::is_ancestor_of(self, other)
    }

    /// The same node, or hard links in the upper layer.
    fn same_file(&self, other: &OverlayNode) -> Result<bool, Errno> {
        if std::ptr::eq(self, other) {
            return Ok(true);
        }
        match (self.upper(), other.upper()) {
            (Some(x), Some(y)) => Ok(x.stat()?.ino == y.stat()?.ino),
            _ => Ok(false),
        }
    }

    fn movable(&self) -> bool {
        self.can_move()
    }
}

/// Copies the lower node `lower` to `name` in the upper directory `dir`
/// (at most `limit` bytes of data, no directory contents).
fn copy_node(dir: &Arc<dyn Node>, name: &[u8], lower: &Arc<dyn Node>, limit: u64) -> Result<Arc<dyn Node>, Errno> {
    let st = lower.stat()?;
    let new = NewNode { mode: st.mode, uid: st.uid, gid: st.gid };
    let kind = st.mode & S_IFMT;
    let upper = match kind {
        S_IFREG => dir.create(name, new)?,
        S_IFDIR => {
            dir.mkdir(name, new)?;
            dir.lookup(name)?
        }
        S_IFLNK => {
            dir.symlink(name, &lower.readlink()?, new)?;
            dir.lookup(name)?
        }
        _ => {
            dir.mknod(name, new, st.rdev)?;
            dir.lookup(name)?
        }
    };
    let filled = if kind == S_IFREG { copy_data(lower, &upper, st.size.min(limit)) } else { Ok(()) };
    let attr = SetAttr {
        mode: (kind != S_IFLNK).then_some(st.mode & 0o7777),
        uid: Some(st.uid),
        gid: Some(st.gid),
        size: None,
        atime: Some(SetTime::At(st.atime)),
        mtime: Some(SetTime::At(st.mtime)),
    };
    match filled.and_then(|()| upper.setattr(&attr)) {
        Ok(()) => Ok(upper),
        Err(e) => {
            let _ = dir.unlink(name, kind == S_IFDIR);
            Err(e)
        }
    }
}

/// Copies `len` bytes of `from`'s data to `to`.
fn copy_data(from: &Arc<dyn Node>, to: &Arc<dyn Node>, len: u64) -> Result<(), Errno> {
    let src = from.open(libc::O_RDONLY)?;
    let dst = to.open(libc::O_WRONLY)?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut off = 0u64;
    while off < len {
        let want = usize::try_from(len - off).map_or(COPY_CHUNK, |r| r.min(COPY_CHUNK));
        let n = src.read(&mut buf[..want], off)?;
        if n == 0 {
            break;
        }
        write_all(&*dst, &buf[..n], off)?;
        off += n as u64;
    }
    Ok(())
}

fn write_all(f: &dyn FileOps, mut buf: &[u8], mut off: u64) -> Result<(), Errno> {
    while !buf.is_empty() {
        let n = f.write(buf, off)?;
        if n == 0 {
            return Err(Errno::EIO);
        }
        buf = &buf[n..];
        off += n as u64;
    }
    Ok(())
}

impl Node for OverlayNode {
    fn stat(&self) -> Result<Stat, Errno> {
        let upper = self.upper();
        let merged = self.is_dir() && upper.is_some() && self.lower.is_some();
        let mut st = match (merged, &upper, &self.lower) {
            // A merged directory looks like the image's until changed: the
            // upper copy carries the lower's attributes from copy-up on.
            // Once entries were added or removed through the overlay its
            // link count is 1 ("unknown", as Linux reports it), since
            // neither layer's count is right any more.
            (true, Some(u), Some(l)) => {
                let (us, ls) = (u.stat()?, l.stat()?);
                let pristine = self.dir.lock().whiteouts.is_empty() && u.readdir()?.is_empty();
                let ctime = if us.mtime == ls.mtime { ls.ctime } else { us.ctime };
                Stat {
                    mode: us.mode,
                    uid: us.uid,
                    gid: us.gid,
                    atime: us.atime,
                    mtime: us.mtime,
                    ctime,
                    nlink: if pristine { ls.nlink } else { 1 },
                    ..ls
                }
            }
            _ => self.layer()?.stat()?,
        };
        st.dev = self.fs.dev;
        st.ino = self.ino;
        Ok(st)
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let node: Arc<dyn Node> = self.lookup_child(name)?;
        Ok(node)
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        self.require_dir()?;
        let st = self.dir.lock();
        let mut all: BTreeMap<Vec<u8>, DirEntry> = BTreeMap::new();
        if let Some(u) = self.upper() {
            for e in u.readdir()? {
                all.insert(e.name.clone(), DirEntry { ino: upper_ino(e.ino), ..e });
            }
        }
        if let Some(l) = &self.lower {
            for e in l.readdir()? {
                if !st.whiteouts.contains(&e.name) && !all.contains_key(&e.name) {
                    all.insert(e.name.clone(), e);
                }
            }
        }
        for (name, e) in all.iter_mut() {
            if let Some(c) = st.children.get(name) {
                e.ino = c.ino;
            }
        }
        Ok(all.into_values().collect())
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        self.layer()?.readlink()
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        if self.is_dir() && open_writes(flags) {
            return Err(Errno::EISDIR);
        }
        if self.kind == S_IFIFO {
            return self.fs.fifos.open((self.ino_dev, self.ino), self.ino, now(), flags);
        }
        let (ops, settled) = if self.kind == S_IFREG && open_writes(flags) {
            let _ns = self.fs.lock.lock();
            let limit = if flags & libc::O_TRUNC != 0 { 0 } else { u64::MAX };
            (self.copy_up(limit)?.open(flags)?, true)
        } else {
            let settled = self.kind != S_IFREG || self.upper().is_some();
            (self.layer()?.open(flags)?, settled)
        };
        let real = Current { ops, settled, map: None };
        Ok(Arc::new(OverlayFile(Arc::new(RealFile { node: self.arc()?, flags, cur: Mutex::new(real) }))))
    }

    fn create(&self, name: &[u8], new: NewNode) -> Result<Arc<dyn Node>, Errno> {
        let node: Arc<dyn Node> = self.create_entry(name, |dir| dir.create(name, new))?;
        Ok(node)
    }

    /// An `O_TMPFILE` file of the upper layer, in this directory (copied
    /// up); linking it links its upper file.
    fn tmpfile(&self, new: NewNode, linkable: bool) -> Result<Arc<dyn Node>, Errno> {
        let _ns = self.fs.lock.lock();
        let upper = self.copy_up(u64::MAX)?.tmpfile(new, linkable)?;
        let ust = upper.stat()?;
        let name = format!("#{}", ust.ino).into_bytes();
        let node: Arc<dyn Node> = self.child(
            &name,
            Layers { upper: Some(upper), lower: None, kind: S_IFREG, id: (UPPER_DEV, upper_ino(ust.ino)) },
        );
        Ok(node)
    }

    fn mkdir(&self, name: &[u8], new: NewNode) -> Result<(), Errno> {
        self.create_entry(name, |dir| {
            dir.mkdir(name, new)?;
            dir.lookup(name)
        })
        .map(drop)
    }

    fn mknod(&self, name: &[u8], new: NewNode, rdev: u64) -> Result<(), Errno> {
        self.create_entry(name, |dir| {
            dir.mknod(name, new, rdev)?;
            dir.lookup(name)
        })
        .map(drop)
    }

    fn symlink(&self, name: &[u8], target: &[u8], new: NewNode) -> Result<(), Errno> {
        self.create_entry(name, |dir| {
            dir.symlink(name, target, new)?;
            dir.lookup(name)
        })
        .map(drop)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Node>) -> Result<(), Errno> {
        let target = same_overlay(self, target)?;
        let _ns = self.fs.lock.lock();
        self.ensure_absent(name)?;
        if target.is_dir() {
            return Err(Errno::EPERM);
        }
        let upper = target.copy_up(u64::MAX)?;
        self.add_entry(name, Some((target.ino_dev, target.ino)), |dir| {
            dir.link(name, &upper)?;
            dir.lookup(name)
        })
        .map(drop)
    }

    fn unlink(&self, name: &[u8], dir: bool) -> Result<(), Errno> {
        let _ns = self.fs.lock.lock();
        let child = self.lookup_child(name)?;
        rename::check_remove(&*child, dir)?;
        let upper_dir = self.copy_up(u64::MAX)?;
        let whiteout = self.lower_has(name)?;
        let mut st = self.dir.lock();
        if child.upper().is_some() {
            upper_dir.unlink(name, dir)?;
        } else {
            upper_dir.setattr(&SetAttr { mtime: Some(SetTime::Now), ..SetAttr::default() })?;
        }
        if whiteout {
            st.whiteouts.insert(name.to_vec());
        }
        st.children.remove(name);
        Ok(())
    }

    fn rename(&self, name: &[u8], new_dir: &Arc<dyn Node>, new_name: &[u8], flags: u32) -> Result<(), Errno> {
        rename::check_flags(flags)?;
        let dst_dir = same_overlay(self, new_dir)?;
        self.require_dir()?;
        dst_dir.require_dir()?;
        let _ns = self.fs.lock.lock();
        self.rename_locked(name, &dst_dir, new_name, flags)
    }

    fn setattr(&self, attr: &SetAttr) -> Result<(), Errno> {
        let _ns = self.fs.lock.lock();
        self.copy_up(attr.size.unwrap_or(u64::MAX))?.setattr(attr)
    }

    fn getxattr(&self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.layer()?.getxattr(name)
    }

    /// Stored on the upper layer, after a copy-up.
    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> Result<(), Errno> {
        let _ns = self.fs.lock.lock();
        self.copy_up(u64::MAX)?.setxattr(name, value, flags)
    }

    fn listxattr(&self) -> Result<Vec<Vec<u8>>, Errno> {
        self.layer()?.listxattr()
    }

    fn removexattr(&self, name: &[u8]) -> Result<(), Errno> {
        let _ns = self.fs.lock.lock();
        if self.upper().is_none() {
            // Nothing to copy up for a name the lower layer lacks.
            self.layer()?.getxattr(name)?;
        }
        self.copy_up(u64::MAX)?.removexattr(name)
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        let mut s = self.fs.upper_root.statfs()?;
        s.fs_type = OVERLAYFS_SUPER_MAGIC;
        Ok(s)
    }

    fn fs_id(&self) -> usize {
        self.fs.id
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Copies the extended attributes of a node being copied up (Linux's
/// `ovl_copy_xattr`); a lower layer that has none has nothing to copy.
fn copy_xattrs(lower: &Arc<dyn Node>, upper: &Arc<dyn Node>) -> Result<(), Errno> {
    for name in lower.listxattr()? {
        match lower.getxattr(&name) {
            Ok(v) => upper.setxattr(&name, &v, 0)?,
            Err(Errno::ENODATA) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `other` as a node of the same overlay as `node`, else `EXDEV`.
fn same_overlay(node: &OverlayNode, other: &Arc<dyn Node>) -> Result<Arc<OverlayNode>, Errno> {
    let other = other.as_any().downcast_ref::<OverlayNode>().ok_or(Errno::EXDEV)?;
    if !Arc::ptr_eq(&other.fs, &node.fs) {
        return Err(Errno::EXDEV);
    }
    other.arc()
}

/// The layer's file behind an open overlay file.
struct Current {
    ops: Arc<dyn FileOps>,
    /// No later copy-up can change which file this is.
    settled: bool,
    map: Option<Arc<dyn Mappable>>,
}

/// An open overlay file. A read-only open of a lower-only file moves to the
/// upper copy once the file is copied up, as in Linux.
struct RealFile {
    node: Arc<OverlayNode>,
    flags: i32,
    cur: Mutex<Current>,
}

impl RealFile {
    /// The current file of the layer shown, reopened after a copy-up.
    fn current(&self) -> Result<MutexGuard<'_, Current>, Errno> {
        let mut cur = self.cur.lock();
        if !cur.settled {
            if let Some(upper) = self.node.upper() {
                cur.ops = upper.open(self.flags & !(libc::O_TRUNC | libc::O_CREAT | libc::O_EXCL))?;
                cur.settled = true;
                cur.map = None;
            }
        }
        Ok(cur)
    }

    fn ops(&self) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(self.current()?.ops.clone())
    }

    fn mappable(&self) -> Result<Option<Arc<dyn Mappable>>, Errno> {
        let mut cur = self.current()?;
        if cur.map.is_none() {
            cur.map = cur.ops.mappable();
        }
        Ok(cur.map.clone())
    }
}

struct OverlayFile(Arc<RealFile>);

impl FileOps for OverlayFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        self.0.ops()?.read(buf, off)
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        self.0.ops()?.write(buf, off)
    }

    fn seekable(&self) -> bool {
        self.0.cur.lock().ops.seekable()
    }

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        self.0.ops()?.ioctl(ctx, req, arg)
    }

    fn truncate(&self, len: u64) -> Result<(), Errno> {
        self.0.ops()?.truncate(len)
    }

    /// The upper layer is a tmpfs, which (as Linux's) cannot zero a range
    /// in one step; the overlay stands for a disk filesystem, which can:
    /// it punches the hole and holds the range anew.
    fn allocate(&self, off: u64, len: u64, how: Allocate) -> Result<(), Errno> {
        let ops = self.0.ops()?;
        match how {
            Allocate::ZeroRange { keep_size } => {
                ops.allocate(off, len, Allocate::PunchHole)?;
                ops.allocate(off, len, Allocate::Reserve { keep_size })
            }
            how => ops.allocate(off, len, how),
        }
    }

    fn fsync(&self) -> Result<(), Errno> {
        self.0.ops()?.fsync()
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        self.0.mappable().ok().flatten()?;
        Some(Arc::new(OverlayMappable(self.0.clone())))
    }
}

/// A mapping of an overlay file: the data of the layer shown, named and
/// numbered as the overlay shows the file.
struct OverlayMappable(Arc<RealFile>);

impl Mappable for OverlayMappable {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.0.mappable()?.ok_or(Errno::ENODEV)?.read_at(off, buf)
    }

    fn map_name(&self) -> String {
        self.0.node.path()
    }

    fn map_ids(&self) -> (u64, u64) {
        (self.0.node.fs.dev, self.0.node.ino)
    }

    fn size(&self) -> Option<u64> {
        self.0.mappable().ok().flatten()?.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::read_only::ReadOnly;
    use crate::fs::tmpfs::Tmpfs;

    fn nn(mode: u32) -> NewNode {
        NewNode { mode, uid: 7, gid: 8 }
    }

    fn write(dir: &Arc<dyn Node>, name: &str, data: &[u8]) -> Arc<dyn Node> {
        let n = dir.create(name.as_bytes(), nn(0o640)).unwrap();
        n.open(libc::O_WRONLY).unwrap().write(data, 0).unwrap();
        n
    }

    fn read(n: &Arc<dyn Node>) -> Vec<u8> {
        let f = n.open(libc::O_RDONLY).unwrap();
        let mut buf = vec![0; 1 << 16];
        let len = f.read(&mut buf, 0).unwrap();
        buf.truncate(len);
        buf
    }

    fn at(dir: &Arc<dyn Node>, path: &str) -> Arc<dyn Node> {
        path.split('/').fold(dir.clone(), |d, c| d.lookup(c.as_bytes()).unwrap())
    }

    fn names(dir: &Arc<dyn Node>) -> Vec<String> {
        dir.readdir().unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect()
    }

    fn err<T>(r: Result<T, Errno>) -> Errno {
        r.err().unwrap()
    }

    /// The lower tmpfs (for inspection) and an overlay over it:
    /// /etc/{passwd,hosts}, /etc/empty/, /bin/sh -> busybox, /bin/busybox,
    /// /data/deep/file, /dev/null (char).
    fn setup() -> (Arc<dyn Node>, Arc<dyn Node>) {
        let lower = Tmpfs::new(0o755, 0, 0);
        lower.mkdir(b"etc", nn(0o755)).unwrap();
        let etc = at(&lower, "etc");
        write(&etc, "passwd", b"root:x:0:0");
        write(&etc, "hosts", b"127.0.0.1 localhost");
        etc.mkdir(b"empty", nn(0o700)).unwrap();
        lower.mkdir(b"bin", nn(0o755)).unwrap();
        let bin = at(&lower, "bin");
        write(&bin, "busybox", b"\x7fELF");
        bin.symlink(b"sh", b"busybox", nn(0)).unwrap();
        lower.mkdir(b"data", nn(0o750)).unwrap();
        at(&lower, "data").mkdir(b"deep", nn(0o751)).unwrap();
        write(&at(&lower, "data/deep"), "file", b"deep data");
        lower.mkdir(b"dev", nn(0o755)).unwrap();
        at(&lower, "dev").mknod(b"null", nn(libc::S_IFCHR | 0o666), 0x103).unwrap();
        let ro = ReadOnly::wrap(lower.clone());
        (lower, new_overlay(Tmpfs::new(0o755, 0, 0), ro))
    }

    /// Extended attributes: the lower layer's show through, a change
    /// copies the node up with them, and the lower layer keeps its own.
    #[test]
    fn xattrs_copy_up() {
        let (lower, ov) = setup();
        let lp = at(&lower, "etc/passwd");
        lp.setxattr(b"user.a", b"1", 0).unwrap();
        lp.setxattr(b"trusted.b", b"2", 0).unwrap();
        let p = at(&ov, "etc/passwd");
        assert_eq!(p.getxattr(b"user.a").unwrap(), b"1");
        assert_eq!(err(p.removexattr(b"user.none")), Errno::ENODATA);
        p.setxattr(b"user.c", b"3", 0).unwrap();
        let mut names = p.listxattr().unwrap();
        names.sort();
        assert_eq!(names, [b"trusted.b".to_vec(), b"user.a".to_vec(), b"user.c".to_vec()]);
        p.removexattr(b"user.a").unwrap();
        assert_eq!(err(p.getxattr(b"user.a")), Errno::ENODATA);
        assert_eq!(lp.getxattr(b"user.a").unwrap(), b"1", "the lower layer is never written");
        assert_eq!(err(lp.getxattr(b"user.c")), Errno::ENODATA);
        assert_eq!(err(p.setxattr(b"user.c", b"4", 1)), Errno::EEXIST, "XATTR_CREATE");
        assert_eq!(err(p.setxattr(b"user.d", b"4", 2)), Errno::ENODATA, "XATTR_REPLACE");
    }

    #[test]
    fn lookup_merged_view() {
        let (_, ov) = setup();
        assert_eq!(names(&ov), ["bin", "data", "dev", "etc"]);
        assert_eq!(read(&at(&ov, "etc/passwd")), b"root:x:0:0");
        assert_eq!(at(&ov, "bin/sh").readlink().unwrap(), b"busybox");
        assert_eq!(err(ov.lookup(b"nope")), Errno::ENOENT);
        write(&at(&ov, "etc"), "new", b"n");
        assert_eq!(names(&at(&ov, "etc")), ["empty", "hosts", "new", "passwd"]);
        assert!(Arc::ptr_eq(&at(&ov, "etc/passwd"), &at(&ov, "etc/passwd")));
        assert_eq!(err(at(&ov, "etc/passwd").lookup(b"x")), Errno::ENOTDIR);
        assert_eq!(err(ov.create(b"etc", nn(0o644))), Errno::EEXIST);
        assert_eq!(err(ov.mkdir(b"bin", nn(0o755))), Errno::EEXIST);
        let st = at(&ov, "dev/null").stat().unwrap();
        assert_eq!((st.mode, st.rdev), (libc::S_IFCHR | 0o666, 0x103));
    }

    #[test]
    fn stat_identity() {
        let (lower, ov) = setup();
        let st = at(&ov, "etc/passwd").stat().unwrap();
        let lst = at(&lower, "etc/passwd").stat().unwrap();
        assert_ne!(st.dev, lst.dev);
        assert_eq!(st.dev, ov.stat().unwrap().dev);
        assert_eq!((st.ino, st.size, st.mode, st.uid), (lst.ino, lst.size, lst.mode, lst.uid));
        assert_eq!(ov.statfs().unwrap().fs_type, OVERLAYFS_SUPER_MAGIC);
        let (_, other) = setup();
        assert_ne!(ov.fs_id(), other.fs_id());
        assert_ne!(ov.stat().unwrap().dev, other.stat().unwrap().dev);
        write(&ov, "top", b"");
        let e = ov.readdir().unwrap();
        let top = e.iter().find(|e| e.name == b"top").unwrap();
        assert_eq!(top.ino, at(&ov, "top").stat().unwrap().ino);
        let etc = e.iter().find(|e| e.name == b"etc").unwrap();
        assert_eq!(etc.ino, at(&lower, "etc").stat().unwrap().ino);
    }

    #[test]
    fn write_copies_up() {
        let (lower, ov) = setup();
        let f = at(&ov, "data/deep/file");
        let ino = f.stat().unwrap().ino;
        let t = at(&lower, "data/deep/file").stat().unwrap();
        let reader = f.open(libc::O_RDONLY).unwrap();
        f.open(libc::O_RDWR).unwrap().write(b"DEEP", 0).unwrap();
        let st = f.stat().unwrap();
        assert_eq!((st.ino, st.mode, st.uid, st.gid, st.atime), (ino, t.mode, t.uid, t.gid, t.atime));
        assert_eq!(read(&f), b"DEEP data");
        assert_eq!(read(&at(&ov, "data/deep/file")), b"DEEP data");
        assert_eq!(read(&at(&lower, "data/deep/file")), b"deep data");
        let mut buf = [0u8; 4];
        reader.read(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"DEEP");
        let d = at(&ov, "data/deep").stat().unwrap();
        let ld = at(&lower, "data/deep").stat().unwrap();
        assert_eq!((d.mode, d.uid, d.mtime, d.nlink), (ld.mode, ld.uid, ld.mtime, 1));
    }

    #[test]
    fn setattr_copies_up() {
        let (lower, ov) = setup();
        let sh = at(&ov, "bin/sh");
        sh.setattr(&SetAttr { uid: Some(42), ..SetAttr::default() }).unwrap();
        assert_eq!(sh.stat().unwrap().uid, 42);
        assert_eq!(sh.readlink().unwrap(), b"busybox");
        assert_eq!(at(&lower, "bin/sh").stat().unwrap().uid, 7);
        let null = at(&ov, "dev/null");
        null.setattr(&SetAttr { mode: Some(0o600), ..SetAttr::default() }).unwrap();
        assert_eq!(null.stat().unwrap().mode, libc::S_IFCHR | 0o600);
        assert_eq!(null.stat().unwrap().rdev, 0x103);
        let hosts = at(&ov, "etc/hosts");
        hosts.setattr(&SetAttr { size: Some(9), ..SetAttr::default() }).unwrap();
        assert_eq!(read(&hosts), b"127.0.0.1");
        assert_eq!(read(&at(&lower, "etc/hosts")), b"127.0.0.1 localhost");
    }

    #[test]
    fn o_trunc_open_of_lower_file() {
        let (lower, ov) = setup();
        let f = at(&ov, "etc/passwd");
        let ino = f.stat().unwrap().ino;
        f.open(libc::O_WRONLY | libc::O_TRUNC).unwrap();
        assert_eq!(f.stat().unwrap().size, 0);
        assert_eq!(f.stat().unwrap().ino, ino);
        assert_eq!(read(&at(&lower, "etc/passwd")), b"root:x:0:0");
    }

    #[test]
    fn unlink_hides_lower() {
        let (lower, ov) = setup();
        let etc = at(&ov, "etc");
        etc.unlink(b"passwd", false).unwrap();
        assert_eq!(err(etc.lookup(b"passwd")), Errno::ENOENT);
        assert_eq!(names(&etc), ["empty", "hosts"]);
        assert_eq!(read(&at(&lower, "etc/passwd")), b"root:x:0:0");
        assert_eq!(err(etc.unlink(b"passwd", false)), Errno::ENOENT);
        assert_eq!(err(etc.unlink(b"empty", false)), Errno::EISDIR);
        assert_eq!(err(etc.unlink(b"hosts", true)), Errno::ENOTDIR);
        write(&etc, "passwd", b"new");
        assert_eq!(read(&at(&ov, "etc/passwd")), b"new");
        assert_eq!(names(&etc), ["empty", "hosts", "passwd"]);
        etc.unlink(b"passwd", false).unwrap();
        assert_eq!(err(etc.lookup(b"passwd")), Errno::ENOENT);
        assert_eq!(read(&at(&lower, "etc/passwd")), b"root:x:0:0");
    }

    #[test]
    fn rmdir_then_mkdir_is_opaque() {
        let (lower, ov) = setup();
        assert_eq!(err(ov.unlink(b"data", true)), Errno::ENOTEMPTY);
        let deep = at(&ov, "data/deep");
        deep.unlink(b"file", false).unwrap();
        at(&ov, "data").unlink(b"deep", true).unwrap();
        ov.unlink(b"data", true).unwrap();
        assert_eq!(err(ov.lookup(b"data")), Errno::ENOENT);
        ov.mkdir(b"data", nn(0o700)).unwrap();
        let data = at(&ov, "data");
        assert!(names(&data).is_empty());
        assert_eq!(err(data.lookup(b"deep")), Errno::ENOENT);
        assert_eq!(data.stat().unwrap().mode, S_IFDIR | 0o700);
        assert_eq!(names(&at(&lower, "data/deep")), ["file"]);
        ov.unlink(b"data", true).unwrap();
        assert_eq!(err(ov.lookup(b"data")), Errno::ENOENT);
    }

    #[test]
    fn rename_lower_file() {
        let (lower, ov) = setup();
        let etc = at(&ov, "etc");
        let f = at(&ov, "etc/hosts");
        let ino = f.stat().unwrap().ino;
        etc.rename(b"hosts", &ov, b"hosts2", 0).unwrap();
        assert_eq!(err(etc.lookup(b"hosts")), Errno::ENOENT);
        let moved = at(&ov, "hosts2");
        assert!(Arc::ptr_eq(&moved, &f));
        assert_eq!(read(&moved), b"127.0.0.1 localhost");
        assert_eq!(moved.stat().unwrap().ino, ino);
        assert_eq!(names(&etc), ["empty", "passwd"]);
        assert_eq!(read(&at(&lower, "etc/hosts")), b"127.0.0.1 localhost");
        ov.rename(b"hosts2", &etc, b"passwd", 0).unwrap();
        assert_eq!(read(&at(&ov, "etc/passwd")), b"127.0.0.1 localhost");
        assert_eq!(names(&etc), ["empty", "passwd"]);
        let mut buf = [0u8; 64];
        let m = moved.open(libc::O_RDONLY).unwrap().mappable().unwrap();
        assert_eq!(m.read_at(0, &mut buf).unwrap(), 19);
        assert_eq!(m.map_name(), "/etc/passwd");
        assert_eq!(m.map_ids(), (ov.stat().unwrap().dev, ino));
    }

    #[test]
    fn rename_rules() {
        let (_, ov) = setup();
        let etc = at(&ov, "etc");
        assert_eq!(err(ov.rename(b"etc", &ov, b"etc2", 0)), Errno::EXDEV);
        assert_eq!(err(etc.rename(b"passwd", &etc, b"hosts", libc::RENAME_NOREPLACE)), Errno::EEXIST);
        assert_eq!(err(etc.rename(b"passwd", &etc, b"empty", 0)), Errno::EISDIR);
        assert_eq!(err(ov.rename(b"etc", &ov, b"bin", 0)), Errno::EXDEV);
        assert_eq!(err(etc.rename(b"nope", &etc, b"x", 0)), Errno::ENOENT);
        assert_eq!(err(etc.rename(b"passwd", &Tmpfs::new(0o755, 0, 0), b"x", 0)), Errno::EXDEV);
        ov.mkdir(b"new", nn(0o755)).unwrap();
        write(&at(&ov, "new"), "f", b"f");
        ov.rename(b"new", &etc, b"moved", 0).unwrap();
        assert_eq!(read(&at(&ov, "etc/moved/f")), b"f");
        assert_eq!(err(etc.rename(b"moved", &at(&ov, "etc/moved"), b"x", 0)), Errno::EINVAL);
        ov.mkdir(b"d2", nn(0o755)).unwrap();
        assert_eq!(err(ov.rename(b"d2", &etc, b"moved", 0)), Errno::ENOTEMPTY);
        assert_eq!(err(ov.rename(b"d2", &etc, b"passwd", 0)), Errno::ENOTDIR);
        etc.rename(b"passwd", &etc, b"hosts", libc::RENAME_EXCHANGE).unwrap();
        assert_eq!(read(&at(&ov, "etc/hosts")), b"root:x:0:0");
        assert_eq!(read(&at(&ov, "etc/passwd")), b"127.0.0.1 localhost");
        ov.rename(b"d2", &etc, b"empty", 0).unwrap();
        assert_eq!(names(&etc), ["empty", "hosts", "moved", "passwd"]);
    }

    #[test]
    fn link_copies_up_target() {
        let (lower, ov) = setup();
        let busybox = at(&ov, "bin/busybox");
        ov.link(b"bb", &busybox).unwrap();
        assert_eq!(at(&ov, "bb").stat().unwrap().ino, busybox.stat().unwrap().ino);
        assert_eq!(busybox.stat().unwrap().nlink, 2);
        at(&ov, "bb").open(libc::O_WRONLY).unwrap().write(b"X", 0).unwrap();
        assert_eq!(read(&busybox), b"XELF");
        assert_eq!(at(&lower, "bin/busybox").stat().unwrap().nlink, 1);
        assert_eq!(err(ov.link(b"e", &at(&ov, "etc"))), Errno::EPERM);
        assert_eq!(err(ov.link(b"bb", &busybox)), Errno::EEXIST);
        assert_eq!(err(ov.link(b"z", &at(&lower, "etc/passwd"))), Errno::EXDEV);
    }

    #[test]
    fn create_kinds_in_lower_dir() {
        let (lower, ov) = setup();
        let dev = at(&ov, "dev");
        dev.mknod(b"fifo", nn(libc::S_IFIFO | 0o600), 0).unwrap();
        dev.symlink(b"fd", b"/proc/self/fd", nn(0)).unwrap();
        assert_eq!(names(&dev), ["fd", "fifo", "null"]);
        assert_eq!(at(&ov, "dev/fd").readlink().unwrap(), b"/proc/self/fd");
        assert_eq!(names(&at(&lower, "dev")), ["null"]);
        assert_eq!(err(at(&ov, "dev/fifo").open(libc::O_WRONLY | libc::O_NONBLOCK)), Errno::ENXIO);
        assert_eq!(err(at(&ov, "etc/empty").open(libc::O_RDWR)), Errno::EISDIR);
        let dir = at(&ov, "etc").open(libc::O_RDONLY).unwrap();
        assert_eq!(err(dir.read(&mut [0; 4], 0)), Errno::EISDIR);
    }

    /// A FIFO's pipe is the overlay node's: opens of the lower FIFO, of a
    /// hard link to it and after the copy-up the link made meet at one
    /// pipe.
    #[test]
    fn a_fifo_is_one_pipe_across_layers_and_links() {
        let (lower, ov) = setup();
        at(&lower, "dev").mknod(b"fifo", nn(libc::S_IFIFO | 0o600), 0).unwrap();
        let reader = at(&ov, "dev/fifo").open(libc::O_RDONLY | libc::O_NONBLOCK).unwrap();
        ov.link(b"again", &at(&ov, "dev/fifo")).unwrap();
        let writer = at(&ov, "again").open(libc::O_WRONLY | libc::O_NONBLOCK).unwrap();
        assert_eq!(writer.write(b"one", 0).unwrap(), 3);
        let mut buf = [0; 8];
        assert_eq!(reader.read(&mut buf, 0).unwrap(), 3);
        assert_eq!(&buf[..3], b"one");
        let writer2 = at(&ov, "dev/fifo").open(libc::O_WRONLY | libc::O_NONBLOCK).unwrap();
        assert_eq!(writer2.write(b"two", 0).unwrap(), 3);
        assert_eq!(reader.read(&mut buf, 0).unwrap(), 3);
        drop((reader, writer, writer2));
        assert_eq!(err(at(&ov, "again").open(libc::O_WRONLY | libc::O_NONBLOCK)), Errno::ENXIO);
    }

    /// A lower layer spanning two host devices, as `husk do`'s host root
    /// does: its entries are FIFOs with the same inode number on each.
    struct TwoDevices {
        st: Stat,
    }

    impl Node for TwoDevices {
        fn stat(&self) -> Result<Stat, Errno> {
            Ok(self.st)
        }

        fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
            let dev = match name {
                b"a" => 1,
                b"b" => 2,
                _ => return Err(Errno::ENOENT),
            };
            Ok(Arc::new(TwoDevices { st: Stat { dev, ino: 7, mode: libc::S_IFIFO | 0o600, ..self.st } }))
        }

        fn fs_id(&self) -> usize {
            0
        }

        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    /// Two lower FIFOs with one inode number on different devices are two
    /// pipes, as on Linux.
    #[test]
    fn fifos_of_different_lower_devices_are_different_pipes() {
        let lower = TwoDevices { st: Stat { dev: 1, ino: 2, mode: S_IFDIR | 0o755, ..Stat::default() } };
        let ov = new_overlay(Tmpfs::new(0o755, 0, 0), Arc::new(lower));
        let reader = at(&ov, "a").open(libc::O_RDONLY | libc::O_NONBLOCK).unwrap();
        assert_eq!(
            err(at(&ov, "b").open(libc::O_WRONLY | libc::O_NONBLOCK)),
            Errno::ENXIO,
            "b has no reader: a's reader is another FIFO's"
        );
        let writer = at(&ov, "a").open(libc::O_WRONLY | libc::O_NONBLOCK).unwrap();
        assert_eq!(writer.write(b"x", 0).unwrap(), 1);
        let mut buf = [0; 2];
        assert_eq!(reader.read(&mut buf, 0).unwrap(), 1);
    }
}
