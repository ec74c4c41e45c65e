//! Shared file pages: the frames a MAP_SHARED mapping of a file uses. A
//! file that supports shared mappings keeps a PageCache; every mapping of
//! a page maps the same frame, and the file's own reads and writes are
//! kept coherent with it (reads see stores made through mappings, writes
//! reach mapped pages).

use super::MemoryFile;
use crate::abi::{Errno, PAGE_SIZE};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Frames of a file's shared mappings, by page index.
pub(crate) struct PageCache {
    mf: Arc<MemoryFile>,
    pages: Mutex<BTreeMap<u64, u64>>,
}

/// What a MAP_SHARED mapping of a file takes its frames from.
pub trait SharedPages: Send + Sync {
    /// The frame of page `index` of the file, with a reference for the
    /// caller (its mapping).
    fn frame(&self, index: u64) -> Result<u64, Errno>;
}

fn page_len() -> usize {
    usize::try_from(PAGE_SIZE).unwrap_or(4096)
}

impl PageCache {
    pub(crate) fn new(mf: Arc<MemoryFile>) -> Arc<PageCache> {
        Arc::new(PageCache { mf, pages: Mutex::new(BTreeMap::new()) })
    }

    /// The frame of page `index`, filled by `fill` when it is new; the
    /// caller gets a reference of its own. `fill` runs without the cache's
    /// lock held (it takes the file's).
    pub(crate) fn frame(&self, index: u64, fill: impl FnOnce(&mut [u8])) -> Result<u64, Errno> {
        if let Some(&f) = self.pages.lock().get(&index) {
            self.mf.incref(f);
            return Ok(f);
        }
        let mut page = vec![0u8; page_len()];
        fill(&mut page);
        let mut pages = self.pages.lock();
        let frame = match pages.get(&index) {
            Some(&f) => f,
            None => {
                let f = self.mf.alloc(1)?;
                self.mf.write(f, &page);
                pages.insert(index, f);
                f
            }
        };
        self.mf.incref(frame);
        Ok(frame)
    }

    /// How many pages have a frame.
    pub(crate) fn frames(&self) -> u64 {
        u64::try_from(self.pages.lock().len()).unwrap_or(u64::MAX)
    }

    /// Whether page `index` has a frame (mappings may store to it).
    pub(crate) fn holds(&self, index: u64) -> bool {
        self.pages.lock().contains_key(&index)
    }

    /// The file was truncated to `len`: mapped bytes past it read as zero.
    pub(crate) fn truncate(&self, len: u64) {
        let pages = self.pages.lock();
        for (&index, &frame) in pages.range(len / PAGE_SIZE..) {
            let from = len.saturating_sub(index * PAGE_SIZE).min(PAGE_SIZE);
            let zeros = vec![0u8; usize::try_from(PAGE_SIZE - from).unwrap_or(0)];
            self.mf.write(frame + from, &zeros);
        }
    }

    /// Copies bytes of page `index` from `from` into `dst` if the page is
    /// cached (its frame holds the file's bytes, including stores made
    /// through mappings); false when it is not.
    pub(crate) fn read_cached(&self, index: u64, from: u64, dst: &mut [u8]) -> bool {
        let pages = self.pages.lock();
        match pages.get(&index) {
            Some(&frame) => self.mf.read(frame + from, dst),
            None => false,
        }
    }

    /// A write of `buf` at `off` to the file also reaches mapped pages.
    /// Zeroes the bytes of `off..end` in the frames held.
    pub(crate) fn zero(&self, off: u64, end: u64) {
        let pages = self.pages.lock();
        for (&index, &frame) in pages.range(off / PAGE_SIZE..end.div_ceil(PAGE_SIZE)) {
            let page_start = index * PAGE_SIZE;
            let (from, to) = (off.max(page_start), end.min(page_start + PAGE_SIZE));
            let Ok(n) = usize::try_from(to - from) else { continue };
            self.mf.write(frame + (from - page_start), &vec![0u8; n]);
        }
    }

    pub(crate) fn write_through(&self, off: u64, buf: &[u8]) {
        let pages = self.pages.lock();
        let end = off + buf.len() as u64;
        let first = off / PAGE_SIZE;
        for (&index, &frame) in pages.range(first..end.div_ceil(PAGE_SIZE)) {
            let page_start = index * PAGE_SIZE;
            let from = off.max(page_start);
            let to = end.min(page_start + PAGE_SIZE);
            let (Ok(a), Ok(b)) = (usize::try_from(from - off), usize::try_from(to - off)) else { continue };
            self.mf.write(frame + (from - page_start), &buf[a..b]);
        }
    }
}

impl Drop for PageCache {
    fn drop(&mut self) {
        for &frame in self.pages.get_mut().values() {
            self.mf.decref(frame);
        }
    }
}
