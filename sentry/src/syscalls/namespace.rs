//! System calls: `unshare` and `setns` for the namespaces the sentry
//! emulates. A new mount namespace is a copy of the caller's mount table
//! (its working directory and root move along); a new UTS namespace has
//! its own host and domain names; a new IPC namespace its own SysV
//! objects. Network, pid, cgroup and time namespaces are not emulated:
//! EPERM, as for a container without the privilege. CLONE_NEWUSER is
//! EPERM too, as under Docker's default seccomp profile: a user namespace
//! would promise capabilities the sandbox does not map.
//!
//! `setns` takes a /proc/PID/ns file (or a pidfd, for several namespaces
//! of its process at once): it joins that process's mount (at
//! its root, as Linux), UTS or IPC namespace with CAP_SYS_ADMIN (and
//! CAP_SYS_CHROOT for a mount namespace). Of the other types the sandbox
//! has one namespace each, the caller's own: joining it is a no-op with
//! the privilege, EINVAL for the user namespace as Linux answers for
//! one's own.

use super::args::int;
use super::audit_files::{view_change, ViewChange};
use super::{Entries, Support};
use crate::abi::sched::{CLONE_NEWCGROUP, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER, CLONE_NEWUTS};
use crate::abi::{Errno, SysResult};
use crate::auth::caps::{CAP_SYS_ADMIN, CAP_SYS_CHROOT};
use crate::fs::nsfs::{Kind, Namespace, NsFile};
use crate::kernel::fork::{CLONE_FILES, CLONE_FS, CLONE_NEWNS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD, CLONE_VM};
use crate::kernel::{namespaces, Task};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_unshare,
        sys_unshare,
        Support::Partial("CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, FS, FILES; other namespaces (and NEWUSER) EPERM"),
    ),
    (
        libc::SYS_setns,
        sys_setns,
        Support::Partial("a /proc/PID/ns file or a pidfd (its process's namespaces) for mount, UTS or IPC namespaces; the others are the sandbox's single ones (joining them changes nothing)"),
    ),
];

const CLONE_NEWTIME: u64 = 0x80;

/// Every flag unshare(2) takes.
const UNSHARE_FLAGS: u64 = CLONE_THREAD
    | CLONE_FS
    | CLONE_NEWNS
    | CLONE_SIGHAND
    | CLONE_VM
    | CLONE_FILES
    | CLONE_SYSVSEM
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWNET
    | CLONE_NEWUSER
    | CLONE_NEWPID
    | CLONE_NEWCGROUP
    | CLONE_NEWTIME;

/// The namespaces that need CAP_SYS_ADMIN.
const PRIVILEGED: u64 =
    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWCGROUP | CLONE_NEWTIME;
/// The namespaces the sentry does not emulate.
const NOT_EMULATED: u64 = CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWCGROUP | CLONE_NEWTIME | CLONE_NEWUSER;

/// The flags with what they imply, as Linux's `ksys_unshare`.
fn implied(mut f: u64) -> u64 {
    if f & CLONE_NEWUSER != 0 {
        f |= CLONE_THREAD | CLONE_FS;
    }
    if f & CLONE_VM != 0 {
        f |= CLONE_SIGHAND;
    }
    if f & CLONE_SIGHAND != 0 {
        f |= CLONE_THREAD;
    }
    if f & CLONE_NEWNS != 0 {
        f |= CLONE_FS;
    }
    f
}

fn sys_setns(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = super::args::file(task, a[0])?;
    if let Ok(p) = f.ops.clone().into_any().downcast::<crate::fs::pidfd::PidFd>() {
        return setns_pidfd(task, &p, a[1]);
    }
    // The file's node names the namespace (its ops may be wrapped, as a
    // regular file's are for inotify).
    let ns = f.dentry.node.as_any().downcast_ref::<NsFile>().ok_or(Errno::EINVAL)?;
    let nstype = int(a[1]);
    if nstype != 0 && nstype != ns.kind.clone_flag() {
        return Err(Errno::EINVAL);
    }
    let creds = task.thread.creds();
    let t = &task.thread;
    match &ns.ns {
        Namespace::Single if ns.kind == Kind::User => Err(Errno::EINVAL),
        _ if !creds.capable(CAP_SYS_ADMIN) => Err(Errno::EPERM),
        Namespace::Single => Ok(0),
        Namespace::Mnt(m) => {
            join_mounts(task, m.clone(), a[1])?;
            Ok(0)
        }
        Namespace::Uts(u) => {
            t.namespaces().lock().uts = u.clone();
            Ok(0)
        }
        Namespace::Ipc(i) => {
            t.namespaces().lock().ipc = i.clone();
            Ok(0)
        }
    }
}

/// Joins mount namespace `m` (at its root), with CAP_SYS_CHROOT and a
/// filesystem context of the caller's alone (Linux's mntns_install).
fn join_mounts(task: &mut Task, m: Arc<crate::vfs::MountNamespace>, flags: u64) -> Result<(), Errno> {
    let t = task.thread.clone();
    if !t.creds().capable(CAP_SYS_CHROOT) {
        return Err(Errno::EPERM);
    }
    // No CLONE_FS thread or process shares it: the thread's reference and
    // this one only.
    let fs = t.fs();
    if Arc::strong_count(&fs) > 2 {
        return Err(Errno::EINVAL);
    }
    let change = ViewChange { operation: "setns", at: None, from: None, device: None, fs_type: None, flags };
    view_change(task, &change)?;
    let new = fs.copy();
    new.enter(m);
    t.set_fs(Arc::new(new));
    Ok(())
}

/// setns(pidfd, flags): joins the namespaces `flags` names of the live
/// process the pidfd names (ESRCH once it exited, a zombie too), which
/// the caller must be allowed to inspect (ptrace_may_access: EPERM).
/// The sandbox's single namespaces are the caller's already; its own
/// user namespace is EINVAL, as Linux answers.
fn setns_pidfd(task: &mut Task, p: &crate::fs::pidfd::PidFd, flags: u64) -> SysResult {
    const ALL: u64 = CLONE_NEWNS
        | CLONE_NEWUTS
        | CLONE_NEWIPC
        | CLONE_NEWNET
        | CLONE_NEWPID
        | CLONE_NEWUSER
        | CLONE_NEWCGROUP
        | CLONE_NEWTIME;
    if flags == 0 || flags & !ALL != 0 {
        return Err(Errno::EINVAL);
    }
    let target = super::pidfd::live_thread(p)?;
    let creds = task.thread.creds();
    let dumpable = target.group().dumpable() != 0;
    if target.tgid() != task.thread.tgid() && !creds.may_read_process(&target.creds(), dumpable) {
        return Err(Errno::EPERM);
    }
    if flags & CLONE_NEWUSER != 0 {
        return Err(Errno::EINVAL);
    }
    if !creds.capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    if flags & CLONE_NEWNS != 0 {
        join_mounts(task, target.fs().mounts(), flags)?;
    }
    let theirs = target.namespaces().lock().clone();
    let mut mine = task.thread.namespaces().lock();
    if flags & CLONE_NEWUTS != 0 {
        mine.uts = theirs.uts;
    }
    if flags & CLONE_NEWIPC != 0 {
        mine.ipc = theirs.ipc;
    }
    Ok(0)
}

fn sys_unshare(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[0] & !UNSHARE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let f = implied(a[0]);
    // Sharing a thread group, its handlers or its memory cannot be undone
    // by one thread of many.
    if f & (CLONE_THREAD | CLONE_SIGHAND | CLONE_VM) != 0 && task.thread.group().thread_count() > 1 {
        return Err(Errno::EINVAL);
    }
    if f & PRIVILEGED != 0 && !task.thread.creds().capable(CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    if f & NOT_EMULATED != 0 {
        return Err(Errno::EPERM);
    }
    if f & CLONE_NEWNS != 0 {
        // Recorded (file.mount) before it is made: mounts in the new
        // namespace change what the process's paths name.
        let change =
            ViewChange { operation: "unshare", at: None, from: None, device: None, fs_type: None, flags: a[0] };
        view_change(task, &change)?;
    }
    let t = &task.thread;
    if f & CLONE_FS != 0 {
        let fs = t.fs().copy();
        if f & CLONE_NEWNS != 0 {
            fs.set_mounts(Arc::new(fs.mounts().copy()));
        }
        t.set_fs(Arc::new(fs));
    }
    if f & CLONE_FILES != 0 {
        let fds = Arc::new(t.fds().fork());
        t.set_fds(fds);
    }
    if f & CLONE_NEWUTS != 0 {
        namespaces::unshare_uts(&task.kernel, t);
    }
    if f & CLONE_NEWIPC != 0 {
        namespaces::unshare_ipc(t);
    }
    Ok(0)
}
