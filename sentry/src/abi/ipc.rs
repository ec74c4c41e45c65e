//! System V IPC (message queues, semaphores, shared memory): the flags
//! and commands the three families share, the message-queue ones, and the
//! layouts of `struct ipc64_perm` and `struct msqid64_ds`.

use super::layout::{Decoder, Encoder, Layout};

/// `IPC_PRIVATE`: a key that always makes a new object.
pub const IPC_PRIVATE: i32 = 0;
pub const IPC_CREAT: i32 = 0o1000;
pub const IPC_EXCL: i32 = 0o2000;
pub const IPC_NOWAIT: i32 = 0o4000;

/// The `ctl` commands the three families share.
pub const IPC_RMID: i32 = 0;
pub const IPC_SET: i32 = 1;
pub const IPC_STAT: i32 = 2;
pub const IPC_INFO: i32 = 3;

/// msgrcv(2) flags.
pub const MSG_NOERROR: i32 = 0o10000;
pub const MSG_EXCEPT: i32 = 0o20000;
pub const MSG_COPY: i32 = 0o40000;

/// msgctl(2) commands past the shared ones.
pub const MSG_STAT: i32 = 11;
pub const MSG_INFO: i32 = 12;
pub const MSG_STAT_ANY: i32 = 13;

/// `struct ipc64_perm`: the permissions that begin every `*id64_ds`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ipc64Perm {
    pub key: i32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    pub mode: u16,
    pub seq: u16,
}

impl Layout for Ipc64Perm {
    const SIZE: usize = 48;

    fn encode_to(&self, e: &mut Encoder) {
        e.i32(self.key).u32(self.uid).u32(self.gid).u32(self.cuid).u32(self.cgid);
        e.u16(self.mode).u16(0).u16(self.seq).u16(0).zeros(4).u64(0).u64(0);
    }

    fn decode_from(d: &mut Decoder) -> Ipc64Perm {
        let (key, uid, gid, cuid, cgid) = (d.i32(), d.u32(), d.u32(), d.u32(), d.u32());
        let mode = d.u16();
        let seq = d.skip(2).u16();
        d.skip(2 + 4 + 16);
        Ipc64Perm { key, uid, gid, cuid, cgid, mode, seq }
    }
}

/// `struct msqid64_ds`: a message queue's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Msqid64Ds {
    pub perm: Ipc64Perm,
    pub stime: i64,
    pub rtime: i64,
    pub ctime: i64,
    pub cbytes: u64,
    pub qnum: u64,
    pub qbytes: u64,
    pub lspid: i32,
    pub lrpid: i32,
}

impl Layout for Msqid64Ds {
    const SIZE: usize = 120;

    fn encode_to(&self, e: &mut Encoder) {
        self.perm.encode_to(e);
        e.i64(self.stime).i64(self.rtime).i64(self.ctime).u64(self.cbytes).u64(self.qnum).u64(self.qbytes);
        e.i32(self.lspid).i32(self.lrpid).zeros(16);
    }

    fn decode_from(d: &mut Decoder) -> Msqid64Ds {
        let perm = Ipc64Perm::decode_from(d);
        let (stime, rtime, ctime) = (d.i64(), d.i64(), d.i64());
        let (cbytes, qnum, qbytes) = (d.u64(), d.u64(), d.u64());
        let (lspid, lrpid) = (d.i32(), d.i32());
        d.skip(16);
        Msqid64Ds { perm, stime, rtime, ctime, cbytes, qnum, qbytes, lspid, lrpid }
    }
}

/// sizeof(struct msginfo), msgctl(IPC_INFO)'s answer.
pub const MSGINFO_SIZE: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn constants_match_linux() {
        let pairs = [
            (IPC_PRIVATE, libc::IPC_PRIVATE),
            (IPC_CREAT, libc::IPC_CREAT),
            (IPC_EXCL, libc::IPC_EXCL),
            (IPC_NOWAIT, libc::IPC_NOWAIT),
            (IPC_RMID, libc::IPC_RMID),
            (IPC_SET, libc::IPC_SET),
            (IPC_STAT, libc::IPC_STAT),
            (IPC_INFO, libc::IPC_INFO),
            (MSG_NOERROR, libc::MSG_NOERROR),
            (MSG_EXCEPT, libc::MSG_EXCEPT),
            (MSG_COPY, libc::MSG_COPY),
            (MSG_STAT, libc::MSG_STAT),
            (MSG_INFO, libc::MSG_INFO),
        ];
        for (ours, linux) in pairs {
            assert_eq!(ours, linux);
        }
    }

    #[test]
    fn layouts_match_linux() {
        // glibc's x86-64 ipc_perm and msqid_ds are the kernel's 64-bit ones.
        assert_eq!(size_of::<libc::ipc_perm>(), Ipc64Perm::SIZE);
        assert_eq!(size_of::<libc::msqid_ds>(), Msqid64Ds::SIZE);
        assert_eq!(size_of::<libc::msginfo>(), MSGINFO_SIZE);
        assert_eq!(offset_of!(libc::ipc_perm, mode), 20);
        assert_eq!(offset_of!(libc::msqid_ds, msg_stime), Ipc64Perm::SIZE);
        assert_eq!(offset_of!(libc::msqid_ds, msg_lspid), 96);
        let ds = Msqid64Ds {
            perm: Ipc64Perm { key: 1, uid: 2, gid: 3, cuid: 4, cgid: 5, mode: 0o640, seq: 7 },
            stime: 8,
            rtime: 9,
            ctime: 10,
            cbytes: 11,
            qnum: 12,
            qbytes: 13,
            lspid: 14,
            lrpid: 15,
        };
        let raw = ds.encode();
        assert_eq!(raw.len(), Msqid64Ds::SIZE);
        assert_eq!(Msqid64Ds::decode(&raw), ds);
        assert_eq!(raw[20..22], 0o640u16.to_le_bytes());
        assert_eq!(raw[96..100], 14i32.to_le_bytes());
    }
}
