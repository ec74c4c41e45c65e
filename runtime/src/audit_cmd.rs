//! The audit log on the runtime's side: opening it for a sandbox's
//! sentry (`--audit-log PATH|fd:N`, or a container's own log under
//! --root), hiding it from the guest, and `husk audit verify|show`.

use crate::cli::{AuditArgs, AuditCommand, GlobalArgs};
use anyhow::{bail, Context as _};
use husk_sentry::api::audit::{DeleteReason, ExitReason, Outcome, Record};
use std::ffi::OsString;
use std::io::Read as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The folder under --root that keeps containers' logs, which outlive
/// the containers (`husk run` deletes its container as it ends). Its `@`
/// is no character of a container id, so no container's folder is it.
const LOGS: &str = "@audit";

/// An open audit log, to be handed to a sentry.
pub struct Sink {
    fd: OwnedFd,
    /// The file's host path, when it is a file, to hide from the guest.
    host_path: Option<PathBuf>,
    /// A unix datagram socket connected to `--audit-syslog PATH`.
    syslog: Option<OwnedFd>,
}

/// Opens `spec`: `fd:N` (an inherited descriptor, used as it is) or a
/// path (created 0600, appended to).
pub fn open(spec: &str) -> anyhow::Result<Sink> {
    use std::os::unix::fs::OpenOptionsExt;
    let fd: OwnedFd = match spec.strip_prefix("fd:") {
        Some(n) => {
            let n: i32 = n.parse().with_context(|| format!("--audit-log {spec:?}: want fd:N"))?;
            crate::sandbox::inherited_fd(n).with_context(|| format!("--audit-log {spec}"))?
        }
        None => std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(spec)
            .with_context(|| format!("opening the audit log {spec}"))?
            .into(),
    };
    let host_path =
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok().filter(|p| p.is_absolute() && p.is_file());
    Ok(Sink { fd, host_path, syslog: None })
}

/// A container's own log, `--root/@audit/ID.log`; a log left by an
/// earlier container of the same id is kept as `ID.log.N`.
pub fn open_container_log(root: &Path, id: &str) -> anyhow::Result<Sink> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = root.join(LOGS);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("{}", dir.display()))?;
    let path = container_log(root, id);
    if path.exists() {
        let old = (1..).map(|n| dir.join(format!("{id}.log.{n}"))).find(|p| !p.exists());
        if let Some(old) = old {
            std::fs::rename(&path, &old).with_context(|| format!("keeping {}", path.display()))?;
        }
    }
    open(&path.to_string_lossy())
}

fn container_log(root: &Path, id: &str) -> PathBuf {
    root.join(LOGS).join(format!("{id}.log"))
}

/// A random id for a `husk do` sandbox.
pub fn new_sandbox_id() -> anyhow::Result<String> {
    let mut bytes = [0u8; 6];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(format!("do-{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Where the log of container `id` is, when it is a file: --audit-log
/// PATH, or the container's own.
pub fn container_log_path(g: &GlobalArgs, id: &str) -> Option<PathBuf> {
    match &g.audit_log {
        Some(spec) if spec.starts_with("fd:") => None,
        Some(spec) => std::path::absolute(spec).ok(),
        None => Some(container_log(&g.root, id)),
    }
}

/// What the audit log at `path` says of sandbox `id`'s limits: its
/// `limit.*` records, and why it ended (`sandbox.exit`'s reason), if it
/// did. A log that cannot be read says nothing.
pub fn limit_report(path: &Path, id: &str) -> (Vec<serde_json::Value>, Option<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut limits = Vec::new();
    let mut reason = None;
    // Only the lines that can be one are parsed.
    let wanted = text.lines().filter(|l| l.contains("\"type\":\"limit.") || l.contains("\"type\":\"sandbox.exit\""));
    for r in wanted.filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()) {
        if r["sandbox"] != id {
            continue;
        }
        match r["type"].as_str() {
            Some("sandbox.exit") => reason = r["reason"].as_str().map(str::to_string),
            Some(t) if t.starts_with("limit.") => limits.push(r),
            _ => {}
        }
    }
    (limits, reason)
}

/// Closes the log at `path` when its sentry was killed (SIGKILL, from
/// outside) before it could: `sandbox.exit` with reason `timeout` when
/// the grace period after a SIGTERM ran out, else `killed`.
pub fn close_if_killed(path: Option<&Path>, status: std::process::ExitStatus, timed_out: &AtomicBool) {
    use std::os::unix::process::ExitStatusExt;
    let (Some(path), Some(libc::SIGKILL)) = (path, status.signal()) else { return };
    let reason = if timed_out.load(Ordering::SeqCst) { ExitReason::Timeout } else { ExitReason::Killed };
    close_killed(path, reason);
}

/// Closes the log at `path` of a sentry killed from outside with
/// `sandbox.exit` (`reason`, SIGKILL), unless the sentry closed it.
pub fn close_killed(path: &Path, reason: ExitReason) {
    let record = Record::SandboxExit {
        reason,
        outcome: Some(Outcome::Signal(libc::SIGKILL)),
        error: None,
        closed_by: Some("runtime".into()),
    };
    if let Err(e) = husk_sentry::api::audit::close_after_kill(path, &record) {
        log::warn!("{e}");
    }
}

/// Appends `sandbox.delete` (reason `deleted`) to the log at `path` of a
/// container whose sentry is gone. A log that is not closed, or is
/// broken, is left as it is, with a warning.
pub fn record_delete(path: &Path, force: bool) {
    let record = Record::SandboxDelete { reason: DeleteReason::Deleted, force, closed_by: "runtime".into() };
    if let Err(e) = husk_sentry::api::audit::append_delete(path, &record) {
        log::warn!("{e}");
    }
}

impl Sink {
    /// The log's host path, once it is handed over.
    pub fn into_path(self) -> Option<PathBuf> {
        self.host_path
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The descriptors the sentry inherits: the log's and the syslog
    /// socket's.
    pub fn raw_fds(&self) -> Vec<i32> {
        std::iter::once(self.raw_fd()).chain(self.syslog.as_ref().map(AsRawFd::as_raw_fd)).collect()
    }

    /// Also sends every record to the unix datagram socket at
    /// `--audit-syslog PATH`, connected now: a socket nobody listens on
    /// stops the start.
    pub fn with_syslog(mut self, g: &GlobalArgs) -> anyhow::Result<Sink> {
        if let Some(path) = &g.audit_syslog {
            let socket = std::os::unix::net::UnixDatagram::unbound().context("a syslog socket")?;
            socket.connect(path).with_context(|| format!("--audit-syslog {}", path.display()))?;
            self.syslog = Some(socket.into());
        }
        Ok(self)
    }

    /// The `husk boot` arguments that hand this log to the sentry of
    /// sandbox `id`, whose root filesystem is `rootfs` and whose other
    /// host folders are `mounts` (host, guest). The log's file, seen
    /// through any of them, is masked in the guest.
    pub fn boot_args(&self, g: &GlobalArgs, id: &str, rootfs: &Path, mounts: &[(PathBuf, String)]) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--audit-fd".into(), self.raw_fd().to_string().into()];
        args.extend(["--audit-sandbox".into(), id.into(), "--audit-rootfs".into(), rootfs.as_os_str().to_owned()]);
        if g.audit_fail_open {
            args.push("--audit-fail-open".into());
        }
        if g.audit_fork {
            args.push("--audit-fork".into());
        }
        if let Some(socket) = &self.syslog {
            args.extend(["--audit-syslog-fd".into(), socket.as_raw_fd().to_string().into()]);
        }
        for glob in &g.audit_watch {
            args.extend(["--audit-watch".into(), glob.into()]);
        }
        for glob in &g.audit_read {
            args.extend(["--audit-read".into(), glob.into()]);
        }
        let Some(host) = &self.host_path else { return args };
        let root = (rootfs.canonicalize().unwrap_or_else(|_| rootfs.to_path_buf()), "/".to_string());
        for (dir, guest) in std::iter::once(&root).chain(mounts) {
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            if let Ok(rel) = host.strip_prefix(&dir) {
                let guest = Path::new(guest).join(rel);
                args.extend(["--masked-path".into(), guest.into_os_string()]);
            }
        }
        args
    }
}

pub fn run(g: &GlobalArgs, args: AuditArgs) -> anyhow::Result<i32> {
    match args.command {
        AuditCommand::Verify { file } => {
            let data = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            match husk_sentry::api::audit::verify::verify(&data) {
                Ok(summary) => {
                    println!("{}: {summary}", file.display());
                    Ok(0)
                }
                Err(defect) => {
                    println!("{}: {defect}", file.display());
                    Ok(1)
                }
            }
        }
        AuditCommand::Export { format: crate::cli::ExportFormat::Ocsf, file } => export_ocsf(&file),
        AuditCommand::Show { id } => {
            let path = container_log(&g.root, &id);
            let data = std::fs::read(&path).with_context(|| format!("no audit log of container {id}"))?;
            if data.is_empty() {
                bail!("the audit log of container {id} is empty");
            }
            use std::io::Write as _;
            match std::io::stdout().lock().write_all(&data) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
                other => other.map(|()| 0).map_err(Into::into),
            }
        }
    }
}

/// Prints the records of the log `file` as OCSF events, one a line. A
/// line that is not a record is an error naming it (verify the log for
/// its integrity: export does not check the chain).
fn export_ocsf(file: &Path) -> anyhow::Result<i32> {
    use std::io::Write as _;
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (i, line) in text.lines().enumerate() {
        let record: serde_json::Value =
            serde_json::from_str(line).with_context(|| format!("{} line {}: not JSON", file.display(), i + 1))?;
        let Some(event) = husk_sentry::api::audit::ocsf::event(&record) else {
            bail!("{} line {}: not an audit record", file.display(), i + 1);
        };
        match writeln!(out, "{event}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(0),
            other => other?,
        }
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|()| 0).map_err(Into::into),
    }
}
