//! System calls: process lifecycle — exit, execve, fork/vfork/clone, wait.

use super::args::{self, int};
use super::audit_files::{view_change, ViewChange};
use super::{ControlEntries, Entries, Support::*};
use crate::abi::fcntl::{AT_EMPTY_PATH, AT_FDCWD_ARG, AT_SYMLINK_NOFOLLOW};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::sched::{CLONE_ARGS_SIZE, CLONE_ARGS_SIZE_VER0, CLONE_CLEAR_SIGHAND, CLONE_INTO_CGROUP, SIGCHLD_FLAG};
use crate::abi::{Errno, SysResult};
use crate::kernel::cputime::CpuTimes;
use crate::kernel::exec::{self, ARG_MAX, MAX_ARG_STRLEN};
use crate::kernel::fork::{self, CloneArgs};
use crate::kernel::process::{ChildEvent, ChildKind, WaitError, WaitFor, WaitTarget, Waited};
use crate::kernel::ptrace;
use crate::kernel::{ExitStatus, Outcome, Task};

pub(super) const CONTROL: ControlEntries = &[
    (libc::SYS_exit, sys_exit, Full),
    (libc::SYS_exit_group, sys_exit_group, Full),
    (libc::SYS_execve, sys_execve, Full),
    (libc::SYS_execveat, sys_execveat, Full),
];

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_fork, sys_fork, Full),
    (libc::SYS_vfork, sys_vfork, Full),
    (libc::SYS_clone, sys_clone, Partial("processes (copy-on-write, or sharing their parent's memory with CLONE_VM, and its descriptors, filesystem context and handlers as asked) and threads; new mount, UTS and IPC namespaces for a process (CAP_SYS_ADMIN); network, pid, user and cgroup ones EPERM, and namespaces for a thread EINVAL; CLONE_PIDFD for processes")),
    (libc::SYS_clone3, sys_clone3, Partial("as clone, with the versioned struct (E2BIG past this kernel's size unless zero) and CLONE_PIDFD; CLONE_CLEAR_SIGHAND; set_tid returns EPERM, CLONE_INTO_CGROUP EINVAL")),
    (libc::SYS_wait4, sys_wait4, Partial("rusage has only the CPU times")),
    (libc::SYS_waitid, sys_waitid, Partial("rusage has only the CPU times")),
];

fn sys_exit(_task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    Ok(Outcome::Exit { status: ExitStatus::Code(int(a[0]) & 0xff), thread_only: true })
}

fn sys_exit_group(_task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    Ok(Outcome::Exit { status: ExitStatus::Code(int(a[0]) & 0xff), thread_only: false })
}

/// Reads a NULL-terminated array of C strings (argv or envp).
fn string_array(task: &Task, addr: u64, total: &mut usize) -> Result<Vec<Vec<u8>>, Errno> {
    let mut out = Vec::new();
    if addr == 0 {
        return Ok(out);
    }
    let mm = task.thread.mm();
    let mut at = addr;
    loop {
        let mut raw = [0u8; 8];
        mm.copy_in(at, &mut raw)?;
        let p = u64::from_le_bytes(raw);
        if p == 0 {
            return Ok(out);
        }
        let s =
            mm.read_cstring(p, MAX_ARG_STRLEN).map_err(|e| if e == Errno::ENAMETOOLONG { Errno::E2BIG } else { e })?;
        *total += s.len() + 1 + 8;
        if *total > ARG_MAX {
            return Err(Errno::E2BIG);
        }
        out.push(s);
        at = at.checked_add(8).ok_or(Errno::EFAULT)?;
    }
}

/// execve and execveat: on success the task runs the new image from a
/// fresh register file.
fn do_execve(task: &mut Task, dirfd: u64, path_addr: u64, argv: u64, envp: u64, flags: u64) -> Result<Outcome, Errno> {
    if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = args::path(task, path_addr)?;
    let mut total = 0;
    let argv = string_array(task, argv, &mut total)?;
    let envp = string_array(task, envp, &mut total)?;
    let d = args::resolve_at_flags(task, dirfd, &path, flags)?;
    if d.is_symlink() {
        return Err(Errno::ELOOP);
    }
    let file = exec::open_exec_dentry(task, d)?;
    let name = if path.is_empty() { format!("/dev/fd/{}", int(dirfd)).into_bytes() } else { path };
    exec::execve(task, file, &name, argv, envp)?;
    Ok(Outcome::RegistersReplaced)
}

fn sys_execve(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    do_execve(task, AT_FDCWD_ARG, a[0], a[1], a[2], 0)
}

fn sys_execveat(task: &mut Task, a: [u64; 6]) -> Result<Outcome, Errno> {
    do_execve(task, a[0], a[1], a[2], a[3], a[4])
}

fn sys_fork(task: &mut Task, _a: [u64; 6]) -> SysResult {
    fork::clone_process(task, CloneArgs { flags: SIGCHLD_FLAG, stack: 0, parent_tid: 0, child_tid: 0, tls: 0 })
}

fn sys_vfork(task: &mut Task, _a: [u64; 6]) -> SysResult {
    let flags = fork::CLONE_VM | fork::CLONE_VFORK | SIGCHLD_FLAG;
    fork::clone_process(task, CloneArgs { flags, stack: 0, parent_tid: 0, child_tid: 0, tls: 0 })
}

/// clone(flags, stack, parent_tid, child_tid, tls) — the x86-64 order.
/// With CLONE_PIDFD the pidfd goes where parent_tid points, so the two
/// cannot go together (EINVAL).
fn sys_clone(task: &mut Task, a: [u64; 6]) -> SysResult {
    let args = CloneArgs { flags: a[0], stack: a[1], parent_tid: a[2], child_tid: a[3], tls: a[4] };
    record_new_mount_namespace(task, args.flags)?;
    if args.flags & fork::CLONE_PIDFD == 0 {
        return fork::clone_process(task, args);
    }
    if args.flags & fork::CLONE_PARENT_SETTID != 0 {
        return Err(Errno::EINVAL);
    }
    clone_pidfd(task, args, a[2])
}

/// A new process with a mount namespace of its own is recorded
/// (file.mount) before it is made, as `unshare` records one: its mounts
/// change what its paths name. Only a clone the kernel will allow.
fn record_new_mount_namespace(task: &Task, flags: u64) -> Result<(), Errno> {
    if flags & fork::CLONE_NEWNS == 0 || flags & fork::CLONE_THREAD != 0 {
        return Ok(());
    }
    fork::check_namespaces(&task.thread, flags)?;
    let change = ViewChange { operation: "clone", at: None, from: None, device: None, fs_type: None, flags };
    view_change(task, &change)
}

/// A clone whose pidfd is written to `addr` (checked writable first, so a
/// bad pointer fails before a child exists).
fn clone_pidfd(task: &mut Task, args: CloneArgs, addr: u64) -> SysResult {
    task.thread.mm().copy_out(addr, &0i32.to_le_bytes())?;
    let parent = task.thread.clone();
    let kernel = task.kernel.clone();
    let mut make =
        |g: &std::sync::Arc<crate::kernel::ThreadGroup>| super::pidfd::install_for_child_of(&kernel, &parent, g, addr);
    fork::clone_with_pidfd(task, args, Some(&mut make))
}

const MAX_PID_NS_LEVEL: u64 = 32;

/// clone3(args, size): clone with a versioned argument struct. A larger
/// struct than this kernel's is accepted when its extra bytes are zero
/// (E2BIG otherwise, or beyond a page).
fn sys_clone3(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (uargs, size) = (a[0], a[1]);
    if size < CLONE_ARGS_SIZE_VER0 {
        return Err(Errno::EINVAL);
    }
    if size > 4096 {
        return Err(Errno::E2BIG);
    }
    let size = usize::try_from(size).map_err(|_| Errno::E2BIG)?;
    let mut raw = vec![0u8; size.max(CLONE_ARGS_SIZE)];
    task.thread.mm().copy_in(uargs, &mut raw[..size])?;
    if raw[CLONE_ARGS_SIZE..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let mut d = Decoder::new(&raw);
    let (flags, pidfd, child_tid, parent_tid, exit_signal) = (d.u64(), d.u64(), d.u64(), d.u64(), d.u64());
    let (stack, stack_size, tls, set_tid, set_tid_size) = (d.u64(), d.u64(), d.u64(), d.u64(), d.u64());
    let known = 0xffff_ffff | CLONE_CLEAR_SIGHAND | CLONE_INTO_CGROUP;
    if flags & !known != 0 || flags & (0xff | fork::CLONE_DETACHED) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_CLEAR_SIGHAND != 0 && flags & fork::CLONE_SIGHAND != 0 {
        return Err(Errno::EINVAL);
    }
    if exit_signal > 64 || (stack == 0) != (stack_size == 0) {
        return Err(Errno::EINVAL);
    }
    // A thread or a sibling signals as the caller does: no exit signal of
    // its own (clone3_args_valid).
    if flags & (fork::CLONE_THREAD | fork::CLONE_PARENT) != 0 && exit_signal != 0 {
        return Err(Errno::EINVAL);
    }
    if set_tid_size > MAX_PID_NS_LEVEL || (set_tid == 0) != (set_tid_size == 0) {
        return Err(Errno::EINVAL);
    }
    // Not supported (see the table's note): choosing the child's pid, a
    // cgroup to start in.
    if set_tid_size != 0 {
        return Err(Errno::EPERM);
    }
    if flags & CLONE_INTO_CGROUP != 0 {
        return Err(Errno::EINVAL);
    }
    let args = CloneArgs {
        flags: flags | exit_signal,
        stack: stack.checked_add(stack_size).ok_or(Errno::EINVAL)?,
        parent_tid,
        child_tid,
        tls,
    };
    record_new_mount_namespace(task, args.flags)?;
    if flags & fork::CLONE_PIDFD != 0 {
        clone_pidfd(task, args, pidfd)
    } else {
        fork::clone_process(task, args)
    }
}

const WNOHANG: u64 = 1;
const WUNTRACED: u64 = 2;
const WEXITED: u64 = 4;
const WCONTINUED: u64 = 8;
const WNOWAIT: u64 = 0x0100_0000;
const WNOTHREAD: u64 = 0x2000_0000;
const WALL: u64 = 0x4000_0000;
const WCLONE: u64 = 0x8000_0000;

/// The children a wait with `options` considers: `__WALL` all, else
/// `__WCLONE` those whose exit signal is not SIGCHLD, else the others.
fn child_kind(options: u64) -> ChildKind {
    if options & WALL != 0 {
        ChildKind::All
    } else if options & WCLONE != 0 {
        ChildKind::Clone
    } else {
        ChildKind::Sigchld
    }
}

fn sys_wait4(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (pid, status_addr, options, rusage) = (int(a[0]), a[1], a[2], a[3]);
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WNOTHREAD | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    let me = task.thread.tgid();
    let target = match pid {
        -1 => WaitTarget::Any,
        0 => WaitTarget::Group(task.kernel.procs().pgid(me).unwrap_or(me)),
        p if p < -1 => WaitTarget::Group(p.checked_neg().ok_or(Errno::ESRCH)?),
        p => WaitTarget::Pid(p),
    };
    let what = WaitFor {
        exited: true,
        stopped: options & WUNTRACED != 0,
        continued: options & WCONTINUED != 0,
        kind: child_kind(options),
        thread: (options & WNOTHREAD != 0).then_some(task.thread.tid()),
    };
    let r = wait_any(task, target, what, options & WNOHANG == 0, false)?;
    let Some((child, event, usage)) = r else {
        return Ok(0);
    };
    let mm = task.thread.mm();
    if status_addr != 0 {
        let status: i32 = match event {
            Reported::Child(ChildEvent::Exited(status)) => status.wait_status(),
            Reported::Child(ChildEvent::Stopped(sig)) => (sig << 8) | 0x7f,
            Reported::Child(ChildEvent::Continued) => 0xffff,
            Reported::Tracee(r) => r.wait_status(),
        };
        mm.copy_out(status_addr, &status.to_le_bytes())?;
    }
    if rusage != 0 {
        mm.copy_out(rusage, &super::time::encode_rusage(usage, 0))?;
    }
    u64::try_from(child).map_err(|_| Errno::ECHILD)
}

fn sys_waitid(task: &mut Task, a: [u64; 6]) -> SysResult {
    const P_ALL: u64 = 0;
    const P_PID: u64 = 1;
    const P_PGID: u64 = 2;
    const P_PIDFD: u64 = 3;
    let (idtype, id, infop, options) = (a[0], int(a[1]), a[2], a[3]);
    if options & !(WNOHANG | WUNTRACED | WEXITED | WCONTINUED | WNOWAIT | WNOTHREAD | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    if options & (WEXITED | WUNTRACED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    let me = task.thread.tgid();
    // A pidfd's process, which must be the caller's child; an O_NONBLOCK
    // pidfd does not wait (EAGAIN, as Linux).
    let mut nonblocking_pidfd = false;
    let target = match idtype {
        P_PIDFD => {
            let (f, p) = super::pidfd::pidfd(task, a[1])?;
            nonblocking_pidfd = f.flags() & crate::abi::fcntl::O_NONBLOCK != 0;
            WaitTarget::Pid(p.pid())
        }
        P_ALL => WaitTarget::Any,
        P_PID if id > 0 => WaitTarget::Pid(id),
        P_PGID if id >= 0 => WaitTarget::Group(if id == 0 { task.kernel.procs().pgid(me).unwrap_or(me) } else { id }),
        _ => return Err(Errno::EINVAL),
    };
    let what = WaitFor {
        exited: options & WEXITED != 0,
        stopped: options & WUNTRACED != 0,
        continued: options & WCONTINUED != 0,
        kind: child_kind(options),
        thread: (options & WNOTHREAD != 0).then_some(task.thread.tid()),
    };
    let block = options & WNOHANG == 0 && !nonblocking_pidfd;
    let peek = options & WNOWAIT != 0;
    let r = wait_any(task, target, what, block, peek)?;
    if r.is_none() && nonblocking_pidfd && options & WNOHANG == 0 {
        return Err(Errno::EAGAIN);
    }
    let mut info = Encoder::with_capacity(128);
    let mut usage = None;
    if let Some((pid, event, used)) = r {
        usage = Some(used);
        // si_code: CLD_EXITED, CLD_KILLED, CLD_STOPPED, CLD_CONTINUED.
        let (code, value) = match event {
            Reported::Child(ChildEvent::Exited(ExitStatus::Code(c))) => (1, c),
            Reported::Child(ChildEvent::Exited(ExitStatus::Signal(s))) => (2, s),
            Reported::Child(ChildEvent::Stopped(sig)) => (5, sig),
            Reported::Child(ChildEvent::Continued) => (6, libc::SIGCONT),
            Reported::Tracee(r) => r.siginfo_code(),
        };
        let uid = task.thread.creds().uid;
        info.i32(17).i32(0).i32(code).i32(0).i32(pid).u32(uid).i32(value);
    }
    info.zeros(128 - info.len());
    if infop != 0 {
        task.thread.mm().copy_out(infop, info.as_bytes())?;
    }
    // The raw system call's fifth argument: the child's rusage, written
    // only when a child is reported (as Linux).
    if let Some(used) = usage.filter(|_| a[4] != 0) {
        task.thread.mm().copy_out(a[4], &super::time::encode_rusage(used, 0))?;
    }
    Ok(0)
}

/// What a wait reports: a child's change, or a ptrace tracee's.
enum Reported {
    Child(ChildEvent),
    Tracee(ptrace::Report),
}

/// Waits for a change of a child of the caller's process or of one of its
/// ptrace tracees (whose stops are reported whatever `what` says, as
/// Linux's, and exits only when `what.exited`).
fn wait_any(
    task: &Task,
    target: WaitTarget,
    what: WaitFor,
    block: bool,
    peek: bool,
) -> Result<Option<(i32, Reported, CpuTimes)>, Errno> {
    let me = task.thread.tgid();
    let traces = ptrace::of(&task.kernel);
    let tracees = |m: &dyn Fn(i32, i32) -> bool| traces.wait_report(me, m, what.exited, peek);
    let r = task.kernel.procs().wait_with(me, target, what, block, peek, tracees).map_err(wait_errno)?;
    Ok(r.map(|w| match w {
        Waited::Child(pid, ev, usage) => (pid, Reported::Child(ev), usage),
        Waited::Other((tid, report)) => (tid, Reported::Tracee(report), CpuTimes::default()),
    }))
}

fn wait_errno(e: WaitError) -> Errno {
    match e {
        WaitError::NoChildren => Errno::ECHILD,
        WaitError::Interrupted(e) => e,
    }
}
