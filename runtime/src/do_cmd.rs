//! `husk do`: run one command in a fresh sandbox whose root is the host's
//! filesystem (or --rootfs), read-only under an in-memory overlay.

use crate::cli::{DoArgs, GlobalArgs};
use anyhow::{bail, Context as _};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command};

/// A connected pair of SOCK_SEQPACKET sockets, close-on-exec.
fn seqpacket_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    nix::sys::socket::socketpair(
        nix::sys::socket::AddressFamily::Unix,
        nix::sys::socket::SockType::SeqPacket,
        None,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
    )
    .context("socketpair for the gofer connection")
}

/// Spawns `husk SUBCOMMAND …` (this same binary) with `keep` inherited;
/// with `own_session` it leaves the terminal's process group (so Ctrl-C
/// does not reach it).
fn spawn_self(
    args: &[std::ffi::OsString],
    keep: &OwnedFd,
    stdio_null: bool,
    own_session: bool,
) -> anyhow::Result<Child> {
    let exe = std::env::current_exe().context("locating the husk binary")?;
    let mut cmd = Command::new(exe);
    cmd.args(args);
    if stdio_null {
        cmd.stdin(std::process::Stdio::null());
    }
    let fd = keep.as_raw_fd();
    let hook = move || {
        // SAFETY: fcntl on a descriptor the parent keeps open; it is
        // async-signal-safe, as code between fork and exec must be.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: setsid is async-signal-safe and takes no arguments.
        if own_session && unsafe { libc::setsid() } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the hook runs between fork and exec and only calls fcntl.
    unsafe { cmd.pre_exec(hook) };
    cmd.spawn().context("starting a husk process")
}

fn global_flags(g: &GlobalArgs) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = Vec::new();
    if let Some(p) = &g.debug_log {
        v.push("--debug-log".into());
        v.push(p.into());
    }
    if g.debug {
        v.push("--debug".into());
    }
    if g.strace {
        v.push("--strace".into());
    }
    v
}

/// Signals for the sandbox: a terminal's Ctrl-C and Ctrl-\\ reach the
/// sentry (in our process group) directly, so we only ignore them; others
/// (a supervisor's SIGTERM) are passed on to the sentry, which hands them
/// to the guest.
fn forward_signals(sentry: u32) -> anyhow::Result<()> {
    use nix::sys::signal::{signal, SigHandler, SigSet, Signal};
    for s in [Signal::SIGINT, Signal::SIGQUIT] {
        // SAFETY: ignoring a signal installs no handler code.
        unsafe { signal(s, SigHandler::SigIgn) }.context("ignoring terminal signals")?;
    }
    let mut set = SigSet::empty();
    for s in [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGUSR1, Signal::SIGUSR2] {
        set.add(s);
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

/// The exit status `husk do` reports for the sentry's.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        _ => 125,
    }
}

/// Reaps every remaining descendant: stub processes the sentry leaves
/// behind when it exits are reparented to us (we are a subreaper).
fn reap_all() {
    while let Ok(_) | Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(None, None) {}
}

pub fn run(g: &GlobalArgs, args: DoArgs) -> anyhow::Result<i32> {
    // Orphans of the sandbox (stub processes of the sentry) come to us to
    // be reaped instead of lingering as zombies.
    nix::sys::prctl::set_child_subreaper(true).context("PR_SET_CHILD_SUBREAPER")?;
    let rootfs = args.rootfs.clone().unwrap_or_else(|| "/".into());
    if !rootfs.is_dir() {
        bail!("root filesystem {} is not a directory", rootfs.display());
    }
    let rootfs = rootfs.canonicalize().with_context(|| format!("{}", rootfs.display()))?;
    let (sentry_end, gofer_end) = seqpacket_pair()?;

    let mut gofer_args = global_flags(g);
    gofer_args.extend(["gofer".into(), "--rootfs".into(), rootfs.clone().into_os_string()]);
    gofer_args.extend(["--sock-fd".into(), gofer_end.as_raw_fd().to_string().into(), "--read-only".into()]);
    let mut gofer = spawn_self(&gofer_args, &gofer_end, true, true)?;
    drop(gofer_end);

    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let guest_cwd = match cwd.strip_prefix(&rootfs) {
        Ok(rel) => std::path::Path::new("/").join(rel),
        Err(_) => "/".into(),
    };
    let mut boot_args = global_flags(g);
    boot_args.extend(["boot".into(), "--gofer-fd".into(), sentry_end.as_raw_fd().to_string().into()]);
    boot_args.extend(["--cwd".into(), guest_cwd.into_os_string()]);
    boot_args.extend(["--memory-mb".into(), args.memory_mb.to_string().into(), "--".into()]);
    boot_args.extend(args.command);
    let mut sentry = spawn_self(&boot_args, &sentry_end, false, false)?;
    drop(sentry_end);
    forward_signals(sentry.id())?;

    let status = sentry.wait().context("waiting for the sentry")?;
    let gofer_status = gofer.wait().context("waiting for the gofer")?;
    if !gofer_status.success() {
        log::warn!("the gofer exited with {gofer_status}");
    }
    reap_all();
    Ok(exit_code(status))
}
