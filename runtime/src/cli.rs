//! Command-line syntax.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "husk", version, about = "A user-space-kernel sandbox runtime", disable_help_subcommand = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts (runc/runsc place them before the command).
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Where container state lives.
    #[arg(long, global = true, default_value = "/run/husk")]
    pub root: PathBuf,
    /// The platform that runs guest code.
    #[arg(long, global = true, value_enum, default_value_t = PlatformKind::Ptrace)]
    pub platform: PlatformKind,
    /// Write diagnostics (and --strace output) to this file.
    #[arg(long, global = true)]
    pub debug_log: Option<PathBuf>,
    /// More verbose diagnostics.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Log every guest system call.
    #[arg(long, global = true)]
    pub strace: bool,
    /// Where warnings and errors go (runc's --log; the containerd shim
    /// reads the last error from it).
    #[arg(long, global = true)]
    pub log: Option<PathBuf>,
    /// The format of --log.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// What the overlay's upper layer, /tmp, /dev/shm and the tmpfs mounts
    /// of a sandbox may hold together: bytes, or with a K, M, G or T
    /// suffix (binary); writes past it fail with ENOSPC. `husk do`'s
    /// default: 4G or the memory limit, whichever is smaller; containers
    /// have none but the memory limit.
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub disk_limit: Option<u64>,
    /// Let containers set husk flags with dev.husk.flag.NAME annotations.
    #[arg(long, global = true)]
    pub allow_flag_override: bool,
    /// Seconds `husk do` and `husk run` wait after passing a SIGTERM on
    /// before they kill the sandbox (a second SIGTERM kills it at once).
    #[arg(long, global = true, default_value_t = 10.0, value_parser = parse_grace)]
    pub kill_grace: f64,
    /// Memory the whole sandbox may hold, in MiB: guest memory, files in
    /// its memory, buffers (`husk do`: 4 GiB or half the host's RAM,
    /// whichever is less; a container: its spec's, lowered to this).
    #[arg(long, global = true, value_name = "N")]
    pub memory_mb: Option<u64>,
    /// Processes and threads the sandbox may have together; fork and
    /// clone past it fail with EAGAIN (`husk do`: 4096; a container: its
    /// spec's pids limit, lowered to this).
    #[arg(long, global = true, value_name = "N")]
    pub pids_limit: Option<u64>,
    /// CPU time the whole sandbox may use (seconds, or 500ms, 2m …): then
    /// every process gets SIGXCPU, and SIGKILL a second later.
    #[arg(long, global = true, value_name = "SECONDS", value_parser = crate::limits::parse_duration)]
    pub cpu_limit: Option<std::time::Duration>,
    /// Wall-clock time the sandbox may run (2s, 500ms, 1m, 1h): then every
    /// process gets SIGTERM, SIGKILL after --timeout-grace, and the
    /// sandbox exits with 124.
    #[arg(long, global = true, value_name = "DURATION", value_parser = crate::limits::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Between --timeout's SIGTERM and its SIGKILL.
    #[arg(long, global = true, value_name = "DURATION", default_value = "5s", value_parser = crate::limits::parse_duration)]
    pub timeout_grace: std::time::Duration,
    /// The RLIMIT_NOFILE ceiling of every process of the sandbox (no
    /// process may raise its hard limit above it).
    #[arg(long, global = true, value_name = "N")]
    pub nofile: Option<u64>,
    /// The sandbox's network: a stack of its own whose outbound traffic
    /// passes the egress gateway (sandbox), loopback only (none), or the
    /// host's sockets, unfiltered (host: the gateway lets every
    /// destination out; the sandbox's loopback stays its own).
    #[arg(long, global = true, value_enum, default_value_t = NetworkMode::Sandbox)]
    pub network: NetworkMode,
    /// Let the sandbox reach HOST[:PORTS] (repeatable, or a comma list):
    /// HOST is `*`, a DNS name, `*.domain` (its subdomains), an address or
    /// a CIDR block; PORTS a port, a range or a list. Without one, nothing
    /// leaves the sandbox.
    #[arg(long = "egress-allow", global = true, value_name = "RULE")]
    pub egress_allow: Vec<String>,
    /// Refuse HOST[:PORTS] even when an allow rule covers it (repeatable).
    #[arg(long = "egress-deny", global = true, value_name = "RULE")]
    pub egress_deny: Vec<String>,
    /// Where the sandbox's resolver forwards the names it allows
    /// (repeatable, ADDR[:PORT]); by default the nameservers of
    /// /etc/resolv.conf.
    #[arg(long = "dns-upstream", global = true, value_name = "ADDR[:PORT]")]
    pub dns_upstream: Vec<String>,
    /// A TOML file with egress rules and limits (`allow`, `deny`,
    /// `dns-upstream`, `max-conns`, `rate`), added to the flags' rules;
    /// of a limit set both here and by a flag, the lower holds.
    #[arg(long = "egress-policy", global = true, value_name = "FILE")]
    pub egress_policy: Option<PathBuf>,
    /// Connections and datagram flows the sandbox may carry out at once
    /// (default 1024); past it a connect fails with EPERM.
    #[arg(long = "egress-max-conns", global = true, value_name = "N", value_parser = crate::egress::parse_max_conns)]
    pub egress_max_conns: Option<u64>,
    /// Bytes per second the sandbox may send out, and as many received
    /// (each direction on its own), with a K, M or G suffix (binary).
    #[arg(long = "egress-rate", global = true, value_name = "RATE", value_parser = crate::egress::parse_rate)]
    pub egress_rate: Option<u64>,
    /// Accepted for runc compatibility; husk manages cgroupfs paths.
    #[arg(long, global = true)]
    pub systemd_cgroup: bool,
    /// Accepted for runc compatibility.
    #[arg(long, global = true, hide = true)]
    pub rootless: Option<String>,
    /// Keep the sandbox's audit log in this file (appended to) or on
    /// inherited descriptor N (`fd:N`). Containers without it keep one
    /// under --root (`husk audit show ID`).
    #[arg(long, global = true, value_name = "PATH|fd:N")]
    pub audit_log: Option<String>,
    /// Let the sandbox run on when its audit log cannot be written (it
    /// stops otherwise); the choice is in the log.
    #[arg(long, global = true)]
    pub audit_fail_open: bool,
    /// Record creations, removals, renames, chmods, truncations and first
    /// writes of the paths matching GLOB (repeatable; `**` crosses
    /// folders). Default: /etc/**, /root/**, /home/*/.ssh/**,
    /// /home/*/.*rc, /usr/**, /bin/**, /sbin/**, /lib*/**, /run/secrets/**.
    #[arg(long, global = true, value_name = "GLOB")]
    pub audit_watch: Vec<String>,
    /// Record opens for reading (`file.read`) of the paths matching GLOB
    /// (repeatable; `**` crosses folders). Default: /run/secrets/**,
    /// /etc/shadow, **/.ssh/id_*, **/.aws/credentials, **/.netrc.
    #[arg(long, global = true, value_name = "GLOB")]
    pub audit_read: Vec<String>,
    /// Also send every audit record, as an RFC 5424 message, to the unix
    /// datagram socket at PATH (a syslog daemon's, e.g. /dev/log).
    #[arg(long, global = true, value_name = "PATH")]
    pub audit_syslog: Option<PathBuf>,
    /// Also record every new process (`process.fork`: parent and child).
    #[arg(long, global = true)]
    pub audit_fork: bool,
    /// Let package managers (pip, npm, apt, dpkg, cargo, known from the
    /// exec chain) connect only to HOST, a name or an address
    /// (repeatable); their other connections, and anyone's to a known
    /// public registry not named, fail with EPERM (`package.denied`).
    #[arg(long = "package-registry-allow", global = true, value_name = "HOST")]
    pub package_registry_allow: Vec<String>,
    /// Deliver a secret as /run/secrets/NAME (repeatable): NAME=VALUE,
    /// NAME=@FILE (the file's contents) or NAME=env:VAR (our variable
    /// VAR). Its value (at least 8 bytes) is redacted from the guest's
    /// output, the logs and the audit log.
    #[arg(long = "secret", global = true, value_name = "NAME=VALUE|@FILE|env:VAR", value_parser = parse_secret)]
    pub secrets: Vec<SecretArg>,
    /// NAME=DURATION: secret NAME is gone after DURATION (`90s`, `5m`,
    /// `500ms`, `1h`); open descriptors then read EIO.
    #[arg(long = "secret-ttl", global = true, value_name = "NAME=DURATION")]
    pub secret_ttl: Vec<String>,
    /// Also put secret NAME in the first process's environment.
    #[arg(long = "secret-env", global = true, value_name = "NAME")]
    pub secret_env: Vec<String>,
}

/// A `--secret` argument, whose value `{:?}` never shows.
#[derive(Clone)]
pub struct SecretArg(pub String);

impl std::fmt::Debug for SecretArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.0.split_once('=').map_or("", |(n, _)| n);
        write!(f, "SecretArg({name:?}=…)")
    }
}

fn parse_secret(s: &str) -> Result<SecretArg, String> {
    Ok(SecretArg(s.to_string()))
}

/// A grace period in seconds: from 0 to a day.
fn parse_grace(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if (0.0..=86_400.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is not between 0 and 86400 seconds"))
    }
}

/// A size in bytes: digits, optionally followed by K, M, G or T (powers
/// of 1024, as `df -h` shows them; `KiB`, `MB` … are read the same way).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size (bytes, or a number with K, M, G or T)"))?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G or T)")),
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s} is too large"))
}

impl GlobalArgs {
    /// --kill-grace as a duration.
    pub fn kill_grace(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.kill_grace)
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkMode {
    Sandbox,
    None,
    Host,
}

impl NetworkMode {
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Sandbox => "sandbox",
            NetworkMode::None => "none",
            NetworkMode::Host => "host",
        }
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformKind {
    Ptrace,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command in a fresh sandbox over the host's root filesystem
    /// (read-only below an in-memory overlay).
    Do(DoArgs),
    /// Internal: the sentry process of a sandbox.
    #[command(hide = true)]
    Boot(Box<BootArgs>),
    /// Internal: the gofer process of a sandbox.
    #[command(hide = true)]
    Gofer(GoferArgs),
    /// Print the system call table: number, name, support level, note.
    Syscalls(SyscallsArgs),
    /// Create a container from a bundle; its process waits for `start`.
    Create(CreateArgs),
    /// Run a created container's process.
    Start(IdArgs),
    /// Print a container's OCI state as JSON.
    State(IdArgs),
    /// Send a signal to a container's process (or all with --all).
    Kill(KillArgs),
    /// Remove a stopped container (or any, with --force).
    Delete(DeleteArgs),
    /// Create and start a container, then wait for it and delete it.
    Run(RunArgs),
    /// List the containers under --root.
    List(ListArgs),
    /// List a container's processes.
    Ps(PsArgs),
    /// Write a default config.json into a bundle directory.
    Spec(SpecArgs),
    /// Run another process in a running container.
    Exec(ExecArgs),
    /// Freeze every process of a container.
    Pause(IdArgs),
    /// Thaw a paused container.
    Resume(IdArgs),
    /// Change a running container's resource limits.
    Update(UpdateArgs),
    /// Print a container's resource usage as runc's JSON events.
    Events(EventsArgs),
    /// Wait for a container's process to end; print and exit with its status.
    Wait(IdArgs),
    /// Print what husk honors of the OCI spec, as runc's features JSON.
    Features,
    /// Internal: waits for a detached exec'd process and exits as it did.
    #[command(hide = true)]
    ExecWait(ExecWaitArgs),
    /// Register husk as a Docker runtime in daemon.json.
    Install(InstallArgs),
    /// Remove husk's runtime entry from daemon.json.
    Uninstall(UninstallArgs),
    /// Check or print audit logs.
    Audit(AuditArgs),
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Check a log's records, order and hash chain; exit 0 when intact,
    /// else 1, naming the first bad record.
    Verify { file: PathBuf },
    /// Print the audit log of a container.
    Show { id: String },
    /// Print a log's records as events of another schema, one JSON
    /// object a line (`ocsf`: OCSF 1.1 classes).
    Export {
        #[arg(long, value_enum)]
        format: ExportFormat,
        file: PathBuf,
    },
}

/// The schemas `husk audit export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Ocsf,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The runtime's name for `docker run --runtime=NAME`.
    #[arg(long, default_value = "husk")]
    pub runtime: String,
    /// Docker's configuration file.
    #[arg(long, default_value = "/etc/docker/daemon.json")]
    pub config: PathBuf,
    /// Flags Docker passes to husk (after `--`).
    #[arg(last = true)]
    pub flags: Vec<String>,
}

#[derive(Args, Debug)]
pub struct UninstallArgs {
    #[arg(long, default_value = "husk")]
    pub runtime: String,
    #[arg(long, default_value = "/etc/docker/daemon.json")]
    pub config: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct CreateArgs {
    /// The bundle directory (holding config.json).
    #[arg(long, short = 'b', default_value = ".")]
    pub bundle: PathBuf,
    /// Write the container's pid (the sentry's host pid) here.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Where to send a terminal's master end (process.terminal).
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    /// Accepted for runc compatibility (husk always pivots).
    #[arg(long)]
    pub no_pivot: bool,
    /// Accepted for runc compatibility.
    #[arg(long)]
    pub no_new_keyring: bool,
    /// Accepted for runc compatibility; must be 0.
    #[arg(long, default_value_t = 0)]
    pub preserve_fds: u32,
    pub id: String,
}

#[derive(Args, Debug)]
pub struct IdArgs {
    pub id: String,
}

#[derive(Args, Debug)]
pub struct KillArgs {
    /// Signal every process of the container.
    #[arg(long, short = 'a')]
    pub all: bool,
    pub id: String,
    /// A number or a name (TERM, SIGTERM); SIGTERM if absent.
    pub signal: Option<String>,
}

#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// Kill the container first if it still runs.
    #[arg(long, short = 'f')]
    pub force: bool,
    pub id: String,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub create: CreateArgs,
    /// Return after starting instead of waiting for the container.
    #[arg(long, short = 'd')]
    pub detach: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Table,
    Json,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    /// Only the ids.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct PsArgs {
    /// json: the container's host pids (as runc prints them); table: the
    /// guest's processes.
    #[arg(long, short = 'f', value_enum, default_value_t = ListFormat::Table)]
    pub format: ListFormat,
    pub id: String,
    /// Accepted for runc compatibility (ps(1) options).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub ps_args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct SpecArgs {
    /// The bundle directory to write config.json into.
    #[arg(long, short = 'b', default_value = ".")]
    pub bundle: PathBuf,
}

#[derive(Args, Debug)]
pub struct DoArgs {
    /// Use DIR as the root filesystem instead of the host's /.
    #[arg(long, value_name = "DIR")]
    pub rootfs: Option<PathBuf>,
    /// HOST:GUEST[:ro|:rw]: show host directory HOST at GUEST, served by a
    /// gofer of its own confined to it; writes there reach the host
    /// (`:ro`: they fail with EROFS). Repeatable.
    #[arg(long = "volume", short = 'v', value_name = "HOST:GUEST[:ro|:rw]")]
    pub volumes: Vec<String>,
    /// The guest's working directory (default: the current directory where
    /// the sandbox shows it, else /).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Set NAME=VALUE in the guest's environment (repeatable). The guest
    /// gets PATH, HOME, USER, LOGNAME, HOSTNAME, LANG, TERM and LC_*, not
    /// husk's environment.
    #[arg(long = "env", short = 'e', value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Pass the caller's variable NAME on (repeatable; `*`: the whole
    /// environment).
    #[arg(long = "env-keep", value_name = "NAME")]
    pub env_keep: Vec<String>,
    /// [HOSTIP:]HOSTPORT:GUESTPORT[/tcp]: connections to HOSTPORT in the
    /// network namespace husk was started in reach the guest's listener on
    /// GUESTPORT (on the wildcard or eth0 address); with no guest listener
    /// they are refused. HOSTIP defaults to every IPv4 address; an IPv6
    /// one goes in brackets and reaches IPv6 guest listeners only.
    /// Repeatable; needs --network sandbox or host.
    #[arg(long = "publish", short = 'p', value_name = "HOSTPORT:GUESTPORT")]
    pub publish: Vec<String>,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct BootArgs {
    /// The descriptor of the gofer connection.
    #[arg(long)]
    pub gofer_fd: i32,
    /// The working directory inside the sandbox.
    #[arg(long, default_value = "/")]
    pub cwd: std::ffi::OsString,
    /// The container process's user and group (default: the caller's).
    #[arg(long)]
    pub uid: Option<u32>,
    #[arg(long)]
    pub gid: Option<u32>,
    /// A supplementary group of the process (repeatable).
    #[arg(long = "group")]
    pub groups: Vec<u32>,
    /// RESOURCE=SOFT:HARD: a resource limit of the process (repeatable).
    #[arg(long = "rlimit")]
    pub rlimits: Vec<String>,
    /// E:P:I:B:A: the process's capability sets, in hex (else those of
    /// its uid).
    #[arg(long)]
    pub caps: Option<String>,
    /// The process may gain no privileges (noNewPrivileges).
    #[arg(long)]
    pub no_new_privs: bool,
    /// HEX: a classic BPF seccomp program (sock_filter bytes) installed
    /// on every container process (linux.seccomp, compiled).
    #[arg(long)]
    pub seccomp_filter: Option<String>,
    /// The seccomp program's actions are logged (SECCOMP_FILTER_FLAG_LOG).
    #[arg(long)]
    pub seccomp_log: bool,
    /// KEY=VALUE: a sysctl of the sandbox's (repeatable).
    #[arg(long = "sysctl")]
    pub sysctls: Vec<String>,
    /// QUOTA:PERIOD: the CPU limit /sys/fs/cgroup/cpu.max shows.
    #[arg(long)]
    pub cpu_max: Option<String>,
    /// The sandbox's process and thread limit (also what
    /// /sys/fs/cgroup/pids.max shows).
    #[arg(long)]
    pub pids_max: Option<u64>,
    /// The memory limit (bytes) /sys/fs/cgroup/memory.max shows (else the
    /// guest memory size).
    #[arg(long)]
    pub memory_max: Option<u64>,
    /// The sandbox's host name (default: the host's).
    #[arg(long)]
    pub hostname: Option<String>,
    /// FD=PATH: mount the directory served on gofer connection FD at PATH.
    #[arg(long = "bind")]
    pub binds: Vec<String>,
    /// FD=PATH: mount the single file served on gofer connection FD at PATH.
    #[arg(long = "bind-file")]
    pub file_binds: Vec<String>,
    /// PATH: hide PATH from the guest (OCI maskedPaths).
    #[arg(long = "masked-path")]
    pub masked_paths: Vec<String>,
    /// PATH: make PATH read-only in the guest (OCI readonlyPaths).
    #[arg(long = "readonly-path")]
    pub readonly_paths: Vec<String>,
    /// PATH=MODE (octal): mount a tmpfs at PATH.
    #[arg(long)]
    pub tmpfs: Vec<String>,
    /// A file with the guest's environment (NUL-terminated entries);
    /// without it the guest's is empty, never the sentry's own.
    #[arg(long)]
    pub env_fd: Option<i32>,
    /// A network namespace (an open descriptor) to join instead of a new one.
    #[arg(long)]
    pub netns_fd: Option<i32>,
    /// `husk do --publish`'s mappings (repeatable).
    #[arg(long)]
    pub publish: Vec<String>,
    /// The root filesystem refuses writes (EROFS) instead of keeping them
    /// in memory.
    #[arg(long)]
    pub read_only_root: bool,
    /// A listening control socket: the container process waits for `start`.
    #[arg(long, requires = "ready_fd")]
    pub control_fd: Option<i32>,
    /// Where to report that the container process is loaded.
    #[arg(long, requires = "control_fd")]
    pub ready_fd: Option<i32>,
    /// The audit log to write, opened for us.
    #[arg(long, requires = "audit_sandbox")]
    pub audit_fd: Option<i32>,
    /// The sandbox's id in its audit records.
    #[arg(long, requires = "audit_fd")]
    pub audit_sandbox: Option<String>,
    /// The host folder of the root filesystem, for the audit log.
    #[arg(long, default_value = "")]
    pub audit_rootfs: String,
    /// How the guest's environment was made, for the audit log.
    #[arg(long)]
    pub audit_env: Option<String>,
    /// A connected unix datagram socket every record also goes to.
    #[arg(long, requires = "audit_fd")]
    pub audit_syslog_fd: Option<i32>,
    /// The sandbox's secrets, on an inherited descriptor (never argv).
    #[arg(long)]
    pub secrets_fd: Option<i32>,
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct GoferArgs {
    /// The root filesystem to serve.
    #[arg(long)]
    pub rootfs: PathBuf,
    /// The descriptor of the sentry connection.
    #[arg(long)]
    pub sock_fd: i32,
    /// Refuse every modification.
    #[arg(long)]
    pub read_only: bool,
}

#[derive(Args, Debug)]
pub struct SyscallsArgs {
    /// Only the rows with this support level.
    #[arg(long, value_enum)]
    pub level: Option<LevelFilter>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelFilter {
    Full,
    Partial,
    Unimplemented,
}

#[derive(Args, Debug)]
pub struct ExecArgs {
    /// The process as OCI JSON (args, env, cwd, user, terminal).
    #[arg(long, short = 'p')]
    pub process: Option<PathBuf>,
    /// Return once the process runs; --pid-file names its waiter.
    #[arg(long, short = 'd')]
    pub detach: bool,
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    #[arg(long)]
    pub console_socket: Option<PathBuf>,
    #[arg(long, short = 't')]
    pub tty: bool,
    #[arg(long)]
    pub cwd: Option<String>,
    /// KEY=VALUE added to the environment.
    #[arg(long, short = 'e')]
    pub env: Vec<String>,
    /// UID[:GID], numeric.
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// Accepted for runc compatibility.
    #[arg(long)]
    pub no_new_privs: bool,
    /// Accepted for runc compatibility.
    #[arg(long, hide = true)]
    pub process_label: Option<String>,
    /// Accepted for runc compatibility.
    #[arg(long, hide = true)]
    pub apparmor: Option<String>,
    pub id: String,
    /// The command, when there is no --process.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct ExecWaitArgs {
    /// The control connection the exec'd process's status comes on.
    #[arg(long)]
    pub fd: i32,
}

#[derive(Args, Debug)]
pub struct UpdateArgs {
    /// OCI linux.resources JSON: a file, or - for stdin.
    #[arg(long, short = 'r')]
    pub resources: Option<String>,
    pub id: String,
}

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Print one stats event and exit.
    #[arg(long)]
    pub stats: bool,
    /// Seconds between stats events.
    #[arg(long, default_value = "5s")]
    pub interval: String,
    pub id: String,
}

/// The global flags `args` give (tests of what they mean).
#[cfg(test)]
pub fn test_globals(args: &[&str]) -> GlobalArgs {
    let mut argv = vec!["husk"];
    argv.extend_from_slice(args);
    argv.extend_from_slice(&["state", "x"]);
    Cli::parse_from(argv).global
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("2k"), Ok(2048));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
