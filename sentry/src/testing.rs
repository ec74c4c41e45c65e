//! What the sentry's unit tests share: a platform that runs no guest code
//! (tests drive tasks and kernels by hand), a kernel on it with tmpfs
//! roots (so the kernel's own tests need not name a filesystem), and a
//! notifier that counts.

use crate::fs::tmpfs::Tmpfs;
use crate::kernel::{Kernel, KernelOptions, ThreadGroup};
use crate::platform::{self, AddressSpace, Context, CpuState, Event, Interrupter, Platform, PlatformError};
use crate::waiter::Notify;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// What the micro-benchmarks drive, which the crate does not export.
pub use crate::auth::creds::Credentials;
pub use crate::kernel::fs_context::FsContext;
pub use crate::kernel::task::Task;
pub use crate::kernel::thread::Thread;
pub use crate::mm::manager::{MapRequest, MemoryManager};
pub use crate::mm::memory_file::MemoryFile;
pub use crate::mm::vma::{Backing, VmaName};
pub use crate::platform::Perms;
pub use crate::vfs::walk::Walker;

/// A platform whose contexts never run guest code.
pub struct Idle;

impl Platform for Idle {
    fn name(&self) -> &'static str {
        "idle"
    }
    fn new_address_space(&self) -> platform::Result<Arc<dyn AddressSpace>> {
        Ok(Arc::new(Idle))
    }
    fn new_context(&self) -> platform::Result<Box<dyn Context>> {
        Ok(Box::new(Idle))
    }
    fn fpu_template(&self) -> &[u8] {
        &[]
    }
}

impl Context for Idle {
    fn switch(&mut self, _: &Arc<dyn AddressSpace>, _: &mut CpuState) -> platform::Result<Event> {
        Err(PlatformError::Unsupported("no guest code runs in unit tests"))
    }
    fn interrupter(&self) -> Arc<dyn Interrupter> {
        Arc::new(Idle)
    }
}

impl Interrupter for Idle {
    fn interrupt(&self) {}
}

impl AddressSpace for Idle {
    fn map(&self, _: u64, _: u64, _: u64, _: Perms) -> platform::Result<()> {
        Ok(())
    }
    fn unmap(&self, _: u64, _: u64) -> platform::Result<()> {
        Ok(())
    }
    fn spawn_thread(&self) -> platform::Result<platform::ThreadToken> {
        Err(PlatformError::Unsupported("no guest code runs in unit tests"))
    }
    fn adopt_thread(&self, _: platform::ThreadToken) -> platform::Result<()> {
        Err(PlatformError::Unsupported("no guest code runs in unit tests"))
    }
    fn release_thread(&self) {}
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Counts the notifications it gets.
#[derive(Default)]
pub struct Count(pub AtomicUsize);

impl Count {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

impl Notify for Count {
    fn notify(&self, _mask: u32) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A kernel on `Idle` over `memory`, with an empty tmpfs root.
pub fn kernel(memory: Arc<MemoryFile>) -> Arc<Kernel> {
    let (root, anon) = (Tmpfs::new(0o755, 0, 0), Tmpfs::new(0o600, 0, 0));
    Arc::new(Kernel::new(Arc::new(Idle), memory, root, anon, KernelOptions::default()))
}

/// Thread `tid` of process `group` on `Idle`, added to `k`'s table.
pub fn thread(k: &Kernel, tid: i32, group: Arc<ThreadGroup>) -> Arc<Thread> {
    let mm = Arc::new(MemoryManager::new(k.memory().clone(), Arc::new(Idle), 1 << 40));
    let root = k.mounts().root();
    let fs = Arc::new(FsContext::new(k.mounts().clone(), root.clone(), root));
    let t = Arc::new(Thread::new(tid, group, Arc::default(), Credentials::new(0, 0), mm, fs));
    k.add_thread(t.clone());
    t
}
