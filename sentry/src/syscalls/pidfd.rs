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
        Support::Partial("PIDFD_NONBLOCK; PIDFD_THREAD (a pidfd of one thread) returns EINVAL"),
    ),
    (libc::SYS_pidfd_getfd, sys_pidfd_getfd, Support::Full),
];

/// A signal the caller sends its own process may end it.
pub(super) const CONTROL: ControlEntries = &[(
    libc::SYS_pidfd_send_signal,
    sys_pidfd_send_signal,
    Support::Partial("as kill, or rt_sigqueueinfo with a siginfo, through a pidfd or a /proc/[pid] directory; the PIDFD_SIGNAL_* scopes return EINVAL"),
)];

const PIDFD_NONBLOCK: u32 = O_NONBLOCK;

/// The pidfd `fd` names: EBADF if it is not one.
pub(super) fn pidfd(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Arc<PidFd>), Errno> {
    let f = args::file(task, fd)?;
    let p = f.ops.clone().into_any().downcast::<PidFd>().map_err(|_| Errno::EBADF)?;
    Ok((f, p))
}

/// pidfd_open(pid, flags): a pidfd of process `pid` (a thread group's
/// leader: another thread's tid is EINVAL, as without PIDFD_THREAD),
/// alive or a zombie not yet reaped (its pidfd is readable at once).
fn sys_pidfd_open(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (pid, flags) = (int(a[0]), uint(a[1]));
    if flags & !PIDFD_NONBLOCK != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let group = match task.kernel.thread(pid) {
        Some(t) if t.tgid() != pid => return Err(Errno::EINVAL),
        Some(t) => t.group().clone(),
        None => task.kernel.procs().group_of(pid).ok_or(Errno::ESRCH)?,
    };
    let k = &task.kernel;
    let p = PidFd::new(k.anon_ino(), super::fd::now(), group);
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
fn live_thread(p: &PidFd) -> Result<Arc<Thread>, Errno> {
    if p.group().process().status.is_some() {
        return Err(Errno::ESRCH);
    }
    p.group().threads().into_iter().next().ok_or(Errno::ESRCH)
}

/// pidfd_send_signal(pidfd, sig, info, flags): kill() of the process, or
/// with `info`, rt_sigqueueinfo()'s rules for the caller's siginfo. A
/// descriptor of a /proc/[pid] directory serves as the pidfd, as on Linux.
fn sys_pidfd_send_signal(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    let (sig, info, flags) = (int(a[1]), a[2], uint(a[3]));
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let f = args::file(task, a[0])?;
    // The live process, or its pid while it is a zombie not yet reaped
    // (still there: the signal does nothing, as kill's); a reaped process
    // is ESRCH.
    let target = match f.ops.clone().into_any().downcast::<PidFd>() {
        Ok(p) => match live_thread(&p) {
            Ok(t) => Ok(t),
            Err(e) => {
                let zombie = task.kernel.procs().group_of(p.pid()).is_some_and(|g| Arc::ptr_eq(&g, p.group()));
                if !zombie {
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
        (Ok(t), None) => super::signal::send(task, t, sig, false),
        (Ok(t), Some(given)) => super::signal::send_info(task, t, false, given),
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
