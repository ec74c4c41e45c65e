//! `husk boot`: the sentry process. Runs the sandbox and exits with its
//! init process's status, or dies of the same signal.

use crate::cli::{BootArgs, GlobalArgs};
use crate::sandbox::inherited_fd;
use anyhow::Context as _;
use husk_sentry::api::auth::caps::Capabilities;
use husk_sentry::api::boot::audit::AuditConfig;
use husk_sentry::api::boot::control::ControlConfig;
use husk_sentry::api::boot::launch::{LaunchError, ProcessSpec};
use husk_sentry::api::boot::{boot, BindMount, BootConfig, BootError};
use husk_sentry::api::kernel::limits::CgroupLimits;
use husk_sentry::api::kernel::limits::{Rlimit, RLIMIT_NLIMITS};
use husk_sentry::api::kernel::ExitStatus;
use std::io::Read as _;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// A private, close-on-exec duplicate of one of our standard streams.
fn dup_stdio(fd: i32) -> anyhow::Result<OwnedFd> {
    // SAFETY: fcntl F_DUPFD_CLOEXEC creates a new descriptor we own.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("duplicating stdio {fd}"));
    }
    // SAFETY: `new` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn host_name() -> Vec<u8> {
    nix::unistd::gethostname().map(|h| h.as_bytes().to_vec()).unwrap_or_else(|_| b"husk".to_vec())
}

/// `--bind FD=PATH` arguments: the gofer connections and where they go.
/// `--bind FD=PATH` (directories) and `--bind-file FD=PATH` (single files).
fn binds(dirs: &[String], files: &[String]) -> anyhow::Result<Vec<BindMount>> {
    let dirs = dirs.iter().map(|b| (b, false));
    let files = files.iter().map(|b| (b, true));
    dirs.chain(files)
        .map(|(b, file)| {
            let (fd, path) = b.split_once('=').with_context(|| format!("--bind {b:?}: want FD=PATH"))?;
            let fd = fd.parse().with_context(|| format!("--bind {b:?}: bad descriptor"))?;
            Ok(BindMount { gofer: inherited_fd(fd)?, path: path.as_bytes().to_vec(), file })
        })
        .collect()
}

/// `--rlimit RESOURCE=SOFT:HARD` arguments (RESOURCE is Linux's number).
fn rlimits(args: &[String]) -> anyhow::Result<Vec<(usize, Rlimit)>> {
    args.iter()
        .map(|r| {
            let bad = || format!("--rlimit {r:?}: want RESOURCE=SOFT:HARD");
            let (res, limits) = r.split_once('=').with_context(bad)?;
            let (soft, hard) = limits.split_once(':').with_context(bad)?;
            let res: usize = res.parse().with_context(bad)?;
            if res >= RLIMIT_NLIMITS {
                anyhow::bail!("--rlimit {r:?}: no resource {res}");
            }
            Ok((res, Rlimit { cur: soft.parse().with_context(bad)?, max: hard.parse().with_context(bad)? }))
        })
        .collect()
}

/// `--seccomp-filter HEX`: the program, checked as the kernel checks a
/// guest's.
fn seccomp_program(hex: &str, log: bool) -> anyhow::Result<husk_sentry::api::boot::ContainerSeccomp> {
    use husk_sentry::api::kernel::seccomp::bpf::{Insn, Program};
    let bad = || format!("--seccomp-filter: want hex of 8-byte instructions, got {} characters", hex.len());
    if !hex.is_ascii() || hex.len() % (2 * Insn::SIZE) != 0 {
        anyhow::bail!(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .with_context(bad)?;
    let insns = Insn::decode_all(&bytes);
    let program = Program::new(insns).context("--seccomp-filter")?;
    Ok(husk_sentry::api::boot::ContainerSeccomp { program, log })
}

/// `--tmpfs PATH=MODE` arguments.
fn tmpfs(args: &[String]) -> anyhow::Result<Vec<(Vec<u8>, u32)>> {
    args.iter()
        .map(|t| {
            let (path, mode) = t.rsplit_once('=').with_context(|| format!("--tmpfs {t:?}: want PATH=MODE"))?;
            let mode = u32::from_str_radix(mode, 8).with_context(|| format!("--tmpfs {t:?}: bad mode"))?;
            Ok((path.as_bytes().to_vec(), mode))
        })
        .collect()
}

/// The guest environment handed over in a file: NUL-terminated entries.
/// (A container's environment must never be the sentry's own: the host's
/// loader would act on an image's LD_PRELOAD.)
fn read_env(fd: OwnedFd) -> anyhow::Result<Vec<Vec<u8>>> {
    let mut data = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut data).context("reading the guest environment")?;
    Ok(data.split(|&b| b == 0).filter(|e| !e.is_empty()).map(<[u8]>::to_vec).collect())
}

pub fn run(g: &GlobalArgs, args: BootArgs) -> anyhow::Result<i32> {
    // First: the descriptor is closed before anything else starts.
    let secrets = args.secrets_fd.map(inherited_fd).transpose()?.map(crate::secrets::read_fd).transpose()?;
    crate::egress::raise_nofile();
    let cfg = BootConfig {
        gofer: inherited_fd(args.gofer_fd)?,
        init: ProcessSpec {
            argv: args.command.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env: match args.env_fd {
                Some(fd) => read_env(inherited_fd(fd)?)?,
                None => Vec::new(),
            },
            cwd: args.cwd.as_bytes().to_vec(),
            uid: args.uid.unwrap_or_else(|| nix::unistd::getuid().as_raw()),
            gid: args.gid.unwrap_or_else(|| nix::unistd::getgid().as_raw()),
            groups: args.groups.clone(),
            rlimits: rlimits(&args.rlimits)?,
            stdio: [dup_stdio(0)?, dup_stdio(1)?, dup_stdio(2)?],
            caps: args
                .caps
                .as_deref()
                .map(|c| Capabilities::decode(c).with_context(|| format!("--caps {c:?}: want E:P:I:B:A in hex")))
                .transpose()?,
            no_new_privs: args.no_new_privs,
            // A container's terminal (not `husk do`'s, which stays the
            // host's, with the host's job control).
            console: args.control_fd.is_some() && nix::unistd::isatty(0).unwrap_or(false),
        },
        strace: g.strace,
        memory_limit: g.memory_mb.unwrap_or(4096).saturating_mul(1 << 20),
        disk_limit: g.disk_limit,
        hostname: args.hostname.map(String::into_bytes).unwrap_or_else(host_name),
        sysctls: args
            .sysctls
            .iter()
            .map(|s| {
                let (k, v) = s.split_once('=').with_context(|| format!("--sysctl {s:?}: want KEY=VALUE"))?;
                Ok((k.to_string(), v.to_string()))
            })
            .collect::<anyhow::Result<_>>()?,
        cgroup_limits: CgroupLimits {
            cpu_max: args
                .cpu_max
                .as_deref()
                .map(|c| {
                    let (q, p) = c.split_once(':').with_context(|| format!("--cpu-max {c:?}: want QUOTA:PERIOD"))?;
                    Ok::<_, anyhow::Error>((q.parse()?, p.parse()?))
                })
                .transpose()
                .context("--cpu-max")?,
            pids_max: args.pids_max,
            memory_max: args.memory_max,
        },
        limits: husk_sentry::api::kernel::watchdog::Limits {
            cpu: g.cpu_limit,
            timeout: g.timeout,
            timeout_grace: g.timeout_grace,
        },
        nofile: g.nofile,
        binds: binds(&args.binds, &args.file_binds)?,
        tmpfs: tmpfs(&args.tmpfs)?,
        masked_paths: args.masked_paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
        readonly_paths: args.readonly_paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
        read_only_root: args.read_only_root,
        netns: args.netns_fd.map(inherited_fd).transpose()?,
        network: crate::egress::network(g)?,
        publish: crate::egress::publish(g, &args.publish)?,
        control: match (args.control_fd, args.ready_fd) {
            (Some(c), Some(r)) => Some(ControlConfig { listener: inherited_fd(c)?, ready: inherited_fd(r)? }),
            _ => None,
        },
        audit: match (args.audit_fd, args.audit_sandbox) {
            (Some(fd), Some(sandbox)) => Some(AuditConfig {
                sink: inherited_fd(fd)?,
                sandbox,
                fail_open: g.audit_fail_open,
                fork: g.audit_fork,
                syslog: args.audit_syslog_fd.map(inherited_fd).transpose()?,
                rootfs: args.audit_rootfs,
                env: args.audit_env,
                watch: if g.audit_watch.is_empty() {
                    husk_sentry::api::audit::glob::DEFAULT_WATCH.iter().map(|g| g.to_string()).collect()
                } else {
                    g.audit_watch.clone()
                },
                read: if g.audit_read.is_empty() {
                    husk_sentry::api::audit::glob::DEFAULT_READ.iter().map(|g| g.to_string()).collect()
                } else {
                    g.audit_read.clone()
                },
            }),
            _ => None,
        },
        secrets: secrets.unwrap_or_default(),
        seccomp: args.seccomp_filter.as_deref().map(|h| seccomp_program(h, args.seccomp_log)).transpose()?,
        package_registry_allow: g.package_registry_allow.clone(),
    };
    match boot(cfg) {
        Ok(ExitStatus::Code(c)) => Ok(c),
        Ok(ExitStatus::Signal(s)) => crate::sandbox::die_of(s),
        Err(BootError::Launch(LaunchError::Exec { name, errno: e })) => {
            let name = husk_sentry::api::audit::redact::redact_text(&name);
            eprintln!("husk: {name}: {}", std::io::Error::from_raw_os_error(e.0));
            Ok(if e.0 == libc::ENOENT { 127 } else { 126 })
        }
        Err(e) => Err(e).context("sandbox failed"),
    }
}
