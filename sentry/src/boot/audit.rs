//! Opening a sandbox's audit log at boot and closing it at exit: the
//! `sandbox.*` lifecycle records, and the fail-closed stop.

use super::{BootConfig, BootError};
use crate::audit::{AuditLog, ExitReason, Mount, Outcome, Record, SecretInfo, SecurityConfig};
use crate::kernel::watchdog::Breach;
use crate::kernel::ExitStatus;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// The exit status of a sentry stopped because its audit log failed
/// closed (as for any failure of husk itself).
const STOPPED: i32 = 125;

/// Where and how the sandbox's audit log is kept (`--audit-log`).
pub struct AuditConfig {
    /// The log, opened for appending by the runtime, outside the guest's
    /// reach: no guest descriptor or path names it.
    pub sink: OwnedFd,
    /// The sandbox's id in every record: the container's, or one made for
    /// `husk do`.
    pub sandbox: String,
    /// Run on when the log cannot be written (else the sandbox stops).
    pub fail_open: bool,
    /// The host directory of the root filesystem, for `sandbox.create`.
    pub rootfs: String,
    /// The globs of the paths whose changes are recorded.
    pub watch: Vec<String>,
    /// The globs of the paths whose opens for reading are recorded.
    pub read: Vec<String>,
    /// Record new processes (`process.fork`).
    pub fork: bool,
    /// A connected unix datagram socket every record also goes to, as
    /// an RFC 5424 message (`--audit-syslog`).
    pub syslog: Option<OwnedFd>,
    /// How the runtime made the first process's environment (`husk do`:
    /// clean, or inherited), for `sandbox.create`.
    pub env: Option<String>,
}

/// The security configuration `cfg` gives the sandbox.
fn security_config(cfg: &BootConfig, rootfs: &str, watch: &[String], env: Option<String>) -> SecurityConfig {
    let text = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    let mount = |p: &[u8], kind: &str| Mount { path: text(p), kind: kind.into() };
    let binds = cfg.binds.iter().map(|b| mount(&b.path, if b.file { "bind-file" } else { "bind" }));
    let tmpfs = cfg.tmpfs.iter().map(|(p, _)| mount(p, "tmpfs"));
    let masked = cfg.masked_paths.iter().map(|p| mount(p, "masked"));
    let readonly = cfg.readonly_paths.iter().map(|p| mount(p, "read-only"));
    SecurityConfig {
        platform: "ptrace".into(),
        network: network_summary(&cfg.network),
        memory_limit: cfg.memory_limit,
        pids_limit: cfg.cgroup_limits.pids_max,
        cpu_limit_ms: cfg.limits.cpu.map(millis),
        timeout_ms: cfg.limits.timeout.map(millis),
        nofile: cfg.nofile,
        rootfs: rootfs.into(),
        root_mode: if cfg.read_only_root { "read-only" } else { "overlay" }.into(),
        disk_limit: cfg.disk_limit,
        mounts: binds.chain(tmpfs).chain(masked).chain(readonly).collect(),
        watch: watch.to_vec(),
        read: Vec::new(),
        env,
        secrets: cfg
            .secrets
            .iter()
            .map(|s| SecretInfo { name: s.name.clone(), ttl_ms: s.ttl.map(millis), env: s.env })
            .collect(),
        audit_fail_open: false,
        audit_fork: false,
    }
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The network mode and, with a gateway, its policy's rules.
fn network_summary(network: &super::Network) -> String {
    let list =
        |rules: &[husk_netstack::egress::Rule]| rules.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",");
    match network {
        super::Network::None => "none".into(),
        super::Network::Sandbox(p) if p.unfiltered => {
            "host: unfiltered host sockets (every destination, the always-denied ranges too)".into()
        }
        super::Network::Sandbox(p) => {
            format!("sandbox; egress allow [{}] deny [{}]", list(p.policy.allow_rules()), list(p.policy.deny_rules()))
        }
    }
}

/// Starts the log with `sandbox.create`; a log that cannot take it stops
/// the boot, whatever the fail-open choice.
pub(super) fn open(cfg: &mut BootConfig) -> Result<Option<Arc<AuditLog>>, BootError> {
    let Some(a) = cfg.audit.take() else { return Ok(None) };
    let mut config = security_config(cfg, &a.rootfs, &a.watch, a.env);
    config.audit_fork = a.fork;
    config.read = a.read;
    let mut sink: Box<dyn crate::audit::Sink> = Box::new(std::fs::File::from(a.sink));
    if let Some(socket) = a.syslog {
        let tee = crate::audit::syslog::Tee::new(sink, socket, &a.sandbox)
            .map_err(|e| crate::audit::AuditError(format!("the syslog socket: {e}")))?;
        sink = Box::new(tee);
    }
    let log = Arc::new(AuditLog::open(&a.sandbox, sink, config, a.fail_open)?);
    log.set_on_failure(Box::new(|e| {
        eprintln!("husk: {e}: stopping the sandbox (the audit log fails closed)");
        // Every stub dies with the sentry, the first process of its pid
        // namespace; nothing of the guest runs unrecorded.
        std::process::exit(STOPPED);
    }));
    Ok(Some(log))
}

/// Why the sandbox whose first process ended so ended (`breach`: the
/// sandbox-wide limit that ended it, if one did).
pub(super) fn reason(status: ExitStatus, oom: bool, breach: Option<Breach>) -> ExitReason {
    match status {
        _ if breach == Some(Breach::Timeout) => ExitReason::Timeout,
        _ if breach == Some(Breach::Cpu) => ExitReason::Cpu,
        _ if oom => ExitReason::Oom,
        ExitStatus::Code(_) => ExitReason::Exited,
        ExitStatus::Signal(_) => ExitReason::Killed,
    }
}

/// Closes the log with `sandbox.exit` (synced, as lifecycle records are).
pub(super) fn close(log: &AuditLog, result: &Result<(ExitStatus, ExitReason), BootError>) {
    let record = match result {
        Ok((status, reason)) => {
            Record::SandboxExit { reason: *reason, outcome: Some(Outcome::from(*status)), error: None, closed_by: None }
        }
        Err(e) => Record::SandboxExit {
            reason: ExitReason::Error,
            outcome: None,
            error: Some(e.to_string()),
            closed_by: None,
        },
    };
    // A failure has stopped the sandbox already (or is let pass).
    let _ = log.write(&record);
}
