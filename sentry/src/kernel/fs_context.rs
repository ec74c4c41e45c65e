//! A process's filesystem context: root, working directory, umask and
//! mount namespace. The namespace lives here because leaving it
//! (`unshare(CLONE_NEWNS)`) unshares the rest of the context too, as in
//! Linux.

use crate::vfs::{Dentry, MountNamespace};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub struct FsContext {
    root: Mutex<Arc<Dentry>>,
    cwd: Mutex<Arc<Dentry>>,
    umask: AtomicU32,
    mounts: Mutex<Arc<MountNamespace>>,
}

impl FsContext {
    pub fn new(mounts: Arc<MountNamespace>, root: Arc<Dentry>, cwd: Arc<Dentry>) -> FsContext {
        FsContext {
            root: Mutex::new(root),
            cwd: Mutex::new(cwd),
            umask: AtomicU32::new(0o022),
            mounts: Mutex::new(mounts),
        }
    }

    /// A copy for a new process or an unsharing thread.
    pub fn copy(&self) -> FsContext {
        let c = FsContext::new(self.mounts(), self.root(), self.cwd());
        c.swap_umask(self.umask());
        c
    }

    pub fn root(&self) -> Arc<Dentry> {
        self.root.lock().clone()
    }

    pub fn cwd(&self) -> Arc<Dentry> {
        self.cwd.lock().clone()
    }

    /// The mount namespace paths resolve in.
    pub fn mounts(&self) -> Arc<MountNamespace> {
        self.mounts.lock().clone()
    }

    pub fn set_cwd(&self, d: Arc<Dentry>) {
        *self.cwd.lock() = d;
    }

    pub fn set_root(&self, d: Arc<Dentry>) {
        *self.root.lock() = d;
    }

    /// Moves the context into namespace `ns`, its root and working
    /// directory to the same places there.
    pub fn set_mounts(&self, ns: Arc<MountNamespace>) {
        let root = ns.rebase(&self.root());
        let cwd = ns.rebase(&self.cwd());
        self.set_root(root);
        self.set_cwd(cwd);
        *self.mounts.lock() = ns;
    }

    /// Moves the context into namespace `ns` at its root, root and working
    /// directory both (`setns` into a mount namespace).
    pub fn enter(&self, ns: Arc<MountNamespace>) {
        let root = ns.root();
        self.set_root(root.clone());
        self.set_cwd(root);
        *self.mounts.lock() = ns;
    }

    pub fn umask(&self) -> u32 {
        self.umask.load(Ordering::Relaxed)
    }

    /// Sets the umask, returning the old one.
    pub fn swap_umask(&self, m: u32) -> u32 {
        self.umask.swap(m & 0o777, Ordering::Relaxed)
    }
}
