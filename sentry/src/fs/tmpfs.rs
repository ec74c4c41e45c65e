//! tmpfs: a filesystem whose files live in sentry memory.
//!
//! Directories are sorted maps of names to nodes, regular files are
//! sparse maps of pages: a page is allocated when first written, and
//! charged to the sandbox's memory accountant until it is truncated away
//! or the file's last reference goes. A write the charge refuses fails with
//! ENOSPC, as Linux's tmpfs fails at its size. A tmpfs the guest writes
//! to as a disk (/tmp, /dev/shm, the overlay's upper layer) also charges
//! its pages and nodes to the sandbox's disk budget (`--disk-limit`), whose
//! limit `statfs` then shows as its size. Every operation fails the way
//! Linux's shmem fails it.

use super::disk::{DiskBudget, DiskCharge};
use super::pipe::FifoSlot;
use super::seals::Seals;
use crate::abi::limits::NAME_MAX;
use crate::abi::xattr::{XATTR_CREATE, XATTR_REPLACE};
use crate::abi::{Errno, PAGE_SIZE};
use crate::mm::accounting::{self, Accountant, Charge};
use crate::mm::page_cache::{PageCache, SharedPages};
use crate::mm::{Mappable, MemoryFile, WriteHold};
use crate::vfs::file::DirFile;
use crate::vfs::rename::{self, Rename, RenameNode};
use crate::vfs::{
    dtype, Allocate, DirEntry, FileOps, NewNode, Node, SetAttr, SetTime, Stat, StatFs, TimeSpec, S_IFBLK, S_IFCHR,
    S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK,
};
use parking_lot::{Mutex, MutexGuard};
use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `f_type` of a tmpfs (`TMPFS_MAGIC`).
pub(crate) const TMPFS_MAGIC: u64 = 0x0102_1994;

/// What a directory's size grows by per entry ("." and ".." count too),
/// as Linux's `BOGO_DIRENT_SIZE`.
const BOGO_DIRENT_SIZE: u64 = 20;
/// Symlink targets shorter than this take no block (Linux stores them inline).
const SHORT_SYMLINK_LEN: usize = 128;
/// The largest file size (`MAX_LFS_FILESIZE`).
const MAX_FILE_SIZE: u64 = i64::MAX.unsigned_abs();
/// Capacity reported by `statfs` while the sandbox has no memory limit:
/// 8 GiB.
const NOMINAL_BLOCKS: u64 = 1 << 21;
/// Inodes reported by `statfs`.
const NOMINAL_INODES: u64 = 1 << 20;
/// `relatime`: the access time is also refreshed once it is a day old.
const ATIME_MAX_AGE: i64 = 24 * 60 * 60;
/// What an inode costs the sandbox's memory besides its name (the node,
/// its directory entry and their bookkeeping), so that empty files,
/// directories and symlinks are bounded by the limit too.
const INODE_COST: u64 = 512;

/// The bookkeeping an extended attribute costs besides its name and
/// value (the map entry and two allocations).
const XATTR_ENTRY_COST: u64 = 96;
/// What an inode's extended attributes, in all namespaces, may take
/// together: room for one value of the largest size (64 KiB) with its
/// name, as Linux tmpfs bounds its inodes' xattr space.
const XATTR_INODE_MAX: u64 = 128 * 1024;

/// What the extended attribute `name` = `value` is charged.
fn xattr_cost(name: &[u8], value: &[u8]) -> u64 {
    (name.len() + value.len()) as u64 + XATTR_ENTRY_COST
}

/// What each hard link past a node's first name costs: an entry and the
/// longest name, whatever its own, so that unlinking any of the names
/// returns the same amount.
const LINK_COST: u64 = 256 + NAME_MAX as u64;
/// The first minor number of the anonymous devices handed out here.
const ANON_MINOR_BASE: u32 = 0x100;

static NEXT_FS_ID: AtomicUsize = AtomicUsize::new(1);

/// A new filesystem identity for [`Node::fs_id`], unique in the sentry.
pub(crate) fn new_fs_id() -> usize {
    NEXT_FS_ID.fetch_add(1, Ordering::Relaxed)
}

/// The anonymous device number (major 0) that filesystem `id` reports as
/// `st_dev`.
pub(crate) fn anon_dev(id: usize) -> u64 {
    let minor = u32::try_from(id).map_or(u32::MAX, |i| i.saturating_add(ANON_MINOR_BASE));
    libc::makedev(0, minor)
}

/// Whether open(2) `flags` ask for write access (`O_TRUNC` does too).
pub(crate) fn open_writes(flags: i32) -> bool {
    flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0
}

/// The current realtime clock.
pub(crate) fn now() -> TimeSpec {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    TimeSpec { sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), nsec: i64::from(d.subsec_nanos()) }
}

fn time_key(t: TimeSpec) -> (i64, i64) {
    (t.sec, t.nsec)
}

fn resolve_time(t: SetTime, now: TimeSpec) -> TimeSpec {
    match t {
        SetTime::Now => now,
        SetTime::At(t) => t,
    }
}

/// Pages needed for `len` bytes.
fn pages(len: u64) -> u64 {
    len.div_ceil(PAGE_SIZE)
}

fn page_len() -> usize {
    usize::try_from(PAGE_SIZE).unwrap_or(4096)
}

/// A regular file's contents: its size and the pages written so far. A
/// page never written (or beyond the last write, after a truncate that
/// grew the file) is a hole and reads as zeros; every page held is
/// charged to the sandbox's memory and to its disk budget.
///
/// A hole a MAP_SHARED mapping faults in is held by the mapping's frame
/// (charged to memory as guest memory) and, as Linux's shmem allocates
/// the page at the fault, is charged to the disk budget from then on
/// (`mapped`): stores through mappings cannot grow a file past the disk
/// limit. Such a page becomes an ordinary one when the file is written.
struct FileData {
    len: u64,
    pages: BTreeMap<u64, Box<[u8]>>,
    /// Holes held by shared mappings' frames, charged to `disk` alone.
    mapped: BTreeSet<u64>,
    charge: Charge,
    disk: DiskCharge,
}

impl FileData {
    fn new(acct: Arc<Accountant>, disk: Option<Arc<DiskBudget>>) -> FileData {
        FileData {
            len: 0,
            pages: BTreeMap::new(),
            mapped: BTreeSet::new(),
            charge: Charge::new(acct),
            disk: DiskCharge::new(disk),
        }
    }

    /// Pages held, by the file or by its shared mappings.
    fn held(&self) -> u64 {
        (self.pages.len() + self.mapped.len()) as u64
    }

    /// A shared mapping faults page `index` in: a hole is charged to the
    /// disk budget (ENOSPC past it, which the fault turns into SIGBUS).
    fn hold_mapped(&mut self, index: u64) -> Result<(), Errno> {
        if self.pages.contains_key(&index) || self.mapped.contains(&index) {
            return Ok(());
        }
        if !self.disk.grow(PAGE_SIZE) {
            return Err(Errno::ENOSPC);
        }
        self.mapped.insert(index);
        Ok(())
    }

    /// Charges a page the file is to hold at `index`: one a mapping
    /// holds already has its disk charge and costs memory alone.
    fn charge_new(&mut self, index: u64) -> bool {
        if self.mapped.remove(&index) {
            if self.charge.grow(PAGE_SIZE) {
                return true;
            }
            self.mapped.insert(index);
            return false;
        }
        charge_page(&mut self.charge, &mut self.disk)
    }

    /// Gives back the charge of a page `charge_new` took at `index`,
    /// `was_mapped` as it was before.
    fn uncharge_new(&mut self, index: u64, was_mapped: bool) {
        self.charge.shrink(PAGE_SIZE);
        if was_mapped {
            self.mapped.insert(index);
        } else {
            self.disk.shrink(PAGE_SIZE);
        }
    }

    /// Copies bytes at `off` into `buf`, preferring the frames of shared
    /// mappings (`cache`), which hold stores made through them.
    fn read(&self, buf: &mut [u8], off: u64, cache: Option<&PageCache>) -> usize {
        let n = u64::try_from(buf.len()).unwrap_or(u64::MAX).min(self.len.saturating_sub(off));
        let mut done = 0u64;
        while done < n {
            let pos = off + done;
            let (index, from) = (pos / PAGE_SIZE, pos % PAGE_SIZE);
            let take = (PAGE_SIZE - from).min(n - done);
            let (Ok(a), Ok(b), Ok(f)) = (usize::try_from(done), usize::try_from(done + take), usize::try_from(from))
            else {
                break;
            };
            let dst = &mut buf[a..b];
            if !cache.is_some_and(|c| c.read_cached(index, from, dst)) {
                match self.pages.get(&index) {
                    Some(p) => dst.copy_from_slice(&p[f..f + dst.len()]),
                    None => dst.fill(0),
                }
            }
            done += take;
        }
        usize::try_from(done).unwrap_or(0)
    }

    /// Writes `buf` at `off`, allocating (and charging) pages as needed;
    /// stops at the first page the charge refuses: ENOSPC if nothing was
    /// written.
    fn write(&mut self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        let n = buf.len();
        let mut done = 0usize;
        while done < n {
            let pos = off + done as u64;
            let (index, from) = (pos / PAGE_SIZE, pos % PAGE_SIZE);
            let f = usize::try_from(from).map_err(|_| Errno::EFBIG)?;
            let take = (page_len() - f).min(n - done);
            if !self.pages.contains_key(&index) {
                if !self.charge_new(index) {
                    break;
                }
                self.pages.insert(index, vec![0u8; page_len()].into_boxed_slice());
            }
            let Some(page) = self.pages.get_mut(&index) else { break };
            page[f..f + take].copy_from_slice(&buf[done..done + take]);
            done += take;
        }
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        self.len = self.len.max(off + done as u64);
        Ok(done)
    }

    /// Holds (and charges) every page of `first..end` not held yet; if one
    /// is refused, lets go of those this call took and fails with ENOSPC,
    /// as Linux's shmem_fallocate.
    fn allocate(&mut self, first: u64, end: u64) -> Result<(), Errno> {
        let mut taken = Vec::new();
        for index in first..end {
            if self.pages.contains_key(&index) {
                continue;
            }
            let was_mapped = self.mapped.contains(&index);
            if !self.charge_new(index) {
                for (i, was_mapped) in taken {
                    self.pages.remove(&i);
                    self.uncharge_new(i, was_mapped);
                }
                return Err(Errno::ENOSPC);
            }
            self.pages.insert(index, vec![0u8; page_len()].into_boxed_slice());
            taken.push((index, was_mapped));
        }
        Ok(())
    }

    /// Zeroes `off..end`: the pages wholly inside are let go (with their
    /// charges), the bytes of those at its edges are zeroed. Holes that
    /// shared mappings hold stay held (their frames are zeroed instead).
    fn punch(&mut self, off: u64, end: u64) {
        let (first, last) = (off.div_ceil(PAGE_SIZE), end / PAGE_SIZE);
        if first < last {
            let gone: Vec<u64> = self.pages.range(first..last).map(|(&i, _)| i).collect();
            for i in &gone {
                self.pages.remove(i);
            }
            let bytes = gone.len() as u64 * PAGE_SIZE;
            self.charge.shrink(bytes);
            self.disk.shrink(bytes);
        }
        for index in [off / PAGE_SIZE, (end - 1) / PAGE_SIZE] {
            let start = index * PAGE_SIZE;
            let (a, b) = (off.max(start) - start, end.min(start + PAGE_SIZE) - start);
            if let (Some(p), Ok(a), Ok(b)) = (self.pages.get_mut(&index), usize::try_from(a), usize::try_from(b)) {
                p[a..b].fill(0);
            }
        }
    }

    /// Sets the size: growth is a hole, shrinking frees the pages past the
    /// end and zeroes the tail of the last one. A page past the end that
    /// a shared mapping's frame holds (`framed`) keeps its disk charge:
    /// stores through a mapping that has it reach the frame without a
    /// fault, and would show again if the file grew back.
    fn set_len(&mut self, len: u64, framed: impl Fn(u64) -> bool) {
        if len < self.len {
            let gone = self.pages.split_off(&pages(len));
            let unmapped = self.mapped.split_off(&pages(len));
            let kept: BTreeSet<u64> = gone.keys().chain(&unmapped).copied().filter(|&i| framed(i)).collect();
            self.charge.shrink(gone.len() as u64 * PAGE_SIZE);
            self.disk.shrink((gone.len() + unmapped.len() - kept.len()) as u64 * PAGE_SIZE);
            self.mapped.extend(kept);
            let tail = len % PAGE_SIZE;
            if let (Some(p), Ok(t)) = (self.pages.get_mut(&(len / PAGE_SIZE)), usize::try_from(tail)) {
                p[t..].fill(0);
            }
        }
        self.len = len;
    }
}

/// Charges one more page of a file to both the memory and the disk
/// budget, or to neither.
fn charge_page(memory: &mut Charge, disk: &mut DiskCharge) -> bool {
    if !memory.grow(PAGE_SIZE) {
        return false;
    }
    if !disk.grow(PAGE_SIZE) {
        memory.shrink(PAGE_SIZE);
        return false;
    }
    true
}

/// The two directories of a rename, both locked (one lock when they are
/// the same directory).
pub(crate) struct DirPair<'a, T> {
    src: MutexGuard<'a, T>,
    dst: Option<MutexGuard<'a, T>>,
}

impl<'a, T> DirPair<'a, T> {
    /// Locks `src` and `dst` (`None`: the same as `src`); `dst` first when
    /// `dst_first`, so that an ancestor is always locked before its
    /// descendant.
    pub(crate) fn lock(src: &'a Mutex<T>, dst: Option<&'a Mutex<T>>, dst_first: bool) -> Self {
        match dst {
            None => DirPair { src: src.lock(), dst: None },
            Some(d) if dst_first => {
                let dst = d.lock();
                DirPair { src: src.lock(), dst: Some(dst) }
            }
            Some(d) => {
                let src = src.lock();
                DirPair { src, dst: Some(d.lock()) }
            }
        }
    }

    /// The source directory.
    pub(crate) fn src(&mut self) -> &mut T {
        &mut self.src
    }

    /// The destination directory.
    pub(crate) fn dst(&mut self) -> &mut T {
        match &mut self.dst {
            Some(d) => d,
            None => &mut self.src,
        }
    }
}

/// The limits a guest's tmpfs mount may set; none by default (the
/// sandbox's memory and disk budget bound it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TmpfsLimits {
    /// Bytes of file data (rounded up to pages), `size=` or `nr_blocks=`.
    pub size: Option<u64>,
    /// Inodes, `nr_inodes=`.
    pub inodes: Option<u64>,
}

/// One tmpfs instance: its identity, inode numbers and usage.
pub(crate) struct Tmpfs {
    id: usize,
    dev: u64,
    next_ino: AtomicU64,
    /// What file pages are charged to: the sandbox's memory.
    acct: Arc<Accountant>,
    /// What pages and nodes are also charged to, when the guest writes
    /// here as to a disk.
    disk: Option<Arc<DiskBudget>>,
    /// The filesystem's own size (`size=`), within `disk`: what its file
    /// pages and long symlinks are charged to instead, as Linux's
    /// `max_blocks` counts data blocks alone.
    blocks: Option<Arc<DiskBudget>>,
    /// The most inodes it may hold (`nr_inodes=`), its root included.
    max_inodes: Option<u64>,
    /// Pages of file contents, for `statfs`.
    pages: AtomicU64,
    /// Live inodes, for `statfs`.
    inodes: AtomicU64,
    /// Serializes renames, so the tree's shape holds still while one checks
    /// ancestry and orders its locks.
    rename_lock: Mutex<()>,
}

impl Tmpfs {
    /// A new, empty tmpfs whose pages are charged to the sandbox's
    /// memory; returns its root directory.
    #[allow(clippy::new_ret_no_self)]
    pub(crate) fn new(mode: u32, uid: u32, gid: u32) -> Arc<dyn Node> {
        Tmpfs::charged_to(accounting::sandbox(), mode, uid, gid)
    }

    /// A new, empty tmpfs whose pages are charged to `acct`.
    pub(crate) fn charged_to(acct: Arc<Accountant>, mode: u32, uid: u32, gid: u32) -> Arc<dyn Node> {
        Tmpfs::build(acct, None, TmpfsLimits::default(), mode, uid, gid)
    }

    /// A new, empty tmpfs whose pages and nodes are charged to the
    /// sandbox's memory and to `disk` (shared with the sandbox's other
    /// writable filesystems).
    pub(crate) fn with_disk(disk: Option<Arc<DiskBudget>>, mode: u32, uid: u32, gid: u32) -> Arc<dyn Node> {
        Tmpfs::sized(disk, TmpfsLimits::default(), mode, uid, gid)
    }

    /// `with_disk`, with the limits of a `tmpfs -o size=,nr_inodes=`.
    pub(crate) fn sized(
        disk: Option<Arc<DiskBudget>>,
        limits: TmpfsLimits,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Arc<dyn Node> {
        Tmpfs::build(accounting::sandbox(), disk, limits, mode, uid, gid)
    }

    fn build(
        acct: Arc<Accountant>,
        disk: Option<Arc<DiskBudget>>,
        limits: TmpfsLimits,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Arc<dyn Node> {
        let id = new_fs_id();
        let blocks = limits.size.map(|size| DiskBudget::within(pages(size) * PAGE_SIZE, disk.clone()));
        let fs = Arc::new(Tmpfs {
            id,
            dev: anon_dev(id),
            next_ino: AtomicU64::new(1),
            acct,
            disk,
            blocks,
            max_inodes: limits.inodes,
            pages: AtomicU64::new(0),
            inodes: AtomicU64::new(0),
            rename_lock: Mutex::new(()),
        });
        let new = NewNode { mode: S_IFDIR | (mode & 0o7777), uid, gid };
        // The root is part of the mount, not something a guest can make
        // more of: it is not charged.
        let charges = (Charge::new(fs.acct.clone()), DiskCharge::new(None));
        TmpNode::build(&fs, new, 0, Body::Dir(Mutex::default()), Link::default(), charges)
    }
}

type Entries = BTreeMap<Vec<u8>, Arc<TmpNode>>;

/// Attributes of a node.
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    rdev: u64,
    /// Hard links of a non-directory; for a directory 1, or 0 once removed.
    nlink: u64,
    /// An `O_TMPFILE` file without `O_EXCL`: it may be linked while it
    /// has no links (Linux's `I_LINKABLE`), once.
    linkable: bool,
    atime: TimeSpec,
    mtime: TimeSpec,
    ctime: TimeSpec,
}

/// Where a node was last linked: its directory and its name there.
#[derive(Default)]
struct Link {
    parent: Weak<TmpNode>,
    name: Vec<u8>,
}

enum Body {
    Dir(Mutex<Entries>),
    File(Mutex<FileData>),
    Symlink(Vec<u8>),
    /// A device or socket: attributes only.
    Special,
    /// A named pipe.
    Fifo(FifoSlot),
}

/// A tmpfs inode.
struct TmpNode {
    fs: Arc<Tmpfs>,
    ino: u64,
    me: Weak<TmpNode>,
    meta: Mutex<Meta>,
    link: Mutex<Link>,
    body: Body,
    /// The frames of MAP_SHARED mappings of this file, once it has any.
    cache: Mutex<Option<Arc<PageCache>>>,
    /// The node and its hard links past the first name, charged to the
    /// sandbox's memory and disk budget.
    charges: Mutex<(Charge, DiskCharge)>,
    /// A long symlink's block, charged to its filesystem's size.
    block: Mutex<DiskCharge>,
    /// Extended attributes by full name, charged (name and value) with
    /// the node.
    xattrs: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// File seals (F_ADD_SEALS).
    seals: Seals,
}

impl Drop for TmpNode {
    fn drop(&mut self) {
        self.fs.inodes.fetch_sub(1, Ordering::Relaxed);
        if let Body::File(data) = &mut self.body {
            self.fs.pages.fetch_sub(data.get_mut().held(), Ordering::Relaxed);
        }
    }
}

impl TmpNode {
    /// A new node, charged to the sandbox's memory and disk budget: ENOSPC
    /// past either.
    fn alloc(fs: &Arc<Tmpfs>, new: NewNode, rdev: u64, body: Body, link: Link) -> Result<Arc<TmpNode>, Errno> {
        if fs.max_inodes.is_some_and(|max| fs.inodes.load(Ordering::Relaxed) >= max) {
            return Err(Errno::ENOSPC);
        }
        let mut block = DiskCharge::new(fs.blocks.clone());
        let long_link = matches!(&body, Body::Symlink(t) if t.len() >= SHORT_SYMLINK_LEN);
        if long_link && fs.blocks.is_some() && !block.grow(PAGE_SIZE) {
            return Err(Errno::ENOSPC);
        }
        let mut charge = Charge::new(fs.acct.clone());
        let mut disk = DiskCharge::new(fs.disk.clone());
        let extra = match &body {
            Body::Symlink(t) => t.len(),
            _ => 0,
        };
        let cost = INODE_COST + (link.name.len() + extra) as u64;
        if !charge.grow(cost) || !disk.grow(cost) {
            return Err(Errno::ENOSPC);
        }
        let node = TmpNode::build(fs, new, rdev, body, link, (charge, disk));
        *node.block.lock() = block;
        Ok(node)
    }

    fn build(
        fs: &Arc<Tmpfs>,
        new: NewNode,
        rdev: u64,
        body: Body,
        link: Link,
        charges: (Charge, DiskCharge),
    ) -> Arc<TmpNode> {
        let t = now();
        fs.inodes.fetch_add(1, Ordering::Relaxed);
        let meta = Meta {
            mode: new.mode,
            uid: new.uid,
            gid: new.gid,
            rdev,
            nlink: 1,
            linkable: false,
            atime: t,
            mtime: t,
            ctime: t,
        };
        Arc::new_cyclic(|me| TmpNode {
            fs: fs.clone(),
            ino: fs.next_ino.fetch_add(1, Ordering::Relaxed),
            me: me.clone(),
            meta: Mutex::new(meta),
            link: Mutex::new(link),
            body,
            cache: Mutex::new(None),
            charges: Mutex::new(charges),
            block: Mutex::new(DiskCharge::new(None)),
            xattrs: Mutex::new(BTreeMap::new()),
            seals: Seals::default(),
        })
    }

    fn arc(&self) -> Result<Arc<TmpNode>, Errno> {
        self.me.upgrade().ok_or(Errno::ESTALE)
    }

    fn is_dir(&self) -> bool {
        matches!(self.body, Body::Dir(_))
    }

    fn dir(&self) -> Result<&Mutex<Entries>, Errno> {
        match &self.body {
            Body::Dir(e) => Ok(e),
            _ => Err(Errno::ENOTDIR),
        }
    }

    fn entries(&self) -> Result<MutexGuard<'_, Entries>, Errno> {
        Ok(self.dir()?.lock())
    }

    fn data(&self) -> Result<MutexGuard<'_, FileData>, Errno> {
        match &self.body {
            Body::File(d) => Ok(d.lock()),
            Body::Dir(_) => Err(Errno::EISDIR),
            _ => Err(Errno::EINVAL),
        }
    }

    fn mode(&self) -> u32 {
        self.meta.lock().mode
    }

    fn is_removed(&self) -> bool {
        self.meta.lock().nlink == 0
    }

    fn parent(&self) -> Option<Arc<TmpNode>> {
        self.link.lock().parent.upgrade()
    }

    /// The name and directory of the node's last link.
    fn link_info(&self) -> (Vec<u8>, Option<Arc<TmpNode>>) {
        let l = self.link.lock();
        (l.name.clone(), l.parent.upgrade())
    }

    fn set_link(&self, parent: &TmpNode, name: &[u8]) {
        *self.link.lock() = Link { parent: parent.me.clone(), name: name.to_vec() };
    }

    /// Whether `self` is `other` or one of its ancestors.
    fn is_ancestor_of(&self, other: &TmpNode) -> bool {
        if std::ptr::eq(self, other) {
            return true;
        }
        let mut cur = other.parent();
        while let Some(p) = cur {
            if std::ptr::eq(self, &*p) {
                return true;
            }
            cur = p.parent();
        }
        false
    }

    /// Contents changed: mtime and ctime.
    fn modified(&self) {
        let t = now();
        let mut m = self.meta.lock();
        m.mtime = t;
        m.ctime = t;
    }

    /// Attributes changed: ctime.
    fn status_changed(&self) {
        self.meta.lock().ctime = now();
    }

    /// Read: the access time, by Linux's default `relatime` rule.
    fn accessed(&self) {
        let t = now();
        let mut m = self.meta.lock();
        let a = time_key(m.atime);
        if a <= time_key(m.mtime) || a <= time_key(m.ctime) || t.sec.saturating_sub(m.atime.sec) >= ATIME_MAX_AGE {
            m.atime = t;
        }
    }

    /// One name fewer refers to this node.
    fn drop_link(&self) {
        let dir = self.is_dir();
        let mut m = self.meta.lock();
        if !dir && m.nlink > 1 {
            let mut charges = self.charges.lock();
            charges.0.shrink(LINK_COST);
            charges.1.shrink(LINK_COST);
        }
        m.nlink = if dir { 0 } else { m.nlink.saturating_sub(1) };
        m.ctime = now();
    }

    /// (size, blocks, nlink) as `stat` reports them.
    fn sizes(&self, nlink: u64) -> (u64, u64, u64) {
        match &self.body {
            Body::Dir(e) => {
                let e = e.lock();
                let subdirs = e.values().filter(|c| c.is_dir()).count() as u64;
                let size = BOGO_DIRENT_SIZE * (2 + e.len() as u64);
                (size, 0, if nlink == 0 { 0 } else { 2 + subdirs })
            }
            Body::File(d) => {
                let d = d.lock();
                (d.len, d.held() * (PAGE_SIZE / 512), nlink)
            }
            Body::Symlink(t) => {
                let blocks = if t.len() < SHORT_SYMLINK_LEN { 0 } else { PAGE_SIZE / 512 };
                (t.len() as u64, blocks, nlink)
            }
            Body::Special | Body::Fifo(_) => (0, 0, nlink),
        }
    }

    /// The owner and mode of a new child, with the set-group-ID directory
    /// rule applied.
    fn child_owner(&self, new: NewNode, dir: bool) -> NewNode {
        let m = self.meta.lock();
        if m.mode & libc::S_ISGID == 0 {
            return new;
        }
        let mode = if dir { new.mode | libc::S_ISGID } else { new.mode };
        NewNode { mode, uid: new.uid, gid: m.gid }
    }

    /// The body of a new, empty regular file.
    fn new_file(&self) -> Body {
        let data = self.fs.blocks.clone().or_else(|| self.fs.disk.clone());
        Body::File(Mutex::new(FileData::new(self.fs.acct.clone(), data)))
    }

    /// Adds a new node named `name` to this directory.
    fn add_child(&self, name: &[u8], new: NewNode, rdev: u64, body: Body) -> Result<Arc<TmpNode>, Errno> {
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let mut e = self.entries()?;
        if self.is_removed() {
            return Err(Errno::ENOENT);
        }
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        let new = self.child_owner(new, matches!(body, Body::Dir(_)));
        let link = Link { parent: self.me.clone(), name: name.to_vec() };
        let child = TmpNode::alloc(&self.fs, new, rdev, body, link)?;
        e.insert(name.to_vec(), child.clone());
        self.modified();
        Ok(child)
    }

    /// Copies file contents at `off` into `buf`; returns the count.
    fn read_data(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        let d = self.data()?;
        let cache = self.cache.lock().clone();
        Ok(d.read(buf, off, cache.as_deref()))
    }

    /// Writes at `off`: as much as the sandbox's memory takes (ENOSPC
    /// when not even one byte fits).
    fn write_data(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        if off >= MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let n = buf.len().min(usize::try_from(MAX_FILE_SIZE - off).unwrap_or(usize::MAX));
        let mut d = self.data()?;
        let n = self.seals.writable_len(off, n, d.len)?;
        let before = d.held();
        let written = d.write(&buf[..n], off);
        self.fs.pages.fetch_add(d.held() - before, Ordering::Relaxed);
        let written = written?;
        if let Some(c) = self.cache.lock().as_ref() {
            c.write_through(off, &buf[..written]);
        }
        drop(d);
        self.modified();
        Ok(written)
    }

    /// A shared mapping faults page `index` in (see `FileData::hold_mapped`).
    fn hold_mapped(&self, index: u64) -> Result<(), Errno> {
        let mut d = self.data()?;
        let before = d.held();
        d.hold_mapped(index)?;
        self.fs.pages.fetch_add(d.held() - before, Ordering::Relaxed);
        Ok(())
    }

    /// Truncates or extends the file; the times change if the size does.
    fn truncate(&self, len: u64) -> Result<(), Errno> {
        if len > MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let mut d = self.data()?;
        self.seals.check_resize(d.len, len)?;
        if d.len == len {
            return Ok(());
        }
        let before = d.held();
        let cache = self.cache.lock().clone();
        d.set_len(len, |index| cache.as_ref().is_some_and(|c| c.holds(index)));
        self.fs.pages.fetch_sub(before - d.held(), Ordering::Relaxed);
        if let Some(c) = self.cache.lock().as_ref() {
            c.truncate(len);
        }
        drop(d);
        self.modified();
        Ok(())
    }

    /// fallocate(2): holds the pages of `off..off+len` (ENOSPC, holding
    /// none of them, past the memory or disk limit) and grows the size to
    /// cover them unless `keep_size`.
    fn allocate(&self, off: u64, len: u64, keep_size: bool) -> Result<(), Errno> {
        let end = off.checked_add(len).filter(|&e| e <= MAX_FILE_SIZE).ok_or(Errno::EFBIG)?;
        let mut d = self.data()?;
        self.seals.check_allocate(end, d.len)?;
        let before = d.held();
        let held = d.allocate(off / PAGE_SIZE, pages(end));
        self.fs.pages.fetch_add(d.held() - before, Ordering::Relaxed);
        held?;
        if !keep_size && end > d.len {
            d.len = end;
        }
        drop(d);
        self.status_changed();
        Ok(())
    }

    /// fallocate(2)'s hole punch: `off..off+len` reads as zeros; the
    /// pages wholly inside it are let go and their charges given back.
    fn punch(&self, off: u64, len: u64) -> Result<(), Errno> {
        let end = off.saturating_add(len).min(MAX_FILE_SIZE);
        self.seals.check_punch()?;
        if off >= end {
            return Ok(());
        }
        let mut d = self.data()?;
        let before = d.held();
        d.punch(off, end);
        self.fs.pages.fetch_sub(before - d.held(), Ordering::Relaxed);
        if let Some(c) = self.cache.lock().as_ref() {
            c.zero(off, end);
        }
        drop(d);
        self.modified();
        Ok(())
    }

    /// The node's path from the filesystem's root, for `/proc/[pid]/maps`.
    fn path(&self) -> String {
        let mut parts = Vec::new();
        let mut link = self.link_info();
        while let (name, Some(p)) = link {
            parts.push(name);
            link = p.link_info();
        }
        let mut out = String::new();
        for p in parts.iter().rev() {
            out.push('/');
            out.push_str(&String::from_utf8_lossy(p));
        }
        if out.is_empty() {
            out.push('/');
        }
        if self.is_removed() {
            out.push_str(" (deleted)");
        }
        out
    }

    fn same_fs(&self, other: &Arc<dyn Node>) -> Result<Arc<TmpNode>, Errno> {
        let other = other.as_any().downcast_ref::<TmpNode>().ok_or(Errno::EXDEV)?;
        if !Arc::ptr_eq(&other.fs, &self.fs) {
            return Err(Errno::EXDEV);
        }
        other.arc()
    }

    /// Moves or exchanges `name` to `new_name` in `dst`, with the locks
    /// of both directories held.
    fn rename_locked(&self, name: &[u8], dst: &TmpNode, new_name: &[u8], flags: u32) -> Result<(), Errno> {
        let dst_first = !std::ptr::eq(self, dst) && dst.is_ancestor_of(self);
        let other = (!std::ptr::eq(self, dst)).then(|| dst.dir()).transpose()?;
        let mut dirs = DirPair::lock(self.dir()?, other, dst_first);
        let src_node = dirs.src().get(name).cloned().ok_or(Errno::ENOENT)?;
        let dst_node = dirs.dst().get(new_name).cloned();
        let op = Rename { src_dir: self, src: &*src_node, dst_dir: dst, dst: dst_node.as_deref(), flags };
        if !rename::check_rename(&op)? {
            return Ok(());
        }
        if dst_node.is_none() && dst.is_removed() {
            return Err(Errno::ENOENT);
        }
        if new_name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        if flags & rename::RENAME_EXCHANGE != 0 {
            let dst_node = dst_node.ok_or(Errno::ENOENT)?;
            dirs.src().insert(name.to_vec(), dst_node.clone());
            dst_node.set_link(self, name);
            dst_node.status_changed();
        } else {
            dirs.src().remove(name);
            if let Some(old) = dirs.dst().get(new_name) {
                old.drop_link();
            }
        }
        dirs.dst().insert(new_name.to_vec(), src_node.clone());
        src_node.set_link(dst, new_name);
        src_node.status_changed();
        self.modified();
        dst.modified();
        Ok(())
    }
}

impl RenameNode for TmpNode {
    fn is_dir(&self) -> bool {
        TmpNode::is_dir(self)
    }

    fn is_empty_dir(&self) -> Result<bool, Errno> {
        Ok(self.entries()?.is_empty())
    }

    fn is_ancestor_of(&self, other: &TmpNode) -> bool {
        TmpNode::is_ancestor_of(self, other)
    }

    fn same_file(&self, other: &TmpNode) -> Result<bool, Errno> {
        Ok(std::ptr::eq(self, other))
    }
}

impl Node for TmpNode {
    fn stat(&self) -> Result<Stat, Errno> {
        let nlink = self.meta.lock().nlink;
        let (size, blocks, nlink) = self.sizes(nlink);
        let m = self.meta.lock();
        Ok(Stat {
            dev: self.fs.dev,
            ino: self.ino,
            nlink,
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
            rdev: m.rdev,
            size,
            blksize: PAGE_SIZE,
            blocks,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        })
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let e = self.entries()?;
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        match e.get(name) {
            Some(n) => Ok(n.clone()),
            None => Err(Errno::ENOENT),
        }
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let list = self
            .entries()?
            .iter()
            .map(|(name, n)| DirEntry { ino: n.ino, kind: dtype(n.mode()), name: name.clone() })
            .collect();
        self.accessed();
        Ok(list)
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        match &self.body {
            Body::Symlink(t) => {
                self.accessed();
                Ok(t.clone())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        match &self.body {
            Body::Dir(_) if open_writes(flags) => Err(Errno::EISDIR),
            Body::Dir(_) => Ok(Arc::new(DirFile)),
            Body::File(_) => {
                let file = TmpFile(self.arc()?);
                if flags & libc::O_TRUNC != 0 {
                    file.truncate(0)?;
                }
                Ok(Arc::new(file))
            }
            Body::Symlink(_) => Err(Errno::ELOOP),
            Body::Special => Err(Errno::ENXIO),
            Body::Fifo(slot) => slot.open(self.ino, now(), flags),
        }
    }

    fn create(&self, name: &[u8], new: NewNode) -> Result<Arc<dyn Node>, Errno> {
        let new = NewNode { mode: S_IFREG | (new.mode & 0o7777), ..new };
        let node: Arc<dyn Node> = self.add_child(name, new, 0, self.new_file())?;
        Ok(node)
    }

    /// An `O_TMPFILE` file: charged as a new file, in no directory.
    fn tmpfile(&self, new: NewNode, linkable: bool) -> Result<Arc<dyn Node>, Errno> {
        if self.entries().is_ok() && self.is_removed() {
            return Err(Errno::ENOENT);
        }
        let new = self.child_owner(NewNode { mode: S_IFREG | (new.mode & 0o7777), ..new }, false);
        let link = Link { parent: self.me.clone(), name: Vec::new() };
        let node = TmpNode::alloc(&self.fs, new, 0, self.new_file(), link)?;
        {
            let mut m = node.meta.lock();
            m.nlink = 0;
            m.linkable = linkable;
        }
        let node: Arc<dyn Node> = node;
        Ok(node)
    }

    fn mkdir(&self, name: &[u8], new: NewNode) -> Result<(), Errno> {
        let new = NewNode { mode: S_IFDIR | (new.mode & 0o7777), ..new };
        self.add_child(name, new, 0, Body::Dir(Mutex::default())).map(drop)
    }

    fn mknod(&self, name: &[u8], new: NewNode, rdev: u64) -> Result<(), Errno> {
        let (kind, body, rdev) = match new.mode & S_IFMT {
            0 | S_IFREG => (S_IFREG, self.new_file(), 0),
            k @ (S_IFCHR | S_IFBLK) => (k, Body::Special, rdev),
            S_IFIFO => (S_IFIFO, Body::Fifo(FifoSlot::default()), 0),
            S_IFSOCK => (S_IFSOCK, Body::Special, 0),
            S_IFDIR => return Err(Errno::EPERM),
            _ => return Err(Errno::EINVAL),
        };
        let new = NewNode { mode: kind | (new.mode & 0o7777), ..new };
        self.add_child(name, new, rdev, body).map(drop)
    }

    fn symlink(&self, name: &[u8], target: &[u8], new: NewNode) -> Result<(), Errno> {
        if target.len() as u64 >= PAGE_SIZE {
            return Err(Errno::ENAMETOOLONG);
        }
        let new = NewNode { mode: S_IFLNK | 0o777, ..new };
        self.add_child(name, new, 0, Body::Symlink(target.to_vec())).map(drop)
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Node>) -> Result<(), Errno> {
        let target = self.same_fs(target)?;
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let mut e = self.entries()?;
        if self.is_removed() {
            return Err(Errno::ENOENT);
        }
        if e.contains_key(name) {
            return Err(Errno::EEXIST);
        }
        if target.is_dir() {
            return Err(Errno::EPERM);
        }
        {
            let mut m = target.meta.lock();
            if m.nlink == 0 && !m.linkable {
                return Err(Errno::ENOENT);
            }
            // An O_TMPFILE file's first link costs what its creation
            // already charged.
            if m.nlink > 0 {
                let mut charges = target.charges.lock();
                if !charges.0.grow(LINK_COST) {
                    return Err(Errno::ENOSPC);
                }
                if !charges.1.grow(LINK_COST) {
                    charges.0.shrink(LINK_COST);
                    return Err(Errno::ENOSPC);
                }
            }
            m.linkable = false;
            m.nlink += 1;
            m.ctime = now();
        }
        target.set_link(self, name);
        e.insert(name.to_vec(), target);
        self.modified();
        Ok(())
    }

    fn unlink(&self, name: &[u8], dir: bool) -> Result<(), Errno> {
        let mut e = self.entries()?;
        let child = e.get(name).cloned().ok_or(Errno::ENOENT)?;
        rename::check_remove(&*child, dir)?;
        e.remove(name);
        child.drop_link();
        self.modified();
        Ok(())
    }

    fn rename(&self, name: &[u8], new_dir: &Arc<dyn Node>, new_name: &[u8], flags: u32) -> Result<(), Errno> {
        rename::check_flags(flags)?;
        let dst = self.same_fs(new_dir)?;
        let _shape = self.fs.rename_lock.lock();
        self.rename_locked(name, &dst, new_name, flags)
    }

    fn getxattr(&self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.xattrs.lock().get(name).cloned().ok_or(Errno::ENODATA)
    }

    /// As Linux's `simple_xattr_set`; each entry (name, value and
    /// [`XATTR_ENTRY_COST`] of bookkeeping) is charged to the sandbox's
    /// memory and disk budget, and an inode's entries together may take
    /// at most [`XATTR_INODE_MAX`] (ENOSPC past any of these).
    fn setxattr(&self, name: &[u8], value: &[u8], flags: u32) -> Result<(), Errno> {
        let mut x = self.xattrs.lock();
        let old = x.get(name).map(|v| xattr_cost(name, v));
        if flags & XATTR_CREATE != 0 && old.is_some() {
            return Err(Errno::EEXIST);
        }
        if flags & XATTR_REPLACE != 0 && old.is_none() {
            return Err(Errno::ENODATA);
        }
        let new = xattr_cost(name, value);
        let held: u64 = x.iter().map(|(n, v)| xattr_cost(n, v)).sum();
        if held - old.unwrap_or(0) + new > XATTR_INODE_MAX {
            return Err(Errno::ENOSPC);
        }
        {
            let mut c = self.charges.lock();
            let (memory, disk) = &mut *c;
            if !memory.grow(new) {
                return Err(Errno::ENOSPC);
            }
            if !disk.grow(new) {
                memory.shrink(new);
                return Err(Errno::ENOSPC);
            }
            if let Some(o) = old {
                memory.shrink(o);
                disk.shrink(o);
            }
        }
        x.insert(name.to_vec(), value.to_vec());
        self.meta.lock().ctime = now();
        Ok(())
    }

    fn listxattr(&self) -> Result<Vec<Vec<u8>>, Errno> {
        Ok(self.xattrs.lock().keys().cloned().collect())
    }

    fn removexattr(&self, name: &[u8]) -> Result<(), Errno> {
        let v = self.xattrs.lock().remove(name).ok_or(Errno::ENODATA)?;
        let n = xattr_cost(name, &v);
        let mut c = self.charges.lock();
        c.0.shrink(n);
        c.1.shrink(n);
        self.meta.lock().ctime = now();
        Ok(())
    }

    fn setattr(&self, attr: &SetAttr) -> Result<(), Errno> {
        if let Some(mode) = attr.mode {
            self.seals.check_chmod(self.mode(), mode)?;
        }
        if let Some(size) = attr.size {
            self.truncate(size)?;
        }
        let dir = self.is_dir();
        let t = now();
        let mut m = self.meta.lock();
        if let Some(mode) = attr.mode {
            m.mode = (m.mode & S_IFMT) | (mode & 0o7777);
        } else if (attr.uid.is_some() || attr.gid.is_some()) && !dir {
            m.mode = chown_mode(m.mode);
        }
        m.uid = attr.uid.unwrap_or(m.uid);
        m.gid = attr.gid.unwrap_or(m.gid);
        if let Some(a) = attr.atime {
            m.atime = resolve_time(a, t);
        }
        if let Some(mt) = attr.mtime {
            m.mtime = resolve_time(mt, t);
        }
        if attr.mode.is_some()
            || attr.uid.is_some()
            || attr.gid.is_some()
            || attr.atime.is_some()
            || attr.mtime.is_some()
        {
            m.ctime = t;
        }
        Ok(())
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        // The pages a tmpfs can take are the sandbox's memory, shared with
        // every other holder of it: its size is the limit, and what is
        // free is what the limit has left. Under a disk budget, shared
        // with the sandbox's other writable filesystems, the size is the
        // budget's limit and what is used is what they hold together.
        let acct = &self.fs.acct;
        let (blocks, free) = match self.fs.blocks.as_ref().or(self.fs.disk.as_ref()) {
            Some(d) => {
                let free = d.available().min(acct.data_available());
                (d.limit() / PAGE_SIZE, free / PAGE_SIZE)
            }
            None => {
                let blocks = if acct.is_limited() { acct.data_limit() / PAGE_SIZE } else { NOMINAL_BLOCKS };
                let own = blocks.saturating_sub(self.fs.pages.load(Ordering::Relaxed));
                (blocks, own.min(acct.data_available() / PAGE_SIZE))
            }
        };
        Ok(StatFs {
            fs_type: TMPFS_MAGIC,
            bsize: PAGE_SIZE,
            blocks,
            bfree: free,
            bavail: free,
            files: self.fs.max_inodes.unwrap_or(NOMINAL_INODES),
            ffree: self.fs.max_inodes.unwrap_or(NOMINAL_INODES).saturating_sub(self.fs.inodes.load(Ordering::Relaxed)),
            namelen: NAME_MAX as u64,
            frsize: PAGE_SIZE,
            flags: 0,
        })
    }

    fn fs_id(&self) -> usize {
        self.fs.id
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The mode after a change of owner: chown(2) clears set-user-ID, and
/// set-group-ID when group execution is allowed.
fn chown_mode(mode: u32) -> u32 {
    let mut mode = mode & !libc::S_ISUID;
    if mode & (libc::S_ISGID | libc::S_IXGRP) == libc::S_ISGID | libc::S_IXGRP {
        mode &= !libc::S_ISGID;
    }
    mode
}

/// An open regular file.
struct TmpFile(Arc<TmpNode>);

impl FileOps for TmpFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        let n = self.0.read_data(buf, off)?;
        if !buf.is_empty() {
            self.0.accessed();
        }
        Ok(n)
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        self.0.write_data(buf, off)
    }

    /// Linux's tmpfs reserves and punches holes, but does not zero ranges.
    fn allocate(&self, off: u64, len: u64, how: Allocate) -> Result<(), Errno> {
        match how {
            Allocate::Reserve { keep_size } => self.0.allocate(off, len, keep_size),
            Allocate::PunchHole => self.0.punch(off, len),
            Allocate::ZeroRange { .. } => Err(Errno::EOPNOTSUPP),
        }
    }

    /// ftruncate(2): the times change even when the size does not.
    fn truncate(&self, len: u64) -> Result<(), Errno> {
        self.0.truncate(len)?;
        self.0.modified();
        Ok(())
    }

    fn seals(&self) -> Result<u32, Errno> {
        Ok(self.0.seals.get())
    }

    fn add_seals(&self, seals: u32) -> Result<(), Errno> {
        self.0.seals.add(seals, self.0.mode())
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        Some(Arc::new(TmpFile(self.0.clone())))
    }
}

impl Mappable for TmpFile {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.0.read_data(buf, off)
    }

    fn map_name(&self) -> String {
        self.0.path()
    }

    fn map_ids(&self) -> (u64, u64) {
        (self.0.fs.dev, self.0.ino)
    }

    fn size(&self) -> Option<u64> {
        Some(self.0.sizes(1).0)
    }

    fn map_shared(&self, write: bool, may_write: bool) -> Result<Option<WriteHold>, Errno> {
        self.0.seals.map_shared(write, may_write)
    }

    fn shared_pages(&self, mf: &Arc<MemoryFile>) -> Option<Arc<dyn SharedPages>> {
        let cache = self.0.cache.lock().get_or_insert_with(|| PageCache::new(mf.clone())).clone();
        Some(Arc::new(TmpShared { node: self.0.clone(), cache }))
    }
}

/// The shared pages of a tmpfs file, filled from its contents.
struct TmpShared {
    node: Arc<TmpNode>,
    cache: Arc<PageCache>,
}

impl SharedPages for TmpShared {
    fn frame(&self, index: u64) -> Result<u64, Errno> {
        self.node.hold_mapped(index)?;
        self.cache.frame(index, |page| {
            let off = index.saturating_mul(crate::abi::PAGE_SIZE);
            // A page past the end of the file reads as zeros.
            let _ = self.node.read_data(page, off);
        })
    }
}

/// The tmpfs that holds the sandbox's memfd_create files.
pub(crate) struct MemfdFs {
    root: Arc<dyn Node>,
    next: AtomicU64,
}

impl Default for MemfdFs {
    fn default() -> Self {
        MemfdFs { root: Tmpfs::new(0o1777, 0, 0), next: AtomicU64::new(0) }
    }
}

/// A memfd file: its node and its open file.
pub(crate) struct Memfd {
    pub node: Arc<dyn Node>,
    pub ops: Arc<dyn FileOps>,
}

impl MemfdFs {
    /// A new file with no name anywhere, opened for reading and writing:
    /// only descriptors keep it alive. `sealing`: MFD_ALLOW_SEALING, with
    /// MFD_NOEXEC_SEAL (`noexec`) F_SEAL_EXEC.
    pub(crate) fn create(&self, new: NewNode, sealing: bool, noexec: bool) -> Result<Memfd, Errno> {
        let name = format!("memfd-{}", self.next.fetch_add(1, Ordering::Relaxed)).into_bytes();
        let node = self.root.create(&name, new)?;
        if sealing || noexec {
            if let Some(n) = node.as_any().downcast_ref::<TmpNode>() {
                n.seals.allow_sealing(noexec);
            }
        }
        let ops = node.open(libc::O_RDWR)?;
        self.root.unlink(&name, false)?;
        Ok(Memfd { node, ops })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RDWR: i32 = libc::O_RDWR;

    fn fs() -> Arc<dyn Node> {
        Tmpfs::new(0o755, 0, 0)
    }

    fn nn(mode: u32) -> NewNode {
        NewNode { mode, uid: 1000, gid: 1000 }
    }

    fn file(dir: &Arc<dyn Node>, name: &str, data: &[u8]) -> Arc<dyn Node> {
        let n = dir.create(name.as_bytes(), nn(0o644)).unwrap();
        n.open(RDWR).unwrap().write(data, 0).unwrap();
        n
    }

    fn contents(n: &Arc<dyn Node>) -> Vec<u8> {
        let f = n.open(libc::O_RDONLY).unwrap();
        let mut buf = vec![0; 1 << 16];
        let len = f.read(&mut buf, 0).unwrap();
        buf.truncate(len);
        buf
    }

    fn names(dir: &Arc<dyn Node>) -> Vec<String> {
        dir.readdir().unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect()
    }

    fn get(dir: &Arc<dyn Node>, name: &str) -> Arc<dyn Node> {
        dir.lookup(name.as_bytes()).unwrap()
    }

    fn err<T>(r: Result<T, Errno>) -> Errno {
        r.err().unwrap()
    }

    #[test]
    fn create_read_write() {
        let root = fs();
        let n = file(&root, "a", b"hello");
        let st = n.stat().unwrap();
        assert_eq!(st.mode, S_IFREG | 0o644);
        assert_eq!((st.size, st.blocks, st.blksize, st.nlink, st.uid), (5, 8, 4096, 1, 1000));
        assert_eq!(contents(&n), b"hello");
        let f = n.open(RDWR).unwrap();
        assert_eq!(f.write(b"J", 0).unwrap(), 1);
        let mut buf = [0u8; 3];
        assert_eq!(f.read(&mut buf, 3).unwrap(), 2);
        assert_eq!(&buf[..2], b"lo");
        assert_eq!(f.read(&mut buf, 100).unwrap(), 0);
        assert_eq!(contents(&n), b"Jello");
        assert_eq!(err(root.create(b"a", nn(0o644))), Errno::EEXIST);
        assert_eq!(err(root.lookup(b"b")), Errno::ENOENT);
        assert_eq!(err(n.lookup(b"x")), Errno::ENOTDIR);
        assert_eq!(err(n.create(b"x", nn(0o644))), Errno::ENOTDIR);
        assert!(f.seekable());
    }

    #[test]
    fn truncate_and_holes() {
        let root = fs();
        let n = file(&root, "a", b"abc");
        let f = n.open(RDWR).unwrap();
        f.write(b"z", 6).unwrap();
        assert_eq!(contents(&n), b"abc\0\0\0z");
        f.truncate(2).unwrap();
        assert_eq!(contents(&n), b"ab");
        n.setattr(&SetAttr { size: Some(4), ..SetAttr::default() }).unwrap();
        assert_eq!(contents(&n), b"ab\0\0");
        assert_eq!(n.stat().unwrap().size, 4);
        n.open(libc::O_WRONLY | libc::O_TRUNC).unwrap();
        assert_eq!(n.stat().unwrap().size, 0);
        assert_eq!(n.stat().unwrap().blocks, 0);
        assert_eq!(err(f.truncate(u64::MAX)), Errno::EFBIG);
        assert_eq!(err(f.write(b"x", MAX_FILE_SIZE)), Errno::EFBIG);
        assert_eq!(err(root.setattr(&SetAttr { size: Some(0), ..SetAttr::default() })), Errno::EISDIR);
    }

    #[test]
    fn mappable_reads_current_contents() {
        let root = fs();
        let n = file(&root, "m", b"one");
        root.mkdir(b"d", nn(0o755)).unwrap();
        let f = n.open(RDWR).unwrap();
        let m = f.mappable().unwrap();
        f.write(b"two", 0).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(m.read_at(0, &mut buf).unwrap(), 3);
        assert_eq!(&buf[..3], b"two");
        assert_eq!(m.map_name(), "/m");
        assert_eq!(m.map_ids(), (n.stat().unwrap().dev, n.stat().unwrap().ino));
        root.rename(b"m", &get(&root, "d"), b"n", 0).unwrap();
        assert_eq!(m.map_name(), "/d/n");
        get(&root, "d").unlink(b"n", false).unwrap();
        assert_eq!(m.map_name(), "/d/n (deleted)");
    }

    #[test]
    fn mkdir_rmdir() {
        let root = fs();
        root.mkdir(b"d", nn(0o700)).unwrap();
        let d = get(&root, "d");
        assert_eq!(d.stat().unwrap().mode, S_IFDIR | 0o700);
        assert_eq!(err(root.mkdir(b"d", nn(0o700))), Errno::EEXIST);
        file(&d, "f", b"");
        assert_eq!(err(root.unlink(b"d", true)), Errno::ENOTEMPTY);
        assert_eq!(err(root.unlink(b"d", false)), Errno::EISDIR);
        assert_eq!(err(d.unlink(b"f", true)), Errno::ENOTDIR);
        assert_eq!(err(d.unlink(b"g", false)), Errno::ENOENT);
        d.unlink(b"f", false).unwrap();
        root.unlink(b"d", true).unwrap();
        assert_eq!(err(root.lookup(b"d")), Errno::ENOENT);
        assert_eq!(d.stat().unwrap().nlink, 0);
        assert_eq!(err(d.create(b"x", nn(0o644))), Errno::ENOENT);
    }

    #[test]
    fn link_counts() {
        let root = fs();
        assert_eq!(root.stat().unwrap().nlink, 2);
        root.mkdir(b"a", nn(0o755)).unwrap();
        root.mkdir(b"b", nn(0o755)).unwrap();
        assert_eq!(root.stat().unwrap().nlink, 4);
        let f = file(&root, "f", b"x");
        root.link(b"g", &f).unwrap();
        get(&root, "a").link(b"h", &f).unwrap();
        assert_eq!(f.stat().unwrap().nlink, 3);
        assert_eq!(get(&root, "g").stat().unwrap().ino, f.stat().unwrap().ino);
        root.unlink(b"f", false).unwrap();
        assert_eq!(f.stat().unwrap().nlink, 2);
        assert_eq!(contents(&get(&root, "g")), b"x");
        assert_eq!(err(root.link(b"g", &f)), Errno::EEXIST);
        assert_eq!(err(root.link(b"c", &get(&root, "a"))), Errno::EPERM);
        assert_eq!(err(root.link(b"c", &fs())), Errno::EXDEV);
        root.unlink(b"b", true).unwrap();
        assert_eq!(root.stat().unwrap().nlink, 3);
        assert_eq!(root.stat().unwrap().size, BOGO_DIRENT_SIZE * 4);
    }

    #[test]
    fn symlink_readlink() {
        let root = fs();
        root.symlink(b"l", b"/some/where", nn(0o600)).unwrap();
        let l = get(&root, "l");
        let st = l.stat().unwrap();
        assert_eq!((st.mode, st.size), (S_IFLNK | 0o777, 11));
        assert_eq!(l.readlink().unwrap(), b"/some/where");
        assert_eq!(err(root.readlink()), Errno::EINVAL);
        assert_eq!(err(l.open(libc::O_RDONLY)), Errno::ELOOP);
        assert_eq!(err(root.symlink(b"l", b"x", nn(0))), Errno::EEXIST);
        assert_eq!(err(root.symlink(b"m", &[b'a'; 4096], nn(0))), Errno::ENAMETOOLONG);
    }

    #[test]
    fn mknod_and_open_kinds() {
        let root = fs();
        root.mknod(b"c", nn(S_IFCHR | 0o666), 0x0103).unwrap();
        root.mknod(b"p", nn(S_IFIFO | 0o600), 7).unwrap();
        root.mknod(b"r", nn(0o600), 0).unwrap();
        let c = get(&root, "c").stat().unwrap();
        assert_eq!((c.mode, c.rdev), (S_IFCHR | 0o666, 0x0103));
        assert_eq!(get(&root, "p").stat().unwrap().rdev, 0);
        assert_eq!(get(&root, "r").stat().unwrap().mode, S_IFREG | 0o600);
        assert_eq!(err(get(&root, "c").open(RDWR)), Errno::ENXIO);
        // A FIFO: a non-blocking writer without a reader fails, a
        // non-blocking reader opens, and then a writer does too.
        let p = get(&root, "p");
        assert_eq!(err(p.open(libc::O_WRONLY | libc::O_NONBLOCK)), Errno::ENXIO);
        let r = p.open(libc::O_RDONLY | libc::O_NONBLOCK).unwrap();
        let w = p.open(libc::O_WRONLY | libc::O_NONBLOCK).unwrap();
        assert_eq!(w.write(b"hi", 0), Ok(2));
        let mut buf = [0u8; 4];
        assert_eq!(r.read(&mut buf, 0), Ok(2));
        assert_eq!(err(root.mknod(b"d", nn(S_IFDIR | 0o755), 0)), Errno::EPERM);
        assert_eq!(err(root.open(RDWR)), Errno::EISDIR);
        let d = root.open(libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
        assert_eq!(err(d.read(&mut [0; 4], 0)), Errno::EISDIR);
    }

    #[test]
    fn readdir_contents() {
        let root = fs();
        file(&root, "b", b"");
        root.mkdir(b"a", nn(0o755)).unwrap();
        root.symlink(b"c", b"b", nn(0)).unwrap();
        let e = root.readdir().unwrap();
        assert_eq!(names(&root), ["a", "b", "c"]);
        assert_eq!(e[0].kind, libc::DT_DIR);
        assert_eq!(e[1].kind, libc::DT_REG);
        assert_eq!(e[2].kind, libc::DT_LNK);
        assert_eq!(e[1].ino, get(&root, "b").stat().unwrap().ino);
        assert_eq!(err(get(&root, "b").readdir()), Errno::ENOTDIR);
    }

    #[test]
    fn rename_moves_and_replaces() {
        let root = fs();
        root.mkdir(b"d", nn(0o755)).unwrap();
        let d = get(&root, "d");
        let f = file(&root, "f", b"1");
        let g = file(&d, "g", b"2");
        root.rename(b"f", &d, b"g", 0).unwrap();
        assert_eq!(err(root.lookup(b"f")), Errno::ENOENT);
        assert_eq!(contents(&get(&d, "g")), b"1");
        assert_eq!(g.stat().unwrap().nlink, 0);
        assert_eq!(f.stat().unwrap().nlink, 1);
        d.rename(b"g", &root, b"h", 0).unwrap();
        assert_eq!(names(&root), ["d", "h"]);
        root.mkdir(b"e", nn(0o755)).unwrap();
        root.rename(b"e", &root, b"d", 0).unwrap();
        assert_eq!(names(&root), ["d", "h"]);
        root.link(b"i", &get(&root, "h")).unwrap();
        root.rename(b"h", &root, b"i", 0).unwrap();
        assert_eq!(names(&root), ["d", "h", "i"]);
        root.rename(b"h", &root, b"h", 0).unwrap();
    }

    #[test]
    fn rename_errors() {
        let root = fs();
        root.mkdir(b"d", nn(0o755)).unwrap();
        let d = get(&root, "d");
        d.mkdir(b"sub", nn(0o755)).unwrap();
        root.mkdir(b"full", nn(0o755)).unwrap();
        file(&get(&root, "full"), "x", b"");
        root.mkdir(b"empty", nn(0o755)).unwrap();
        file(&root, "f", b"");
        file(&root, "g", b"");
        assert_eq!(err(root.rename(b"nope", &root, b"x", 0)), Errno::ENOENT);
        assert_eq!(err(root.rename(b"f", &root, b"g", libc::RENAME_NOREPLACE)), Errno::EEXIST);
        assert_eq!(err(root.rename(b"d", &root, b"f", 0)), Errno::ENOTDIR);
        assert_eq!(err(root.rename(b"f", &root, b"d", 0)), Errno::EISDIR);
        assert_eq!(err(root.rename(b"empty", &root, b"full", 0)), Errno::ENOTEMPTY);
        assert_eq!(err(root.rename(b"d", &get(&d, "sub"), b"x", 0)), Errno::EINVAL);
        assert_eq!(err(root.rename(b"d", &d, b"x", 0)), Errno::EINVAL);
        assert_eq!(err(get(&d, "sub").rename(b"..", &root, b"d", 0)), Errno::ENOENT);
        let sub = get(&d, "sub");
        sub.mkdir(b"z", nn(0o755)).unwrap();
        assert_eq!(err(sub.rename(b"z", &root, b"d", 0)), Errno::ENOTEMPTY);
        assert_eq!(err(sub.rename(b"z", &root, b"d", libc::RENAME_EXCHANGE)), Errno::EINVAL);
        assert_eq!(err(root.rename(b"f", &fs(), b"f", 0)), Errno::EXDEV);
        assert_eq!(err(root.rename(b"f", &root, b"x", libc::RENAME_EXCHANGE)), Errno::ENOENT);
        let both = libc::RENAME_EXCHANGE | libc::RENAME_NOREPLACE;
        assert_eq!(err(root.rename(b"f", &root, b"g", both)), Errno::EINVAL);
        assert_eq!(err(root.rename(b"f", &root, b"g", 8)), Errno::EINVAL);
        assert_eq!(err(root.rename(b"f", &get(&root, "f"), b"g", 0)), Errno::ENOTDIR);
        root.rename(b"f", &root, b"new", libc::RENAME_NOREPLACE).unwrap();
    }

    #[test]
    fn rename_exchange() {
        let root = fs();
        root.mkdir(b"d", nn(0o755)).unwrap();
        let d = get(&root, "d");
        file(&d, "inner", b"");
        file(&root, "f", b"file");
        root.rename(b"f", &root, b"d", libc::RENAME_EXCHANGE).unwrap();
        assert_eq!(contents(&get(&root, "d")), b"file");
        assert_eq!(names(&get(&root, "f")), ["inner"]);
        root.mkdir(b"e", nn(0o755)).unwrap();
        let e = get(&root, "e");
        root.rename(b"d", &e, b"inner2", 0).unwrap();
        e.rename(b"inner2", &get(&root, "f"), b"inner", libc::RENAME_EXCHANGE).unwrap();
        assert_eq!(contents(&get(&e, "inner2")), b"");
        assert_eq!(contents(&get(&get(&root, "f"), "inner")), b"file");
    }

    #[test]
    fn setattr_fields() {
        let root = fs();
        let f = file(&root, "f", b"");
        f.setattr(&SetAttr { mode: Some(S_IFDIR | 0o4755), ..SetAttr::default() }).unwrap();
        assert_eq!(f.stat().unwrap().mode, S_IFREG | 0o4755);
        f.setattr(&SetAttr { uid: Some(5), gid: Some(6), ..SetAttr::default() }).unwrap();
        let st = f.stat().unwrap();
        assert_eq!((st.mode, st.uid, st.gid), (S_IFREG | 0o755, 5, 6));
        let t = TimeSpec { sec: 1000, nsec: 5 };
        f.setattr(&SetAttr { atime: Some(SetTime::At(t)), mtime: Some(SetTime::At(t)), ..SetAttr::default() }).unwrap();
        let st = f.stat().unwrap();
        assert_eq!((st.atime, st.mtime), (t, t));
        assert!(st.ctime.sec > 1000);
        f.setattr(&SetAttr { mtime: Some(SetTime::Now), ..SetAttr::default() }).unwrap();
        assert!(f.stat().unwrap().mtime.sec > 1000);
    }

    #[test]
    fn setgid_directory_is_inherited() {
        let root = Tmpfs::new(0o2775, 0, 50);
        root.mkdir(b"d", nn(0o755)).unwrap();
        let st = get(&root, "d").stat().unwrap();
        assert_eq!((st.mode, st.gid), (S_IFDIR | 0o2755, 50));
        assert_eq!(file(&root, "f", b"").stat().unwrap().gid, 50);
    }

    #[test]
    fn timestamps_move_forward() {
        let root = fs();
        let f = file(&root, "f", b"");
        let old = TimeSpec { sec: 1, nsec: 0 };
        let at = SetTime::At(old);
        f.setattr(&SetAttr { atime: Some(at), mtime: Some(at), ..SetAttr::default() }).unwrap();
        root.setattr(&SetAttr { mtime: Some(at), ..SetAttr::default() }).unwrap();
        f.open(RDWR).unwrap().write(b"x", 0).unwrap();
        let st = f.stat().unwrap();
        assert!(st.mtime.sec > 1 && st.ctime.sec > 1);
        assert_eq!(st.atime, old);
        f.open(libc::O_RDONLY).unwrap().read(&mut [0; 1], 0).unwrap();
        assert!(f.stat().unwrap().atime.sec > 1);
        file(&root, "g", b"");
        assert!(root.stat().unwrap().mtime.sec > 1);
        root.setattr(&SetAttr { mtime: Some(at), ..SetAttr::default() }).unwrap();
        root.unlink(b"g", false).unwrap();
        assert!(root.stat().unwrap().mtime.sec > 1);
    }

    #[test]
    fn statfs_and_identity() {
        let a = fs();
        let b = fs();
        assert_ne!(a.fs_id(), b.fs_id());
        assert_ne!(a.stat().unwrap().dev, b.stat().unwrap().dev);
        let before = a.statfs().unwrap();
        assert_eq!(before.fs_type, TMPFS_MAGIC);
        let f = file(&a, "f", &[1; 10000]);
        assert_eq!(a.statfs().unwrap().bfree, before.bfree - 3);
        assert_eq!(a.statfs().unwrap().ffree, before.ffree - 1);
        a.unlink(b"f", false).unwrap();
        drop(f);
        assert_eq!(a.statfs().unwrap().bfree, before.bfree);
        assert_ne!(get_ino(&a, "x"), get_ino(&a, "y"));
    }

    /// Each extended attribute is charged with its bookkeeping and
    /// returned when removed; an inode's attributes are bounded together
    /// (ENOSPC), however small each one is.
    #[test]
    fn xattrs_are_charged_and_bounded_per_inode() {
        let acct = Accountant::unlimited();
        let root = Tmpfs::charged_to(acct.clone(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        let base = acct.charged();
        n.setxattr(b"user.a", b"xyz", 0).unwrap();
        assert_eq!(acct.charged(), base + 6 + 3 + XATTR_ENTRY_COST);
        n.removexattr(b"user.a").unwrap();
        assert_eq!(acct.charged(), base);
        n.setxattr(b"user.big", &vec![7; 65536], 0).unwrap();
        let mut made = 0;
        let err = loop {
            match n.setxattr(format!("user.{made}").as_bytes(), &[0; 200], 0) {
                Ok(()) => made += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(err, Errno::ENOSPC);
        let held = acct.charged() - base;
        assert!(held <= XATTR_INODE_MAX && held + 220 + XATTR_ENTRY_COST > XATTR_INODE_MAX, "{held}");
        assert!(made > 0 && made < 300, "{made}");
        let other = root.create(b"g", nn(0o644)).unwrap();
        other.setxattr(b"user.a", b"1", 0).unwrap();
    }

    #[test]
    fn pages_are_charged_sparse_and_refused_past_the_limit() {
        // 60 pages of data may be charged (the last sixteenth of 64 is kept
        // for anonymous memory); the two files themselves take some.
        let acct = Accountant::new(64 * PAGE_SIZE);
        let root = Tmpfs::charged_to(acct.clone(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        let gn = root.create(b"g", nn(0o644)).unwrap();
        let nodes = 2 * (INODE_COST + 1);
        assert_eq!(acct.charged(), nodes);
        let f = n.open(RDWR).unwrap();
        f.truncate(1 << 40).unwrap();
        assert_eq!((n.stat().unwrap().blocks, acct.charged()), (0, nodes), "growth by truncate is a hole");
        let mut buf = [7u8; 3];
        assert_eq!(f.read(&mut buf, 5 << 30).unwrap(), 3);
        assert_eq!(buf, [0; 3]);
        f.truncate(0).unwrap();
        let page = vec![1u8; page_len()];
        let big = vec![2u8; 70 * page_len()];
        assert_eq!(f.write(&big, 0).unwrap(), 59 * page_len(), "a partial write first");
        assert_eq!(err(f.write(&page, 59 * PAGE_SIZE)), Errno::ENOSPC);
        assert_eq!(f.write(&page, 0).unwrap(), page_len(), "pages held take writes");
        assert_eq!(root.statfs().unwrap().bfree, 0);
        let g = gn.open(RDWR).unwrap();
        assert_eq!(err(g.write(b"x", 0)), Errno::ENOSPC);
        f.truncate(PAGE_SIZE + 1).unwrap();
        assert_eq!(acct.charged(), nodes + 2 * PAGE_SIZE);
        assert_eq!(g.write(b"x", 0).unwrap(), 1);
        root.unlink(b"f", false).unwrap();
        drop(n);
        assert_eq!(acct.charged(), nodes + 3 * PAGE_SIZE, "still open");
        drop(f);
        assert_eq!(acct.charged(), nodes / 2 + PAGE_SIZE, "the last reference uncharged");
    }

    #[test]
    fn empty_nodes_are_charged_too() {
        let acct = Accountant::new(16 * INODE_COST);
        let root = Tmpfs::charged_to(acct.clone(), 0o755, 0, 0);
        let mut made = 0;
        while root.mkdir(format!("d{made}").as_bytes(), nn(0o755)).is_ok() {
            made += 1;
        }
        assert!((10..16).contains(&made), "{made} directories");
        assert_eq!(err(root.symlink(b"l", b"t", nn(0))), Errno::ENOSPC);
        root.unlink(b"d0", true).unwrap();
        root.symlink(b"l", b"t", nn(0)).unwrap();
    }

    #[test]
    fn filesystems_share_one_disk_budget() {
        // Room for the two files' nodes and 16 pages of data.
        let nodes = 2 * (INODE_COST + 1);
        let budget = DiskBudget::new(nodes + 16 * PAGE_SIZE);
        let acct = Accountant::unlimited();
        let (tmp, shm) = (
            Tmpfs::build(acct.clone(), Some(budget.clone()), TmpfsLimits::default(), 0o1777, 0, 0),
            Tmpfs::build(acct.clone(), Some(budget.clone()), TmpfsLimits::default(), 0o1777, 0, 0),
        );
        let (a, b) = (tmp.create(b"a", nn(0o644)).unwrap(), shm.create(b"b", nn(0o644)).unwrap());
        assert_eq!(budget.usage(), nodes);
        let (fa, fb) = (a.open(RDWR).unwrap(), b.open(RDWR).unwrap());
        assert_eq!(fa.write(&vec![1u8; 10 * page_len()], 0).unwrap(), 10 * page_len());
        assert_eq!(fb.write(&vec![2u8; 10 * page_len()], 0).unwrap(), 6 * page_len(), "what fits, then ENOSPC");
        assert_eq!(err(fb.write(b"x", 6 * PAGE_SIZE)), Errno::ENOSPC);
        assert_eq!(err(tmp.mkdir(b"d", nn(0o755))), Errno::ENOSPC, "a full budget takes no new node");
        assert_eq!(acct.charged(), budget.usage(), "a page the budget refused is not held in memory either");
        fa.truncate(1 << 30).unwrap();
        assert_eq!(budget.usage(), nodes + 16 * PAGE_SIZE, "growth by truncate is a hole");
        for fs in [&tmp, &shm] {
            let st = fs.statfs().unwrap();
            assert_eq!((st.blocks, st.bfree), (16, 0), "the budget's size, shared usage");
        }
        fa.truncate(PAGE_SIZE).unwrap();
        assert_eq!(budget.usage(), nodes + 7 * PAGE_SIZE);
        tmp.unlink(b"a", false).unwrap();
        drop(a);
        assert_eq!(budget.usage(), nodes + 7 * PAGE_SIZE, "still open");
        drop(fa);
        assert_eq!(budget.usage(), nodes / 2 + 6 * PAGE_SIZE, "the last reference freed its share");
        assert_eq!(fb.write(b"x", 6 * PAGE_SIZE).unwrap(), 1);
        assert_eq!(shm.statfs().unwrap().bfree, (nodes / 2 + 9 * PAGE_SIZE) / PAGE_SIZE);
    }

    #[test]
    fn holes_shared_mappings_fault_in_are_charged_to_the_disk_budget() {
        let budget = DiskBudget::new(INODE_COST + 1 + 2 * PAGE_SIZE);
        let root = Tmpfs::build(Accountant::unlimited(), Some(budget.clone()), TmpfsLimits::default(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        let f = n.open(RDWR).unwrap();
        f.truncate(8 * PAGE_SIZE).unwrap();
        let mf = Arc::new(MemoryFile::new(1 << 24).unwrap());
        let pages = f.mappable().unwrap().shared_pages(&mf).unwrap();
        let base = budget.usage();
        pages.frame(0).unwrap();
        pages.frame(0).unwrap();
        pages.frame(5).unwrap();
        assert_eq!(budget.usage(), base + 2 * PAGE_SIZE, "each page once");
        assert_eq!(pages.frame(6).err(), Some(Errno::ENOSPC), "past the limit: the fault's SIGBUS");
        assert_eq!(n.stat().unwrap().blocks, 2 * (PAGE_SIZE / 512));
        assert_eq!(f.write(b"x", 0).unwrap(), 1, "a mapped page is written without a second charge");
        assert_eq!(budget.usage(), base + 2 * PAGE_SIZE);
        f.truncate(0).unwrap();
        f.truncate(8 * PAGE_SIZE).unwrap();
        assert_eq!(budget.usage(), base + 2 * PAGE_SIZE, "frames a mapping may still store to stay charged");
        pages.frame(5).unwrap();
        assert_eq!(pages.frame(3).err(), Some(Errno::ENOSPC));
        drop((pages, f, n));
        root.unlink(b"f", false).unwrap();
        assert_eq!(budget.usage(), 0, "all freed with the file");
    }

    #[test]
    fn truncating_frees_what_no_mapping_holds() {
        let budget = DiskBudget::new(INODE_COST + 1 + 4 * PAGE_SIZE);
        let root = Tmpfs::build(Accountant::unlimited(), Some(budget.clone()), TmpfsLimits::default(), 0o755, 0, 0);
        let f = root.create(b"f", nn(0o644)).unwrap().open(RDWR).unwrap();
        f.write(&vec![1u8; 4 * page_len()], 0).unwrap();
        let mf = Arc::new(MemoryFile::new(1 << 24).unwrap());
        f.mappable().unwrap().shared_pages(&mf).unwrap().frame(0).unwrap();
        let base = budget.usage() - 4 * PAGE_SIZE;
        f.truncate(0).unwrap();
        assert_eq!(budget.usage(), base + PAGE_SIZE, "only the framed page stays charged");
    }

    #[test]
    fn hard_links_are_charged_until_unlinked() {
        let budget = DiskBudget::new(INODE_COST + 1 + 2 * LINK_COST);
        let acct = Accountant::unlimited();
        let root = Tmpfs::build(acct.clone(), Some(budget.clone()), TmpfsLimits::default(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        root.link(b"g", &n).unwrap();
        root.link(b"h", &n).unwrap();
        assert_eq!(budget.usage(), INODE_COST + 1 + 2 * LINK_COST);
        assert_eq!(root.link(b"i", &n).err(), Some(Errno::ENOSPC), "a link past the budget");
        assert_eq!(acct.charged(), budget.usage(), "nor held in memory");
        root.unlink(b"f", false).unwrap();
        assert_eq!(budget.usage(), INODE_COST + 1 + LINK_COST, "any name returns a link's share");
        root.link(b"i", &n).unwrap();
        for name in [&b"g"[..], b"h", b"i"] {
            root.unlink(name, false).unwrap();
        }
        drop(n);
        assert_eq!(budget.usage(), 0);
    }

    #[test]
    fn fallocate_holds_pages_or_none() {
        let budget = DiskBudget::new(INODE_COST + 1 + 8 * PAGE_SIZE);
        let root = Tmpfs::build(Accountant::unlimited(), Some(budget.clone()), TmpfsLimits::default(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        let f = n.open(RDWR).unwrap();
        f.write(b"keep", PAGE_SIZE).unwrap();
        let used = budget.usage();
        assert_eq!(err(f.allocate(0, 9 * PAGE_SIZE, RESERVE)), Errno::ENOSPC);
        assert_eq!((budget.usage(), n.stat().unwrap().size), (used, PAGE_SIZE + 4), "a refusal holds nothing");
        f.allocate(10, 3 * PAGE_SIZE, Allocate::Reserve { keep_size: true }).unwrap();
        let st = n.stat().unwrap();
        assert_eq!((st.size, st.blocks), (PAGE_SIZE + 4, 4 * 8), "pages 0..4 held, the size kept");
        f.allocate(0, 5 * PAGE_SIZE + 1, RESERVE).unwrap();
        assert_eq!(n.stat().unwrap().size, 5 * PAGE_SIZE + 1);
        assert_eq!(contents(&n)[usize::try_from(PAGE_SIZE).unwrap()..][..4], *b"keep", "held data stays");
        assert_eq!(budget.usage(), used + 5 * PAGE_SIZE);
        assert_eq!(err(f.allocate(MAX_FILE_SIZE, 1, RESERVE)), Errno::EFBIG);
    }

    const RESERVE: Allocate = Allocate::Reserve { keep_size: false };

    /// `size=` counts data pages alone (names and inodes are free, a long
    /// symlink takes a page); `nr_inodes=` counts the root too.
    #[test]
    fn a_sized_tmpfs_counts_pages_and_inodes_as_linux() {
        let limits = TmpfsLimits { size: Some(PAGE_SIZE + 1), inodes: Some(4) };
        let root = Tmpfs::build(Accountant::unlimited(), None, limits, 0o755, 0, 0);
        assert_eq!(root.statfs().unwrap().blocks, 2, "rounded up to pages");
        let n = root.create(b"f", nn(0o644)).unwrap();
        let f = n.open(RDWR).unwrap();
        f.allocate(0, 2 * PAGE_SIZE, RESERVE).unwrap();
        assert_eq!(err(f.allocate(0, 2 * PAGE_SIZE + 1, RESERVE)), Errno::ENOSPC);
        f.truncate(PAGE_SIZE).unwrap();
        root.symlink(b"short", &[b'a'; SHORT_SYMLINK_LEN - 1], nn(0o777)).unwrap();
        root.symlink(b"long", &[b'a'; SHORT_SYMLINK_LEN], nn(0o777)).unwrap();
        assert_eq!(err(f.write(b"x", PAGE_SIZE)), Errno::ENOSPC, "the long link took the last page");
        assert_eq!(err(root.mkdir(b"d", nn(0o755))), Errno::ENOSPC, "four inodes with the root");
        root.unlink(b"long", false).unwrap();
        assert_eq!(f.write(b"xy", 2 * PAGE_SIZE - 1), Ok(1), "a write stops at the size");
        root.mkdir(b"d", nn(0o755)).unwrap();
        let st = root.statfs().unwrap();
        assert_eq!((st.files, st.ffree, st.bfree), (4, 0, 0));
    }

    #[test]
    fn punching_a_hole_zeroes_and_gives_pages_back() {
        let budget = DiskBudget::new(1 << 30);
        let root = Tmpfs::build(Accountant::unlimited(), Some(budget.clone()), TmpfsLimits::default(), 0o755, 0, 0);
        let n = root.create(b"f", nn(0o644)).unwrap();
        let f = n.open(RDWR).unwrap();
        let page = usize::try_from(PAGE_SIZE).unwrap();
        f.write(&vec![7u8; 4 * page], 0).unwrap();
        let used = budget.usage();
        f.allocate(100, 2 * PAGE_SIZE, Allocate::PunchHole).unwrap();
        let data = contents(&n);
        assert_eq!(data.len(), 4 * page, "the size stays");
        assert!(data[..100].iter().all(|&b| b == 7) && data[100 + 2 * page..].iter().all(|&b| b == 7));
        assert!(data[100..100 + 2 * page].iter().all(|&b| b == 0), "the range reads as zeros");
        assert_eq!(budget.usage(), used - PAGE_SIZE, "the one page wholly inside is given back");
        assert_eq!(n.stat().unwrap().blocks, 3 * 8);
        // Past the end, and pages held past it by KEEP_SIZE.
        f.allocate(4 * PAGE_SIZE, 4 * PAGE_SIZE, Allocate::Reserve { keep_size: true }).unwrap();
        f.allocate(3 * PAGE_SIZE, u64::MAX / 2, Allocate::PunchHole).unwrap();
        assert_eq!(n.stat().unwrap().blocks, 2 * 8);
        assert_eq!(n.stat().unwrap().size, 4 * PAGE_SIZE);
        assert_eq!(err(f.allocate(0, 1, Allocate::ZeroRange { keep_size: false })), Errno::EOPNOTSUPP);
    }

    #[test]
    fn a_tmpfs_without_a_budget_is_bounded_by_memory_alone() {
        let root = Tmpfs::with_disk(None, 0o755, 0, 0);
        let f = file(&root, "f", &vec![1u8; 20 * page_len()]);
        assert_eq!(f.stat().unwrap().size, 20 * PAGE_SIZE);
        assert_eq!(root.statfs().unwrap().blocks, NOMINAL_BLOCKS);
    }

    fn get_ino(dir: &Arc<dyn Node>, name: &str) -> u64 {
        file(dir, name, b"").stat().unwrap().ino
    }
}
