//! The content of the per-process files of /proc, gathered from a thread
//! and formatted by `process`.

use super::process::{self, MountRow, SigSets, StatFields, Status, VmCounts, CLOCK_TICKS};
use super::task::{FileKind, LinkKind};
use super::{line, Proc};
use crate::abi::signal::{NSIG, SIG_IGN};
use crate::abi::Errno;
use crate::kernel::cputime::CpuTimes;
use crate::kernel::{thread, Kernel, Thread};
use crate::vfs::dentry::{
    MNT_NOATIME, MNT_NODEV, MNT_NODIRATIME, MNT_NOEXEC, MNT_NOSUID, MNT_NOSYMFOLLOW, MNT_RELATIME,
};
use crate::vfs::{Dentry, Propagation};
use std::sync::Arc;
use std::time::Duration;

const RLIMIT_RSS: usize = 5;
const RLIMIT_SIGPENDING: usize = 11;

/// The object a link of a process directory points to.
pub(super) fn link_dentry(kind: LinkKind, t: &Thread) -> Result<Arc<Dentry>, Errno> {
    match kind {
        LinkKind::Cwd => Ok(t.fs().cwd()),
        LinkKind::Root => Ok(t.fs().root()),
        LinkKind::Exe => t.exe().lock().clone().ok_or(Errno::ENOENT),
    }
}

/// What `readlink` shows for a link to `d`: its path from the reader's root
/// (`t`'s if the reader is not a guest thread), or the name of an anonymous
/// file such as `pipe:[12]`.
pub(super) fn link_text(d: &Arc<Dentry>, t: &Thread) -> Vec<u8> {
    if d.mount.fs_type == "anon_inodefs" {
        return d.name.clone();
    }
    let root = thread::current().map_or_else(|| t.fs().root(), |c| c.fs().root());
    let mut text = d.path_from(&root);
    if unlinked(d) {
        text.extend_from_slice(b" (deleted)");
    }
    text
}

/// Whether `d`'s name no longer leads to its node (it was removed or
/// replaced since it was opened).
fn unlinked(d: &Dentry) -> bool {
    let Some(parent) = &d.parent else { return false };
    let ino = |n: &dyn crate::vfs::Node| n.stat().map(|s| s.ino).ok();
    match parent.node.lookup(&d.name) {
        Ok(n) => ino(n.as_ref()) != ino(d.node.as_ref()),
        Err(_) => true,
    }
}

/// The content of a process directory's file.
/// `process`: the file of /proc/[pid] (the whole process), not of
/// /proc/[pid]/task/[tid] (one thread).
pub(super) fn generate(kind: FileKind, p: &Proc, k: &Kernel, t: &Thread, process: bool) -> Vec<u8> {
    match kind {
        FileKind::Auxv => t.auxv().lock().clone(),
        FileKind::Environ => {
            let a = *t.args().lock();
            read_guest(t, a.env_start, a.env_end)
        }
        FileKind::Cmdline => {
            let a = *t.args().lock();
            read_guest(t, a.arg_start, a.arg_end)
        }
        FileKind::Status => status(p, k, t),
        FileKind::Limits => process::format_limits(&t.group().rlimits()).into_bytes(),
        FileKind::Comm => line(&t.comm()),
        FileKind::Stat => stat(k, t, process),
        FileKind::Statm => process::format_statm(&vm(t)).into_bytes(),
        FileKind::Maps => t.mm().maps_text().into_bytes(),
        FileKind::Smaps => t.mm().smaps_text().into_bytes(),
        FileKind::Mounts => process::format_mounts(&mount_rows(t)),
        FileKind::MountInfo => process::format_mountinfo(&mount_rows(t)),
        FileKind::Cgroup => b"0::/\n".to_vec(),
        FileKind::OomScore => {
            let total = super::system::meminfo_kb(&p.host.meminfo, "MemTotal").unwrap_or(0) * 1024;
            let score = process::oom_score(t.mm().resident_bytes(), total, t.group().oom_score_adj());
            format!("{score}\n").into_bytes()
        }
        FileKind::OomScoreAdj => format!("{}\n", t.group().oom_score_adj()).into_bytes(),
        FileKind::CoredumpFilter => format!("{:08x}\n", t.group().coredump_filter()).into_bytes(),
        FileKind::LoginUid => b"4294967295".to_vec(),
    }
}

/// /proc/[pid]/fdinfo/`fd`.
pub(super) fn fdinfo(k: &Kernel, t: &Thread, fd: i32) -> Result<Vec<u8>, Errno> {
    let fds = t.fds();
    let file = fds.get(fd).map_err(|_| Errno::ENOENT)?;
    let cloexec = if fds.cloexec(fd)? { libc::O_CLOEXEC.unsigned_abs() } else { 0 };
    let ino = file.stat().map_or(0, |s| s.ino);
    let mut text = process::format_fdinfo(file.offset(), file.flags() | cloexec, file.dentry.mount.id, ino);
    if let Ok(p) = file.ops.clone().into_any().downcast::<crate::fs::pidfd::PidFd>() {
        // As Linux: the process's pid, or -1 once it was reaped.
        let reaped = p.group().process().status.is_some() && k.procs().pgid(p.pid()).is_none();
        let pid = if reaped { -1 } else { p.pid() };
        text.push_str(&format!("Pid:\t{pid}\nNSpid:\t{pid}\n"));
    }
    Ok(text.into_bytes())
}

/// Guest memory in `[start, end)`, or nothing if any of it is unreadable.
fn read_guest(t: &Thread, start: u64, end: u64) -> Vec<u8> {
    let Ok(len) = usize::try_from(end.saturating_sub(start)) else {
        return Vec::new();
    };
    let mut buf = vec![0u8; len];
    match t.mm().copy_in(start, &mut buf) {
        Ok(()) => buf,
        Err(_) => Vec::new(),
    }
}

/// The memory figures of `t`'s address space.
fn vm(t: &Thread) -> VmCounts {
    let exe = t.exe().lock().clone();
    let exe = exe.map(|d| String::from_utf8_lossy(&d.path_from(&t.fs().root())).into_owned()).unwrap_or_default();
    let mm = t.mm();
    let mut c = process::vm_counts(&mm.maps_text(), &exe);
    c.size = mm.mapped_bytes();
    c.rss = mm.resident_bytes();
    c.locked = mm.locked_bytes();
    c
}

fn sig_sets(t: &Thread) -> SigSets {
    let mut s = SigSets {
        pending: t.own_pending(),
        shared: t.group().shared_pending().bits(),
        blocked: t.sigmask(),
        ..SigSets::default()
    };
    for sig in 1..=NSIG {
        let handler = t.sigactions().swap(sig, None).handler;
        let bit = 1u64 << (sig - 1);
        if handler == SIG_IGN {
            s.ignored |= bit;
        } else if handler > SIG_IGN {
            s.caught |= bit;
        }
    }
    s
}

/// The running state of `t`: stopped by job control, or running (only
/// the reader itself is known to), or sleeping.
fn state(k: &Kernel, t: &Thread) -> (char, &'static str) {
    if k.procs().stopped_by(t.tgid()).is_some() {
        ('T', "T (stopped)")
    } else if t.sleeping().load(std::sync::atomic::Ordering::Relaxed) {
        ('S', "S (sleeping)")
    } else {
        ('R', "R (running)")
    }
}

/// The parent, process group and session of `t`'s process.
fn family(k: &Kernel, t: &Thread) -> (i32, i32, i32) {
    let pid = t.tgid();
    match (k.procs().pgid(pid), k.procs().sid(pid)) {
        (Some(pgid), Some(sid)) => (k.procs().ppid(pid), pgid, sid),
        _ => (0, pid, pid),
    }
}

fn thread_count(k: &Kernel, t: &Thread) -> usize {
    k.thread_group(t.tgid()).map_or(0, |g| g.thread_count())
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

/// The host's lines of /proc/[pid]/status, with `t`'s CPU affinity if it
/// set one.
fn host_lines(p: &Proc, t: &Thread) -> String {
    let affinity = t.attrs().lock().cpu_affinity.clone();
    let mut out = String::new();
    for key in HOST_STATUS_KEYS {
        let Some(host) = p.host.status_value(key) else {
            continue;
        };
        let value = match (key, &affinity) {
            ("Cpus_allowed", Some(mask)) => process::format_cpumask(mask, host),
            ("Cpus_allowed_list", Some(mask)) => process::format_cpulist(mask),
            _ => host.to_string(),
        };
        out.push_str(&format!("{key}:\t{value}\n"));
    }
    out
}

fn status(p: &Proc, k: &Kernel, t: &Thread) -> Vec<u8> {
    let host_lines = host_lines(p, t);
    let name = t.comm();
    let creds = t.creds();
    let (ppid, pgid, sid) = family(k, t);
    let s = Status {
        name: &name,
        umask: t.fs().umask(),
        state: state(k, t).1,
        tgid: t.tgid(),
        pid: t.tid(),
        ppid,
        pgid,
        sid,
        creds: &creds,
        fd_size: fd_table_size(t),
        vm: vm(t),
        threads: thread_count(k, t),
        sigq_max: t.rlimit(RLIMIT_SIGPENDING).cur,
        sigs: sig_sets(t),
        no_new_privs: t.attrs().lock().no_new_privs,
        seccomp: (t.seccomp().mode(), t.seccomp().filter_count()),
        host_lines: &host_lines,
    };
    process::format_status(&s)
}

fn stat(k: &Kernel, t: &Thread, process: bool) -> Vec<u8> {
    let name = t.comm();
    let since_boot = t.start().saturating_duration_since(k.boot_instant());
    let start_ticks =
        since_boot.as_secs() * CLOCK_TICKS + u64::from(since_boot.subsec_nanos()) / (1_000_000_000 / CLOCK_TICKS);
    let (ppid, pgid, sid) = family(k, t);
    let f = StatFields {
        pid: t.tid(),
        comm: &name,
        state: state(k, t).0,
        ppid,
        pgid,
        sid,
        threads: thread_count(k, t),
        start_ticks,
        times: cpu_ticks(k, t, process),
        vm: vm(t),
        rsslim: t.rlimit(RLIMIT_RSS).cur,
        sigs: sig_sets(t),
        exit_signal: if t.tid() == t.tgid() { libc::SIGCHLD } else { -1 },
        args: *t.args().lock(),
        nice: t.nice().load(std::sync::atomic::Ordering::Relaxed),
    };
    process::format_stat(&f)
}

/// utime, stime, cutime and cstime of `t`'s process (or of `t` alone), in
/// clock ticks; a run of guest code under way counts as user time.
fn cpu_ticks(k: &Kernel, t: &Thread, process: bool) -> [u64; 4] {
    let group = t.group();
    let own = if process {
        k.process_cpu_times(group)
    } else {
        let running = if t.cpu().running() { t.cpu().running_user(t.mm().space().cpu_time()) } else { Duration::ZERO };
        let mine = t.cpu().times();
        CpuTimes { user: mine.user.saturating_add(running), system: mine.system }
    };
    let children = group.cpu().children();
    [own.user, own.system, children.user, children.system].map(super::system::ticks)
}

/// The mounts of `t`'s namespace that it can reach from its root, as it
/// sees them.
fn mount_rows(t: &Thread) -> Vec<MountRow> {
    let fs = t.fs();
    let root = fs.root();
    fs.mounts()
        .all()
        .iter()
        .filter(|m| Dentry::mount_root(m).is_under(&root))
        .map(|m| MountRow {
            id: m.id,
            // The namespace's root sits, as a container's does, on a
            // mount nobody sees (Linux's rootfs): its parent is no listed
            // mount, never itself.
            parent: m.mountpoint.as_ref().map_or(ROOTFS_ID, |mp| mp.mount.id),
            dev: m.root.stat().map_or(0, |s| s.dev),
            path: Dentry::mount_root(m).path_from(&root),
            fs_type: m.fs_type.clone(),
            source: m.source.clone(),
            read_only: m.read_only(),
            flags: mount_flags(m.live.get()),
            super_opts: m.opts.super_opts.clone(),
            fs_root: if m.opts.fs_root.is_empty() { b"/".to_vec() } else { m.opts.fs_root.clone() },
            propagation: match m.opts.propagation {
                Propagation::Private => String::new(),
                Propagation::Shared(n) => format!("shared:{n} "),
                Propagation::Slave(n) => format!("master:{n} "),
                Propagation::Unbindable => "unbindable ".into(),
            },
        })
        .collect()
}

/// The parent id mountinfo shows for the namespace's root.
const ROOTFS_ID: u64 = 0;

/// The per-mount options after rw/ro, as Linux's `show_mnt_opts` lists them.
fn mount_flags(bits: u32) -> String {
    let names = [
        (MNT_NOSUID, ",nosuid"),
        (MNT_NODEV, ",nodev"),
        (MNT_NOEXEC, ",noexec"),
        (MNT_NOATIME, ",noatime"),
        (MNT_NODIRATIME, ",nodiratime"),
        (MNT_RELATIME, ",relatime"),
        (MNT_NOSYMFOLLOW, ",nosymfollow"),
    ];
    names.iter().filter(|(bit, _)| bits & bit != 0).map(|(_, name)| *name).collect()
}
