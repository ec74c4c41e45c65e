//! System calls on netlink sockets (AF_NETLINK, NETLINK_ROUTE only): the
//! socket calls of socket.rs come here for a netlink descriptor. Requests
//! are answered at once by the netstack's read-only route replies.

use super::args::{self, int};
use super::socket::{iovec_list, nonblocking, read_msghdr, write_msg_results, write_sockaddr, write_sockopt};
use super::sockopt::Sock;
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::socket::{
    MsgHdr, AF_NETLINK, MSG_PEEK, MSG_TRUNC, NETLINK_ROUTE, SOCK_DGRAM, SOCK_RAW, SOL_NETLINK, SOL_SOCKET,
};
use crate::abi::{Errno, SysResult};
use crate::fs::netlink::NetlinkSocket;
use crate::kernel::Task;
use crate::vfs::{FileDescription, READ_EVENTS};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An open netlink socket: its description (flags) and the socket.
pub(super) type Open = (Arc<FileDescription>, Arc<NetlinkSocket>);

/// The netlink socket that open file `f` is, if it is one.
pub(super) fn socket_of(f: &Arc<FileDescription>) -> Option<Open> {
    f.ops.clone().into_any().downcast::<NetlinkSocket>().ok().map(|s| (f.clone(), s))
}

/// socket(2) for AF_NETLINK: SOCK_RAW or SOCK_DGRAM, NETLINK_ROUTE.
pub(super) fn socket(task: &Task, kind: i32, protocol: i32) -> Result<Arc<NetlinkSocket>, Errno> {
    if kind != SOCK_RAW && kind != SOCK_DGRAM {
        return Err(Errno::ESOCKTNOSUPPORT);
    }
    if protocol != NETLINK_ROUTE {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok(NetlinkSocket::new(task.kernel.anon_ino(), super::fd::now(), kind))
}

/// A sockaddr_nl for port `pid` (0: the kernel).
fn sockaddr_nl(pid: u32) -> Vec<u8> {
    let mut e = Encoder::new();
    e.u16(16).u16(0).u32(pid).u32(0);
    e.as_bytes().to_vec()
}

/// Binds the process's own port id when the socket has none yet, as Linux
/// does on bind or the first send.
fn autobind(task: &Task, s: &NetlinkSocket) {
    let pid = u32::try_from(task.thread.tgid).unwrap_or(0);
    let _ = s.port.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed);
}

/// bind(2): a port id (0 picks the process id); multicast groups are
/// accepted but no events are ever sent.
pub(super) fn bind(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    if a[2] < 12 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 12];
    task.thread.mm().copy_in(a[1], &mut raw)?;
    let mut d = Decoder::new(&raw);
    if i32::from(d.u16()) != AF_NETLINK {
        return Err(Errno::EINVAL);
    }
    d.skip(2);
    let pid = d.u32();
    if pid != 0 {
        s.port.store(pid, Ordering::Relaxed);
    }
    autobind(task, s);
    Ok(0)
}

/// connect(2): only to the kernel (port 0).
pub(super) fn connect(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    if a[2] < 12 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 12];
    task.thread.mm().copy_in(a[1], &mut raw)?;
    if Decoder::new(&raw[4..]).u32() != 0 {
        return Err(Errno::ECONNREFUSED);
    }
    autobind(task, s);
    Ok(0)
}

pub(super) fn getsockname(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    write_sockaddr(task, a[1], a[2], &sockaddr_nl(s.port.load(Ordering::Relaxed)))?;
    Ok(0)
}

pub(super) fn getpeername(task: &Task, a: [u64; 6]) -> SysResult {
    write_sockaddr(task, a[1], a[2], &sockaddr_nl(0))?;
    Ok(0)
}

/// Sends the guest's `bufs` as one datagram of requests.
fn send(task: &Task, s: &NetlinkSocket, bufs: &[(u64, usize)]) -> SysResult {
    let total = bufs.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add);
    if total > 1 << 16 {
        return Err(Errno::EMSGSIZE);
    }
    let mut data = Vec::with_capacity(total);
    for &(base, len) in bufs {
        let at = data.len();
        data.resize(at + len, 0);
        task.thread.mm().copy_in(base, &mut data[at..])?;
    }
    autobind(task, s);
    s.send(&data).map(|n| n as u64)
}

/// Receives the next reply into the guest's `bufs`: (count, or the whole
/// length with MSG_TRUNC; whether it was cut).
fn recv(
    task: &Task,
    f: &FileDescription,
    s: &NetlinkSocket,
    bufs: &[(u64, usize)],
    flags: u64,
) -> Result<(u64, bool), Errno> {
    let total = bufs.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add).min(1 << 20);
    let mut buf = vec![0u8; total];
    let peek = flags & MSG_PEEK != 0;
    let (n, full) = {
        let deadline = s.timeouts.lock().0.map(crate::waiter::deadline_in);
        super::block::wait_io(f, READ_EVENTS, nonblocking(f, flags), deadline, || s.recv(&mut buf, peek))?
    };
    let mut at = 0;
    for &(base, len) in bufs {
        if at >= n {
            break;
        }
        let k = len.min(n - at);
        task.thread.mm().copy_out(base, &buf[at..at + k])?;
        at += k;
    }
    let reported = if flags & MSG_TRUNC != 0 { full } else { n };
    Ok((reported as u64, n < full))
}

pub(super) fn sendto(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    let len = super::file::count(a[2]);
    args::user_range(a[1], len)?;
    send(task, s, &[(a[1], len)])
}

pub(super) fn sendmsg(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    let h = read_msghdr(task, a[1])?;
    send(task, s, &iovec_list(task, &h)?)
}

pub(super) fn recvfrom(task: &Task, f: &FileDescription, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    let len = super::file::count(a[2]);
    args::user_range(a[1], len)?;
    let (n, _) = recv(task, f, s, &[(a[1], len)], a[3])?;
    if a[4] != 0 && a[5] != 0 {
        write_sockaddr(task, a[4], a[5], &sockaddr_nl(0))?;
    }
    Ok(n)
}

pub(super) fn recvmsg(task: &Task, f: &FileDescription, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    let h = read_msghdr(task, a[1])?;
    let (n, cut) = recv(task, f, s, &iovec_list(task, &h)?, a[2])?;
    if h.name != 0 {
        write_sockaddr(task, h.name, a[1] + MsgHdr::NAMELEN_OFFSET, &sockaddr_nl(0))?;
    }
    let flags = if cut { i32::try_from(MSG_TRUNC).unwrap_or(0) } else { 0 };
    write_msg_results(task, a[1], 0, flags)?;
    Ok(n)
}

/// The socket as the shared SOL_SOCKET options see it.
fn sock(s: &NetlinkSocket) -> Sock<'_> {
    Sock { domain: AF_NETLINK, ty: s.ty, protocol: NETLINK_ROUTE, opts: &s.opts, timeouts: &s.timeouts }
}

/// getsockopt(2): the shared socket-level options; no SOL_NETLINK ones.
pub(super) fn getsockopt(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    if int(a[1]) != SOL_SOCKET {
        return Err(Errno::ENOPROTOOPT);
    }
    let len = super::socket::read_optlen(task, a)?;
    let value = super::sockopt::get(&sock(s), int(a[2]), len)?;
    write_sockopt(task, a, &value)
}

/// setsockopt(2): the shared socket-level options; the SOL_NETLINK flags
/// (extended acks, strict checking, group membership) are accepted
/// without effect.
pub(super) fn setsockopt(task: &Task, s: &NetlinkSocket, a: [u64; 6]) -> SysResult {
    match int(a[1]) {
        SOL_SOCKET => super::sockopt::set(task, &sock(s), int(a[2]), a[3], a[4]).map(|()| 0),
        SOL_NETLINK if (1..=12).contains(&int(a[2])) => Ok(0),
        _ => Err(Errno::ENOPROTOOPT),
    }
}
