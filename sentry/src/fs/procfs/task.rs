//! The per-process directories of /proc: /proc/[pid] and
//! /proc/[pid]/task/[tid], with their files, magic links and the `fd`,
//! `fdinfo` and `task` directories. Nodes find their thread again at each
//! use, so a thread that exited makes them fail (`ENOENT` on lookup,
//! `ESRCH` on read).

use super::process::{self, MountRow, SigSets, Status, StatFields, VmCounts, CLOCK_TICKS};
use super::{parse_id, start_time, Proc};
use crate::abi::Errno;
use crate::fs::synthetic::{open_dir, path_ino, Attr, GenFile, Link};
use crate::kernel::signal::NSIG;
use crate::kernel::{thread, Kernel, Thread};
use crate::vfs::{Dentry, DirEntry, FileOps, Node, Stat, S_IFDIR, S_IFLNK, S_IFREG};
use std::sync::Arc;

/// The `d_type` of a directory entry for a thread's subdirectory.
const DT_DIR: u8 = libc::DT_DIR;
/// `SIG_IGN`.
const SIG_IGN: u64 = 1;
const RLIMIT_RSS: usize = 5;
const RLIMIT_SIGPENDING: usize = 11;
/// The `st_size` Linux reports for /proc/[pid]/fd links.
const FD_LINK_SIZE: u64 = 64;

/// A thread that per-process nodes show, looked up again at each use.
#[derive(Clone)]
pub(super) struct TaskRef {
    proc: Arc<Proc>,
    tid: i32,
}

impl TaskRef {
    pub fn new(proc: &Arc<Proc>, t: &Thread) -> TaskRef {
        TaskRef { proc: proc.clone(), tid: t.tid }
    }

    /// The kernel and the thread, or `ESRCH` once it has exited.
    fn get(&self) -> Result<(Arc<Kernel>, Arc<Thread>), Errno> {
        let k = self.proc.kernel()?;
        let t = k.thread(self.tid).ok_or(Errno::ESRCH)?;
        Ok((k, t))
    }

    /// As `get`, for lookups and listings (`ENOENT` once it has exited).
    fn get_for_lookup(&self) -> Result<(Arc<Kernel>, Arc<Thread>), Errno> {
        self.get().map_err(|_| Errno::ENOENT)
    }
}

/// The links of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LinkKind {
    Cwd,
    Root,
    Exe,
}

/// The generated files of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FileKind {
    Environ,
    Status,
    Limits,
    Comm,
    Cmdline,
    Stat,
    Statm,
    Maps,
    Mounts,
    MountInfo,
    Cgroup,
    OomScoreAdj,
    LoginUid,
}

/// An entry of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `task/`, in a thread group leader's /proc/[pid] only.
    Tasks,
    Fd,
    FdInfo,
    Link(LinkKind),
    File(FileKind),
}

/// The entries of a process directory, in Linux's order.
const ENTRIES: [(&str, Kind); 19] = [
    ("task", Kind::Tasks),
    ("fd", Kind::Fd),
    ("fdinfo", Kind::FdInfo),
    ("environ", Kind::File(FileKind::Environ)),
    ("status", Kind::File(FileKind::Status)),
    ("limits", Kind::File(FileKind::Limits)),
    ("comm", Kind::File(FileKind::Comm)),
    ("cmdline", Kind::File(FileKind::Cmdline)),
    ("stat", Kind::File(FileKind::Stat)),
    ("statm", Kind::File(FileKind::Statm)),
    ("maps", Kind::File(FileKind::Maps)),
    ("cwd", Kind::Link(LinkKind::Cwd)),
    ("root", Kind::Link(LinkKind::Root)),
    ("exe", Kind::Link(LinkKind::Exe)),
    ("mounts", Kind::File(FileKind::Mounts)),
    ("mountinfo", Kind::File(FileKind::MountInfo)),
    ("cgroup", Kind::File(FileKind::Cgroup)),
    ("oom_score_adj", Kind::File(FileKind::OomScoreAdj)),
    ("loginuid", Kind::File(FileKind::LoginUid)),
];

impl Kind {
    fn mode(self) -> u32 {
        match self {
            Kind::Tasks | Kind::FdInfo => S_IFDIR | 0o555,
            Kind::Fd => S_IFDIR | 0o500,
            Kind::Link(_) => S_IFLNK | 0o777,
            Kind::File(FileKind::Environ) => S_IFREG | 0o400,
            Kind::File(_) => S_IFREG | 0o444,
        }
    }
}

/// Sets the owner (the thread's effective ids) and time of a thread's node.
fn owned_attr(p: &Proc, k: &Kernel, t: &Thread, path: &str, mode: u32) -> Attr {
    let creds = t.creds();
    let mut a = p.attr(path, mode);
    a.uid = creds.euid;
    a.gid = creds.egid;
    a.time = start_time(k, t);
    a
}

/// /proc/[pid] or /proc/[pid]/task/[tid].
pub(super) struct ProcessDir {
    attr: Attr,
    task: TaskRef,
    path: String,
    leader: bool,
}

impl ProcessDir {
    /// The directory of `t` at `path`; `leader` gives it a `task/` entry.
    pub fn new(task: TaskRef, k: &Kernel, t: &Thread, path: String, leader: bool) -> Arc<ProcessDir> {
        let mut attr = owned_attr(&task.proc, k, t, &path, S_IFDIR | 0o555);
        attr.nlink = if leader { 5 } else { 4 };
        Arc::new(ProcessDir { attr, task, path, leader })
    }

    fn entries(&self) -> impl Iterator<Item = &(&'static str, Kind)> {
        ENTRIES.iter().filter(|(_, k)| self.leader || *k != Kind::Tasks)
    }

    fn child_attr(&self, name: &str, mode: u32) -> Attr {
        let path = format!("{}/{name}", self.path);
        let mut a = self.attr.clone();
        a.ino = path_ino(path.as_bytes());
        a.mode = mode;
        a.nlink = if mode & S_IFDIR != 0 { 2 } else { 1 };
        a
    }

    fn child(&self, name: &str, kind: Kind) -> Arc<dyn Node> {
        let attr = self.child_attr(name, kind.mode());
        let path = format!("{}/{name}", self.path);
        let task = self.task.clone();
        match kind {
            Kind::Tasks => Arc::new(TasksDir { attr, task, path }),
            Kind::Fd => Arc::new(FdDir { attr, task, path, info: false }),
            Kind::FdInfo => Arc::new(FdDir { attr, task, path, info: true }),
            Kind::Link(l) => {
                let target = task.clone();
                Link::magic(
                    attr,
                    Box::new(move || {
                        let (_, t) = task.get()?;
                        Ok(link_text(&link_dentry(l, &t)?, &t))
                    }),
                    Box::new(move || link_dentry(l, &target.get()?.1)),
                )
            }
            Kind::File(f) => GenFile::new(
                attr,
                Box::new(move || {
                    let (k, t) = task.get()?;
                    Ok(generate(f, &task.proc, &k, &t))
                }),
            ),
        }
    }
}

impl Node for ProcessDir {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.task.get_for_lookup()?;
        let (n, kind) = self.entries().find(|(n, _)| n.as_bytes() == name).ok_or(Errno::ENOENT)?;
        Ok(self.child(n, *kind))
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        self.task.get_for_lookup()?;
        Ok(self
            .entries()
            .map(|(n, k)| DirEntry {
                ino: path_ino(format!("{}/{n}", self.path).as_bytes()),
                kind: crate::vfs::dtype(k.mode()),
                name: n.as_bytes().to_vec(),
            })
            .collect())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        open_dir(flags)
    }

    fn rename(&self, _: &[u8], _: &Arc<dyn Node>, _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// /proc/[pid]/task: one directory per thread of the group.
struct TasksDir {
    attr: Attr,
    /// The group leader.
    task: TaskRef,
    path: String,
}

impl Node for TasksDir {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let (k, leader) = self.task.get_for_lookup()?;
        let tid = parse_id(name).ok_or(Errno::ENOENT)?;
        let t = k.thread(tid).filter(|t| t.tgid == leader.tgid).ok_or(Errno::ENOENT)?;
        Ok(ProcessDir::new(TaskRef::new(&self.task.proc, &t), &k, &t, format!("{}/{tid}", self.path), false))
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let (k, leader) = self.task.get_for_lookup()?;
        let threads = k.threads.lock();
        Ok(threads
            .values()
            .filter(|t| t.tgid == leader.tgid)
            .map(|t| DirEntry {
                ino: path_ino(format!("{}/{}", self.path, t.tid).as_bytes()),
                kind: DT_DIR,
                name: t.tid.to_string().into_bytes(),
            })
            .collect())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        open_dir(flags)
    }

    fn rename(&self, _: &[u8], _: &Arc<dyn Node>, _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// /proc/[pid]/fd (magic links to the open files) or fdinfo (`info`).
struct FdDir {
    attr: Attr,
    task: TaskRef,
    path: String,
    info: bool,
}

impl FdDir {
    fn child_attr(&self, fd: i32, mode: u32) -> Attr {
        let mut a = self.attr.clone();
        a.ino = path_ino(format!("{}/{fd}", self.path).as_bytes());
        a.mode = mode;
        a.nlink = 1;
        a
    }

    fn fd_link(&self, fd: i32, file: &crate::vfs::FileDescription) -> Arc<dyn Node> {
        let read = if file.readable() { 0o500 } else { 0 };
        let write = if file.writable() { 0o300 } else { 0 };
        let mut attr = self.child_attr(fd, S_IFLNK | read | write);
        attr.size = FD_LINK_SIZE;
        let (task, target) = (self.task.clone(), self.task.clone());
        Link::magic(
            attr,
            Box::new(move || {
                let (_, t) = task.get()?;
                Ok(link_text(&fd_file(&t, fd)?.dentry, &t))
            }),
            Box::new(move || Ok(fd_file(&target.get()?.1, fd)?.dentry.clone())),
        )
    }

    fn fdinfo_file(&self, fd: i32) -> Arc<dyn Node> {
        let task = self.task.clone();
        GenFile::new(
            self.child_attr(fd, S_IFREG | 0o444),
            Box::new(move || {
                let (_, t) = task.get()?;
                let fds = t.fds();
                let file = fds.get(fd).map_err(|_| Errno::ENOENT)?;
                let cloexec = if fds.cloexec(fd)? { libc::O_CLOEXEC.unsigned_abs() } else { 0 };
                let ino = file.stat().map_or(0, |s| s.ino);
                Ok(process::format_fdinfo(file.offset(), file.flags() | cloexec, file.dentry.mount.id, ino).into_bytes())
            }),
        )
    }
}

impl Node for FdDir {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let (_, t) = self.task.get_for_lookup()?;
        let fd = parse_id(name).ok_or(Errno::ENOENT)?;
        let file = fd_file(&t, fd)?;
        Ok(if self.info { self.fdinfo_file(fd) } else { self.fd_link(fd, &file) })
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let (_, t) = self.task.get_for_lookup()?;
        let kind = if self.info { libc::DT_REG } else { libc::DT_LNK };
        Ok(t.fds()
            .fds()
            .into_iter()
            .map(|fd| DirEntry {
                ino: path_ino(format!("{}/{fd}", self.path).as_bytes()),
                kind,
                name: fd.to_string().into_bytes(),
            })
            .collect())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        open_dir(flags)
    }

    fn rename(&self, _: &[u8], _: &Arc<dyn Node>, _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The open file `fd` of `t` (`ENOENT` once closed).
fn fd_file(t: &Thread, fd: i32) -> Result<Arc<crate::vfs::FileDescription>, Errno> {
    t.fds().get(fd).map_err(|_| Errno::ENOENT)
}

fn link_dentry(kind: LinkKind, t: &Thread) -> Result<Arc<Dentry>, Errno> {
    match kind {
        LinkKind::Cwd => Ok(t.fs().cwd()),
        LinkKind::Root => Ok(t.fs().root()),
        LinkKind::Exe => t.exe.lock().clone().ok_or(Errno::ENOENT),
    }
}

/// What `readlink` shows for a link to `d`: its path from the reader's root
/// (`t`'s if the reader is not a guest thread), or the name of an anonymous
/// file such as `pipe:[12]`.
fn link_text(d: &Arc<Dentry>, t: &Thread) -> Vec<u8> {
    if d.mount.fs_type == "anon_inodefs" {
        return d.name.clone();
    }
    let root = thread::current().map_or_else(|| t.fs().root(), |c| c.fs().root());
    d.path_from(&root)
}

fn generate(kind: FileKind, p: &Proc, k: &Kernel, t: &Thread) -> Vec<u8> {
    match kind {
        FileKind::Environ => {
            let a = *t.args.lock();
            read_guest(t, a.env_start, a.env_end)
        }
        FileKind::Cmdline => {
            let a = *t.args.lock();
            read_guest(t, a.arg_start, a.arg_end)
        }
        FileKind::Status => status(p, k, t),
        FileKind::Limits => process::format_limits(&*t.rlimits.lock()).into_bytes(),
        FileKind::Comm => {
            let mut c = t.comm.lock().clone();
            c.push(b'\n');
            c
        }
        FileKind::Stat => stat(k, t),
        FileKind::Statm => process::format_statm(&vm(t)).into_bytes(),
        FileKind::Maps => t.mm().maps_text().into_bytes(),
        FileKind::Mounts => process::format_mounts(&mount_rows(k, t)),
        FileKind::MountInfo => process::format_mountinfo(&mount_rows(k, t)),
        FileKind::Cgroup => b"0::/\n".to_vec(),
        FileKind::OomScoreAdj => b"0\n".to_vec(),
        FileKind::LoginUid => b"4294967295".to_vec(),
    }
}

/// Guest memory in `[start, end)`, as much as is readable (none if any of
/// it is not).
fn read_guest(t: &Thread, start: u64, end: u64) -> Vec<u8> {
    let Ok(len) = usize::try_from(end.saturating_sub(start)) else { return Vec::new() };
    let mut buf = vec![0u8; len];
    match t.mm().copy_in(start, &mut buf) {
        Ok(()) => buf,
        Err(_) => Vec::new(),
    }
}

/// The memory figures of `t`'s address space.
fn vm(t: &Thread) -> VmCounts {
    let exe = t.exe.lock().clone();
    let exe = exe.map(|d| String::from_utf8_lossy(&d.path_from(&t.fs().root())).into_owned()).unwrap_or_default();
    let mm = t.mm();
    let mut c = process::vm_counts(&mm.maps_text(), &exe);
    c.size = mm.mapped_bytes();
    c.rss = mm.resident_bytes();
    c
}

fn sig_sets(t: &Thread) -> SigSets {
    let mut s = SigSets { blocked: t.sigmask(), ..SigSets::default() };
    for sig in 1..=NSIG {
        let handler = t.sigactions.swap(sig, None).handler;
        let bit = 1u64 << (sig - 1);
        if handler == SIG_IGN {
            s.ignored |= bit;
        } else if handler > SIG_IGN {
            s.caught |= bit;
        }
    }
    s
}

/// The running state of `t`: only the reader itself is known to run.
fn state(t: &Thread) -> (char, &'static str) {
    if thread::current().is_some_and(|c| c.tid == t.tid) {
        ('R', "R (running)")
    } else {
        ('S', "S (sleeping)")
    }
}

/// The process group and session of `t`: the sandbox keeps no job control
/// yet, so both are its oldest living ancestor (normally the sandbox's
/// init, which is a session leader).
fn session(k: &Kernel, t: &Thread) -> i32 {
    let threads = k.threads.lock();
    let (mut top, mut ppid) = (t.tgid, t.ppid);
    for _ in 0..threads.len() {
        match threads.get(&ppid) {
            Some(p) => (top, ppid) = (p.tgid, p.ppid),
            None => break,
        }
    }
    top
}

fn thread_count(k: &Kernel, t: &Thread) -> usize {
    k.threads.lock().values().filter(|x| x.tgid == t.tgid).count()
}

/// The size of the fd table as Linux grows it: 64, then powers of two.
fn fd_table_size(t: &Thread) -> u64 {
    let highest = t.fds().fds().last().copied().unwrap_or(0);
    u64::try_from(highest).unwrap_or(0).saturating_add(1).next_power_of_two().max(64)
}

/// The lines of /proc/[pid]/status passed through from the host.
const HOST_STATUS_KEYS: [&str; 6] = [
    "Speculation_Store_Bypass",
    "SpeculationIndirectBranch",
    "Cpus_allowed",
    "Cpus_allowed_list",
    "Mems_allowed",
    "Mems_allowed_list",
];

fn status(p: &Proc, k: &Kernel, t: &Thread) -> Vec<u8> {
    let host_lines: String = HOST_STATUS_KEYS
        .iter()
        .filter_map(|key| p.host.status_value(key).map(|v| format!("{key}:\t{v}\n")))
        .collect();
    let name = t.comm.lock().clone();
    let creds = t.creds();
    let sid = session(k, t);
    let s = Status {
        name: &name,
        umask: t.fs().umask(),
        state: state(t).1,
        tgid: t.tgid,
        pid: t.tid,
        ppid: t.ppid,
        pgid: sid,
        sid,
        creds: &creds,
        fd_size: fd_table_size(t),
        vm: vm(t),
        threads: thread_count(k, t),
        sigq_max: t.rlimit(RLIMIT_SIGPENDING).cur,
        sigs: sig_sets(t),
        host_lines: &host_lines,
    };
    process::format_status(&s)
}

fn stat(k: &Kernel, t: &Thread) -> Vec<u8> {
    let name = t.comm.lock().clone();
    let since_boot = t.start.saturating_duration_since(k.boot_instant);
    let start_ticks =
        since_boot.as_secs() * CLOCK_TICKS + u64::from(since_boot.subsec_nanos()) / (1_000_000_000 / CLOCK_TICKS);
    let sid = session(k, t);
    let f = StatFields {
        pid: t.tid,
        comm: &name,
        state: state(t).0,
        ppid: t.ppid,
        pgid: sid,
        sid,
        threads: thread_count(k, t),
        start_ticks,
        vm: vm(t),
        rsslim: t.rlimit(RLIMIT_RSS).cur,
        sigs: sig_sets(t),
        exit_signal: if t.tid == t.tgid { libc::SIGCHLD } else { -1 },
        args: *t.args.lock(),
    };
    process::format_stat(&f)
}

/// The sandbox's mounts as `t` sees them from its root.
fn mount_rows(k: &Kernel, t: &Thread) -> Vec<MountRow> {
    let root = t.fs().root();
    k.mounts
        .all()
        .iter()
        .map(|m| MountRow {
            id: m.id,
            parent: m.mountpoint.as_ref().map_or(m.id, |mp| mp.mount.id),
            dev: m.root.stat().map_or(0, |s| s.dev),
            path: m.mountpoint.as_ref().map_or_else(|| b"/".to_vec(), |mp| mp.path_from(&root)),
            fs_type: m.fs_type.clone(),
            source: m.source.clone(),
            read_only: m.read_only,
        })
        .collect()
}
