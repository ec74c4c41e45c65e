//! SysV shared memory segments (Linux's `ipc/shm.c`). A segment's pages
//! are MemoryFile frames in a page cache of its own, made on first touch
//! and so charged to the sandbox's memory like any other guest page.
//!
//! An attachment (one `shmat`) is the file of the shared mappings it made:
//! each area holds a reference, so areas split by mprotect, copied by
//! fork and dropped by munmap, exec or exit count as Linux's `shm_nattch`
//! counts VMAs. A segment removed with IPC_RMID while attached stays (its
//! key private, SHM_DEST set) until its last attachment goes.

use super::{Slot, Table};
use crate::abi::{page_up, Errno, PAGE_SIZE};
use crate::mm::page_cache::{PageCache, SharedPages};
use crate::mm::{Mappable, MemoryFile};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};

/// `shm_perm.mode` flags: removed while attached, and locked in memory.
pub(crate) const SHM_DEST: u16 = 0o1000;
pub(crate) const SHM_LOCKED: u16 = 0o2000;

/// The limits of `/proc/sys/kernel/shm*`, at Linux's defaults.
pub(crate) const SHMMIN: u64 = 1;
pub(crate) const SHMMAX: u64 = u64::MAX - (1 << 24);
pub(crate) const SHMALL: u64 = u64::MAX - (1 << 24);
pub(crate) const SHMMNI: u32 = 4096;

/// A segment's times and the pids of its creator and last user.
#[derive(Clone, Copy, Debug, Default)]
pub struct Times {
    pub atime: i64,
    pub dtime: i64,
    pub ctime: i64,
    pub cpid: i32,
    pub lpid: i32,
}

/// One shared memory segment.
pub struct Segment {
    pub id: i32,
    /// The size asked for (`shm_segsz`); attachments map it page-rounded.
    pub size: u64,
    pages: Arc<PageCache>,
    pub times: Mutex<Times>,
    attachments: Mutex<Vec<Weak<Attachment>>>,
    registry: Weak<Registry>,
}

impl Segment {
    /// The pages an attachment maps.
    pub fn mapped_len(&self) -> u64 {
        page_up(self.size).unwrap_or(self.size)
    }

    /// `shm_nattch`: the mapped areas of every attachment.
    pub fn nattch(&self) -> u64 {
        let mut list = self.attachments.lock();
        list.retain(|w| w.strong_count() > 0);
        list.iter().map(|w| u64::try_from(w.strong_count()).unwrap_or(0)).sum()
    }

    /// Pages that hold a frame (`shm_rss`).
    pub fn resident_pages(&self) -> u64 {
        self.pages.frames()
    }

    /// Whether `file` is one of this segment's attachments.
    fn owns(&self, file: &Arc<dyn Mappable>) -> bool {
        self.attachments.lock().iter().any(|w| std::ptr::addr_eq(w.as_ptr(), Arc::as_ptr(file)))
    }

    /// A new attachment by process `pid`, for one `shmat`.
    pub fn attach(self: &Arc<Self>, pid: i32) -> Arc<Attachment> {
        let a = Arc::new(Attachment { segment: self.clone() });
        self.attachments.lock().push(Arc::downgrade(&a));
        let mut t = self.times.lock();
        t.atime = super::now();
        t.lpid = pid;
        a
    }
}

/// The mappings of one `shmat`: what their areas hold as their file.
pub struct Attachment {
    pub segment: Arc<Segment>,
}

impl Mappable for Attachment {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let size = self.segment.mapped_len();
        let n = usize::try_from(size.saturating_sub(off)).unwrap_or(usize::MAX).min(buf.len());
        let (mut at, mut done) = (off, 0);
        while done < n {
            let in_page = at % PAGE_SIZE;
            let chunk = usize::try_from(PAGE_SIZE - in_page).unwrap_or(n).min(n - done);
            let dst = &mut buf[done..done + chunk];
            if !self.segment.pages.read_cached(at / PAGE_SIZE, in_page, dst) {
                dst.fill(0);
            }
            done += chunk;
            at += chunk as u64;
        }
        Ok(n)
    }

    fn map_name(&self) -> String {
        let key = self.segment.registry.upgrade().and_then(|r| r.key_of(&self.segment)).unwrap_or(0);
        format!("/SYSV{key:08x} (deleted)")
    }

    fn map_ids(&self) -> (u64, u64) {
        (1, u64::try_from(self.segment.id).unwrap_or(0))
    }

    fn shared_pages(&self, _mf: &Arc<MemoryFile>) -> Option<Arc<dyn SharedPages>> {
        Some(Arc::new(SegmentPages(self.segment.pages.clone())))
    }

    fn sysv_shm_size(&self) -> Option<u64> {
        Some(self.segment.size)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.segment.times.lock().dtime = super::now();
        if let Some(r) = self.segment.registry.upgrade() {
            r.detached(&self.segment);
        }
    }
}

/// A segment's pages as its mappings take them: zero-filled when new.
struct SegmentPages(Arc<PageCache>);

impl SharedPages for SegmentPages {
    fn frame(&self, index: u64) -> Result<u64, Errno> {
        self.0.frame(index, |_| {})
    }
}

/// The sandbox's segments.
#[derive(Default)]
pub struct Registry {
    pub table: Table<Segment>,
}

impl Registry {
    /// `shmget` of `size` bytes: the checks of `newseg` and `shm_more_checks`.
    pub fn get(
        self: &Arc<Self>,
        req: super::GetRequest,
        size: u64,
        creds: &crate::auth::Credentials,
        mf: &Arc<MemoryFile>,
        pid: i32,
    ) -> Result<i32, Errno> {
        let make = |id: i32, others: &mut dyn Iterator<Item = &Slot<Segment>>| {
            if !(SHMMIN..=SHMMAX).contains(&size) {
                return Err(Errno::EINVAL);
            }
            let pages = size.div_ceil(PAGE_SIZE);
            let total: u64 = others.map(|s| s.obj.mapped_len() / PAGE_SIZE).sum();
            if total.checked_add(pages).is_none_or(|t| t > SHMALL) {
                return Err(Errno::ENOSPC);
            }
            let now = super::now();
            Ok(Segment {
                id,
                size,
                pages: PageCache::new(mf.clone()),
                times: Mutex::new(Times { ctime: now, cpid: pid, ..Times::default() }),
                attachments: Mutex::new(Vec::new()),
                registry: Arc::downgrade(self),
            })
        };
        let existing = |s: &Slot<Segment>| if s.obj.size < size { Err(Errno::EINVAL) } else { Ok(()) };
        self.table.get(req, creds, SHMMNI, existing, make)
    }

    /// IPC_RMID: the segment goes now if nothing is attached, else when
    /// its last attachment does; its key is free at once.
    pub fn remove(&self, id: i32) -> Result<(), Errno> {
        let seg = self.table.with(id, |s| {
            s.perm.mode |= SHM_DEST;
            s.perm.key = super::IPC_PRIVATE;
            Ok(s.obj.clone())
        })?;
        if seg.nattch() == 0 {
            self.table.remove(id, &seg);
        }
        Ok(())
    }

    /// Process `pid` detached `files` (shmdt, or its exit): their segments
    /// record it as their last user (`shm_lpid`) before the files go.
    pub fn detached_by(&self, files: Vec<Arc<dyn Mappable>>, pid: i32) {
        if files.is_empty() {
            return;
        }
        let now = super::now();
        for (_, _, seg) in self.table.all() {
            if files.iter().any(|f| seg.owns(f)) {
                let mut t = seg.times.lock();
                t.lpid = pid;
                t.dtime = now;
            }
        }
    }

    /// An attachment went: a removed segment with none left goes.
    fn detached(&self, seg: &Arc<Segment>) {
        let dest = self.table.with(seg.id, |s| Ok(Arc::ptr_eq(&s.obj, seg) && s.perm.mode & SHM_DEST != 0));
        if dest == Ok(true) && seg.nattch() == 0 {
            self.table.remove(seg.id, seg);
        }
    }

    fn key_of(&self, seg: &Arc<Segment>) -> Option<i32> {
        self.table.with(seg.id, |s| Ok(s.perm.key)).ok()
    }

    /// The segments' pages together, and those resident (SHM_INFO).
    pub fn totals(&self) -> (u64, u64) {
        self.table
            .all()
            .iter()
            .fold((0, 0), |(tot, rss), (_, _, s)| (tot + s.mapped_len() / PAGE_SIZE, rss + s.resident_pages()))
    }

    /// The text of /proc/sysvipc/shm.
    pub fn proc_text(&self) -> String {
        let mut out = String::from(
            "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n",
        );
        for (id, p, s) in self.table.all() {
            let t = *s.times.lock();
            let rss = s.resident_pages() * PAGE_SIZE;
            out.push_str(&format!(
                "{:>10} {:>10}  {:>4o} {:>21} {:>5} {:>5}  {:>5} {:>5} {:>5} {:>5} {:>5} {:>10} {:>10} {:>10} {:>21} {:>21}\n",
                p.key,
                id,
                p.mode,
                s.size,
                t.cpid,
                t.lpid,
                s.nattch(),
                p.uid,
                p.gid,
                p.cuid,
                p.cgid,
                t.atime,
                t.dtime,
                t.ctime,
                rss,
                0
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::kernel::ipc::{GetRequest, IPC_CREAT, IPC_PRIVATE};

    fn setup() -> (Arc<Registry>, Arc<MemoryFile>, Credentials) {
        let mf = Arc::new(MemoryFile::new(64 << 20).unwrap());
        (Arc::new(Registry::default()), mf, Credentials::new(0, 0))
    }

    #[test]
    fn sizes_are_checked_and_keys_share_a_segment() {
        let (r, mf, c) = setup();
        let get = |key, flags, size| r.get(GetRequest { key, flags }, size, &c, &mf, 1);
        assert_eq!(get(IPC_PRIVATE, 0o600, 0), Err(Errno::EINVAL));
        let id = get(9, IPC_CREAT | 0o600, 5000).unwrap();
        assert_eq!(get(9, 0, 4096), Ok(id), "a smaller size finds it");
        assert_eq!(get(9, 0, 5001), Err(Errno::EINVAL), "a larger one does not");
        let seg = r.table.with(id, |s| Ok(s.obj.clone())).unwrap();
        assert_eq!((seg.size, seg.mapped_len()), (5000, 8192));
    }

    #[test]
    fn removal_waits_for_the_last_attachment() {
        let (r, mf, c) = setup();
        let id = r.get(GetRequest { key: 3, flags: IPC_CREAT | 0o600 }, 4096, &c, &mf, 1).unwrap();
        let seg = r.table.with(id, |s| Ok(s.obj.clone())).unwrap();
        let a = seg.attach(1);
        let copy = a.clone(); // a second area (a fork's copy)
        assert_eq!(seg.nattch(), 2);
        let frame = SegmentPages(seg.pages.clone()).frame(0).unwrap();
        mf.write(frame, b"kept");
        mf.decref(frame);
        r.remove(id).unwrap();
        let (mode, key) = r.table.with(id, |s| Ok((s.perm.mode, s.perm.key))).unwrap();
        assert_eq!((mode & SHM_DEST, key), (SHM_DEST, IPC_PRIVATE));
        drop(a);
        assert!(r.table.with(id, |_| Ok(())).is_ok(), "still attached once");
        let mut buf = [0u8; 4];
        copy.read_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"kept");
        drop(copy);
        assert_eq!(r.table.with(id, |_| Ok(())).err(), Some(Errno::EINVAL));
        drop(seg);
        assert_eq!(mf.committed(), 0, "its pages went back");
    }
}
