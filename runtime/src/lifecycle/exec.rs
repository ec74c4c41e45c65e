//! `husk exec`: runs another process in a running container. Its standard
//! streams are ours; with --detach a small waiter process (`husk
//! exec-wait`) stays behind, its pid in --pid-file, and exits with the
//! guest process's status, so a containerd shim that waits on that pid
//! sees the status as with runc.

use super::create::open_console;
use crate::cli::{ExecArgs, ExecWaitArgs, GlobalArgs};
use crate::oci::bundle::{console_size, Bundle};
use crate::oci::control::{self, ExecHandle};
use crate::oci::state::{write_atomically, StateRoot, Status};
use crate::sandbox::{die_of, husk_command, inherited_fd, spawn, Lifetime, Session};
use anyhow::{bail, Context as _};
use husk_sentry::api::boot::control::protocol::{ExecSpec, ExitLine};
use oci_spec::runtime::Process;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;

pub fn run(g: &GlobalArgs, args: ExecArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    match c.status() {
        Status::Running => {}
        s => bail!("cannot exec in a {s} container"),
    }
    let (mut spec, terminal) = exec_spec(&args, &c.record.bundle)?;
    let handle = match terminal {
        Some(size) => {
            let socket = args.console_socket.as_deref().context("a terminal needs --console-socket")?;
            let (tty, name) = open_console(socket, size)?;
            spec.terminal = name.into_encoded_bytes();
            control::exec(&c.control_path(), spec, [tty.as_fd(), tty.as_fd(), tty.as_fd()])?
        }
        None => {
            let (stdin, stdout, stderr) = (std::io::stdin(), std::io::stdout(), std::io::stderr());
            control::exec(&c.control_path(), spec, [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()])?
        }
    };
    drop(c);
    if !args.detach {
        // We are the host process that ends as the exec'd one does.
        write_pid_file(&args, i32::try_from(std::process::id()).context("pid")?)?;
        return Ok(handle.wait().code());
    }
    let stream = OwnedFd::from(handle.into_stream());
    let wait_args = ["exec-wait".into(), "--fd".into(), stream.as_raw_fd().to_string().into()];
    let mut cmd = husk_command(g, wait_args)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let waiter = spawn(&mut cmd, &[stream.as_raw_fd()], Session::New, &[], Lifetime::Own)?;
    write_pid_file(&args, i32::try_from(waiter.id()).context("waiter pid")?)?;
    Ok(0)
}

fn write_pid_file(args: &ExecArgs, pid: i32) -> anyhow::Result<()> {
    if let Some(p) = &args.pid_file {
        write_atomically(&std::path::absolute(p)?, pid.to_string().as_bytes()).context("writing the pid file")?;
    }
    Ok(())
}

/// `husk exec-wait`: holds the exec'd process's connection and ends as
/// the process did.
pub fn wait(args: ExecWaitArgs) -> anyhow::Result<i32> {
    let stream = UnixStream::from(inherited_fd(args.fd)?);
    match ExecHandle::from_stream(stream).wait() {
        ExitLine::Code(c) => Ok(c),
        ExitLine::Signal(s) => die_of(s),
    }
}

/// The process to run: --process's JSON, or the container's own process
/// with the command line and the flags applied; and its console's size if
/// it has a terminal.
fn exec_spec(args: &ExecArgs, bundle: &std::path::Path) -> anyhow::Result<(ExecSpec, Option<(u16, u16)>)> {
    let process: Process = match &args.process {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
            crate::oci::json::parse(path.display(), &text)?
        }
        None => Bundle::load(bundle)?.spec.process().clone().context("the container has no process")?,
    };
    let has_terminal = if args.process.is_some() { process.terminal().unwrap_or(false) } else { args.tty };
    let terminal = has_terminal.then(|| console_size(&process));
    let argv: Vec<String> =
        if args.process.is_some() { process.args().clone().unwrap_or_default() } else { args.command.clone() };
    if argv.is_empty() {
        bail!("no command to exec");
    }
    let mut env = process.env().clone().unwrap_or_default();
    for kv in &args.env {
        let key = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k);
        env.retain(|e| e.split_once('=').map_or(e.as_str(), |(k, _)| k) != key);
        env.push(kv.clone());
    }
    let cwd = args.cwd.clone().unwrap_or_else(|| process.cwd().to_string_lossy().into_owned());
    let (mut uid, mut gid) = (process.user().uid(), process.user().gid());
    if let Some(u) = &args.user {
        let (u, g) = u.split_once(':').map_or((u.as_str(), None), |(u, g)| (u, Some(g)));
        uid = u.parse().with_context(|| format!("--user {u:?}: only numeric ids are supported"))?;
        if let Some(g) = g {
            gid = g.parse().with_context(|| format!("--user group {g:?}: only numeric ids are supported"))?;
        }
    }
    let spec = ExecSpec {
        argv: argv.into_iter().map(String::into_bytes).collect(),
        env: env.into_iter().map(String::into_bytes).collect(),
        cwd: cwd.into_bytes(),
        uid,
        gid,
        groups: process.user().additional_gids().clone().unwrap_or_default(),
        rlimits: process
            .rlimits()
            .iter()
            .flatten()
            .map(|r| (crate::oci::bundle::rlimit_number(r.typ()), r.soft(), r.hard()))
            .collect(),
        terminal: Vec::new(),
        caps: crate::oci::bundle::process_caps(&process)?,
        no_new_privs: args.no_new_privs || process.no_new_privileges().unwrap_or(false),
    };
    Ok((spec, terminal))
}
