//! The MemoryManager: the VMAs and pages of one guest address space, the
//! single source of truth that the platform's address space mirrors lazily
//! (pages are mapped into the platform on first fault).

use super::vma::{Backing, Lock, PageEntry, Vma, VmaName};
use super::{Mappable, MemoryFile};
use crate::abi::{page_down, page_up, Errno, PAGE_SIZE};
use crate::platform::{AddressSpace, Perms};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The lowest address a guest may map (vm.mmap_min_addr).
pub(crate) const MMAP_MIN_ADDR: u64 = 0x10000;
/// One past the highest guest address.
pub(crate) use crate::platform::TASK_SIZE;
/// Pages populated together around a fault.
const FAULT_WINDOW: u64 = 16 * PAGE_SIZE;
/// The longest C string the sentry reads from the guest in one piece.
const CSTRING_CHUNK: usize = 256;

/// An access the guest may not make: deliver `SIGSEGV` with this `si_code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segv {
    /// SEGV_MAPERR: nothing is mapped there.
    MapErr,
    /// SEGV_ACCERR: mapped, but not with that access.
    AccErr,
    /// No memory is left for the page: Linux's OOM killer ends the
    /// process instead of signalling a fault.
    OutOfMemory,
    /// The page of a shared file mapping cannot be held: its filesystem
    /// is full (the disk limit), and Linux's shmem answers SIGBUS.
    Bus,
}

fn fault_error(e: Errno) -> Segv {
    match e {
        Errno::ENOMEM => Segv::OutOfMemory,
        Errno::ENOSPC => Segv::Bus,
        _ => Segv::MapErr,
    }
}

/// The guest's request to `mmap`, after argument decoding.
pub struct MapRequest {
    pub addr: u64,
    pub len: u64,
    pub perms: Perms,
    pub fixed: bool,
    /// `MAP_FIXED_NOREPLACE`.
    pub noreplace: bool,
    pub shared: bool,
    pub backing: Backing,
    pub name: VmaName,
}

/// The caller's resource limits that bound what an address space may
/// grow to, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmLimits {
    /// RLIMIT_AS: all mappings together.
    pub address_space: u64,
    /// RLIMIT_DATA: the heap (brk).
    pub data: u64,
    /// RLIMIT_MEMLOCK: locked areas together; None with CAP_IPC_LOCK,
    /// which locks without a limit.
    pub memlock: Option<u64>,
}

impl VmLimits {
    /// No limit at all (the loader's own mappings).
    pub const NONE: VmLimits = VmLimits { address_space: u64::MAX, data: u64::MAX, memlock: None };

    /// Linux's `mlock_future_ok`: whether `more` bytes may be locked on
    /// top of `locked`.
    pub(crate) fn may_lock(&self, locked: u64, more: u64) -> bool {
        self.memlock.is_none_or(|limit| locked.saturating_add(more) <= limit)
    }

    /// Linux's `may_expand_vm` for RLIMIT_AS: whether `more` bytes may be
    /// mapped on top of `mapped` (asked only under a limit: it walks the
    /// areas).
    pub(crate) fn may_map(&self, mapped: impl FnOnce() -> u64, more: u64) -> bool {
        self.address_space == u64::MAX || mapped().saturating_add(more) <= self.address_space
    }

    /// Linux's `can_do_mlock`: a zero limit forbids locking altogether
    /// (EPERM) to a caller without CAP_IPC_LOCK.
    pub(crate) fn can_lock(&self) -> bool {
        self.memlock != Some(0)
    }
}

/// The guest's request to `mremap`, after flag decoding.
pub struct RemapRequest {
    pub addr: u64,
    pub old_len: u64,
    pub new_len: u64,
    /// MREMAP_MAYMOVE.
    pub may_move: bool,
    /// MREMAP_FIXED: the new address, whatever is there replaced.
    pub fixed: Option<u64>,
    /// MREMAP_DONTUNMAP: the old range stays mapped.
    pub dont_unmap: bool,
    /// The new address argument; without MREMAP_FIXED, MREMAP_DONTUNMAP
    /// takes it as a hint and other moves ignore it.
    pub hint: u64,
    /// The caller's limits, for growth.
    pub limits: VmLimits,
}

/// A copy of an address space's areas for a fork child, with every page
/// shared copy-on-write.
pub struct ForkImage {
    mf: Arc<MemoryFile>,
    /// Taken by the child; an image dropped unused releases its pages.
    layout: Option<Layout>,
    /// The parent's membarrier registrations: a fork keeps them.
    membarrier_registrations: u32,
}

impl Drop for ForkImage {
    fn drop(&mut self) {
        if let Some(l) = &self.layout {
            for v in l.vmas.values() {
                for e in v.pages.values() {
                    self.mf.decref(e.frame());
                }
            }
        }
    }
}

#[derive(Clone)]
pub(super) struct Layout {
    pub(super) vmas: BTreeMap<u64, Vma>,
    brk_start: u64,
    brk: u64,
    /// Top-down placement of mappings starts below this address.
    mmap_top: u64,
    /// How new areas are locked (mlockall's MCL_FUTURE, Linux's
    /// `mm->def_flags`).
    pub(super) def_lock: Lock,
}

impl Layout {
    /// This layout's break and placement without its areas.
    fn clone_empty(&self) -> Layout {
        Layout { brk_start: self.brk_start, brk: self.brk, ..Layout::empty(self.mmap_top) }
    }

    fn empty(mmap_top: u64) -> Layout {
        Layout { vmas: BTreeMap::new(), brk_start: 0, brk: 0, mmap_top, def_lock: Lock::None }
    }

    /// Bytes in locked areas (Linux's `mm->locked_vm`).
    pub(super) fn locked_bytes(&self) -> u64 {
        self.vmas.values().filter(|v| v.flags.lock.locked()).map(Vma::size).sum()
    }

    /// Bytes mapped (Linux's `mm->total_vm`).
    pub(super) fn total_bytes(&self) -> u64 {
        self.vmas.values().map(Vma::size).sum()
    }

    /// Bytes of `[start, end)` that areas cover.
    pub(super) fn covered(&self, start: u64, end: u64, only: impl Fn(&Vma) -> bool) -> u64 {
        let first = find(self, start).map_or(start, |v| v.start);
        self.vmas
            .range(first..end)
            .map(|(_, v)| v)
            .filter(|v| only(v))
            .map(|v| v.end.min(end) - v.start.max(start))
            .sum()
    }
}

pub struct MemoryManager {
    mf: Arc<MemoryFile>,
    space: Arc<dyn AddressSpace>,
    pub(super) layout: Mutex<Layout>,
    /// Pages a debugger's write gave a private copy while the platform
    /// still maps the old frame: only a thread running this space may
    /// change its mappings, so the next one to run unmaps them
    /// (`unmap_stale`). Each page comes with its old frame, whose
    /// reference is kept until then: freed earlier, the frame could be
    /// reused (or written in place by the other sharer of a copy-on-write
    /// page) while this space's threads still read it.
    stale: Mutex<Vec<(u64, u64)>>,
    /// The membarrier(2) commands this address space registered for
    /// (`MEMBARRIER_CMD_REGISTER_*` bits), as Linux's per-mm state: a
    /// fork's copy keeps them, an exec's new space starts with none.
    pub membarrier_registrations: AtomicU32,
}

/// Where one piece of a copy reads or writes.
#[derive(Clone, Copy)]
enum Source {
    /// At this offset of the memory file.
    Frame(u64),
    /// A page never touched: it reads as zeros.
    Zero,
}

/// The access a copy needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Read,
    Write,
    /// A debugger's read or write (Linux's FOLL_FORCE): any mapped area
    /// is read; a private one is written through its copy-on-write copy
    /// even if read-only (a breakpoint in text), a shared one only if
    /// writable.
    ForceRead,
    ForceWrite,
    /// A write by a thread that does not run this space
    /// (`process_vm_writev`): the area must be writable, and a private
    /// copy it makes is recorded as stale like a debugger's.
    ForeignWrite,
}

impl Want {
    fn writes(self) -> bool {
        matches!(self, Want::Write | Want::ForceWrite | Want::ForeignWrite)
    }
}

impl MemoryManager {
    /// An empty address space; `mmap_top` is where top-down placement starts.
    pub fn new(mf: Arc<MemoryFile>, space: Arc<dyn AddressSpace>, mmap_top: u64) -> MemoryManager {
        let layout = Layout::empty(mmap_top);
        MemoryManager {
            mf,
            space,
            layout: Mutex::new(layout),
            stale: Mutex::new(Vec::new()),
            membarrier_registrations: AtomicU32::new(0),
        }
    }

    /// Shares every page with a child (copy-on-write for private areas)
    /// and write-protects the parent's private pages. Runs on the parent's
    /// host thread, which can change the parent's platform mappings. (An
    /// entry's mapped flags change only together with the platform's
    /// mapping, under the layout lock.)
    pub fn fork_image(&self) -> Result<ForkImage, Errno> {
        let mut l = self.layout.lock();
        let mut to_unmap = Vec::new();
        // MADV_DONTFORK areas stay out of the child, MADV_WIPEONFORK ones
        // come empty: neither shares a page.
        for v in l.vmas.values_mut().filter(|v| !v.flags.dontfork && !v.flags.wipeonfork) {
            for e in v.pages.values_mut() {
                self.mf.incref(e.frame());
                if !v.shared && e.mapped_writable() {
                    *e = e.with_mapping(false, false);
                    if to_unmap.last() != Some(&(v.start, v.end)) {
                        to_unmap.push((v.start, v.end));
                    }
                }
            }
        }
        // A child's areas are not locked and MCL_FUTURE is not inherited
        // (Linux's dup_mmap).
        let vmas = l.vmas.iter().filter(|(_, v)| !v.flags.dontfork).map(|(&k, v)| (k, v.clone())).collect();
        let mut child = Layout { vmas, def_lock: Lock::None, ..l.clone_empty() };
        for v in child.vmas.values_mut() {
            v.flags.lock = Lock::None;
            if v.flags.wipeonfork {
                v.pages.clear();
            }
            for e in v.pages.values_mut() {
                *e = e.with_mapping(false, false);
            }
        }
        let registrations = self.membarrier_registrations.load(std::sync::atomic::Ordering::Acquire);
        let image = ForkImage { mf: self.mf.clone(), layout: Some(child), membarrier_registrations: registrations };
        // Still under the lock: until these pages really are read-only in
        // the platform, another thread of this process must not see their
        // entries as unmapped (it would copy a page while writes still go
        // to the old frame).
        for (start, end) in to_unmap {
            self.space_unmap(start, end - start)?;
        }
        drop(l);
        Ok(image)
    }

    /// The child's memory manager, built on the child's host thread.
    pub fn from_fork_image(space: Arc<dyn AddressSpace>, mut image: ForkImage) -> MemoryManager {
        let layout = image.layout.take().unwrap_or_else(|| Layout::empty(0));
        MemoryManager {
            mf: image.mf.clone(),
            space,
            layout: Mutex::new(layout),
            stale: Mutex::new(Vec::new()),
            membarrier_registrations: AtomicU32::new(image.membarrier_registrations),
        }
    }

    pub fn space(&self) -> &Arc<dyn AddressSpace> {
        &self.space
    }

    pub fn memory_file(&self) -> &Arc<MemoryFile> {
        &self.mf
    }

    /// Sets the program break (by the loader, after the last segment).
    pub fn set_brk_start(&self, addr: u64) {
        let mut l = self.layout.lock();
        l.brk_start = addr;
        l.brk = addr;
    }

    /// `mmap` by the sentry itself (no limits, never locked beyond
    /// mlockall's MCL_FUTURE): returns the address of the new area.
    pub fn mmap(&self, req: MapRequest) -> Result<u64, Errno> {
        self.mmap_with(req, false, &VmLimits::NONE, false)
    }

    /// `mmap` for the guest: `locked` is MAP_LOCKED, `low` MAP_32BIT
    /// (placement in the first 2 GiB); the caller's `limits` bound the
    /// address space and locked memory.
    pub fn mmap_with(&self, req: MapRequest, locked: bool, limits: &VmLimits, low: bool) -> Result<u64, Errno> {
        let len = page_up(req.len).filter(|&l| l > 0 && l <= TASK_SIZE).ok_or(Errno::ENOMEM)?;
        let mut l = self.layout.lock();
        let start = if req.fixed || req.noreplace {
            if req.addr % PAGE_SIZE != 0 {
                return Err(Errno::EINVAL);
            }
            let end = req.addr.checked_add(len).filter(|&e| e <= TASK_SIZE).ok_or(Errno::ENOMEM)?;
            if req.addr < MMAP_MIN_ADDR {
                return Err(Errno::EPERM);
            }
            if req.noreplace && overlaps(&l, req.addr, end) {
                return Err(Errno::EEXIST);
            }
            req.addr
        } else if low {
            find_low_gap(&l, page_down(req.addr), len).ok_or(Errno::ENOMEM)?
        } else {
            find_gap(&l, page_down(req.addr), len).ok_or(Errno::ENOMEM)?
        };
        // Linux's do_mmap then mmap_region: MAP_LOCKED needs a lock limit
        // (EPERM), locked memory must fit it (EAGAIN), and the address
        // space RLIMIT_AS (ENOMEM), counting what a fixed mapping replaces
        // as freed.
        if locked && !limits.can_lock() {
            return Err(Errno::EPERM);
        }
        let lock = match (l.def_lock, locked) {
            (Lock::None, true) => Lock::Locked,
            (def, _) => def,
        };
        if lock.locked() && !limits.may_lock(l.locked_bytes(), len) {
            return Err(Errno::EAGAIN);
        }
        if !limits.may_map(|| l.total_bytes() - l.covered(start, start + len, |_| true), len) {
            return Err(Errno::ENOMEM);
        }
        if req.fixed {
            self.remove_range(&mut l, start, start + len)?;
        }
        let mut vma = Vma::new(start, start + len, req.perms, req.shared, req.backing, req.name);
        vma.flags.lock = lock;
        if req.shared && matches!(vma.backing, Backing::Anon) {
            // Shared anonymous pages must exist before anyone (a fork
            // child) copies the area, so they are allocated up front.
            // Shared file pages live in the file's page cache.
            self.populate_all(&mut vma)?;
        }
        l.vmas.insert(start, vma);
        if lock == Lock::Locked {
            // Linux's mm_populate after a locked mmap ignores errors.
            let _ = self.populate_locked(&mut l, start, start + len, true);
        }
        Ok(start)
    }

    /// `shmdt`: unmaps the attachment whose first page is mapped at
    /// `addr`, as Linux does: the first SysV shared memory area at or
    /// above `addr` whose offset is its distance from `addr`, then every
    /// area of the same attachment so placed within the segment's size.
    /// EINVAL when there is none. Returns the attachment's file, which
    /// may hold its last reference.
    pub fn shm_detach(&self, addr: u64) -> Result<Arc<dyn Mappable>, Errno> {
        if addr % PAGE_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let placed = |v: &Vma| match &v.backing {
            Backing::SharedFile { file, offset, .. } if v.start - addr == *offset => {
                file.sysv_shm_size().map(|size| (file.clone(), size))
            }
            _ => None,
        };
        let mut l = self.layout.lock();
        let (first, file, size) =
            l.vmas.range(addr..).find_map(|(&at, v)| placed(v).map(|(f, s)| (at, f, s))).ok_or(Errno::EINVAL)?;
        let size = page_up(size).ok_or(Errno::EINVAL)?;
        let ranges: Vec<(u64, u64)> = l
            .vmas
            .range(first..)
            .filter(|(_, v)| placed(v).is_some_and(|(f, _)| Arc::ptr_eq(&f, &file)))
            .filter(|(&at, v)| at == first || v.end - addr <= size)
            .map(|(_, v)| (v.start, v.end))
            .collect();
        ranges.into_iter().try_for_each(|(start, end)| self.remove_range(&mut l, start, end))?;
        Ok(file)
    }

    /// Unmaps every SysV shared memory attachment: the process is exiting,
    /// and Linux's `exit_mm` drops them before its parent hears of it.
    /// Returns the attachments' files, which may hold their last
    /// references.
    pub fn shm_detach_all(&self) -> Vec<Arc<dyn Mappable>> {
        let mut l = self.layout.lock();
        let mut files: Vec<Arc<dyn Mappable>> = Vec::new();
        let mut ranges = Vec::new();
        for v in l.vmas.values() {
            if let Backing::SharedFile { file, .. } = &v.backing {
                if file.sysv_shm_size().is_some() {
                    ranges.push((v.start, v.end));
                    if !files.iter().any(|f| Arc::ptr_eq(f, file)) {
                        files.push(file.clone());
                    }
                }
            }
        }
        for (start, end) in ranges {
            if let Err(e) = self.remove_range(&mut l, start, end) {
                log::warn!("detaching shared memory at exit failed: {e:?}");
            }
        }
        files
    }

    /// `munmap`.
    pub fn munmap(&self, addr: u64, len: u64) -> Result<(), Errno> {
        if addr % PAGE_SIZE != 0 || len == 0 {
            return Err(Errno::EINVAL);
        }
        let end = page_up(len).and_then(|l| addr.checked_add(l)).filter(|&e| e <= TASK_SIZE).ok_or(Errno::EINVAL)?;
        let mut l = self.layout.lock();
        self.remove_range(&mut l, addr, end)
    }

    /// `mprotect`.
    pub fn mprotect(&self, addr: u64, len: u64, perms: Perms) -> Result<(), Errno> {
        if addr % PAGE_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let end = page_up(len).and_then(|l| addr.checked_add(l)).ok_or(Errno::ENOMEM)?;
        if end == addr {
            return Ok(());
        }
        let mut l = self.layout.lock();
        if !fully_mapped(&l, addr, end) {
            return Err(Errno::ENOMEM);
        }
        let read_only = |v: &Vma| matches!(&v.backing, Backing::SharedFile { may_write: None, .. });
        if perms.write && l.vmas.range(..end).any(|(_, v)| v.end > addr && read_only(v)) {
            return Err(Errno::EACCES);
        }
        let no_exec = |v: &Vma| match &v.backing {
            Backing::File { file, .. } | Backing::SharedFile { file, .. } => !file.may_exec(),
            Backing::Anon => false,
        };
        if perms.exec && l.vmas.range(..end).any(|(_, v)| v.end > addr && no_exec(v)) {
            return Err(Errno::EACCES);
        }
        split_at(&mut l, addr);
        split_at(&mut l, end);
        for vma in l.vmas.range_mut(addr..end).map(|(_, v)| v) {
            vma.perms = perms;
            for e in vma.pages.values_mut() {
                *e = e.with_mapping(false, false);
            }
        }
        self.space_unmap(addr, end - addr)?;
        merge_around(&mut l, addr, end);
        Ok(())
    }

    /// `brk`: returns the new break (the old one when the request fails:
    /// past RLIMIT_DATA, RLIMIT_AS, or the lock limit under MCL_FUTURE).
    pub fn brk(&self, addr: u64, limits: &VmLimits) -> Result<u64, Errno> {
        let mut l = self.layout.lock();
        let (start, cur) = (l.brk_start, l.brk);
        if addr < start {
            return Ok(cur);
        }
        let old_end = page_up(cur).ok_or(Errno::ENOMEM)?;
        let Some(new_end) = page_up(addr) else {
            return Ok(cur);
        };
        // Linux's check_data_rlimit (the data segment's own size is not
        // counted here).
        if addr - start > limits.data {
            return Ok(cur);
        }
        if new_end > old_end {
            let grow = new_end - old_end;
            if overlaps(&l, old_end, new_end) || new_end > TASK_SIZE {
                return Ok(cur);
            }
            let lock = l.def_lock;
            if (lock.locked() && !limits.may_lock(l.locked_bytes(), grow)) || !limits.may_map(|| l.total_bytes(), grow)
            {
                return Ok(cur);
            }
            let mut vma = Vma::new(
                old_end,
                new_end,
                Perms { read: true, write: true, exec: false },
                false,
                Backing::Anon,
                VmaName::Heap,
            );
            vma.flags.lock = lock;
            l.vmas.insert(old_end, vma);
            merge_around(&mut l, old_end, new_end);
            if lock == Lock::Locked {
                let _ = self.populate_locked(&mut l, old_end, new_end, true);
            }
        } else if new_end < old_end {
            self.remove_range(&mut l, new_end, old_end)?;
        }
        l.brk = addr;
        Ok(addr)
    }

    /// `mremap`, checked in Linux's order.
    pub fn mremap(&self, req: RemapRequest) -> Result<u64, Errno> {
        let RemapRequest { addr: old, may_move, fixed, dont_unmap, hint, limits, .. } = req;
        if old % PAGE_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let old_len = page_up(req.old_len).ok_or(Errno::EINVAL)?;
        let new_len = page_up(req.new_len).filter(|&n| n > 0 && n <= TASK_SIZE).ok_or(Errno::EINVAL)?;
        // MREMAP_FIXED and MREMAP_DONTUNMAP name a new address (a hint for
        // the latter alone) and imply a move.
        let new_addr = fixed.or(dont_unmap.then_some(hint));
        if let Some(t) = new_addr {
            if !may_move || (dont_unmap && old_len != new_len) {
                return Err(Errno::EINVAL);
            }
            let t_end = t.checked_add(new_len).filter(|&e| e <= TASK_SIZE).ok_or(Errno::EINVAL)?;
            if t % PAGE_SIZE != 0 || (t < old.saturating_add(old_len) && old < t_end) {
                return Err(Errno::EINVAL);
            }
            if fixed.is_some() && t < MMAP_MIN_ADDR {
                return Err(Errno::EPERM);
            }
        }
        let old_end = old.checked_add(old_len).ok_or(Errno::EINVAL)?;
        let mut l = self.layout.lock();
        if let Some(t) = fixed.filter(|_| old_len == new_len) {
            return self.move_areas(&mut l, old, old_end, t, dont_unmap);
        }
        let vma = find(&l, old).ok_or(Errno::EFAULT)?;
        // The same size in place changes nothing, whatever the range
        // spans.
        if new_addr.is_none() && new_len == old_len {
            return Ok(old);
        }
        // A shrink in place only needs an area at `old` (the tail is
        // unmapped, across areas and gaps); anything else must find the
        // whole old range in that one area.
        let shrink = new_addr.is_none() && new_len < old_len;
        if !shrink && vma.end < old_end {
            return Err(Errno::EFAULT);
        }
        // old_size 0 duplicates a mapping: only a shared one has pages to
        // share.
        if old_len == 0 && !vma.shared {
            return Err(Errno::EINVAL);
        }
        let shared_anon = vma.shared && matches!(vma.backing, Backing::Anon);
        // Growth must fit the lock limit of a locked area (EAGAIN) and
        // RLIMIT_AS (ENOMEM), as Linux's mremap checks before moving.
        let lock = vma.flags.lock;
        if new_len > old_len {
            let delta = new_len - old_len;
            if lock.locked() && !limits.may_lock(l.locked_bytes(), delta) {
                return Err(Errno::EAGAIN);
            }
            if !limits.may_map(|| l.total_bytes(), delta) {
                return Err(Errno::ENOMEM);
            }
        }
        if new_addr.is_none() {
            if new_len <= old_len {
                self.remove_range(&mut l, old + new_len, old_end)?;
                return Ok(old);
            }
            let grow_end = old.checked_add(new_len).filter(|&e| e <= TASK_SIZE);
            if let Some(grow_end) = grow_end.filter(|&e| !overlaps(&l, old_end, e)) {
                split_at(&mut l, old);
                split_at(&mut l, old_end);
                if let Some(v) = l.vmas.get_mut(&old) {
                    v.end = grow_end;
                    if shared_anon {
                        self.populate_range(v, old_end, grow_end)?;
                    }
                }
                merge_around(&mut l, old, grow_end);
                if lock == Lock::Locked {
                    let _ = self.populate_locked(&mut l, old_end, grow_end, true);
                }
                return Ok(old);
            }
            if !may_move {
                return Err(Errno::ENOMEM);
            }
        }
        let target = match fixed {
            Some(t) => {
                self.remove_range(&mut l, t, t + new_len)?;
                t
            }
            None => find_gap(&l, if dont_unmap { hint } else { 0 }, new_len).ok_or(Errno::ENOMEM)?,
        };
        if old_len == 0 {
            self.duplicate(&mut l, old, target, new_len)?;
        } else {
            self.move_range(&mut l, old, old_len, target, new_len, dont_unmap)?;
        }
        merge_around(&mut l, target, target + new_len);
        if lock == Lock::Locked && new_len > old_len {
            let _ = self.populate_locked(&mut l, target + old_len, target + new_len, true);
        }
        Ok(target)
    }

    /// MREMAP_FIXED to the same size (Linux 6.17's `remap_move`): every
    /// area of `[old, old_end)`, or the part of it in that range, moves to
    /// the same offset from `target`. The gaps between them stay gaps in
    /// the old range and keep what the target range has there; the range
    /// must begin in an area (EFAULT).
    fn move_areas(&self, l: &mut Layout, old: u64, old_end: u64, target: u64, dont_unmap: bool) -> Result<u64, Errno> {
        let first = find(l, old).ok_or(Errno::EFAULT)?.start;
        let pieces: Vec<(u64, u64)> =
            l.vmas.range(first..old_end).map(|(_, v)| (v.start.max(old), v.end.min(old_end))).collect();
        for (start, end) in pieces {
            let to = target + (start - old);
            let len = end - start;
            self.remove_range(l, to, to + len)?;
            self.move_range(l, start, len, to, len, dont_unmap)?;
            merge_around(l, to, to + len);
        }
        Ok(target)
    }

    /// Maps the pages of the shared area at `old` a second time at
    /// `target` (mremap with old_size 0).
    fn duplicate(&self, l: &mut Layout, old: u64, target: u64, len: u64) -> Result<(), Errno> {
        let src = find_mut(l, old).ok_or(Errno::EFAULT)?;
        let span_end = src.end.min(old + len);
        let shared_anon = matches!(src.backing, Backing::Anon);
        if shared_anon {
            self.populate_range(src, old, span_end)?;
        }
        let mut dup = Vma::new(target, target + len, src.perms, true, src.backing_at(old), src.name.clone());
        dup.flags = src.flags;
        for (&page, e) in src.pages.range(old..span_end) {
            self.mf.incref(e.frame());
            dup.pages.insert(page - old + target, PageEntry::new(e.frame()));
        }
        if shared_anon {
            self.populate_range(&mut dup, target + (span_end - old), target + len)?;
        }
        l.vmas.insert(target, dup);
        Ok(())
    }

    /// Moves `[old, old + old_len)`, one area, to `target`, resized to
    /// `new_len`. With `dont_unmap` the old range stays mapped: emptied
    /// if private (it reads zeros or the file again), the same pages if
    /// shared.
    fn move_range(
        &self,
        l: &mut Layout,
        old: u64,
        old_len: u64,
        target: u64,
        new_len: u64,
        dont_unmap: bool,
    ) -> Result<(), Errno> {
        let old_end = old + old_len;
        split_at(l, old);
        split_at(l, old_end);
        let keep = new_len.min(old_len);
        split_at(l, old + keep);
        self.remove_range(l, old + keep, old_end)?;
        let mut v = if dont_unmap {
            let src = l.vmas.get_mut(&old).ok_or(Errno::EFAULT)?;
            let pages = if src.shared {
                for (_, e) in src.pages.iter_mut() {
                    self.mf.incref(e.frame());
                    *e = e.with_mapping(false, false);
                }
                src.pages.clone()
            } else {
                std::mem::take(&mut src.pages)
            };
            let mut copy = Vma::new(src.start, src.end, src.perms, src.shared, src.backing_at(old), src.name.clone());
            copy.flags = src.flags;
            copy.pages = pages;
            // The lock moves with the pages; the range left behind is
            // unlocked.
            src.flags.lock = Lock::None;
            copy
        } else {
            l.vmas.remove(&old).ok_or(Errno::EFAULT)?
        };
        self.space_unmap(old, keep)?;
        let pages = std::mem::take(&mut v.pages);
        v.pages = pages.into_iter().map(|(a, e)| (a - old + target, e.with_mapping(false, false))).collect();
        v.start = target;
        v.end = target + new_len;
        if v.shared && matches!(v.backing, Backing::Anon) {
            self.populate_range(&mut v, target + keep, target + new_len)?;
        }
        l.vmas.insert(target, v);
        if dont_unmap {
            merge_around(l, old, old_end);
        }
        Ok(())
    }

    /// Gives every page of `[start, end)` in `vma` a frame (shared
    /// anonymous memory must exist before a fork or a second mapping
    /// shares it).
    fn populate_range(&self, vma: &mut Vma, start: u64, end: u64) -> Result<(), Errno> {
        let mut page = start;
        while page < end {
            self.frame_for(vma, page, false, false)?;
            page += PAGE_SIZE;
        }
        Ok(())
    }

    /// `madvise(MADV_DONTNEED)`: private pages are dropped (they read back as
    /// zeros or file contents); shared ones only leave the platform.
    pub fn dontneed(&self, addr: u64, len: u64) -> Result<(), Errno> {
        if addr % PAGE_SIZE != 0 {
            return Err(Errno::EINVAL);
        }
        let end = page_up(len).and_then(|l| addr.checked_add(l)).ok_or(Errno::EINVAL)?;
        let mut l = self.layout.lock();
        if !fully_mapped(&l, addr, end) {
            return Err(Errno::ENOMEM);
        }
        let first = find(&l, addr).map_or(addr, |v| v.start);
        // Locked pages stay (Linux's madvise_dontneed_free_valid_vma).
        if l.vmas.range(first..end).any(|(_, v)| v.flags.lock.locked()) {
            return Err(Errno::EINVAL);
        }
        for vma in l.vmas.range_mut(first..end).map(|(_, v)| v) {
            let keys: Vec<u64> = vma.pages.range(addr..end).map(|(&k, _)| k).collect();
            for k in keys {
                if vma.shared {
                    if let Some(e) = vma.pages.get_mut(&k) {
                        *e = e.with_mapping(false, false);
                    }
                } else if let Some(e) = vma.pages.remove(&k) {
                    self.mf.decref(e.frame());
                }
            }
        }
        self.space_unmap(addr, end - addr)
    }

    /// For a futex word in a shared mapping, where it lives in the memory
    /// file (the same for every address space that shares it); None for
    /// private memory, whose futexes are keyed by address space.
    pub fn shared_location(&self, addr: u64) -> Result<Option<u64>, Errno> {
        let mut l = self.layout.lock();
        let page = page_down(addr);
        let vma = find_mut(&mut l, page).ok_or(Errno::EFAULT)?;
        if !vma.shared {
            return Ok(None);
        }
        let frame = self.frame_for(vma, page, false, false)?;
        Ok(Some(frame + (addr - page)))
    }

    /// Whether every page of `[start, end)` belongs to some area.
    pub fn is_mapped(&self, start: u64, end: u64) -> bool {
        fully_mapped(&self.layout.lock(), start, end)
    }

    /// One byte per page of `[addr, addr+len)`: 1 if the page is resident.
    /// ENOMEM if any of the range is unmapped.
    pub fn mincore(&self, addr: u64, len: u64) -> Result<Vec<u8>, Errno> {
        let end = page_up(len).and_then(|l| addr.checked_add(l)).filter(|&e| e <= TASK_SIZE).ok_or(Errno::ENOMEM)?;
        let l = self.layout.lock();
        if !fully_mapped(&l, addr, end) {
            return Err(Errno::ENOMEM);
        }
        let mut out = Vec::new();
        let mut at = addr;
        while at < end {
            let v = find(&l, at).ok_or(Errno::ENOMEM)?;
            out.push(u8::from(v.pages.contains_key(&at)));
            at += PAGE_SIZE;
        }
        Ok(out)
    }

    /// Handles a guest page fault at `addr`: populates and maps the page
    /// (Ok(true)), finds it already handled, by another thread of the same
    /// address space racing on the same page (Ok(false): the guest simply
    /// retries), or reports the `SIGSEGV` the guest gets.
    pub fn fault(&self, addr: u64) -> Result<bool, Segv> {
        let mut l = self.layout.lock();
        let page = page_down(addr);
        let vma = find_mut(&mut l, page).ok_or(Segv::MapErr)?;
        if !vma.perms.any() {
            return Err(Segv::AccErr);
        }
        match vma.pages.get(&page).copied() {
            None => match file_end(vma) {
                // A page past the end of the mapped file (Linux's filemap_fault).
                Some(end) if page >= end => Err(Segv::Bus),
                end => self.populate_window(vma, page, end).map(|()| true).map_err(fault_error),
            },
            Some(e) if !e.mapped() => self.map_run(vma, page).map(|()| true).map_err(fault_error),
            Some(e) if vma.perms.write && !e.mapped_writable() => {
                // A write to a page mapped read-only for copy-on-write.
                self.make_writable(vma, page, false).map_err(fault_error)?;
                self.map_run(vma, page).map(|()| true).map_err(fault_error)
            }
            // Mapped with every access the area allows: either another
            // thread mapped it since this fault, or the access is one the
            // area forbids; the caller tells them apart by retrying.
            Some(_) => Ok(false),
        }
    }

    /// Copies guest memory at `addr` into `buf`.
    pub fn copy_in(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        self.for_each_page(addr, buf.len(), Want::Read, |src, n| {
            let ok = self.read_source(src, &mut buf[done..done + n]);
            done += n;
            ok
        })
    }

    /// Reads one piece of a copy-in: a frame's bytes, or zeros for a page
    /// never touched.
    fn read_source(&self, src: Source, dst: &mut [u8]) -> bool {
        match src {
            Source::Frame(off) => self.mf.read(off, dst),
            Source::Zero => {
                dst.fill(0);
                true
            }
        }
    }

    /// Copies `data` into guest memory at `addr`.
    pub fn copy_out(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        self.for_each_page(addr, data.len(), Want::Write, |src, n| {
            let ok = matches!(src, Source::Frame(off) if self.mf.write(off, &data[done..done + n]));
            done += n;
            ok
        })
    }

    /// Called by a thread about to run this space: unmaps the old frames
    /// of pages a debugger wrote (`copy_out_forced`), unless a fault has
    /// mapped the new one since.
    pub fn unmap_stale(&self) {
        // Taken before the layout's lock, which a debugger's write holds
        // while it adds to the list.
        let stale = std::mem::take(&mut *self.stale.lock());
        if stale.is_empty() {
            return;
        }
        let l = self.layout.lock();
        for (page, old) in stale {
            let remapped = find(&l, page).and_then(|v| v.pages.get(&page)).is_some_and(|e| e.mapped());
            if !remapped {
                let _ = self.space_unmap(page, PAGE_SIZE);
            }
            self.mf.decref(old);
        }
    }

    /// Whether a foreign write left old frames mapped that the next thread
    /// to run this space must unmap (`unmap_stale`).
    pub fn has_stale(&self) -> bool {
        !self.stale.lock().is_empty()
    }

    /// Reads guest memory as a debugger does (ptrace's PEEK*, FOLL_FORCE):
    /// any mapped page, whatever its protection.
    pub fn copy_in_forced(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        self.for_each_page(addr, buf.len(), Want::ForceRead, |src, n| {
            let ok = self.read_source(src, &mut buf[done..done + n]);
            done += n;
            ok
        })
    }

    /// Writes guest memory as a debugger does (ptrace's POKE*,
    /// FOLL_FORCE): read-only private pages (program text) get a private
    /// copy that is written; shared mappings must be writable.
    pub fn copy_out_forced(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        self.for_each_page(addr, data.len(), Want::ForceWrite, |src, n| {
            let ok = matches!(src, Source::Frame(off) if self.mf.write(off, &data[done..done + n]));
            done += n;
            ok
        })
    }

    /// Writes `data` at `addr` from a thread that does not run this space
    /// (`process_vm_writev`): as `copy_out`, but a copy-on-write copy it
    /// makes is unmapped by the next thread to run the space.
    pub fn copy_out_foreign(&self, addr: u64, data: &[u8]) -> Result<(), Errno> {
        let mut done = 0usize;
        self.for_each_page(addr, data.len(), Want::ForeignWrite, |src, n| {
            let ok = matches!(src, Source::Frame(off) if self.mf.write(off, &data[done..done + n]));
            done += n;
            ok
        })
    }

    /// Copies as much of `data` to `addr` as is writable, stopping at the
    /// first bad page; returns the bytes copied (reads and writes into a
    /// partly bad buffer report the good part, as Linux's do).
    pub fn copy_out_partial(&self, addr: u64, data: &[u8]) -> usize {
        let mut done = 0usize;
        let _ = self.for_each_page(addr, data.len(), Want::Write, |src, n| {
            let ok = matches!(src, Source::Frame(off) if self.mf.write(off, &data[done..done + n]));
            if ok {
                done += n;
            }
            ok
        });
        done
    }

    /// Copies as much of guest memory at `addr` into `buf` as is readable;
    /// returns the bytes copied.
    pub fn copy_in_partial(&self, addr: u64, buf: &mut [u8]) -> usize {
        let mut done = 0usize;
        let _ = self.for_each_page(addr, buf.len(), Want::Read, |src, n| {
            let ok = self.read_source(src, &mut buf[done..done + n]);
            if ok {
                done += n;
            }
            ok
        });
        done
    }

    /// Fills guest memory at `addr` with `len` bytes produced by `fill` (given
    /// successive slices of guest memory), e.g. straight from a host `read`.
    /// Returns how many bytes `fill` produced before it stopped.
    pub fn fill_with(
        &self,
        addr: u64,
        len: usize,
        mut fill: impl FnMut(&mut [u8]) -> Result<usize, Errno>,
    ) -> Result<usize, Errno> {
        let mut total = 0usize;
        let mut err = None;
        let mut stop = false;
        let r = self.for_each_page(addr, len, Want::Write, |src, n| {
            if stop {
                return true;
            }
            let Source::Frame(frame_off) = src else { return false };
            match self.mf.with_slice_mut(frame_off, n, &mut fill) {
                Some(Ok(got)) => {
                    total += got;
                    stop = got < n;
                    true
                }
                Some(Err(e)) => {
                    err = Some(e);
                    stop = true;
                    true
                }
                None => false,
            }
        });
        match (total, err, r) {
            (0, Some(e), _) => Err(e),
            (_, _, Err(e)) if total == 0 => Err(e),
            _ => Ok(total),
        }
    }

    /// Reads a NUL-terminated string of at most `max` bytes (without NUL).
    pub fn read_cstring(&self, addr: u64, max: usize) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        let mut at = addr;
        loop {
            // Never read across a page boundary we don't need.
            let to_page_end = usize::try_from(PAGE_SIZE - (at % PAGE_SIZE)).unwrap_or(1);
            let n = to_page_end.min(CSTRING_CHUNK);
            let mut chunk = vec![0u8; n];
            self.copy_in(at, &mut chunk)?;
            if let Some(pos) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..pos]);
                return if out.len() > max { Err(Errno::ENAMETOOLONG) } else { Ok(out) };
            }
            out.extend_from_slice(&chunk);
            if out.len() > max {
                return Err(Errno::ENAMETOOLONG);
            }
            at = at.checked_add(n as u64).ok_or(Errno::EFAULT)?;
        }
    }

    /// The text of `/proc/[pid]/maps`.
    pub fn maps_text(&self) -> String {
        let l = self.layout.lock();
        let mut out = String::new();
        for v in l.vmas.values() {
            out.push_str(&maps_line(v));
        }
        out
    }

    /// The text of /proc/[pid]/smaps: each mapping's maps line and its
    /// memory, as Linux's `show_smap` lists it. The sentry knows which
    /// pages are populated, not which are dirty or shared with another
    /// address space: an anonymous mapping's pages count as private
    /// dirty, a file's as private clean. (No VmFlags line: the sentry
    /// does not keep the VM_MAY* flags.)
    pub fn smaps_text(&self) -> String {
        let l = self.layout.lock();
        let mut out = String::new();
        for v in l.vmas.values() {
            out.push_str(&maps_line(v));
            let kb = |bytes: u64| bytes / 1024;
            let rss = kb(v.pages.len() as u64 * PAGE_SIZE);
            let anon = matches!(v.backing, Backing::Anon);
            let (clean, dirty) = if anon { (0, rss) } else { (rss, 0) };
            let anonymous = if anon && !v.shared { rss } else { 0 };
            let fields = [
                ("Size", kb(v.size())),
                ("KernelPageSize", 4),
                ("MMUPageSize", 4),
                ("Rss", rss),
                ("Pss", rss),
                ("Pss_Dirty", dirty),
                ("Shared_Clean", 0),
                ("Shared_Dirty", 0),
                ("Private_Clean", clean),
                ("Private_Dirty", dirty),
                ("Referenced", rss),
                ("Anonymous", anonymous),
                ("KSM", 0),
                ("LazyFree", 0),
                ("AnonHugePages", 0),
                ("ShmemPmdMapped", 0),
                ("FilePmdMapped", 0),
                ("Shared_Hugetlb", 0),
                ("Private_Hugetlb", 0),
                ("Swap", 0),
                ("SwapPss", 0),
                ("Locked", 0),
            ];
            for (key, value) in fields {
                let _ = writeln!(out, "{:<16}{value:>8} kB", format!("{key}:"));
            }
            out.push_str("THPeligible:           0\n");
        }
        out
    }

    /// Total bytes of guest address space mapped (VmSize).
    pub fn mapped_bytes(&self) -> u64 {
        let l = self.layout.lock();
        l.vmas.values().map(Vma::size).sum()
    }

    /// Pages resident in this address space (VmRSS).
    pub fn resident_bytes(&self) -> u64 {
        let l = self.layout.lock();
        l.vmas.values().map(|v| v.pages.len() as u64 * PAGE_SIZE).sum()
    }

    // ---- internals ----

    /// Walks `[addr, addr+len)` page by page, populating as needed, and calls
    /// `f(source, bytes)` for each piece. A read of a private anonymous page
    /// never touched gets [`Source::Zero`] and allocates nothing, as Linux
    /// reads its zero page: a `write` from a vast untouched heap must not
    /// fill the sandbox's memory (and OOM-kill it) with zeros.
    fn for_each_page(
        &self,
        addr: u64,
        len: usize,
        want: Want,
        mut f: impl FnMut(Source, usize) -> bool,
    ) -> Result<(), Errno> {
        if len == 0 {
            return Ok(());
        }
        let len64 = u64::try_from(len).map_err(|_| Errno::EFAULT)?;
        let end = addr.checked_add(len64).filter(|&e| e <= TASK_SIZE).ok_or(Errno::EFAULT)?;
        let mut l = self.layout.lock();
        let mut at = addr;
        while at < end {
            let page = page_down(at);
            let vma = find_mut(&mut l, page).ok_or(Errno::EFAULT)?;
            let allowed = match want {
                Want::Read => vma.perms.read,
                Want::Write | Want::ForeignWrite => vma.perms.write,
                Want::ForceRead => true,
                Want::ForceWrite => vma.perms.write || !vma.shared,
            };
            if !allowed {
                return Err(Errno::EFAULT);
            }
            let untouched = !vma.pages.contains_key(&page) && !vma.shared && matches!(vma.backing, Backing::Anon);
            let src = if !want.writes() && untouched {
                Source::Zero
            } else {
                Source::Frame(
                    self.frame_for(vma, page, want.writes(), matches!(want, Want::ForceWrite | Want::ForeignWrite))?
                        + (at - page),
                )
            };
            let n = (page + PAGE_SIZE).min(end) - at;
            let n_usize = usize::try_from(n).map_err(|_| Errno::EFAULT)?;
            if !f(src, n_usize) {
                return Err(Errno::EFAULT);
            }
            at += n;
        }
        Ok(())
    }

    /// The frame behind `page`, populated if needed; for a write, a private
    /// copy (`foreign`: for a thread that does not run this space).
    pub(super) fn frame_for(&self, vma: &mut Vma, page: u64, write: bool, foreign: bool) -> Result<u64, Errno> {
        if !vma.pages.contains_key(&page) {
            // Past the end of the mapped file: a copy fails as the access
            // would (SIGBUS), without the signal.
            if file_end(vma).is_some_and(|e| page >= e) {
                return Err(Errno::EFAULT);
            }
            let frame = match shared_frame(vma, page)? {
                Some(f) => f,
                None => {
                    let frame = self.mf.alloc(1)?;
                    self.fill_frames(vma, page, frame, 1)?;
                    frame
                }
            };
            vma.pages.insert(page, PageEntry::new(frame));
        }
        if write && !vma.shared {
            self.make_writable(vma, page, foreign)?;
        }
        vma.pages.get(&page).map(|e| e.frame()).ok_or(Errno::EFAULT)
    }

    /// Breaks copy-on-write sharing of a private page. The platform's
    /// mapping of the old frame goes now, or (`foreign`) when a thread of
    /// the space next runs.
    fn make_writable(&self, vma: &mut Vma, page: u64, foreign: bool) -> Result<(), Errno> {
        let Some(e) = vma.pages.get(&page).copied() else {
            return Ok(());
        };
        if vma.shared || self.mf.refs(e.frame()) == 1 {
            return Ok(());
        }
        let new = self.mf.alloc(1)?;
        if !self.mf.copy_page(e.frame(), new) {
            self.mf.decref(new);
            return Err(Errno::EFAULT);
        }
        vma.pages.insert(page, PageEntry::new(new));
        if e.mapped() && foreign {
            // Still mapped in this space: the reference goes in unmap_stale.
            self.stale.lock().push((page, e.frame()));
            return Ok(());
        }
        self.mf.decref(e.frame());
        if e.mapped() {
            self.space_unmap(page, PAGE_SIZE)?;
        }
        Ok(())
    }

    /// Copies file contents (or nothing, for zero pages) into fresh frames.
    fn fill_frames(&self, vma: &Vma, page: u64, frame: u64, pages: u64) -> Result<(), Errno> {
        let Backing::File { file, .. } = &vma.backing else {
            return Ok(());
        };
        let off = vma.file_offset(page).ok_or(Errno::EFAULT)?;
        let len = usize::try_from(pages * PAGE_SIZE).map_err(|_| Errno::ENOMEM)?;
        self.mf
            .with_slice_mut(frame, len, |buf| {
                let mut done = 0usize;
                while done < buf.len() {
                    let n = file.read_at(off + done as u64, &mut buf[done..])?;
                    if n == 0 {
                        break;
                    }
                    done += n;
                }
                Ok(())
            })
            .ok_or(Errno::EFAULT)?
    }

    /// Allocates every page of a new shared area.
    fn populate_all(&self, vma: &mut Vma) -> Result<(), Errno> {
        let pages = vma.size() / PAGE_SIZE;
        let frame = self.mf.alloc(pages)?;
        if let Err(e) = self.fill_frames(vma, vma.start, frame, pages) {
            for i in 0..pages {
                self.mf.decref(frame + i * PAGE_SIZE);
            }
            return Err(e);
        }
        for i in 0..pages {
            vma.pages.insert(vma.start + i * PAGE_SIZE, PageEntry::new(frame + i * PAGE_SIZE));
        }
        Ok(())
    }

    /// Populates the run of unpopulated pages around `page` (within the
    /// fault window) with one contiguous extent and maps it.
    /// Fills the fault window around `page`, up to `file_end`, the end of
    /// a file mapping's file (the caller has it already).
    fn populate_window(&self, vma: &mut Vma, page: u64, file_end: Option<u64>) -> Result<(), Errno> {
        if let Some(frame) = shared_frame(vma, page)? {
            vma.pages.insert(page, PageEntry::new(frame));
            return self.map_run(vma, page);
        }
        let lo = page_down(page / FAULT_WINDOW * FAULT_WINDOW).max(vma.start);
        let hi = (page / FAULT_WINDOW * FAULT_WINDOW + FAULT_WINDOW).min(vma.end).min(file_end.unwrap_or(u64::MAX));
        let mut start = page;
        while start > lo && !vma.pages.contains_key(&(start - PAGE_SIZE)) {
            start -= PAGE_SIZE;
        }
        let mut end = page + PAGE_SIZE;
        while end < hi && !vma.pages.contains_key(&end) {
            end += PAGE_SIZE;
        }
        let pages = (end - start) / PAGE_SIZE;
        let frame = match self.mf.alloc(pages) {
            Ok(f) => f,
            Err(_) => {
                // No contiguous extent (or near the limit): just this page.
                return self.populate_window_single(vma, page);
            }
        };
        self.fill_frames(vma, start, frame, pages)?;
        for i in 0..pages {
            vma.pages.insert(start + i * PAGE_SIZE, PageEntry::new(frame + i * PAGE_SIZE));
        }
        self.map_run(vma, page)
    }

    fn populate_window_single(&self, vma: &mut Vma, page: u64) -> Result<(), Errno> {
        let frame = self.mf.alloc(1)?;
        self.fill_frames(vma, page, frame, 1)?;
        vma.pages.insert(page, PageEntry::new(frame));
        self.map_run(vma, page)
    }

    /// Maps `page` and its unmapped neighbors whose frames are contiguous
    /// (within the fault window) into the platform with one call.
    fn map_run(&self, vma: &mut Vma, page: u64) -> Result<(), Errno> {
        let entry = *vma.pages.get(&page).ok_or(Errno::EFAULT)?;
        let writable = |e: PageEntry| vma.perms.write && (vma.shared || self.mf.refs(e.frame()) == 1);
        let w = writable(entry);
        let lo = (page / FAULT_WINDOW * FAULT_WINDOW).max(vma.start);
        let hi = (page / FAULT_WINDOW * FAULT_WINDOW + FAULT_WINDOW).min(vma.end);
        let fits = |addr: u64, e: Option<&PageEntry>| match e {
            Some(&e) => {
                !e.mapped()
                    && e.frame() as i128 - entry.frame() as i128 == addr as i128 - page as i128
                    && writable(e) == w
            }
            None => false,
        };
        let mut start = page;
        while start > lo && fits(start - PAGE_SIZE, vma.pages.get(&(start - PAGE_SIZE))) {
            start -= PAGE_SIZE;
        }
        let mut end = page + PAGE_SIZE;
        while end < hi && fits(end, vma.pages.get(&end)) {
            end += PAGE_SIZE;
        }
        let frame = entry.frame() - (page - start);
        let perms = Perms { write: w, ..vma.perms };
        self.space.map(start, end - start, frame, perms).map_err(|e| {
            log::warn!("mapping guest memory into the platform failed: {e}");
            Errno::ENOMEM
        })?;
        let mut a = start;
        while a < end {
            if let Some(e) = vma.pages.get_mut(&a) {
                *e = e.with_mapping(true, w);
            }
            a += PAGE_SIZE;
        }
        Ok(())
    }

    /// Removes every area in `[start, end)`, releasing its pages.
    fn remove_range(&self, l: &mut Layout, start: u64, end: u64) -> Result<(), Errno> {
        // An empty range (a move that keeps the whole old mapping) removes
        // nothing; the platform would refuse a zero-length unmap.
        if start >= end || !overlaps(l, start, end) {
            return Ok(());
        }
        split_at(l, start);
        split_at(l, end);
        let keys: Vec<u64> = l.vmas.range(start..end).map(|(&k, _)| k).collect();
        for k in keys {
            if let Some(v) = l.vmas.remove(&k) {
                for e in v.pages.values() {
                    self.mf.decref(e.frame());
                }
            }
        }
        self.space_unmap(start, end - start)
    }

    pub(super) fn space_unmap(&self, addr: u64, len: u64) -> Result<(), Errno> {
        self.space.unmap(addr, len).map_err(|e| {
            log::warn!("unmapping guest memory in the platform failed: {e}");
            Errno::ENOMEM
        })
    }
}

impl Drop for MemoryManager {
    fn drop(&mut self) {
        for (_, old) in std::mem::take(self.stale.get_mut()) {
            self.mf.decref(old);
        }
        let l = self.layout.get_mut();
        for v in l.vmas.values() {
            for e in v.pages.values() {
                self.mf.decref(e.frame());
            }
        }
        self.mf.released().notify(crate::waiter::ALL);
    }
}

/// For a shared file mapping, the file's frame of `page` (referenced for
/// the mapping).
fn shared_frame(vma: &Vma, page: u64) -> Result<Option<u64>, Errno> {
    let Backing::SharedFile { pages, .. } = &vma.backing else { return Ok(None) };
    let off = vma.file_offset(page).ok_or(Errno::EFAULT)?;
    pages.frame(off / PAGE_SIZE).map(Some)
}

/// Where the pages of a file mapping's file end (its size rounded up to a
/// page), as an address of `vma`; None for areas without a file's end.
pub(super) fn file_end(vma: &Vma) -> Option<u64> {
    let (Backing::File { file, offset } | Backing::SharedFile { file, offset, .. }) = &vma.backing else {
        return None;
    };
    let pages_end = page_up(file.size()?)?;
    Some(vma.start.saturating_add(pages_end.saturating_sub(*offset)))
}

pub(super) fn find(l: &Layout, addr: u64) -> Option<&Vma> {
    l.vmas.range(..=addr).next_back().map(|(_, v)| v).filter(|v| v.contains(addr))
}

pub(super) fn find_mut(l: &mut Layout, addr: u64) -> Option<&mut Vma> {
    l.vmas.range_mut(..=addr).next_back().map(|(_, v)| v).filter(|v| v.contains(addr))
}

fn overlaps(l: &Layout, start: u64, end: u64) -> bool {
    if let Some(v) = find(l, start) {
        return v.end > start;
    }
    l.vmas.range(start..end).next().is_some()
}

/// Whether every address in `[start, end)` belongs to some area.
pub(super) fn fully_mapped(l: &Layout, start: u64, end: u64) -> bool {
    let mut at = start;
    while at < end {
        match find(l, at) {
            Some(v) => at = v.end,
            None => return false,
        }
    }
    true
}

/// Splits the area containing `addr` so that an area starts at `addr`.
pub(super) fn split_at(l: &mut Layout, addr: u64) {
    let Some(start) = find(l, addr).map(|v| v.start) else {
        return;
    };
    if start == addr {
        return;
    }
    if let Some(v) = l.vmas.get_mut(&start) {
        let tail = v.split_off(addr);
        l.vmas.insert(addr, tail);
    }
}

/// Merges areas that became seamless neighbors around `[start, end)`.
pub(super) fn merge_around(l: &mut Layout, start: u64, end: u64) {
    let first = l.vmas.range(..start).next_back().map(|(&k, _)| k).unwrap_or(start);
    let keys: Vec<u64> = l.vmas.range(first..=end).map(|(&k, _)| k).collect();
    let mut prev: Option<u64> = None;
    for k in keys {
        if let Some(p) = prev {
            let mergeable = match (l.vmas.get(&p), l.vmas.get(&k)) {
                (Some(a), Some(b)) => a.can_merge(b),
                _ => false,
            };
            if mergeable {
                if let Some(mut b) = l.vmas.remove(&k) {
                    if let Some(a) = l.vmas.get_mut(&p) {
                        a.end = b.end;
                        a.pages.append(&mut b.pages);
                    }
                }
                continue;
            }
        }
        prev = Some(k);
    }
}

/// Where x86-64 Linux places MAP_32BIT mappings: from 1 GiB up to 2 GiB.
const LOW_START: u64 = 0x4000_0000;
const LOW_END: u64 = 0x8000_0000;

/// A free range of `len` bytes for MAP_32BIT: at `hint` if it fits below
/// 2 GiB, else the lowest one in `[LOW_START, LOW_END)`.
fn find_low_gap(l: &Layout, hint: u64, len: u64) -> Option<u64> {
    if hint >= MMAP_MIN_ADDR && hint.checked_add(len).is_some_and(|e| e <= LOW_END) && !overlaps(l, hint, hint + len) {
        return Some(hint);
    }
    let mut at = LOW_START;
    loop {
        let end = at.checked_add(len).filter(|&e| e <= LOW_END)?;
        match find(l, at).or_else(|| l.vmas.range(at..end).next().map(|(_, v)| v)) {
            Some(v) => at = v.end,
            None => return Some(at),
        }
    }
}

/// A free range of `len` bytes: at `hint` if it fits, else the highest one
/// below `mmap_top`.
fn find_gap(l: &Layout, hint: u64, len: u64) -> Option<u64> {
    if hint >= MMAP_MIN_ADDR {
        if let Some(end) = hint.checked_add(len).filter(|&e| e <= TASK_SIZE) {
            if !overlaps(l, hint, end) {
                return Some(hint);
            }
        }
    }
    let mut top = l.mmap_top;
    for v in l.vmas.range(..l.mmap_top).rev().map(|(_, v)| v) {
        if v.end <= top && top - v.end >= len {
            return Some(top - len);
        }
        top = top.min(v.start);
    }
    top.checked_sub(len).filter(|&s| s >= MMAP_MIN_ADDR)
}

/// One line of /proc/[pid]/maps.
fn maps_line(v: &Vma) -> String {
    let (off, dev, ino, name) = match &v.backing {
        Backing::File { file, offset } | Backing::SharedFile { file, offset, .. } => {
            let (dev, ino) = file.map_ids();
            (*offset, dev, ino, file.map_name())
        }
        // Linux backs a shared anonymous mapping with an unlinked
        // /dev/zero file.
        Backing::Anon if v.shared => (0, 0, 0, "/dev/zero (deleted)".to_string()),
        Backing::Anon => (0, 0, 0, String::new()),
    };
    let name = match v.name {
        VmaName::Heap => "[heap]".to_string(),
        VmaName::Stack => "[stack]".to_string(),
        _ => name,
    };
    let line = format!(
        "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
        v.start,
        v.end,
        if v.perms.read { 'r' } else { '-' },
        if v.perms.write { 'w' } else { '-' },
        if v.perms.exec { 'x' } else { '-' },
        if v.shared { 's' } else { 'p' },
        off,
        (dev >> 8) & 0xfff,
        dev & 0xff,
        ino,
    );
    // As Linux's show_map_vma: the fields end with a space, and a
    // name starts at column 73.
    if name.is_empty() {
        format!("{line}\n")
    } else {
        format!("{line:<73}{name}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Result as PResult;

    /// An address space that only records what was mapped.
    #[derive(Default)]
    struct FakeSpace {
        maps: Mutex<Vec<(u64, u64, u64, Perms)>>,
        unmaps: Mutex<Vec<(u64, u64)>>,
    }

    impl AddressSpace for FakeSpace {
        fn map(&self, addr: u64, len: u64, file_off: u64, perms: Perms) -> PResult<()> {
            self.maps.lock().push((addr, len, file_off, perms));
            Ok(())
        }
        fn unmap(&self, addr: u64, len: u64) -> PResult<()> {
            self.unmaps.lock().push((addr, len));
            Ok(())
        }
        fn spawn_thread(&self) -> PResult<crate::platform::ThreadToken> {
            Err(crate::platform::PlatformError::Unsupported("no threads in the fake"))
        }
        fn adopt_thread(&self, _token: crate::platform::ThreadToken) -> PResult<()> {
            Err(crate::platform::PlatformError::Unsupported("no threads in the fake"))
        }
        fn release_thread(&self) {}
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    const RW: Perms = Perms { read: true, write: true, exec: false };
    const RO: Perms = Perms { read: true, write: false, exec: false };

    fn mm() -> (MemoryManager, Arc<FakeSpace>) {
        let mf = Arc::new(MemoryFile::new(1 << 30).unwrap());
        let space = Arc::new(FakeSpace::default());
        (MemoryManager::new(mf, space.clone(), 0x7f00_0000_0000), space)
    }

    fn anon(addr: u64, len: u64, perms: Perms, fixed: bool) -> MapRequest {
        MapRequest {
            addr,
            len,
            perms,
            fixed,
            noreplace: false,
            shared: false,
            backing: Backing::Anon,
            name: VmaName::None,
        }
    }

    fn remap(
        mm: &MemoryManager,
        addr: u64,
        old_len: u64,
        new_len: u64,
        may_move: bool,
        fixed: Option<u64>,
    ) -> Result<u64, Errno> {
        mm.mremap(RemapRequest {
            addr,
            old_len,
            new_len,
            may_move,
            fixed,
            dont_unmap: false,
            hint: 0,
            limits: VmLimits::NONE,
        })
    }

    fn dont_unmap(addr: u64, len: u64) -> RemapRequest {
        RemapRequest {
            addr,
            old_len: len,
            new_len: len,
            may_move: true,
            fixed: None,
            dont_unmap: true,
            hint: 0,
            limits: VmLimits::NONE,
        }
    }

    #[test]
    fn mremap_dontunmap_leaves_the_old_range_mapped() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 2 * 4096, RW, false)).unwrap();
        mm.copy_out(a, b"priv").unwrap();
        assert_eq!(mm.mremap(RemapRequest { may_move: false, ..dont_unmap(a, 2 * 4096) }), Err(Errno::EINVAL));
        assert_eq!(mm.mremap(RemapRequest { new_len: 4096, ..dont_unmap(a, 2 * 4096) }), Err(Errno::EINVAL));
        let b = mm.mremap(dont_unmap(a, 2 * 4096)).unwrap();
        assert_ne!(a, b);
        let mut buf = [0u8; 4];
        mm.copy_in(b, &mut buf).unwrap();
        assert_eq!(&buf, b"priv");
        mm.copy_in(a, &mut buf).unwrap();
        assert_eq!(buf, [0; 4], "a private old range is emptied");

        let s = mm.mmap(MapRequest { shared: true, ..anon(0, 4096, RW, false) }).unwrap();
        mm.copy_out(s, b"shrd").unwrap();
        let t = mm.mremap(dont_unmap(s, 4096)).unwrap();
        mm.copy_out(t, b"both").unwrap();
        mm.copy_in(s, &mut buf).unwrap();
        assert_eq!(&buf, b"both", "a shared old range keeps the pages");
    }

    #[test]
    fn mremap_old_size_zero_duplicates_only_shared_mappings() {
        let (mm, _) = mm();
        let p = mm.mmap(anon(0, 2 * 4096, RW, false)).unwrap();
        assert_eq!(remap(&mm, p, 0, 4096, true, None), Err(Errno::EINVAL));
        let s = mm.mmap(MapRequest { shared: true, ..anon(0, 2 * 4096, RW, false) }).unwrap();
        assert_eq!(remap(&mm, s, 0, 4096, false, None), Err(Errno::ENOMEM));
        let d = remap(&mm, s + 4096, 0, 4096, true, None).unwrap();
        mm.copy_out(d, b"dup!").unwrap();
        let mut buf = [0u8; 4];
        mm.copy_in(s + 4096, &mut buf).unwrap();
        assert_eq!(&buf, b"dup!");
        mm.munmap(s, 2 * 4096).unwrap();
        mm.copy_in(d, &mut buf).unwrap();
        assert_eq!(&buf, b"dup!", "the duplicate holds its own references");
    }

    #[test]
    fn placement_is_top_down_and_page_rounded() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 100, RW, false)).unwrap();
        let b = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        assert_eq!(a, 0x7f00_0000_0000 - 4096);
        assert_eq!(b, a - 4096);
        assert_eq!(mm.mmap(anon(0x1001, 4096, RW, true)).err(), Some(Errno::EINVAL));
        assert_eq!(mm.mmap(anon(0x1000, 4096, RW, true)).err(), Some(Errno::EPERM), "below mmap_min_addr");
        assert_eq!(mm.mmap(anon(TASK_SIZE, 4096, RW, true)).err(), Some(Errno::ENOMEM), "past the guest's space");
    }

    #[test]
    fn mremap_moves_a_mapping_that_cannot_grow_in_place() {
        let (mm, space) = mm();
        let a = mm.mmap(anon(0, 2 * 4096, RW, false)).unwrap();
        mm.mmap(anon(a + 2 * 4096, 4096, RO, true)).unwrap();
        mm.copy_out(a, b"kept").unwrap();
        assert_eq!(remap(&mm, a, 2 * 4096, 8 * 4096, false, None), Err(Errno::ENOMEM));
        let b = remap(&mm, a, 2 * 4096, 8 * 4096, true, None).unwrap();
        assert_ne!(a, b);
        let mut got = [0u8; 4];
        mm.copy_in(b, &mut got).unwrap();
        assert_eq!(&got, b"kept");
        assert!(!mm.is_mapped(a, a + 4096));
        assert!(space.unmaps.lock().iter().all(|&(_, len)| len > 0), "no zero-length unmap reaches the platform");
    }

    /// MREMAP_FIXED to the same size moves every area of a range that
    /// spans several, at their offsets: the gap between them is left as
    /// the target had it. Any other resize across areas is EFAULT, except
    /// a shrink, which unmaps the tail across them.
    #[test]
    fn mremap_fixed_moves_every_area_of_the_range() {
        let (mm, _) = mm();
        let pg = 4096;
        let a = mm.mmap(anon(0, 4 * pg, RW, false)).unwrap();
        mm.copy_out(a, b"one").unwrap();
        mm.copy_out(a + 3 * pg, b"four").unwrap();
        mm.mprotect(a + pg, pg, RO).unwrap();
        mm.munmap(a + 2 * pg, pg).unwrap();
        let t = mm.mmap(anon(0, 4 * pg, RO, false)).unwrap();
        assert_eq!(remap(&mm, a, 4 * pg, 5 * pg, true, None), Err(Errno::EFAULT));
        assert_eq!(remap(&mm, a, 4 * pg, 4 * pg, false, None), Ok(a), "the same size in place");
        assert_eq!(remap(&mm, a + 2 * pg, 2 * pg, 2 * pg, true, Some(t)), Err(Errno::EFAULT), "a gap first");
        assert_eq!(remap(&mm, a, 4 * pg, 4 * pg, true, Some(t)), Ok(t));
        assert!(!mm.is_mapped(a, a + pg) && !mm.is_mapped(a + 3 * pg, a + 4 * pg));
        assert!(mm.is_mapped(t, t + 4 * pg), "the target's own page stays in the gap");
        let mut got = [0u8; 4];
        mm.copy_in(t, &mut got[..3]).unwrap();
        assert_eq!(&got[..3], b"one");
        mm.copy_in(t + 3 * pg, &mut got).unwrap();
        assert_eq!(&got, b"four");
        assert_eq!(remap(&mm, t, 4 * pg, pg, false, None), Ok(t), "a shrink unmaps across areas");
        assert!(mm.is_mapped(t, t + pg) && !mm.is_mapped(t + pg, t + 2 * pg));
    }

    /// Every call answers for the page above TASK_SIZE (the ptrace
    /// platform's stub page) as for any address outside the guest's space,
    /// and none reaches the platform.
    #[test]
    fn nothing_reaches_above_task_size() {
        let (mm, space) = mm();
        let top = TASK_SIZE - 4096;
        let a = mm.mmap(anon(top, 4096, RW, true)).unwrap();
        assert_eq!(a, top);
        let req = |noreplace| MapRequest { noreplace, ..anon(TASK_SIZE, 4096, RW, !noreplace) };
        assert_eq!(mm.mmap(req(false)).err(), Some(Errno::ENOMEM));
        assert_eq!(mm.mmap(req(true)).err(), Some(Errno::ENOMEM));
        assert_eq!(mm.munmap(TASK_SIZE, 4096), Err(Errno::EINVAL));
        assert_eq!(mm.munmap(top, 8192), Err(Errno::EINVAL));
        assert_eq!(mm.mprotect(top, 8192, RW), Err(Errno::ENOMEM));
        assert_eq!(mm.dontneed(top, 8192), Err(Errno::ENOMEM));
        assert_eq!(remap(&mm, top, 4096, 8192, false, None), Err(Errno::ENOMEM));
        assert_eq!(remap(&mm, top, 4096, 4096, true, Some(TASK_SIZE)), Err(Errno::EINVAL));
        assert_eq!(remap(&mm, TASK_SIZE, 4096, 4096, true, None), Err(Errno::EFAULT));
        assert_eq!(mm.mincore(top, 8192).err(), Some(Errno::ENOMEM));
        let mut b = [0u8; 2];
        assert_eq!(mm.copy_in(TASK_SIZE - 1, &mut b), Err(Errno::EFAULT));
        assert!(space.maps.lock().iter().all(|m| m.0 + m.1 <= TASK_SIZE));
        assert!(space.unmaps.lock().iter().all(|&(a, l)| a + l <= TASK_SIZE));
    }

    #[test]
    fn copies_fault_in_zero_pages_and_check_permissions() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 8192, RW, false)).unwrap();
        let mut buf = [1u8; 16];
        mm.copy_in(a + 4090, &mut buf).unwrap();
        assert_eq!(buf, [0u8; 16]);
        mm.copy_out(a + 4090, b"across the page").unwrap();
        mm.copy_in(a + 4090, &mut buf[..15]).unwrap();
        assert_eq!(&buf[..15], b"across the page");
        assert_eq!(mm.copy_in(a + 8190, &mut buf), Err(Errno::EFAULT), "runs off the mapping");
        assert_eq!(mm.copy_out_partial(a + 8190, &[7u8; 16]), 2);
        mm.mprotect(a, 4096, RO).unwrap();
        assert_eq!(mm.copy_out(a, b"x"), Err(Errno::EFAULT), "read-only");
        assert_eq!(mm.copy_in(0xdead_0000, &mut buf), Err(Errno::EFAULT));
        assert_eq!(mm.copy_in(u64::MAX - 4, &mut buf), Err(Errno::EFAULT));
    }

    #[test]
    fn reading_untouched_anonymous_memory_allocates_nothing() {
        let (mm, _) = mm();
        let len = 64 * 1024 * 1024;
        let a = mm.mmap(anon(0, len, RW, false)).unwrap();
        let used = mm.memory_file().used();
        let mut buf = vec![1u8; usize::try_from(len).unwrap()];
        mm.copy_in(a, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(mm.copy_in_partial(a, &mut buf), buf.len());
        assert_eq!(mm.memory_file().used(), used, "zeros read from nowhere");
        assert_eq!(mm.resident_bytes(), 0);
        mm.copy_out(a + 4096, b"x").unwrap();
        mm.copy_in(a + 4095, &mut buf[..2]).unwrap();
        assert_eq!(&buf[..2], b"\0x", "a written page reads back");
        assert_eq!(mm.resident_bytes(), 4096);
    }

    #[test]
    fn munmap_and_mprotect_split_and_merge_areas() {
        let (mm, space) = mm();
        let a = mm.mmap(anon(0, 4 * 4096, RW, false)).unwrap();
        mm.mprotect(a + 4096, 4096, RO).unwrap();
        assert_eq!(mm.maps_text().lines().count(), 3);
        mm.mprotect(a + 4096, 4096, RW).unwrap();
        assert_eq!(mm.maps_text().lines().count(), 1, "merged back");
        mm.munmap(a + 4096, 4096).unwrap();
        assert_eq!(mm.maps_text().lines().count(), 2);
        assert!(space.unmaps.lock().contains(&(a + 4096, 4096)));
        assert_eq!(mm.mprotect(a, 4 * 4096, RO), Err(Errno::ENOMEM), "a hole in the range");
        assert_eq!(mm.munmap(a + 1, 4096), Err(Errno::EINVAL));
    }

    #[test]
    fn faults_map_a_window_and_detect_violations() {
        let (mm, space) = mm();
        let a = mm.mmap(anon(0, 64 * 4096, RW, false)).unwrap();
        mm.fault(a + 5 * 4096 + 7).unwrap();
        let (addr, len, _, perms) = space.maps.lock()[0];
        assert!(addr <= a + 5 * 4096 && a + 6 * 4096 <= addr + len);
        assert_eq!(len % 4096, 0);
        assert!(perms.write);
        let r = mm.mmap(anon(0, 4096, RO, false)).unwrap();
        assert_eq!(mm.fault(r), Ok(true));
        assert_eq!(mm.fault(r), Ok(false), "already mapped with every access the area allows");
        assert_eq!(mm.fault(0x20000), Err(Segv::MapErr));
    }

    fn limited(memlock: u64) -> VmLimits {
        VmLimits { memlock: Some(memlock), ..VmLimits::NONE }
    }

    #[test]
    fn locks_are_accounted_against_the_limit() {
        use super::super::{ForkAdvice, Lock, LockAll};
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 4 * 4096, RW, false)).unwrap();
        assert_eq!(mm.mlock(a, 4096, Lock::Locked, &limited(0)), Err(Errno::EPERM));
        assert_eq!(mm.mlock(a, 2 * 4096, Lock::Locked, &limited(4096)), Err(Errno::ENOMEM));
        mm.mlock(a, 4096, Lock::Locked, &limited(4096)).unwrap();
        assert_eq!(mm.resident_bytes(), 4096, "a locked page is populated");
        mm.mlock(a, 4096, Lock::Locked, &limited(4096)).unwrap();
        assert_eq!(mm.locked_bytes(), 4096, "counted once");
        assert_eq!(mm.dontneed(a, 4096), Err(Errno::EINVAL));
        assert_eq!(mm.msync_check(a, a + 4096, false, true), Err(Errno::EBUSY));
        assert_eq!(mm.msync_check(a + 4096, a + 2 * 4096, false, true), Ok(()));
        let req = |locked| mm.mmap_with(anon(0, 4096, RW, false), locked, &limited(4096), false);
        assert_eq!(req(true), Err(Errno::EAGAIN));
        let child = MemoryManager::from_fork_image(Arc::new(FakeSpace::default()), mm.fork_image().unwrap());
        assert_eq!(child.locked_bytes(), 0, "a child's areas are not locked");
        mm.mlockall(LockAll { current: false, future: true, on_fault: true }, &VmLimits::NONE).unwrap();
        let b = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        assert_eq!(mm.locked_bytes(), 2 * 4096, "MCL_FUTURE locks new areas");
        assert_eq!(mm.resident_bytes(), 4096, "on fault: not populated");
        mm.mlockall(LockAll { current: false, future: false, on_fault: false }, &VmLimits::NONE).unwrap();
        assert_eq!(mm.locked_bytes(), 0);
        mm.munmap(b, 4096).unwrap();
        mm.munmap(a + 4096, 4096).unwrap();
        assert_eq!(mm.mlock(a, 3 * 4096, Lock::Locked, &VmLimits::NONE), Err(Errno::ENOMEM), "a hole");
        assert_eq!(mm.locked_bytes(), 4096, "the area before the hole is locked");
        assert_eq!(mm.fork_advice(a, a + 3 * 4096, ForkAdvice::Exclude), Err(Errno::ENOMEM));
        let child = MemoryManager::from_fork_image(Arc::new(FakeSpace::default()), mm.fork_image().unwrap());
        assert!(!child.is_mapped(a, a + 4096) && !child.is_mapped(a + 2 * 4096, a + 3 * 4096));
        assert!(child.is_mapped(a + 3 * 4096, a + 4 * 4096), "past the advised range");
    }

    #[test]
    fn limits_bound_mappings_and_the_break() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 2 * 4096, RW, false)).unwrap();
        let tight = VmLimits { address_space: 2 * 4096, ..VmLimits::NONE };
        assert_eq!(mm.mmap_with(anon(0, 4096, RW, false), false, &tight, false), Err(Errno::ENOMEM));
        assert_eq!(mm.mmap_with(anon(a, 2 * 4096, RW, true), false, &tight, false), Ok(a), "replacing");
        let low = mm.mmap_with(anon(0, 4096, RW, false), false, &VmLimits::NONE, true).unwrap();
        assert!(low >= 0x4000_0000 && low + 4096 <= 0x8000_0000);
        mm.set_brk_start(0x60_0000);
        let no_data = VmLimits { data: 0, ..VmLimits::NONE };
        assert_eq!(mm.brk(0x60_2000, &no_data).unwrap(), 0x60_0000, "RLIMIT_DATA: unchanged");
    }

    #[test]
    fn brk_grows_and_shrinks() {
        let (mm, _) = mm();
        mm.set_brk_start(0x60_0000);
        assert_eq!(mm.brk(0, &VmLimits::NONE).unwrap(), 0x60_0000);
        assert_eq!(mm.brk(0x60_2001, &VmLimits::NONE).unwrap(), 0x60_2001);
        mm.copy_out(0x60_2000, b"x").unwrap();
        assert_eq!(mm.brk(0x60_1000, &VmLimits::NONE).unwrap(), 0x60_1000);
        assert_eq!(mm.copy_out(0x60_2000, b"x"), Err(Errno::EFAULT));
        assert_eq!(mm.brk(0x10, &VmLimits::NONE).unwrap(), 0x60_1000, "below the start: unchanged");
    }

    #[test]
    fn mremap_moves_contents() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        mm.copy_out(a, b"keep").unwrap();
        mm.mmap(anon(a + 4096, 4096, RW, true)).unwrap();
        let b = remap(&mm, a, 4096, 3 * 4096, true, None).unwrap();
        assert_ne!(a, b, "blocked in place, so it moved");
        let mut buf = [0u8; 4];
        mm.copy_in(b, &mut buf).unwrap();
        assert_eq!(&buf, b"keep");
        assert_eq!(mm.copy_in(a, &mut buf), Err(Errno::EFAULT));
        // The page the area left is free again, so it can grow into it.
        assert_eq!(remap(&mm, b, 3 * 4096, 4 * 4096, false, None), Ok(b), "grows in place");
        assert_eq!(remap(&mm, b, 4 * 4096, 5 * 4096, false, None), Err(Errno::ENOMEM), "blocked, may not move");
    }

    #[test]
    fn fork_shares_pages_copy_on_write() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        mm.copy_out(a, b"parent").unwrap();
        let used = mm.memory_file().used();
        let child = MemoryManager::from_fork_image(Arc::new(FakeSpace::default()), mm.fork_image().unwrap());
        assert_eq!(mm.memory_file().used(), used, "nothing copied at fork");
        child.copy_out(a, b"child!").unwrap();
        assert_eq!(mm.memory_file().used(), used + 4096, "the write copied the page");
        let mut buf = [0u8; 6];
        mm.copy_in(a, &mut buf).unwrap();
        assert_eq!(&buf, b"parent");
        child.copy_in(a, &mut buf).unwrap();
        assert_eq!(&buf, b"child!");
        drop(child);
        assert_eq!(mm.memory_file().used(), used);
    }

    #[test]
    fn a_foreign_cow_break_keeps_the_old_frame_until_unmap_stale() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        mm.copy_out(a, b"parent").unwrap();
        let space = Arc::new(FakeSpace::default());
        let child = MemoryManager::from_fork_image(space.clone(), mm.fork_image().unwrap());
        assert_eq!(child.fault(a), Ok(true), "the child maps the shared frame read-only");
        let frame = |m: &MemoryManager| find(&m.layout.lock(), a).and_then(|v| v.pages.get(&a)).unwrap().frame();
        let old = frame(&mm);
        assert_eq!(frame(&child), old);
        child.copy_out_foreign(a, b"poked!").unwrap();
        assert_ne!(frame(&child), old, "the child has its own copy");
        assert!(child.has_stale());
        assert_eq!(mm.mf.refs(old), 2, "the child's stale mapping still holds the old frame");
        assert!(space.unmaps.lock().is_empty(), "only a thread of the child may unmap");
        child.unmap_stale();
        assert!(!child.has_stale());
        assert_eq!(space.unmaps.lock().as_slice(), &[(a, 4096)]);
        assert_eq!(mm.mf.refs(old), 1, "the parent's alone once unmapped");
        let mut buf = [0u8; 6];
        mm.copy_in(a, &mut buf).unwrap();
        assert_eq!(&buf, b"parent");
    }

    #[test]
    fn a_dropped_space_releases_its_stale_frames() {
        let (mm, _) = mm();
        let a = mm.mmap(anon(0, 4096, RW, false)).unwrap();
        mm.copy_out(a, b"parent").unwrap();
        let used = mm.memory_file().used();
        let child = MemoryManager::from_fork_image(Arc::new(FakeSpace::default()), mm.fork_image().unwrap());
        assert_eq!(child.fault(a), Ok(true));
        child.copy_out_foreign(a, b"poked!").unwrap();
        drop(child);
        assert_eq!(mm.memory_file().used(), used, "the copy and the old frame's extra reference are gone");
        let old = find(&mm.layout.lock(), a).and_then(|v| v.pages.get(&a)).unwrap().frame();
        assert_eq!(mm.mf.refs(old), 1);
    }
}
