//! System calls: SysV semaphores (semget, semop, semtimedop, semctl),
//! over the ipc namespace's sets (`kernel::ipc::sem`).

use super::args::int;
use super::{Entries, Support::*};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::kernel::ipc::sem::{self, SemOp, Set};
use crate::kernel::ipc::{self, GetRequest, Perm, PermSet, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT, MAY_READ, MAY_WRITE};
use crate::kernel::Task;
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_semget, sys_semget, Partial("limits are Linux's defaults, shown in /proc/sys/kernel/sem")),
    (
        libc::SYS_semop,
        sys_semop,
        Partial("SEM_UNDO adjustments belong to the process (CLONE_SYSVSEM sharing between processes is not kept)"),
    ),
    (
        libc::SYS_semtimedop,
        sys_semtimedop,
        Partial("SEM_UNDO adjustments belong to the process (CLONE_SYSVSEM sharing between processes is not kept)"),
    ),
    (libc::SYS_semctl, sys_semctl, Full),
];

const GETPID: i32 = 11;
const GETVAL: i32 = 12;
const GETALL: i32 = 13;
const GETNCNT: i32 = 14;
const GETZCNT: i32 = 15;
const SETVAL: i32 = 16;
const SETALL: i32 = 17;
const SEM_STAT: i32 = 18;
const SEM_INFO: i32 = 19;
const SEM_STAT_ANY: i32 = 20;

/// The size of `struct semid64_ds` on x86-64, and of `struct sembuf`.
const SEMID_DS_SIZE: usize = 104;
const SEMBUF_SIZE: usize = 6;

fn registry(task: &Task) -> Arc<ipc::Namespace> {
    crate::kernel::namespaces::ipc_ns(&task.kernel, &task.thread)
}

fn sys_semget(task: &mut Task, a: [u64; 6]) -> SysResult {
    let req = GetRequest { key: int(a[0]), flags: int(a[2]) };
    let id = registry(task).sem.get(req, int(a[1]), &task.thread.creds(), task.kernel.memory().accountant())?;
    Ok(u64::try_from(id).unwrap_or(0))
}

fn sys_semop(task: &mut Task, a: [u64; 6]) -> SysResult {
    semtimedop(task, int(a[0]), a[1], a[2], 0)
}

fn sys_semtimedop(task: &mut Task, a: [u64; 6]) -> SysResult {
    semtimedop(task, int(a[0]), a[1], a[2], a[3])
}

fn semtimedop(task: &mut Task, id: i32, sops: u64, nsops: u64, timeout: u64) -> SysResult {
    if nsops < 1 || id < 0 {
        return Err(Errno::EINVAL);
    }
    let n = usize::try_from(nsops).map_err(|_| Errno::E2BIG)?;
    if n > sem::SEMOPM {
        return Err(Errno::E2BIG);
    }
    let mut raw = vec![0u8; n * SEMBUF_SIZE];
    task.thread.mm().copy_in(sops, &mut raw)?;
    let mut d = Decoder::new(&raw);
    let ops: Vec<SemOp> = (0..n).map(|_| SemOp { num: d.u16(), op: d.i16(), flags: d.i16() }).collect();
    let deadline = super::futex::deadline(task, timeout, false, false)?;
    let alter = ops.iter().any(|o| o.op != 0);
    let creds = task.thread.creds();
    let (_, set) = registry(task).sem.table.lookup(id, &creds, if alter { MAY_WRITE } else { MAY_READ })?;
    let max = ops.iter().map(|o| usize::from(o.num)).max().unwrap_or(0);
    if max >= set.nsems() {
        return Err(Errno::EFBIG);
    }
    set.semop(&ops, task.thread.tgid(), deadline)?;
    Ok(0)
}

fn encode_set(perm: &Perm, set: &Set) -> Vec<u8> {
    let (otime, ctime) = set.times();
    let mut e = Encoder::with_capacity(SEMID_DS_SIZE);
    perm.encode(&mut e);
    e.i64(otime).u64(0).i64(ctime).u64(0).u64(set.nsems() as u64);
    e.zeros(SEMID_DS_SIZE - e.len());
    e.as_bytes().to_vec()
}

fn sys_semctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, num, cmd, arg) = (int(a[0]), int(a[1]), int(a[2]), a[3]);
    let ns = registry(task);
    let r = &ns.sem;
    let creds = task.thread.creds();
    let mm = task.thread.mm();
    let pid = task.thread.tgid();
    let count = |v: u32| Ok(u64::from(v));
    match cmd {
        IPC_INFO | SEM_INFO => {
            let (sets, sems) = r.totals();
            let i = |v: u64| i32::try_from(v).unwrap_or(i32::MAX);
            let mns = i(sem::SEMMNS);
            let opm = i(sem::SEMOPM as u64);
            let (usz, aem) = if cmd == SEM_INFO { (i(sets), i(sems)) } else { (20, sem::SEMVMX) };
            let mut e = Encoder::with_capacity(40);
            e.i32(mns).i32(i(u64::from(sem::SEMMNI))).i32(mns).i32(mns).i32(sem::SEMMSL).i32(opm).i32(opm);
            e.i32(usz).i32(sem::SEMVMX).i32(aem);
            mm.copy_out(arg, e.as_bytes())?;
            Ok(u64::try_from(r.table.max_index()).unwrap_or(0))
        }
        SEM_STAT | SEM_STAT_ANY => {
            let (full_id, perm, set) = r.table.at_index(id)?;
            if cmd == SEM_STAT {
                perm.check(&creds, MAY_READ)?;
            }
            mm.copy_out(arg, &encode_set(&perm, &set))?;
            Ok(u64::try_from(full_id).unwrap_or(0))
        }
        IPC_STAT => {
            let (perm, set) = r.table.lookup(id, &creds, MAY_READ)?;
            mm.copy_out(arg, &encode_set(&perm, &set))?;
            Ok(0)
        }
        IPC_SET => {
            let mut raw = [0u8; SEMID_DS_SIZE];
            mm.copy_in(arg, &mut raw)?;
            let new = PermSet::decode(&raw);
            r.table.with(id, |s| {
                s.perm.check_owner(&creds)?;
                s.perm.set(new)?;
                s.obj.touch();
                Ok(0)
            })
        }
        IPC_RMID => {
            r.table.with(id, |s| s.perm.check_owner(&creds))?;
            r.remove(id)?;
            Ok(0)
        }
        GETVAL | GETPID | GETNCNT | GETZCNT => {
            let (_, set) = r.table.lookup(id, &creds, MAY_READ)?;
            let (val, last, ncnt, zcnt) = set.get(num)?;
            match cmd {
                GETVAL => Ok(u64::try_from(val).unwrap_or(0)),
                GETPID => Ok(u64::try_from(last).unwrap_or(0)),
                GETNCNT => count(ncnt),
                _ => count(zcnt),
            }
        }
        GETALL => {
            let (_, set) = r.table.lookup(id, &creds, MAY_READ)?;
            let bytes: Vec<u8> = set.values().iter().flat_map(|v| v.to_le_bytes()).collect();
            mm.copy_out(arg, &bytes)?;
            Ok(0)
        }
        SETVAL => {
            // The value is the int the semun argument holds.
            let val = int(arg);
            if !(0..=sem::SEMVMX).contains(&val) {
                return Err(Errno::ERANGE);
            }
            let (_, set) = r.table.lookup(id, &creds, MAY_WRITE)?;
            set.set_val(num, val, pid)?;
            Ok(0)
        }
        SETALL => {
            let (_, set) = r.table.lookup(id, &creds, MAY_WRITE)?;
            let mut raw = vec![0u8; set.nsems() * 2];
            mm.copy_in(arg, &mut raw)?;
            let vals: Vec<u16> = raw.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            set.set_all(&vals, pid)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
