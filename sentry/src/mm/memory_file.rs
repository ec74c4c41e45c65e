//! The MemoryFile: one memfd that holds all guest memory of a sandbox,
//! mapped once into the sentry so guest memory is read and written without
//! any host system call.

use super::accounting::Accountant;
use super::allocator::FrameAllocator;
use crate::abi::{Errno, PAGE_SIZE};
use parking_lot::Mutex;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// The size of the file's sparse address range (not memory in use).
const FILE_SIZE: u64 = 64 << 30;

pub struct MemoryFile {
    fd: OwnedFd,
    base: *mut u8,
    len: u64,
    alloc: Mutex<FrameAllocator>,
    /// The sandbox's memory charge: every committed page is charged to it,
    /// together with everything else the sandbox holds.
    acct: Arc<Accountant>,
    /// Notified when an address space lets go of its pages (the OOM
    /// killer waits on it for its victim's memory).
    released: crate::waiter::Queue,
}

// SAFETY: `base` points at a shared mapping that lives as long as the
// MemoryFile; all access goes through bounds-checked methods.
unsafe impl Send for MemoryFile {}
// SAFETY: as above; concurrent access to guest memory is inherent (guest
// threads share it) and only ever copies bytes.
unsafe impl Sync for MemoryFile {}

impl MemoryFile {
    /// Creates the memfd and maps it. `limit` caps the sandbox's memory:
    /// committed pages and everything else charged to the accountant.
    pub fn new(limit: u64) -> std::io::Result<MemoryFile> {
        // SAFETY: the name is a NUL-terminated literal.
        let fd = unsafe { libc::memfd_create(c"husk-memory".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let size = libc::off_t::try_from(FILE_SIZE).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        // SAFETY: ftruncate on our own fd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let len = usize::try_from(FILE_SIZE).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        // SAFETY: a new shared mapping of our own memfd; nothing else is
        // placed there because the kernel chooses the address.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(MemoryFile {
            fd,
            base: base.cast(),
            len: FILE_SIZE,
            alloc: Mutex::new(FrameAllocator::new(FILE_SIZE)),
            acct: Accountant::new(limit.min(FILE_SIZE)),
            released: crate::waiter::Queue::default(),
        })
    }

    /// The queue notified whenever an address space releases its pages.
    pub fn released(&self) -> &crate::waiter::Queue {
        &self.released
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The sandbox's memory limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.acct.limit()
    }

    /// Bytes of memory the sandbox holds: committed guest pages, file
    /// data of memory-backed files, queued pipe and socket bytes.
    pub fn used(&self) -> u64 {
        self.acct.charged()
    }

    /// Bytes of guest pages committed in this file.
    pub fn committed(&self) -> u64 {
        self.alloc.lock().used()
    }

    /// The accountant that this file's pages, and the sandbox's other
    /// memory, are charged to.
    pub fn accountant(&self) -> &Arc<Accountant> {
        &self.acct
    }

    /// Allocates `pages` contiguous zeroed pages, or `ENOMEM` past the limit.
    pub fn alloc(&self, pages: u64) -> Result<u64, Errno> {
        let len = pages.checked_mul(PAGE_SIZE).ok_or(Errno::ENOMEM)?;
        if !self.acct.try_charge(len) {
            return Err(Errno::ENOMEM);
        }
        let frame = self.alloc.lock().alloc(pages);
        frame.ok_or_else(|| {
            self.acct.uncharge(len);
            Errno::ENOMEM
        })
    }

    pub fn incref(&self, frame: u64) {
        self.alloc.lock().incref(frame);
    }

    pub fn refs(&self, frame: u64) -> u32 {
        self.alloc.lock().refs(frame)
    }

    /// Drops a reference to a page; the last one returns it to the host
    /// (punching a hole, so it reads as zeros when reused).
    pub fn decref(&self, frame: u64) {
        let mut alloc = self.alloc.lock();
        if alloc.decref(frame) {
            // Punch while the allocator is locked: once the lock is released
            // the frame may be handed out again, and a hole punched then
            // would wipe its new owner's data.
            self.punch(frame, PAGE_SIZE);
            drop(alloc);
            self.acct.uncharge(PAGE_SIZE);
        }
    }

    fn punch(&self, off: u64, len: u64) {
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(off), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: fallocate on our own fd with integer arguments.
        let r = unsafe {
            libc::fallocate(self.fd.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, off, len)
        };
        if r != 0 {
            log::warn!("memory file: punching a hole failed: {}", std::io::Error::last_os_error());
        }
    }

    /// The sentry-side bytes of `[off, off+len)`, which must be in bounds.
    fn ptr(&self, off: u64, len: usize) -> Option<*mut u8> {
        let end = off.checked_add(u64::try_from(len).ok()?)?;
        if end > self.len {
            return None;
        }
        let off = usize::try_from(off).ok()?;
        // SAFETY: off+len is within the mapping (checked above).
        Some(unsafe { self.base.add(off) })
    }

    /// Copies out of the file at `off`.
    pub fn read(&self, off: u64, dst: &mut [u8]) -> bool {
        let Some(p) = self.ptr(off, dst.len()) else {
            return false;
        };
        // SAFETY: `p..p+len` is inside the mapping; guest threads may write
        // concurrently, which at worst yields torn bytes, as on Linux.
        unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr(), dst.len()) };
        true
    }

    /// Copies into the file at `off`.
    pub fn write(&self, off: u64, src: &[u8]) -> bool {
        let Some(p) = self.ptr(off, src.len()) else {
            return false;
        };
        // SAFETY: as in `read`.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        true
    }

    /// Copies one page to another.
    pub fn copy_page(&self, from: u64, to: u64) -> bool {
        let mut page = [0u8; 4096];
        self.read(from, &mut page) && self.write(to, &page)
    }

    /// Runs `f` over the sentry's view of `[off, off+len)` (e.g. to `read`
    /// a host file straight into guest memory).
    pub fn with_slice_mut<R>(&self, off: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let p = self.ptr(off, len)?;
        // SAFETY: in bounds; the slice lives only for the call. Concurrent
        // guest access to the same bytes is inherent to shared memory.
        let s = unsafe { std::slice::from_raw_parts_mut(p, len) };
        Some(f(s))
    }
}

impl Drop for MemoryFile {
    fn drop(&mut self) {
        if let Ok(len) = usize::try_from(self.len) {
            // SAFETY: unmaps exactly the mapping made in `new`.
            unsafe { libc::munmap(self.base.cast(), len) };
        }
    }
}
