//! The IPPROTO_IP and IPPROTO_IPV6 options of an IP socket, checked and
//! read back as Linux's do_ip_setsockopt and do_ipv6_setsockopt do, and
//! the control messages they make recvmsg deliver with a UDP datagram
//! (IP_PKTINFO, IP_TTL, IP_TOS; IPV6_PKTINFO, IPV6_HOPLIMIT, IPV6_TCLASS),
//! after the socket-level receive timestamps.

use crate::abi::layout::{Encoder, Layout};
use crate::abi::sockaddr::encode_inet;
use crate::abi::socket::{
    cmsg_align, CmsgHdr, MsgHdr, IPPROTO_IP, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_RECVERR, IP_MTU_DISCOVER,
    IP_PMTUDISC_OMIT, IP_PMTUDISC_WANT, IP_RECVERR, IP_TOS, IP_TTL, MSG_CTRUNC, SOL_SOCKET,
};
use crate::abi::socket::{
    IPV6_HOPLIMIT, IPV6_MULTICAST_ALL, IPV6_MULTICAST_HOPS, IPV6_MULTICAST_IF, IPV6_MULTICAST_LOOP, IPV6_PKTINFO,
    IPV6_RECVHOPLIMIT, IPV6_RECVORIGDSTADDR, IPV6_RECVPKTINFO, IPV6_RECVTCLASS, IPV6_TCLASS, IPV6_UNICAST_HOPS,
    IP_MULTICAST_ALL, IP_MULTICAST_IF, IP_MULTICAST_LOOP, IP_MULTICAST_TTL, IP_PKTINFO, IP_RECVORIGDSTADDR, IP_RECVTOS,
    IP_RECVTTL, SCM_TIMESTAMPNS_NEW, SCM_TIMESTAMPNS_OLD, SCM_TIMESTAMP_NEW, SCM_TIMESTAMP_OLD,
};
use crate::abi::time::{Timespec, Timeval};
use crate::abi::Errno;
use crate::fs::inet::{Endpoint, InetSocket};
use crate::fs::sockopt::Stamping;
use crate::kernel::Task;
use husk_netstack::udp::{Header, Meta};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The default hop limit (net.ipv4.ip_default_ttl, hop_limit).
const DEFAULT_TTL: i32 = 64;
/// INET_ECN_MASK: the ECN bits a TCP socket's IP_TOS keeps for itself.
const ECN_MASK: i32 = 3;

/// Whether `opt` is a flag (read back as 0 or 1).
fn is_flag(opt: (i32, i32)) -> bool {
    matches!(
        opt,
        (
            IPPROTO_IP,
            IP_PKTINFO
                | IP_RECVTTL
                | IP_RECVTOS
                | IP_RECVERR
                | IP_MULTICAST_LOOP
                | IP_MULTICAST_ALL
                | IP_RECVORIGDSTADDR
        ) | (
            IPPROTO_IPV6,
            IPV6_RECVPKTINFO
                | IPV6_RECVHOPLIMIT
                | IPV6_RECVTCLASS
                | IPV6_RECVERR
                | IPV6_MULTICAST_LOOP
                | IPV6_MULTICAST_ALL
                | IPV6_RECVORIGDSTADDR
        )
    )
}

/// The value an option reads before it is set; None for one the socket
/// does not have.
pub(super) fn default(v6: bool, opt: (i32, i32)) -> Option<i32> {
    match opt {
        (IPPROTO_IP, IP_MULTICAST_LOOP | IP_MULTICAST_ALL) => Some(1),
        (IPPROTO_IPV6, IPV6_MULTICAST_LOOP | IPV6_MULTICAST_ALL) if v6 => Some(1),
        o if is_flag(o) && (o.0 == IPPROTO_IP || v6) => Some(0),
        (IPPROTO_IP, IP_TOS | IP_MULTICAST_IF) => Some(0),
        (IPPROTO_IP, IP_TTL) => Some(DEFAULT_TTL),
        (IPPROTO_IP, IP_MULTICAST_TTL) => Some(1),
        (IPPROTO_IP, IP_MTU_DISCOVER) => Some(IP_PMTUDISC_WANT),
        (IPPROTO_IPV6, IPV6_MTU_DISCOVER) if v6 => Some(IP_PMTUDISC_WANT),
        (IPPROTO_IPV6, IPV6_TCLASS | IPV6_MULTICAST_IF) if v6 => Some(0),
        (IPPROTO_IPV6, IPV6_UNICAST_HOPS) if v6 => Some(DEFAULT_TTL),
        (IPPROTO_IPV6, IPV6_MULTICAST_HOPS) if v6 => Some(1),
        _ => None,
    }
}

/// The value Linux keeps for `val` set on option `opt` (EINVAL out of
/// range, ENOPROTOOPT for an option the socket does not have).
pub(super) fn check(v6: bool, stream: bool, opt: (i32, i32), val: i32) -> Result<i32, Errno> {
    default(v6, opt).ok_or(Errno::ENOPROTOOPT)?;
    Ok(match opt {
        (IPPROTO_IP, IP_MULTICAST_ALL) | (IPPROTO_IPV6, IPV6_MULTICAST_LOOP) if !(0..=1).contains(&val) => {
            return Err(Errno::EINVAL)
        }
        (IPPROTO_IP, IP_MULTICAST_TTL) if stream => return Err(Errno::EINVAL),
        o if is_flag(o) => i32::from(val != 0),
        (IPPROTO_IP, IP_MTU_DISCOVER) | (IPPROTO_IPV6, IPV6_MTU_DISCOVER) if !(0..=IP_PMTUDISC_OMIT).contains(&val) => {
            return Err(Errno::EINVAL)
        }
        (IPPROTO_IP, IP_TOS) if stream => val & !ECN_MASK & 0xff,
        (IPPROTO_IP, IP_TOS) => val & 0xff,
        (IPPROTO_IP, IP_TTL) if val == -1 => DEFAULT_TTL,
        (IPPROTO_IP, IP_TTL) if !(1..=255).contains(&val) => return Err(Errno::EINVAL),
        (IPPROTO_IP, IP_MULTICAST_TTL) if val == -1 => 1,
        (IPPROTO_IP, IP_MULTICAST_TTL) if !(0..=255).contains(&val) => return Err(Errno::EINVAL),
        (IPPROTO_IPV6, IPV6_TCLASS) if !(-1..=255).contains(&val) => return Err(Errno::EINVAL),
        (IPPROTO_IPV6, IPV6_TCLASS) => val.max(0),
        (IPPROTO_IPV6, IPV6_UNICAST_HOPS) if !(-1..=255).contains(&val) => return Err(Errno::EINVAL),
        (IPPROTO_IPV6, IPV6_UNICAST_HOPS) if val == -1 => DEFAULT_TTL,
        (IPPROTO_IPV6, IPV6_MULTICAST_HOPS) if !(-1..=255).contains(&val) => return Err(Errno::EINVAL),
        (IPPROTO_IPV6, IPV6_MULTICAST_HOPS) if val == -1 => 1,
        _ => val,
    })
}

/// The option's current value.
pub(super) fn value(s: &InetSocket, v6: bool, opt: (i32, i32)) -> i32 {
    s.stored
        .lock()
        .get(&opt)
        .and_then(|v| v.get(..4))
        .map(|v| i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
        .or_else(|| default(v6, opt))
        .unwrap_or(0)
}

/// Passes a UDP socket's IP_TOS/IP_TTL (IPV6_TCLASS/IPV6_UNICAST_HOPS on
/// an IPv6 socket) on to the datagrams it sends.
pub(super) fn update_header(s: &InetSocket, v6: bool) {
    if let Endpoint::Udp(u) = &s.endpoint {
        let (tos, ttl) = if v6 { (IPV6_TCLASS, IPV6_UNICAST_HOPS) } else { (IP_TOS, IP_TTL) };
        let level = if v6 { IPPROTO_IPV6 } else { IPPROTO_IP };
        let byte = |v: i32| u8::try_from(v & 0xff).unwrap_or(0);
        u.set_header(Header { tos: byte(value(s, v6, (level, tos))), ttl: byte(value(s, v6, (level, ttl))) });
    }
}

/// What recvmsg is reading: a datagram, or an entry of the error queue
/// (whose messages describe the ICMP error that brought it back, as
/// Linux's ip_recv_error and ipv6_recv_error give them).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    Datagram,
    Error,
}

/// The receive timestamp SO_TIMESTAMP or SO_TIMESTAMPNS (old or new)
/// asked for, of data that arrived `at`.
pub(super) fn timestamp(s: &InetSocket, at: std::time::SystemTime) -> Option<(i32, i32, Vec<u8>)> {
    let Stamping { ns, new } = s.opts.get().stamping?;
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let ty = match (ns, new) {
        (false, false) => SCM_TIMESTAMP_OLD,
        (true, false) => SCM_TIMESTAMPNS_OLD,
        (false, true) => SCM_TIMESTAMP_NEW,
        (true, true) => SCM_TIMESTAMPNS_NEW,
    };
    let data = if ns { Timespec::from_duration(since).encode() } else { Timeval::from_duration(since).encode() };
    Some((SOL_SOCKET, ty, data))
}

/// The control messages a packet that arrived as `meta` says comes with,
/// in Linux's order: (level, type, data). An IPv6 socket's datagram or
/// error that came as IPv4 carries IPV6_PKTINFO and then the IPv4
/// messages (udpv6_recvmsg's is_udp4, ipv6_recv_error).
pub(super) fn control(s: &InetSocket, v6: bool, meta: &Meta, arrival: Arrival) -> Vec<(i32, i32, Vec<u8>)> {
    let mut out: Vec<_> = timestamp(s, meta.at).into_iter().collect();
    let on = |opt: (i32, i32)| value(s, v6, opt) != 0;
    let Header { tos, ttl } = meta.header;
    let v4_dst = match meta.to.ip() {
        IpAddr::V4(a) => Some(a),
        IpAddr::V6(a) => a.to_ipv4_mapped(),
    };
    let error = arrival == Arrival::Error;
    if v6 && on((IPPROTO_IPV6, IPV6_RECVPKTINFO)) {
        let dst = match meta.to.ip() {
            IpAddr::V6(a) => a.octets(),
            IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        };
        let mut e = Encoder::new();
        e.bytes(&dst).i32(1);
        out.push((IPPROTO_IPV6, IPV6_PKTINFO, e.as_bytes().to_vec()));
    }
    if !v6 || v4_dst.is_some() {
        if on((IPPROTO_IP, IP_PKTINFO)) {
            // struct in_pktinfo: the interface, the local address (none
            // for an error), the header's destination. A datagram to a
            // group or a broadcast address was for lo's own address
            // (fib_compute_spec_dst).
            let dst = v4_dst.unwrap_or(Ipv4Addr::UNSPECIFIED);
            let spec_dst = match dst {
                _ if error => Ipv4Addr::UNSPECIFIED,
                d if d.is_multicast() || d.is_broadcast() => Ipv4Addr::LOCALHOST,
                d => d,
            };
            let mut e = Encoder::new();
            e.i32(1).bytes(&spec_dst.octets()).bytes(&dst.octets());
            out.push((IPPROTO_IP, IP_PKTINFO, e.as_bytes().to_vec()));
        }
        if on((IPPROTO_IP, IP_RECVTTL)) {
            out.push((IPPROTO_IP, IP_TTL, i32::from(ttl).to_le_bytes().to_vec()));
        }
        if on((IPPROTO_IP, IP_RECVTOS)) {
            out.push((IPPROTO_IP, IP_TOS, vec![tos]));
        }
        if let (Some(dst), false, true) = (v4_dst, error, on((IPPROTO_IP, IP_RECVORIGDSTADDR))) {
            // A struct sockaddr_in of the header's destination and the
            // datagram's destination port.
            let sa = SocketAddr::new(IpAddr::V4(dst), meta.to.port());
            out.push((IPPROTO_IP, IP_RECVORIGDSTADDR, encode_inet(sa)));
        }
        return out;
    }
    if on((IPPROTO_IPV6, IPV6_RECVHOPLIMIT)) {
        out.push((IPPROTO_IPV6, IPV6_HOPLIMIT, i32::from(ttl).to_le_bytes().to_vec()));
    }
    if on((IPPROTO_IPV6, IPV6_RECVTCLASS)) {
        out.push((IPPROTO_IPV6, IPV6_TCLASS, i32::from(tos).to_le_bytes().to_vec()));
    }
    if !error && on((IPPROTO_IPV6, IPV6_RECVORIGDSTADDR)) {
        // A struct sockaddr_in6: no flow label, and no scope on lo.
        out.push((IPPROTO_IPV6, IPV6_RECVORIGDSTADDR, encode_inet(meta.to)));
    }
    out
}

/// Writes control messages `msgs` into the recvmsg buffer of `h` as
/// Linux's put_cmsg does: each padded to CMSG_SPACE, the one that does not
/// fit cut (its cmsg_len saying so) with MSG_CTRUNC. Returns the control
/// bytes used and the flags.
pub(super) fn write_control(task: &Task, h: &MsgHdr, msgs: &[(i32, i32, Vec<u8>)]) -> Result<(u64, i32), Errno> {
    let mm = task.thread.mm();
    let mut room = usize::try_from(h.controllen).unwrap_or(usize::MAX);
    let (mut at, mut flags) = (0usize, 0);
    for (level, ty, data) in msgs {
        if room < CmsgHdr::SIZE {
            flags |= MSG_CTRUNC;
            break;
        }
        let full = CmsgHdr::SIZE + data.len();
        let len = full.min(room);
        if len < full {
            flags |= MSG_CTRUNC;
        }
        let mut e = Encoder::new();
        CmsgHdr { len: len as u64, level: *level, ty: *ty }.encode_to(&mut e);
        e.bytes(&data[..len - CmsgHdr::SIZE]);
        mm.copy_out(h.control + at as u64, e.as_bytes())?;
        let space = cmsg_align(full).min(room);
        at += space;
        room -= space;
    }
    Ok((at as u64, flags))
}
