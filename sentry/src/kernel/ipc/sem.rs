//! SysV semaphore sets (Linux's `ipc/sem.c`). A `semop` applies all of
//! its operations or none; one that cannot proceed waits on the set's
//! queue, counted in the `semncnt`/`semzcnt` of the semaphore it waits
//! for. SEM_UNDO adjustments are kept per process and applied when it
//! exits.

use super::{Slot, Table};
use crate::abi::Errno;
use crate::mm::accounting::{Accountant, Charge};
use crate::waiter::{Queue, ALL};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// The limits of `/proc/sys/kernel/sem`, at Linux's defaults.
pub const SEMMSL: i32 = 32000;
pub const SEMMNS: u64 = 1_024_000_000;
pub const SEMOPM: usize = 500;
pub const SEMMNI: u32 = 32000;
/// The largest value a semaphore holds, and the largest adjustment.
pub const SEMVMX: i32 = 32767;
const SEMAEM: i32 = SEMVMX;
/// What a semaphore, and a process's adjustment of one, cost the sandbox.
const SEM_BYTES: u64 = std::mem::size_of::<Sem>() as u64;
const ADJ_BYTES: u64 = std::mem::size_of::<i32>() as u64;

/// `sem_flg` bits.
pub const SEM_UNDO: i16 = 0x1000;
/// IPC_NOWAIT as `sem_flg` (a short) carries it.
#[allow(clippy::cast_possible_truncation)] // 0o4000 fits
const IPC_NOWAIT: i16 = crate::abi::ipc::IPC_NOWAIT as i16;

/// One `struct sembuf`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemOp {
    pub num: u16,
    pub op: i16,
    pub flags: i16,
}

#[derive(Clone, Copy, Default)]
struct Sem {
    val: i32,
    pid: i32,
    /// Threads waiting for the value to grow, and for it to reach zero.
    ncnt: u32,
    zcnt: u32,
}

struct State {
    sems: Vec<Sem>,
    otime: i64,
    ctime: i64,
    removed: bool,
    /// The SEM_UNDO adjustments of each process, by tgid.
    undo: HashMap<i32, Vec<i32>>,
    /// The set's semaphores and adjustments, charged to the sandbox.
    charge: Charge,
}

/// One semaphore set.
pub struct Set {
    state: Mutex<State>,
    queue: Queue,
}

/// What a thread blocked in `semop` is counted as waiting for.
#[derive(Clone, Copy)]
struct Waiting {
    num: usize,
    zero: bool,
}

impl Set {
    /// A set of `nsems` semaphores charged to `acct` (ENOMEM past its
    /// limit).
    fn new(nsems: usize, acct: Arc<Accountant>) -> Result<Set, Errno> {
        let mut charge = Charge::new(acct);
        if !charge.grow(nsems as u64 * SEM_BYTES) {
            return Err(Errno::ENOMEM);
        }
        let sems = vec![Sem::default(); nsems];
        let state = State { sems, otime: 0, ctime: super::now(), removed: false, undo: HashMap::new(), charge };
        Ok(Set { state: Mutex::new(state), queue: Queue::default() })
    }

    pub fn nsems(&self) -> usize {
        self.state.lock().sems.len()
    }

    /// `sem_otime` and `sem_ctime`.
    pub fn times(&self) -> (i64, i64) {
        let s = self.state.lock();
        (s.otime, s.ctime)
    }

    /// `semop`/`semtimedop` by process `pid`: EIDRM when the set is
    /// removed, ERANGE past SEMVMX or SEMAEM, EAGAIN with IPC_NOWAIT or
    /// at `deadline`, EINTR when interrupted (never restarted, as Linux).
    pub fn semop(&self, ops: &[SemOp], pid: i32, deadline: Option<Instant>) -> Result<(), Errno> {
        let mut waiting = None;
        let r = super::wait_for(&self.queue, deadline, || self.attempt(ops, pid, &mut waiting));
        if let Some(w) = waiting {
            uncount(&mut self.state.lock(), w);
        }
        match r {
            Err(Errno::ETIMEDOUT) => Err(Errno::EAGAIN),
            Err(Errno::ERESTARTSYS) => Err(Errno::EINTR),
            r => r,
        }
    }

    /// One try at all of `ops`: Some when they were applied, None when
    /// one must wait (then counted in `waiting`).
    fn attempt(&self, ops: &[SemOp], pid: i32, waiting: &mut Option<Waiting>) -> Result<Option<()>, Errno> {
        let mut s = self.state.lock();
        if let Some(w) = waiting.take() {
            uncount(&mut s, w);
        }
        if s.removed {
            return Err(Errno::EIDRM);
        }
        let nsems = s.sems.len();
        let mut vals: Vec<i32> = s.sems.iter().map(|x| x.val).collect();
        let mut adj = s.undo.get(&pid).cloned().unwrap_or_else(|| vec![0; nsems]);
        for op in ops {
            let n = usize::from(op.num);
            let cur = *vals.get(n).ok_or(Errno::EFBIG)?;
            let next = cur + i32::from(op.op);
            if (op.op == 0 && cur != 0) || next < 0 {
                if op.flags & IPC_NOWAIT != 0 {
                    return Err(Errno::EAGAIN);
                }
                let w = Waiting { num: n, zero: op.op == 0 };
                count(&mut s, w);
                *waiting = Some(w);
                return Ok(None);
            }
            if next > SEMVMX {
                return Err(Errno::ERANGE);
            }
            if op.flags & SEM_UNDO != 0 {
                let undo = adj[n] - i32::from(op.op);
                if !(-SEMAEM - 1..=SEMAEM).contains(&undo) {
                    return Err(Errno::ERANGE);
                }
                adj[n] = undo;
            }
            vals[n] = next;
        }
        for (sem, v) in s.sems.iter_mut().zip(vals) {
            sem.val = v;
        }
        for op in ops {
            s.sems[usize::from(op.num)].pid = pid;
        }
        if ops.iter().any(|o| o.flags & SEM_UNDO != 0) {
            if !s.undo.contains_key(&pid) && !s.charge.grow(nsems as u64 * ADJ_BYTES) {
                return Err(Errno::ENOMEM);
            }
            s.undo.insert(pid, adj);
        }
        s.otime = super::now();
        drop(s);
        self.queue.notify(ALL);
        Ok(Some(()))
    }

    /// GETVAL, GETPID, GETNCNT, GETZCNT of semaphore `num`: EINVAL past
    /// the set.
    pub fn get(&self, num: i32) -> Result<(i32, i32, u32, u32), Errno> {
        let s = self.state.lock();
        let sem = usize::try_from(num).ok().and_then(|n| s.sems.get(n)).ok_or(Errno::EINVAL)?;
        Ok((sem.val, sem.pid, sem.ncnt, sem.zcnt))
    }

    /// GETALL.
    pub fn values(&self) -> Vec<u16> {
        self.state.lock().sems.iter().map(|s| u16::try_from(s.val).unwrap_or(0)).collect()
    }

    /// SETVAL by process `pid`: ERANGE outside 0..=SEMVMX, EINVAL past
    /// the set; every process's adjustment of the semaphore is cleared.
    pub fn set_val(&self, num: i32, val: i32, pid: i32) -> Result<(), Errno> {
        if !(0..=SEMVMX).contains(&val) {
            return Err(Errno::ERANGE);
        }
        let mut s = self.state.lock();
        let n = usize::try_from(num).ok().filter(|&n| n < s.sems.len()).ok_or(Errno::EINVAL)?;
        for adj in s.undo.values_mut() {
            adj[n] = 0;
        }
        s.sems[n].val = val;
        s.sems[n].pid = pid;
        s.ctime = super::now();
        drop(s);
        self.queue.notify(ALL);
        Ok(())
    }

    /// SETALL by process `pid` (one value per semaphore).
    pub fn set_all(&self, vals: &[u16], pid: i32) -> Result<(), Errno> {
        if vals.iter().any(|&v| i32::from(v) > SEMVMX) {
            return Err(Errno::ERANGE);
        }
        let mut s = self.state.lock();
        let held = s.undo.len() as u64 * s.sems.len() as u64 * ADJ_BYTES;
        s.undo.clear();
        s.charge.shrink(held);
        for (sem, &v) in s.sems.iter_mut().zip(vals) {
            sem.val = i32::from(v);
            sem.pid = pid;
        }
        s.ctime = super::now();
        drop(s);
        self.queue.notify(ALL);
        Ok(())
    }

    /// IPC_SET changed the set's permissions.
    pub fn touch(&self) {
        self.state.lock().ctime = super::now();
    }

    /// IPC_RMID: every waiter fails with EIDRM.
    fn remove(&self) {
        self.state.lock().removed = true;
        self.queue.notify(ALL);
    }

    /// Process `pid` exited: its adjustments are applied, each value
    /// kept within 0..=SEMVMX (as Linux's `exit_sem`).
    fn undo_exit(&self, pid: i32) {
        let mut s = self.state.lock();
        let Some(adj) = s.undo.remove(&pid) else { return };
        s.charge.shrink(adj.len() as u64 * ADJ_BYTES);
        for (sem, a) in s.sems.iter_mut().zip(adj) {
            if a != 0 {
                sem.val = (sem.val + a).clamp(0, SEMVMX);
                sem.pid = pid;
            }
        }
        s.otime = super::now();
        drop(s);
        self.queue.notify(ALL);
    }
}

fn count(s: &mut State, w: Waiting) {
    let sem = &mut s.sems[w.num];
    if w.zero {
        sem.zcnt += 1;
    } else {
        sem.ncnt += 1;
    }
}

fn uncount(s: &mut State, w: Waiting) {
    let sem = &mut s.sems[w.num];
    if w.zero {
        sem.zcnt = sem.zcnt.saturating_sub(1);
    } else {
        sem.ncnt = sem.ncnt.saturating_sub(1);
    }
}

/// The sandbox's semaphore sets.
#[derive(Default)]
pub struct Registry {
    pub table: Table<Set>,
}

impl Registry {
    /// `semget` of `nsems` semaphores: EINVAL outside 0..=SEMMSL (and 0
    /// when creating), or more than an existing set has; ENOSPC past
    /// SEMMNS semaphores in all.
    pub fn get(
        &self,
        req: super::GetRequest,
        nsems: i32,
        creds: &crate::auth::Credentials,
        acct: &Arc<Accountant>,
    ) -> Result<i32, Errno> {
        if !(0..=SEMMSL).contains(&nsems) {
            return Err(Errno::EINVAL);
        }
        let n = usize::try_from(nsems).map_err(|_| Errno::EINVAL)?;
        let make = |_id: i32, others: &mut dyn Iterator<Item = &Slot<Set>>| {
            if n == 0 {
                return Err(Errno::EINVAL);
            }
            let used: u64 = others.map(|s| s.obj.nsems() as u64).sum();
            if used + n as u64 > SEMMNS {
                return Err(Errno::ENOSPC);
            }
            Set::new(n, acct.clone())
        };
        let existing = |s: &Slot<Set>| if n > s.obj.nsems() { Err(Errno::EINVAL) } else { Ok(()) };
        self.table.get(req, creds, SEMMNI, existing, make)
    }

    /// IPC_RMID of set `id` (already checked).
    pub fn remove(&self, id: i32) -> Result<(), Errno> {
        let set = self.table.with(id, |s| Ok(s.obj.clone()))?;
        self.table.remove(id, &set);
        set.remove();
        Ok(())
    }

    /// Process `pid` exited: its adjustments on every set are applied.
    pub fn undo_exit(&self, pid: i32) {
        for (_, _, set) in self.table.all() {
            set.undo_exit(pid);
        }
    }

    /// The number of sets and of semaphores in them (SEM_INFO).
    pub fn totals(&self) -> (u64, u64) {
        let all = self.table.all();
        (all.len() as u64, all.iter().map(|(_, _, s)| s.nsems() as u64).sum())
    }

    /// The text of /proc/sysvipc/sem.
    pub fn proc_text(&self) -> String {
        let mut out =
            String::from("       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime\n");
        for (id, p, s) in self.table.all() {
            let (otime, ctime) = s.times();
            out.push_str(&format!(
                "{:>10} {:>10}  {:>4o} {:>10} {:>5} {:>5} {:>5} {:>5} {:>10} {:>10}\n",
                p.key,
                id,
                p.mode,
                s.nsems(),
                p.uid,
                p.gid,
                p.cuid,
                p.cgid,
                otime,
                ctime
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::kernel::ipc::{GetRequest, IPC_PRIVATE};
    use std::time::Duration;

    fn set(n: usize) -> Arc<Set> {
        Arc::new(Set::new(n, Accountant::unlimited()).unwrap())
    }

    const fn op(num: u16, op: i16, flags: i16) -> SemOp {
        SemOp { num, op, flags }
    }

    #[test]
    fn operations_apply_all_or_none() {
        let s = set(2);
        s.semop(&[op(0, 2, 0)], 7, None).unwrap();
        // The second would block: the first is not applied either.
        assert_eq!(s.semop(&[op(0, -1, 0), op(1, -1, IPC_NOWAIT)], 8, None), Err(Errno::EAGAIN));
        assert_eq!(s.values(), vec![2, 0]);
        assert_eq!(s.get(0).unwrap().1, 7, "the last operator's pid");
        assert_eq!(s.semop(&[op(0, 1, 0), op(0, i16::MAX, 0)], 7, None), Err(Errno::ERANGE));
        assert_eq!(s.semop(&[op(5, 1, 0)], 7, None), Err(Errno::EFBIG));
        assert_eq!(s.set_val(0, SEMVMX + 1, 7), Err(Errno::ERANGE));
        assert_eq!(s.set_val(2, 1, 7), Err(Errno::EINVAL));
    }

    #[test]
    fn a_timed_wait_gives_eagain_and_is_counted_while_it_waits() {
        let s = set(1);
        let deadline = Instant::now() + Duration::from_millis(20);
        assert_eq!(s.semop(&[op(0, -1, 0)], 1, Some(deadline)), Err(Errno::EAGAIN));
        assert_eq!(s.get(0).unwrap().2, 0, "no longer counted");
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.semop(&[op(0, -1, 0)], 2, None));
        while s.get(0).unwrap().2 != 1 {
            std::thread::yield_now();
        }
        s.semop(&[op(0, 1, 0)], 3, None).unwrap();
        assert_eq!(t.join().unwrap(), Ok(()));
        assert_eq!(s.get(0).unwrap(), (0, 2, 0, 0));
    }

    #[test]
    fn removal_wakes_waiters_with_eidrm() {
        let r = Registry::default();
        let id = r
            .get(GetRequest { key: IPC_PRIVATE, flags: 0o600 }, 1, &Credentials::new(0, 0), &Accountant::unlimited())
            .unwrap();
        let s = r.table.with(id, |s| Ok(s.obj.clone())).unwrap();
        s.set_val(0, 1, 1).unwrap();
        let s2 = s.clone();
        let t = std::thread::spawn(move || s2.semop(&[op(0, 0, 0)], 2, None));
        while s.get(0).unwrap().3 != 1 {
            std::thread::yield_now();
        }
        r.remove(id).unwrap();
        assert_eq!(t.join().unwrap(), Err(Errno::EIDRM));
    }

    #[test]
    fn undo_is_applied_at_exit_and_cleared_by_setval() {
        let r = Registry::default();
        let c = Credentials::new(0, 0);
        let acct = Accountant::new(1 << 20);
        let get = |nsems, acct| r.get(GetRequest { key: IPC_PRIVATE, flags: 0o600 }, nsems, &c, acct);
        assert_eq!(get(0, &acct), Err(Errno::EINVAL));
        assert_eq!(get(SEMMSL + 1, &acct), Err(Errno::EINVAL));
        // A set larger than the sandbox's memory is refused.
        let small = Accountant::new(4096);
        assert_eq!(get(SEMMSL, &small), Err(Errno::ENOMEM));
        let id = get(2, &acct).unwrap();
        let s = r.table.with(id, |s| Ok(s.obj.clone())).unwrap();
        s.set_val(0, 5, 1).unwrap();
        s.semop(&[op(0, -2, SEM_UNDO), op(1, 3, SEM_UNDO)], 10, None).unwrap();
        s.semop(&[op(1, 1, SEM_UNDO)], 11, None).unwrap();
        assert_eq!(s.values(), vec![3, 4]);
        r.undo_exit(10);
        assert_eq!(s.values(), vec![5, 1]);
        s.set_val(1, 0, 1).unwrap();
        r.undo_exit(11);
        assert_eq!(s.values(), vec![5, 0], "SETVAL cleared 11's adjustment");
        assert_eq!(acct.charged(), 2 * SEM_BYTES, "the adjustments are uncharged");
        drop(s);
        r.remove(id).unwrap();
        assert_eq!(acct.charged(), 0);
    }
}
