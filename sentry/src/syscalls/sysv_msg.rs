//! System calls: SysV message queues (msgget, msgsnd, msgrcv, msgctl),
//! over the ipc namespace's queues (`kernel::ipc::msg`).

use super::args::int;
use super::{Entries, Support::*};
use crate::abi::ipc::{Msqid64Ds, MSGINFO_SIZE, MSG_COPY, MSG_EXCEPT, MSG_INFO, MSG_NOERROR, MSG_STAT, MSG_STAT_ANY};
use crate::abi::layout::{Encoder, Layout};
use crate::abi::{Errno, SysResult};
use crate::auth::caps::CAP_SYS_RESOURCE;
use crate::kernel::ipc::msg::{self, MsgQueue, Select};
use crate::kernel::ipc::{
    self, GetRequest, Perm, PermSet, IPC_INFO, IPC_NOWAIT, IPC_RMID, IPC_SET, IPC_STAT, MAY_READ, MAY_WRITE,
};
use crate::kernel::Task;
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_msgget, sys_msgget, Partial("limits are Linux's defaults, shown in /proc/sys/kernel/msg*")),
    (libc::SYS_msgsnd, sys_msgsnd, Full),
    (libc::SYS_msgrcv, sys_msgrcv, Full),
    (libc::SYS_msgctl, sys_msgctl, Full),
];

fn registry(task: &Task) -> Arc<ipc::Namespace> {
    crate::kernel::namespaces::ipc_ns(&task.kernel, &task.thread)
}

fn sys_msgget(task: &mut Task, a: [u64; 6]) -> SysResult {
    let req = GetRequest { key: int(a[0]), flags: int(a[1]) };
    let id = registry(task).msg.get(req, &task.thread.creds(), task.kernel.memory().accountant())?;
    Ok(u64::try_from(id).unwrap_or(0))
}

fn sys_msgsnd(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, msgp, size, flags) = (int(a[0]), a[1], a[2], int(a[3]));
    let mm = task.thread.mm();
    let mut raw = [0u8; 8];
    mm.copy_in(msgp, &mut raw)?;
    let mtype = i64::from_le_bytes(raw);
    let len = usize::try_from(size).ok().filter(|&l| l <= msg::MSGMAX).ok_or(Errno::EINVAL)?;
    if id < 0 || mtype < 1 {
        return Err(Errno::EINVAL);
    }
    let mut text = vec![0u8; len];
    mm.copy_in(msgp.checked_add(8).ok_or(Errno::EFAULT)?, &mut text)?;
    let (_, q) = registry(task).msg.table.lookup(id, &task.thread.creds(), MAY_WRITE)?;
    q.send(mtype, text, flags & IPC_NOWAIT != 0, task.thread.tgid())?;
    Ok(0)
}

fn sys_msgrcv(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, msgp, size, msgtyp, flags) = (int(a[0]), a[1], a[2], a[3], int(a[4]));
    let max = usize::try_from(size).ok().filter(|&s| i64::try_from(s).is_ok()).ok_or(Errno::EINVAL)?;
    if id < 0 {
        return Err(Errno::EINVAL);
    }
    let msgtyp = i64::from_le_bytes(msgtyp.to_le_bytes());
    let sel = if flags & MSG_COPY != 0 {
        // MSG_COPY: msgtyp is a position; the call never waits.
        if flags & MSG_EXCEPT != 0 || flags & IPC_NOWAIT == 0 {
            return Err(Errno::EINVAL);
        }
        Select::Nth(usize::try_from(msgtyp).unwrap_or(usize::MAX))
    } else {
        Select::new(msgtyp, flags & MSG_EXCEPT != 0)
    };
    let (_, q) = registry(task).msg.table.lookup(id, &task.thread.creds(), MAY_READ)?;
    let noerror = flags & MSG_NOERROR != 0;
    let (mtype, text) = q.receive(sel, max, noerror, flags & IPC_NOWAIT != 0, task.thread.tgid())?;
    let mm = task.thread.mm();
    mm.copy_out(msgp, &mtype.to_le_bytes())?;
    mm.copy_out(msgp.checked_add(8).ok_or(Errno::EFAULT)?, &text)?;
    Ok(text.len() as u64)
}

fn encode_queue(perm: &Perm, q: &MsgQueue) -> Vec<u8> {
    let st = q.stat();
    Msqid64Ds {
        perm: perm.to_abi(),
        stime: st.stime,
        rtime: st.rtime,
        ctime: st.ctime,
        cbytes: st.cbytes,
        qnum: st.qnum,
        qbytes: st.qbytes,
        lspid: st.lspid,
        lrpid: st.lrpid,
    }
    .encode()
}

fn sys_msgctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, cmd, buf) = (int(a[0]), int(a[1]), a[2]);
    let ns = registry(task);
    let r = &ns.msg;
    let creds = task.thread.creds();
    let mm = task.thread.mm();
    match cmd {
        IPC_INFO | MSG_INFO => {
            let i = |v: u64| i32::try_from(v).unwrap_or(i32::MAX);
            let mnb = i(msg::MSGMNB);
            let (pool, map, tql) = if cmd == MSG_INFO {
                let (queues, msgs, bytes) = r.totals();
                (i(queues), i(msgs), i(bytes))
            } else {
                (msg::MSGPOOL, mnb, mnb)
            };
            let mut e = Encoder::with_capacity(MSGINFO_SIZE);
            e.i32(pool).i32(map).i32(i(msg::MSGMAX as u64)).i32(mnb).i32(i(u64::from(msg::MSGMNI)));
            e.i32(msg::MSGSSZ).i32(tql).u16(msg::MSGSEG).zeros(2);
            mm.copy_out(buf, e.as_bytes())?;
            Ok(u64::try_from(r.table.max_index()).unwrap_or(0))
        }
        MSG_STAT | MSG_STAT_ANY => {
            let (full_id, perm, q) = r.table.at_index(id)?;
            if cmd == MSG_STAT {
                perm.check(&creds, MAY_READ)?;
            }
            mm.copy_out(buf, &encode_queue(&perm, &q))?;
            Ok(u64::try_from(full_id).unwrap_or(0))
        }
        IPC_STAT => {
            let (perm, q) = r.table.lookup(id, &creds, MAY_READ)?;
            mm.copy_out(buf, &encode_queue(&perm, &q))?;
            Ok(0)
        }
        IPC_SET => {
            let mut raw = [0u8; Msqid64Ds::SIZE];
            mm.copy_in(buf, &mut raw)?;
            let new = PermSet::decode(&raw);
            let qbytes = Msqid64Ds::decode(&raw).qbytes;
            r.table.with(id, |s| {
                s.perm.check_owner(&creds)?;
                if qbytes > msg::MSGMNB && !creds.capable(CAP_SYS_RESOURCE) {
                    return Err(Errno::EPERM);
                }
                s.perm.set(new)?;
                s.obj.set_qbytes(qbytes);
                Ok(0)
            })
        }
        IPC_RMID => {
            r.table.with(id, |s| s.perm.check_owner(&creds))?;
            r.remove(id)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
