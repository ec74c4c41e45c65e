//! System calls on IP sockets (AF_INET, AF_INET6): the socket calls of
//! socket.rs come here when the descriptor is a netstack endpoint. The
//! netstack has loopback only, so these reach the sandbox's own sockets;
//! a stream that connects out of the sandbox passes the egress gateway
//! (`egress.rs`) and is carried on a host connection from then on; a
//! listener's accept also takes connections from outside (`inbound.rs`).

use super::args;
use super::block::wait_io;
use super::errqueue;
use super::inet_cmsg;
use super::socket::{
    iovec_list, nonblocking, read_msghdr, read_optlen, write_msg_results, write_sockaddr, write_sockopt, Cursor,
};
use super::socket_ops::{OptArg, SockAddrArg, SocketOps, UserBuf};
use super::sockopt::{self, Sock};
use super::sockopt_ip::{self, Arrival};
use super::sockopt_mcast;
use super::sockopt_tcp;
use super::sockopt_udp;
use crate::abi::layout::Layout;
use crate::abi::sockaddr::{encode_inet, family_of, SockaddrIn, SockaddrIn6};
use crate::abi::socket::{
    MsgHdr, AF_INET, AF_INET6, AF_UNSPEC, IPPROTO_IP, IPPROTO_IPV6, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_UDPLITE,
    IPV6_V6ONLY, IP_MULTICAST_ALL, IP_MULTICAST_IF, IP_MULTICAST_LOOP, IP_MULTICAST_TTL, MSG_ERRQUEUE, MSG_MORE,
    MSG_NOSIGNAL, MSG_OOB, MSG_PEEK, MSG_TRUNC, MSG_WAITALL, SOCK_DGRAM, SOCK_RAW, SOCK_STREAM, SOL_SOCKET,
    SO_ACCEPTCONN, SO_BROADCAST, SO_ERROR, SO_LINGER, SO_OOBINLINE, SO_RCVBUF, SO_RCVBUFFORCE, SO_REUSEADDR,
    SO_REUSEPORT, SO_SNDBUF, SO_SNDBUFFORCE,
};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::fs::egress::HostConn;
use crate::fs::inet::{errno, Endpoint, InetSocket};
use crate::kernel::Task;
use crate::vfs::{FileDescription, READ_EVENTS, WRITE_EVENTS};
use crate::waiter::deadline_in;
use husk_netstack::udp::{HeaderOverride, Meta, Protocol};
use husk_netstack::{Family, ShareOpts, TcpEndpoint, UdpEndpoint};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The most a stream send moves per step through the sentry's buffer.
const STREAM_CHUNK: usize = 256 * 1024;

/// socket(2) for AF_INET/AF_INET6: type `kind` (SOCK_STREAM or
/// SOCK_DGRAM) and `protocol` (0 or the matching IPPROTO).
pub(super) fn socket(task: &Task, domain: i32, kind: i32, protocol: i32) -> Result<Arc<InetSocket>, Errno> {
    let family = if domain == AF_INET6 { Family::V6 } else { Family::V4 };
    let net = &task.kernel.net();
    let endpoint = match (kind, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) => Endpoint::Tcp(TcpEndpoint::new(net, family)),
        (SOCK_DGRAM, 0 | IPPROTO_UDP) => Endpoint::Udp(UdpEndpoint::new(net, family)),
        (SOCK_DGRAM, IPPROTO_UDPLITE) => Endpoint::Udp(UdpEndpoint::with_protocol(net, family, Protocol::UdpLite)),
        (SOCK_STREAM | SOCK_DGRAM, _) => return Err(Errno::EPROTONOSUPPORT),
        // Raw sockets need CAP_NET_RAW and a stack that has them.
        (SOCK_RAW, _) => return Err(Errno::EPERM),
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    };
    Ok(InetSocket::new(task.kernel.anon_ino(), super::fd::now(), endpoint))
}

fn family(s: &InetSocket) -> Family {
    match &s.endpoint {
        Endpoint::Tcp(t) => t.family(),
        Endpoint::Udp(u) => u.family(),
    }
}

/// Reads the sockaddr at `addr` (`len` bytes) for a socket of family `f`:
/// None for AF_UNSPEC.
fn read_addr(task: &Task, f: Family, addr: u64, len: u64) -> Result<Option<SocketAddr>, Errno> {
    let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
    if !(2..=128).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let fam = family_of(&raw);
    if fam == AF_UNSPEC {
        return Ok(None);
    }
    // Linux checks the length for the socket's family before the family;
    // it takes neither the flow label nor the scope of an IPv6 address.
    match f {
        Family::V4 => {
            let r = raw.get(..SockaddrIn::SIZE).ok_or(Errno::EINVAL)?;
            if i32::from(fam) != AF_INET {
                return Err(Errno::EAFNOSUPPORT);
            }
            Ok(Some(SocketAddr::V4(SockaddrIn::decode(r).0)))
        }
        Family::V6 => {
            let r = raw.get(..24).ok_or(Errno::EINVAL)?;
            if i32::from(fam) != AF_INET6 {
                return Err(Errno::EAFNOSUPPORT);
            }
            let a = SockaddrIn6::decode(r).0;
            Ok(Some(SocketAddr::new(IpAddr::V6(*a.ip()), a.port())))
        }
    }
}

/// The peer a connect or a send names: an IPv6 datagram socket takes an
/// AF_INET address too, as the v4-mapped one, unless it is IPV6_V6ONLY
/// (`v6only_err`), as Linux's udpv6_pre_connect and udpv6_sendmsg.
fn read_peer(task: &Task, s: &InetSocket, addr: u64, len: u64, v6only_err: Errno) -> Result<Option<SocketAddr>, Errno> {
    if family(s) == Family::V6 && !s.is_stream() && len >= 2 {
        let mut fam = [0u8; 2];
        task.thread.mm().copy_in(addr, &mut fam)?;
        if i32::from(u16::from_ne_bytes(fam)) == AF_INET {
            if share_opts(s).v6only {
                return Err(v6only_err);
            }
            return Ok(read_addr(task, Family::V4, addr, len)?.map(|a| presented(s, a)));
        }
    }
    read_addr(task, family(s), addr, len)
}

/// How socket `s` shows `a`: an IPv4 address on an IPv6 socket is
/// v4-mapped.
fn presented(s: &InetSocket, a: SocketAddr) -> SocketAddr {
    match (family(s), a.ip()) {
        (Family::V6, IpAddr::V4(v4)) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), a.port()),
        _ => a,
    }
}

fn bind(task: &Task, s: &InetSocket, addr: SockAddrArg) -> SysResult {
    let to = match read_addr(task, family(s), addr.addr, addr.len)? {
        Some(to) => to,
        None => unspec_bind(task, s, addr)?,
    };
    if s.stream_outside().is_some() {
        return Err(Errno::EINVAL);
    }
    // Ports below 1024 need CAP_NET_BIND_SERVICE, which root holds.
    let privileged_below = task.kernel.net_sysctls().unprivileged_port_start();
    if to.port() != 0
        && u32::from(to.port()) < privileged_below
        && !task.thread.creds().capable(caps::CAP_NET_BIND_SERVICE)
    {
        return Err(Errno::EACCES);
    }
    match &s.endpoint {
        Endpoint::Tcp(t) => t.bind(to),
        Endpoint::Udp(u) => u.bind(to),
    }
    .map_err(errno)?;
    Ok(0)
}

/// bind(2) of an IPv4 socket to an AF_UNSPEC address: Linux's
/// __inet_bind takes it as AF_INET when its address is INADDR_ANY (an
/// old compatibility), with its port; anything else, and any IPv6
/// socket, gets EAFNOSUPPORT.
fn unspec_bind(task: &Task, s: &InetSocket, addr: SockAddrArg) -> Result<SocketAddr, Errno> {
    if family(s) != Family::V4 {
        return Err(Errno::EAFNOSUPPORT);
    }
    if addr.len < SockaddrIn::SIZE as u64 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; SockaddrIn::SIZE];
    task.thread.mm().copy_in(addr.addr, &mut raw)?;
    let a = SockaddrIn::decode(&raw).0;
    if !a.ip().is_unspecified() {
        return Err(Errno::EAFNOSUPPORT);
    }
    Ok(SocketAddr::V4(a))
}

fn listen(task: &Task, s: &InetSocket, backlog: i32) -> SysResult {
    match &s.endpoint {
        _ if s.stream_outside().is_some() => Err(Errno::EINVAL),
        Endpoint::Tcp(t) => {
            t.listen(backlog).map_err(errno)?;
            super::inbound::listened(task, s);
            Ok(0)
        }
        Endpoint::Udp(_) => Err(Errno::EOPNOTSUPP),
    }
}

fn connect(task: &Task, f: &FileDescription, s: &InetSocket, addr: SockAddrArg) -> SysResult {
    let to = read_peer(task, s, addr.addr, addr.len, Errno::EAFNOSUPPORT)?;
    if let Some(conn) = s.stream_outside() {
        return super::egress::reconnect(task, f, s, conn, to);
    }
    if super::egress::connect_resolver(task, s, to) {
        // Bound as a socket connected out is (eth0's address, a port).
        if let (Endpoint::Udp(u), Some(to)) = (&s.endpoint, to) {
            u.connect_outside(to).map_err(errno)?;
        }
        return Ok(0);
    }
    if let Some(r) = super::egress::connect_resolver_stream(task, f, s, to) {
        return r;
    }
    if let Some(to) = to.filter(|&to| super::egress::takes(task, s, to)) {
        return super::egress::connect(task, f, s, to);
    }
    // A datagram socket connected outside and now to AF_UNSPEC or into
    // the sandbox leaves its outside peer.
    if let Some(conn) = s.outside() {
        conn.disconnect_datagrams()?;
    }
    match &s.endpoint {
        Endpoint::Tcp(t) => super::tcp_connect::connect(f, s, t, to.ok_or(Errno::EAFNOSUPPORT)?),
        Endpoint::Udp(u) => u.connect(to).map_err(errno).map(|()| 0),
    }
}

/// accept4(2) with `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC).
fn accept(task: &Task, f: &FileDescription, s: &InetSocket, out: SockAddrArg, flags: i32) -> SysResult {
    let Endpoint::Tcp(t) = &s.endpoint else { return Err(Errno::EOPNOTSUPP) };
    // SO_RCVTIMEO bounds the wait (EAGAIN), as in inet_csk_accept.
    let deadline = f.ops.io_timeout(false).map(crate::waiter::deadline_in);
    // The sandbox's own connections first, then those from outside.
    let take = || match t.accept() {
        Ok(conn) => {
            // The address it came from, even if it was reset since.
            let peer = conn.remote_addr().ok_or(Errno::ECONNABORTED)?;
            let sock = InetSocket::new(task.kernel.anon_ino(), super::fd::now(), Endpoint::Tcp(conn));
            super::tcp_connect::inherit(s, &sock);
            Ok((sock, peer))
        }
        Err(husk_netstack::Error::WouldBlock) => {
            s.wake_for_deferred(t);
            super::inbound::accept(task, s)
        }
        Err(e) => Err(errno(e)),
    };
    let (sock, peer) = wait_io(f, READ_EVENTS, nonblocking(f, 0), deadline, take)?;
    let nonblock = flags & libc::SOCK_NONBLOCK != 0;
    let fd = super::socket::install(task, sock, nonblock, flags & libc::SOCK_CLOEXEC != 0)?;
    if out.addr != 0 {
        write_sockaddr(task, out.addr, out.len, &encode_inet(peer))?;
    }
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn getsockname(task: &Task, s: &InetSocket, out: SockAddrArg) -> SysResult {
    let local = match &s.endpoint {
        _ if s.stream_outside().is_some() => {
            presented(s, s.stream_outside().map_or(Err(Errno::EINVAL), super::egress::sandbox_local)?)
        }
        Endpoint::Tcp(t) => t.local_addr(),
        Endpoint::Udp(u) => u.local_addr(),
    };
    write_sockaddr(task, out.addr, out.len, &encode_inet(local))?;
    Ok(0)
}

fn getpeername(task: &Task, s: &InetSocket, out: SockAddrArg) -> SysResult {
    if let Some(conn) = s.outside().filter(|c| s.is_stream() || c.is_connected()) {
        write_sockaddr(task, out.addr, out.len, &encode_inet(presented(s, super::egress::outside_peer(conn)?)))?;
        return Ok(0);
    }
    if let Some(resolver) = *s.resolver_peer.lock() {
        write_sockaddr(task, out.addr, out.len, &encode_inet(presented(s, resolver)))?;
        return Ok(0);
    }
    let peer = match &s.endpoint {
        Endpoint::Tcp(t) => t.peer_addr(),
        Endpoint::Udp(u) => u.peer_addr(),
    }
    .map_err(errno)?;
    write_sockaddr(task, out.addr, out.len, &encode_inet(peer))?;
    Ok(0)
}

/// The destination a send names, if any (a stream ignores it, as Linux
/// TCP does).
fn destination(task: &Task, s: &InetSocket, addr: u64, len: u64) -> Result<Option<SocketAddr>, Errno> {
    if addr == 0 || s.is_stream() {
        return Ok(None);
    }
    let to = read_peer(task, s, addr, len, Errno::ENETUNREACH)?;
    // Port 0 is no destination (udp_sendmsg's EINVAL), wherever it is;
    // IPv4 through a v6-only socket fails first.
    if let Some(t) = to.filter(|t| t.port() == 0) {
        let v4 = t.ip().to_canonical().is_ipv4();
        return Err(if family(s) == Family::V6 && v4 && share_opts(s).v6only {
            Errno::ENETUNREACH
        } else {
            Errno::EINVAL
        });
    }
    Ok(to)
}

/// Sends the guest's `bufs` (address, length): a datagram whole, a stream
/// a chunk at a time until all is sent (or, not blocking, what fits).
/// write and writev on an IP socket come here too.
fn send(
    task: &Task,
    f: &FileDescription,
    s: &InetSocket,
    bufs: &[(u64, usize)],
    flags: u64,
    (to, over): (Option<SocketAddr>, HeaderOverride),
) -> SysResult {
    let urgent = flags & MSG_OOB != 0;
    let more = flags & MSG_MORE != 0;
    if urgent && !s.is_stream() {
        return Err(Errno::EOPNOTSUPP);
    }
    let nonblock = nonblocking(f, flags);
    let mm = task.thread.mm();
    let total: usize = bufs.iter().map(|&(_, l)| l).fold(0, usize::saturating_add);
    let mut data = Vec::new();
    let mut cursor = Cursor::new(bufs);
    if !s.is_stream() {
        if total > 0xffff {
            return Err(oversize(s, to, total));
        }
        cursor.peek(&mm, &mut data, total)?;
        if let Some(sent) = super::egress::send_datagram(task, s, &data, to) {
            return sent.map(|n| n as u64);
        }
        let group = super::egress::group_on_uplink(s, to);
        let sent = s.send_with(&data, to, over)?;
        if let Some(group) = group {
            super::egress::group_copy_left(task, s, group)?;
        }
        return Ok(sent as u64);
    }
    let deadline = s.timeouts.lock().1.map(deadline_in);
    let mut done = 0usize;
    while done < total || total == 0 {
        cursor.peek(&mm, &mut data, (total - done).min(STREAM_CHUNK))?;
        let attempt = || match () {
            () if urgent => s.send_urgent(&data),
            () if more => s.send_more(&data),
            () => s.send(&data, None),
        };
        match wait_io(f, WRITE_EVENTS, nonblock, deadline, attempt) {
            Ok(w) => {
                done += w;
                cursor.advance(w);
                if total == 0 || (nonblock && w < data.len()) {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => {
                if e == Errno::EPIPE && flags & MSG_NOSIGNAL == 0 {
                    task.kernel.raise_sigpipe(&task.thread);
                }
                return Err(e);
            }
        }
    }
    Ok(done as u64)
}

/// The error of a datagram of `len` bytes (past any IP packet's) that `s`
/// sends to `to` or its peer: EMSGSIZE, which one to the sandbox's own
/// addresses may also leave on the error queue (the netstack decides,
/// after the errors of the destination); one that would leave the
/// sandbox never gets as far as the gateway.
fn oversize(s: &InetSocket, to: Option<SocketAddr>, len: usize) -> Errno {
    let Endpoint::Udp(u) = &s.endpoint else { return Errno::EMSGSIZE };
    let outside = match to {
        Some(to) => super::egress::outbound(to),
        None => s.outside().is_some_and(HostConn::is_connected) || s.resolver_peer.lock().is_some(),
    };
    if outside {
        return Errno::EMSGSIZE;
    }
    errno(u.refuse_oversize(to, len))
}

/// Receives into the guest's `bufs`: the count (a datagram's whole length
/// with MSG_TRUNC), whether the datagram was cut, and its sender (read and
/// readv take the path of every file: `FileOps::read`).
fn recv(
    task: &Task,
    f: &FileDescription,
    s: &InetSocket,
    bufs: &[(u64, usize)],
    flags: u64,
) -> Result<(u64, bool, Option<SocketAddr>), Errno> {
    recv_with_meta(task, f, s, bufs, flags).map(|(n, cut, from, _)| (n, cut, from))
}

/// recv, and how a datagram of the sandbox's own arrived.
fn recv_with_meta(
    task: &Task,
    f: &FileDescription,
    s: &InetSocket,
    bufs: &[(u64, usize)],
    flags: u64,
) -> Result<(u64, bool, Option<SocketAddr>, Option<Meta>), Errno> {
    // UDP takes no notice of MSG_OOB on receive (udp_recvmsg).
    if flags & MSG_OOB != 0 && s.is_stream() {
        return recv_urgent(task, s, bufs, flags).map(|(n, _)| (n, false, None, None));
    }
    let dontwait = nonblocking(f, flags);
    let peek = flags & MSG_PEEK != 0;
    let cap = if s.is_stream() { STREAM_CHUNK } else { 1 << 16 };
    let total = bufs.iter().map(|&(_, l)| l).fold(0, usize::saturating_add).min(cap);
    let mut buf = vec![0u8; total];
    let deadline = s.timeouts.lock().0.map(deadline_in);
    if let (Endpoint::Tcp(t), None, false, false) = (&s.endpoint, s.outside(), dontwait, peek) {
        // SO_RCVLOWAT: a blocking receive waits for that many bytes (at
        // most the buffer's length); when its time runs out it takes
        // what there is.
        let target = usize::try_from(s.opts.get().rcvlowat).unwrap_or(1).min(total).max(1);
        let enough = || {
            use husk_netstack::events::{ERR, HUP, RDHUP};
            if t.queued().0 >= target || t.events() & (RDHUP | ERR | HUP) != 0 {
                Ok(())
            } else {
                Err(Errno::EAGAIN)
            }
        };
        match wait_io(f, READ_EVENTS, false, deadline, enough) {
            Ok(()) | Err(Errno::EAGAIN) => {}
            Err(e) => return Err(e),
        }
    }
    let (n, full, from, meta) = wait_io(f, READ_EVENTS, dontwait, deadline, || s.recv(&mut buf, peek, !dontwait))?;
    let mut got = n;
    // MSG_WAITALL too stops at the urgent mark.
    while s.is_stream() && flags & MSG_WAITALL != 0 && got < total && n > 0 && !dontwait && !peek && !s.at_mark() {
        match wait_io(f, READ_EVENTS, false, deadline, || s.recv(&mut buf[got..], false, true)) {
            Ok((0, ..)) | Err(_) => break,
            Ok((more, ..)) => got += more,
        }
    }
    let mm = task.thread.mm();
    let mut at = 0;
    // A stream's MSG_TRUNC takes (or peeks) the bytes without copying
    // them out, as Linux's tcp_recvmsg.
    let discard = s.is_stream() && flags & MSG_TRUNC != 0;
    for &(base, len) in bufs {
        if at >= got || discard {
            break;
        }
        let k = len.min(got - at);
        mm.copy_out(base, &buf[at..at + k])?;
        at += k;
    }
    let reported = if flags & MSG_TRUNC != 0 && !s.is_stream() { full } else { got };
    Ok((reported as u64, got < full, from, meta))
}

/// recv(MSG_OOB) on a TCP socket: the urgent byte, never waiting (as
/// Linux's tcp_recv_urg); the count and the flags recvmsg reports
/// (MSG_OOB, and MSG_TRUNC when the buffer has no room).
fn recv_urgent(task: &Task, s: &InetSocket, bufs: &[(u64, usize)], flags: u64) -> Result<(u64, i32), Errno> {
    let byte = s.recv_urgent(flags & MSG_PEEK != 0)?;
    let oob = i32::try_from(MSG_OOB).unwrap_or(0);
    let Some(&(base, _)) = bufs.iter().find(|&&(_, len)| len > 0) else {
        return Ok((0, oob | i32::try_from(MSG_TRUNC).unwrap_or(0)));
    };
    if flags & MSG_TRUNC == 0 {
        task.thread.mm().copy_out(base, &[byte])?;
    }
    Ok((1, oob))
}

fn sendto(task: &Task, f: &FileDescription, s: &InetSocket, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    let to = destination(task, s, to.addr, to.len)?;
    send(task, f, s, &[buf], flags, (to, HeaderOverride::default()))
}

fn recvfrom(task: &Task, f: &FileDescription, s: &InetSocket, buf: UserBuf, flags: u64, out: SockAddrArg) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    let (n, from) = if flags & MSG_ERRQUEUE != 0 {
        let got = errqueue::recv(task, s, &[buf])?;
        (got.count, Some(got.to))
    } else {
        let (n, _, from) = recv(task, f, s, &[buf], flags)?;
        (n, from)
    };
    if out.addr != 0 && out.len != 0 {
        match from {
            Some(from) => write_sockaddr(task, out.addr, out.len, &encode_inet(from))?,
            None => task.thread.mm().copy_out(out.len, &0u32.to_le_bytes())?,
        }
    }
    Ok(n)
}

/// sendmsg(2): a UDP datagram takes the header fields its control
/// messages set (inet_cmsg.rs); other messages are passed over.
fn sendmsg(task: &Task, f: &FileDescription, s: &InetSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let to = destination(task, s, h.name, u64::from(h.namelen))?;
    let over = match &s.endpoint {
        Endpoint::Udp(u) => {
            // Linux gives a send to a v4-mapped address to IPv4's sendmsg.
            let dest = to.or_else(|| u.peer_addr().ok());
            let v6 = family(s) == Family::V6 && !dest.is_some_and(|d| d.ip().to_canonical().is_ipv4());
            inet_cmsg::header_override(task, &h, v6)?
        }
        Endpoint::Tcp(_) => HeaderOverride::default(),
    };
    send(task, f, s, &iovec_list(task, &h)?, flags, (to, over))
}

/// recvmsg(2); a datagram comes with the control messages its socket
/// asked for (timestamps, IP_PKTINFO …).
fn recvmsg(task: &Task, f: &FileDescription, s: &InetSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    // The error queue first, as Linux's udp_recvmsg and tcp_recvmsg.
    if flags & MSG_ERRQUEUE != 0 {
        return recv_error(task, s, &h, msg);
    }
    if flags & MSG_OOB != 0 && s.is_stream() {
        let (n, out_flags) = recv_urgent(task, s, &iovec_list(task, &h)?, flags)?;
        task.thread.mm().copy_out(msg + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?;
        write_msg_results(task, msg, 0, out_flags)?;
        return Ok(n);
    }
    let (n, cut, from, meta) = recv_with_meta(task, f, s, &iovec_list(task, &h)?, flags)?;
    let v6 = family(s) == Family::V6;
    let control = match meta {
        Some(m) => sockopt_ip::control(s, v6, &m, Arrival::Datagram),
        None if s.is_stream() => sockopt_tcp::control(s, usize::try_from(n).unwrap_or(0)),
        None => Vec::new(),
    };
    let (controllen, ctrunc) = sockopt_ip::write_control(task, &h, &control)?;
    match from.filter(|_| h.name != 0) {
        Some(from) => write_sockaddr(task, h.name, msg + MsgHdr::NAMELEN_OFFSET, &encode_inet(from))?,
        None => task.thread.mm().copy_out(msg + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?,
    }
    let out_flags = if cut { i32::try_from(MSG_TRUNC).unwrap_or(0) } else { 0 };
    write_msg_results(task, msg, controllen, out_flags | ctrunc)?;
    Ok(n)
}

/// recvmsg(MSG_ERRQUEUE): an entry of the socket's error queue, its
/// destination as msg_name and its error as the last control message.
fn recv_error(task: &Task, s: &InetSocket, h: &MsgHdr, msg: u64) -> SysResult {
    let got = errqueue::recv(task, s, &iovec_list(task, h)?)?;
    let (controllen, ctrunc) = sockopt_ip::write_control(task, h, &got.control)?;
    if h.name != 0 {
        write_sockaddr(task, h.name, msg + MsgHdr::NAMELEN_OFFSET, &encode_inet(got.to))?;
    } else {
        task.thread.mm().copy_out(msg + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?;
    }
    write_msg_results(task, msg, controllen, got.flags | ctrunc)?;
    Ok(got.count)
}

fn shutdown(s: &InetSocket, how: i32) -> SysResult {
    let (read, write) = match how {
        0 => (true, false),
        1 => (false, true),
        2 => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    if let Some(conn) = s.stream_outside() {
        return conn.shutdown(read, write).map(|()| 0);
    }
    match &s.endpoint {
        Endpoint::Tcp(t) => t.shutdown(read, write),
        Endpoint::Udp(u) => u.shutdown(read, write),
    }
    .map_err(errno)?;
    Ok(0)
}

/// The socket as the shared SOL_SOCKET options see it.
fn sock(s: &InetSocket) -> Sock<'_> {
    let (ty, protocol) = match &s.endpoint {
        Endpoint::Tcp(_) => (SOCK_STREAM, IPPROTO_TCP),
        Endpoint::Udp(u) if u.protocol() == Protocol::UdpLite => (SOCK_DGRAM, IPPROTO_UDPLITE),
        Endpoint::Udp(_) => (SOCK_DGRAM, IPPROTO_UDP),
    };
    let domain = if family(s) == Family::V6 { AF_INET6 } else { AF_INET };
    Sock { domain, ty, protocol, opts: &s.opts, timeouts: &s.timeouts }
}

fn share_opts(s: &InetSocket) -> ShareOpts {
    match &s.endpoint {
        Endpoint::Tcp(t) => t.share_opts(),
        Endpoint::Udp(u) => u.share_opts(),
    }
}

fn getsockopt(task: &Task, s: &InetSocket, arg: OptArg) -> SysResult {
    let opt = (arg.level, arg.name);
    if sockopt_udp::handles(s, opt) {
        return sockopt_udp::get(task, s, arg);
    }
    let len = read_optlen(task, arg)?;
    let flag = |b: bool| i32::from(b).to_le_bytes().to_vec();
    let value = match opt {
        (SOL_SOCKET, SO_ERROR) if s.stream_outside().is_some() => {
            s.stream_outside().map_or(Ok(0), HostConn::take_error)?.to_le_bytes().to_vec()
        }
        (SOL_SOCKET, SO_ERROR) => {
            let e = match &s.endpoint {
                Endpoint::Tcp(t) => t.take_error(),
                Endpoint::Udp(u) => u.take_error(),
            };
            e.map_or(0, |e| errno(e).0).to_le_bytes().to_vec()
        }
        (SOL_SOCKET, SO_ACCEPTCONN) => flag(matches!(&s.endpoint, Endpoint::Tcp(t) if t.is_listening())),
        (SOL_SOCKET, SO_REUSEADDR) => flag(share_opts(s).reuse_addr),
        (SOL_SOCKET, SO_REUSEPORT) => flag(share_opts(s).reuse_port),
        // The sandbox's own TCP connection queues what its buffers say
        // (the netstack grows an unset send buffer once connected).
        (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) if s.outside().is_none() && s.is_stream() => {
            let Endpoint::Tcp(t) = &s.endpoint else { return Err(Errno::ENOPROTOOPT) };
            let (send, recv) = t.buffer_sizes();
            let size = if opt.1 == SO_SNDBUF { send } else { recv };
            i32::try_from(size).unwrap_or(i32::MAX).to_le_bytes().to_vec()
        }
        (SOL_SOCKET, name) => sockopt::get(&sock(s), name, len)?,
        (IPPROTO_TCP, name) if s.is_stream() => sockopt_tcp::get(s, name)?,
        (IPPROTO_IPV6, IPV6_V6ONLY) if family(s) == Family::V6 => flag(share_opts(s).v6only),
        // ip_getsockopt serves SOL_IP alone.
        (IPPROTO_IPV6, _) if family(s) == Family::V4 => return Err(Errno::EOPNOTSUPP),
        _ => match s.stored.lock().get(&opt).cloned() {
            Some(v) => v,
            None => sockopt_ip::default(family(s) == Family::V6, opt).ok_or(Errno::ENOPROTOOPT)?.to_le_bytes().to_vec(),
        },
    };
    // do_ip_getsockopt gives a byte to a buffer shorter than an int when
    // the value fits one (IP_MULTICAST_IF, an address, is cut instead).
    if let (IPPROTO_IP, 1..=3, [b, 0, 0, 0]) = (opt.0, len, value.as_slice()) {
        if opt.1 != IP_MULTICAST_IF {
            return write_sockopt(task, arg, &[*b]);
        }
    }
    write_sockopt(task, arg, &value)
}

fn setsockopt(task: &Task, s: &InetSocket, arg: OptArg) -> SysResult {
    let opt = (arg.level, arg.name);
    if opt.0 == SOL_SOCKET && opt.1 != SO_REUSEADDR && opt.1 != SO_REUSEPORT {
        sockopt::set(task, &sock(s), opt.1, arg.val, arg.len)?;
        if let (SO_LINGER, Endpoint::Tcp(t)) = (opt.1, &s.endpoint) {
            let (on, secs) = s.opts.get().linger;
            t.set_reset_on_close(on && secs == 0);
        }
        if let (SO_OOBINLINE, Endpoint::Tcp(t)) = (opt.1, &s.endpoint) {
            t.set_oob_inline(s.opts.get().flags & sockopt::flag_bit(SO_OOBINLINE) != 0);
        }
        if let (SO_SNDBUF | SO_SNDBUFFORCE | SO_RCVBUF | SO_RCVBUFFORCE, Endpoint::Tcp(t)) = (opt.1, &s.endpoint) {
            let v = s.opts.get();
            let send = opt.1 == SO_SNDBUF || opt.1 == SO_SNDBUFFORCE;
            let size = if send { v.sndbuf } else { v.rcvbuf };
            if let Some(size) = size.and_then(|n| usize::try_from(n).ok()) {
                t.set_buffer_size(send, size);
            }
        }
        if let (SO_BROADCAST, Endpoint::Udp(u)) = (opt.1, &s.endpoint) {
            u.set_broadcast(s.opts.get().flags & sockopt::flag_bit(SO_BROADCAST) != 0);
        }
        if let (SO_RCVBUF | SO_RCVBUFFORCE, Endpoint::Udp(u)) = (opt.1, &s.endpoint) {
            if let Some(size) = s.opts.get().rcvbuf.and_then(|n| usize::try_from(n).ok()) {
                u.set_receive_buffer(size);
            }
        }
        // What the egress gateway carries over to the host socket.
        if crate::fs::egress::FORWARDED_OPTIONS.contains(&opt) {
            let mut raw = [0u8; 4];
            task.thread.mm().copy_in(arg.val, &mut raw)?;
            if let Some(conn) = s.stream_outside() {
                conn.set_option(opt.0, opt.1, i32::from_le_bytes(raw))?;
            }
            s.stored.lock().insert(opt, raw.to_vec());
        }
        return Ok(0);
    }
    if opt.0 == IPPROTO_TCP && s.is_stream() {
        return sockopt_tcp::set(task, s, opt.1, arg.val, arg.len).map(|()| 0);
    }
    if sockopt_udp::handles(s, opt) {
        return sockopt_udp::set(task, s, arg);
    }
    let len = usize::try_from(args::uint(arg.len)).map_err(|_| Errno::EINVAL)?;
    if len > 256 {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(arg.val, &mut raw)?;
    let on = || -> Result<bool, Errno> {
        let v = raw.get(..4).ok_or(Errno::EINVAL)?;
        Ok(i32::from_le_bytes([v[0], v[1], v[2], v[3]]) != 0)
    };
    let set_share = |change: &dyn Fn(&mut ShareOpts)| {
        let mut o = share_opts(s);
        change(&mut o);
        match &s.endpoint {
            Endpoint::Tcp(t) => t.set_share_opts(o),
            Endpoint::Udp(u) => u.set_share_opts(o),
        }
        .map_err(errno)
    };
    match opt {
        (SOL_SOCKET, SO_REUSEADDR) => {
            let v = on()?;
            set_share(&|o| o.reuse_addr = v)?;
        }
        (SOL_SOCKET, SO_REUSEPORT) => {
            let v = on()?;
            set_share(&|o| o.reuse_port = v)?;
        }
        (IPPROTO_IPV6, IPV6_V6ONLY) if family(s) == Family::V6 => {
            let v = on()?;
            set_share(&|o| o.v6only = v)?;
        }
        _ if sockopt_mcast::handles(family(s) == Family::V6, opt) => sockopt_mcast::set(s, opt, &raw)?,
        _ => {
            let v6 = family(s) == Family::V6;
            sockopt_ip::default(v6, opt).ok_or(Errno::ENOPROTOOPT)?;
            // IPv4 options also take a single byte, or nothing (0), as
            // do_ip_setsockopt reads them.
            let value = match raw.len() {
                4.. => i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
                1.. if opt.0 == IPPROTO_IP => i32::from(raw[0]),
                0 if opt.0 == IPPROTO_IP
                    && !matches!(opt.1, IP_MULTICAST_TTL | IP_MULTICAST_LOOP | IP_MULTICAST_ALL) =>
                {
                    0
                }
                _ => return Err(Errno::EINVAL),
            };
            let kept = sockopt_ip::check(v6, s.is_stream(), opt, value)?;
            s.stored.lock().insert(opt, kept.to_le_bytes().to_vec());
            sockopt_ip::update_header(s, v6);
            errqueue::option_set(s, opt, kept);
            sockopt_mcast::update(s, v6);
        }
    }
    Ok(0)
}

impl SocketOps for Arc<InetSocket> {
    fn bind(&self, task: &Task, addr: SockAddrArg) -> SysResult {
        bind(task, self, addr)
    }

    fn listen(&self, task: &Task, backlog: i32) -> SysResult {
        listen(task, self, backlog)
    }

    fn accept(&self, task: &Task, f: &FileDescription, peer: SockAddrArg, flags: i32) -> SysResult {
        accept(task, f, self, peer, flags)
    }

    fn connect(&self, task: &Task, f: &FileDescription, addr: SockAddrArg) -> SysResult {
        connect(task, f, self, addr)
    }

    fn getsockname(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getsockname(task, self, out)
    }

    fn getpeername(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getpeername(task, self, out)
    }

    fn sendto(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult {
        sendto(task, f, self, buf, flags, to)
    }

    fn recvfrom(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, from: SockAddrArg) -> SysResult {
        recvfrom(task, f, self, buf, flags, from)
    }

    fn sendmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult {
        sendmsg(task, f, self, msg, flags)
    }

    fn recvmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult {
        recvmsg(task, f, self, msg, flags)
    }

    /// write and writev take send's path: a datagram socket connected to
    /// the sandbox's resolver reaches it as a send(2) does.
    fn write(&self, task: &Task, f: &FileDescription, bufs: &[UserBuf]) -> SysResult {
        send(task, f, self, bufs, 0, (None, HeaderOverride::default()))
    }

    fn shutdown(&self, _task: &Task, how: i32) -> SysResult {
        shutdown(self, how)
    }

    fn getsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        getsockopt(task, self, opt)
    }

    fn setsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        setsockopt(task, self, opt)
    }
}
