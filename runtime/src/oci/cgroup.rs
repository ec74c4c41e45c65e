//! The sandbox's host cgroup (`linux.cgroupsPath`). The sentry, its stub
//! processes and the gofer all live in it, so `linux.resources` applied
//! there cap the whole sandbox (Docker's --memory, --cpus, --pids-limit),
//! the containerd shim reads its statistics and OOM events from it, and
//! its freezer pauses the sandbox. Both cgroup v1 (one hierarchy per
//! controller) and v2 (unified) are handled.

use oci_spec::runtime::LinuxResources;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// The v1 hierarchies a sandbox joins.
const V1_CONTROLLERS: &[&str] = &["memory", "cpu", "cpuacct", "pids", "freezer", "blkio"];
/// How long to wait for a freeze, or for an emptied cgroup to go away.
const SETTLE: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cgroup {0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("cgroup {0}: did not freeze within {1:?}")]
    Freeze(PathBuf, Duration),
    #[error("cgroupsPath {0:?} names the root cgroup")]
    Root(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError + '_ {
    move |e| CgroupError::Io(path.to_path_buf(), e)
}

/// A cgroup, named by its path below each hierarchy's root.
#[derive(Debug, Clone)]
pub struct Cgroup {
    path: PathBuf,
    v2: bool,
    /// husk made it (and so removes it); a container may also be put in
    /// an existing cgroup, which then outlives it.
    owned: bool,
}

impl Cgroup {
    /// The cgroup the spec names, or `husk/ID`. With `systemd`, a
    /// "slice:prefix:name" path becomes "slice/prefix-name.scope" below
    /// the cgroupfs root (husk does not talk to systemd).
    pub fn for_container(cgroups_path: Option<&Path>, id: &str, systemd: bool) -> Result<Cgroup, CgroupError> {
        let raw = cgroups_path.map(|p| p.to_string_lossy().into_owned());
        let path = match raw {
            Some(p) if systemd && p.split(':').count() == 3 => {
                let parts: Vec<&str> = p.split(':').collect();
                PathBuf::from(parts[0]).join(format!("{}-{}.scope", parts[1], parts[2]))
            }
            Some(p) => PathBuf::from(p.trim_start_matches('/')),
            None => PathBuf::from("husk").join(id),
        };
        let cgroup = Cgroup::at(&path, false);
        if cgroup.path.as_os_str().is_empty() {
            return Err(CgroupError::Root(path.to_string_lossy().into_owned()));
        }
        Ok(cgroup)
    }

    /// The cgroup at `path` in this host's layout (`..` cannot leave the
    /// hierarchy); `owned` if husk made it.
    pub fn at(path: &Path, owned: bool) -> Cgroup {
        let v2 = Path::new(CGROUP_ROOT).join("cgroup.controllers").exists();
        let path = path.components().filter(|c| matches!(c, std::path::Component::Normal(_))).collect();
        Cgroup { path, v2, owned }
    }

    pub fn owned(&self) -> bool {
        self.owned
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directories of this cgroup: one per v1 controller, or one.
    fn dirs(&self) -> Vec<PathBuf> {
        if self.v2 {
            vec![Path::new(CGROUP_ROOT).join(&self.path)]
        } else {
            V1_CONTROLLERS
                .iter()
                .map(|c| Path::new(CGROUP_ROOT).join(c))
                .filter(|root| root.is_dir())
                .map(|root| root.join(&self.path))
                .collect()
        }
    }

    fn file(&self, controller: &str, name: &str) -> PathBuf {
        let root = Path::new(CGROUP_ROOT);
        if self.v2 {
            root.join(&self.path).join(name)
        } else {
            root.join(controller).join(&self.path).join(name)
        }
    }

    fn write(&self, controller: &str, name: &str, value: &str) -> Result<(), CgroupError> {
        let f = self.file(controller, name);
        std::fs::write(&f, value).map_err(io(&f))
    }

    /// Creates the cgroup (and, on v2, enables the controllers for it);
    /// it is ours to remove unless it existed already.
    pub fn create(&mut self) -> Result<(), CgroupError> {
        self.owned = !self.dirs().iter().any(|d| d.exists());
        if self.v2 {
            self.enable_v2_controllers()?;
        }
        for d in self.dirs() {
            std::fs::create_dir_all(&d).map_err(io(&d))?;
        }
        Ok(())
    }

    /// v2 controllers must be enabled in every ancestor's subtree_control.
    fn enable_v2_controllers(&self) -> Result<(), CgroupError> {
        let mut dir = PathBuf::from(CGROUP_ROOT);
        for part in self.path.iter() {
            let wanted = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            let enable: Vec<String> = wanted
                .split_whitespace()
                .filter(|c| ["memory", "cpu", "pids", "io"].contains(c))
                .map(|c| format!("+{c}"))
                .collect();
            let control = dir.join("cgroup.subtree_control");
            if !enable.is_empty() {
                std::fs::write(&control, enable.join(" ")).map_err(io(&control))?;
            }
            dir.push(part);
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        }
        Ok(())
    }

    /// The `cgroup.procs` files a process writes "0" to in order to join.
    pub fn procs_files(&self) -> Vec<std::ffi::CString> {
        procs_files(&self.dirs())
    }

    /// Applies memory, CPU and pid limits.
    pub fn apply(&self, r: &LinuxResources) -> Result<(), CgroupError> {
        if let Some(m) = r.memory() {
            let limit = m.limit().filter(|&l| l != 0);
            let swap = m.swap().filter(|&s| s != 0);
            if self.v2 {
                if let Some(l) = limit {
                    self.write("memory", "memory.max", &v2_max(l))?;
                }
                if let (Some(s), Some(l)) = (swap, limit) {
                    let value = if s < 0 { "max".to_string() } else { s.saturating_sub(l).max(0).to_string() };
                    self.write("memory", "memory.swap.max", &value)?;
                }
            } else {
                self.apply_v1_memory(limit, swap)?;
            }
        }
        if let Some(cpu) = r.cpu() {
            if self.v2 {
                if let Some(s) = cpu.shares().filter(|&s| s > 0) {
                    let weight = 1 + (s.clamp(2, 262_144) - 2) * 9999 / 262_142;
                    self.write("cpu", "cpu.weight", &weight.to_string())?;
                }
                if let Some(q) = cpu.quota().filter(|&q| q != 0) {
                    let period = cpu.period().unwrap_or(100_000);
                    self.write("cpu", "cpu.max", &format!("{} {period}", v2_max(q)))?;
                }
            } else {
                if let Some(s) = cpu.shares().filter(|&s| s > 0) {
                    self.write("cpu", "cpu.shares", &s.to_string())?;
                }
                if let Some(p) = cpu.period().filter(|&p| p > 0) {
                    self.write("cpu", "cpu.cfs_period_us", &p.to_string())?;
                }
                if let Some(q) = cpu.quota().filter(|&q| q != 0) {
                    self.write("cpu", "cpu.cfs_quota_us", &q.to_string())?;
                }
            }
        }
        if let Some(p) = r.pids() {
            let value = if p.limit() > 0 { host_pids(p.limit()).to_string() } else { "max".into() };
            self.write("pids", "pids.max", &value)?;
        }
        Ok(())
    }

    /// v1 refuses a memory limit above memory+swap and the reverse, so the
    /// order of the two writes depends on the direction of the change.
    fn apply_v1_memory(&self, limit: Option<i64>, swap: Option<i64>) -> Result<(), CgroupError> {
        let set_limit = |l: i64| self.write("memory", "memory.limit_in_bytes", &l.to_string());
        let set_swap = |s: i64| self.write("memory", "memory.memsw.limit_in_bytes", &s.to_string());
        match (limit, swap) {
            (Some(l), Some(s)) => {
                if set_limit(l).is_err() {
                    set_swap(s)?;
                    set_limit(l)
                } else if self.file("memory", "memory.memsw.limit_in_bytes").exists() {
                    set_swap(s)
                } else {
                    Ok(())
                }
            }
            (Some(l), None) => set_limit(l),
            (None, Some(s)) if self.file("memory", "memory.memsw.limit_in_bytes").exists() => set_swap(s),
            _ => Ok(()),
        }
    }

    /// Freezes or thaws every process of the sandbox.
    pub fn freeze(&self, frozen: bool) -> Result<(), CgroupError> {
        let (file, value) = if self.v2 {
            ("cgroup.freeze", if frozen { "1" } else { "0" })
        } else {
            ("freezer.state", if frozen { "FROZEN" } else { "THAWED" })
        };
        self.write("freezer", file, value)?;
        let deadline = Instant::now() + SETTLE;
        while self.frozen() != frozen {
            if Instant::now() >= deadline {
                return Err(CgroupError::Freeze(self.path.clone(), SETTLE));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    pub fn frozen(&self) -> bool {
        if self.v2 {
            std::fs::read_to_string(self.file("freezer", "cgroup.events"))
                .is_ok_and(|t| t.lines().any(|l| l.trim() == "frozen 1"))
        } else {
            std::fs::read_to_string(self.file("freezer", "freezer.state")).is_ok_and(|t| t.trim() == "FROZEN")
        }
    }

    /// Removes the cgroup, if husk made it, once its processes are gone
    /// (bounded wait).
    pub fn destroy(&self) {
        if !self.owned {
            return;
        }
        remove_dirs(&self.dirs());
    }
}

/// The `cgroup.procs` files of cgroup folders `dirs`, as the spawner
/// writes them (C strings: it writes between fork and exec).
pub fn procs_files(dirs: &[PathBuf]) -> Vec<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    dirs.iter().filter_map(|d| std::ffi::CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).ok()).collect()
}

/// Removes cgroup folders once their processes are gone: a cgroup whose
/// last process just died may still count it for a moment (bounded wait).
pub fn remove_dirs(dirs: &[PathBuf]) {
    let deadline = Instant::now() + SETTLE;
    for d in dirs {
        loop {
            match std::fs::remove_dir(d) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if Instant::now() >= deadline => {
                    log::warn!("cannot remove cgroup {}: {e}", d.display());
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

/// Resource usage, in runc's `events --stats` shape (the parts husk fills).
#[derive(serde::Serialize, Debug, Default)]
pub struct Stats {
    pub cpu: CpuStats,
    pub memory: MemoryStats,
    pub pids: PidsStats,
}

#[derive(serde::Serialize, Debug, Default)]
pub struct CpuStats {
    pub usage: CpuUsage,
}

#[derive(serde::Serialize, Debug, Default)]
pub struct CpuUsage {
    /// Nanoseconds of CPU time.
    pub total: u64,
}

#[derive(serde::Serialize, Debug, Default)]
pub struct MemoryStats {
    pub usage: MemoryUsage,
}

#[derive(serde::Serialize, Debug, Default)]
pub struct MemoryUsage {
    pub limit: u64,
    pub usage: u64,
    pub max: u64,
    pub failcnt: u64,
}

#[derive(serde::Serialize, Debug, Default)]
pub struct PidsStats {
    pub current: u64,
    pub limit: u64,
}

impl Cgroup {
    fn read_u64(&self, controller: &str, name: &str) -> u64 {
        let text = std::fs::read_to_string(self.file(controller, name)).unwrap_or_default();
        // v2 writes "max" for no limit, which reads as 0.
        text.trim().parse().unwrap_or(0)
    }

    /// A flat key-value file's field (cpu.stat, memory.events).
    fn read_field(&self, controller: &str, name: &str, key: &str) -> u64 {
        let text = std::fs::read_to_string(self.file(controller, name)).unwrap_or_default();
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0)
    }

    pub fn stats(&self) -> Stats {
        let pids =
            PidsStats { current: self.read_u64("pids", "pids.current"), limit: self.read_u64("pids", "pids.max") };
        if self.v2 {
            Stats {
                cpu: CpuStats { usage: CpuUsage { total: self.read_field("cpu", "cpu.stat", "usage_usec") * 1000 } },
                memory: MemoryStats {
                    usage: MemoryUsage {
                        limit: self.read_u64("memory", "memory.max"),
                        usage: self.read_u64("memory", "memory.current"),
                        max: self.read_u64("memory", "memory.peak"),
                        failcnt: self.read_field("memory", "memory.events", "max"),
                    },
                },
                pids,
            }
        } else {
            Stats {
                cpu: CpuStats { usage: CpuUsage { total: self.read_u64("cpuacct", "cpuacct.usage") } },
                memory: MemoryStats {
                    usage: MemoryUsage {
                        limit: self.read_u64("memory", "memory.limit_in_bytes"),
                        usage: self.read_u64("memory", "memory.usage_in_bytes"),
                        max: self.read_u64("memory", "memory.max_usage_in_bytes"),
                        failcnt: self.read_u64("memory", "memory.failcnt"),
                    },
                },
                pids,
            }
        }
    }
}

/// A v2 limit: a negative value means "max".
fn v2_max(v: i64) -> String {
    if v < 0 {
        "max".into()
    } else {
        v.to_string()
    }
}

/// The host tasks a sandbox of `guest` tasks may have: the sentry holds
/// the guest to `guest` itself (EAGAIN past it, as the pids cgroup), and
/// each guest task costs the host two (its sentry thread and its stub
/// thread), beside the sentry's and gofers' own threads. The host cgroup
/// is the backstop for a sentry bug, not the guest's limit.
pub fn host_pids(guest: i64) -> i64 {
    guest.saturating_mul(2).saturating_add(HOST_TASKS_OVERHEAD)
}

/// The sentry's and the gofers' own host threads, with room to spare.
const HOST_TASKS_OVERHEAD: i64 = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_allows_two_tasks_a_guest_task_and_the_sentrys_own() {
        assert_eq!(host_pids(8), 80);
        assert_eq!(host_pids(i64::MAX), i64::MAX);
    }

    #[test]
    fn paths() {
        let c = Cgroup::for_container(Some(Path::new("/docker/abc")), "abc", false).unwrap();
        assert_eq!(c.path(), Path::new("docker/abc"));
        let c = Cgroup::for_container(Some(Path::new("system.slice:docker:abc")), "abc", true).unwrap();
        assert_eq!(c.path(), Path::new("system.slice/docker-abc.scope"));
        let c = Cgroup::for_container(None, "x1", false).unwrap();
        assert_eq!(c.path(), Path::new("husk/x1"));
        let c = Cgroup::for_container(Some(Path::new("/a/../../etc")), "x", false).unwrap();
        assert_eq!(c.path(), Path::new("a/etc"), "no way out of the hierarchy");
        for root in ["", "/", "/..", "../."] {
            assert!(Cgroup::for_container(Some(Path::new(root)), "x", false).is_err(), "{root:?}");
        }
    }
}
