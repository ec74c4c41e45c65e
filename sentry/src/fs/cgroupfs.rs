//! /sys/fs/cgroup: a read-only cgroup v2 view of the sandbox. The sandbox
//! is one cgroup, the container's, seen as the root (as /proc/PID/cgroup
//! says, `0::/`): its processes, the memory the sentry lets the guest
//! commit and what it has committed, its thread count, and the CPU and
//! pids limits the runtime applied on the host. Runtimes (the JVM, Node,
//! Go) size their heaps and pools from these files.

use super::synthetic::{Attr, Dir, FsInfo, GenFile, Generator};
use crate::kernel::limits::CgroupLimits;
use crate::kernel::Kernel;
use crate::vfs::{Node, S_IFDIR, S_IFREG};
use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::time::SystemTime;

/// CGROUP2_SUPER_MAGIC.
const CGROUP2_MAGIC: u64 = 0x6367_7270;

/// cpu.max: "QUOTA PERIOD", or "max 100000".
fn cpu_text(l: &CgroupLimits) -> String {
    l.cpu_max.map_or_else(|| "max 100000\n".to_string(), |(q, p)| format!("{q} {p}\n"))
}

/// pids.max: the number, or "max".
fn pids_text(l: &CgroupLimits) -> String {
    l.pids_max.map_or_else(|| "max\n".to_string(), |n| format!("{n}\n"))
}

/// The cgroup v2 root of the sandbox; `limits` may change while it is
/// mounted.
pub(crate) fn new_cgroupfs(kernel: Weak<Kernel>, limits: Arc<Mutex<CgroupLimits>>) -> Arc<dyn Node> {
    let fs = FsInfo::new(CGROUP2_MAGIC, SystemTime::now());
    let fixed = |text: String| -> Generator { Box::new(move || Ok(text.clone().into_bytes())) };
    let live = |f: fn(&Kernel) -> String| -> Generator {
        let k = kernel.clone();
        Box::new(move || Ok(k.upgrade().map(|k| f(&k)).unwrap_or_default().into_bytes()))
    };
    let limit = |f: fn(&CgroupLimits) -> String| -> Generator {
        let l = limits.clone();
        Box::new(move || Ok(f(&l.lock()).into_bytes()))
    };
    let files: Vec<(&str, Generator)> = vec![
        ("cgroup.controllers", fixed("cpu memory pids\n".into())),
        ("cgroup.procs", live(|k| lines(k.procs().live()))),
        ("cgroup.subtree_control", fixed("\n".into())),
        ("cgroup.threads", live(|k| lines(k.tids()))),
        ("cgroup.type", fixed("domain\n".into())),
        ("cpu.max", limit(cpu_text)),
        ("memory.current", live(|k| format!("{}\n", k.memory().used()))),
        ("memory.max", {
            let (k, l) = (kernel.clone(), limits.clone());
            Box::new(move || {
                // The lower of the host's limit and the guest memory the
                // sentry allows: a runtime sizing its heap must fit both.
                let host = l.lock().memory_max;
                let sentry = k.upgrade().map(|k| k.memory().limit());
                let bytes = match (host, sentry) {
                    (Some(h), Some(s)) => h.min(s),
                    (h, s) => h.or(s).unwrap_or(0),
                };
                Ok(format!("{bytes}\n").into_bytes())
            })
        }),
        ("pids.current", live(|k| format!("{}\n", k.tids().len()))),
        ("pids.max", limit(pids_text)),
    ];
    let entries = files
        .into_iter()
        .enumerate()
        .map(|(i, (name, gen))| {
            let ino = u64::try_from(i).unwrap_or(0) + 2;
            let node: Arc<dyn Node> = GenFile::new(Attr::new(&fs, ino, S_IFREG | 0o444), gen);
            (name.as_bytes().to_vec(), node)
        })
        .collect();
    Dir::fixed(Attr::new(&fs, 1, S_IFDIR | 0o555), entries)
}

fn lines(mut ids: Vec<i32>) -> String {
    ids.sort_unstable();
    ids.iter().map(|id| format!("{id}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(root: &Arc<dyn Node>, name: &str) -> String {
        let f = root.lookup(name.as_bytes()).unwrap().open(libc::O_RDONLY).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = f.read(&mut buf, 0).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn limits_read_as_cgroup_v2_writes_them() {
        let limits = Arc::new(Mutex::new(CgroupLimits {
            cpu_max: Some((50_000, 100_000)),
            pids_max: Some(64),
            memory_max: Some(1 << 26),
        }));
        let root = new_cgroupfs(Weak::new(), limits.clone());
        assert_eq!(read(&root, "cpu.max"), "50000 100000\n");
        assert_eq!(read(&root, "pids.max"), "64\n");
        assert_eq!(read(&root, "memory.max"), "67108864\n");
        assert_eq!(read(&root, "cgroup.controllers"), "cpu memory pids\n");
        assert_eq!(root.statfs().unwrap().fs_type, CGROUP2_MAGIC);
        *limits.lock() = CgroupLimits::default();
        assert_eq!(read(&root, "cpu.max"), "max 100000\n", "an update shows");
        assert_eq!(read(&root, "pids.max"), "max\n");
        assert!(root.lookup(b"memory.max").unwrap().open(libc::O_WRONLY).is_err());
    }
}
