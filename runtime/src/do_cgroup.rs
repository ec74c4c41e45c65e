//! `husk do`'s host cgroup: where the host lets it, the sentry, its stubs
//! and the gofer run in a cgroup of their own below the one `husk do` is
//! in (`husk-do-PID`), capped at the sandbox's memory limit plus a fixed
//! overhead and at two host tasks per guest task plus the sentry's own
//! (`oci::cgroup::host_pids`). The sentry enforces the limits itself; this
//! is the backstop that holds even against a bug of the sentry's. Under
//! cgroup v2 the cgroup `husk do` is in must already delegate the memory
//! and pids controllers to its children; under v1 each hierarchy's own
//! cgroup of ours is used. Where any of it is refused (no privilege, no
//! controller), `husk do` runs without one, silently. A `husk do` killed
//! (SIGKILL) cannot remove its cgroup: the next one removes it.

use std::ffi::CString;
use std::path::{Path, PathBuf};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// What the sentry, gofer and stubs may hold beyond the guest's memory
/// (their heaps, stacks, page tables), in MiB, besides a quarter more.
const MEMORY_OVERHEAD_MB: u64 = 512;

/// The cgroup's directories (one, or one per v1 hierarchy).
pub struct DoCgroup {
    dirs: Vec<PathBuf>,
}

/// The host memory cap of a sandbox allowed `memory_mb` MiB, in bytes.
fn host_memory(memory_mb: u64) -> u64 {
    memory_mb.saturating_add(memory_mb / 4).saturating_add(MEMORY_OVERHEAD_MB).saturating_mul(1 << 20)
}

/// Where our cgroup of `controller` is, from /proc/self/cgroup's text
/// (`v2`: the unified hierarchy's `0::PATH` line).
fn own_cgroup(proc_cgroup: &str, controller: &str, v2: bool) -> Option<PathBuf> {
    proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        if v2 {
            (id == "0" && controllers.is_empty()).then(|| Path::new(CGROUP_ROOT).join(rel))
        } else {
            controllers.split(',').any(|c| c == controller).then(|| Path::new(CGROUP_ROOT).join(controller).join(rel))
        }
    })
}

impl DoCgroup {
    /// Makes the cgroup, capped for `memory_mb` MiB and `pids` guest tasks;
    /// None where the host does not let us.
    pub fn create(memory_mb: u64, pids: u64) -> Option<DoCgroup> {
        let name = format!("husk-do-{}", std::process::id());
        let procs = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let memory = host_memory(memory_mb).to_string();
        let tasks = crate::oci::cgroup::host_pids(i64::try_from(pids).unwrap_or(i64::MAX)).to_string();
        let v2 = Path::new(CGROUP_ROOT).join("cgroup.controllers").exists();
        let plan: Vec<(PathBuf, Vec<(&str, &str)>)> = if v2 {
            let parent = own_cgroup(&procs, "", true)?;
            let delegated = std::fs::read_to_string(parent.join("cgroup.subtree_control")).ok()?;
            let has = |c: &str| delegated.split_whitespace().any(|d| d == c);
            if !has("memory") || !has("pids") {
                return None;
            }
            vec![(parent.join(&name), vec![("memory.max", memory.as_str()), ("pids.max", tasks.as_str())])]
        } else {
            vec![
                (own_cgroup(&procs, "memory", false)?.join(&name), vec![("memory.limit_in_bytes", memory.as_str())]),
                (own_cgroup(&procs, "pids", false)?.join(&name), vec![("pids.max", tasks.as_str())]),
            ]
        };
        let mut made = DoCgroup { dirs: Vec::new() };
        for (dir, files) in plan {
            if let Some(parent) = dir.parent() {
                sweep(parent);
            }
            // (What was made is removed as `made` drops.)
            std::fs::create_dir(&dir).ok()?;
            made.dirs.push(dir.clone());
            if files.iter().any(|(f, v)| std::fs::write(dir.join(f), v).is_err()) {
                return None;
            }
        }
        log::debug!("husk do's cgroup: {:?}", made.dirs);
        Some(made)
    }

    /// The `cgroup.procs` files a process writes to join the cgroup.
    pub fn procs_files(&self) -> Vec<CString> {
        crate::oci::cgroup::procs_files(&self.dirs)
    }
}

/// Removes the cgroups a killed `husk do` left in `parent` (no process
/// with its pid is left; rmdir takes only empty ones, so a live
/// sandbox's, whatever its pid namespace, stays).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("husk-do-")) else { continue };
        if pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Drop for DoCgroup {
    /// Removes the cgroup once its processes are gone (a bounded wait).
    fn drop(&mut self) {
        crate::oci::cgroup::remove_dirs(&self.dirs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_cgroup_is_found_per_hierarchy() {
        let v1 = "12:pids:/user.slice\n4:memory:/x/y\n3:cpu,cpuacct:/\n0::/unified\n";
        assert_eq!(own_cgroup(v1, "memory", false), Some(PathBuf::from("/sys/fs/cgroup/memory/x/y")));
        assert_eq!(own_cgroup(v1, "pids", false), Some(PathBuf::from("/sys/fs/cgroup/pids/user.slice")));
        assert_eq!(own_cgroup(v1, "cpuacct", false), Some(PathBuf::from("/sys/fs/cgroup/cpuacct/")));
        assert_eq!(own_cgroup(v1, "hugetlb", false), None);
        assert_eq!(own_cgroup("0::/a/b\n", "", true), Some(PathBuf::from("/sys/fs/cgroup/a/b")));
        assert_eq!(own_cgroup("4:memory:/x\n", "", true), None);
    }

    #[test]
    fn the_host_allows_the_memory_limit_and_an_overhead() {
        assert_eq!(host_memory(256), (256 + 64 + 512) << 20);
        assert_eq!(host_memory(u64::MAX), u64::MAX);
    }
}
