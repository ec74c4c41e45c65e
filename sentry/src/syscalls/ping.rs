//! System calls on ICMP echo sockets (`fs/ping.rs`): socket(AF_INET,
//! SOCK_DGRAM, IPPROTO_ICMP) and its ICMPv6 twin, as unprivileged `ping`
//! uses them. Every echo request is checked against the egress policy as
//! a connect is (denied: EPERM at once and a net.denied record; allowed:
//! a net.connect record with protocol icmp, once per destination) and
//! then sent on the socket's host ping socket; replies come back with
//! their ICMP header, as Linux's ping sockets return them.

use super::args::{self, int};
use super::block::wait_io;
use super::socket::{iovec_list, nonblocking, read_msghdr, write_msg_results, write_sockaddr, write_sockopt};
use super::socket_ops::{OptArg, SockAddrArg, SocketOps, UserBuf};
use crate::abi::layout::Layout;
use crate::abi::sockaddr::{encode_ip, family_of, SockaddrIn, SockaddrIn6};
use crate::abi::socket::{
    MsgHdr, AF_INET, AF_INET6, AF_UNSPEC, MSG_CTRUNC, MSG_ERRQUEUE, MSG_PEEK, MSG_TRUNC, SOCK_DGRAM, SOL_SOCKET,
    SO_DOMAIN, SO_ERROR, SO_PROTOCOL, SO_RCVTIMEO, SO_SNDTIMEO, SO_TYPE,
};
use crate::abi::socket::{SockExtendedErr, CMSG_HDR};
use crate::abi::time::Timeval;
use crate::abi::{Errno, SysResult};
use crate::audit::Record;
use crate::fs::egress::{Egress, Flow, OpenError};
use crate::fs::ping::{LocalReply, PingSocket, HOST_CONTROL, HOST_OPTIONS};
use crate::fs::ping_local::{self, own_source, Cmsgs};
use crate::host::outer::Kind;
use crate::kernel::Task;
use crate::vfs::{FileDescription, READ_EVENTS, WRITE_EVENTS};
use crate::waiter::deadline_in;
use husk_netstack::egress::Verdict;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

/// The largest datagram a ping socket takes (Linux: EMSGSIZE past it).
const MAX_DATAGRAM: usize = 0xFFFF;

/// An ICMP header: type, code, checksum, id, sequence.
const HEADER: usize = 8;

/// Whether socket(2) with these arguments asks for an ICMP echo socket.
pub(super) fn wants(domain: i32, ty: i32, protocol: i32) -> bool {
    let kind = ty & 0xf;
    kind == SOCK_DGRAM
        && ((domain == AF_INET && protocol == libc::IPPROTO_ICMP)
            || (domain == AF_INET6 && protocol == libc::IPPROTO_ICMPV6))
}

/// socket(2): a host ping socket in the outer namespace carries it. The
/// host's refusal is the guest's: EACCES when the outer namespace's
/// `net.ipv4.ping_group_range` excludes the sentry, as an unprivileged
/// ping gets on that host. Past `--egress-max-conns`: ENOBUFS and a
/// net.denied record whose reason is the limit, as connect's. Without
/// a gateway the socket has no way out (sends: ENETUNREACH).
pub(super) fn socket(task: &Task, domain: i32) -> Result<Arc<PingSocket>, Errno> {
    let v6 = domain == AF_INET6;
    let egress = task.kernel.ext::<Egress>();
    let host = match egress.gateway() {
        None => None,
        Some(g) => match g.open(v6, Kind::Ping) {
            Ok(o) => Some(o),
            Err(OpenError::Errno(e)) => return Err(e),
            Err(OpenError::Limit(n)) => {
                log::debug!("egress: an ICMP socket past the limit of {n} host sockets");
                // No destination yet: the record names the family's "any".
                let any: IpAddr = if v6 { Ipv6Addr::UNSPECIFIED.into() } else { Ipv4Addr::UNSPECIFIED.into() };
                let (pid, protocol, address) = (task.thread.tgid(), "icmp".to_owned(), any.to_string());
                let reason = format!("denied: the limit of {n} connections at once (--egress-max-conns)");
                let direction = None;
                task.kernel.audit(|| Record::NetDenied { pid, protocol, address, port: 0, reason, direction })?;
                return Err(Errno::ENOBUFS);
            }
        },
    };
    Ok(PingSocket::new(task.kernel.anon_ino(), super::fd::now(), v6, host))
}

/// Reads the sockaddr at `addr` (`len` bytes) for socket `s`: its
/// address and port (the echo id for bind); None for AF_UNSPEC.
fn read_addr(task: &Task, s: &PingSocket, addr: u64, len: u64) -> Result<Option<(IpAddr, u16)>, Errno> {
    let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
    let need = if s.v6 { 24 } else { SockaddrIn::SIZE };
    if !(2..=128).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let fam = family_of(&raw);
    if fam == AF_UNSPEC {
        return Ok(None);
    }
    let r = raw.get(..need).ok_or(Errno::EINVAL)?;
    match (s.v6, i32::from(fam)) {
        (false, AF_INET) => {
            let a = SockaddrIn::decode(r).0;
            Ok(Some((IpAddr::V4(*a.ip()), a.port())))
        }
        (true, AF_INET6) => {
            let a = SockaddrIn6::decode(r).0;
            Ok(Some((IpAddr::V6(*a.ip()), a.port())))
        }
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// The policy's word on an echo request to `ip`: EPERM and a net.denied
/// record when it is denied; allowed, a net.connect record the first
/// time this socket sends there. ICMP has no port: a rule allows it when
/// it allows the address on any port.
fn permit(task: &Task, s: &PingSocket, ip: IpAddr) -> Result<(), Errno> {
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway().ok_or(Errno::ENETUNREACH)?;
    let ip = ip.to_canonical();
    let (pid, protocol, address) = (task.thread.tgid(), "icmp".to_owned(), ip.to_string());
    match gateway.decide(SocketAddr::new(ip, 0)) {
        (Verdict::Allowed { rule }, name) => {
            if s.recorded.lock().insert(ip) {
                // The socket's net.close (bytes each way) names its first destination.
                let log = task.kernel.audit_log().cloned();
                let start = std::time::Instant::now();
                let dest = SocketAddr::new(ip, 0);
                s.host()?.track(Flow { log, pid, protocol: protocol.clone(), dest, start, inbound: false });
                let direction = None;
                task.kernel.audit(|| Record::NetConnect { pid, protocol, address, port: 0, name, rule, direction })?;
            }
            Ok(())
        }
        (verdict, _) => {
            log::debug!("egress: icmp to {ip} {verdict}");
            let reason = verdict.to_string();
            task.kernel.audit(|| Record::NetDenied { pid, protocol, address, port: 0, reason, direction: None })?;
            Err(Errno::EPERM)
        }
    }
}

/// Sends one echo request: Linux's checks in its order (size, then the
/// ICMP header, then the address), then the policy's.
fn send(task: &Task, f: &FileDescription, s: &PingSocket, data: &[u8], to: Option<IpAddr>, flags: u64) -> SysResult {
    let echo = if s.v6 { 128 } else { 8 };
    if data.len() < HEADER || data[0] != echo || data[1] != 0 {
        return Err(Errno::EINVAL);
    }
    // The sandbox's own addresses answer themselves: no policy, no host.
    let uplink = husk_netstack::iface::uplink();
    if let Some(from) = to.map_or(s.local_peer(), Some).and_then(|ip| own_source(ip, uplink)) {
        return u64::try_from(s.answer(data, from)?).map_err(|_| Errno::EINVAL);
    }
    let host = s.host()?;
    let deadline = s.timeouts.lock().1.map(deadline_in);
    let n = match to {
        None if !host.is_connected() => return Err(Errno::EDESTADDRREQ),
        None => wait_io(f, WRITE_EVENTS, nonblocking(f, flags), deadline, || host.send(data))?,
        Some(ip) => {
            permit(task, s, ip)?;
            let to = SocketAddr::new(ip, 0);
            wait_io(f, WRITE_EVENTS, nonblocking(f, flags), deadline, || host.send_to(data, to))?
        }
    };
    u64::try_from(n).map_err(|_| Errno::EINVAL)
}

/// The guest's `bufs` gathered into one datagram.
fn gather(task: &Task, bufs: &[(u64, usize)]) -> Result<Vec<u8>, Errno> {
    let total = bufs.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add);
    if total > MAX_DATAGRAM {
        return Err(Errno::EMSGSIZE);
    }
    let mut data = Vec::with_capacity(total);
    for &(base, len) in bufs {
        let at = data.len();
        data.resize(at + len, 0);
        task.thread.mm().copy_in(base, &mut data[at..])?;
    }
    Ok(data)
}

/// The destination address of a send, if it names one.
fn destination(task: &Task, s: &PingSocket, addr: u64, len: u64) -> Result<Option<IpAddr>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let (ip, _) = read_addr(task, s, addr, len)?.ok_or(Errno::EAFNOSUPPORT)?;
    Ok(Some(ip))
}

fn sendto(task: &Task, f: &FileDescription, s: &PingSocket, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    let data = gather(task, &[buf])?;
    let to = destination(task, s, to.addr, to.len)?;
    send(task, f, s, &data, to, flags)
}

fn sendmsg(task: &Task, f: &FileDescription, s: &PingSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let data = gather(task, &iovec_list(task, &h)?)?;
    let to = destination(task, s, h.name, u64::from(h.namelen))?;
    send(task, f, s, &data, to, flags)
}

/// The most control bytes one recvmsg passes on (Linux bounds them by
/// the socket's optmem; these options need far less).
const CONTROL_MAX: usize = 4096;

/// What one receive got: the count (or the whole length with MSG_TRUNC),
/// msg_flags, the sender and the control bytes to pass on.
struct Got {
    count: u64,
    flags: i32,
    from: Option<SocketAddr>,
    control: Vec<u8>,
}

/// Receives one echo reply (MSG_ERRQUEUE: one error-queue entry, never
/// waiting) into the guest's `bufs`, with up to `control` bytes of the
/// host's control messages that HOST_CONTROL allows.
fn recv(
    task: &Task,
    f: &FileDescription,
    s: &PingSocket,
    bufs: &[(u64, usize)],
    flags: u64,
    control: usize,
) -> Result<Got, Errno> {
    let total = bufs.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add).min(MAX_DATAGRAM);
    let mut buf = vec![0u8; total];
    let mut cbuf = vec![0u8; control.min(CONTROL_MAX)];
    let peek = flags & MSG_PEEK != 0;
    let got = if flags & MSG_ERRQUEUE != 0 {
        s.host().map_err(|_| Errno::EAGAIN)?.recv_error(&mut buf, peek, &mut cbuf)?
    } else {
        let deadline = s.timeouts.lock().0.map(deadline_in);
        let attempt = || {
            if let Some(r) = s.take_local(peek) {
                return Ok(Err(r));
            }
            match s.host() {
                Ok(host) => host.recv_msg(&mut buf, peek, &mut cbuf).map(Ok),
                Err(_) => Err(Errno::EAGAIN),
            }
        };
        match wait_io(f, READ_EVENTS, nonblocking(f, flags), deadline, attempt)? {
            Ok(got) => got,
            Err(local) => return local_reply(task, s, bufs, flags, control, &local),
        }
    };
    let mut at = 0;
    for &(base, len) in bufs {
        if at >= got.copied {
            break;
        }
        let k = len.min(got.copied - at);
        task.thread.mm().copy_out(base, &buf[at..at + k])?;
        at += k;
    }
    let reported = if flags & MSG_TRUNC != 0 { got.full } else { got.copied };
    let (control, dropped) = allowed_control(&cbuf[..got.control], &|ip| shown(task, ip));
    let mut out = got.flags & (MSG_CTRUNC | libc::MSG_ERRQUEUE);
    if got.copied < got.full {
        out |= i32::try_from(MSG_TRUNC).unwrap_or(0);
    }
    if dropped {
        out |= MSG_CTRUNC;
    }
    let from = got.from.map(|a| SocketAddr::new(shown(task, a.ip()), 0));
    Ok(Got { count: u64::try_from(reported).unwrap_or(0), flags: out, from, control })
}

/// How the guest sees `ip`, an address from the outer namespace (a
/// reply's sender, an ICMP error's offender): one that is the outer
/// namespace's own (its loopback, its interfaces') as the sandbox's
/// gateway, 10.0.2.2 (in an IPv6 socket's address, IPv4-mapped: the
/// sandbox has no IPv6 gateway), as inbound peers on the host's loopback
/// show; any other, a real remote peer, as it is.
fn shown(task: &Task, ip: IpAddr) -> IpAddr {
    let egress = task.kernel.ext::<Egress>();
    let (Some(gateway), Some(uplink)) = (egress.gateway(), husk_netstack::iface::uplink()) else { return ip };
    if !gateway.outer().is_own(ip) {
        return ip;
    }
    match ip {
        IpAddr::V4(_) => IpAddr::V4(uplink.gateway),
        IpAddr::V6(_) => IpAddr::V6(uplink.gateway.to_ipv6_mapped()),
    }
}

/// Receives `r`, a reply from the sandbox itself, into the guest's
/// `bufs`, with the control messages the socket's options ask for, in
/// Linux's order (the timestamp, then packet info, then TTL or hop
/// limit) and cut to `room` bytes as Linux cuts them.
fn local_reply(
    task: &Task,
    s: &PingSocket,
    bufs: &[(u64, usize)],
    flags: u64,
    room: usize,
    r: &LocalReply,
) -> Result<Got, Errno> {
    let mut at = 0;
    for &(base, len) in bufs {
        if at >= r.data.len() {
            break;
        }
        let k = len.min(r.data.len() - at);
        task.thread.mm().copy_out(base, &r.data[at..at + k])?;
        at += k;
    }
    let mut c = Cmsgs::new(room.min(CONTROL_MAX));
    let since = r.at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX).to_le_bytes();
    if s.option_on(SOL_SOCKET, libc::SO_TIMESTAMPNS) {
        let ns = i64::from(since.subsec_nanos()).to_le_bytes();
        c.put(SOL_SOCKET, libc::SCM_TIMESTAMPNS, &[secs, ns].concat());
    } else if s.option_on(SOL_SOCKET, libc::SO_TIMESTAMP) {
        let us = i64::from(since.subsec_micros()).to_le_bytes();
        c.put(SOL_SOCKET, libc::SCM_TIMESTAMP, &[secs, us].concat());
    }
    let index = ping_local::LOOPBACK_INDEX.to_le_bytes();
    let ttl = ping_local::TTL.to_le_bytes();
    match r.from {
        IpAddr::V4(a) => {
            if s.option_on(libc::SOL_IP, libc::IP_PKTINFO) {
                // On a ping socket Linux leaves ipi_spec_dst unset.
                c.put(libc::SOL_IP, libc::IP_PKTINFO, &[&index[..], &[0; 4], &a.octets()].concat());
            }
            if s.option_on(libc::SOL_IP, libc::IP_RECVTTL) {
                c.put(libc::SOL_IP, libc::IP_TTL, &ttl);
            }
        }
        IpAddr::V6(a) => {
            if s.option_on(libc::SOL_IPV6, libc::IPV6_RECVPKTINFO) {
                c.put(libc::SOL_IPV6, libc::IPV6_PKTINFO, &[&a.octets()[..], &index[..]].concat());
            }
            if s.option_on(libc::SOL_IPV6, libc::IPV6_RECVHOPLIMIT) {
                c.put(libc::SOL_IPV6, libc::IPV6_HOPLIMIT, &ttl);
            }
        }
    }
    let copied = at;
    let mut out = if c.truncated { MSG_CTRUNC } else { 0 };
    if copied < r.data.len() {
        out |= i32::try_from(MSG_TRUNC).unwrap_or(0);
    }
    let count = if flags & MSG_TRUNC != 0 { r.data.len() } else { copied };
    Ok(Got {
        count: u64::try_from(count).unwrap_or(0),
        flags: out,
        from: Some(SocketAddr::new(r.from, 0)),
        control: c.bytes,
    })
}

/// The leading well-formed control messages of `raw` (the host's) that
/// HOST_CONTROL allows, as the guest sees them (`shown_pktinfo`, and
/// `shown_offender` with `shown`), and whether any were left out.
fn allowed_control(raw: &[u8], shown: &dyn Fn(IpAddr) -> IpAddr) -> (Vec<u8>, bool) {
    let mut out = raw.to_vec();
    let mut at = 0;
    while raw.len() - at >= CMSG_HDR {
        let h = &raw[at..at + CMSG_HDR];
        let len = u64::from_le_bytes(h[..8].try_into().unwrap_or_default());
        let level = i32::from_le_bytes(h[8..12].try_into().unwrap_or_default());
        let ty = i32::from_le_bytes(h[12..16].try_into().unwrap_or_default());
        let Ok(len) = usize::try_from(len) else { break };
        if len < CMSG_HDR || len > raw.len() - at || !HOST_CONTROL.contains(&(level, ty)) {
            break;
        }
        let data = &mut out[at + CMSG_HDR..at + len];
        if !shown_pktinfo(level, ty, data, husk_netstack::iface::uplink()) || !shown_offender(level, ty, data, shown) {
            break;
        }
        at = (at + len).next_multiple_of(8).min(raw.len());
    }
    out.truncate(at);
    (out, at < raw.len())
}

/// Rewrites the offender of an ICMP error's control message (IP_RECVERR,
/// IPV6_RECVERR: a sock_extended_err, then the sockaddr of the host that
/// sent the error, AF_UNSPEC for a local error) with `shown`. False when
/// it is malformed; other messages are left as they are.
fn shown_offender(level: i32, ty: i32, data: &mut [u8], shown: &dyn Fn(IpAddr) -> IpAddr) -> bool {
    if (level, ty) != (libc::SOL_IP, libc::IP_RECVERR) && (level, ty) != (libc::SOL_IPV6, libc::IPV6_RECVERR) {
        return true;
    }
    let Some(offender) = data.get_mut(SockExtendedErr::SIZE..) else { return false };
    let Some(family) = offender.get(..2).map(|f| i32::from(u16::from_le_bytes([f[0], f[1]]))) else {
        return false;
    };
    match family {
        AF_INET if offender.len() >= 8 => {
            let ip = Ipv4Addr::new(offender[4], offender[5], offender[6], offender[7]);
            let IpAddr::V4(v4) = shown(IpAddr::V4(ip)).to_canonical() else { return false };
            offender[4..8].copy_from_slice(&v4.octets());
            true
        }
        AF_INET6 if offender.len() >= 24 => {
            let mut raw = [0u8; 16];
            raw.copy_from_slice(&offender[8..24]);
            let v6 = match shown(IpAddr::V6(Ipv6Addr::from(raw))) {
                IpAddr::V6(a) => a,
                IpAddr::V4(a) => a.to_ipv6_mapped(),
            };
            offender[8..24].copy_from_slice(&v6.octets());
            true
        }
        AF_INET | AF_INET6 => false,
        _ => true,
    }
}

/// Rewrites a packet-info control message's `data` (IP_PKTINFO's
/// in_pktinfo, IPV6_PKTINFO's in6_pktinfo), which names the outer
/// namespace's interface and addresses, as the guest's own: eth0 (index
/// 2) and its address (IPv6: none, `::`). False when its size is wrong;
/// other messages are left as they are.
fn shown_pktinfo(level: i32, ty: i32, data: &mut [u8], uplink: Option<&husk_netstack::iface::Uplink>) -> bool {
    let index = uplink.map_or(0i32, |_| 2);
    match (level, ty) {
        (libc::SOL_IP, libc::IP_PKTINFO) => {
            if data.len() != 12 {
                return false;
            }
            let addr = uplink.map_or(Ipv4Addr::UNSPECIFIED, |u| u.addr).octets();
            data[..4].copy_from_slice(&index.to_le_bytes());
            // ipi_spec_dst, which Linux leaves unset on ping sockets, and ipi_addr.
            for field in [4..8, 8..12] {
                if data[field.clone()] != [0; 4] {
                    data[field].copy_from_slice(&addr);
                }
            }
            true
        }
        (libc::SOL_IPV6, libc::IPV6_PKTINFO) => {
            if data.len() != 20 {
                return false;
            }
            data[..16].copy_from_slice(&Ipv6Addr::UNSPECIFIED.octets());
            data[16..20].copy_from_slice(&index.to_le_bytes());
            true
        }
        _ => true,
    }
}

/// How socket `s` shows a sender: port 0, as Linux's ping sockets do.
fn sender(s: &PingSocket, from: Option<SocketAddr>) -> Vec<u8> {
    let ip = from.map_or(if s.v6 { Ipv6Addr::UNSPECIFIED.into() } else { Ipv4Addr::UNSPECIFIED.into() }, |a| a.ip());
    encode_ip(ip, 0)
}

fn recvfrom(task: &Task, f: &FileDescription, s: &PingSocket, buf: UserBuf, flags: u64, out: SockAddrArg) -> SysResult {
    args::user_range(buf.0, buf.1)?;
    let got = recv(task, f, s, &[buf], flags, 0)?;
    if out.addr != 0 && out.len != 0 {
        write_sockaddr(task, out.addr, out.len, &sender(s, got.from))?;
    }
    Ok(got.count)
}

fn recvmsg(task: &Task, f: &FileDescription, s: &PingSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let room = if h.control == 0 { 0 } else { usize::try_from(h.controllen).unwrap_or(usize::MAX) };
    let got = recv(task, f, s, &iovec_list(task, &h)?, flags, room)?;
    if h.name != 0 {
        write_sockaddr(task, h.name, msg + MsgHdr::NAMELEN_OFFSET, &sender(s, got.from))?;
    }
    if !got.control.is_empty() {
        task.thread.mm().copy_out(h.control, &got.control)?;
    }
    write_msg_results(task, msg, u64::try_from(got.control.len()).unwrap_or(0), got.flags)?;
    Ok(got.count)
}

/// bind(2): the port is the echo id; the address may only be "any" or
/// the sandbox's own (eth0's), which the host socket binds as "any".
fn bind(task: &Task, s: &PingSocket, addr: SockAddrArg) -> SysResult {
    let (ip, id) = read_addr(task, s, addr.addr, addr.len)?.ok_or(Errno::EAFNOSUPPORT)?;
    let own = husk_netstack::iface::uplink().is_some_and(|u| IpAddr::V4(u.addr) == ip);
    if !ip.is_unspecified() && !own {
        return Err(Errno::EADDRNOTAVAIL);
    }
    s.bind_id(id)?;
    Ok(0)
}

/// connect(2): echo requests without an address go to the peer, which
/// the policy must allow unless it is the sandbox itself; AF_UNSPEC
/// forgets it.
fn connect(task: &Task, s: &PingSocket, addr: SockAddrArg) -> SysResult {
    let to = read_addr(task, s, addr.addr, addr.len)?;
    if let Some((ip, _)) = to.filter(|&(ip, _)| own_source(ip, husk_netstack::iface::uplink()).is_some()) {
        // The sandbox itself: sends stay here, the host socket forgets its peer.
        if let Ok(host) = s.host() {
            host.disconnect_datagrams()?;
        }
        s.set_local_peer(Some(ip));
        return Ok(0);
    }
    s.set_local_peer(None);
    let Some((ip, _)) = to else {
        return match s.host() {
            Ok(host) => host.disconnect_datagrams().map(|()| 0),
            Err(_) => Ok(0),
        };
    };
    let host = s.host()?;
    permit(task, s, ip)?;
    host.connect_datagrams(SocketAddr::new(ip, 0))?;
    Ok(0)
}

/// getsockname(2): the echo id as the port; the address is "any" unless
/// bound, as Linux shows an unbound ping socket's.
fn getsockname(task: &Task, s: &PingSocket, out: SockAddrArg) -> SysResult {
    let any = if s.v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
    write_sockaddr(task, out.addr, out.len, &encode_ip(any, s.bound_id()?))?;
    Ok(0)
}

/// getpeername(2): ENOTCONN even when connected, as in Linux, whose
/// inet_getname finds no peer port on a ping socket.
fn getpeername() -> SysResult {
    Err(Errno::ENOTCONN)
}

fn getsockopt(task: &Task, s: &PingSocket, opt: OptArg) -> SysResult {
    let tv = |t: Option<std::time::Duration>| Timeval::from_duration(t.unwrap_or_default()).encode();
    let value: Vec<u8> = match (opt.level, opt.name) {
        (SOL_SOCKET, SO_TYPE) => SOCK_DGRAM.to_le_bytes().to_vec(),
        (SOL_SOCKET, SO_DOMAIN) => (if s.v6 { AF_INET6 } else { AF_INET }).to_le_bytes().to_vec(),
        (SOL_SOCKET, SO_PROTOCOL) => {
            (if s.v6 { libc::IPPROTO_ICMPV6 } else { libc::IPPROTO_ICMP }).to_le_bytes().to_vec()
        }
        (SOL_SOCKET, SO_ERROR) => s.host().map_or(Ok(0), |h| h.take_error())?.to_le_bytes().to_vec(),
        (SOL_SOCKET, SO_RCVTIMEO) => tv(s.timeouts.lock().0),
        (SOL_SOCKET, SO_SNDTIMEO) => tv(s.timeouts.lock().1),
        o if HOST_OPTIONS.contains(&o) => return host_option(task, s, opt),
        _ => return Err(Errno::ENOPROTOOPT),
    };
    write_sockopt(task, opt, &value)
}

/// getsockopt(2) of an option carried to the host socket: the host's
/// value (and length, and errno), as setsockopt left it there.
fn host_option(task: &Task, s: &PingSocket, opt: OptArg) -> SysResult {
    let host = s.host().map_err(|_| Errno::ENOPROTOOPT)?;
    let mm = task.thread.mm();
    let mut len = [0u8; 4];
    mm.copy_in(opt.len, &mut len)?;
    let len = usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)?;
    let mut value = vec![0u8; len.min(OPTION_MAX)];
    let n = host.option_bytes(opt.level, opt.name, &mut value)?;
    mm.copy_out(opt.val, &value[..n])?;
    mm.copy_out(opt.len, &u32::try_from(n).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}

/// The most bytes of an option value passed on to the host (the largest
/// carried, ICMP6_FILTER's, is 32; Linux reads no more than its size).
const OPTION_MAX: usize = 64;

/// setsockopt(2): the timeouts, held here; the options of HOST_OPTIONS on
/// the host socket, whose answer is the guest's; others ENOPROTOOPT.
fn setsockopt(task: &Task, s: &PingSocket, arg: OptArg) -> SysResult {
    let opt = (arg.level, arg.name);
    let len = usize::try_from(int(arg.len)).map_err(|_| Errno::EINVAL)?;
    if HOST_OPTIONS.contains(&opt) {
        let mut value = vec![0u8; len.min(OPTION_MAX)];
        task.thread.mm().copy_in(arg.val, &mut value)?;
        s.host().map_err(|_| Errno::ENOPROTOOPT)?.set_option_bytes(opt.0, opt.1, &value)?;
        return Ok(0);
    }
    if opt != (SOL_SOCKET, SO_RCVTIMEO) && opt != (SOL_SOCKET, SO_SNDTIMEO) {
        return Err(Errno::ENOPROTOOPT);
    }
    if len < Timeval::SIZE {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; Timeval::SIZE];
    task.thread.mm().copy_in(arg.val, &mut raw)?;
    let t = super::sockopt::timeout(&raw)?;
    let mut timeouts = s.timeouts.lock();
    if opt.1 == SO_RCVTIMEO {
        timeouts.0 = t;
    } else {
        timeouts.1 = t;
    }
    Ok(0)
}

/// shutdown(2): as a UDP socket's, ENOTCONN unless connected.
fn shutdown(s: &PingSocket, how: i32) -> SysResult {
    let (read, write) = match how {
        libc::SHUT_RD => (true, false),
        libc::SHUT_WR => (false, true),
        libc::SHUT_RDWR => (true, true),
        _ => return Err(Errno::EINVAL),
    };
    let host = s.host().map_err(|_| Errno::ENOTCONN)?;
    if !host.is_connected() {
        return Err(Errno::ENOTCONN);
    }
    host.shutdown(read, write)?;
    Ok(0)
}

/// An ICMP echo socket neither listens nor accepts (EOPNOTSUPP, the
/// interface's defaults).
impl SocketOps for Arc<PingSocket> {
    fn bind(&self, task: &Task, addr: SockAddrArg) -> SysResult {
        bind(task, self, addr)
    }

    fn connect(&self, task: &Task, _f: &FileDescription, addr: SockAddrArg) -> SysResult {
        connect(task, self, addr)
    }

    fn getsockname(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getsockname(task, self, out)
    }

    fn getpeername(&self, _task: &Task, _out: SockAddrArg) -> SysResult {
        getpeername()
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

    fn write(&self, task: &Task, f: &FileDescription, bufs: &[UserBuf]) -> SysResult {
        send(task, f, self, &gather(task, bufs)?, None, 0)
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

#[cfg(test)]
mod tests {
    use super::*;
    use husk_netstack::iface::Uplink;

    fn same(ip: IpAddr) -> IpAddr {
        ip
    }

    #[test]
    fn an_icmp_errors_offender_is_shown_as_the_guest_sees_it() {
        let outer: IpAddr = "198.18.0.1".parse().unwrap();
        let gateway = |ip: IpAddr| if ip == outer { "10.0.2.2".parse().unwrap() } else { ip };
        let unreachable = SockExtendedErr { errno: 113, origin: 2, ty: 3, code: 1, ..Default::default() };
        let mut err = unreachable.encode();
        assert_eq!(err, [113, 0, 0, 0, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SockExtendedErr::decode(&err), unreachable);
        err.extend_from_slice(&2u16.to_le_bytes());
        err.extend_from_slice(&[0, 0, 198, 18, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        let raw = cmsg(libc::SOL_IP, libc::IP_RECVERR, &err);
        let (shown, cut) = allowed_control(&raw, &gateway);
        assert!(!cut);
        assert_eq!(shown[CMSG_HDR + 20..CMSG_HDR + 24], [10, 0, 2, 2]);
        assert_eq!(shown[..CMSG_HDR + 20], raw[..CMSG_HDR + 20], "the rest as it was");
        // A remote peer stays itself.
        let mut remote = err.clone();
        remote[20..24].copy_from_slice(&[198, 18, 0, 9]);
        let raw = cmsg(libc::SOL_IP, libc::IP_RECVERR, &remote);
        assert_eq!(allowed_control(&raw, &gateway), (raw.clone(), false));
        // A local error names no offender (AF_UNSPEC).
        let mut local = err.clone();
        local[16..18].fill(0);
        let raw = cmsg(libc::SOL_IP, libc::IP_RECVERR, &local);
        assert_eq!(allowed_control(&raw, &gateway), (raw.clone(), false));
        // IPv6: the offender's address, mapped when shown as IPv4.
        let mut err6 = vec![113, 0, 0, 0, 3, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        err6.extend_from_slice(&10u16.to_le_bytes());
        err6.extend_from_slice(&[0; 6]);
        err6.extend_from_slice(&"2001:2::1".parse::<Ipv6Addr>().unwrap().octets());
        err6.extend_from_slice(&[0; 4]);
        let own6 = |_: IpAddr| IpAddr::V4(Ipv4Addr::new(10, 0, 2, 2));
        let (shown6, _) = allowed_control(&cmsg(libc::SOL_IPV6, libc::IPV6_RECVERR, &err6), &own6);
        let want = Ipv4Addr::new(10, 0, 2, 2).to_ipv6_mapped().octets();
        assert_eq!(shown6[CMSG_HDR + 24..CMSG_HDR + 40], want);
        // Too short for its offender: malformed, left out.
        let raw = cmsg(libc::SOL_IP, libc::IP_RECVERR, &err[..20]);
        assert_eq!(allowed_control(&raw, &gateway), (Vec::new(), true));
    }

    fn cmsg(level: i32, ty: i32, data: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&u64::try_from(CMSG_HDR + data.len()).unwrap().to_le_bytes());
        m.extend_from_slice(&level.to_le_bytes());
        m.extend_from_slice(&ty.to_le_bytes());
        m.extend_from_slice(data);
        m.resize(m.len().next_multiple_of(8), 0);
        m
    }

    #[test]
    fn allowed_control_messages_pass_whole() {
        let mut raw = cmsg(libc::SOL_IP, libc::IP_TTL, &64i32.to_le_bytes());
        raw.extend(cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMP, &[7; 16]));
        assert_eq!(allowed_control(&raw, &same), (raw.clone(), false));
        assert_eq!(allowed_control(&[], &same), (Vec::new(), false));
    }

    #[test]
    fn packet_info_names_the_sandbox_interface_not_the_outer_one() {
        let mut info = Vec::new();
        info.extend_from_slice(&7i32.to_le_bytes());
        info.extend_from_slice(&[198, 18, 0, 1, 198, 18, 0, 1]);
        let mut data = info.clone();
        assert!(shown_pktinfo(libc::SOL_IP, libc::IP_PKTINFO, &mut data, Some(&Uplink::SANDBOX)));
        assert_eq!(data, [2, 0, 0, 0, 10, 0, 2, 15, 10, 0, 2, 15]);
        let mut unset = info.clone();
        unset[4..8].fill(0);
        assert!(shown_pktinfo(libc::SOL_IP, libc::IP_PKTINFO, &mut unset, Some(&Uplink::SANDBOX)));
        assert_eq!(unset, [2, 0, 0, 0, 0, 0, 0, 0, 10, 0, 2, 15], "an unset ipi_spec_dst stays unset");
        assert!(!shown_pktinfo(libc::SOL_IP, libc::IP_PKTINFO, &mut info[..8], Some(&Uplink::SANDBOX)));
        let mut v6 = [0x20u8; 20];
        v6[16..].copy_from_slice(&7i32.to_le_bytes());
        assert!(shown_pktinfo(libc::SOL_IPV6, libc::IPV6_PKTINFO, &mut v6, Some(&Uplink::SANDBOX)));
        assert_eq!(v6[..16], [0; 16]);
        assert_eq!(v6[16..], 2i32.to_le_bytes());
        let mut ttl = 64i32.to_le_bytes();
        assert!(shown_pktinfo(libc::SOL_IP, libc::IP_TTL, &mut ttl, None));
        assert_eq!(ttl, 64i32.to_le_bytes());
        // A malformed one ends what is passed on.
        let mut raw = cmsg(libc::SOL_IP, libc::IP_PKTINFO, &[1; 8]);
        raw.extend(cmsg(libc::SOL_IP, libc::IP_TTL, &64i32.to_le_bytes()));
        assert_eq!(allowed_control(&raw, &same), (Vec::new(), true));
    }

    #[test]
    fn others_and_malformed_ones_end_what_is_passed() {
        let ttl = cmsg(libc::SOL_IP, libc::IP_TTL, &64i32.to_le_bytes());
        let mut raw = ttl.clone();
        raw.extend(cmsg(libc::SOL_SOCKET, libc::SCM_RIGHTS, &[1; 8]));
        raw.extend(ttl.clone());
        assert_eq!(allowed_control(&raw, &same), (ttl.clone(), true));
        let mut long = ttl.clone();
        long[..8].copy_from_slice(&4096u64.to_le_bytes());
        assert_eq!(allowed_control(&long, &same), (Vec::new(), true));
        let mut short = ttl.clone();
        short[..8].copy_from_slice(&3u64.to_le_bytes());
        assert_eq!(allowed_control(&short, &same), (Vec::new(), true));
        assert_eq!(allowed_control(&ttl[..10], &same), (Vec::new(), true));
    }
}
