//! `husk do`: run one command in a fresh sandbox whose root is the host's
//! filesystem (or --rootfs), read-only under an in-memory overlay, with
//! the host directories of its volumes, in a clean environment.

use crate::cli::{DoArgs, GlobalArgs};
use crate::guest_env;
use crate::sandbox::{
    exit_code, forward_signals, husk_command, in_new_pid_namespace, seqpacket_pair, spawn, Lifetime, Session,
};
use crate::volume;
use anyhow::{bail, Context as _};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Child;

/// Reaps every remaining descendant that was reparented to us (we are a
/// subreaper).
fn reap_all() {
    while let Ok(_) | Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(None, None) {}
}

/// `husk do`'s disk limit when none is given: 4 GiB, or the memory limit
/// if that is smaller.
const DEFAULT_DISK_LIMIT: u64 = 4 << 30;

pub fn run(g: &GlobalArgs, args: DoArgs) -> anyhow::Result<i32> {
    let memory_mb = crate::limits::do_memory_mb(g);
    let memory = memory_mb.saturating_mul(1 << 20);
    let g = &GlobalArgs { disk_limit: g.disk_limit.or(Some(DEFAULT_DISK_LIMIT.min(memory))), ..g.clone() };
    // Orphans of the sandbox (stub processes of the sentry) come to us to
    // be reaped instead of lingering as zombies.
    nix::sys::prctl::set_child_subreaper(true).context("PR_SET_CHILD_SUBREAPER")?;
    let rootfs = args.rootfs.clone().unwrap_or_else(|| "/".into());
    if !rootfs.is_dir() {
        bail!("root filesystem {} is not a directory", rootfs.display());
    }
    let rootfs = rootfs.canonicalize().with_context(|| format!("{}", rootfs.display()))?;
    let volumes = args.volumes.iter().map(|v| volume::parse(v)).collect::<anyhow::Result<Vec<_>>>()?;
    crate::egress::publish(g, &args.publish)?;
    let guest_cwd = match &args.cwd {
        Some(dir) if !dir.is_absolute() => bail!("--cwd {}: not an absolute path", dir.display()),
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .ok()
            .and_then(|cwd| volume::guest_path(&cwd, &rootfs, &volumes))
            .unwrap_or_else(|| "/".into()),
    };
    let env = guest_env::build(&guest_env::Request {
        caller: &guest_env::caller_env(),
        passwd: guest_env::read_passwd(&rootfs).as_deref(),
        uid: nix::unistd::getuid().as_raw(),
        hostname: &nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default(),
        keep: &args.env_keep,
        set: &args.env,
    })?;
    // A secret's source variable is no guest's, not even under --env-keep.
    let sources = crate::secrets::env_sources(g);
    let entries: Vec<Vec<u8>> = env
        .entries
        .iter()
        .filter(|e| !sources.iter().any(|v| e.strip_prefix(v.as_bytes()).is_some_and(|rest| rest.starts_with(b"="))))
        .cloned()
        .collect();
    let env_fd = crate::lifecycle::create::env_file(&entries)?;
    // Opened before anything starts: a log that cannot be had stops here.
    if g.audit_syslog.is_some() && g.audit_log.is_none() {
        anyhow::bail!("--audit-syslog copies the audit log: give --audit-log too");
    }
    let audit = g.audit_log.as_deref().map(|spec| crate::audit_cmd::open(spec)?.with_syslog(g)).transpose()?;
    let secrets = crate::secrets::boot_fd(&crate::secrets::specs(g)?)?;
    let pids = g.pids_limit.unwrap_or(crate::limits::DEFAULT_PIDS);
    let cgroup = crate::do_cgroup::DoCgroup::create(memory_mb, pids);
    let join = cgroup.as_ref().map(crate::do_cgroup::DoCgroup::procs_files).unwrap_or_default();

    let (root_gofer, sentry_end) = start_gofer(g, &rootfs, true, &join)?;
    let mut gofers = vec![root_gofer];
    let mut bind_ends = Vec::new();
    for v in &volumes {
        let (gofer, end) = start_gofer(g, &v.host, v.read_only, &join)?;
        gofers.push(gofer);
        bind_ends.push(end);
    }
    let mut boot_args: Vec<OsString> =
        vec!["boot".into(), "--gofer-fd".into(), sentry_end.as_raw_fd().to_string().into()];
    boot_args.extend(["--env-fd".into(), env_fd.as_raw_fd().to_string().into()]);
    for (v, end) in volumes.iter().zip(&bind_ends) {
        let mut bind = OsString::from(format!("{}=", end.as_raw_fd()));
        bind.push(&v.guest);
        boot_args.extend(["--bind".into(), bind]);
    }
    boot_args.extend(["--cwd".into(), guest_cwd.into_os_string()]);
    for p in &args.publish {
        boot_args.extend(["--publish".into(), p.into()]);
    }
    boot_args.extend(crate::limits::boot_args(g, memory_mb, Some(pids)));
    if let Some(sink) = &audit {
        let mounts: Vec<_> = volumes.iter().map(|v| (v.host.clone(), v.guest.to_string_lossy().into_owned())).collect();
        boot_args.extend(sink.boot_args(g, &crate::audit_cmd::new_sandbox_id()?, &rootfs, &mounts));
        boot_args.extend(["--audit-env".into(), env.summary.into()]);
    }
    if let Some(fd) = &secrets {
        boot_args.extend(["--secrets-fd".into(), fd.as_raw_fd().to_string().into()]);
    }
    boot_args.push("--".into());
    boot_args.extend(args.command);
    // The sentry dies with us (a death signal) and its stubs with it (it is
    // the first process of a pid namespace of its own, as a container's).
    let mut boot = husk_command(g, boot_args)?;
    // Variables that hold secrets (`--secret NAME=env:VAR`) stay with us.
    for var in crate::secrets::env_sources(g) {
        boot.env_remove(var);
    }
    let keep: Vec<i32> = [&sentry_end, &env_fd]
        .into_iter()
        .chain(&bind_ends)
        .chain(&secrets)
        .map(AsRawFd::as_raw_fd)
        .chain(audit.iter().flat_map(crate::audit_cmd::Sink::raw_fds))
        .collect();
    let mut sentry = in_new_pid_namespace(|| spawn(&mut boot, &keep, Session::Inherit, &join, Lifetime::Ours))?;
    drop((sentry_end, env_fd, bind_ends, secrets));
    let log_path = audit.and_then(crate::audit_cmd::Sink::into_path);
    let gofer_pids: Vec<u32> = gofers.iter().map(Child::id).collect();
    let timed_out = forward_signals(sentry.id(), &gofer_pids, false, g.kill_grace())?;

    let status = sentry.wait().context("waiting for the sentry")?;
    crate::audit_cmd::close_if_killed(log_path.as_deref(), status, &timed_out);
    for gofer in &mut gofers {
        let gofer_status = gofer.wait().context("waiting for a gofer")?;
        // (A gofer killed with the sandbox, by us, is no news.)
        if !gofer_status.success() && gofer_status.signal() != Some(libc::SIGKILL) {
            log::warn!("the gofer exited with {gofer_status}");
        }
    }
    reap_all();
    // Empty now: removed.
    drop(cgroup);
    Ok(exit_code(status))
}

/// Starts a gofer serving `dir` (refusing changes when `read_only`), in a
/// session of its own and dying with us; returns it and the sentry's end
/// of its connection.
fn start_gofer(
    g: &GlobalArgs,
    dir: &Path,
    read_only: bool,
    join: &[std::ffi::CString],
) -> anyhow::Result<(Child, OwnedFd)> {
    let (sentry_end, gofer_end) = seqpacket_pair()?;
    let mut gofer_args: Vec<OsString> = vec!["gofer".into(), "--rootfs".into(), dir.as_os_str().to_owned()];
    gofer_args.extend(["--sock-fd".into(), gofer_end.as_raw_fd().to_string().into()]);
    if read_only {
        gofer_args.push("--read-only".into());
    }
    let mut gofer_cmd = husk_command(g, gofer_args)?;
    for var in crate::secrets::env_sources(g) {
        gofer_cmd.env_remove(var);
    }
    gofer_cmd.stdin(std::process::Stdio::null());
    let gofer = spawn(&mut gofer_cmd, &[gofer_end.as_raw_fd()], Session::New, join, Lifetime::Ours)?;
    Ok((gofer, sentry_end))
}
