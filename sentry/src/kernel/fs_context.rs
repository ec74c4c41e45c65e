//! A process's filesystem context: root, working directory and umask.

use crate::vfs::Dentry;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub struct FsContext {
    root: Mutex<Arc<Dentry>>,
    cwd: Mutex<Arc<Dentry>>,
    umask: AtomicU32,
}

impl FsContext {
    pub fn new(root: Arc<Dentry>, cwd: Arc<Dentry>) -> FsContext {
        FsContext { root: Mutex::new(root), cwd: Mutex::new(cwd), umask: AtomicU32::new(0o022) }
    }

    pub fn root(&self) -> Arc<Dentry> {
        self.root.lock().clone()
    }

    pub fn cwd(&self) -> Arc<Dentry> {
        self.cwd.lock().clone()
    }

    pub fn set_cwd(&self, d: Arc<Dentry>) {
        *self.cwd.lock() = d;
    }

    pub fn set_root(&self, d: Arc<Dentry>) {
        *self.root.lock() = d;
    }

    pub fn umask(&self) -> u32 {
        self.umask.load(Ordering::Relaxed)
    }

    /// Sets the umask, returning the old one.
    pub fn swap_umask(&self, m: u32) -> u32 {
        self.umask.swap(m & 0o777, Ordering::Relaxed)
    }
}
