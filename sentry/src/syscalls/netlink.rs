//! System calls on netlink sockets (AF_NETLINK, NETLINK_ROUTE only): the
//! socket calls of socket.rs come here for a netlink descriptor. Requests
//! are answered at once by the netstack's read-only route replies.

use super::args;
use super::socket::{
    iovec_list, nonblocking, read_msghdr, read_optlen, write_msg_results, write_sockaddr, write_sockopt,
};
use super::socket_ops::{OptArg, SockAddrArg, SocketOps, UserBuf};
use super::sockopt::Sock;
use crate::abi::layout::Layout;
use crate::abi::sockaddr::{family_of, SockaddrNl};
use crate::abi::socket::{
    MsgHdr, AF_NETLINK, MSG_PEEK, MSG_TRUNC, NETLINK_ROUTE, SOCK_DGRAM, SOCK_RAW, SOL_NETLINK, SOL_SOCKET,
};
use crate::abi::{Errno, SysResult};
use crate::fs::netlink::NetlinkSocket;
use crate::kernel::Task;
use crate::vfs::{FileDescription, READ_EVENTS};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
    SockaddrNl { pid, groups: 0 }.encode()
}

/// Binds the process's own port id when the socket has none yet, as Linux
/// does on bind or the first send.
fn autobind(task: &Task, s: &NetlinkSocket) {
    let pid = u32::try_from(task.thread.tgid()).unwrap_or(0);
    let _ = s.port.compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed);
}

/// bind(2): a port id (0 picks the process id); multicast groups are
/// accepted but no events are ever sent.
fn bind(task: &Task, s: &NetlinkSocket, addr: SockAddrArg) -> SysResult {
    if addr.len < SockaddrNl::SIZE as u64 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; SockaddrNl::SIZE];
    task.thread.mm().copy_in(addr.addr, &mut raw)?;
    if i32::from(family_of(&raw)) != AF_NETLINK {
        return Err(Errno::EINVAL);
    }
    let pid = SockaddrNl::decode(&raw).pid;
    if pid != 0 {
        s.port.store(pid, Ordering::Relaxed);
    }
    autobind(task, s);
    Ok(0)
}

/// connect(2): only to the kernel (port 0).
fn connect(task: &Task, s: &NetlinkSocket, addr: SockAddrArg) -> SysResult {
    if addr.len < SockaddrNl::SIZE as u64 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; SockaddrNl::SIZE];
    task.thread.mm().copy_in(addr.addr, &mut raw)?;
    if SockaddrNl::decode(&raw).pid != 0 {
        return Err(Errno::ECONNREFUSED);
    }
    autobind(task, s);
    Ok(0)
}

fn getsockname(task: &Task, s: &NetlinkSocket, out: SockAddrArg) -> SysResult {
    write_sockaddr(task, out.addr, out.len, &sockaddr_nl(s.port.load(Ordering::Relaxed)))?;
    Ok(0)
}

fn getpeername(task: &Task, out: SockAddrArg) -> SysResult {
    write_sockaddr(task, out.addr, out.len, &sockaddr_nl(0))?;
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

fn sendto(task: &Task, s: &NetlinkSocket, buf: UserBuf) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    send(task, s, &[buf])
}

fn sendmsg(task: &Task, s: &NetlinkSocket, msg: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    send(task, s, &iovec_list(task, &h)?)
}

fn recvfrom(
    task: &Task,
    f: &FileDescription,
    s: &NetlinkSocket,
    buf: UserBuf,
    flags: u64,
    out: SockAddrArg,
) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    let (n, _) = recv(task, f, s, &[buf], flags)?;
    if out.addr != 0 && out.len != 0 {
        write_sockaddr(task, out.addr, out.len, &sockaddr_nl(0))?;
    }
    Ok(n)
}

fn recvmsg(task: &Task, f: &FileDescription, s: &NetlinkSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let (n, cut) = recv(task, f, s, &iovec_list(task, &h)?, flags)?;
    if h.name != 0 {
        write_sockaddr(task, h.name, msg + MsgHdr::NAMELEN_OFFSET, &sockaddr_nl(0))?;
    }
    let out_flags = if cut { i32::try_from(MSG_TRUNC).unwrap_or(0) } else { 0 };
    write_msg_results(task, msg, 0, out_flags)?;
    Ok(n)
}

/// The socket as the shared SOL_SOCKET options see it.
fn sock(s: &NetlinkSocket) -> Sock<'_> {
    Sock { domain: AF_NETLINK, ty: s.ty, protocol: NETLINK_ROUTE, opts: &s.opts, timeouts: &s.timeouts }
}

/// getsockopt(2): the shared socket-level options; no SOL_NETLINK ones.
fn getsockopt(task: &Task, s: &NetlinkSocket, opt: OptArg) -> SysResult {
    if opt.level != SOL_SOCKET {
        return Err(Errno::ENOPROTOOPT);
    }
    let len = read_optlen(task, opt)?;
    let value = super::sockopt::get(&sock(s), opt.name, len)?;
    write_sockopt(task, opt, &value)
}

/// setsockopt(2): the shared socket-level options; the SOL_NETLINK flags
/// (extended acks, strict checking, group membership) are accepted
/// without effect.
fn setsockopt(task: &Task, s: &NetlinkSocket, opt: OptArg) -> SysResult {
    match opt.level {
        SOL_SOCKET => super::sockopt::set(task, &sock(s), opt.name, opt.val, opt.len).map(|()| 0),
        SOL_NETLINK if (1..=12).contains(&opt.name) => Ok(0),
        _ => Err(Errno::ENOPROTOOPT),
    }
}

/// A netlink socket neither listens nor accepts nor shuts down
/// (EOPNOTSUPP, the interface's defaults).
impl SocketOps for Arc<NetlinkSocket> {
    fn bind(&self, task: &Task, addr: SockAddrArg) -> SysResult {
        bind(task, self, addr)
    }

    fn connect(&self, task: &Task, _f: &FileDescription, addr: SockAddrArg) -> SysResult {
        connect(task, self, addr)
    }

    fn getsockname(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getsockname(task, self, out)
    }

    fn getpeername(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getpeername(task, out)
    }

    fn sendto(&self, task: &Task, _f: &FileDescription, buf: UserBuf, _flags: u64, _to: SockAddrArg) -> SysResult {
        sendto(task, self, buf)
    }

    fn recvfrom(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, from: SockAddrArg) -> SysResult {
        recvfrom(task, f, self, buf, flags, from)
    }

    fn sendmsg(&self, task: &Task, _f: &FileDescription, msg: u64, _flags: u64) -> SysResult {
        sendmsg(task, self, msg)
    }

    fn recvmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult {
        recvmsg(task, f, self, msg, flags)
    }

    fn write(&self, task: &Task, _f: &FileDescription, bufs: &[UserBuf]) -> SysResult {
        send(task, self, bufs)
    }

    fn shutdown(&self, _task: &Task, _how: i32) -> SysResult {
        Err(Errno::EOPNOTSUPP)
    }

    fn getsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        getsockopt(task, self, opt)
    }

    fn setsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        setsockopt(task, self, opt)
    }
}
