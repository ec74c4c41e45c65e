//! The frame allocator of the MemoryFile: hands out page-aligned extents of
//! the file and counts references to each page, so copy-on-write can share
//! a page between address spaces. A page's reference count is stored only
//! while it is above one.

use crate::abi::PAGE_SIZE;
use std::collections::{BTreeMap, HashMap};

/// Allocates extents of a file of `limit` bytes.
pub(crate) struct FrameAllocator {
    /// Free extents below `next`: start → length in bytes (merged, disjoint).
    free: BTreeMap<u64, u64>,
    /// Everything at and above `next` has never been handed out.
    next: u64,
    limit: u64,
    /// Reference counts of pages shared more than once.
    shared: HashMap<u64, u32>,
    /// Bytes currently handed out.
    used: u64,
}

impl FrameAllocator {
    pub(crate) fn new(limit: u64) -> FrameAllocator {
        FrameAllocator { free: BTreeMap::new(), next: 0, limit, shared: HashMap::new(), used: 0 }
    }

    /// Bytes in use.
    pub(crate) fn used(&self) -> u64 {
        self.used
    }

    /// A contiguous extent of `pages` pages, each with one reference.
    pub(crate) fn alloc(&mut self, pages: u64) -> Option<u64> {
        let len = pages.checked_mul(PAGE_SIZE)?;
        if len == 0 {
            return None;
        }
        let fit = self.free.iter().find(|&(_, &l)| l >= len).map(|(&s, &l)| (s, l));
        let start = if let Some((start, flen)) = fit {
            self.free.remove(&start);
            if flen > len {
                self.free.insert(start + len, flen - len);
            }
            start
        } else {
            let start = self.next;
            let end = start.checked_add(len).filter(|&e| e <= self.limit)?;
            self.next = end;
            start
        };
        self.used += len;
        Some(start)
    }

    /// Adds a reference to the page at `frame`.
    pub(crate) fn incref(&mut self, frame: u64) {
        *self.shared.entry(frame).or_insert(1) += 1;
    }

    /// The number of references to the page at `frame`.
    pub(crate) fn refs(&self, frame: u64) -> u32 {
        self.shared.get(&frame).copied().unwrap_or(1)
    }

    /// Drops a reference; returns true when the page became free (the
    /// caller then returns its memory to the host).
    pub(crate) fn decref(&mut self, frame: u64) -> bool {
        if let Some(n) = self.shared.get_mut(&frame) {
            *n -= 1;
            if *n <= 1 {
                self.shared.remove(&frame);
            }
            return false;
        }
        self.release(frame, PAGE_SIZE);
        true
    }

    fn release(&mut self, start: u64, len: u64) {
        self.used -= len;
        let mut start = start;
        let mut len = len;
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.free.get(&(start + len)) {
            self.free.remove(&(start + len));
            len += nl;
        }
        if start + len == self.next {
            self.next = start;
        } else {
            self.free.insert(start, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_contiguous_and_reuses_freed_pages() {
        let mut a = FrameAllocator::new(16 * PAGE_SIZE);
        let x = a.alloc(4).unwrap();
        let y = a.alloc(4).unwrap();
        assert_eq!(y, x + 4 * PAGE_SIZE);
        for i in 0..4 {
            assert!(a.decref(x + i * PAGE_SIZE));
        }
        assert_eq!(a.used(), 4 * PAGE_SIZE);
        // The freed hole is reused first-fit.
        assert_eq!(a.alloc(2).unwrap(), x);
        assert_eq!(a.alloc(2).unwrap(), x + 2 * PAGE_SIZE);
    }

    #[test]
    fn refuses_beyond_limit_and_zero() {
        let mut a = FrameAllocator::new(4 * PAGE_SIZE);
        assert!(a.alloc(0).is_none());
        assert!(a.alloc(5).is_none());
        assert!(a.alloc(4).is_some());
        assert!(a.alloc(1).is_none());
        assert!(a.alloc(u64::MAX).is_none());
    }

    #[test]
    fn shared_pages_free_on_last_reference() {
        let mut a = FrameAllocator::new(4 * PAGE_SIZE);
        let x = a.alloc(1).unwrap();
        a.incref(x);
        assert_eq!(a.refs(x), 2);
        assert!(!a.decref(x));
        assert_eq!(a.refs(x), 1);
        assert!(a.decref(x));
        assert_eq!(a.used(), 0);
    }

    #[test]
    fn freeing_the_top_extent_shrinks_the_high_water_mark() {
        let mut a = FrameAllocator::new(8 * PAGE_SIZE);
        let x = a.alloc(2).unwrap();
        let y = a.alloc(2).unwrap();
        a.decref(y);
        a.decref(y + PAGE_SIZE);
        a.decref(x);
        a.decref(x + PAGE_SIZE);
        assert_eq!(a.alloc(8).unwrap(), 0);
    }
}
