//! `husk create`: starts the sandbox of a bundle — its gofer and its
//! sentry, whose host pid is the container's — with the container process
//! loaded but waiting for `husk start`.

use super::{run_hooks, HookStage};
use crate::cli::{CreateArgs, GlobalArgs};
use crate::oci::bundle::{Bundle, Launch};
use crate::oci::cgroup::Cgroup;
use crate::oci::control;
use crate::oci::overrides;
use crate::oci::state::{rfc3339_now, write_atomically, Container, HostProcess, Record, Reservation, StateRoot};
use crate::sandbox::{husk_command, in_new_pid_namespace, seqpacket_pair, spawn, Lifetime, Session};
use anyhow::{bail, Context as _};
use std::ffi::{CString, OsString};
use std::io::Read as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Stdio};

/// How long the sentry may take to load the container process.
const READY_TIMEOUT_MS: i32 = 60_000;

/// A created sandbox: its state, and its processes for a caller that
/// waits for them (`husk run`).
pub struct Created {
    pub container: Container,
    pub bundle: Bundle,
    pub sandbox: Sandbox,
}

/// The host side of a sandbox this process started.
pub struct Sandbox {
    pub sentry: Child,
    /// The root filesystem's gofer first, then one per bind mount.
    pub gofers: Vec<Child>,
    pub cgroup: Option<Cgroup>,
}

impl Sandbox {
    /// Kills and reaps a sandbox whose creation failed.
    fn abort(mut self) {
        kill_and_reap(std::iter::once(&mut self.sentry).chain(self.gofers.iter_mut()));
        if let Some(c) = &self.cgroup {
            c.destroy();
        }
    }
}

fn kill_and_reap<'a>(children: impl IntoIterator<Item = &'a mut Child>) {
    for c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

pub fn run(g: &GlobalArgs, args: CreateArgs) -> anyhow::Result<i32> {
    create(g, &args)?;
    Ok(0)
}

pub fn create(g: &GlobalArgs, args: &CreateArgs) -> anyhow::Result<Created> {
    if args.preserve_fds != 0 {
        bail!("--preserve-fds is not supported by husk");
    }
    let bundle = Bundle::load(&args.bundle)?;
    let launch = bundle.launch()?;
    let annotations = bundle.spec.annotations().clone().unwrap_or_default();
    let mut g = overrides::apply(g, &annotations)?;
    crate::secrets::apply_annotations(&mut g, &annotations)?;
    let g = &g;
    let console = match (launch.terminal, &args.console_socket) {
        (Some(size), Some(socket)) => Some(open_console(socket, size)?.0),
        (Some(_), None) => bail!("process.terminal needs --console-socket"),
        (None, Some(_)) => {
            log::warn!("--console-socket ignored: the process has no terminal");
            None
        }
        (None, None) => None,
    };
    let reservation = StateRoot::new(&g.root).reserve(&args.id)?;
    let sandbox =
        join_cgroup(g, &bundle, &args.id).and_then(|cgroup| start_sandbox(g, &launch, &reservation, console, cgroup));
    let sandbox = match sandbox {
        Ok(s) => s,
        Err(e) => {
            reservation.abandon();
            return Err(e);
        }
    };
    let sentry = match host_process(&sandbox.sentry) {
        Ok(p) => p,
        Err(e) => {
            sandbox.abort();
            reservation.abandon();
            return Err(e);
        }
    };
    let record = Record {
        id: args.id.clone(),
        bundle: bundle.dir.clone(),
        rootfs: launch.rootfs.clone(),
        sentry,
        gofers: sandbox.gofers.iter().filter_map(|c| HostProcess::of(i32::try_from(c.id()).ok()?)).collect(),
        created: rfc3339_now(),
        started: false,
        annotations: bundle.spec.annotations().clone().unwrap_or_default().into_iter().collect(),
        cgroup: sandbox.cgroup.as_ref().map(|c| c.path().to_path_buf()),
        cgroup_owned: sandbox.cgroup.as_ref().is_some_and(Cgroup::owned),
        audit_log: crate::audit_cmd::container_log_path(g, &args.id),
        network: Some(g.network.as_str().into()),
    };
    let container = match reservation.commit(record) {
        Ok(c) => c,
        Err(e) => {
            sandbox.abort();
            return Err(e.into());
        }
    };
    let finish = || -> anyhow::Result<()> {
        if let Some(p) = &args.pid_file {
            let pid = container.record.sentry.pid.to_string();
            write_atomically(&std::path::absolute(p)?, pid.as_bytes()).context("writing the pid file")?;
        }
        run_hooks(&container, &bundle, HookStage::Created)?;
        Ok(())
    };
    if let Err(e) = finish() {
        sandbox.abort();
        if let Err(e) = container.remove() {
            log::warn!("{e}");
        }
        return Err(e);
    }
    Ok(Created { container, bundle, sandbox })
}

/// Creates the container's cgroup with the spec's limits; the gofers and
/// the sentry join it as they start. Without limits to enforce, a host
/// that denies cgroups only earns a warning.
fn join_cgroup(g: &GlobalArgs, bundle: &Bundle, id: &str) -> anyhow::Result<Option<Cgroup>> {
    let linux = bundle.spec.linux().as_ref();
    let mut cgroup = Cgroup::for_container(linux.and_then(|l| l.cgroups_path().as_deref()), id, g.systemd_cgroup)?;
    let resources = linux.and_then(|l| l.resources().as_ref());
    let joined = cgroup.create().and_then(|()| resources.map_or(Ok(()), |r| cgroup.apply(r)));
    match joined {
        Ok(()) => Ok(Some(cgroup)),
        Err(e) if resources.is_some_and(limits_anything) => {
            cgroup.destroy();
            Err(e).context("applying linux.resources")
        }
        Err(e) => {
            log::warn!("running without a cgroup: {e}");
            cgroup.destroy();
            Ok(None)
        }
    }
}

fn limits_anything(r: &oci_spec::runtime::LinuxResources) -> bool {
    r.memory().as_ref().is_some_and(|m| m.limit().is_some_and(|l| l > 0))
        || r.cpu().as_ref().is_some_and(|c| c.quota().is_some_and(|q| q > 0) || c.shares().is_some())
        || r.pids().as_ref().is_some_and(|p| p.limit() > 0)
}

fn host_process(child: &Child) -> anyhow::Result<HostProcess> {
    let pid = i32::try_from(child.id()).context("sentry pid")?;
    HostProcess::of(pid).context("the sentry ended during start-up")
}

/// Starts a gofer serving `dir`; returns it and the sentry's end of its
/// connection.
fn start_gofer(
    g: &GlobalArgs,
    dir: &std::path::Path,
    read_only: bool,
    join: &[CString],
) -> anyhow::Result<(Child, OwnedFd)> {
    let (sentry_end, gofer_end) = seqpacket_pair()?;
    let mut args: Vec<OsString> = vec!["gofer".into(), "--rootfs".into(), dir.as_os_str().to_owned()];
    args.extend(["--sock-fd".into(), gofer_end.as_raw_fd().to_string().into()]);
    if read_only {
        args.push("--read-only".into());
    }
    let mut cmd = husk_command(g, args)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let gofer = spawn(&mut cmd, &[gofer_end.as_raw_fd()], Session::New, join, Lifetime::Own)?;
    Ok((gofer, sentry_end))
}

/// Spawns the gofers and the sentry and waits until the sentry has loaded
/// the container process (or failed to).
fn start_sandbox(
    g: &GlobalArgs,
    launch: &Launch,
    res: &Reservation,
    console: Option<OwnedFd>,
    cgroup: Option<Cgroup>,
) -> anyhow::Result<Sandbox> {
    let join = cgroup.as_ref().map(Cgroup::procs_files).unwrap_or_default();
    let mut gofers = Vec::new();
    let mut ends = Vec::new();
    let started = std::iter::once((launch.rootfs.as_path(), true))
        .chain(launch.binds.iter().map(|b| (b.source.as_path(), b.read_only)))
        .try_for_each(|(dir, ro)| {
            let (gofer, end) = start_gofer(g, dir, ro, &join)?;
            gofers.push(gofer);
            ends.push(end);
            anyhow::Ok(())
        });
    let sentry = started.and_then(|()| start_sentry(g, launch, res, console, &ends, &join));
    drop(ends);
    match sentry {
        Ok((sentry, ready)) => {
            let sandbox = Sandbox { sentry, gofers, cgroup };
            match wait_ready(ready) {
                Ok(()) => Ok(sandbox),
                Err(e) => {
                    sandbox.abort();
                    Err(e)
                }
            }
        }
        Err(e) => {
            kill_and_reap(gofers.iter_mut());
            if let Some(c) = &cgroup {
                c.destroy();
            }
            Err(e)
        }
    }
}

/// Spawns the sentry with the gofer connections `ends` (root first);
/// returns it and the pipe it reports readiness on.
fn start_sentry(
    g: &GlobalArgs,
    launch: &Launch,
    res: &Reservation,
    console: Option<OwnedFd>,
    ends: &[OwnedFd],
    join: &[CString],
) -> anyhow::Result<(Child, OwnedFd)> {
    let listener = OwnedFd::from(control::listen(&res.control_path()).context("binding the control socket")?);
    let (ready_r, ready_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("pipe")?;
    let env = env_file(&launch.env)?;
    let secrets = crate::secrets::boot_fd(&crate::secrets::specs(g)?)?;
    let netns = match (&launch.netns, launch.fresh_netns) {
        (Some(path), _) => Some(open_netns(path)?),
        (None, true) => Some(fresh_netns()?),
        (None, false) => None,
    };
    let (root_end, bind_ends) = ends.split_first().context("no root gofer")?;
    // Every descriptor the sentry inherits, with the flag that names it.
    let mut fds: Vec<(&str, &OwnedFd)> =
        vec![("--control-fd", &listener), ("--ready-fd", &ready_w), ("--env-fd", &env), ("--gofer-fd", root_end)];
    fds.extend(netns.iter().map(|fd| ("--netns-fd", fd)));
    fds.extend(secrets.iter().map(|fd| ("--secrets-fd", fd)));
    let mut boot_args: Vec<OsString> = vec!["boot".into()];
    for (flag, fd) in &fds {
        boot_args.extend([(*flag).into(), fd.as_raw_fd().to_string().into()]);
    }
    for (bind, end) in launch.binds.iter().zip(bind_ends) {
        let flag = if bind.file { "--bind-file" } else { "--bind" };
        boot_args.extend([flag.into(), format!("{}={}", end.as_raw_fd(), bind.destination).into()]);
    }
    for (path, mode) in &launch.tmpfs {
        boot_args.extend(["--tmpfs".into(), format!("{path}={mode:o}").into()]);
    }
    for path in &launch.masked_paths {
        boot_args.extend(["--masked-path".into(), path.into()]);
    }
    for path in &launch.readonly_paths {
        boot_args.extend(["--readonly-path".into(), path.into()]);
    }
    if launch.readonly {
        boot_args.push("--read-only-root".into());
    }
    boot_args.extend(["--cwd".into(), launch.cwd.clone().into()]);
    let memory_mb = crate::limits::lower(Some(launch.memory_mb), g.memory_mb).unwrap_or(launch.memory_mb);
    boot_args.extend(crate::limits::boot_args(g, memory_mb, crate::limits::lower(launch.pids_max, g.pids_limit)));
    boot_args.extend(["--uid".into(), launch.uid.to_string().into(), "--gid".into(), launch.gid.to_string().into()]);
    for g in &launch.groups {
        boot_args.extend(["--group".into(), g.to_string().into()]);
    }
    for (res, soft, hard) in &launch.rlimits {
        boot_args.extend(["--rlimit".into(), format!("{res}={soft}:{hard}").into()]);
    }
    if let Some(c) = &launch.caps {
        boot_args.extend(["--caps".into(), c.encode().into()]);
    }
    if launch.no_new_privs {
        boot_args.push("--no-new-privs".into());
    }
    if let Some(filter) = &launch.seccomp {
        boot_args.extend(["--seccomp-filter".into(), filter.encode().into()]);
        if filter.log {
            boot_args.push("--seccomp-log".into());
        }
    }
    if let Some((quota, period)) = launch.cpu_max {
        boot_args.extend(["--cpu-max".into(), format!("{quota}:{period}").into()]);
    }
    if let Some(n) = launch.memory_max {
        boot_args.extend(["--memory-max".into(), n.to_string().into()]);
    }
    for (key, value) in &launch.sysctls {
        boot_args.extend(["--sysctl".into(), format!("{key}={value}").into()]);
    }
    if let Some(h) = &launch.hostname {
        boot_args.extend(["--hostname".into(), h.into()]);
    }
    let audit = match &g.audit_log {
        Some(spec) => crate::audit_cmd::open(spec)?,
        None => crate::audit_cmd::open_container_log(&g.root, &res.id())?,
    }
    .with_syslog(g)?;
    let mounts: Vec<_> = launch.binds.iter().map(|b| (b.source.clone(), b.destination.clone())).collect();
    boot_args.extend(audit.boot_args(g, &res.id(), &launch.rootfs, &mounts));
    boot_args.push("--".into());
    boot_args.extend(launch.args.iter().map(OsString::from));
    let mut boot = husk_command(g, boot_args)?;
    boot.env_clear();
    let session = match console {
        Some(tty) => {
            boot.stdin(tty.try_clone()?).stdout(tty.try_clone()?).stderr(tty);
            Session::NewWithTerminal
        }
        None => Session::New,
    };
    let mut keep: Vec<i32> = fds.iter().map(|(_, fd)| fd.as_raw_fd()).collect();
    keep.extend(bind_ends.iter().map(AsRawFd::as_raw_fd));
    keep.extend(audit.raw_fds());
    let sentry = in_new_pid_namespace(|| spawn(&mut boot, &keep, session, join, Lifetime::Own))?;
    Ok((sentry, ready_r))
}

/// Opens a network namespace named by the spec, refusing anything else
/// (a FIFO would block us, a device would be opened as root).
fn open_netns(path: &std::path::Path) -> anyhow::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    const NSFS_MAGIC: libc::c_long = 0x6e73_6673;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("network namespace {}", path.display()))?;
    let fs = nix::sys::statfs::fstatfs(&f).with_context(|| format!("network namespace {}", path.display()))?;
    if fs.filesystem_type().0 != NSFS_MAGIC {
        bail!("network namespace {}: not a namespace file", path.display());
    }
    Ok(OwnedFd::from(f))
}

/// A new network namespace, for a spec that asks for one without naming
/// it: the sentry joins it, so that it is the namespace a container
/// engine's hooks wire (they find it through the sentry's pid) and the one
/// the egress gateway's sockets leave from. It is made on a thread of its
/// own, which alone enters it.
fn fresh_netns() -> anyhow::Result<OwnedFd> {
    std::thread::spawn(|| -> anyhow::Result<OwnedFd> {
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).context("creating a network namespace")?;
        let f = std::fs::File::open("/proc/thread-self/ns/net").context("opening the new network namespace")?;
        Ok(OwnedFd::from(f))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("creating a network namespace: the thread failed"))?
}

/// The guest's environment in a memory file for `--env-fd`, read from its
/// start.
pub fn env_file<E: AsRef<[u8]>>(env: &[E]) -> anyhow::Result<OwnedFd> {
    use std::io::{Seek, Write};
    let fd = nix::sys::memfd::memfd_create(c"husk-env", nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC)
        .context("memfd_create")?;
    let mut f = std::fs::File::from(fd);
    for e in env {
        f.write_all(e.as_ref())?;
        f.write_all(&[0])?;
    }
    f.rewind()?;
    Ok(OwnedFd::from(f))
}

/// Opens a pseudo-terminal for the container's console, hands its master
/// to whoever listens on `socket` (with the terminal's name, as runc
/// does) and returns the slave and its name.
pub fn open_console(socket: &std::path::Path, (rows, cols): (u16, u16)) -> anyhow::Result<(OwnedFd, OsString)> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let size = nix::pty::Winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    let pty = nix::pty::openpty(Some(&size), None).context("opening a pseudo-terminal")?;
    for fd in [&pty.master, &pty.slave] {
        // Only the sentry (as its stdio) may hold the console, not the
        // gofers or other helpers started meanwhile.
        nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
            .context("making the console close-on-exec")?;
    }
    let name = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).context("naming the terminal")?;
    let conn = control::via_dir(socket, |p| std::os::unix::net::UnixStream::connect(p))
        .with_context(|| format!("connecting to the console socket {}", socket.display()))?;
    let fds = [pty.master.as_raw_fd()];
    let name = name.into_os_string();
    let iov = [std::io::IoSlice::new(std::os::unix::ffi::OsStrExt::as_bytes(name.as_os_str()))];
    sendmsg::<()>(conn.as_raw_fd(), &iov, &[ControlMessage::ScmRights(&fds)], MsgFlags::empty(), None)
        .context("sending the terminal to the console socket")?;
    Ok((pty.slave, name))
}

/// Reads the sentry's report: `ready`, or `error MESSAGE`.
fn wait_ready(ready: OwnedFd) -> anyhow::Result<()> {
    let mut pfd = libc::pollfd { fd: ready.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: poll reads and writes one pollfd we own.
    if unsafe { libc::poll(&mut pfd, 1, READY_TIMEOUT_MS) } <= 0 {
        bail!("the sandbox did not start within {} s", READY_TIMEOUT_MS / 1000);
    }
    let mut text = String::new();
    std::fs::File::from(ready).read_to_string(&mut text).context("reading the sandbox's report")?;
    match text.trim_end() {
        "ready" => Ok(()),
        "" => bail!("the sandbox exited during start-up"),
        other => bail!("{}", other.strip_prefix("error ").unwrap_or(other)),
    }
}
