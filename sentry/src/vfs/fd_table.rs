//! The file descriptor table of a process.

use super::FileDescription;
use crate::abi::Errno;
use parking_lot::Mutex;
use std::sync::Arc;

#[derive(Clone)]
struct Entry {
    file: Arc<FileDescription>,
    cloexec: bool,
}

/// Descriptors are allocated lowest-free first, below the NOFILE limit.
pub struct FdTable {
    slots: Mutex<Vec<Option<Entry>>>,
}

impl Default for FdTable {
    fn default() -> Self {
        FdTable::new()
    }
}

impl FdTable {
    pub fn new() -> FdTable {
        FdTable { slots: Mutex::new(Vec::new()) }
    }

    /// A copy for fork (the descriptions themselves are shared).
    pub fn fork(&self) -> FdTable {
        FdTable { slots: Mutex::new(self.slots.lock().clone()) }
    }

    pub fn get(&self, fd: i32) -> Result<Arc<FileDescription>, Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        self.slots.lock().get(idx).and_then(|s| s.as_ref()).map(|e| e.file.clone()).ok_or(Errno::EBADF)
    }

    /// Installs `file` at the lowest free descriptor >= `min`.
    pub fn install(&self, file: Arc<FileDescription>, cloexec: bool, min: i32, limit: u64) -> Result<i32, Errno> {
        let min = usize::try_from(min).map_err(|_| Errno::EINVAL)?;
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        if min >= limit {
            return Err(Errno::EINVAL);
        }
        let mut slots = self.slots.lock();
        let idx = (min..).find(|&i| slots.get(i).is_none_or(|s| s.is_none())).unwrap_or(min);
        if idx >= limit {
            return Err(Errno::EMFILE);
        }
        if slots.len() <= idx {
            slots.resize(idx + 1, None);
        }
        slots[idx] = Some(Entry { file, cloexec });
        i32::try_from(idx).map_err(|_| Errno::EMFILE)
    }

    /// Installs `file` at exactly `fd`, returning what was there.
    pub fn install_at(
        &self,
        fd: i32,
        file: Arc<FileDescription>,
        cloexec: bool,
        limit: u64,
    ) -> Result<Option<Arc<FileDescription>>, Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        if idx as u64 >= limit {
            return Err(Errno::EBADF);
        }
        let mut slots = self.slots.lock();
        if slots.len() <= idx {
            slots.resize(idx + 1, None);
        }
        Ok(slots[idx].replace(Entry { file, cloexec }).map(|e| e.file))
    }

    pub fn remove(&self, fd: i32) -> Result<Arc<FileDescription>, Errno> {
        self.remove_where(fd, |_| true)
    }

    /// Removes `fd` if it still refers to `file`: undoes an install whose
    /// call failed later, when another thread may have closed the
    /// descriptor (and reused its number) meanwhile.
    pub fn remove_if_same(&self, fd: i32, file: &Arc<FileDescription>) -> Result<Arc<FileDescription>, Errno> {
        self.remove_where(fd, |f| Arc::ptr_eq(f, file))
    }

    fn remove_where(
        &self,
        fd: i32,
        which: impl Fn(&Arc<FileDescription>) -> bool,
    ) -> Result<Arc<FileDescription>, Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut slots = self.slots.lock();
        let slot = slots.get_mut(idx).filter(|s| s.as_ref().is_some_and(|e| which(&e.file))).ok_or(Errno::EBADF)?;
        let e = slot.take().ok_or(Errno::EBADF)?;
        while slots.last().is_some_and(|s| s.is_none()) {
            slots.pop();
        }
        Ok(e.file)
    }

    pub fn cloexec(&self, fd: i32) -> Result<bool, Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        self.slots.lock().get(idx).and_then(|s| s.as_ref()).map(|e| e.cloexec).ok_or(Errno::EBADF)
    }

    pub fn set_cloexec(&self, fd: i32, on: bool) -> Result<(), Errno> {
        let idx = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let mut slots = self.slots.lock();
        let e = slots.get_mut(idx).and_then(|s| s.as_mut()).ok_or(Errno::EBADF)?;
        e.cloexec = on;
        Ok(())
    }

    /// Closes every close-on-exec descriptor (at execve); returns their
    /// descriptions.
    pub fn close_on_exec(&self) -> Vec<Arc<FileDescription>> {
        let mut slots = self.slots.lock();
        slots
            .iter_mut()
            .filter(|s| s.as_ref().is_some_and(|e| e.cloexec))
            .filter_map(|s| s.take())
            .map(|e| e.file)
            .collect()
    }

    /// The open descriptors, ascending.
    pub fn fds(&self) -> Vec<i32> {
        let slots = self.slots.lock();
        slots.iter().enumerate().filter(|(_, s)| s.is_some()).filter_map(|(i, _)| i32::try_from(i).ok()).collect()
    }

    /// Closes every descriptor (at exit); returns their descriptions,
    /// which the caller releases after the table's lock: releasing one
    /// may hang up a terminal and signal processes.
    pub fn clear(&self) -> Vec<Arc<FileDescription>> {
        let slots = std::mem::take(&mut *self.slots.lock());
        slots.into_iter().flatten().map(|e| e.file).collect()
    }
}
