//! Booting a sandbox: the MemoryFile and platform, the root filesystem
//! (gofer lower layer under a tmpfs upper layer), the sentry's own
//! filesystems, and the init process.

use crate::abi::Errno;
use crate::control::{ControlConfig, StartGate};
use crate::fs::host_file::HostStreamNode;
use crate::fs::{devfs, gofer, overlay, procfs, tmpfs::Tmpfs};
use crate::kernel::exec;
use crate::kernel::{Credentials, ExitStatus, FsContext, Kernel, KernelOptions, Task, Thread};
use crate::loader::MMAP_TOP;
use crate::mm::{MemoryFile, MemoryManager};
use crate::platform::ptrace::PtracePlatform;
use crate::platform::Platform;
use crate::vfs::walk::Walker;
use crate::vfs::{Dentry, FileDescription, NewNode, Node, SetAttr, SetTime};
use std::os::fd::OwnedFd;
use std::sync::{mpsc, Arc};

/// What the runtime tells the sentry to run.
pub struct BootConfig {
    /// The sentry's end of the gofer connection.
    pub gofer: OwnedFd,
    pub init: InitSpec,
    pub strace: bool,
    /// Committed guest memory allowed, in bytes.
    pub memory_limit: u64,
    pub hostname: Vec<u8>,
    /// With a control socket, the init process waits for `start` (the OCI
    /// lifecycle); without one it runs at once (`husk do`).
    pub control: Option<ControlConfig>,
}

/// The sandbox's first process.
pub struct InitSpec {
    /// argv; argv[0] is looked up in PATH when it has no '/'.
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
    /// The working directory inside the sandbox.
    pub cwd: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    /// The guest's stdin, stdout and stderr.
    pub stdio: [OwnedFd; 3],
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
    #[error("{0}: {1}")]
    Exec(String, Errno),
    #[error("confinement: {0}")]
    Confine(#[from] crate::seccomp::SeccompError),
    #[error("{0}")]
    Isolate(#[from] crate::confine::ConfineError),
    #[error("starting a sentry thread: {0}")]
    Thread(std::io::Error),
    #[error("no command given")]
    NoCommand,
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
    mount(b"/dev", devfs::new_devfs(), "devtmpfs")?;
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
    cfg: InitSpec,
    stdio_names: [String; 3],
    gate: Option<Arc<StartGate>>,
) -> Result<ExitStatus, BootError> {
    let argv0 = cfg.argv.first().cloned().ok_or(BootError::NoCommand)?;
    let space = kernel.platform.new_address_space()?;
    let mm = Arc::new(MemoryManager::new(kernel.memory.clone(), space, MMAP_TOP));
    let root = kernel.mounts.root();
    let creds = Credentials::new(cfg.uid, cfg.gid);
    let cwd = {
        let w = Walker { ns: &kernel.mounts, root: root.clone(), creds: &creds };
        w.resolve(&root, &cfg.cwd, true).unwrap_or_else(|_| root.clone())
    };
    let fs = Arc::new(FsContext::new(root, cwd));
    let tid = kernel.alloc_tid();
    let thread = Arc::new(Thread::new_init(tid, creds, mm, fs));
    kernel.threads.lock().insert(tid, thread.clone());
    kernel.procs.add(tid, 0);
    install_stdio(&kernel, &thread, cfg.stdio, &stdio_names);

    let mut task = Task::new(kernel.clone(), thread.clone())?;
    let name = String::from_utf8_lossy(&argv0).into_owned();
    let path = find_program(&task, &argv0, &cfg.env).map_err(|e| BootError::Exec(name.clone(), e))?;
    let d = crate::syscalls::resolve_for_exec(&task, &path).map_err(|e| BootError::Exec(name.clone(), e))?;
    let file = exec::open_exec_dentry(&task, d).map_err(|e| BootError::Exec(name.clone(), e))?;
    exec::execve(&mut task, file, &path, cfg.argv, cfg.env).map_err(|e| BootError::Exec(name, e))?;
    if let Some(g) = gate {
        g.report(Ok(()));
        g.wait();
    }
    let status = task.run()?;
    task.finish(status);
    // The sandbox lasts as long as its init process, whose other threads
    // may still be running.
    Ok(kernel.procs.wait_exit(tid).unwrap_or(status))
}

fn install_stdio(kernel: &Kernel, thread: &Thread, stdio: [OwnedFd; 3], names: &[String; 3]) {
    let fds = thread.fds();
    for (i, fd) in stdio.into_iter().enumerate() {
        let node = Arc::new(HostStreamNode::new(fd));
        let ops = node.stream();
        let d = kernel.anon_dentry(names[i].as_bytes(), node);
        let flags = if i == 0 { libc::O_RDONLY } else { libc::O_WRONLY };
        let f = FileDescription::new(d, ops, u32::try_from(flags).unwrap_or(0));
        if let Ok(n) = i32::try_from(i) {
            if let Err(e) = fds.install_at(n, f, false, u64::MAX) {
                log::warn!("cannot install stdio fd {i}: {e}");
            }
        }
    }
}

/// How /proc/self/fd names a standard stream: like the host names it
/// ("pipe:[…]", "/dev/pts/0"), as that is what the guest's stream is.
fn host_fd_name(i: usize) -> String {
    std::fs::read_link(format!("/proc/self/fd/{i}"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("host-stdio:[{i}]"))
}

/// Looks `name` up in the guest's PATH (from `env`) unless it has a '/'.
fn find_program(task: &Task, name: &[u8], env: &[Vec<u8>]) -> Result<Vec<u8>, Errno> {
    if name.contains(&b'/') {
        return Ok(name.to_vec());
    }
    let path = env
        .iter()
        .find_map(|e| e.strip_prefix(b"PATH="))
        .unwrap_or(b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    let mut last = Errno::ENOENT;
    for dir in path.split(|&b| b == b':').filter(|d| !d.is_empty()) {
        let mut cand = dir.to_vec();
        cand.push(b'/');
        cand.extend_from_slice(name);
        match crate::syscalls::resolve_for_exec(task, &cand).and_then(|d| exec::open_exec_dentry(task, d)) {
            Ok(_) => return Ok(cand),
            Err(e) => last = e,
        }
    }
    Err(last)
}
