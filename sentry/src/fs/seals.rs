//! File seals (fcntl F_ADD_SEALS, F_GET_SEALS) of tmpfs and memfd files,
//! as Linux's mm/memfd.c and shmem: what each seal refuses of writes,
//! size changes, hole punches, mode changes and shared mappings.

use crate::abi::Errno;
use crate::mm::WriteHold;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

pub(crate) const F_SEAL_SEAL: u32 = 0x1;
pub(crate) const F_SEAL_SHRINK: u32 = 0x2;
pub(crate) const F_SEAL_GROW: u32 = 0x4;
pub(crate) const F_SEAL_WRITE: u32 = 0x8;
pub(crate) const F_SEAL_FUTURE_WRITE: u32 = 0x10;
pub(crate) const F_SEAL_EXEC: u32 = 0x20;
pub(crate) const F_ALL_SEALS: u32 = 0x3f;
const WRITE_SEALS: u32 = F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;
/// Linux's shmem writes a page at a time (its files have no large
/// folios), each refused whole by F_SEAL_GROW if it would grow the file.
const WRITE_CHUNK: u64 = crate::abi::PAGE_SIZE;

/// A file's seals, and the shared mappings of it that may become
/// writable (Linux's `i_mmap_writable`), which F_SEAL_WRITE waits for.
pub(crate) struct Seals {
    bits: AtomicU32,
    /// Alive while some mapping holds it (see `WriteHold`).
    writers: Mutex<Weak<()>>,
}

impl Default for Seals {
    /// A tmpfs file's: sealed against sealing.
    fn default() -> Seals {
        Seals { bits: AtomicU32::new(F_SEAL_SEAL), writers: Mutex::new(Weak::new()) }
    }
}

impl Seals {
    pub(crate) fn get(&self) -> u32 {
        self.bits.load(Ordering::Acquire)
    }

    /// memfd_create with MFD_ALLOW_SEALING: seals may be added;
    /// MFD_NOEXEC_SEAL (`noexec`) adds F_SEAL_EXEC.
    pub(crate) fn allow_sealing(&self, noexec: bool) {
        let bits = if noexec { F_SEAL_EXEC } else { 0 };
        self.bits.store(bits, Ordering::Release);
    }

    /// F_ADD_SEALS (the caller checked the descriptor is writable and the
    /// seals known): EPERM once F_SEAL_SEAL is set, EBUSY for F_SEAL_WRITE
    /// while a shared mapping may write, and F_SEAL_EXEC of an executable
    /// file (`mode`) seals writes and size too.
    pub(crate) fn add(&self, seals: u32, mode: u32) -> Result<(), Errno> {
        let writers = self.writers.lock();
        let cur = self.get();
        if cur & F_SEAL_SEAL != 0 {
            return Err(Errno::EPERM);
        }
        if seals & F_SEAL_WRITE != 0 && cur & F_SEAL_WRITE == 0 && writers.strong_count() > 0 {
            return Err(Errno::EBUSY);
        }
        let mut seals = seals;
        if seals & F_SEAL_EXEC != 0 && mode & 0o111 != 0 {
            seals |= F_SEAL_SHRINK | F_SEAL_GROW | WRITE_SEALS;
        }
        self.bits.store(cur | seals, Ordering::Release);
        Ok(())
    }

    /// A shared mapping is being made (see `Mappable::map_shared`): with
    /// writes sealed it may not write (EPERM with PROT_WRITE) nor ever
    /// become writable.
    pub(crate) fn map_shared(&self, write: bool, may_write: bool) -> Result<Option<WriteHold>, Errno> {
        let mut writers = self.writers.lock();
        if self.get() & WRITE_SEALS != 0 {
            return if write { Err(Errno::EPERM) } else { Ok(None) };
        }
        if !may_write {
            return Ok(None);
        }
        let count = writers.upgrade().unwrap_or_else(|| {
            let count = Arc::new(());
            *writers = Arc::downgrade(&count);
            count
        });
        Ok(Some(WriteHold::counted(count)))
    }

    /// How many of `len` (> 0) bytes at `off` a write may store into a
    /// file of `size` bytes: none with writes sealed (EPERM), and with
    /// F_SEAL_GROW those of the chunks before the first that would grow
    /// the file (EPERM if that is the first).
    pub(crate) fn writable_len(&self, off: u64, len: usize, size: u64) -> Result<usize, Errno> {
        let seals = self.get();
        if seals & WRITE_SEALS != 0 {
            return Err(Errno::EPERM);
        }
        let end = off.saturating_add(len as u64);
        if seals & F_SEAL_GROW == 0 || end <= size {
            return Ok(len);
        }
        let mut at = off;
        while at < end {
            let chunk_end = ((at / WRITE_CHUNK) + 1).saturating_mul(WRITE_CHUNK).min(end);
            if chunk_end > size {
                break;
            }
            at = chunk_end;
        }
        match usize::try_from(at - off) {
            Ok(0) | Err(_) => Err(Errno::EPERM),
            Ok(n) => Ok(n),
        }
    }

    /// A size change from `old` to `new` bytes (truncate).
    pub(crate) fn check_resize(&self, old: u64, new: u64) -> Result<(), Errno> {
        let seals = self.get();
        if (new < old && seals & F_SEAL_SHRINK != 0) || (new > old && seals & F_SEAL_GROW != 0) {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// fallocate of bytes up to `end` in a file of `size`.
    pub(crate) fn check_allocate(&self, end: u64, size: u64) -> Result<(), Errno> {
        if self.get() & F_SEAL_GROW != 0 && end > size {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// fallocate's hole punch.
    pub(crate) fn check_punch(&self) -> Result<(), Errno> {
        if self.get() & WRITE_SEALS != 0 {
            return Err(Errno::EPERM);
        }
        Ok(())
    }

    /// A mode change from `old` to `new`: F_SEAL_EXEC freezes the
    /// execute bits.
    pub(crate) fn check_chmod(&self, old: u32, new: u32) -> Result<(), Errno> {
        if self.get() & F_SEAL_EXEC != 0 && (old ^ new) & 0o111 != 0 {
            return Err(Errno::EPERM);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealable(bits: u32) -> Seals {
        let s = Seals::default();
        s.allow_sealing(false);
        s.add(bits, 0o666).unwrap();
        s
    }

    #[test]
    fn tmpfs_files_start_sealed_against_sealing() {
        let s = Seals::default();
        assert_eq!(s.get(), F_SEAL_SEAL);
        assert_eq!(s.add(F_SEAL_WRITE, 0o666), Err(Errno::EPERM));
    }

    #[test]
    fn a_writable_shared_mapping_blocks_the_write_seal() {
        let s = sealable(0);
        let hold = s.map_shared(false, true).unwrap();
        assert!(hold.is_some());
        assert_eq!(s.add(F_SEAL_WRITE | F_SEAL_GROW, 0o666), Err(Errno::EBUSY));
        assert_eq!(s.get(), 0, "nothing applied");
        drop(hold);
        s.add(F_SEAL_WRITE, 0o666).unwrap();
        assert_eq!(s.map_shared(true, true).err(), Some(Errno::EPERM));
        assert!(s.map_shared(false, true).unwrap().is_none(), "never writable");
    }

    #[test]
    fn grow_seal_refuses_whole_pages() {
        let s = sealable(F_SEAL_GROW);
        assert_eq!(s.writable_len(3072, 4096, 4096), Ok(1024));
        assert_eq!(s.writable_len(4096, 100, 4096), Err(Errno::EPERM));
        assert_eq!(s.writable_len(2048, 2048, 3072), Err(Errno::EPERM), "the page of the end");
        assert_eq!(s.writable_len(2048, 1024, 3072), Ok(1024));
        assert_eq!(s.writable_len(2048, 4 * 4096, 2 * 4096 + 2048), Ok(6144));
        assert_eq!(s.check_resize(4096, 8192), Err(Errno::EPERM));
        assert_eq!(s.check_resize(4096, 2048), Ok(()));
        assert_eq!(s.check_allocate(8192, 4096), Err(Errno::EPERM));
    }

    #[test]
    fn exec_seal_of_an_executable_file_seals_writes() {
        let s = Seals::default();
        s.allow_sealing(false);
        s.add(F_SEAL_EXEC, 0o755).unwrap();
        assert_eq!(s.get(), F_SEAL_EXEC | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE);
        assert_eq!(s.check_chmod(0o755, 0o644), Err(Errno::EPERM));
        assert_eq!(s.check_chmod(0o755, 0o711), Ok(()));
    }
}
