//! System call: `seccomp`, and the `prctl(PR_SET_SECCOMP)` way in. The
//! guest's classic BPF program is copied in and checked here; the kernel's
//! `seccomp` module keeps the chains and runs them before dispatch.

use super::args::uint;
use super::common::{capable, read_array};
use super::{Entries, Support};
use crate::abi::fcntl::O_RDWR;
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::seccomp::{
    FLAG_LOG, FLAG_NEW_LISTENER, FLAG_SPEC_ALLOW, FLAG_TSYNC, FLAG_TSYNC_ESRCH, FLAG_WAIT_KILLABLE_RECV,
    GET_ACTION_AVAIL, GET_NOTIF_SIZES, SET_MODE_FILTER, SET_MODE_STRICT,
};
use crate::abi::{Errno, SysResult};
use crate::auth::caps::CAP_SYS_ADMIN;
use crate::fs::seccomp_notify::NotifyFile;
use crate::kernel::seccomp::bpf::{Insn, Program, MAX_INSNS};
use crate::kernel::seccomp::notify::Listener;
use crate::kernel::seccomp::{self, AttachError, RET_ACTION};
use crate::kernel::Task;
use crate::vfs::FileDescription;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_seccomp,
    sys_seccomp,
    Support::Partial(
        "strict and filter modes (classic BPF run by the sentry before each call; stacking, inheritance, exec, \
         TSYNC, LOG and every action); TRACE stops a guest tracer that set PTRACE_O_TRACESECCOMP \
         (PTRACE_EVENT_SECCOMP; the call it changes is filtered again) and returns ENOSYS without one; \
         NEW_LISTENER gives a listener descriptor: USER_NOTIF calls wait (interruptibly) for NOTIF_RECV and \
         NOTIF_SEND (a result, or FLAG_CONTINUE), NOTIF_ID_VALID, NOTIF_ADDFD (SETFD, SEND), poll (POLLIN, \
         POLLOUT, POLLHUP); not emulated: NOTIF_SET_FLAGS (EINVAL), FLAG_WAIT_KILLABLE_RECV (EINVAL)",
    ),
)];

const FLAGS_KNOWN: u32 =
    FLAG_TSYNC | FLAG_LOG | FLAG_SPEC_ALLOW | FLAG_NEW_LISTENER | FLAG_TSYNC_ESRCH | FLAG_WAIT_KILLABLE_RECV;

/// `struct seccomp_notif`, `seccomp_notif_resp` and `seccomp_data` sizes.
const NOTIF_SIZES: [u16; 3] = [80, 24, 64];

fn sys_seccomp(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (op, flags, uargs) = (uint(a[0]), uint(a[1]), a[2]);
    match op {
        SET_MODE_STRICT | SET_MODE_FILTER => set_mode(task, op, flags, uargs),
        GET_ACTION_AVAIL => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let action = u32::from_le_bytes(read_array(task, uargs)?);
            if seccomp::action_available(action & RET_ACTION) && action & !RET_ACTION == 0 {
                Ok(0)
            } else {
                Err(Errno::EOPNOTSUPP)
            }
        }
        GET_NOTIF_SIZES => {
            if flags != 0 {
                return Err(Errno::EINVAL);
            }
            let mut e = Encoder::with_capacity(6);
            for s in NOTIF_SIZES {
                e.u16(s);
            }
            task.thread.mm().copy_out(uargs, e.as_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// SECCOMP_SET_MODE_STRICT or _FILTER, for `seccomp` and `prctl`.
pub(super) fn set_mode(task: &mut Task, op: u32, flags: u32, uargs: u64) -> SysResult {
    if op == SET_MODE_STRICT {
        if flags != 0 || uargs != 0 {
            return Err(Errno::EINVAL);
        }
        task.thread.seccomp().set_strict()?;
        return Ok(0);
    }
    if flags & !FLAGS_KNOWN != 0 {
        return Err(Errno::EINVAL);
    }
    // WAIT_KILLABLE_RECV is not emulated (see the table's note).
    if flags & FLAG_WAIT_KILLABLE_RECV != 0 {
        return Err(Errno::EINVAL);
    }
    let listen = flags & FLAG_NEW_LISTENER != 0;
    // Both a listener and a thread in TSYNC's way would be a positive
    // result: TSYNC_ESRCH must tell them apart.
    if listen && flags & FLAG_TSYNC != 0 && flags & FLAG_TSYNC_ESRCH == 0 {
        return Err(Errno::EINVAL);
    }
    let prog = read_program(task, uargs)?;
    // The descriptor is taken first, as Linux's, so a full table
    // (EMFILE) attaches nothing; it is given back if attaching fails.
    let listener = listen.then(|| seccomp::notify::Listener::new(RandomState::new().build_hasher().finish()));
    let installed = listener.as_ref().map(|l| listener_fd(task, l.clone())).transpose()?;
    let attached = seccomp::attach(&task.thread, prog, flags & FLAG_LOG != 0, listener, flags & FLAG_TSYNC != 0);
    if let (Err(_), Some((fd, file))) = (&attached, &installed) {
        let _ = task.thread.fds().remove_if_same(*fd, file);
    }
    match attached {
        Ok(()) => Ok(installed.map_or(0, |(fd, _)| u64::try_from(fd).unwrap_or(0))),
        Err(AttachError::Errno(e)) => Err(e),
        Err(AttachError::Tsync(_)) if flags & FLAG_TSYNC_ESRCH != 0 => Err(Errno::ESRCH),
        // The thread in the way, as a positive result.
        Err(AttachError::Tsync(tid)) => Ok(u64::try_from(tid).unwrap_or(0)),
    }
}

/// Installs a listener descriptor (`anon_inode:seccomp notify`, O_RDWR,
/// close-on-exec) for `listener`: its number and its file.
fn listener_fd(task: &Task, listener: Arc<Listener>) -> Result<(i32, Arc<FileDescription>), Errno> {
    let k = &task.kernel;
    let file = NotifyFile::new(k.anon_ino(), super::fd::now(), listener);
    let d = k.anon_dentry(b"anon_inode:seccomp notify", file.clone());
    let f = FileDescription::new(d, file, O_RDWR);
    let fd = task.thread.fds().install(f.clone(), true, 0, task.thread.nofile())?;
    Ok((fd, f))
}

/// Copies in and checks the `struct sock_fprog` at `addr` as Linux's
/// `seccomp_prepare_user_filter` does, in its order: the header
/// (EFAULT), its length (EINVAL), the caller's right to filter (EACCES:
/// no_new_privs or CAP_SYS_ADMIN), the instructions (EFAULT), the checks
/// (EINVAL).
fn read_program(task: &Task, addr: u64) -> Result<Program, Errno> {
    let header: [u8; 16] = read_array(task, addr)?;
    let mut d = Decoder::new(&header);
    let len = usize::from(d.u16());
    let _pad = (d.u16(), d.u32());
    let filter = d.u64();
    if len == 0 || len > MAX_INSNS {
        return Err(Errno::EINVAL);
    }
    if !task.thread.attrs().lock().no_new_privs && !capable(task, CAP_SYS_ADMIN) {
        return Err(Errno::EACCES);
    }
    let mut raw = vec![0u8; len * Insn::SIZE];
    task.thread.mm().copy_in(filter, &mut raw)?;
    let insns = Insn::decode_all(&raw);
    Program::new(insns).map_err(|e| {
        log::debug!("task {}: seccomp filter refused: {e}", task.thread.tid());
        Errno::EINVAL
    })
}

/// `prctl(PR_SET_SECCOMP, mode, filter)`.
pub(super) fn prctl_set(task: &mut Task, mode: u64, filter: u64) -> SysResult {
    match mode {
        1 => set_mode(task, SET_MODE_STRICT, 0, 0),
        2 => set_mode(task, SET_MODE_FILTER, 0, filter),
        _ => Err(Errno::EINVAL),
    }
}
