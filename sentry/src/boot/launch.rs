//! Starting a guest process from outside the guest: the sandbox's init
//! process at boot, and the processes `husk exec` adds to a running
//! sandbox. Each is a new process with a fresh address space whose
//! standard streams are host descriptors the runtime handed over.

use crate::abi::fcntl::O_RDWR;
use crate::abi::Errno;
use crate::auth::caps::Capabilities;
use crate::auth::Credentials;
use crate::boot::console::Console;
use crate::fs::devpts::Devpts;
use crate::fs::host_file::HostStreamNode;
use crate::fs::tty::terminal::TtyFile;
use crate::kernel::exec;
use crate::kernel::limits::{Rlimit, RLIMIT_NOFILE};
use crate::kernel::{ExitStatus, FsContext, Kernel, Task, Thread};
use crate::loader::MMAP_TOP;
use crate::mm::MemoryManager;
use crate::platform::PlatformError;
use crate::vfs::walk::Walker;
use crate::vfs::FileDescription;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// A process to start.
pub struct ProcessSpec {
    /// argv; argv[0] is looked up in PATH when it has no '/'.
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
    /// The working directory inside the sandbox.
    pub cwd: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Resource limits other than the defaults: (resource, limit).
    pub rlimits: Vec<(usize, Rlimit)>,
    /// The process's stdin, stdout and stderr.
    pub stdio: [OwnedFd; 3],
    /// The capability sets to start with (else those of `uid`).
    pub caps: Option<Capabilities>,
    /// No privileges to gain at exec (process.noNewPrivileges).
    pub no_new_privs: bool,
    /// The three are one host terminal, a container's console: bridge it
    /// to a sentry terminal that becomes the process's controlling
    /// terminal (else they are passed through as they are).
    pub console: bool,
}

/// The container's seccomp program, once the sandbox booted with one.
#[derive(Default)]
pub(crate) struct ContainerFilter(pub parking_lot::Mutex<Option<super::ContainerSeccomp>>);

/// Why a process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("platform: {0}")]
    Platform(#[from] PlatformError),
    #[error("exec: {name:?}: {}", exec_failure(name, *errno))]
    Exec { name: String, errno: Errno },
    #[error("no command given")]
    NoCommand,
    #[error("console: {0}")]
    Console(std::io::Error),
    #[error("the container's seccomp filter cannot be installed: {0:?}")]
    Seccomp(crate::kernel::seccomp::AttachError),
}

/// Why a program did not start, in the words runc uses (Docker maps them
/// to exit statuses 126 and 127).
fn exec_failure(name: &str, e: Errno) -> String {
    match e {
        Errno::ENOENT if !name.contains('/') => "executable file not found in $PATH".into(),
        Errno::ENOENT => "no such file or directory".into(),
        Errno::EACCES => "permission denied".into(),
        e => std::io::Error::from_raw_os_error(e.0).to_string(),
    }
}

/// A process whose program is loaded, not yet running.
pub(crate) struct Launched {
    pub pid: i32,
    task: Task,
    console: Option<Arc<Console>>,
}

/// Creates the process and loads its program. `stdio_names` are what
/// /proc/PID/fd shows for its standard streams.
pub(crate) fn load(
    kernel: &Arc<Kernel>,
    spec: ProcessSpec,
    stdio_names: &[String; 3],
) -> Result<Launched, LaunchError> {
    let argv0 = spec.argv.first().cloned().ok_or(LaunchError::NoCommand)?;
    let space = kernel.platform().new_address_space()?;
    let mm = Arc::new(MemoryManager::new(kernel.memory().clone(), space, MMAP_TOP));
    let root = kernel.mounts().root();
    let mut creds = Credentials::new(spec.uid, spec.gid);
    creds.groups = spec.groups;
    if let Some(mut caps) = spec.caps {
        // Only what is permitted and inheritable can be ambient.
        caps.ambient &= caps.permitted & caps.inheritable;
        creds.caps = caps;
    }
    let cwd = {
        let w = Walker { ns: kernel.mounts(), root: root.clone(), creds: &creds };
        w.resolve(&root, &spec.cwd, true).unwrap_or_else(|_| root.clone())
    };
    let fs = Arc::new(FsContext::new(kernel.mounts().clone(), root, cwd));
    let pid = kernel.alloc_tid();
    let thread = Arc::new(Thread::new_init(pid, creds, mm, fs));
    thread.attrs().lock().no_new_privs = spec.no_new_privs;
    if let Some(f) = kernel.ext::<ContainerFilter>().0.lock().clone() {
        // As runc's: in place before the process's first instruction.
        // Failing closed: no process runs without it.
        crate::kernel::seccomp::attach(&thread, f.program, f.log, None, false).map_err(LaunchError::Seccomp)?;
    }
    for (resource, limit) in spec.rlimits {
        // The runtime's limits are set as given; an unknown one is ignored.
        let _ = thread.group().set_rlimit(resource, limit, |_, _| Ok(()));
    }
    let nofile = kernel.nofile().clamp(thread.rlimit(RLIMIT_NOFILE));
    let _ = thread.group().set_rlimit(RLIMIT_NOFILE, nofile, |_, _| Ok(()));
    kernel.watch_rlimit_cpu(thread.rlimit(crate::kernel::rlimit_cpu::RLIMIT_CPU));
    kernel.add_thread(thread.clone());
    kernel.procs().add(thread.group().clone(), 0);
    let console = if spec.console {
        let [host, _, _] = spec.stdio;
        let (console, replica) = match Console::start(kernel, host) {
            Ok(c) => c,
            Err(e) => {
                kernel.remove_thread(&thread);
                kernel.procs().remove(pid);
                return Err(LaunchError::Console(e));
            }
        };
        install_terminal(kernel, &thread, replica);
        // The process leads its session, and this is its terminal.
        if let Err(e) = console.terminal().set_controlling(pid, pid, false) {
            log::warn!("console {}: {e}", console.terminal().name());
        }
        Some(console)
    } else {
        install_stdio(kernel, &thread, spec.stdio, stdio_names);
        None
    };

    let mut task = match Task::new(kernel.clone(), thread.clone()) {
        Ok(t) => t,
        Err(e) => {
            kernel.remove_thread(&thread);
            kernel.procs().remove(pid);
            return Err(e.into());
        }
    };
    let name = String::from_utf8_lossy(&argv0).into_owned();
    let loaded = find_program(&task, &argv0, &spec.env).and_then(|path| {
        let d = exec::resolve_program(&task, &path)?;
        let file = exec::open_exec_dentry(&task, d)?;
        exec::execve(&mut task, file, &path, spec.argv, spec.env)
    });
    match loaded {
        Ok(_) => Ok(Launched { pid, task, console }),
        Err(e) => {
            task.finish(ExitStatus::Code(127));
            // Nobody waits for a process that never ran.
            kernel.procs().remove(pid);
            Err(LaunchError::Exec { name, errno: e })
        }
    }
}

impl Launched {
    /// Runs the process until all its threads are gone; its status.
    pub(crate) fn run(mut self) -> Result<ExitStatus, PlatformError> {
        let status = self.task.run()?;
        self.task.finish(status);
        let kernel = self.task.kernel.clone();
        let status = kernel.procs().wait_exit(self.pid).unwrap_or(status);
        if let Some(c) = &self.console {
            c.flush();
        }
        Ok(status)
    }
}

/// Installs a console's terminal as descriptors 0, 1 and 2: one open
/// description, reached through /dev/pts/N so ttyname finds it.
fn install_terminal(kernel: &Kernel, thread: &Thread, replica: Arc<TtyFile>) {
    let d = crate::fs::devpts::replica_dentry(kernel, &replica.term);
    let f = FileDescription::new(d, replica, O_RDWR);
    let fds = thread.fds();
    for i in 0..3 {
        if let Err(e) = fds.install_at(i, f.clone(), false, u64::MAX) {
            log::warn!("cannot install stdio fd {i}: {e}");
        }
    }
}

fn install_stdio(kernel: &Kernel, thread: &Thread, stdio: [OwnedFd; 3], names: &[String; 3]) {
    let fds = thread.fds();
    for (i, fd) in stdio.into_iter().enumerate() {
        let node = Arc::new(HostStreamNode::new(fd));
        if let Some(n) = names[i].strip_prefix("/dev/pts/") {
            let as_node: Arc<dyn crate::vfs::Node> = node.clone();
            kernel.ext::<Devpts>().add_host(n.as_bytes(), &as_node);
        }
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
        match exec::resolve_program(task, &cand).and_then(|d| exec::open_exec_dentry(task, d)) {
            Ok(_) => return Ok(cand),
            Err(e) => last = e,
        }
    }
    Err(last)
}
