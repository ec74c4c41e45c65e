//! fcntl's file owner (F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX) and
//! signal (F_SETSIG, F_GETSIG): the thread, process or process group a
//! file signals — SIGURG when a TCP or Unix stream socket's urgent data
//! arrives, SIGIO or the F_SETSIG signal when an O_ASYNC file becomes
//! ready.

use super::args::int;
use crate::abi::fcntl::{
    F_GETOWN, F_GETOWN_EX, F_GETSIG, F_OWNER_PGRP, F_OWNER_PID, F_OWNER_TID, F_SETOWN, F_SETOWN_EX, F_SETSIG,
};
use crate::abi::signal::NSIG;
use crate::abi::{Errno, SysResult};
use crate::kernel::siginfo::SigInfo;
use crate::kernel::Task;
use crate::vfs::{Fasync, FileDescription, OwnerSignal, SignalOwner};
use std::sync::Arc;

/// The owner commands of fcntl(2) on `f` with argument `arg`.
pub(super) fn fcntl(task: &Task, f: &FileDescription, cmd: u32, arg: u64) -> SysResult {
    match cmd {
        F_GETSIG => Ok(u64::try_from(f.io_signal()).unwrap_or(0)),
        F_SETSIG => {
            // Linux's valid_signal on the int argument: 0 (SIGIO) to 64.
            let signo = int(arg);
            if usize::try_from(signo).map_or(true, |s| s > NSIG) {
                return Err(Errno::EINVAL);
            }
            f.set_io_signal(signo);
            Ok(0)
        }
        F_GETOWN => {
            let (kind, id) = owner(task, f);
            let who = if kind == F_OWNER_PGRP { -id } else { id };
            // A group reads back negative: the register's two's complement.
            Ok(u64::from_ne_bytes(i64::from(who).to_ne_bytes()))
        }
        F_SETOWN => {
            let who = int(arg);
            if who == i32::MIN {
                return Err(Errno::EINVAL);
            }
            let owner = if who < 0 { (F_OWNER_PGRP, -who) } else { (F_OWNER_PID, who) };
            set(task, f, owner)
        }
        F_GETOWN_EX => {
            let (kind, id) = owner(task, f);
            let mut raw = [0u8; 8];
            raw[..4].copy_from_slice(&kind.to_le_bytes());
            raw[4..].copy_from_slice(&id.to_le_bytes());
            task.thread.mm().copy_out(arg, &raw)?;
            Ok(0)
        }
        F_SETOWN_EX => {
            let mut raw = [0u8; 8];
            task.thread.mm().copy_in(arg, &mut raw)?;
            let kind = i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            let id = i32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
            if !matches!(kind, F_OWNER_TID | F_OWNER_PID | F_OWNER_PGRP) {
                return Err(Errno::EINVAL);
            }
            set(task, f, (kind, id))
        }
        _ => Err(Errno::EINVAL),
    }
}

/// O_ASYNC was just turned on with the file's `policy`: a terminal
/// without an owner takes its foreground process group, or the caller's
/// process, as Linux's `tty_fasync` (which never replaces an owner).
pub(super) fn async_enabled(task: &Task, f: &FileDescription, policy: Option<Fasync>) {
    let Some(Fasync::Terminal { foreground }) = policy else { return };
    if f.owner().1 != 0 {
        return;
    }
    let owner = foreground.map_or((F_OWNER_PID, task.thread.tgid()), |g| (F_OWNER_PGRP, g));
    // A group gone meanwhile (ESRCH) leaves the description without one.
    let _ = set(task, f, owner);
}

/// The file's owner as F_GETOWN(_EX) reads it: id 0 once the thread,
/// process or every member of the group is gone (reaped), as Linux's
/// `f_getown` when its `struct pid` has no task. The sentry never reuses
/// an id, so one that exists is still the owner that was set, and a
/// signal for a gone owner finds nobody.
fn owner(task: &Task, f: &FileDescription) -> (i32, i32) {
    let (kind, id) = f.owner();
    (kind, if exists(task, (kind, id)) { id } else { 0 })
}

/// Whether thread, process or group `id` of `kind` exists (zombies
/// included); id 0, nobody, always does.
fn exists(task: &Task, (kind, id): (i32, i32)) -> bool {
    let k = &task.kernel;
    match kind {
        _ if id == 0 => true,
        _ if id < 0 => false,
        F_OWNER_TID => k.thread(id).is_some(),
        F_OWNER_PID => k.procs().exists(id),
        _ => k.procs().group_exists(id),
    }
}

/// Makes `owner` (kind, id; id 0 for nobody) the file's: ESRCH when no
/// such thread, process or group exists. It is signalled with the
/// caller's credentials as they are now, as Linux's __f_setown records.
pub(super) fn set(task: &Task, f: &FileDescription, (kind, id): (i32, i32)) -> SysResult {
    if !exists(task, (kind, id)) {
        return Err(Errno::ESRCH);
    }
    let notify = (id != 0).then(|| {
        let kernel = Arc::downgrade(&task.kernel);
        let c = task.thread.creds();
        let (uid, euid) = (c.uid, c.euid);
        let signal: SignalOwner = Arc::new(move |sig| {
            let info = match sig {
                OwnerSignal::Urgent => SigInfo::kernel(libc::SIGURG),
                OwnerSignal::Io { signo, reason, fd } => SigInfo::sigpoll(signo, reason, fd),
            };
            if let Some(k) = kernel.upgrade() {
                k.signal_owner(kind, id, info, (uid, euid));
            }
        });
        signal
    });
    f.set_owner((kind, id), notify);
    Ok(0)
}
