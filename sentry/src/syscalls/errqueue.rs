//! The error queue of the sandbox's UDP sockets: IP_RECVERR and
//! IPV6_RECVERR turn it on, and recvmsg(MSG_ERRQUEUE) reads it as Linux's
//! ip_recv_error and ipv6_recv_error do. An entry is a datagram that
//! found no socket at its port inside the sandbox (the port unreachable
//! the loopback interface answers with), given back with a control
//! message: a sock_extended_err (ECONNREFUSED; ICMP type 3 code 3, or
//! ICMPv6 type 1 code 4) and the offender, the destination itself,
//! after the messages the socket asked for (timestamps, IP_PKTINFO …)
//! describing the ICMP error as it arrived; or a datagram too big for
//! any packet, which the socket's own stack refused (EMSGSIZE,
//! SO_EE_ORIGIN_LOCAL with the route's MTU, as ip_local_error and
//! ipv6_local_error queue it).
//! A TCP socket's queue stays empty (no SO_TIMESTAMPING or zero-copy
//! notifications): EAGAIN, as Linux with nothing queued.

use super::sockopt_ip::{self, Arrival};
use crate::abi::layout::Layout;
use crate::abi::sockaddr::{encode_ip, SockaddrIn, SockaddrIn6};
use crate::abi::socket::{
    SockExtendedErr, IPPROTO_IP, IPPROTO_IPV6, IPV6_RECVERR, IP_RECVERR, MSG_ERRQUEUE, MSG_TRUNC, SO_EE_ORIGIN_ICMP,
    SO_EE_ORIGIN_ICMP6, SO_EE_ORIGIN_LOCAL,
};
use crate::abi::Errno;
use crate::fs::inet::{errno, Endpoint, InetSocket};
use crate::kernel::Task;
use husk_netstack::udp::ErrorKind;
use husk_netstack::Family;
use std::net::{IpAddr, SocketAddr};

/// One entry read: the bytes copied, msg_flags (MSG_ERRQUEUE, and
/// MSG_TRUNC when the datagram was cut), where the datagram was sent
/// (msg_name) and its control messages (level, type, data).
pub(super) struct ErrorRead {
    pub count: u64,
    pub flags: i32,
    pub to: SocketAddr,
    pub control: Vec<(i32, i32, Vec<u8>)>,
}

/// Takes the oldest entry of `s`'s error queue into the guest's `bufs`,
/// never waiting (EAGAIN when it is empty), with or without MSG_PEEK.
pub(super) fn recv(task: &Task, s: &InetSocket, bufs: &[(u64, usize)]) -> Result<ErrorRead, Errno> {
    let Endpoint::Udp(u) = &s.endpoint else { return Err(Errno::EAGAIN) };
    let total = bufs.iter().map(|&(_, l)| l).fold(0, usize::saturating_add).min(1 << 16);
    let mut buf = vec![0u8; total];
    let got = u.recv_error(&mut buf).map_err(errno)?;
    let mm = task.thread.mm();
    let mut at = 0;
    for &(base, len) in bufs {
        if at >= got.len {
            break;
        }
        let k = len.min(got.len - at);
        mm.copy_out(base, &buf[at..at + k])?;
        at += k;
    }
    let v4 = match got.to.ip() {
        IpAddr::V4(_) => true,
        IpAddr::V6(a) => a.to_ipv4_mapped().is_some(),
    };
    let v6 = u.family() == Family::V6;
    let errno_of = |e: Errno| u32::try_from(e.0).unwrap_or(0);
    let (data, mut control) = match got.kind {
        ErrorKind::PortUnreachable => {
            let (origin, ty, code) = if v4 { (SO_EE_ORIGIN_ICMP, 3, 3) } else { (SO_EE_ORIGIN_ICMP6, 1, 4) };
            let err = SockExtendedErr { errno: errno_of(Errno::ECONNREFUSED), origin, ty, code, info: 0, data: 0 };
            // The destination answered for itself: it is the offender
            // (shown as the socket's family shows addresses, v4-mapped on
            // an IPv6 socket).
            let mut data = err.encode();
            data.extend(encode_ip(got.to.ip(), 0));
            (data, sockopt_ip::control(s, v6, &got.error, Arrival::Error))
        }
        // The sender's own refusal: no offender (a zeroed address) and,
        // but for a timestamp, none of the messages describing an
        // arrival (ip_datagram_support_cmsg).
        ErrorKind::TooBig { mtu } => {
            let origin = SO_EE_ORIGIN_LOCAL;
            let err = SockExtendedErr { errno: errno_of(Errno::EMSGSIZE), origin, ty: 0, code: 0, info: mtu, data: 0 };
            let mut data = err.encode();
            data.resize(data.len() + if v6 { SockaddrIn6::SIZE } else { SockaddrIn::SIZE }, 0);
            (data, sockopt_ip::timestamp(s, got.error.at).into_iter().collect())
        }
    };
    control.push(if v6 { (IPPROTO_IPV6, IPV6_RECVERR, data) } else { (IPPROTO_IP, IP_RECVERR, data) });
    let mut flags = i32::try_from(MSG_ERRQUEUE).unwrap_or(0);
    if got.len < got.full {
        flags |= i32::try_from(MSG_TRUNC).unwrap_or(0);
    }
    Ok(ErrorRead { count: got.len as u64, flags, to: got.to, control })
}

/// Passes IP_RECVERR or IPV6_RECVERR, just set to `value`, on to a UDP
/// socket's endpoint; other options and sockets are left alone.
pub(super) fn option_set(s: &InetSocket, opt: (i32, i32), value: i32) {
    let family = match opt {
        (IPPROTO_IP, IP_RECVERR) => Family::V4,
        (IPPROTO_IPV6, IPV6_RECVERR) => Family::V6,
        _ => return,
    };
    if let Endpoint::Udp(u) = &s.endpoint {
        u.set_recv_errors(family, value != 0);
    }
}
