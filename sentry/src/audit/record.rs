//! The records of the audit log: one variant per `type`, serialized with
//! `type` as the tag and the variant's fields beside it. Byte strings of
//! the guest (paths, argv) are written as UTF-8, invalid sequences
//! replaced. Fields never carry secret values: of the environment only
//! the names are recorded.

use serde::Serialize;

/// One audit record, without the envelope (`ts`, `sandbox`, `seq`,
/// `prev`) the writer adds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum Record {
    /// The sandbox exists; always the first record of a log.
    #[serde(rename = "sandbox.create")]
    SandboxCreate {
        /// Random hex text whose SHA-256 is this record's `prev`.
        nonce: String,
        config: SecurityConfig,
    },
    /// The sandbox's first process starts running.
    #[serde(rename = "sandbox.start")]
    SandboxStart {},
    /// The sandbox is about to be frozen (`husk pause`): written and
    /// synced by the sentry before the runtime freezes it.
    #[serde(rename = "sandbox.pause")]
    SandboxPause {},
    /// The sandbox was thawed (`husk resume`).
    #[serde(rename = "sandbox.resume")]
    SandboxResume {},
    /// The sandbox ended; the last record of a closed log, unless
    /// `sandbox.delete` follows it.
    #[serde(rename = "sandbox.exit")]
    SandboxExit {
        reason: ExitReason,
        #[serde(flatten)]
        outcome: Option<Outcome>,
        /// What went wrong, for reason `error`.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// `runtime` when the sentry was killed before it could close the
        /// log, and the runtime closed it.
        #[serde(skip_serializing_if = "Option::is_none")]
        closed_by: Option<String>,
    },
    /// The container was deleted (`husk delete`): appended by the
    /// runtime after `sandbox.exit`, once the sentry is gone.
    #[serde(rename = "sandbox.delete")]
    SandboxDelete {
        reason: DeleteReason,
        /// Deleted with `--force` (a running sandbox is killed first).
        force: bool,
        /// Always `runtime`: the sentry is gone when it is written.
        closed_by: String,
    },
    /// A process replaced its image; written before the new image runs.
    #[serde(rename = "process.exec")]
    ProcessExec {
        pid: i32,
        ppid: i32,
        uid: u32,
        gid: u32,
        cwd: String,
        /// The executable loaded, as resolved (for a `#!` script, its
        /// interpreter; the script is in `argv`).
        exe: String,
        /// The argv the new image sees: after `#!` resolution, the
        /// interpreter, its argument and the script before the rest.
        argv: Vec<String>,
        /// The names of the environment's variables, never their values.
        env: Vec<String>,
    },
    /// A process made a new process (fork, vfork, clone without
    /// CLONE_THREAD), recorded before either runs on; only with
    /// `--audit-fork`.
    #[serde(rename = "process.fork")]
    ProcessFork { pid: i32, child: i32 },
    /// A process ended (its last thread exited).
    #[serde(rename = "process.exit")]
    ProcessExit {
        pid: i32,
        #[serde(flatten)]
        outcome: Outcome,
    },
    /// The OOM killer ended a process.
    #[serde(rename = "limit.memory")]
    LimitMemory {
        pid: i32,
        comm: String,
        /// The victim's resident memory, in bytes.
        size: u64,
        /// The sandbox's memory limit and what it had in use, in bytes.
        limit: u64,
        usage: u64,
    },
    /// The disk budget refused a write or a new file (the first refusal
    /// of each episode: until usage falls below seven eighths of the
    /// limit, later refusals are not recorded).
    #[serde(rename = "limit.disk")]
    LimitDisk {
        /// The process refused (0 when the sentry itself wrote).
        pid: i32,
        comm: String,
        /// The disk limit and what was in use, in bytes.
        limit: u64,
        usage: u64,
    },
    /// A fork, vfork or clone failed with EAGAIN at the sandbox's pids
    /// limit (once per breach episode, not per refused call).
    #[serde(rename = "limit.pids")]
    LimitPids { pid: i32, comm: String, limit: u64 },
    /// The sandbox's guest spent its CPU time limit: every process gets
    /// SIGXCPU, then SIGKILL.
    #[serde(rename = "limit.cpu")]
    LimitCpu { limit_ms: u64, usage_ms: u64, processes: usize },
    /// The sandbox's wall-clock timeout ran out: every process gets
    /// SIGTERM, then SIGKILL after the grace.
    #[serde(rename = "limit.timeout")]
    LimitTimeout { timeout_ms: u64, grace_ms: u64, processes: usize },
    /// A descriptor could not be had (EMFILE) at the sandbox's
    /// RLIMIT_NOFILE ceiling (at most one a second).
    #[serde(rename = "limit.nofile")]
    LimitNofile { pid: i32, comm: String, limit: u64 },
    /// A process called a system call husk does not implement (once per
    /// number per sandbox).
    #[serde(rename = "syscall.unimplemented")]
    SyscallUnimplemented { nr: u64, name: String, pid: i32, comm: String },
    /// A watched file is created (before it is).
    #[serde(rename = "file.create")]
    FileCreate { pid: i32, path: String },
    /// A watched name is removed (before it is).
    #[serde(rename = "file.unlink")]
    FileUnlink { pid: i32, path: String },
    /// A watched name is renamed, or another renamed over it.
    #[serde(rename = "file.rename")]
    FileRename { pid: i32, from: String, to: String },
    /// A watched file's permissions change.
    #[serde(rename = "file.chmod")]
    FileChmod { pid: i32, path: String, mode: u32 },
    /// A watched file's owner or group changes (absent: left as it is).
    #[serde(rename = "file.chown")]
    FileChown {
        pid: i32,
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        uid: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        gid: Option<u32>,
    },
    /// A hard link `path` to the file at `target` is made, one of them
    /// watched.
    #[serde(rename = "file.link")]
    FileLink { pid: i32, target: String, path: String },
    /// A symbolic link `path` holding `target` is made at a watched name.
    #[serde(rename = "file.symlink")]
    FileSymlink { pid: i32, target: String, path: String },
    /// A watched file is truncated.
    #[serde(rename = "file.truncate")]
    FileTruncate { pid: i32, path: String, length: u64 },
    /// The first write through one open description of a watched file.
    #[serde(rename = "file.write")]
    FileWrite { pid: i32, path: String },
    /// An open for reading of a path matching `--audit-read` (a secret
    /// in /run/secrets, a private key …), before the open is made: its
    /// path, never its contents. Also of a file known to be one by its
    /// identity (a hard link to it, or the name it was renamed to):
    /// `path` is the name used, `via` the watched path it is known by.
    #[serde(rename = "file.read")]
    FileRead {
        pid: i32,
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        via: Option<String>,
    },
    /// A process's view of the filesystem is about to change (mount,
    /// umount2, chroot, pivot_root, unshare(CLONE_NEWNS)), and with it the
    /// spelling of the paths `--audit-watch` matches and later `file.*`
    /// records name: recorded for every such call a permitted process
    /// makes, watched paths or not, before it takes effect. Its paths are
    /// as the process sees them before the change (the other `file.*`
    /// records spell theirs from the mount namespace's root, through
    /// binds' sources); `source` is a bind or
    /// move's source, a new mount's device string, or pivot_root's
    /// put_old.
    #[serde(rename = "file.mount")]
    FileMount {
        pid: i32,
        operation: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        source: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fs_type: Option<String>,
        flags: u64,
    },
    /// A system call or operation husk refused for policy (EPERM), once
    /// per process and call.
    #[serde(rename = "policy.denied")]
    PolicyDenied { pid: i32, comm: String, operation: String, reason: String },
    /// A query the sandbox's resolver answered.
    #[serde(rename = "net.dns")]
    NetDns {
        /// The name asked (empty when the query could not be read).
        name: String,
        /// Its type (`A`, `AAAA` …).
        qtype: String,
        /// allowed, denied, refused, malformed or failed.
        verdict: String,
        /// The reply's rcode; empty when none was sent.
        rcode: String,
        /// The answer records the guest got, as `TYPE DATA`.
        answers: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        upstream: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A guest connection (a stream connect, or a datagram socket's
    /// connect) the egress gateway let out.
    #[serde(rename = "net.connect")]
    NetConnect {
        pid: i32,
        /// tcp or udp.
        protocol: String,
        address: String,
        port: u16,
        /// The allowed name the address was resolved from, when that is
        /// what let it through.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The allow rule that decided (for a connection into the
        /// sandbox, the `--publish` mapping or container port).
        rule: String,
        /// `inbound` for a connection from outside to a guest listener
        /// (`address` and `port` are its peer's); absent for one out.
        #[serde(skip_serializing_if = "Option::is_none")]
        direction: Option<String>,
    },
    /// A connection or datagram the egress gateway refused (EPERM).
    #[serde(rename = "net.denied")]
    NetDenied {
        pid: i32,
        protocol: String,
        address: String,
        port: u16,
        /// Why: the deny rule, the reserved range or no allow rule.
        reason: String,
        /// `inbound` for a connection from outside the sentry turned away
        /// (`address` and `port` are its peer's); absent for one out.
        #[serde(skip_serializing_if = "Option::is_none")]
        direction: Option<String>,
    },
    /// A connection or datagram flow the egress gateway carried ended
    /// (its socket closed): the bytes each way and how long it lasted.
    #[serde(rename = "net.close")]
    NetClose {
        pid: i32,
        protocol: String,
        /// The destination (a datagram flow's first).
        address: String,
        port: u16,
        /// Bytes out of the sandbox and into it.
        sent: u64,
        received: u64,
        duration_ms: u64,
        /// `inbound` for a connection into the sandbox, as its net.connect.
        #[serde(skip_serializing_if = "Option::is_none")]
        direction: Option<String>,
    },
    /// A package manager run installed a package (written when the
    /// process whose exec began the run exits). `package` and `version`
    /// are what the manager wrote to its database; `source` and `sha256`
    /// only what the sentry saw (an archive it hashed as the run read it,
    /// the run's connections), else `unknown`; `evidence` lists both.
    #[serde(rename = "package.install")]
    PackageInstall {
        pid: i32,
        manager: String,
        package: String,
        version: String,
        source: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
        evidence: Vec<super::package::Evidence>,
    },
    /// A package manager's connection to a destination that
    /// `--package-registry-allow` does not name, refused (EPERM).
    #[serde(rename = "package.denied")]
    PackageDenied {
        pid: i32,
        /// The manager whose run made it (from the exec chain), or
        /// `unknown` for a known registry reached outside any run.
        manager: String,
        protocol: String,
        address: String,
        port: u16,
        /// The name the address was resolved from, when there is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Record {
    /// Whether the record may wait in the writer's batch (for at most
    /// `FLUSH_DELAY`, or until a record that may not): it describes a
    /// change whose record need not be in the host kernel's hands before
    /// the change is made. Every other record — exec, connect, unlink,
    /// rename, DNS, denials, limits, packages, lifecycle — is handed over
    /// before the action it describes takes effect.
    pub fn may_wait(&self) -> bool {
        matches!(
            self,
            Record::FileCreate { .. }
                | Record::FileWrite { .. }
                | Record::FileRead { .. }
                | Record::FileChmod { .. }
                | Record::FileChown { .. }
                | Record::FileTruncate { .. }
                | Record::FileLink { .. }
                | Record::FileSymlink { .. }
                | Record::ProcessFork { .. }
                | Record::ProcessExit { .. }
                | Record::NetClose { .. }
        )
    }

    /// Lifecycle records are made durable at once: a crash of the host
    /// right after one keeps it.
    pub fn is_lifecycle(&self) -> bool {
        matches!(
            self,
            Record::SandboxCreate { .. }
                | Record::SandboxStart {}
                | Record::SandboxPause {}
                | Record::SandboxResume {}
                | Record::SandboxExit { .. }
                | Record::SandboxDelete { .. }
        )
    }
}

/// How a process or sandbox ended: `"status": N` or `"signal": N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Status(i32),
    Signal(i32),
}

/// Why a sandbox ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExitReason {
    /// Its first process exited.
    Exited,
    /// Its first process was killed by a signal.
    Killed,
    /// The OOM killer ended its first process.
    Oom,
    /// Its wall-clock timeout ran out (`--timeout`), or it outlived the
    /// runtime's grace period after a SIGTERM and was killed.
    Timeout,
    /// Its CPU time limit ran out (`--cpu-limit`).
    Cpu,
    /// husk failed.
    Error,
}

/// Why a sandbox's container was removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeleteReason {
    /// `husk delete`.
    Deleted,
}

/// The configuration of a sandbox that matters for its security, as the
/// sentry applies it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SecurityConfig {
    /// The platform that runs guest code.
    pub platform: String,
    /// What the guest's network reaches.
    pub network: String,
    /// The memory limit of the whole sandbox, in bytes.
    pub memory_limit: u64,
    /// The sandbox's other limits; absent where there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_limit_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nofile: Option<u64>,
    /// The host directory served as the root filesystem, as the runtime
    /// names it.
    pub rootfs: String,
    /// `overlay` (writes kept in the sandbox's memory) or `read-only`.
    pub root_mode: String,
    /// What the upper layer and the tmpfs mounts may hold together, in
    /// bytes (absent: bounded by the memory limit alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_limit: Option<u64>,
    pub mounts: Vec<Mount>,
    /// The globs of the paths whose changes are recorded (`file.*`).
    pub watch: Vec<String>,
    /// The globs of the paths whose opens for reading are recorded
    /// (`file.read`).
    pub read: Vec<String>,
    /// How the first process's environment was made (`husk do`: `clean`,
    /// with the names kept and set, or `inherited (--env-keep '*')`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// The secrets delivered in /run/secrets, by name: never a value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretInfo>,
    /// Whether the sandbox runs on when the log cannot be written.
    pub audit_fail_open: bool,
    /// Whether new processes are recorded (`process.fork`).
    pub audit_fork: bool,
}

/// A secret as `sandbox.create` names it: what it is called and how long
/// it lives, never its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SecretInfo {
    pub name: String,
    /// Its time to live (absent: the sandbox's life).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Also in the environment (`--secret-env`).
    pub env: bool,
}

/// A filesystem mounted in the sandbox beyond its root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mount {
    pub path: String,
    /// `bind`, `tmpfs`, `masked`, `read-only` …
    pub kind: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_serialize_with_their_type_and_flat_outcomes() {
        let exit = Record::ProcessExit { pid: 3, outcome: Outcome::Signal(9) };
        assert_eq!(serde_json::to_string(&exit).unwrap(), r#"{"type":"process.exit","pid":3,"signal":9}"#);
        let exit = Record::SandboxExit {
            reason: ExitReason::Exited,
            outcome: Some(Outcome::Status(2)),
            error: None,
            closed_by: None,
        };
        assert_eq!(serde_json::to_string(&exit).unwrap(), r#"{"type":"sandbox.exit","reason":"exited","status":2}"#);
        let start = Record::SandboxStart {};
        assert_eq!(serde_json::to_string(&start).unwrap(), r#"{"type":"sandbox.start"}"#);
        assert!(start.is_lifecycle() && exit.is_lifecycle());
        assert!(!Record::ProcessExit { pid: 3, outcome: Outcome::Status(0) }.is_lifecycle());
        assert_eq!(serde_json::to_string(&Record::SandboxPause {}).unwrap(), r#"{"type":"sandbox.pause"}"#);
        let delete = Record::SandboxDelete { reason: DeleteReason::Deleted, force: false, closed_by: "runtime".into() };
        assert_eq!(
            serde_json::to_string(&delete).unwrap(),
            r#"{"type":"sandbox.delete","reason":"deleted","force":false,"closed_by":"runtime"}"#
        );
        assert!(Record::SandboxResume {}.is_lifecycle() && delete.is_lifecycle());
    }
}
