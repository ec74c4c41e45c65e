//! Starting the processes of a sandbox: the gofer (`husk gofer`) and the
//! sentry (`husk boot`), both this same binary, connected by a socketpair.

use crate::cli::GlobalArgs;
use anyhow::Context as _;
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A connected pair of SOCK_SEQPACKET sockets, close-on-exec.
pub fn seqpacket_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::SeqPacket,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    )
    .context("socketpair for the gofer connection")
}

/// `husk ARGS…`: this same binary, with the global flags that matter to
/// its helpers (diagnostics) passed on.
pub fn husk_command(g: &GlobalArgs, args: impl IntoIterator<Item = OsString>) -> anyhow::Result<Command> {
    let exe = std::env::current_exe().context("locating the husk binary")?;
    let mut cmd = Command::new(exe);
    if let Some(p) = &g.debug_log {
        cmd.arg("--debug-log").arg(p);
    }
    if let Some(p) = &g.log {
        cmd.arg("--log").arg(p).arg("--log-format").arg(g.log_format.as_str());
    }
    if g.debug {
        cmd.arg("--debug");
    }
    if g.strace {
        cmd.arg("--strace");
    }
    cmd.arg("--network").arg(g.network.as_str());
    for rule in &g.egress_allow {
        cmd.arg("--egress-allow").arg(rule);
    }
    for rule in &g.egress_deny {
        cmd.arg("--egress-deny").arg(rule);
    }
    for upstream in &g.dns_upstream {
        cmd.arg("--dns-upstream").arg(upstream);
    }
    if let Some(p) = &g.egress_policy {
        // The helper may start elsewhere (a container's sentry, in the
        // bundle): the file by its full path.
        let p = std::path::absolute(p).with_context(|| format!("--egress-policy {}", p.display()))?;
        cmd.arg("--egress-policy").arg(p);
    }
    if let Some(n) = g.egress_max_conns {
        cmd.arg("--egress-max-conns").arg(n.to_string());
    }
    if let Some(n) = g.egress_rate {
        cmd.arg("--egress-rate").arg(n.to_string());
    }
    for host in &g.package_registry_allow {
        cmd.arg("--package-registry-allow").arg(host);
    }
    if let Some(n) = g.disk_limit {
        cmd.arg("--disk-limit").arg(n.to_string());
    }
    cmd.args(args);
    Ok(cmd)
}

/// The session a spawned process runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Session {
    /// The caller's (a terminal's Ctrl-C reaches both).
    Inherit,
    /// A new one, without a terminal.
    New,
    /// A new one whose controlling terminal is its stdin (a container's
    /// console): the terminal's Ctrl-C and window changes reach it.
    NewWithTerminal,
}

/// How long a spawned process may outlive us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifetime {
    /// It is killed when we die, however we die (`husk do`'s sentry and
    /// gofer: nothing of a sandbox outlives its owner).
    Ours,
    /// It runs on after we exit (a container's, which `create` leaves).
    Own,
}

/// Spawns `cmd` with the descriptors in `keep` inherited, in `session`,
/// moved into the cgroup whose `cgroup.procs` files are `join` before it
/// runs (so everything it starts is in the cgroup too).
pub fn spawn(
    cmd: &mut Command,
    keep: &[RawFd],
    session: Session,
    join: &[CString],
    lifetime: Lifetime,
) -> anyhow::Result<Child> {
    let keep = keep.to_vec();
    let join = join.to_vec();
    // We may die before the child arms its death signal; then the write
    // end of this pipe, which only we hold (the child closes its copy),
    // is gone and the child sees the pipe hang up. (getppid cannot tell:
    // in a new pid namespace it is always 0.)
    let alive = match lifetime {
        Lifetime::Ours => Some(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("pipe2")?),
        Lifetime::Own => None,
    };
    let alive_fds = alive.as_ref().map(|(r, w)| (r.as_raw_fd(), w.as_raw_fd()));
    let hook = move || {
        if let Some((r, w)) = alive_fds {
            // SAFETY: prctl with integer arguments is async-signal-safe.
            if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: closing our copy of the pipe's write end.
            unsafe { libc::close(w) };
            let mut pfd = libc::pollfd { fd: r, events: libc::POLLIN, revents: 0 };
            // SAFETY: poll reads and writes one pollfd we own; no wait.
            if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        for file in &join {
            // SAFETY: open/write/close with a path prepared before the
            // fork; all three are async-signal-safe. "0" names the writer.
            let fd = unsafe { libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
            // SAFETY: as above; `fd` is checked before the write.
            if fd < 0 || unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: closing the descriptor just opened.
            unsafe { libc::close(fd) };
        }
        for &fd in &keep {
            // SAFETY: fcntl on a descriptor the parent keeps open; it is
            // async-signal-safe, as code between fork and exec must be.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        // SAFETY: setsid is async-signal-safe and takes no arguments.
        if session != Session::Inherit && unsafe { libc::setsid() } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: TIOCSCTTY takes an integer argument (0: do not steal).
        if session == Session::NewWithTerminal && unsafe { libc::ioctl(0, libc::TIOCSCTTY, 0) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the hook runs between fork and exec and only makes
    // async-signal-safe calls (open, write, close, fcntl, setsid, ioctl).
    unsafe { cmd.pre_exec(hook) };
    let child = cmd.spawn().context("starting a husk process");
    drop(alive);
    child
}

/// The status a parent reports for a sentry's: its code, or 128+N when a
/// signal ended it.
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 125,
    }
}

/// A process we may have to kill, by a descriptor that cannot name
/// another process once it is gone.
struct PidFd(Option<OwnedFd>);

impl PidFd {
    fn open(pid: u32) -> PidFd {
        // SAFETY: pidfd_open takes integers and returns a new descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        // SAFETY: a descriptor pidfd_open just created is ours alone.
        PidFd(i32::try_from(fd).ok().filter(|&fd| fd >= 0).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn signal(&self, sig: i32) {
        if let Some(fd) = &self.0 {
            // SAFETY: pidfd_send_signal with a null siginfo takes integers.
            unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), sig, 0usize, 0u32) };
        }
    }

    /// Passes `sig` on to a sentry: queued as the sentry's
    /// `host_signals::FORWARD_SIGNAL` with `sig` as its value.
    fn forward(&self, sig: i32) {
        let Some(fd) = &self.0 else { return };
        let fwd = husk_sentry::api::boot::host_signals::FORWARD_SIGNAL;
        // struct siginfo for SI_QUEUE: signo, errno, code, then (at 16)
        // pid, uid and the value.
        let mut info = [0u8; std::mem::size_of::<libc::siginfo_t>()];
        info[0..4].copy_from_slice(&fwd.to_ne_bytes());
        info[8..12].copy_from_slice(&libc::SI_QUEUE.to_ne_bytes());
        info[16..20].copy_from_slice(&std::process::id().to_ne_bytes());
        info[20..24].copy_from_slice(&nix::unistd::getuid().as_raw().to_ne_bytes());
        info[24..28].copy_from_slice(&sig.to_ne_bytes());
        // SAFETY: the kernel reads one siginfo from `info`, which is that size.
        unsafe { libc::syscall(libc::SYS_pidfd_send_signal, fd.as_raw_fd(), fwd, info.as_ptr(), 0u32) };
    }
}

/// `si_code` of a signal the kernel raised (a terminal's Ctrl-C).
const SI_KERNEL: i32 = 0x80;

/// Passes the signals a supervisor sends us (SIGTERM, SIGHUP, SIGUSR1/2,
/// and SIGINT/SIGQUIT sent with kill(2)) on to the sentry, which hands
/// them to the guest. A terminal's Ctrl-C and Ctrl-\\ reach the sentry
/// directly when it shares our process group; otherwise
/// (`forward_terminal`) they are passed on too. Each reaches the guest once.
///
/// Whatever state the sandbox is in, it ends when asked: a second SIGTERM,
/// or `grace` after the first without the sandbox gone, kills the sentry
/// (its stubs die with it) and every process in `others` (the gofers), and
/// says so on stderr. The flag returned is set when the grace period ran
/// out (the sandbox's end is then a timeout).
pub fn forward_signals(
    sentry: u32,
    others: &[u32],
    forward_terminal: bool,
    grace: Duration,
) -> anyhow::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGUSR1, Signal::SIGUSR2, Signal::SIGINT, Signal::SIGQUIT] {
        set.add(s);
    }
    set.thread_block().context("blocking forwarded signals")?;
    let target = PidFd::open(sentry);
    let others: Vec<PidFd> = others.iter().map(|&p| PidFd::open(p)).collect();
    let timed_out = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let timeout_seen = timed_out.clone();
    std::thread::Builder::new()
        .name("forward-signals".into())
        .spawn(move || {
            let mut deadline: Option<Instant> = None;
            let kill_all = |why: &str| {
                eprintln!("husk: {why}: killing the sandbox");
                target.signal(libc::SIGKILL);
                for p in &others {
                    p.signal(libc::SIGKILL);
                }
            };
            loop {
                let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                match wait_signal(&set, timeout) {
                    Waited::Signal(libc::SIGTERM, _) if deadline.is_some() => {
                        kill_all("a second SIGTERM");
                        return;
                    }
                    Waited::Signal(sig, code) => {
                        let terminal = matches!(sig, libc::SIGINT | libc::SIGQUIT) && code == SI_KERNEL;
                        if terminal && !forward_terminal {
                            // The terminal sent it to the sentry as well.
                            continue;
                        }
                        if sig == libc::SIGTERM {
                            deadline = Instant::now().checked_add(grace);
                        }
                        target.forward(sig);
                    }
                    Waited::TimedOut => {
                        timeout_seen.store(true, std::sync::atomic::Ordering::SeqCst);
                        kill_all(&format!("the sandbox did not exit within {} s of SIGTERM", grace.as_secs_f64()));
                        return;
                    }
                    Waited::Failed => return,
                }
            }
        })
        .context("starting the signal forwarder")?;
    Ok(timed_out)
}

enum Waited {
    Signal(i32, i32),
    TimedOut,
    Failed,
}

/// Waits for a signal of `set` (blocked in every thread) for at most
/// `timeout` (None: forever); returns it with its `si_code`.
fn wait_signal(set: &nix::sys::signal::SigSet, timeout: Option<Duration>) -> Waited {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(t.subsec_nanos()),
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), std::ptr::from_ref);
    // SAFETY: the set, siginfo and timespec pointers are valid for the call.
    let r = unsafe { libc::sigtimedwait(set.as_ref(), &mut info, ts_ptr) };
    if r >= 0 {
        return Waited::Signal(r, info.si_code);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Waited::TimedOut,
        Some(libc::EINTR) => wait_signal(set, timeout),
        _ => Waited::Failed,
    }
}

/// Dies of `sig` so the parent sees the guest's fate.
pub fn die_of(sig: i32) -> ! {
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: setrlimit reads one rlimit struct.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) };
    // SAFETY: restoring the default disposition has no memory effects.
    unsafe { libc::signal(sig, libc::SIG_DFL) };
    // SAFETY: raise takes an integer; the process is about to end anyway.
    unsafe { libc::raise(sig) };
    std::process::exit(128 + sig)
}

/// Takes ownership of an inherited descriptor named on the command line.
pub fn inherited_fd(fd: i32) -> anyhow::Result<OwnedFd> {
    // SAFETY: F_GETFD only inspects the descriptor.
    if fd < 0 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        anyhow::bail!("descriptor {fd} is not open");
    }
    // SAFETY: the runtime handed this descriptor to us for our exclusive use.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Runs `start`, which starts one process, so that the process is the
/// first of a new pid namespace (the spec's pid namespace): the sentry
/// then sees no host process, and when it ends the kernel ends its stubs
/// with it. Processes we start afterwards (hooks) stay in ours.
pub fn in_new_pid_namespace(start: impl FnOnce() -> anyhow::Result<Child>) -> anyhow::Result<Child> {
    use nix::sched::{setns, unshare, CloneFlags};
    let own = std::fs::File::open("/proc/self/ns/pid").context("opening our pid namespace")?;
    unshare(CloneFlags::CLONE_NEWPID).context("creating a pid namespace")?;
    let started = start();
    let back = setns(&own, CloneFlags::CLONE_NEWPID).context("returning to our pid namespace");
    match (started, back) {
        (Ok(mut child), Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
        (started, _) => started,
    }
}
