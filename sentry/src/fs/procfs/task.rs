//! The per-process directories of /proc: /proc/[pid] and
//! /proc/[pid]/task/[tid], with their files, magic links and the `fd`,
//! `fdinfo` and `task` directories. Nodes find their thread again at each
//! use, so a thread that exited makes them fail (`ENOENT` on lookup,
//! `ESRCH` on read).

use super::task_files::{fdinfo, generate, link_dentry, link_text};
use super::{parse_id, start_time, Proc};
use crate::abi::Errno;
use crate::fs::synthetic::{path_ino, Attr, Dir, Entries, GenFile, Link};
use crate::kernel::{Kernel, Thread};
use crate::vfs::{dtype, DirEntry, FileDescription, Node, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use std::sync::Arc;

/// The `st_size` Linux reports for /proc/[pid]/fd links.
const FD_LINK_SIZE: u64 = 64;

/// A thread that per-process nodes show, looked up again at each use.
#[derive(Clone)]
pub(super) struct TaskRef {
    proc: Arc<Proc>,
    tid: i32,
}

impl TaskRef {
    /// The kernel and the thread, or `ESRCH` once it has exited.
    pub(super) fn get(&self) -> Result<(Arc<Kernel>, Arc<Thread>), Errno> {
        let k = self.proc.kernel()?;
        let t = k.thread(self.tid).ok_or(Errno::ESRCH)?;
        Ok((k, t))
    }

    /// As `get`, for lookups and listings (`ENOENT` once it has exited).
    pub(super) fn get_for_lookup(&self) -> Result<(Arc<Kernel>, Arc<Thread>), Errno> {
        self.get().map_err(|_| Errno::ENOENT)
    }
}

/// The links of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LinkKind {
    Cwd,
    Root,
    Exe,
}

/// The generated files of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FileKind {
    Auxv,
    Environ,
    Status,
    Limits,
    Comm,
    Cmdline,
    Stat,
    Statm,
    Maps,
    Smaps,
    Mounts,
    MountInfo,
    Cgroup,
    OomScore,
    OomScoreAdj,
    CoredumpFilter,
    LoginUid,
}

/// An entry of a process directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `task/`, in a thread group leader's /proc/[pid] only.
    Tasks,
    Fd,
    FdInfo,
    /// `ns/`: the namespace links.
    Ns,
    /// `net/`: the network namespace's files.
    Net,
    /// `mem`: the address space.
    Mem,
    Link(LinkKind),
    File(FileKind),
}

impl Kind {
    fn mode(self) -> u32 {
        match self {
            Kind::Tasks | Kind::FdInfo | Kind::Net => S_IFDIR | 0o555,
            Kind::Fd => S_IFDIR | 0o500,
            Kind::Ns => S_IFDIR | 0o511,
            Kind::Link(_) => S_IFLNK | 0o777,
            Kind::Mem => S_IFREG | 0o600,
            Kind::File(FileKind::Environ | FileKind::Auxv) => S_IFREG | 0o400,
            Kind::File(f) if super::task_writes::writer(f).is_some() => S_IFREG | 0o644,
            Kind::File(_) => S_IFREG | 0o444,
        }
    }
}

/// The entries of a process directory, in Linux's order.
const ENTRIES: [(&str, Kind); 26] = [
    ("task", Kind::Tasks),
    ("fd", Kind::Fd),
    ("fdinfo", Kind::FdInfo),
    ("ns", Kind::Ns),
    ("net", Kind::Net),
    ("auxv", Kind::File(FileKind::Auxv)),
    ("environ", Kind::File(FileKind::Environ)),
    ("status", Kind::File(FileKind::Status)),
    ("limits", Kind::File(FileKind::Limits)),
    ("comm", Kind::File(FileKind::Comm)),
    ("cmdline", Kind::File(FileKind::Cmdline)),
    ("stat", Kind::File(FileKind::Stat)),
    ("statm", Kind::File(FileKind::Statm)),
    ("maps", Kind::File(FileKind::Maps)),
    ("mem", Kind::Mem),
    ("smaps", Kind::File(FileKind::Smaps)),
    ("cwd", Kind::Link(LinkKind::Cwd)),
    ("root", Kind::Link(LinkKind::Root)),
    ("exe", Kind::Link(LinkKind::Exe)),
    ("mounts", Kind::File(FileKind::Mounts)),
    ("mountinfo", Kind::File(FileKind::MountInfo)),
    ("cgroup", Kind::File(FileKind::Cgroup)),
    ("oom_score", Kind::File(FileKind::OomScore)),
    ("oom_score_adj", Kind::File(FileKind::OomScoreAdj)),
    ("loginuid", Kind::File(FileKind::LoginUid)),
    ("coredump_filter", Kind::File(FileKind::CoredumpFilter)),
];

/// The entries of a process directory (`leader`: of a thread group leader).
fn entries(leader: bool) -> impl Iterator<Item = &'static (&'static str, Kind)> {
    ENTRIES.iter().filter(move |(_, k)| leader || *k != Kind::Tasks)
}

/// The attributes of the node at `path` in a directory with `parent`'s.
pub(super) fn child_attr(parent: &Attr, path: &str, mode: u32) -> Attr {
    let mut a = parent.clone();
    a.ino = path_ino(path.as_bytes());
    a.mode = mode;
    a.nlink = if mode & S_IFMT == S_IFDIR { 2 } else { 1 };
    a
}

/// The directory of `t` at `path` (/proc/[pid] or /proc/[pid]/task/[tid]),
/// owned by its effective ids; `leader` gives it a `task/` entry.
pub(super) fn process_dir(p: &Arc<Proc>, k: &Kernel, t: &Thread, path: String, leader: bool) -> Arc<dyn Node> {
    let mut attr = p.attr(&path, S_IFDIR | 0o555);
    // Like Linux's task_dump_owner: a non-dumpable process's files are root's.
    if t.group().dumpable() == 1 {
        let creds = t.creds();
        (attr.uid, attr.gid) = (creds.euid, creds.egid);
    }
    attr.time = start_time(k, t);
    let subdirs = entries(leader).filter(|(_, kind)| kind.mode() & S_IFMT == S_IFDIR);
    attr.nlink = 2 + subdirs.count() as u64;
    let task = TaskRef { proc: p.clone(), tid: t.tid() };
    Dir::new(attr, ProcessEntries { task, path, leader })
}

/// The thread a /proc/[pid] directory (not a task/[tid] one) names, for
/// pidfd_send_signal, which takes one for a pidfd (Linux's
/// `tgid_pidfd_to_pid`): None for any other node, ESRCH once it exited.
pub(crate) fn pid_dir_thread(node: &dyn Node) -> Option<Result<Arc<Thread>, Errno>> {
    let e = node.as_any().downcast_ref::<Dir<ProcessEntries>>()?.entries();
    (e.path.matches('/').count() == 1).then(|| e.task.get().map(|(_, t)| t))
}

/// The entries of /proc/[pid] and /proc/[pid]/task/[tid].
struct ProcessEntries {
    task: TaskRef,
    path: String,
    leader: bool,
}

impl ProcessEntries {
    fn child(&self, dir: &Attr, name: &str, kind: Kind) -> Arc<dyn Node> {
        let path = format!("{}/{name}", self.path);
        let attr = child_attr(dir, &path, kind.mode());
        let task = self.task.clone();
        match kind {
            Kind::Tasks => Dir::new(attr, TaskEntries { task, path }),
            Kind::Ns => Dir::new(attr, super::ns_dir::NsEntries { task, path }),
            Kind::Net => super::net::net_dir(&task.proc, &path, attr),
            Kind::Mem => Arc::new(super::mem::MemNode { attr, task }),
            Kind::Fd | Kind::FdInfo => {
                let info = kind == Kind::FdInfo;
                Dir::new(attr, FdEntries { task, path, info })
            }
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
            Kind::File(f) => {
                let leader = self.leader;
                let target = task.clone();
                let gen = Box::new(move || {
                    let (k, t) = task.get()?;
                    Ok(generate(f, &task.proc, &k, &t, leader))
                });
                match super::task_writes::writer(f) {
                    Some(write) => GenFile::writable(attr, gen, Box::new(move |data| write(&target.get()?.1, data))),
                    None => GenFile::new(attr, gen),
                }
            }
        }
    }
}

impl Entries for ProcessEntries {
    fn lookup(&self, dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.task.get_for_lookup()?;
        let (n, kind) = entries(self.leader).find(|(n, _)| n.as_bytes() == name).ok_or(Errno::ENOENT)?;
        Ok(self.child(dir, n, *kind))
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.task.get_for_lookup()?;
        Ok(entries(self.leader)
            .map(|(n, k)| DirEntry {
                ino: path_ino(format!("{}/{n}", self.path).as_bytes()),
                kind: dtype(k.mode()),
                name: n.as_bytes().to_vec(),
            })
            .collect())
    }
}

/// /proc/[pid]/task: one directory per thread of the group.
struct TaskEntries {
    /// The group leader.
    task: TaskRef,
    path: String,
}

impl Entries for TaskEntries {
    fn lookup(&self, _dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let (k, leader) = self.task.get_for_lookup()?;
        let tid = parse_id(name).ok_or(Errno::ENOENT)?;
        let t = k.thread(tid).filter(|t| t.tgid() == leader.tgid()).ok_or(Errno::ENOENT)?;
        let path = format!("{}/{tid}", self.path);
        Ok(process_dir(&self.task.proc, &k, &t, path, false))
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        let (k, leader) = self.task.get_for_lookup()?;
        let threads = k.group(leader.tgid());
        Ok(threads
            .iter()
            .map(|t| DirEntry {
                ino: path_ino(format!("{}/{}", self.path, t.tid()).as_bytes()),
                kind: libc::DT_DIR,
                name: t.tid().to_string().into_bytes(),
            })
            .collect())
    }
}

/// /proc/[pid]/fd (magic links to the open files) or fdinfo (`info`).
struct FdEntries {
    task: TaskRef,
    path: String,
    info: bool,
}

impl FdEntries {
    fn fd_link(&self, dir: &Attr, fd: i32, file: &FileDescription) -> Arc<dyn Node> {
        let read = if file.readable() { 0o500 } else { 0 };
        let write = if file.writable() { 0o300 } else { 0 };
        let path = format!("{}/{fd}", self.path);
        let mut attr = child_attr(dir, &path, S_IFLNK | read | write);
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

    fn fdinfo_file(&self, dir: &Attr, fd: i32) -> Arc<dyn Node> {
        let path = format!("{}/{fd}", self.path);
        let task = self.task.clone();
        GenFile::new(
            child_attr(dir, &path, S_IFREG | 0o444),
            Box::new(move || {
                let (k, t) = task.get()?;
                fdinfo(&k, &t, fd)
            }),
        )
    }
}

impl Entries for FdEntries {
    fn lookup(&self, dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        let (_, t) = self.task.get_for_lookup()?;
        let fd = parse_id(name).ok_or(Errno::ENOENT)?;
        let file = fd_file(&t, fd)?;
        Ok(if self.info { self.fdinfo_file(dir, fd) } else { self.fd_link(dir, fd, &file) })
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
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
}

/// The open file `fd` of `t` (`ENOENT` once closed).
fn fd_file(t: &Thread, fd: i32) -> Result<Arc<FileDescription>, Errno> {
    t.fds().get(fd).map_err(|_| Errno::ENOENT)
}
