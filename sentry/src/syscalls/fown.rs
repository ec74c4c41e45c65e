//! fcntl's file owner (F_SETOWN, F_GETOWN, F_SETOWN_EX, F_GETOWN_EX): the
//! thread, process or process group a file signals — SIGURG when a TCP
//! or Unix stream socket's urgent data arrives.

use super::args::int;
use crate::abi::fcntl::{F_GETOWN, F_GETOWN_EX, F_OWNER_PGRP, F_OWNER_PID, F_OWNER_TID, F_SETOWN, F_SETOWN_EX};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::{FileDescription, SignalOwner};
use std::sync::Arc;

/// The owner commands of fcntl(2) on `f` with argument `arg`.
pub(super) fn fcntl(task: &Task, f: &FileDescription, cmd: u32, arg: u64) -> SysResult {
    match cmd {
        F_GETOWN => {
            let (kind, id) = f.owner();
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
            let (kind, id) = f.owner();
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

/// Makes `owner` (kind, id; id 0 for nobody) the file's: ESRCH when no
/// such thread, process or group exists. It is signalled with the
/// caller's credentials as they are now, as Linux's __f_setown records.
fn set(task: &Task, f: &FileDescription, (kind, id): (i32, i32)) -> SysResult {
    let k = &task.kernel;
    let exists = match kind {
        _ if id == 0 => true,
        _ if id < 0 => false,
        F_OWNER_TID => k.thread(id).is_some(),
        F_OWNER_PID => k.procs().exists(id),
        _ => k.procs().group_exists(id),
    };
    if !exists {
        return Err(Errno::ESRCH);
    }
    let notify = (id != 0).then(|| {
        let kernel = Arc::downgrade(&task.kernel);
        let c = task.thread.creds();
        let (uid, euid) = (c.uid, c.euid);
        let signal: SignalOwner = Arc::new(move |sig| {
            if let Some(k) = kernel.upgrade() {
                k.signal_owner(kind, id, sig, (uid, euid));
            }
        });
        signal
    });
    f.set_owner((kind, id), notify);
    Ok(0)
}
