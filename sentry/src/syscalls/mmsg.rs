//! System calls: sendmmsg and recvmmsg, several messages in one call, each
//! as sendmsg or recvmsg would take it (glibc's resolver sends its A and
//! AAAA queries together with sendmmsg).

use super::socket_ops::of_fd;
use super::{Entries, Support::*};
use crate::abi::layout::Layout;
use crate::abi::socket::{MsgHdr, MSG_DONTWAIT, MSG_WAITFORONE};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_sendmmsg, sys_sendmmsg, Partial("each message as sendmsg sends it")),
    (libc::SYS_recvmmsg, sys_recvmmsg, Partial("each message as recvmsg receives it; only the first waits (as with MSG_WAITFORONE), so the timeout is not used")),
];

/// sizeof(struct mmsghdr): a msghdr, then the message's length (and
/// padding).
const MMSGHDR: u64 = 64;
/// Where an mmsghdr's msg_len lies.
const MSG_LEN: u64 = MsgHdr::SIZE as u64;
/// Linux's cap on the messages of one call (UIO_MAXIOV).
const MAX_MESSAGES: u64 = 1024;

/// Runs `one` on each mmsghdr in turn, storing each count in its msg_len:
/// the number of messages done, or the first one's error.
fn each(task: &mut Task, a: [u64; 6], mut one: impl FnMut(&mut Task, u64, usize) -> SysResult) -> SysResult {
    let count = a[2].min(MAX_MESSAGES);
    let mut done = 0u64;
    while done < count {
        let hdr = a[1].checked_add(done * MMSGHDR).ok_or(Errno::EFAULT)?;
        let n = match one(task, hdr, usize::try_from(done).unwrap_or(usize::MAX)) {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        let len = u32::try_from(n).unwrap_or(u32::MAX);
        task.thread.mm().copy_out(hdr + MSG_LEN, &len.to_le_bytes())?;
        done += 1;
    }
    Ok(done)
}

fn sys_sendmmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    each(task, a, |task, hdr, _| s.sendmsg(task, &f, hdr, a[3]))
}

fn sys_recvmmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    let flags = a[3] & !MSG_WAITFORONE;
    each(task, a, |task, hdr, i| {
        let flags = if i == 0 { flags } else { flags | MSG_DONTWAIT };
        s.recvmsg(task, &f, hdr, flags)
    })
}
