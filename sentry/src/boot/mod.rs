//! The host side of the sentry (its counterpart of runsc/boot): booting
//! a sandbox (the MemoryFile and platform, the root filesystem — gofer
//! lower layer under a tmpfs upper layer —, the sentry's own filesystems,
//! the init process), confining the sentry process, its seccomp filter,
//! the host console and the host signals it forwards. Everything here sits
//! above the kernel and may use any part of the sentry.

pub mod audit;
pub(crate) mod confine;
pub(crate) mod console;
pub mod control;
pub mod host_signals;
pub mod launch;
pub(crate) mod seccomp;
pub mod secrets;

use crate::abi::Errno;
use crate::auth::Credentials;
use crate::boot::confine::Keep;
use crate::boot::control::{ControlConfig, Lifecycle};
use crate::fs::devpts::Devpts;
use crate::fs::disk::DiskBudget;
use crate::fs::egress::{Egress, Gateway};
use crate::fs::inbound::Mode;
use crate::fs::read_only::ReadOnly;
use crate::fs::{devfs, gofer, overlay, procfs, tmpfs::Tmpfs};
use crate::host::outer::Outer;
use crate::kernel::{ExitStatus, Kernel, KernelOptions};
use crate::mm::MemoryFile;
use crate::platform::ptrace::PtracePlatform;
use crate::platform::Platform;
use crate::vfs::walk::Walker;
use crate::vfs::{NewNode, Node, SetAttr, SetTime};
use husk_netstack::dns::{Config as ResolverConfig, Resolver};
use launch::{LaunchError, ProcessSpec};
use std::os::fd::OwnedFd;
use std::sync::{mpsc, Arc};

/// What the runtime tells the sentry to run.
pub struct BootConfig {
    /// The sentry's end of the gofer connection.
    pub gofer: OwnedFd,
    /// The sandbox's first process.
    pub init: ProcessSpec,
    pub strace: bool,
    /// Committed guest memory allowed, in bytes.
    pub memory_limit: u64,
    /// What the overlay's upper layer, /tmp, /dev/shm and the tmpfs mounts
    /// may hold together, in bytes (`--disk-limit`); none: only the
    /// memory limit bounds them.
    pub disk_limit: Option<u64>,
    pub hostname: Vec<u8>,
    /// linux.sysctl: (key, value), applied where the sandbox has a view.
    pub sysctls: Vec<(String, String)>,
    /// The host cgroup's CPU and pids limits, for /sys/fs/cgroup; the
    /// pids limit is also the sandbox's own (`kernel::pids`).
    pub cgroup_limits: crate::kernel::limits::CgroupLimits,
    /// The CPU time and wall-clock limits of the whole sandbox.
    pub limits: crate::kernel::watchdog::Limits,
    /// The RLIMIT_NOFILE ceiling of every process, if lower than
    /// `fs.nr_open`.
    pub nofile: Option<u64>,
    /// Bind mounts, each served by a gofer of its own.
    pub binds: Vec<BindMount>,
    /// Paths hidden from the guest (OCI maskedPaths): a directory shows
    /// empty and read-only, a file as /dev/null.
    pub masked_paths: Vec<Vec<u8>>,
    /// Paths made read-only (OCI readonlyPaths).
    pub readonly_paths: Vec<Vec<u8>>,
    /// tmpfs mounts beyond the sentry's own: where, and the root's mode.
    pub tmpfs: Vec<(Vec<u8>, u32)>,
    /// A network namespace to join instead of creating one.
    pub netns: Option<OwnedFd>,
    /// What the sandbox's sockets may reach besides each other.
    pub network: Network,
    /// `husk do --publish`: the host ports that reach guest listeners (a
    /// container's listeners are all reachable, as under runc).
    pub publish: Vec<crate::fs::inbound::Publish>,
    /// Mount the root filesystem's gofer directly, without the in-memory
    /// upper layer: writes fail with EROFS.
    pub read_only_root: bool,
    /// With a control socket, the init process waits for `start` (the OCI
    /// lifecycle); without one it runs at once (`husk do`).
    pub control: Option<ControlConfig>,
    /// The audit log to keep, if any.
    pub audit: Option<audit::AuditConfig>,
    /// Secrets for /run/secrets, redacted from all that leaves.
    pub secrets: Vec<secrets::SecretSpec>,
    /// The only hosts package managers may reach
    /// (`--package-registry-allow`); empty: no such limit.
    pub package_registry_allow: Vec<String>,
    /// The container's seccomp profile (OCI linux.seccomp), compiled:
    /// installed on every process the runtime starts in the sandbox.
    pub seccomp: Option<ContainerSeccomp>,
}

/// A container's seccomp program and whether its actions are logged.
#[derive(Clone, Debug)]
pub struct ContainerSeccomp {
    pub program: crate::kernel::seccomp::bpf::Program,
    pub log: bool,
}

/// The sandbox's network beyond its own loopback.
#[derive(Debug)]
pub enum Network {
    /// Nothing: every other destination is unreachable.
    None,
    /// Connections the policy allows leave through the egress gateway,
    /// on host sockets of the namespace the sentry started in (or joined).
    Sandbox(EgressConfig),
}

/// The egress gateway's configuration.
#[derive(Debug)]
pub struct EgressConfig {
    /// The address and CIDR rules (name rules are parsed but kept by `names`).
    pub policy: husk_netstack::egress::Policy,
    /// The names the sandbox's resolver answers.
    pub names: husk_netstack::dns::NamePolicy,
    /// Where the resolver forwards allowed names, in order.
    pub upstreams: Vec<std::net::SocketAddr>,
    /// Connections at once and bytes a second.
    pub limits: crate::fs::egress::Limits,
    /// `--network host`: every destination is allowed, the always-denied
    /// ranges and other DNS servers included; the sandbox's loopback
    /// stays its own.
    pub unfiltered: bool,
}

/// Why a sandbox could not start.
#[derive(Debug, thiserror::Error)]
pub enum BootError {
    #[error("cannot create guest memory: {0}")]
    Memory(std::io::Error),
    #[error("platform: {0}")]
    Platform(#[from] crate::platform::PlatformError),
    #[error("root filesystem: {0}")]
    Root(Errno),
    #[error("mounting {0}: {1}")]
    Mount(String, Errno),
    #[error("{0}")]
    Launch(#[from] LaunchError),
    #[error("confinement: {0}")]
    Confine(#[from] crate::boot::seccomp::SeccompError),
    #[error("{0}")]
    Isolate(#[from] crate::boot::confine::ConfineError),
    #[error("starting a sentry thread: {0}")]
    Thread(std::io::Error),
    #[error("egress gateway: {0}")]
    Egress(String),
    #[error("the init task ended without a status")]
    Lost,
    #[error("{0}")]
    Audit(#[from] crate::audit::AuditError),
    #[error("audit log: cannot record sandbox.start")]
    AuditStart,
    #[error("secrets: {0}")]
    Secrets(String),
}

/// Boots the sandbox and runs its init process to completion. Under a
/// control socket, a failure before the init process is loaded is also
/// reported to the runtime waiting on `ready`.
pub fn boot(mut cfg: BootConfig) -> Result<ExitStatus, BootError> {
    // Before anything is logged or written: every line from here on is
    // redacted.
    let redactor = crate::audit::redact::Redactor::new(&secrets::redacted(&cfg.secrets)).map_err(BootError::Secrets)?;
    if let Some(r) = redactor {
        crate::audit::redact::install(r);
        secrets::protect_memory().map_err(|e| BootError::Secrets(format!("making the sentry non-dumpable: {e}")))?;
    }
    let (listener, life) = match cfg.control.take() {
        Some(c) => (Some(c.listener), Some(Arc::new(Lifecycle::new(c.ready)))),
        None => (None, None),
    };
    let result = match audit::open(&mut cfg) {
        Ok(log) => {
            let result = boot_with(cfg, listener, life.clone(), log.clone());
            if let Some(log) = &log {
                audit::close(log, &result);
            }
            result.map(|(status, reason)| match reason {
                // As timeout(1), whatever the guest's own status.
                crate::audit::ExitReason::Timeout => ExitStatus::Code(crate::kernel::watchdog::TIMEOUT_STATUS),
                _ => status,
            })
        }
        Err(e) => Err(e),
    };
    match (&life, &result) {
        (Some(l), Ok(status)) => l.exited(*status),
        (Some(l), Err(e)) => l.report(Err(e.to_string())),
        (None, _) => {}
    }
    result
}

fn boot_with(
    mut cfg: BootConfig,
    listener: Option<OwnedFd>,
    life: Option<Arc<Lifecycle>>,
    audit_log: Option<Arc<crate::audit::AuditLog>>,
) -> Result<(ExitStatus, crate::audit::ExitReason), BootError> {
    let container = life.is_some();
    crate::boot::host_signals::block(container).map_err(|e| BootError::Thread(e.into()))?;
    let memory = Arc::new(MemoryFile::new(cfg.memory_limit).map_err(BootError::Memory)?);
    // Every page the sandbox holds is charged to the MemoryFile's
    // accountant: filesystems, pipes and sockets made from here on find it.
    crate::mm::accounting::install(memory.accountant().clone());
    let platform: Arc<dyn Platform> = Arc::new(PtracePlatform::new(memory.fd())?);
    let lower = gofer::new_gofer_fs(cfg.gofer, false).map_err(BootError::Root)?;
    let disk = cfg.disk_limit.map(DiskBudget::new);
    let root = writable_root(lower, disk.clone())?;
    // Mount points are made while the root still takes them (in its
    // in-memory layer, never on the host).
    let dirs = cfg.binds.iter().filter(|b| !b.file).map(|b| b.path.as_slice());
    let secrets_dir = (!cfg.secrets.is_empty()).then_some(crate::fs::secrets::MOUNT_POINT);
    let extra = dirs.chain(cfg.tmpfs.iter().map(|(p, _)| p.as_slice())).chain(secrets_dir);
    make_mount_points(&root, SYSTEM_MOUNT_POINTS.iter().copied().chain(extra));
    let resolver = matches!(cfg.network, Network::Sandbox(_)).then_some(RESOLV_CONF);
    let files = cfg.binds.iter().filter(|b| b.file).map(|b| b.path.as_slice());
    make_file_mount_points(&root, resolver.into_iter().chain(files));
    let root = if cfg.read_only_root { ReadOnly::wrap(root) } else { root };
    let opts = KernelOptions { hostname: cfg.hostname.clone(), protect_init: container };
    let kernel = Arc::new(Kernel::new(platform, memory, root, Tmpfs::new(0o600, 0, 0), opts));
    crate::syscalls::register(&kernel);
    if let Some(log) = &audit_log {
        kernel.set_audit_log(log.clone());
    }
    kernel.set_package_registry_allow(cfg.package_registry_allow.clone());
    if let Some(d) = &disk {
        report_disk_breaches(&kernel, d);
        let _ = kernel.ext::<crate::fs::disk::SandboxDisk>().0.set(d.clone());
    }
    if cfg.strace {
        kernel.attach_syscall_observer(Arc::new(crate::syscalls::strace::Strace));
    }
    let devpts = kernel.ext::<Devpts>();
    devpts.attach(Arc::downgrade(&kernel));
    kernel.set_terminals(devpts);
    kernel.net().set_buffer_charge(memory_charge(&kernel));
    for (key, value) in &cfg.sysctls {
        if let Err(e) = crate::kernel::sysctl::set(&kernel, key, value) {
            log::warn!("sysctl ignored: {e}");
        }
    }
    *kernel.cgroup_limits().lock() = cfg.cgroup_limits;
    if let Some(n) = cfg.nofile {
        kernel.nofile().set(n);
    }
    mount_system_filesystems(&kernel, &disk);
    if resolver.is_some() {
        if let Err(e) = mount_resolv_conf(&kernel) {
            log::warn!("cannot present the sandbox's /etc/resolv.conf: {e}");
        }
    }
    for b in cfg.binds {
        let fail = |e| BootError::Mount(String::from_utf8_lossy(&b.path).into_owned(), e);
        let mut fs = gofer::new_gofer_fs(b.gofer, true).map_err(fail)?;
        if b.file {
            fs = fs.lookup(husk_gofer::protocol::SINGLE_FILE).map_err(fail)?;
        } else {
            make_mount_point_in_mounts(&kernel, &b.path);
        }
        mount_at(&kernel, &b.path, fs, "9p").map_err(fail)?;
    }
    for (path, mode) in cfg.tmpfs {
        let fail = |e| BootError::Mount(String::from_utf8_lossy(&path).into_owned(), e);
        mount_at(&kernel, &path, Tmpfs::with_disk(disk.clone(), mode & 0o7777, 0, 0), "tmpfs").map_err(fail)?;
    }
    // A sentry holding secrets is not dumpable (see `boot`), nor are its
    // stubs: it keeps the capability that seizes their new threads.
    let keep = if cfg.secrets.is_empty() { Keep::Nothing } else { Keep::Ptrace };
    mount_secrets(&kernel, cfg.secrets, &mut cfg.init)?;
    *kernel.ext::<launch::ContainerFilter>().0.lock() = cfg.seccomp.take();
    restrict_paths(&kernel, &cfg.readonly_paths, &cfg.masked_paths);
    crate::host::prime_info();
    let stdio_names = [host_fd_name(0), host_fd_name(1), host_fd_name(2)];
    let joined = cfg.netns.is_some();
    if let Some(ns) = cfg.netns {
        crate::boot::confine::join_network(ns)?;
    }
    if container {
        mirror_port_sysctl(&cfg.sysctls);
    }
    // The gateway's thread stays in the outer network namespace when the
    // sentry leaves it; whether the sandbox gets a way out is decided when
    // its init starts (see `Uplink`).
    let net = match &cfg.network {
        Network::Sandbox(_) if container || !cfg.publish.is_empty() => crate::boot::seccomp::Net::Inbound,
        Network::Sandbox(_) => crate::boot::seccomp::Net::Egress,
        Network::None => crate::boot::seccomp::Net::None,
    };
    let uplink = match cfg.network {
        Network::Sandbox(egress) => {
            let outer = Outer::start(|| crate::boot::confine::confine_thread().map_err(|e| e.to_string()))
                .map_err(BootError::Egress)?;
            let resolver = Resolver::new(egress.names, egress.upstreams, ResolverConfig::default());
            let mut gateway = Gateway::new(egress.policy, resolver, outer, egress.limits);
            if container {
                gateway = gateway.with_inbound(Mode::Mirror).map_err(BootError::Egress)?;
            } else if !cfg.publish.is_empty() {
                gateway = gateway.with_inbound(Mode::Publish(cfg.publish)).map_err(BootError::Egress)?;
            }
            Some(Uplink::new(if egress.unfiltered { gateway.unfiltered() } else { gateway }))
        }
        Network::None => None,
    };
    crate::boot::confine::isolate(!joined, keep)?;
    // Threads started from here on inherit the confinement; one started
    // before it would keep the host's root, mounts and capabilities.
    if let Some(log) = &audit_log {
        crate::audit::AuditLog::start_flusher(log)
            .map_err(|e| crate::audit::AuditError(format!("its flusher thread: {e}")))?;
    }
    crate::boot::host_signals::start_forwarder(Arc::downgrade(&kernel), container, cfg.init.console)
        .map_err(BootError::Thread)?;
    if let (Some(l), Some(g)) = (listener, &life) {
        crate::boot::control::serve(Arc::downgrade(&kernel), l, g.clone()).map_err(BootError::Thread)?;
    }
    crate::boot::seccomp::confine_sentry(net)?;

    let init = cfg.init;
    let limits = cfg.limits;
    let (tx, rx) = mpsc::channel();
    let k = kernel.clone();
    std::thread::Builder::new()
        .name("task-1".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let r = run_init(k, init, stdio_names, life, uplink, limits);
            let _ = tx.send(r);
        })
        .map_err(BootError::Thread)?;
    rx.recv().map_err(|_| BootError::Lost)?
}

/// The sandbox's way out, connected when its init starts: only then has a
/// container engine wired the outer network namespace (its hooks run
/// after `create`). An outer namespace with no route but loopback's (an
/// engine's `--network none`) leaves the sandbox loopback alone, as runsc
/// mirrors the interfaces it finds.
struct Uplink {
    gateway: Gateway,
    /// The outer namespace's `/proc/net/route`, opened before the sentry
    /// leaves the host's filesystem; read again when the init starts.
    routes: Option<std::fs::File>,
}

impl Uplink {
    fn new(gateway: Gateway) -> Uplink {
        let routes = std::fs::File::open("/proc/thread-self/net/route");
        if let Err(e) = &routes {
            log::warn!("the outer network namespace's routes cannot be read ({e}): the sandbox gets loopback alone");
        }
        Uplink { gateway, routes: routes.ok() }
    }

    /// Installs the gateway and the sandbox's interface, if the outer
    /// namespace routes anywhere.
    fn connect(self, kernel: &Kernel) {
        let table = self.routes.and_then(|f| read_from_start(&f)).unwrap_or_default();
        if !routes_beyond_loopback(&table) {
            log::info!("the outer network namespace has no route but loopback's: the sandbox gets loopback alone");
            return;
        }
        kernel.ext::<Egress>().install(self.gateway);
        husk_netstack::iface::install_uplink(husk_netstack::iface::Uplink::SANDBOX);
    }
}

/// A container's `net.ipv4.ip_unprivileged_port_start` (Docker sets 0)
/// applied to its outer network namespace too, as runc applies it there:
/// the host listeners that make the guest's ports reachable (`inbound`)
/// are bound there by the sentry, which holds no capabilities.
fn mirror_port_sysctl(sysctls: &[(String, String)]) {
    const KEY: &str = "net.ipv4.ip_unprivileged_port_start";
    let Some((_, value)) = sysctls.iter().find(|(k, _)| k == KEY) else { return };
    if value.trim().parse::<u16>().is_err() {
        return;
    }
    if let Err(e) = std::fs::write("/proc/sys/net/ipv4/ip_unprivileged_port_start", value.trim()) {
        log::warn!("{KEY}={value} in the container's network namespace: {e}");
    }
}

/// The whole text of `f`, read from its start (a procfs file regenerates
/// its contents on each pass).
fn read_from_start(f: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = f.read_at(&mut buf, u64::try_from(text.len()).ok()?).ok()?;
        if n == 0 {
            return String::from_utf8(text).ok();
        }
        text.extend_from_slice(&buf[..n]);
    }
}

/// Whether a `/proc/net/route` text has a route through an interface other
/// than `lo`.
fn routes_beyond_loopback(table: &str) -> bool {
    table.lines().skip(1).filter_map(|l| l.split_whitespace().next()).any(|iface| iface != "lo")
}

/// The netstack's socket buffers, charged to the sandbox's memory.
struct NetCharge(Arc<crate::mm::accounting::Accountant>);

impl husk_netstack::BufferCharge for NetCharge {
    fn try_charge(&self, bytes: u64) -> bool {
        self.0.try_charge_data(bytes)
    }

    fn uncharge(&self, bytes: u64) {
        self.0.uncharge(bytes);
    }
}

fn memory_charge(kernel: &Kernel) -> Arc<dyn husk_netstack::BufferCharge> {
    Arc::new(NetCharge(kernel.memory().accountant().clone()))
}

/// A bind mount: a host directory or single file served by the gofer on
/// connection `gofer`, mounted at `path`.
pub struct BindMount {
    pub gofer: OwnedFd,
    pub path: Vec<u8>,
    /// A single file (the gofer serves a directory holding just it).
    pub file: bool,
}

/// Writes a `limit.disk` record at the first refusal of each breach
/// episode of the disk budget, naming the process whose write it refused.
fn report_disk_breaches(kernel: &Arc<Kernel>, disk: &DiskBudget) {
    let k = Arc::downgrade(kernel);
    disk.set_on_breach(Box::new(move |b| {
        let Some(kernel) = k.upgrade() else { return };
        let t = crate::kernel::thread::current();
        let _ = kernel.audit(|| crate::audit::Record::LimitDisk {
            pid: t.as_ref().map_or(0, |t| t.tgid()),
            comm: t.map(|t| String::from_utf8_lossy(&t.comm()).into_owned()).unwrap_or_default(),
            limit: b.limit,
            usage: b.usage,
        });
    }));
}

/// The root filesystem's gofer below an in-memory upper layer that takes
/// every write (charged to the disk budget, if any).
fn writable_root(lower: Arc<dyn Node>, disk: Option<Arc<DiskBudget>>) -> Result<Arc<dyn Node>, BootError> {
    let ls = lower.stat().map_err(BootError::Root)?;
    let upper = Tmpfs::with_disk(disk, ls.mode & 0o7777, ls.uid, ls.gid);
    let times =
        SetAttr { atime: Some(SetTime::At(ls.atime)), mtime: Some(SetTime::At(ls.mtime)), ..SetAttr::default() };
    upper.setattr(&times).map_err(BootError::Root)?;
    Ok(overlay::new_overlay(upper, lower))
}

/// Mounts `fs` on `path` (a directory on a directory, a file on a file).
fn mount_at(kernel: &Kernel, path: &[u8], fs: Arc<dyn Node>, fs_type: &str) -> Result<(), Errno> {
    let ns = &kernel.mounts();
    let creds = Credentials::new(0, 0);
    let w = Walker { ns, root: ns.root(), creds: &creds };
    let d = w.resolve(&w.root, path, true)?;
    ns.mount(&d, fs, fs_type, fs_type)
}

/// Mounts the sandbox's secrets at /run/secrets, owned by the first
/// process's user, and puts those asked for in its environment (and,
/// through [`secrets::SecretEnv`], in exec'd processes'). Their time to
/// live counts from here.
fn mount_secrets(
    kernel: &Arc<Kernel>,
    specs: Vec<secrets::SecretSpec>,
    init: &mut ProcessSpec,
) -> Result<(), BootError> {
    if specs.is_empty() {
        return Ok(());
    }
    let now = std::time::Instant::now();
    let mut files = Vec::with_capacity(specs.len());
    let env = kernel.ext::<secrets::SecretEnv>();
    for s in specs {
        let expires = s.ttl.and_then(|t| now.checked_add(t));
        if s.env {
            env.add(&s.name, &s.value, expires);
        }
        files.push(crate::fs::secrets::Secret { name: s.name, value: s.value, expires });
    }
    env.apply(&mut init.env);
    let fs = crate::fs::secrets::new_secretfs(files, init.uid, init.gid);
    let path = crate::fs::secrets::MOUNT_POINT;
    mount_at(kernel, path, ReadOnly::wrap(fs), "tmpfs")
        .map_err(|e| BootError::Mount(String::from_utf8_lossy(path).into_owned(), e))
}

/// Applies OCI readonlyPaths (each mounted over by a read-only view of
/// itself) and maskedPaths (a directory covered by an empty read-only
/// tmpfs, anything else by /dev/null), as runc does; paths the sandbox
/// lacks are skipped.
fn restrict_paths(kernel: &Kernel, readonly: &[Vec<u8>], masked: &[Vec<u8>]) {
    let ns = &kernel.mounts();
    let creds = Credentials::new(0, 0);
    let w = Walker { ns, root: ns.root(), creds: &creds };
    let null = w.resolve(&w.root, b"/dev/null", true).map(|d| d.node.clone());
    let cover = |path: &[u8], masked: bool| -> Result<(), Errno> {
        let d = w.resolve(&w.root, path, true)?;
        let (fs, fs_type): (Arc<dyn Node>, &str) = match (masked, d.is_dir()) {
            (false, _) => (ReadOnly::wrap(d.node.clone()), "bind"),
            (true, true) => (ReadOnly::wrap(Tmpfs::new(0o555, 0, 0)), "tmpfs"),
            (true, false) => (null.clone()?, "devtmpfs"),
        };
        ns.mount(&d, fs, fs_type, fs_type)
    };
    let paths = readonly.iter().map(|p| (p, false)).chain(masked.iter().map(|p| (p, true)));
    for (path, masked) in paths {
        match cover(path, masked) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => log::warn!("cannot restrict {}: {e}", String::from_utf8_lossy(path)),
        }
    }
}

/// Where the sentry mounts its own filesystems.
const SYSTEM_MOUNT_POINTS: [&[u8]; 5] = [b"/proc", b"/dev", b"/dev/shm", b"/sys", b"/tmp"];

/// Creates the directories (and their parents) of every path in `paths`
/// that the root filesystem lacks, following its symlinks as a guest
/// would. A path that cannot be made is logged; mounting there fails
/// later with the reason.
fn make_mount_points<'a>(root: &Arc<dyn Node>, paths: impl Iterator<Item = &'a [u8]>) {
    let ns = crate::vfs::MountNamespace::new(root.clone(), "overlay", "root");
    let creds = Credentials::new(0, 0);
    let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
    for path in paths {
        if let Err(e) = make_dirs(&w, path) {
            log::warn!("cannot make mount point {}: {e}", String::from_utf8_lossy(path));
        }
    }
}

/// Creates an empty file (and its parent directories) for every path in
/// `paths` the root filesystem lacks: the mount points of file binds.
fn make_file_mount_points<'a>(root: &Arc<dyn Node>, paths: impl Iterator<Item = &'a [u8]>) {
    let ns = crate::vfs::MountNamespace::new(root.clone(), "overlay", "root");
    let creds = Credentials::new(0, 0);
    let w = Walker { ns: &ns, root: ns.root(), creds: &creds };
    for path in paths {
        let made = match w.resolve(&w.root, path, true) {
            Err(Errno::ENOENT) => {
                let parent = &path[..path.iter().rposition(|&b| b == b'/').unwrap_or(0)];
                make_dirs(&w, parent).and_then(|()| {
                    let pn = w.resolve_parent(&w.root, path)?;
                    pn.parent.node.mknod(&pn.name, NewNode { mode: crate::vfs::S_IFREG | 0o644, uid: 0, gid: 0 }, 0)
                })
            }
            other => other.map(drop),
        };
        if let Err(e) = made {
            log::warn!("cannot make mount point {}: {e}", String::from_utf8_lossy(path));
        }
    }
}

/// Makes directory `path` (and its parents) where the sandbox's mounts put
/// it, if it is missing there: the mount point of a bind below /tmp or
/// /dev/shm, whose filesystems cover what was made in the root.
fn make_mount_point_in_mounts(kernel: &Kernel, path: &[u8]) {
    let ns = &kernel.mounts();
    let creds = Credentials::new(0, 0);
    let w = Walker { ns, root: ns.root(), creds: &creds };
    if let Err(e) = make_dirs(&w, path) {
        log::warn!("cannot make mount point {}: {e}", String::from_utf8_lossy(path));
    }
}

/// Where the guest's resolver configuration is mounted.
const RESOLV_CONF: &[u8] = b"/etc/resolv.conf";

/// Mounts a file naming the sandbox's resolver at /etc/resolv.conf, as a
/// container engine bind-mounts its own: the root (and the host's file
/// under `husk do`) stays as it is, and a bundle that mounts its own
/// /etc/resolv.conf covers this one.
fn mount_resolv_conf(kernel: &Kernel) -> Result<(), Errno> {
    let dir = Tmpfs::new(0o755, 0, 0);
    dir.mknod(b"resolv.conf", NewNode { mode: crate::vfs::S_IFREG | 0o644, uid: 0, gid: 0 }, 0)?;
    let file = dir.lookup(b"resolv.conf")?;
    file.open(libc::O_WRONLY)?.write(crate::fs::dns::resolv_conf().as_bytes(), 0)?;
    mount_at(kernel, RESOLV_CONF, file, "tmpfs")
}

fn make_dirs(w: &Walker<'_>, path: &[u8]) -> Result<(), Errno> {
    let mut prefix = Vec::new();
    for name in path.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
        prefix.push(b'/');
        prefix.extend_from_slice(name);
        if let Err(Errno::ENOENT) = w.resolve(&w.root, &prefix, true) {
            let pn = w.resolve_parent(&w.root, &prefix)?;
            pn.parent.node.mkdir(&pn.name, NewNode { mode: 0o755, uid: 0, gid: 0 })?;
        }
    }
    Ok(())
}

/// Mounts /proc, /dev, /dev/shm, /dev/mqueue, /sys (with the read-only
/// cgroup view at /sys/fs/cgroup) and /tmp; a root where one of them cannot be (say, a
/// file in its place) goes without it. /dev/shm and /tmp count against the
/// disk budget.
fn mount_system_filesystems(kernel: &Arc<Kernel>, disk: &Option<Arc<DiskBudget>>) {
    let sys = Tmpfs::new(0o555, 0, 0);
    let cgroup_dir = sys
        .mkdir(b"fs", NewNode { mode: 0o755, uid: 0, gid: 0 })
        .and_then(|()| sys.lookup(b"fs"))
        .and_then(|fs| fs.mkdir(b"cgroup", NewNode { mode: 0o555, uid: 0, gid: 0 }));
    let filesystems: [(Arc<dyn Node>, &str); 5] = [
        (procfs::new_procfs(Arc::downgrade(kernel)), "proc"),
        (devfs::new_devfs(kernel.ext()), "devtmpfs"),
        (Tmpfs::with_disk(disk.clone(), 0o1777, 0, 0), "tmpfs"),
        (sys, "sysfs"),
        (Tmpfs::with_disk(disk.clone(), 0o1777, 0, 0), "tmpfs"),
    ];
    for (path, (fs, fs_type)) in SYSTEM_MOUNT_POINTS.into_iter().zip(filesystems) {
        if let Err(e) = mount_at(kernel, path, fs, fs_type) {
            log::warn!("{} not mounted: {e}", String::from_utf8_lossy(path));
        }
    }
    if let Err(e) = mount_at(kernel, b"/dev/mqueue", crate::fs::mqueue::new_mqueuefs(&kernel.ext()), "mqueue") {
        log::warn!("/dev/mqueue not mounted: {e}");
    }
    let cgroup =
        ReadOnly::wrap(crate::fs::cgroupfs::new_cgroupfs(Arc::downgrade(kernel), kernel.cgroup_limits().clone()));
    if let Err(e) = cgroup_dir.and_then(|()| mount_at(kernel, b"/sys/fs/cgroup", cgroup, "cgroup2")) {
        log::warn!("/sys/fs/cgroup not mounted: {e}");
    }
}

fn run_init(
    kernel: Arc<Kernel>,
    spec: ProcessSpec,
    stdio_names: [String; 3],
    life: Option<Arc<Lifecycle>>,
    uplink: Option<Uplink>,
    limits: crate::kernel::watchdog::Limits,
) -> Result<(ExitStatus, crate::audit::ExitReason), BootError> {
    let process = launch::load(&kernel, spec, &stdio_names)?;
    if let Some(l) = life {
        l.report(Ok(()));
        l.wait_start();
    }
    if let Some(u) = uplink {
        u.connect(&kernel);
    }
    kernel.audit(|| crate::audit::Record::SandboxStart {}).map_err(|_| BootError::AuditStart)?;
    crate::kernel::watchdog::start(&kernel, limits).map_err(BootError::Thread)?;
    let pid = process.pid;
    // The sandbox lasts as long as its init process, whose other threads
    // may still be running.
    let status = process.run()?;
    crate::fs::redacted::flush_all();
    Ok((status, audit::reason(status, kernel.was_oom_killed(pid), kernel.watchdog().ended_by())))
}

/// How /proc/self/fd names a standard stream: like the host names it
/// ("pipe:[…]", "/dev/pts/0"), as that is what the guest's stream is.
fn host_fd_name(i: usize) -> String {
    let host = std::fs::read_link(format!("/proc/self/fd/{i}")).map(|p| p.to_string_lossy().into_owned());
    guest_name_of_host_fd(host.ok().as_deref(), i)
}

/// What the guest's /proc/self/fd shows for a host descriptor it was
/// given: anonymous objects and the devices the sandbox has as Linux names
/// them; any other host file as gVisor's `host:[N]` (its host inode
/// number), never the host path it was opened by.
fn guest_name_of_host_fd(host: Option<&str>, i: usize) -> String {
    let anonymous = |n: &str| ["pipe:[", "socket:[", "anon_inode:"].iter().any(|p| n.starts_with(p));
    let device = |n: &str| {
        n == "/dev/null" || n.strip_prefix("/dev/pts/").is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
    };
    match host {
        Some(n) if anonymous(n) || device(n) => n.to_string(),
        _ => {
            let ino = std::fs::metadata(format!("/proc/self/fd/{i}")).map(|m| std::os::unix::fs::MetadataExt::ino(&m));
            format!("host:[{}]", ino.unwrap_or(0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{guest_name_of_host_fd, routes_beyond_loopback};

    #[test]
    fn an_uplink_is_a_route_through_an_interface_but_lo() {
        let head = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
        assert!(!routes_beyond_loopback(""));
        assert!(!routes_beyond_loopback(head), "docker --network none: no route at all");
        let lo = format!("{head}lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n");
        assert!(!routes_beyond_loopback(&lo));
        let veth = format!("{lo}veth0\t000012C6\t00000000\t0001\t0\t0\t0\t0000FEFF\t0\t0\t0\n");
        assert!(routes_beyond_loopback(&veth));
    }

    #[test]
    fn host_paths_of_stdio_never_reach_the_guest() {
        assert_eq!(guest_name_of_host_fd(Some("pipe:[4242]"), 0), "pipe:[4242]");
        assert_eq!(guest_name_of_host_fd(Some("socket:[7]"), 0), "socket:[7]");
        assert_eq!(guest_name_of_host_fd(Some("/dev/pts/3"), 0), "/dev/pts/3");
        assert_eq!(guest_name_of_host_fd(Some("/dev/null"), 0), "/dev/null");
        let hidden = guest_name_of_host_fd(Some("/home/me/secret-project/out.log"), 0);
        assert!(hidden.starts_with("host:[") && !hidden.contains("secret"), "{hidden}");
        assert!(guest_name_of_host_fd(Some("/dev/pts/../../etc"), 0).starts_with("host:["));
        assert!(guest_name_of_host_fd(None, 0).starts_with("host:["));
    }
}
