//! What /proc passes through from the host: read once when the sandbox
//! boots, before the sentry is confined (its seccomp filter forbids opening
//! files).

use std::fs;

/// Host files /proc shows, or bases its content on.
pub(super) struct Host {
    pub cpuinfo: Vec<u8>,
    /// /proc/version: the same kernel the sandbox's uname reports.
    pub version: Vec<u8>,
    /// /proc/sys/kernel/osrelease.
    pub osrelease: Vec<u8>,
    /// /proc/meminfo: the field list and layout the sandbox's copies.
    pub meminfo: String,
    /// /proc/sys/fs/file-max.
    pub file_max: Vec<u8>,
    /// The sentry's own /proc/self/status, for the CPU and memory-node
    /// affinity and speculation-mitigation lines.
    status: String,
    /// /proc/stat at boot, for its number of CPUs.
    stat: String,
}

fn read(path: &str) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| {
        log::warn!("procfs: cannot read the host's {path}: {e}");
        String::new()
    })
}

impl Host {
    /// Reads the host's files (missing ones are logged and left empty).
    pub(super) fn read() -> Host {
        Host {
            cpuinfo: read("/proc/cpuinfo").into_bytes(),
            version: read("/proc/version").into_bytes(),
            osrelease: read("/proc/sys/kernel/osrelease").into_bytes(),
            meminfo: read("/proc/meminfo"),
            file_max: read("/proc/sys/fs/file-max").into_bytes(),
            status: read("/proc/self/status"),
            stat: read("/proc/stat"),
        }
    }

    /// The value of a line of the host's /proc/self/status.
    pub(super) fn status_value(&self, key: &str) -> Option<&str> {
        self.status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(":\t"))
    }

    /// The CPUs the host's /proc/stat lists (as /proc/cpuinfo shows
    /// them), or those the sentry may run on if it could not be read.
    pub(super) fn cpu_count(&self) -> u32 {
        let listed = self.stat.lines().filter(|l| l.starts_with("cpu") && !l.starts_with("cpu ")).count();
        match u32::try_from(listed) {
            Ok(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1)),
        }
    }
}
