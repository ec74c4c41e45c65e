//! Virtual memory areas and the per-page state they carry.

use super::Mappable;
use crate::abi::PAGE_SIZE;
use crate::platform::Perms;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A page entry: the MemoryFile offset of the frame, with flags in the low
/// bits (frames are page aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageEntry(u64);

const MAPPED: u64 = 1;
const MAPPED_WRITABLE: u64 = 2;

impl PageEntry {
    pub(crate) fn new(frame: u64) -> PageEntry {
        PageEntry(frame)
    }

    pub(crate) fn frame(self) -> u64 {
        self.0 & !(PAGE_SIZE - 1)
    }

    /// Mirrored into the platform's address space.
    pub(crate) fn mapped(self) -> bool {
        self.0 & MAPPED != 0
    }

    pub(crate) fn mapped_writable(self) -> bool {
        self.0 & MAPPED_WRITABLE != 0
    }

    pub(crate) fn with_mapping(self, mapped: bool, writable: bool) -> PageEntry {
        let mut v = self.frame();
        if mapped {
            v |= MAPPED;
            if writable {
                v |= MAPPED_WRITABLE;
            }
        }
        PageEntry(v)
    }
}

/// What backs an area's pages before they are first touched.
#[derive(Clone)]
pub enum Backing {
    /// Zero-filled memory.
    Anon,
    /// A file; `offset` is the file offset of the area's start.
    File { file: Arc<dyn Mappable>, offset: u64 },
    /// A file's shared pages (MAP_SHARED); `file` names it in maps.
    /// `may_write` is held while the area may become writable (None: it
    /// never may, mprotect answers EACCES).
    SharedFile {
        file: Arc<dyn Mappable>,
        pages: Arc<dyn super::page_cache::SharedPages>,
        offset: u64,
        may_write: Option<super::WriteHold>,
    },
}

/// How the area is named in `/proc/[pid]/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VmaName {
    None,
    Heap,
    Stack,
}

/// Whether an area's pages are locked in memory (mlock(2)): Linux's
/// VM_LOCKED and VM_LOCKONFAULT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lock {
    #[default]
    None,
    /// Every page is populated when the area is locked.
    Locked,
    /// Pages are locked as they are faulted in (MLOCK_ONFAULT).
    OnFault,
}

impl Lock {
    pub(crate) fn locked(self) -> bool {
        self != Lock::None
    }
}

/// A NUMA memory policy (mbind(2), set_mempolicy(2)): the mode with its
/// flags, as the guest gave it, and the node mask (the sandbox has one
/// node, 0, so the mask is bit 0 or empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MemPolicy {
    pub mode: u32,
    pub nodes: u64,
}

/// An area's advice and attributes beyond its protection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct VmaFlags {
    pub lock: Lock,
    /// MADV_DONTFORK: a fork's child does not get the area.
    pub dontfork: bool,
    /// MADV_WIPEONFORK: a fork's child gets the area empty.
    pub wipeonfork: bool,
    /// The area's memory policy (mbind); MPOL_DEFAULT when never set.
    pub policy: MemPolicy,
}

/// A contiguous range of guest addresses with one set of attributes.
#[derive(Clone)]
pub(crate) struct Vma {
    pub start: u64,
    pub end: u64,
    pub perms: Perms,
    pub shared: bool,
    pub backing: Backing,
    pub name: VmaName,
    pub flags: VmaFlags,
    /// Populated pages: guest page address → frame.
    pub pages: BTreeMap<u64, PageEntry>,
}

impl Vma {
    pub(crate) fn new(start: u64, end: u64, perms: Perms, shared: bool, backing: Backing, name: VmaName) -> Vma {
        Vma { start, end, perms, shared, backing, name, flags: VmaFlags::default(), pages: BTreeMap::new() }
    }

    pub(crate) fn size(&self) -> u64 {
        self.end - self.start
    }

    pub(crate) fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// Splits off `[at, end)` into a new area; `at` must be strictly inside.
    pub(crate) fn split_off(&mut self, at: u64) -> Vma {
        let pages = self.pages.split_off(&at);
        let backing = self.backing_at(at);
        let tail = Vma {
            start: at,
            end: self.end,
            perms: self.perms,
            shared: self.shared,
            backing,
            name: self.name.clone(),
            flags: self.flags,
            pages,
        };
        self.end = at;
        tail
    }

    /// What backs an area that would start at `at` (inside this one): the
    /// same memory, from the file offset of `at`.
    pub(crate) fn backing_at(&self, at: u64) -> Backing {
        match &self.backing {
            Backing::Anon => Backing::Anon,
            Backing::File { file, offset } => Backing::File { file: file.clone(), offset: offset + (at - self.start) },
            Backing::SharedFile { file, pages, offset, may_write } => Backing::SharedFile {
                file: file.clone(),
                pages: pages.clone(),
                offset: offset + (at - self.start),
                may_write: may_write.clone(),
            },
        }
    }

    /// Whether `next` continues this area seamlessly (so they can merge).
    pub(crate) fn can_merge(&self, next: &Vma) -> bool {
        self.end == next.start
            && self.perms == next.perms
            && self.shared == next.shared
            && self.name == next.name
            && self.flags == next.flags
            && match (&self.backing, &next.backing) {
                (Backing::Anon, Backing::Anon) => true,
                (Backing::File { file: a, offset: ao }, Backing::File { file: b, offset: bo }) => {
                    Arc::ptr_eq(a, b) && ao + self.size() == *bo
                }
                (
                    Backing::SharedFile { pages: a, offset: ao, may_write: aw, .. },
                    Backing::SharedFile { pages: b, offset: bo, may_write: bw, .. },
                ) => Arc::ptr_eq(a, b) && ao + self.size() == *bo && aw.is_some() == bw.is_some(),
                _ => false,
            }
    }

    /// The file offset backing guest address `addr`, for file areas.
    pub(crate) fn file_offset(&self, addr: u64) -> Option<u64> {
        match &self.backing {
            Backing::File { offset, .. } | Backing::SharedFile { offset, .. } => Some(offset + (addr - self.start)),
            Backing::Anon => None,
        }
    }
}
