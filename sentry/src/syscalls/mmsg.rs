//! System calls: sendmmsg and recvmmsg, several messages in one call, each
//! as sendmsg or recvmsg would take it (glibc's resolver sends its A and
//! AAAA queries together with sendmmsg).

use super::socket_ops::of_fd;
use super::{Entries, Support::*};
use crate::abi::layout::Layout;
use crate::abi::socket::{MsgHdr, MSG_DONTWAIT, MSG_WAITFORONE};
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use std::time::{Duration, Instant};

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_sendmmsg, sys_sendmmsg, Partial("each message as sendmsg sends it; a failure after the first message returns the count sent")),
    (libc::SYS_recvmmsg, sys_recvmmsg, Partial("each message as recvmsg receives it, waiting for each unless MSG_WAITFORONE (then only the first); the timeout is checked after each message and written back, as Linux (it does not cut a wait short); an error after the first message is not kept for the next call (Linux's sk_err)")),
];

/// sizeof(struct mmsghdr): a msghdr, then the message's length (and
/// padding).
const MMSGHDR: u64 = 64;
/// Where an mmsghdr's msg_len lies.
const MSG_LEN: u64 = MsgHdr::SIZE as u64;
/// Linux's cap on the messages of one call (UIO_MAXIOV).
const MAX_MESSAGES: u64 = 1024;

/// Runs `one` on each mmsghdr in turn, storing each count in its msg_len,
/// and after each `more` says whether to go on: the number of messages
/// done, or the first one's error.
fn each(
    task: &mut Task,
    a: [u64; 6],
    mut one: impl FnMut(&mut Task, u64, usize) -> SysResult,
    mut more: impl FnMut() -> bool,
) -> SysResult {
    let count = a[2].min(MAX_MESSAGES);
    let mut done = 0u64;
    while done < count {
        let hdr = a[1].checked_add(done * MMSGHDR).ok_or(Errno::EFAULT)?;
        let r = one(task, hdr, usize::try_from(done).unwrap_or(usize::MAX)).and_then(|n| {
            let len = u32::try_from(n).unwrap_or(u32::MAX);
            task.thread.mm().copy_out(hdr + MSG_LEN, &len.to_le_bytes())
        });
        match r {
            Ok(()) => done += 1,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
        if !more() {
            break;
        }
    }
    Ok(done)
}

fn sys_sendmmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    each(task, a, |task, hdr, _| s.sendmsg(task, &f, hdr, a[3]), || true)
}

/// recvmmsg's timeout: when it ends (a zero timeout has ended already),
/// EINVAL for an invalid one.
fn read_timeout(task: &Task, addr: u64) -> Result<Option<Instant>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut b = [0u8; Timespec::SIZE];
    task.thread.mm().copy_in(addr, &mut b)?;
    let t = Timespec::decode(&b);
    if !t.is_valid() {
        return Err(Errno::EINVAL);
    }
    let now = Instant::now();
    Ok(Some(now.checked_add(t.duration()).unwrap_or(now + Duration::from_secs(u32::MAX.into()))))
}

fn sys_recvmmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    let end = read_timeout(task, a[4])?;
    let mut flags = a[3] & !MSG_WAITFORONE;
    let wait_for_one = a[3] & MSG_WAITFORONE != 0;
    // What is left of the timeout after the last message (Linux updates
    // it only then).
    let mut left = None;
    let done = each(
        task,
        a,
        |task, hdr, i| {
            if i > 0 && wait_for_one {
                flags |= MSG_DONTWAIT;
            }
            s.recvmsg(task, &f, hdr, flags)
        },
        || match end {
            Some(end) => {
                let rest = end.saturating_duration_since(Instant::now());
                left = Some(rest);
                !rest.is_zero()
            }
            None => true,
        },
    )?;
    if let Some(rest) = left.filter(|_| done > 0) {
        task.thread.mm().copy_out(a[4], Timespec::from_duration(rest).encode().as_slice())?;
    }
    Ok(done)
}
