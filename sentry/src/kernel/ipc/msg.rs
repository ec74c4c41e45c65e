//! SysV message queues (Linux's `ipc/msg.c`). Queued bytes are charged
//! to the sandbox's memory.

use super::{Slot, Table};
use crate::abi::Errno;
use crate::mm::accounting::{Accountant, Charge};
use crate::waiter::{Queue as WaitQueue, ALL};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// The limits of `/proc/sys/kernel/msg*`, at Linux's defaults.
pub(crate) const MSGMAX: usize = 8192;
pub(crate) const MSGMNB: u64 = 16384;
pub(crate) const MSGMNI: u32 = 32000;
/// What `msginfo` reports beside them (include/uapi/linux/msg.h).
pub(crate) const MSGPOOL: i32 = 32000 * 16384 / 1024;
pub(crate) const MSGSSZ: i32 = 16;
pub(crate) const MSGSEG: u16 = 0xffff;
/// What a queued message costs beyond its text (struct msg_msg).
const MSG_OVERHEAD: u64 = 48;

/// Which message `msgrcv` takes (its `msgtyp` and MSG_EXCEPT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    /// 0: the first.
    First,
    /// > 0: the first of this type.
    Exactly(i64),
    /// > 0 with MSG_EXCEPT: the first of another type.
    Except(i64),
    /// < 0: the first of the lowest type at most |msgtyp|.
    AtMost(i64),
    /// MSG_COPY: the one at this position.
    Nth(usize),
}

impl Select {
    pub fn new(msgtyp: i64, except: bool) -> Select {
        match msgtyp {
            0 => Select::First,
            t if t > 0 && except => Select::Except(t),
            t if t > 0 => Select::Exactly(t),
            // -LONG_MIN does not fit: Linux takes LONG_MAX.
            t => Select::AtMost(t.checked_neg().unwrap_or(i64::MAX)),
        }
    }

    fn find(self, msgs: &VecDeque<Message>) -> Option<usize> {
        match self {
            Select::First => (!msgs.is_empty()).then_some(0),
            Select::Exactly(t) => msgs.iter().position(|m| m.mtype == t),
            Select::Except(t) => msgs.iter().position(|m| m.mtype != t),
            Select::AtMost(t) => {
                let low = msgs.iter().map(|m| m.mtype).filter(|&m| m <= t).min()?;
                msgs.iter().position(|m| m.mtype == low)
            }
            Select::Nth(n) => (n < msgs.len()).then_some(n),
        }
    }
}

struct Message {
    mtype: i64,
    text: Vec<u8>,
}

/// A queue's counters, as IPC_STAT reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub cbytes: u64,
    pub qnum: u64,
    pub qbytes: u64,
    pub lspid: i32,
    pub lrpid: i32,
    pub stime: i64,
    pub rtime: i64,
    pub ctime: i64,
}

struct State {
    msgs: VecDeque<Message>,
    stat: Stat,
    removed: bool,
    charge: Charge,
}

/// One message queue.
pub struct MsgQueue {
    state: Mutex<State>,
    waiters: WaitQueue,
}

impl MsgQueue {
    fn new(acct: Arc<Accountant>) -> MsgQueue {
        let stat = Stat { qbytes: MSGMNB, ctime: super::now(), ..Stat::default() };
        let state = State { msgs: VecDeque::new(), stat, removed: false, charge: Charge::new(acct) };
        MsgQueue { state: Mutex::new(state), waiters: WaitQueue::default() }
    }

    pub fn stat(&self) -> Stat {
        let s = self.state.lock();
        Stat { qnum: s.msgs.len() as u64, ..s.stat }
    }

    /// `msgsnd` by process `pid`: waits while the queue is full (its
    /// bytes or its count would pass `msg_qbytes`) unless `nowait`
    /// (EAGAIN). EIDRM when the queue is removed; ERESTARTNOHAND when
    /// interrupted; ENOMEM when the sandbox's memory is full.
    pub fn send(&self, mtype: i64, text: Vec<u8>, nowait: bool, pid: i32) -> Result<(), Errno> {
        let len = text.len() as u64;
        let mut text = Some(text);
        let r = super::wait_for(&self.waiters, None, || {
            let mut s = self.state.lock();
            if s.removed {
                return Err(Errno::EIDRM);
            }
            let qnum = s.msgs.len() as u64;
            if s.stat.cbytes + len > s.stat.qbytes || qnum + 1 > s.stat.qbytes {
                return if nowait { Err(Errno::EAGAIN) } else { Ok(None) };
            }
            if !s.charge.grow(len + MSG_OVERHEAD) {
                return Err(Errno::ENOMEM);
            }
            let text = text.take().unwrap_or_default();
            s.msgs.push_back(Message { mtype, text });
            s.stat.cbytes += len;
            s.stat.lspid = pid;
            s.stat.stime = super::now();
            drop(s);
            self.waiters.notify(ALL);
            Ok(Some(()))
        });
        restart_no_handler(r)
    }

    /// `msgrcv` by process `pid` of at most `max` bytes: E2BIG for a longer
    /// message unless `noerror` (then it is cut), ENOMSG with `nowait`
    /// when none matches, else waits.
    pub fn receive(
        &self,
        sel: Select,
        max: usize,
        noerror: bool,
        nowait: bool,
        pid: i32,
    ) -> Result<(i64, Vec<u8>), Errno> {
        if let Select::Nth(_) = sel {
            return self.copy(sel, max, noerror);
        }
        let r = super::wait_for(&self.waiters, None, || {
            let mut s = self.state.lock();
            if s.removed {
                return Err(Errno::EIDRM);
            }
            let Some(i) = sel.find(&s.msgs) else {
                return if nowait { Err(Errno::ENOMSG) } else { Ok(None) };
            };
            if s.msgs[i].text.len() > max && !noerror {
                return Err(Errno::E2BIG);
            }
            let Some(mut m) = s.msgs.remove(i) else { return Ok(None) };
            let len = m.text.len() as u64;
            s.stat.cbytes -= len;
            s.charge.shrink(len + MSG_OVERHEAD);
            s.stat.lrpid = pid;
            s.stat.rtime = super::now();
            drop(s);
            self.waiters.notify(ALL);
            m.text.truncate(max);
            Ok(Some((m.mtype, m.text)))
        });
        restart_no_handler(r)
    }

    /// MSG_COPY (never waits): a copy of the message `sel` names, left
    /// queued; ENOMSG when there is none, E2BIG for one longer than `max`
    /// without `noerror`, and EINVAL with it (Linux's `copy_msg`).
    fn copy(&self, sel: Select, max: usize, noerror: bool) -> Result<(i64, Vec<u8>), Errno> {
        let s = self.state.lock();
        if s.removed {
            return Err(Errno::EIDRM);
        }
        let m = sel.find(&s.msgs).map(|i| &s.msgs[i]).ok_or(Errno::ENOMSG)?;
        if m.text.len() > max {
            return Err(if noerror { Errno::EINVAL } else { Errno::E2BIG });
        }
        Ok((m.mtype, m.text.clone()))
    }

    /// IPC_SET: the queue's byte limit (checked by the caller) and ctime.
    pub fn set_qbytes(&self, qbytes: u64) {
        let mut s = self.state.lock();
        s.stat.qbytes = qbytes;
        s.stat.ctime = super::now();
        drop(s);
        self.waiters.notify(ALL);
    }

    fn remove(&self) {
        let mut s = self.state.lock();
        s.removed = true;
        s.msgs.clear();
        let held = s.charge.bytes();
        s.charge.shrink(held);
        s.stat.cbytes = 0;
        drop(s);
        self.waiters.notify(ALL);
    }
}

/// msgsnd and msgrcv restart after a stop or a signal without a handler,
/// and fail with EINTR after a handler ran (ERESTARTNOHAND).
fn restart_no_handler<T>(r: Result<T, Errno>) -> Result<T, Errno> {
    match r {
        Err(Errno::ERESTARTSYS) => Err(Errno::ERESTARTNOHAND),
        r => r,
    }
}

/// The sandbox's message queues.
#[derive(Default)]
pub struct Registry {
    pub table: Table<MsgQueue>,
}

impl Registry {
    /// `msgget`; the queue's bytes are charged to `acct`.
    pub fn get(
        &self,
        req: super::GetRequest,
        creds: &crate::auth::Credentials,
        acct: &Arc<Accountant>,
    ) -> Result<i32, Errno> {
        let make = |_id: i32, _others: &mut dyn Iterator<Item = &Slot<MsgQueue>>| Ok(MsgQueue::new(acct.clone()));
        self.table.get(req, creds, MSGMNI, |_| Ok(()), make)
    }

    /// IPC_RMID of queue `id` (already checked): its waiters fail with
    /// EIDRM.
    pub fn remove(&self, id: i32) -> Result<(), Errno> {
        let q = self.table.with(id, |s| Ok(s.obj.clone()))?;
        self.table.remove(id, &q);
        q.remove();
        Ok(())
    }

    /// The number of queues, of messages and of their bytes (MSG_INFO).
    pub fn totals(&self) -> (u64, u64, u64) {
        self.table.all().iter().fold((0, 0, 0), |(n, m, b), (_, _, q)| {
            let st = q.stat();
            (n + 1, m + st.qnum, b + st.cbytes)
        })
    }

    /// The text of /proc/sysvipc/msg.
    pub fn proc_text(&self) -> String {
        let mut out = String::from(
            "       key      msqid perms      cbytes       qnum lspid lrpid   uid   gid  cuid  cgid      stime      rtime      ctime\n",
        );
        for (id, p, q) in self.table.all() {
            let st = q.stat();
            out.push_str(&format!(
                "{:>10} {:>10}  {:>4o}  {:>10} {:>10} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>10} {:>10} {:>10}\n",
                p.key,
                id,
                p.mode,
                st.cbytes,
                st.qnum,
                st.lspid,
                st.lrpid,
                p.uid,
                p.gid,
                p.cuid,
                p.cgid,
                st.stime,
                st.rtime,
                st.ctime
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> (Arc<Accountant>, MsgQueue) {
        let acct = Accountant::new(1 << 20);
        (acct.clone(), MsgQueue::new(acct))
    }

    #[test]
    fn selection_by_type() {
        let (_, q) = queue();
        for (t, text) in [(3, "c"), (1, "a"), (2, "b"), (1, "a2")] {
            q.send(t, text.as_bytes().to_vec(), true, 1).unwrap();
        }
        let recv = |sel| q.receive(sel, 64, false, true, 2).map(|(t, m)| (t, String::from_utf8(m).unwrap()));
        assert_eq!(recv(Select::new(2, false)), Ok((2, "b".into())));
        assert_eq!(recv(Select::new(-2, false)), Ok((1, "a".into())));
        assert_eq!(recv(Select::new(1, true)), Ok((3, "c".into())));
        assert_eq!(recv(Select::new(0, false)), Ok((1, "a2".into())));
        assert_eq!(recv(Select::new(0, false)), Err(Errno::ENOMSG));
        assert_eq!(Select::new(i64::MIN, false), Select::AtMost(i64::MAX));
    }

    #[test]
    fn msg_copy_leaves_the_message_queued() {
        let (_, q) = queue();
        q.send(4, b"first".to_vec(), true, 1).unwrap();
        q.send(5, b"second".to_vec(), true, 1).unwrap();
        assert_eq!(q.receive(Select::Nth(1), 64, false, true, 2), Ok((5, b"second".to_vec())));
        assert_eq!(q.receive(Select::Nth(2), 64, false, true, 2), Err(Errno::ENOMSG));
        assert_eq!(q.receive(Select::Nth(0), 2, false, true, 2), Err(Errno::E2BIG));
        assert_eq!(q.receive(Select::Nth(0), 2, true, true, 2), Err(Errno::EINVAL));
        let st = q.stat();
        assert_eq!((st.qnum, st.lrpid), (2, 0));
    }

    #[test]
    fn long_messages_and_full_queues() {
        let (acct, q) = queue();
        q.send(1, vec![7; 100], true, 1).unwrap();
        assert!(acct.charged() >= 100);
        assert_eq!(q.receive(Select::First, 10, false, true, 2), Err(Errno::E2BIG));
        assert_eq!(q.stat().qnum, 1, "the message stays");
        assert_eq!(q.receive(Select::First, 10, true, true, 2), Ok((1, vec![7; 10])));
        assert_eq!(acct.charged(), 0);
        q.set_qbytes(100);
        q.send(1, vec![0; 60], true, 1).unwrap();
        assert_eq!(q.send(1, vec![0; 60], true, 1), Err(Errno::EAGAIN));
        let st = q.stat();
        assert_eq!((st.cbytes, st.qnum, st.lspid, st.lrpid), (60, 1, 1, 2));
    }
}
