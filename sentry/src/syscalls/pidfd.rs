//! System calls: `pidfd_open`, `pidfd_send_signal`, `pidfd_getfd`, the
//! descriptors that name a process (`fs::pidfd`); `waitid(P_PIDFD)` is
//! `process.rs`'.

use super::args::{self, int, uint};
use super::{ControlEntries, Entries, Support};
use crate::abi::fcntl::{O_NONBLOCK, O_RDWR};
use crate::abi::{Errno, SysResult};
use crate::fs::pidfd::PidFd;
use crate::kernel::{Kernel, Outcome, Task, Thread, ThreadGroup};
use crate::vfs::FileDescription;
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_pidfd_open,
        sys_pidfd_open,
        Support::Partial("PIDFD_NONBLOCK and PIDFD_THREAD (a pidfd of one thread); a thread's pidfd does not follow an exec's change of leader"),
    ),
    (libc::SYS_pidfd_getfd, sys_pidfd_getfd, Support::Full),
];

/// A signal the caller sends its own process may end it.
pub(super) const CONTROL: ControlEntries = &[(
    libc::SYS_pidfd_send_signal,
    sys_pidfd_send_signal,
    Support::Partial("as kill (tgkill for a PIDFD_THREAD pidfd), or rt_sigqueueinfo with a siginfo, through a pidfd or a /proc/[pid] directory; PIDFD_SIGNAL_THREAD and PIDFD_SIGNAL_THREAD_GROUP choose the scope, PIDFD_SIGNAL_PROCESS_GROUP returns EINVAL"),
)];

const PIDFD_NONBLOCK: u32 = O_NONBLOCK;
/// pidfd_open: a pidfd of one thread (O_EXCL's bit).
const PIDFD_THREAD: u32 = 0o200;
/// pidfd_send_signal's scopes.
const PIDFD_SIGNAL_THREAD: u32 = 1;
const PIDFD_SIGNAL_THREAD_GROUP: u32 = 2;

/// The pidfd `fd` names: EBADF if it is not one.
pub(super) fn pidfd(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Arc<PidFd>), Errno> {
    let f = args::file(task, fd)?;
    let p = f.ops.clone().into_any().downcast::<PidFd>().map_err(|_| Errno::EBADF)?;
    Ok((f, p))
}

/// pidfd_open(pid, flags): a pidfd of process `pid` (a thread group's
/// leader: another thread's tid is ENOENT, as Linux 6.15), alive or a
/// zombie not yet reaped (its pidfd is readable at once); with
/// PIDFD_THREAD, of thread `pid`, any thread of a process.
fn sys_pidfd_open(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (pid, flags) = (int(a[0]), uint(a[1]));
    if flags & !(PIDFD_NONBLOCK | PIDFD_THREAD) != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let thread = flags & PIDFD_THREAD != 0;
    let group = match task.kernel.thread(pid) {
        Some(t) if t.tgid() != pid && !thread => return Err(Errno::ENOENT),
        Some(t) => t.group().clone(),
        None => task.kernel.procs().group_of(pid).ok_or(Errno::ESRCH)?,
    };
    let k = &task.kernel;
    let (ino, now) = (k.anon_ino(), super::fd::now());
    let p = if thread { PidFd::of_thread(ino, now, group, pid) } else { PidFd::new(ino, now, group) };
    let d = k.anon_dentry(b"anon_inode:[pidfd]", p.clone());
    let f = FileDescription::new(d, p, O_RDWR | (flags & PIDFD_NONBLOCK));
    // A pidfd is always close-on-exec.
    let fd = task.thread.fds().install(f, true, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}

/// Installs in `parent`'s table a pidfd of the new process `group`
/// (CLONE_PIDFD) and writes its number to `addr`.
pub(super) fn install_for_child_of(
    k: &Kernel,
    parent: &Thread,
    group: &Arc<ThreadGroup>,
    addr: u64,
) -> Result<(), Errno> {
    let p = PidFd::new(k.anon_ino(), super::fd::now(), group.clone());
    let d = k.anon_dentry(b"anon_inode:[pidfd]", p.clone());
    let fds = parent.fds();
    let fd = fds.install(FileDescription::new(d, p, O_RDWR), true, 0, parent.nofile())?;
    if let Err(e) = parent.mm().copy_out(addr, &fd.to_le_bytes()) {
        let _ = fds.remove(fd);
        return Err(e);
    }
    Ok(())
}

/// A live thread of the process `p` names, or ESRCH once it has exited.
pub(super) fn live_thread(p: &PidFd) -> Result<Arc<Thread>, Errno> {
    if p.group().process().status.is_some() {
        return Err(Errno::ESRCH);
    }
    p.group().threads().into_iter().next().ok_or(Errno::ESRCH)
}

/// The thread a thread-directed signal through `p` goes to: the thread it
/// names, or the process's leader; ESRCH once that thread exited.
fn named_thread(k: &Kernel, p: &PidFd) -> Result<Arc<Thread>, Errno> {
    let tid = p.thread().unwrap_or_else(|| p.pid());
    k.thread(tid).filter(|t| Arc::ptr_eq(t.group(), p.group())).ok_or(Errno::ESRCH)
}

/// pidfd_send_signal(pidfd, sig, info, flags): kill() of the process, or
/// with `info`, rt_sigqueueinfo()'s rules for the caller's siginfo. A
/// descriptor of a /proc/[pid] directory serves as the pidfd, as on Linux.
fn sys_pidfd_send_signal(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (sig, info, flags) = (int(a[1]), a[2], uint(a[3]));
    // At most one scope, and not a process group's (unsupported).
    if flags & !(PIDFD_SIGNAL_THREAD | PIDFD_SIGNAL_THREAD_GROUP) != 0 || flags.count_ones() > 1 {
        return Err(Errno::EINVAL);
    }
    let f = args::file(task, a[0])?;
    let pidfd = f.ops.clone().into_any().downcast::<PidFd>();
    // A PIDFD_THREAD pidfd signals its thread unless told otherwise.
    let directed = match flags {
        PIDFD_SIGNAL_THREAD => true,
        PIDFD_SIGNAL_THREAD_GROUP => false,
        _ => pidfd.as_ref().is_ok_and(|p| p.thread().is_some()),
    };
    // The live process, or its pid while it is a zombie not yet reaped
    // (still there: the signal does nothing, as kill's); a reaped process
    // is ESRCH.
    let target = match pidfd {
        Ok(p) if directed => Ok(named_thread(&task.kernel, &p)?),
        Ok(p) => match live_thread(&p) {
            Ok(t) => Ok(t),
            Err(e) => {
                if p.group().is_reaped() {
                    return Err(e);
                }
                Err(p.pid())
            }
        },
        Err(_) => Ok(crate::fs::procfs::pid_dir_thread(f.dentry.node.as_ref()).ok_or(Errno::EBADF)??),
    };
    let given = if info == 0 {
        None
    } else {
        // The siginfo must be for this signal (Linux: EINVAL otherwise).
        let mut raw = [0u8; 4];
        task.thread.mm().copy_in(info, &mut raw)?;
        if i32::from_le_bytes(raw) != sig {
            return Err(Errno::EINVAL);
        }
        let tgid = target.as_ref().map_or_else(|&pid| pid, |t| t.tgid());
        Some(super::signal::given_info(task, info, sig, tgid)?)
    };
    match (target, given) {
        (Err(_), _) => super::signal::to_exiting(sig).map(Outcome::Value),
        (Ok(t), None) => super::signal::send(task, t, sig, directed),
        (Ok(t), Some(given)) => super::signal::send_info(task, t, directed, given),
    }
}

/// pidfd_getfd(pidfd, targetfd, flags): a copy of the process's
/// descriptor `targetfd`, close-on-exec, if the caller may ptrace it
/// (same real, effective and saved ids and the target dumpable, or
/// CAP_SYS_PTRACE).
fn sys_pidfd_getfd(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (target_fd, flags) = (int(a[1]), uint(a[2]));
    let (_, p) = pidfd(task, a[0])?;
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let target = live_thread(&p)?;
    // ptrace_may_access: a process that made itself non-dumpable (an ssh
    // or gpg agent guarding its keys) is out of reach of its own user.
    let dumpable = target.group().dumpable() != 0;
    if target.tgid() != task.thread.tgid() && !task.thread.creds().may_read_process(&target.creds(), dumpable) {
        return Err(Errno::EPERM);
    }
    let f = target.fds().get(target_fd)?;
    let fd = task.thread.fds().install(f, true, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}
