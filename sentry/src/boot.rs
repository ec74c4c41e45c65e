//! Booting a sandbox: the MemoryFile and platform, the root filesystem
//! (gofer lower layer under a tmpfs upper layer), the sentry's own
//! filesystems, and the init process.

use crate::abi::Errno;
use crate::control::{ControlConfig, StartGate};
use crate::fs::{devfs, gofer, overlay, procfs, tmpfs::Tmpfs};
use crate::kernel::{Credentials, ExitStatus, Kernel, KernelOptions};
use crate::launch::{self, LaunchError, ProcessSpec};
use crate::mm::MemoryFile;
use crate::platform::ptrace::PtracePlatform;
use crate::platform::Platform;
use crate::vfs::walk::Walker;
use crate::vfs::{Dentry, NewNode, Node, SetAttr, SetTime};
use std::os::fd::OwnedFd;
use std::sync::{mpsc, Arc};

/// What the runtime tells the sentry to run.
pub struct BootConfig {
    /// The sentry's end of the gofer connection.
    pub gofer: OwnedFd,
    /// The sandbox's first process.
    pub init: ProcessSpec,
    pub strace: bool,
    /// Committed guest memory allowed, in bytes.
    pub memory_limit: u64,
    pub hostname: Vec<u8>,
    /// With a control socket, the init process waits for `start` (the OCI
    /// lifecycle); without one it runs at once (`husk do`).
    pub control: Option<ControlConfig>,
}

/// Why a sandbox could not start.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("cannot create guest memory: {0}")]
    Memory(std::io::Error),
    #[error("platform: {0}")]
    Platform(#[from] crate::platform::PlatformError),
    #[error("root filesystem: {0}")]
    Root(Errno),
    #[error("{0}")]
    Launch(#[from] LaunchError),
    #[error("confinement: {0}")]
    Confine(#[from] crate::seccomp::SeccompError),
    #[error("{0}")]
    Isolate(#[from] crate::confine::ConfineError),
    #[error("starting a sentry thread: {0}")]
    Thread(std::io::Error),
    #[error("the init task ended without a status")]
    Lost,
}

/// Boots the sandbox and runs its init process to completion. Under a
/// control socket, a failure before the init process is loaded is also
/// reported to the runtime waiting on `ready`.
pub fn boot(mut cfg: BootConfig) -> Result<ExitStatus, BootError> {
    let (listener, gate) = match cfg.control.take() {
        Some(c) => (Some(c.listener), Some(Arc::new(StartGate::new(c.ready)))),
        None => (None, None),
    };
    let result = boot_with(cfg, listener, gate.clone());
    if let (Some(g), Err(e)) = (&gate, &result) {
        g.report(Err(e.to_string()));
    }
    result
}

fn boot_with(
    cfg: BootConfig,
    listener: Option<OwnedFd>,
    gate: Option<Arc<StartGate>>,
) -> Result<ExitStatus, BootError> {
    crate::host_signals::block().map_err(|e| BootError::Thread(e.into()))?;
    let memory = Arc::new(MemoryFile::new(cfg.memory_limit).map_err(BootError::Memory)?);
    let platform: Arc<dyn Platform> = Arc::new(PtracePlatform::new(memory.fd())?);
    let lower = gofer::new_gofer_fs(cfg.gofer).map_err(BootError::Root)?;
    let ls = lower.stat().map_err(BootError::Root)?;
    let upper = Tmpfs::new(ls.mode & 0o7777, ls.uid, ls.gid);
    let times =
        SetAttr { atime: Some(SetTime::At(ls.atime)), mtime: Some(SetTime::At(ls.mtime)), ..SetAttr::default() };
    upper.setattr(&times).map_err(BootError::Root)?;
    let root = overlay::new_overlay(upper, lower);
    let opts = KernelOptions { strace: cfg.strace, hostname: cfg.hostname.clone() };
    let kernel = Arc::new(Kernel::new(platform, memory, root, Tmpfs::new(0o600, 0, 0), opts));
    mount_system_filesystems(&kernel).map_err(BootError::Root)?;
    crate::syscalls::prime_host_info();
    let stdio_names = [host_fd_name(0), host_fd_name(1), host_fd_name(2)];
    crate::confine::isolate()?;
    crate::host_signals::start_forwarder(Arc::downgrade(&kernel)).map_err(BootError::Thread)?;
    if let (Some(l), Some(g)) = (listener, &gate) {
        crate::control::serve(Arc::downgrade(&kernel), l, g.clone()).map_err(BootError::Thread)?;
    }
    crate::seccomp::confine_sentry()?;

    let init = cfg.init;
    let (tx, rx) = mpsc::channel();
    let k = kernel.clone();
    std::thread::Builder::new()
        .name("task-1".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let r = run_init(k, init, stdio_names, gate);
            let _ = tx.send(r);
        })
        .map_err(BootError::Thread)?;
    rx.recv().map_err(|_| BootError::Lost)?
}

/// Mounts /proc, /dev, /dev/shm, /sys and /tmp, creating the mount points
/// in the overlay when the image lacks them.
fn mount_system_filesystems(kernel: &Arc<Kernel>) -> Result<(), Errno> {
    let ns = &kernel.mounts;
    let creds = Credentials::new(0, 0);
    let w = Walker { ns, root: ns.root(), creds: &creds };
    let mount = |path: &[u8], fs: Arc<dyn Node>, fs_type: &str| -> Result<(), Errno> {
        let d = ensure_dir(&w, path)?;
        ns.mount(&d, fs, fs_type, fs_type)
    };
    mount(b"/proc", procfs::new_procfs(Arc::downgrade(kernel)), "proc")?;
    mount(b"/dev", devfs::new_devfs(kernel.host_terminals.clone()), "devtmpfs")?;
    mount(b"/dev/shm", Tmpfs::new(0o1777, 0, 0), "tmpfs")?;
    mount(b"/sys", Tmpfs::new(0o555, 0, 0), "sysfs")?;
    mount(b"/tmp", Tmpfs::new(0o1777, 0, 0), "tmpfs")?;
    Ok(())
}

/// Resolves a directory, creating it (in the overlay's upper layer) if
/// missing.
fn ensure_dir(w: &Walker<'_>, path: &[u8]) -> Result<Arc<Dentry>, Errno> {
    match w.resolve(&w.root, path, true) {
        Ok(d) => Ok(d),
        Err(Errno::ENOENT) => {
            let pn = w.resolve_parent(&w.root, path)?;
            pn.parent.node.mkdir(&pn.name, NewNode { mode: 0o755, uid: 0, gid: 0 })?;
            w.resolve(&w.root, path, true)
        }
        Err(e) => Err(e),
    }
}

fn run_init(
    kernel: Arc<Kernel>,
    spec: ProcessSpec,
    stdio_names: [String; 3],
    gate: Option<Arc<StartGate>>,
) -> Result<ExitStatus, BootError> {
    let process = launch::load(&kernel, spec, &stdio_names)?;
    if let Some(g) = gate {
        g.report(Ok(()));
        g.wait();
    }
    // The sandbox lasts as long as its init process, whose other threads
    // may still be running.
    Ok(process.run()?)
}

/// How /proc/self/fd names a standard stream: like the host names it
/// ("pipe:[…]", "/dev/pts/0"), as that is what the guest's stream is.
fn host_fd_name(i: usize) -> String {
    std::fs::read_link(format!("/proc/self/fd/{i}"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("host-stdio:[{i}]"))
}
