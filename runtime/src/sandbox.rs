//! Starting the processes of a sandbox: the gofer (`husk gofer`) and the
//! sentry (`husk boot`), both this same binary, connected by a socketpair.

use crate::cli::GlobalArgs;
use anyhow::Context as _;
use std::ffi::{CString, OsString};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};

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

/// Spawns `cmd` with the descriptors in `keep` inherited, in `session`,
/// moved into the cgroup whose `cgroup.procs` files are `join` before it
/// runs (so everything it starts is in the cgroup too).
pub fn spawn(cmd: &mut Command, keep: &[RawFd], session: Session, join: &[CString]) -> anyhow::Result<Child> {
    let keep = keep.to_vec();
    let join = join.to_vec();
    let hook = move || {
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
    cmd.spawn().context("starting a husk process")
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

/// Passes the signals a supervisor sends us (SIGTERM, SIGHUP, SIGUSR1/2)
/// on to the sentry, which hands them to the guest. A terminal's Ctrl-C
/// and Ctrl-\\ reach the sentry directly when it shares our process group;
/// otherwise (`forward_terminal`) they are passed on too.
pub fn forward_signals(sentry: u32, forward_terminal: bool) -> anyhow::Result<()> {
    use nix::sys::signal::{signal, SigHandler, SigSet, Signal};
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGUSR1, Signal::SIGUSR2] {
        set.add(s);
    }
    for s in [Signal::SIGINT, Signal::SIGQUIT] {
        if forward_terminal {
            set.add(s);
        } else {
            // SAFETY: ignoring a signal installs no handler code.
            unsafe { signal(s, SigHandler::SigIgn) }.context("ignoring terminal signals")?;
        }
    }
    set.thread_block().context("blocking forwarded signals")?;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(sentry).context("sentry pid")?);
    std::thread::Builder::new()
        .name("forward-signals".into())
        .spawn(move || {
            while let Ok(sig) = set.wait() {
                let _ = nix::sys::signal::kill(pid, sig);
            }
        })
        .context("starting the signal forwarder")?;
    Ok(())
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
