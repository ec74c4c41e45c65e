//! Guest memory: the MemoryFile that holds every guest page, its frame
//! allocator, and the MemoryManager of each address space.

pub(crate) mod accounting;
pub(crate) mod advice;
pub(crate) mod allocator;
pub(crate) mod manager;
pub(crate) mod memory_file;
pub(crate) mod page_cache;
pub(crate) mod vma;

pub(crate) use advice::{ForkAdvice, LockAll};
pub(crate) use manager::{MapRequest, MemoryManager, RemapRequest, Segv, VmLimits};
pub(crate) use memory_file::MemoryFile;
pub(crate) use vma::{Backing, Lock, MemPolicy, VmaName};

use crate::abi::Errno;
use std::any::Any;
use std::sync::Arc;

/// What a shared file mapping that may become writable holds: its file
/// counts such mappings by the holds alive (F_SEAL_WRITE is EBUSY while
/// there is one). Areas split, moved or copied by fork share it.
#[derive(Clone)]
pub struct WriteHold {
    /// Held for its strong count alone.
    _count: Arc<dyn Any + Send + Sync>,
}

impl WriteHold {
    /// A hold no file counts.
    pub fn new() -> WriteHold {
        WriteHold { _count: Arc::new(()) }
    }

    /// A hold counted in `count`: alive while `count` has a strong
    /// reference.
    pub fn counted(count: Arc<dyn Any + Send + Sync>) -> WriteHold {
        WriteHold { _count: count }
    }
}

impl Default for WriteHold {
    fn default() -> Self {
        WriteHold::new()
    }
}

/// A file that can back a private mapping: its bytes are copied into guest
/// pages on first touch.
pub trait Mappable: Send + Sync {
    /// Reads at `off`; short reads mean end of file.
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno>;
    /// The path shown in `/proc/[pid]/maps`.
    fn map_name(&self) -> String;

    /// The file's size now, for a mapping's pages past its last page
    /// (an access there is SIGBUS, a copy EFAULT); None for what has no
    /// end (/dev/zero, a SysV segment).
    fn size(&self) -> Option<u64> {
        None
    }
    /// Device and inode numbers shown in `/proc/[pid]/maps`.
    fn map_ids(&self) -> (u64, u64);

    /// The pages MAP_SHARED mappings of this file share, for files that
    /// support shared writable mappings.
    fn shared_pages(&self, _mf: &std::sync::Arc<MemoryFile>) -> Option<std::sync::Arc<dyn page_cache::SharedPages>> {
        None
    }

    /// A shared mapping of the file is being made through a descriptor
    /// open for writing (`may_write`), with PROT_WRITE (`write`): what the
    /// mapping holds for as long as it may become writable (Linux's
    /// VM_MAYWRITE, counted in the file's `i_mmap_writable`), None if it
    /// never may; EPERM if the file's writes are sealed and `write`.
    fn map_shared(&self, write: bool, may_write: bool) -> Result<Option<WriteHold>, Errno> {
        let _ = write;
        Ok(may_write.then(WriteHold::new))
    }

    /// Whether mapping the file maps anonymous memory (/dev/zero): a
    /// shared mapping of it is shared anonymous memory.
    fn anonymous(&self) -> bool {
        false
    }

    /// For the file of a SysV shared memory attachment, the segment's
    /// size: `shmdt` unmaps such areas (Linux tells them by `shm_vm_ops`).
    fn sysv_shm_size(&self) -> Option<u64> {
        None
    }
    /// Whether mappings of this file may be made executable (false for a
    /// file of a noexec mount: mprotect then answers EACCES, as Linux's
    /// VM_MAYEXEC does).
    fn may_exec(&self) -> bool {
        true
    }
}

/// A file of a noexec mount, as its mappings see it: never executable.
pub struct NoExec(pub std::sync::Arc<dyn Mappable>);

impl Mappable for NoExec {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.0.read_at(off, buf)
    }
    fn map_name(&self) -> String {
        self.0.map_name()
    }
    fn size(&self) -> Option<u64> {
        self.0.size()
    }
    fn map_ids(&self) -> (u64, u64) {
        self.0.map_ids()
    }
    fn shared_pages(&self, mf: &std::sync::Arc<MemoryFile>) -> Option<std::sync::Arc<dyn page_cache::SharedPages>> {
        self.0.shared_pages(mf)
    }
    fn map_shared(&self, write: bool, may_write: bool) -> Result<Option<WriteHold>, Errno> {
        self.0.map_shared(write, may_write)
    }
    fn anonymous(&self) -> bool {
        self.0.anonymous()
    }
    fn sysv_shm_size(&self) -> Option<u64> {
        self.0.sysv_shm_size()
    }
    fn may_exec(&self) -> bool {
        false
    }
}
