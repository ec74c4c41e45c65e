//! `husk do`: run one command in a fresh sandbox whose root is the host's
//! filesystem (or --rootfs), read-only under an in-memory overlay.

use crate::cli::{DoArgs, GlobalArgs};
use crate::sandbox::{
    exit_code, forward_signals, husk_command, in_new_pid_namespace, seqpacket_pair, spawn, Lifetime, Session,
};
use anyhow::{bail, Context as _};
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;

/// Reaps every remaining descendant that was reparented to us (we are a
/// subreaper).
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
    // Opened before anything starts: a log that cannot be had stops here.
    let audit = g.audit_log.as_deref().map(crate::audit_cmd::open).transpose()?;
    let memory_mb = crate::limits::do_memory_mb(g);
    let pids = g.pids_limit.unwrap_or(crate::limits::DEFAULT_PIDS);
    let cgroup = crate::do_cgroup::DoCgroup::create(memory_mb, pids);
    let join = cgroup.as_ref().map(crate::do_cgroup::DoCgroup::procs_files).unwrap_or_default();
    let (sentry_end, gofer_end) = seqpacket_pair()?;

    let gofer_args: Vec<OsString> = vec![
        "gofer".into(),
        "--rootfs".into(),
        rootfs.clone().into_os_string(),
        "--sock-fd".into(),
        gofer_end.as_raw_fd().to_string().into(),
        "--read-only".into(),
    ];
    let mut gofer_cmd = husk_command(g, gofer_args)?;
    gofer_cmd.stdin(std::process::Stdio::null());
    let mut gofer = spawn(&mut gofer_cmd, &[gofer_end.as_raw_fd()], Session::New, &join, Lifetime::Ours)?;
    drop(gofer_end);

    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let guest_cwd = match cwd.strip_prefix(&rootfs) {
        Ok(rel) => std::path::Path::new("/").join(rel),
        Err(_) => "/".into(),
    };
    let mut boot_args: Vec<OsString> =
        vec!["boot".into(), "--gofer-fd".into(), sentry_end.as_raw_fd().to_string().into()];
    boot_args.extend(["--cwd".into(), guest_cwd.into_os_string()]);
    boot_args.extend(crate::limits::boot_args(g, memory_mb, Some(pids)));
    if let Some(sink) = &audit {
        boot_args.extend(sink.boot_args(g, &crate::audit_cmd::new_sandbox_id()?, &rootfs, &[]));
    }
    boot_args.push("--".into());
    boot_args.extend(args.command);
    // The sentry dies with us (a death signal) and its stubs with it (it is
    // the first process of a pid namespace of its own, as a container's).
    let mut boot = husk_command(g, boot_args)?;
    let keep: Vec<i32> = std::iter::once(sentry_end.as_raw_fd()).chain(audit.iter().map(|s| s.raw_fd())).collect();
    let mut sentry = in_new_pid_namespace(|| spawn(&mut boot, &keep, Session::Inherit, &join, Lifetime::Ours))?;
    drop(sentry_end);
    let log_path = audit.and_then(crate::audit_cmd::Sink::into_path);
    let timed_out = forward_signals(sentry.id(), &[gofer.id()], false, g.kill_grace())?;

    let status = sentry.wait().context("waiting for the sentry")?;
    crate::audit_cmd::close_if_killed(log_path.as_deref(), status, &timed_out);
    let gofer_status = gofer.wait().context("waiting for the gofer")?;
    // (A gofer killed with the sandbox, by us, is no news.)
    if !gofer_status.success() && gofer_status.signal() != Some(libc::SIGKILL) {
        log::warn!("the gofer exited with {gofer_status}");
    }
    reap_all();
    // Empty now: removed.
    drop(cgroup);
    Ok(exit_code(status))
}
