//! The sandbox's /proc: read-only, generated from the kernel's state when a
//! file is opened. The root holds the system-wide files, `sys/`, the
//! `self` and `thread-self` links and one directory per process.

mod host;
#[cfg(test)]
mod kernel_tests;
mod mem;
mod net;
mod net_text;
mod ns_dir;
mod process;
mod sys;
mod system;
mod task;
mod task_files;
mod task_writes;

use super::synthetic::{
    path_ino, timespec, Attr, Dir, Entries, Entry, Fixed, FsInfo, GenFile, Generator, Link, PROC_SUPER_MAGIC,
};
use crate::abi::Errno;
use crate::kernel::{ipc, thread, Kernel, Thread};
use crate::vfs::{DirEntry, Node, TimeSpec, S_IFDIR, S_IFLNK, S_IFREG};
use host::Host;
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};
pub(crate) use task::pid_dir_thread;
use task::process_dir;

/// What every node of one /proc instance shares.
struct Proc {
    fs: Arc<FsInfo>,
    kernel: Weak<Kernel>,
    host: Host,
}

impl Proc {
    /// The attributes of the node at `path`: root-owned, 1 KiB blocks.
    fn attr(&self, path: &str, mode: u32) -> Attr {
        let mut a = Attr::new(&self.fs, path_ino(path.as_bytes()), mode);
        a.blksize = 1024;
        a
    }

    fn kernel(&self) -> Result<Arc<Kernel>, Errno> {
        self.kernel.upgrade().ok_or(Errno::ESRCH)
    }
}

/// The last component of `path`, as a directory entry name.
fn name_of(path: &str) -> Vec<u8> {
    path.rsplit('/').next().unwrap_or(path).as_bytes().to_vec()
}

fn file(p: &Arc<Proc>, path: &str, gen: Generator) -> Entry {
    (name_of(path), GenFile::new(p.attr(path, S_IFREG | 0o444), gen))
}

fn text(p: &Arc<Proc>, path: &str, content: &'static str) -> Entry {
    file(p, path, Box::new(move || Ok(content.as_bytes().to_vec())))
}

/// A file showing a number.
fn shown(p: &Arc<Proc>, path: &str, value: impl std::fmt::Display + Send + Sync + 'static) -> Entry {
    file(p, path, Box::new(move || Ok(format!("{value}\n").into_bytes())))
}

fn dir(p: &Arc<Proc>, path: &str, entries: Vec<Entry>) -> Entry {
    (name_of(path), Dir::fixed(p.attr(path, S_IFDIR | 0o555), entries))
}

/// A file generated from the kernel's state.
fn kernel_file(p: &Arc<Proc>, path: &str, gen: fn(&Proc, &Kernel) -> Vec<u8>) -> Entry {
    let q = p.clone();
    file(
        p,
        path,
        Box::new(move || {
            let k = q.kernel()?;
            Ok(gen(&q, &k))
        }),
    )
}

/// A file passing a host file through.
fn host_file(p: &Arc<Proc>, path: &str, pick: fn(&Host) -> &Vec<u8>) -> Entry {
    let q = p.clone();
    file(p, path, Box::new(move || Ok(pick(&q.host).clone())))
}

/// The /proc root; `kernel` is weak because the kernel owns its mounts.
pub(crate) fn new_procfs(kernel: Weak<Kernel>) -> Arc<dyn Node> {
    let boot = kernel.upgrade().map_or_else(SystemTime::now, |k| k.boot_time());
    let p = Arc::new(Proc { fs: FsInfo::new(PROC_SUPER_MAGIC, boot), kernel, host: Host::read() });
    let statics = Fixed(root_entries(&p));
    let mut attr = p.attr("/", S_IFDIR | 0o555);
    attr.ino = 1;
    attr.nlink = statics.nlink();
    Dir::new(attr, RootEntries { proc: p, statics })
}

fn root_entries(p: &Arc<Proc>) -> Vec<Entry> {
    vec![
        file(p, "/cmdline", {
            let release = String::from_utf8_lossy(&p.host.osrelease).trim().to_string();
            Box::new(move || Ok(format!("BOOT_IMAGE=/vmlinuz-{release}-husk quiet\n").into_bytes()))
        }),
        host_file(p, "/cpuinfo", |h| &h.cpuinfo),
        text(p, "/devices", system::DEVICES),
        text(p, "/filesystems", system::FILESYSTEMS),
        kernel_file(p, "/loadavg", |_, k| {
            let (total, last) = (k.tids().len(), k.last_tid());
            let load = k.load().snapshot(std::time::Instant::now());
            system::format_loadavg(load.avenrun, load.runnable, total, last).into_bytes()
        }),
        kernel_file(p, "/meminfo", |p, k| {
            let total = system::meminfo_kb(&p.host.meminfo, "MemTotal").unwrap_or(0);
            system::format_meminfo(&p.host.meminfo, total, k.memory().used() / 1024).into_bytes()
        }),
        (b"mounts".to_vec(), Link::fixed(p.attr("/mounts", S_IFLNK | 0o777), b"self/mounts")),
        (b"net".to_vec(), Link::fixed(p.attr("/net", S_IFLNK | 0o777), b"self/net")),
        (b"self".to_vec(), Link::dynamic(p.attr("/self", S_IFLNK | 0o777), Box::new(|| self_link(false)))),
        kernel_file(p, "/stat", |p, k| {
            let btime = k.boot_time().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let load = k.load().snapshot(std::time::Instant::now());
            system::format_stat(&system::StatCounters {
                cpus: p.host.cpu_count(),
                cpu: k.cpu_times(),
                uptime: k.uptime(),
                ctxt: load.switches,
                btime,
                processes: u64::try_from(k.last_tid()).unwrap_or(0),
                running: load.runnable,
            })
            .into_bytes()
        }),
        sys::sys_dir(p),
        dir(
            p,
            "/sysvipc",
            vec![
                kernel_file(p, "/sysvipc/msg", |_, k| k.ext::<ipc::Namespace>().msg.proc_text().into_bytes()),
                kernel_file(p, "/sysvipc/sem", |_, k| k.ext::<ipc::Namespace>().sem.proc_text().into_bytes()),
                kernel_file(p, "/sysvipc/shm", |_, k| k.ext::<ipc::Namespace>().shm.proc_text().into_bytes()),
            ],
        ),
        (b"thread-self".to_vec(), Link::dynamic(p.attr("/thread-self", S_IFLNK | 0o777), Box::new(|| self_link(true)))),
        kernel_file(p, "/uptime", |p, k| {
            let up = k.uptime();
            system::format_uptime(up, (up * p.host.cpu_count()).saturating_sub(k.cpu_time())).into_bytes()
        }),
        host_file(p, "/version", |h| &h.version),
    ]
}

/// `text` and a newline.
fn line(text: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text);
    v.push(b'\n');
    v
}

/// The text of /proc/self (`thread == false`) or /proc/thread-self.
fn self_link(thread: bool) -> Result<Vec<u8>, Errno> {
    let t = thread::current().ok_or(Errno::ENOENT)?;
    let text = if thread { format!("{}/task/{}", t.tgid(), t.tid()) } else { t.tgid().to_string() };
    Ok(text.into_bytes())
}

/// A process id or fd as /proc names it: decimal without leading zeros.
fn parse_id(name: &[u8]) -> Option<i32> {
    let leading_zero = name.len() > 1 && name.starts_with(b"0");
    if leading_zero || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

/// The /proc root's entries: the static ones, then one per process.
struct RootEntries {
    proc: Arc<Proc>,
    statics: Fixed,
}

impl Entries for RootEntries {
    fn lookup(&self, dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let Some(pid) = parse_id(name) else {
            return self.statics.lookup(dir, name);
        };
        let k = self.proc.kernel().map_err(|_| Errno::ENOENT)?;
        let t = k.thread(pid).ok_or(Errno::ENOENT)?;
        Ok(process_dir(&self.proc, &k, &t, format!("/{pid}"), t.tid() == t.tgid()))
    }

    fn list(&self, dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        let mut entries = self.statics.list(dir)?;
        if let Ok(k) = self.proc.kernel() {
            let threads = k.threads();
            let leaders = threads.iter().filter(|t| t.tid() == t.tgid());
            entries.extend(leaders.map(|t| DirEntry {
                ino: path_ino(format!("/{}", t.tid()).as_bytes()),
                kind: libc::DT_DIR,
                name: t.tid().to_string().into_bytes(),
            }));
        }
        Ok(entries)
    }
}

/// The time a thread started, as a timestamp.
fn start_time(k: &Kernel, t: &Thread) -> TimeSpec {
    timespec(k.boot_time() + t.start().saturating_duration_since(k.boot_instant()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procfs() -> Arc<dyn Node> {
        new_procfs(Weak::new())
    }

    fn read_all(node: &Arc<dyn Node>) -> Result<String, Errno> {
        let f = node.open(libc::O_RDONLY)?;
        let mut buf = vec![0u8; 1 << 20];
        let n = f.read(&mut buf, 0)?;
        buf.truncate(n);
        Ok(String::from_utf8(buf).unwrap())
    }

    fn walk(root: &Arc<dyn Node>, path: &str) -> Result<Arc<dyn Node>, Errno> {
        path.split('/').filter(|c| !c.is_empty()).try_fold(root.clone(), |n, c| n.lookup(c.as_bytes()))
    }

    #[test]
    fn root_lists_static_entries() {
        let root = procfs();
        let names: Vec<String> =
            root.readdir().unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect();
        for n in ["cpuinfo", "filesystems", "loadavg", "meminfo", "mounts", "self", "stat", "sys", "thread-self"] {
            assert!(names.iter().any(|x| x == n), "{n}");
        }
        let st = root.stat().unwrap();
        assert_eq!((st.ino, st.mode, st.blksize), (1, S_IFDIR | 0o555, 1024));
        assert_eq!(root.statfs().unwrap().fs_type, PROC_SUPER_MAGIC);
    }

    #[test]
    fn lookup_errors() {
        let root = procfs();
        assert_eq!(root.lookup(b"nonexistent").err(), Some(Errno::ENOENT));
        assert_eq!(root.lookup(b"1").err(), Some(Errno::ENOENT));
        assert_eq!(root.lookup(b"4194303").err(), Some(Errno::ENOENT));
        assert_eq!(walk(&root, "sys/kernel/nope").err(), Some(Errno::ENOENT));
        assert_eq!(walk(&root, "version/x").err(), Some(Errno::ENOTDIR));
        assert_eq!(parse_id(b"01"), None);
        assert_eq!(parse_id(b"1a"), None);
        assert_eq!(parse_id(b""), None);
        assert_eq!(parse_id(b"99999999999"), None);
        assert_eq!(parse_id(b"42"), Some(42));
        assert_eq!(parse_id(b"0"), Some(0));
    }

    #[test]
    fn self_needs_a_guest_thread() {
        let root = procfs();
        assert_eq!(root.lookup(b"self").unwrap().readlink().err(), Some(Errno::ENOENT));
        assert_eq!(root.lookup(b"thread-self").unwrap().readlink().err(), Some(Errno::ENOENT));
        assert_eq!(root.lookup(b"mounts").unwrap().readlink().unwrap(), b"self/mounts");
    }

    #[test]
    fn sys_files() {
        let root = procfs();
        let read = |p: &str| read_all(&walk(&root, p).unwrap()).unwrap();
        assert_eq!(read("sys/kernel/ostype"), "Linux\n");
        assert_eq!(read("sys/kernel/pid_max"), "4194304\n");
        assert_eq!(read("sys/kernel/yama/ptrace_scope"), "0\n", "the classic ptrace checks guest ptrace makes");
        assert_eq!(read("sys/vm/overcommit_memory"), "0\n");
        assert_eq!(read("sys/net/core/somaxconn"), "4096\n");
        assert_eq!(read("sys/kernel/ngroups_max"), "65536\n");
        let boot_id = read("sys/kernel/random/boot_id");
        assert_eq!(boot_id.len(), 37);
        assert_eq!(read("sys/kernel/random/boot_id"), boot_id);
        assert_ne!(read("sys/kernel/random/uuid"), read("sys/kernel/random/uuid"));
        assert_eq!(
            read("sys/kernel/osrelease").trim(),
            std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap().trim()
        );
        assert!(read("version").starts_with("Linux version "));
        assert!(read("cpuinfo").contains("processor"));
        assert_eq!(read("filesystems"), system::FILESYSTEMS);
    }

    #[test]
    fn kernel_files_without_a_kernel_fail() {
        let root = procfs();
        for p in ["meminfo", "uptime", "loadavg", "stat", "sys/kernel/hostname"] {
            assert_eq!(read_all(&walk(&root, p).unwrap()).err(), Some(Errno::ESRCH), "{p}");
        }
    }

    #[test]
    fn everything_is_read_only() {
        let root = procfs();
        let new = crate::vfs::NewNode { mode: 0o644, uid: 0, gid: 0 };
        assert_eq!(root.create(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(root.mkdir(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(root.unlink(b"version", false).err(), Some(Errno::EPERM));
        assert_eq!(root.rename(b"version", &root, b"x", 0).err(), Some(Errno::EPERM));
        assert_eq!(root.setattr(&crate::vfs::SetAttr::default()).err(), Some(Errno::EPERM));
        for p in ["version", "sys/kernel/ostype", "sys/vm/overcommit_memory", "sys/kernel/cap_last_cap"] {
            let n = walk(&root, p).unwrap();
            assert_eq!(n.open(libc::O_WRONLY).err(), Some(Errno::EACCES), "{p}");
            assert_eq!(n.open(libc::O_RDWR | libc::O_TRUNC).err(), Some(Errno::EACCES), "{p}");
            assert_eq!(n.stat().unwrap().mode, S_IFREG | 0o444);
        }
    }

    #[test]
    fn sysctls_are_writable_by_mode_and_need_the_kernel() {
        let root = procfs();
        for p in ["sys/kernel/hostname", "sys/kernel/keys/maxkeys", "sys/net/ipv4/ip_local_port_range"] {
            let n = walk(&root, p).unwrap();
            assert_eq!(n.stat().unwrap().mode, S_IFREG | 0o644, "{p}");
            let f = n.open(libc::O_WRONLY | libc::O_TRUNC).unwrap();
            assert_eq!(f.write(b"1", 0).err(), Some(Errno::ESRCH), "{p}");
        }
        assert_eq!(root.lookup(b"net").unwrap().readlink().unwrap(), b"self/net");
        assert_eq!(read_all(&walk(&root, "devices").unwrap()).unwrap(), system::DEVICES);
        assert!(read_all(&walk(&root, "cmdline").unwrap()).unwrap().starts_with("BOOT_IMAGE=/vmlinuz-"));
        assert_eq!(read_all(&walk(&root, "sys/kernel/cap_last_cap").unwrap()).unwrap(), "40\n");
        assert_eq!(read_all(&walk(&root, "sys/net/ipv6/bindv6only").unwrap()).unwrap(), "0\n");
    }

    #[test]
    fn inodes_are_stable_and_per_path() {
        let (a, b) = (procfs(), procfs());
        let ino = |r: &Arc<dyn Node>, p: &str| walk(r, p).unwrap().stat().unwrap().ino;
        assert_eq!(ino(&a, "sys/kernel/ostype"), ino(&b, "sys/kernel/ostype"));
        assert_ne!(ino(&a, "sys/kernel/ostype"), ino(&a, "sys/kernel/osrelease"));
        assert_ne!(a.stat().unwrap().dev, b.stat().unwrap().dev);
        assert_ne!(a.fs_id(), b.fs_id());
        assert_eq!(a.fs_id(), walk(&a, "sys/vm").unwrap().fs_id());
    }
}
