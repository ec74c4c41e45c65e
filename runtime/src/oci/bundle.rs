//! An OCI bundle: its config.json, checked, and turned into what the
//! sandbox needs to start (the root filesystem, the container process).

use husk_sentry::api::auth::caps::{self, Capabilities};
use oci_spec::runtime::Spec;
use std::path::{Path, PathBuf};

/// The largest guest memory husk gives a container without a limit, MiB.
const DEFAULT_MEMORY_MB: u64 = 4096;

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error(transparent)]
    Json(#[from] super::json::JsonError),
    #[error("config.json: {0}")]
    Invalid(String),
}

/// A host directory or regular file mounted into the sandbox, served by a
/// gofer of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    pub source: PathBuf,
    pub destination: String,
    pub read_only: bool,
    /// A single file rather than a directory.
    pub file: bool,
}

/// What `create` starts.
#[derive(Debug, Clone)]
pub struct Launch {
    pub rootfs: PathBuf,
    /// root.readonly: the root refuses writes (EROFS) instead of keeping
    /// them in the sandbox's memory.
    pub readonly: bool,
    pub binds: Vec<Bind>,
    /// tmpfs mounts the sentry does not provide itself: where, and mode.
    pub tmpfs: Vec<(String, u32)>,
    /// linux.maskedPaths: hidden from the guest.
    pub masked_paths: Vec<String>,
    /// linux.readonlyPaths: read-only in the guest.
    pub readonly_paths: Vec<String>,
    /// linux.namespaces' network path: the sentry joins it.
    pub netns: Option<PathBuf>,
    /// linux.namespaces has a network namespace without a path: a new one
    /// (the sentry's outer namespace, which an engine's hooks wire).
    pub fresh_netns: bool,
    pub args: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub uid: u32,
    pub gid: u32,
    /// process.user.additionalGids.
    pub groups: Vec<u32>,
    /// process.rlimits: (Linux's resource number, soft, hard).
    pub rlimits: Vec<(usize, u64, u64)>,
    pub hostname: Option<String>,
    pub memory_mb: u64,
    /// With process.terminal: the console's size (rows, columns).
    pub terminal: Option<(u16, u16)>,
    /// process.capabilities, if given (else those of the uid).
    pub caps: Option<Capabilities>,
    /// process.noNewPrivileges.
    pub no_new_privs: bool,
    /// linux.seccomp, compiled for the sentry to install.
    pub seccomp: Option<super::seccomp::Compiled>,
    /// linux.sysctl, in key order.
    pub sysctls: Vec<(String, String)>,
    /// linux.resources' CPU quota and period (µs), if limited.
    pub cpu_max: Option<(u64, u64)>,
    /// linux.resources' pids limit, if any.
    pub pids_max: Option<u64>,
    /// linux.resources' memory limit in bytes, if any.
    pub memory_max: Option<u64>,
}

/// A bundle directory and its parsed config.json.
pub struct Bundle {
    pub dir: PathBuf,
    pub spec: Spec,
}

impl Bundle {
    pub fn load(dir: &Path) -> Result<Bundle, BundleError> {
        let dir = dir.canonicalize().map_err(|e| BundleError::Read(dir.to_path_buf(), e))?;
        let path = dir.join("config.json");
        let text = std::fs::read_to_string(&path).map_err(|e| BundleError::Read(path.clone(), e))?;
        let spec: Spec = super::json::parse(path.display(), &text)?;
        Ok(Bundle { dir, spec })
    }

    /// The container process and root, refusing what husk cannot honor
    /// and logging (once) what it leaves aside.
    pub fn launch(&self) -> Result<Launch, BundleError> {
        let spec = &self.spec;
        let process = spec.process().as_ref().ok_or_else(|| BundleError::Invalid("no process".into()))?;
        let args = process.args().clone().unwrap_or_default();
        if args.is_empty() {
            return Err(BundleError::Invalid("process.args is empty".into()));
        }
        let terminal = process.terminal().unwrap_or(false).then(|| console_size(process));
        let root = spec.root().as_ref().ok_or_else(|| BundleError::Invalid("no root".into()))?;
        let rootfs = self.dir.join(root.path());
        if !rootfs.is_dir() {
            return Err(BundleError::Invalid(format!("root.path {} is not a directory", rootfs.display())));
        }
        let cwd = process.cwd().to_string_lossy().into_owned();
        if !cwd.starts_with('/') {
            return Err(BundleError::Invalid(format!("process.cwd {cwd:?} is not absolute")));
        }
        let user = process.user();
        self.note_ignored();
        Ok(Launch {
            readonly: root.readonly().unwrap_or(false),
            binds: self.binds()?,
            netns: self.netns(),
            fresh_netns: self.fresh_netns(),
            tmpfs: self.tmpfs()?,
            masked_paths: spec.linux().as_ref().and_then(|l| l.masked_paths().clone()).unwrap_or_default(),
            readonly_paths: spec.linux().as_ref().and_then(|l| l.readonly_paths().clone()).unwrap_or_default(),
            rootfs,
            args,
            env: process.env().clone().unwrap_or_default(),
            cwd,
            uid: user.uid(),
            gid: user.gid(),
            groups: user.additional_gids().clone().unwrap_or_default(),
            rlimits: process.rlimits().iter().flatten().map(|r| (rlimit_number(r.typ()), r.soft(), r.hard())).collect(),
            hostname: spec.hostname().clone(),
            memory_mb: memory_mb(spec),
            terminal,
            caps: process_caps(process)?,
            no_new_privs: process.no_new_privileges().unwrap_or(false),
            seccomp: spec
                .linux()
                .as_ref()
                .and_then(|l| l.seccomp().as_ref())
                .map(super::seccomp::compile)
                .transpose()
                .map_err(|e| BundleError::Invalid(e.to_string()))?,
            sysctls: spec
                .linux()
                .as_ref()
                .and_then(|l| l.sysctl().clone())
                .map(|m| m.into_iter().collect::<std::collections::BTreeMap<_, _>>().into_iter().collect())
                .unwrap_or_default(),
            cpu_max: cpu_max(spec),
            memory_max: memory_limit(spec),
            pids_max: spec
                .linux()
                .as_ref()
                .and_then(|l| l.resources().as_ref())
                .and_then(|r| r.pids().as_ref())
                .and_then(|p| u64::try_from(p.limit()).ok())
                .filter(|&n| n > 0),
        })
    }

    /// Parts of the spec husk accepts without acting on them, each
    /// named once in the log.
    fn note_ignored(&self) {
        let spec = &self.spec;
        let mut ignored: Vec<String> = Vec::new();
        if spec.hooks().as_ref().is_some_and(|h| h.start_container().is_some()) {
            ignored.push("hooks.startContainer (host programs cannot run inside the sandbox)".into());
        }
        if let Some(p) = spec.process() {
            if p.oom_score_adj().is_some() {
                ignored.push("process.oomScoreAdj".into());
            }
        }
        for m in spec.mounts().iter().flatten() {
            let typ = m.typ().as_deref().unwrap_or("bind");
            if !SENTRY_MOUNTS.contains(&typ) && matches!(bind_source(&self.dir, m), BindSource::Other) {
                ignored.push(format!("mount of {} ({typ})", m.destination().display()));
            }
        }
        for what in ignored {
            log::warn!("config.json: ignoring {what}");
        }
    }
}

/// Bind mounts of host directories and regular files; other binds
/// (sockets, devices, the sentry's own /dev, /proc and /sys) are left
/// aside with a note, and a bind of a source that does not exist is
/// refused.
impl Bundle {
    fn binds(&self) -> Result<Vec<Bind>, BundleError> {
        let mut binds = Vec::new();
        for m in self.spec.mounts().iter().flatten() {
            let (source, file) = match bind_source(&self.dir, m) {
                BindSource::Directory(s) => (s, false),
                BindSource::File(s) => (s, true),
                BindSource::Missing(s) => {
                    return Err(BundleError::Invalid(format!("mount source {} does not exist", s.display())))
                }
                BindSource::Other => continue,
            };
            let destination = m.destination().to_string_lossy().into_owned();
            if !destination.starts_with('/') {
                return Err(BundleError::Invalid(format!("mount destination {destination:?} is not absolute")));
            }
            let read_only = m.options().iter().flatten().any(|o| o == "ro");
            binds.push(Bind { source, destination, read_only, file });
        }
        Ok(binds)
    }
}

impl Bundle {
    fn netns(&self) -> Option<PathBuf> {
        let namespaces = self.spec.linux().as_ref()?.namespaces().as_ref()?;
        let net = namespaces.iter().find(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::Network)?;
        net.path().clone()
    }

    fn fresh_netns(&self) -> bool {
        let Some(namespaces) = self.spec.linux().as_ref().and_then(|l| l.namespaces().as_ref()) else { return false };
        namespaces.iter().any(|n| n.typ() == oci_spec::runtime::LinuxNamespaceType::Network && n.path().is_none())
    }
}

/// Is `dest` in a filesystem the sentry provides (/proc, /dev, /sys)?
fn sentry_owned(dest: &str) -> bool {
    ["/proc", "/dev", "/sys"].iter().any(|p| dest == *p || dest.starts_with(&format!("{p}/")))
}

impl Bundle {
    /// tmpfs mounts other than the sentry's own (/tmp, and those in /dev),
    /// with the mode from their `mode=` option (1777 if none).
    fn tmpfs(&self) -> Result<Vec<(String, u32)>, BundleError> {
        let mut out = Vec::new();
        for m in self.spec.mounts().iter().flatten().filter(|m| m.typ().as_deref() == Some("tmpfs")) {
            let dest = m.destination().to_string_lossy().into_owned();
            if sentry_owned(&dest) || dest == "/tmp" {
                continue;
            }
            if !dest.starts_with('/') {
                return Err(BundleError::Invalid(format!("mount destination {dest:?} is not absolute")));
            }
            let mode = m.options().iter().flatten().find_map(|o| o.strip_prefix("mode="));
            let mode = match mode {
                Some(m) => u32::from_str_radix(m, 8)
                    .ok()
                    .filter(|&m| m <= 0o7777)
                    .ok_or_else(|| BundleError::Invalid(format!("tmpfs {dest}: bad mode={m}")))?,
                None => 0o1777,
            };
            out.push((dest, mode));
        }
        Ok(out)
    }
}

/// What a mount binds from the host.
enum BindSource {
    Directory(PathBuf),
    File(PathBuf),
    Missing(PathBuf),
    /// Not a bind husk serves: another type, a socket or device, a sentry
    /// path.
    Other,
}

fn bind_source(bundle: &Path, m: &oci_spec::runtime::Mount) -> BindSource {
    let is_bind = m.typ().as_deref().is_none_or(|t| t == "bind")
        || m.options().iter().flatten().any(|o| o == "bind" || o == "rbind");
    let sentry_owned = sentry_owned(&m.destination().to_string_lossy());
    let Some(source) = m.source().as_ref().map(|s| bundle.join(s)).filter(|_| is_bind && !sentry_owned) else {
        return BindSource::Other;
    };
    if source.is_dir() {
        BindSource::Directory(source)
    } else if source.is_file() {
        BindSource::File(source)
    } else if source.exists() {
        BindSource::Other
    } else {
        BindSource::Missing(source)
    }
}

/// process.capabilities as the sentry's emulated sets: a process starts
/// with them, and its exec then applies Linux's rules (root keeps its
/// bounding set, others their ambient set). None when the spec is silent.
pub fn process_caps(process: &oci_spec::runtime::Process) -> Result<Option<Capabilities>, BundleError> {
    let Some(c) = process.capabilities() else { return Ok(None) };
    let set = |s: &Option<oci_spec::runtime::Capabilities>| {
        let names: Vec<String> = s.iter().flatten().map(ToString::to_string).collect();
        caps::parse_set(names.iter().map(String::as_str))
            .map_err(|name| BundleError::Invalid(format!("process.capabilities: unknown capability {name:?}")))
    };
    Ok(Some(Capabilities {
        effective: set(c.effective())?,
        permitted: set(c.permitted())?,
        inheritable: set(c.inheritable())?,
        bounding: set(c.bounding())?,
        ambient: set(c.ambient())?,
    }))
}

/// Linux's number of a resource limit.
pub fn rlimit_number(t: oci_spec::runtime::PosixRlimitType) -> usize {
    use oci_spec::runtime::PosixRlimitType as R;
    match t {
        R::RlimitCpu => 0,
        R::RlimitFsize => 1,
        R::RlimitData => 2,
        R::RlimitStack => 3,
        R::RlimitCore => 4,
        R::RlimitRss => 5,
        R::RlimitNproc => 6,
        R::RlimitNofile => 7,
        R::RlimitMemlock => 8,
        R::RlimitAs => 9,
        R::RlimitLocks => 10,
        R::RlimitSigpending => 11,
        R::RlimitMsgqueue => 12,
        R::RlimitNice => 13,
        R::RlimitRtprio => 14,
        R::RlimitRttime => 15,
    }
}

/// A process's console size (rows, columns); 0 where unset.
pub fn console_size(process: &oci_spec::runtime::Process) -> (u16, u16) {
    let clamp = |v: u64| u16::try_from(v).unwrap_or(u16::MAX);
    process.console_size().map_or((0, 0), |b| (clamp(b.height()), clamp(b.width())))
}

/// Mount types the sentry provides itself (/proc, /dev, /dev/mqueue, /sys,
/// /tmp, the cgroup view at /sys/fs/cgroup).
const SENTRY_MOUNTS: &[&str] = &["proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2"];

/// The spec's CPU quota and period in microseconds, when it limits CPU.
fn cpu_max(spec: &Spec) -> Option<(u64, u64)> {
    let cpu = spec.linux().as_ref()?.resources().as_ref()?.cpu().as_ref()?;
    let quota = u64::try_from(cpu.quota()?).ok().filter(|&q| q > 0)?;
    Some((quota, cpu.period().filter(|&p| p > 0).unwrap_or(100_000)))
}

/// The spec's memory limit in bytes, if it sets one.
fn memory_limit(spec: &Spec) -> Option<u64> {
    spec.linux()
        .as_ref()
        .and_then(|l| l.resources().as_ref())
        .and_then(|r| r.memory().as_ref())
        .and_then(|m| m.limit())
        .and_then(|l| u64::try_from(l).ok())
        .filter(|&l| l > 0)
}

/// The guest memory the sentry allows, MiB: with a memory limit, a quarter
/// and 32 MiB more than it, so that the host cgroup's limit (on the sentry,
/// its stubs and the guest memory together) is what ends a guest that
/// takes too much, and Docker reports the OOM kill; without one, the
/// default.
fn memory_mb(spec: &Spec) -> u64 {
    memory_limit(spec).map_or(DEFAULT_MEMORY_MB, |l| {
        let mb = l.div_ceil(1 << 20).max(1);
        mb.saturating_add(mb / 4).saturating_add(32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(config: &str) -> (PathBuf, Result<Bundle, BundleError>) {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("husk-bundle-{}-{n}", std::process::id()));
        std::fs::create_dir_all(dir.join("rootfs")).unwrap();
        std::fs::write(dir.join("config.json"), config).unwrap();
        let b = Bundle::load(&dir);
        (dir, b)
    }

    #[test]
    fn json_errors_name_line_and_column() {
        let (dir, b) = bundle("{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": [\n}");
        let msg = b.err().unwrap().to_string();
        assert!(msg.contains("line 4"), "{msg}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_minimal_spec_launches() {
        let (dir, b) = bundle(
            r#"{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true},
            "process":{"args":["sh","-c","true"],"cwd":"/","user":{"uid":5,"gid":6},"env":["A=1"]},
            "linux":{"resources":{"memory":{"limit":67108865}}}}"#,
        );
        let l = b.unwrap().launch().unwrap();
        assert_eq!(l.args, ["sh", "-c", "true"]);
        assert_eq!((l.uid, l.gid, l.memory_mb), (5, 6, 65 + 16 + 32));
        assert_eq!(l.memory_max, Some(67_108_865));
        assert!(l.rootfs.ends_with("rootfs"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_parts_are_refused() {
        for config in [
            r#"{"ociVersion":"1.0.2","root":{"path":"rootfs"}}"#,
            r#"{"ociVersion":"1.0.2","root":{"path":"rootfs"},"process":{"args":[],"cwd":"/","user":{"uid":0,"gid":0}}}"#,
            r#"{"ociVersion":"1.0.2","root":{"path":"nowhere"},"process":{"args":["sh"],"cwd":"/","user":{"uid":0,"gid":0}}}"#,
            r#"{"ociVersion":"1.0.2","root":{"path":"rootfs"},"process":{"args":["sh"],"cwd":"rel","user":{"uid":0,"gid":0}}}"#,
        ] {
            let (dir, b) = bundle(config);
            assert!(b.unwrap().launch().is_err(), "{config}");
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}
