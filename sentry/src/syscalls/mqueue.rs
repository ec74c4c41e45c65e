//! System calls: POSIX message queues (mq_open, mq_unlink, mq_timedsend,
//! mq_timedreceive, mq_notify, mq_getsetattr).

use super::args::{self, int, uint};
use super::{Entries, Support::*};
use crate::abi::fcntl::O_NONBLOCK;
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::signal::{SIGEV_NONE, SIGEV_SIGNAL};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::fs::mqueue::{self, Notification, OpenRequest, QueueFile};
use crate::kernel::siginfo::SigInfo;
use crate::kernel::Task;
use crate::vfs::perm::{self, MAY_READ, MAY_WRITE};
use crate::vfs::{FileDescription, READ_EVENTS, WRITE_EVENTS};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_mq_open,
        sys_mq_open,
        Partial("RLIMIT_MSGQUEUE is not counted: all queues together reserve at most 64 MiB (then EMFILE)"),
    ),
    (libc::SYS_mq_unlink, sys_mq_unlink, Full),
    (libc::SYS_mq_timedsend, sys_mq_timedsend, Full),
    (libc::SYS_mq_timedreceive, sys_mq_timedreceive, Full),
    (
        libc::SYS_mq_notify,
        sys_mq_notify,
        Partial("SIGEV_THREAD (glibc's notification through a netlink socket) is EINVAL"),
    ),
    (libc::SYS_mq_getsetattr, sys_mq_getsetattr, Full),
];

/// `struct mq_attr`: flags, maxmsg, msgsize, curmsgs (and padding).
const MQ_ATTR_SIZE: usize = 64;

fn read_attr(task: &Task, addr: u64) -> Result<[i64; 4], Errno> {
    let mut raw = [0u8; MQ_ATTR_SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut d = Decoder::new(&raw);
    Ok([d.i64(), d.i64(), d.i64(), d.i64()])
}

fn sys_mq_open(task: &mut Task, a: [u64; 6]) -> SysResult {
    let name = args::path(task, a[0])?;
    let oflag = int(a[1]);
    let attr = if a[3] != 0 {
        let [_, maxmsg, msgsize, _] = read_attr(task, a[3])?;
        Some((maxmsg, msgsize))
    } else {
        None
    };
    let creds = task.thread.creds();
    let req = OpenRequest {
        name: &name,
        create: oflag & libc::O_CREAT != 0,
        exclusive: oflag & libc::O_EXCL != 0,
        attr,
        mode: uint(a[2]) & 0o7777 & !task.thread.fs().umask(),
        uid: creds.fsuid,
        gid: creds.fsgid,
        privileged: creds.capable(caps::CAP_SYS_RESOURCE),
    };
    let k = &task.kernel;
    let registry = k.ext::<mqueue::Registry>();
    let (queue, made) = registry.open(&req, k.anon_ino(), crate::fs::tmpfs::now())?;
    let node = registry.node(queue.clone());
    let access = oflag & libc::O_ACCMODE;
    if !made {
        let want = match access {
            libc::O_RDONLY => MAY_READ,
            libc::O_WRONLY => MAY_WRITE,
            libc::O_RDWR => MAY_READ | MAY_WRITE,
            _ => return Err(Errno::EINVAL),
        };
        perm::check(&creds, &crate::vfs::Node::stat(node.as_ref())?, want)?;
    }
    let mut shown = b"/".to_vec();
    shown.extend_from_slice(&name);
    let d = k.anon_dentry(&shown, node);
    let ops = Arc::new(QueueFile::new(queue));
    let status = u32::try_from(oflag & (libc::O_ACCMODE | libc::O_NONBLOCK)).map_err(|_| Errno::EINVAL)?;
    let f = FileDescription::new(d, ops, status);
    // mq descriptors are always close-on-exec, as Linux makes them.
    match task.thread.fds().install(f, true, 0, task.thread.nofile()) {
        Ok(fd) => u64::try_from(fd).map_err(|_| Errno::EMFILE),
        Err(e) => {
            if made {
                let _ = registry.unlink(&name, |_| true);
            }
            Err(e)
        }
    }
}

fn sys_mq_unlink(task: &mut Task, a: [u64; 6]) -> SysResult {
    let name = args::path(task, a[0])?;
    // The queues' directory is sticky (1777) and root's: its owner, the
    // queue's or CAP_FOWNER may remove a queue.
    let creds = task.thread.creds();
    let allowed = |q: &mqueue::Queue| creds.fsuid == 0 || creds.fsuid == q.uid || creds.capable(caps::CAP_FOWNER);
    task.kernel.ext::<mqueue::Registry>().unlink(&name, allowed)?;
    Ok(0)
}

/// The queue an open description is, else EBADF.
fn queue_of(f: &FileDescription) -> Result<Arc<QueueFile>, Errno> {
    f.ops.clone().into_any().downcast::<QueueFile>().map_err(|_| Errno::EBADF)
}

/// The queue behind descriptor `fd`, which must be open for `write`
/// (sending) or reading.
fn queue_file(task: &Task, fd: u64, write: bool) -> Result<(Arc<FileDescription>, Arc<QueueFile>), Errno> {
    let f = args::file(task, fd)?;
    let q = queue_of(&f)?;
    let access = i32::try_from(f.flags()).unwrap_or(0) & libc::O_ACCMODE;
    let allowed = if write { access != libc::O_RDONLY } else { access != libc::O_WRONLY };
    if !allowed {
        return Err(Errno::EBADF);
    }
    Ok((f, q))
}

fn sys_mq_timedsend(task: &mut Task, a: [u64; 6]) -> SysResult {
    let deadline = super::futex::deadline(task, a[4], true, true)?;
    let prio = uint(a[3]);
    if prio >= mqueue::PRIO_MAX {
        return Err(Errno::EINVAL);
    }
    let (f, q) = queue_file(task, a[0], true)?;
    let len = usize::try_from(a[2]).map_err(|_| Errno::EMSGSIZE)?;
    if u64::try_from(len).map_err(|_| Errno::EMSGSIZE)? > q.queue.msgsize {
        return Err(Errno::EMSGSIZE);
    }
    let mut msg = vec![0u8; len];
    task.thread.mm().copy_in(a[1], &mut msg)?;
    let nonblock = super::block::nonblocking(&f);
    let sent = super::block::wait_until(&f, WRITE_EVENTS, nonblock, deadline, || q.queue.send(&mut msg, prio))?;
    if let Some(n) = sent {
        if n.signo != 0 && task.kernel.procs().alive(n.pid) {
            let info = SigInfo::mesgq(n.signo, task.thread.tgid(), task.thread.creds().uid, n.value);
            task.kernel.signal_process_info(n.pid, info);
        }
    }
    Ok(0)
}

fn sys_mq_timedreceive(task: &mut Task, a: [u64; 6]) -> SysResult {
    let deadline = super::futex::deadline(task, a[4], true, true)?;
    let (f, q) = queue_file(task, a[0], false)?;
    let nonblock = super::block::nonblocking(&f);
    let _waiting = (!nonblock).then(|| q.queue.receiver_waiting());
    let (msg, prio) = super::block::wait_until(&f, READ_EVENTS, nonblock, deadline, || q.queue.receive(a[2]))?;
    task.thread.mm().copy_out(a[1], &msg)?;
    if a[3] != 0 {
        task.thread.mm().copy_out(a[3], &prio.to_le_bytes())?;
    }
    u64::try_from(msg.len()).map_err(|_| Errno::EMSGSIZE)
}

fn sys_mq_notify(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = task.thread.tgid();
    let notification = if a[1] == 0 {
        None
    } else {
        let mut raw = [0u8; 16];
        task.thread.mm().copy_in(a[1], &mut raw)?;
        let mut d = Decoder::new(&raw);
        let (value, signo, how) = (d.u64(), d.i32(), d.i32());
        // SIGEV_SIGNAL with signal 0 is valid and sends nothing.
        let signo = match how {
            SIGEV_NONE => 0,
            SIGEV_SIGNAL if (0..=64).contains(&signo) => signo,
            _ => return Err(Errno::EINVAL),
        };
        Some(Notification { pid, signo, value })
    };
    let f = args::file(task, a[0])?;
    let q = queue_of(&f)?;
    let procs = &task.kernel.procs();
    q.queue.set_notify(pid, notification, |p| procs.alive(p))?;
    Ok(0)
}

fn sys_mq_getsetattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    let new_flags = if a[1] != 0 {
        let [flags, ..] = read_attr(task, a[1])?;
        if flags & !i64::from(libc::O_NONBLOCK) != 0 {
            return Err(Errno::EINVAL);
        }
        Some(flags)
    } else {
        None
    };
    let f = args::file(task, a[0])?;
    let q = queue_of(&f)?;
    let nonblock = O_NONBLOCK;
    let old_flags = i64::from(f.flags() & nonblock);
    if let Some(flags) = new_flags {
        let on = if flags != 0 { nonblock } else { 0 };
        f.set_status_flags((f.flags() & !nonblock) | on);
    }
    if a[2] != 0 {
        let queue = &q.queue;
        let mut e = Encoder::with_capacity(MQ_ATTR_SIZE);
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        e.i64(old_flags).i64(n(queue.maxmsg)).i64(n(queue.msgsize)).i64(n(queue.count()));
        e.zeros(MQ_ATTR_SIZE - e.len());
        task.thread.mm().copy_out(a[2], e.as_bytes())?;
    }
    Ok(0)
}
