//! System calls: SysV shared memory (shmget, shmat, shmdt, shmctl), over
//! the ipc namespace's segments (`kernel::ipc::shm`).

use super::args::int;
use super::{Entries, Support::*};
use crate::abi::layout::Encoder;
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::auth::caps::CAP_IPC_LOCK;
use crate::kernel::ipc::shm::{self, Segment, SHM_LOCKED};
use crate::kernel::ipc::{self, GetRequest, Perm, PermSet, IPC_INFO, IPC_RMID, IPC_SET, IPC_STAT, MAY_READ, MAY_WRITE};
use crate::kernel::Task;
use crate::mm::{Backing, MapRequest, Mappable, VmaName, WriteHold};
use crate::platform::Perms;
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_shmget,
        sys_shmget,
        Partial("SHM_HUGETLB is ENOMEM (no huge page pool); limits are Linux's defaults, shown in /proc/sys/kernel"),
    ),
    (libc::SYS_shmat, sys_shmat, Full),
    (libc::SYS_shmdt, sys_shmdt, Full),
    (libc::SYS_shmctl, sys_shmctl, Partial("SHM_LOCK only marks the segment: the sentry never swaps guest memory")),
];

const SHM_HUGETLB: i32 = 0o4000;
const SHM_RDONLY: i32 = 0o10000;
const SHM_RND: i32 = 0o20000;
const SHM_REMAP: i32 = 0o40000;
const SHM_EXEC: i32 = 0o100000;
/// SHMLBA: attach addresses are multiples of this (a page on x86-64).
const SHMLBA: u64 = PAGE_SIZE;

const SHM_LOCK: i32 = 11;
const SHM_UNLOCK: i32 = 12;
const SHM_STAT: i32 = 13;
const SHM_INFO: i32 = 14;
const SHM_STAT_ANY: i32 = 15;

/// The size of `struct shmid64_ds` on x86-64.
const SHMID_DS_SIZE: usize = 112;

fn registry(task: &Task) -> Arc<shm::Registry> {
    crate::kernel::namespaces::ipc_ns(&task.kernel, &task.thread).shm.clone()
}

fn sys_shmget(task: &mut Task, a: [u64; 6]) -> SysResult {
    let req = GetRequest { key: int(a[0]), flags: int(a[2]) };
    if req.flags & SHM_HUGETLB != 0 {
        return Err(Errno::ENOMEM);
    }
    let creds = task.thread.creds();
    let id = registry(task).get(req, a[1], &creds, task.kernel.memory(), task.thread.tgid())?;
    Ok(u64::try_from(id).unwrap_or(0))
}

fn sys_shmat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, flags) = (int(a[0]), int(a[2]));
    let mut addr = a[1];
    let fixed = addr != 0;
    if addr % SHMLBA != 0 {
        if flags & SHM_RND == 0 {
            return Err(Errno::EINVAL);
        }
        addr -= addr % SHMLBA;
        if addr == 0 && flags & SHM_REMAP != 0 {
            return Err(Errno::EINVAL);
        }
    } else if !fixed && flags & SHM_REMAP != 0 {
        return Err(Errno::EINVAL);
    }
    let rdonly = flags & SHM_RDONLY != 0;
    let exec = flags & SHM_EXEC != 0;
    let mut want = if rdonly { MAY_READ } else { MAY_READ | MAY_WRITE };
    if exec {
        want |= 0o111;
    }
    let creds = task.thread.creds();
    let (_, seg) = registry(task).table.lookup(id, &creds, want)?;
    let len = seg.mapped_len();
    if fixed && addr.checked_add(len).is_none() {
        return Err(Errno::EINVAL);
    }
    let mm = task.thread.mm();
    let attachment = seg.attach(task.thread.tgid());
    drop(seg);
    let pages = attachment.shared_pages(mm.memory_file()).ok_or(Errno::EINVAL)?;
    let req = MapRequest {
        addr,
        len,
        perms: Perms { read: true, write: !rdonly, exec },
        fixed: fixed && flags & SHM_REMAP != 0,
        // Without SHM_REMAP an address that overlaps a mapping is EINVAL.
        noreplace: fixed && flags & SHM_REMAP == 0,
        shared: true,
        // Attached SHM_RDONLY, the areas may never become writable
        // (mprotect: EACCES).
        backing: Backing::SharedFile { file: attachment, pages, offset: 0, may_write: (!rdonly).then(WriteHold::new) },
        name: VmaName::None,
    };
    match mm.mmap(req) {
        Ok(at) => Ok(at),
        Err(Errno::EEXIST) => Err(Errno::EINVAL),
        Err(e) => Err(e),
    }
}

fn sys_shmdt(task: &mut Task, a: [u64; 6]) -> SysResult {
    let file = task.thread.mm().shm_detach(a[0])?;
    registry(task).detached_by(vec![file], task.thread.tgid());
    Ok(0)
}

fn encode_segment(perm: &Perm, seg: &Segment) -> Vec<u8> {
    let t = *seg.times.lock();
    let mut e = Encoder::with_capacity(SHMID_DS_SIZE);
    perm.encode(&mut e);
    e.u64(seg.size).i64(t.atime).i64(t.dtime).i64(t.ctime).i32(t.cpid).i32(t.lpid).u64(seg.nattch());
    e.zeros(SHMID_DS_SIZE - e.len());
    e.as_bytes().to_vec()
}

fn sys_shmctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (id, cmd, buf) = (int(a[0]), int(a[1]), a[2]);
    let r = registry(task);
    let creds = task.thread.creds();
    let mm = task.thread.mm();
    match cmd {
        IPC_INFO => {
            let mut e = Encoder::with_capacity(72);
            e.u64(shm::SHMMAX).u64(shm::SHMMIN).u64(u64::from(shm::SHMMNI)).u64(u64::from(shm::SHMMNI));
            e.u64(shm::SHMALL).zeros(32);
            mm.copy_out(buf, e.as_bytes())?;
            Ok(u64::try_from(r.table.max_index()).unwrap_or(0))
        }
        SHM_INFO => {
            let (tot, rss) = r.totals();
            let used = i32::try_from(r.table.all().len()).unwrap_or(i32::MAX);
            let mut e = Encoder::with_capacity(48);
            e.i32(used).zeros(4).u64(tot).u64(rss).zeros(24);
            mm.copy_out(buf, e.as_bytes())?;
            Ok(u64::try_from(r.table.max_index()).unwrap_or(0))
        }
        SHM_STAT | SHM_STAT_ANY => {
            let (full_id, perm, seg) = r.table.at_index(id)?;
            if cmd == SHM_STAT {
                perm.check(&creds, MAY_READ)?;
            }
            mm.copy_out(buf, &encode_segment(&perm, &seg))?;
            Ok(u64::try_from(full_id).unwrap_or(0))
        }
        IPC_STAT => {
            let (perm, seg) = r.table.lookup(id, &creds, MAY_READ)?;
            mm.copy_out(buf, &encode_segment(&perm, &seg))?;
            Ok(0)
        }
        IPC_SET => {
            let mut raw = [0u8; SHMID_DS_SIZE];
            mm.copy_in(buf, &mut raw)?;
            let new = PermSet::decode(&raw);
            r.table.with(id, |s| {
                s.perm.check_owner(&creds)?;
                s.perm.set(new)?;
                s.obj.times.lock().ctime = ipc::now();
                Ok(0)
            })
        }
        IPC_RMID => {
            r.table.with(id, |s| s.perm.check_owner(&creds))?;
            r.remove(id)?;
            Ok(0)
        }
        SHM_LOCK | SHM_UNLOCK => {
            let memlock = task.thread.rlimit(crate::kernel::limits::RLIMIT_MEMLOCK).cur;
            r.table.with(id, |s| {
                if !creds.capable(CAP_IPC_LOCK) {
                    if creds.euid != s.perm.uid && creds.euid != s.perm.cuid {
                        return Err(Errno::EPERM);
                    }
                    if cmd == SHM_LOCK && memlock == 0 {
                        return Err(Errno::EPERM);
                    }
                }
                if cmd == SHM_LOCK {
                    s.perm.mode |= SHM_LOCKED;
                } else {
                    s.perm.mode &= !SHM_LOCKED;
                }
                Ok(0)
            })
        }
        _ => Err(Errno::EINVAL),
    }
}
