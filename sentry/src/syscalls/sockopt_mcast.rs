//! The multicast options of an IP socket whose values are more than an
//! int: group memberships (IP_ADD_MEMBERSHIP/IP_DROP_MEMBERSHIP with a
//! struct ip_mreq or ip_mreqn, IPV6_JOIN_GROUP/IPV6_LEAVE_GROUP with a
//! struct ipv6_mreq, MCAST_JOIN_GROUP/MCAST_LEAVE_GROUP with a struct
//! group_req at either level) and the interfaces datagrams to a group leave on
//! (IP_MULTICAST_IF with a struct in_addr, ip_mreq or ip_mreqn;
//! IPV6_MULTICAST_IF with an index), checked as Linux's do_ip_setsockopt
//! and do_ipv6_setsockopt do; the netstack keeps them (multicast.rs:
//! IPv6 has no multicast route there, so IPV6_MULTICAST_IF is only kept
//! here). The
//! int-valued ones (TTL, loop, all) are sockopt_ip's and are passed on
//! here. Source filters (IP_ADD_SOURCE_MEMBERSHIP, MCAST_JOIN_SOURCE_GROUP
//! …) are not served: ENOPROTOOPT. A TCP socket joins no group
//! (ENOPROTOOPT for MCAST_JOIN_GROUP, which Linux lets it join).

use super::sockopt_ip::value;
use crate::abi::socket::{
    AF_INET, AF_INET6, IPPROTO_IP, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, IPV6_DROP_MEMBERSHIP, IPV6_MULTICAST_IF,
    IP_ADD_MEMBERSHIP, IP_DROP_MEMBERSHIP, IP_MULTICAST_ALL, IP_MULTICAST_IF, IP_MULTICAST_LOOP, IP_MULTICAST_TTL,
    MCAST_JOIN_GROUP, MCAST_LEAVE_GROUP,
};
use crate::abi::Errno;
use crate::fs::inet::{errno, Endpoint, InetSocket};
use husk_netstack::multicast;
use std::net::{Ipv4Addr, Ipv6Addr};

/// sizeof(struct ip_mreq), sizeof(struct ip_mreqn), sizeof(struct
/// ipv6_mreq).
const MREQ: usize = 8;
const MREQN: usize = 12;
const IPV6_MREQ: usize = 20;
/// sizeof(struct group_req): the index, padding, a sockaddr_storage.
const GROUP_REQ: usize = 136;
/// Where a group_req's sockaddr begins.
const GROUP_AT: usize = 8;

fn v4_at(raw: &[u8], at: usize) -> Ipv4Addr {
    raw.get(at..at + 4).map_or(Ipv4Addr::UNSPECIFIED, |b| Ipv4Addr::new(b[0], b[1], b[2], b[3]))
}

fn u32_at(raw: &[u8], at: usize) -> u32 {
    raw.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A struct ip_mreqn read as Linux reads `raw`: an ip_mreq (8 bytes or
/// more) without an index. (group, address, index).
fn mreqn(raw: &[u8]) -> (Ipv4Addr, Ipv4Addr, u32) {
    let index = if raw.len() >= MREQN { u32_at(raw, 8) } else { 0 };
    (v4_at(raw, 0), v4_at(raw, 4), index)
}

/// Whether `opt` is one of this file's: the caller has `raw` set on it
/// with `set` instead of storing an int.
pub(super) fn handles(v6: bool, opt: (i32, i32)) -> bool {
    matches!(
        opt,
        (IPPROTO_IP, IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP | IP_MULTICAST_IF | MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP)
    ) || (v6
        && matches!(
            opt,
            (
                IPPROTO_IPV6,
                IPV6_ADD_MEMBERSHIP | IPV6_DROP_MEMBERSHIP | IPV6_MULTICAST_IF | MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP
            )
        ))
}

/// setsockopt(2) of one of the options `handles` says are this file's.
pub(super) fn set(s: &InetSocket, opt: (i32, i32), raw: &[u8]) -> Result<(), Errno> {
    let udp = match &s.endpoint {
        Endpoint::Udp(u) => Some(u),
        Endpoint::Tcp(_) => None,
    };
    match opt {
        (IPPROTO_IP, IP_ADD_MEMBERSHIP | IP_DROP_MEMBERSHIP) => {
            let u = udp.ok_or(Errno::EPROTO)?;
            if raw.len() < MREQ {
                return Err(Errno::EINVAL);
            }
            let (group, addr, index) = mreqn(raw);
            u.membership_v4(opt.1 == IP_ADD_MEMBERSHIP, group, addr, index).map_err(errno)
        }
        (IPPROTO_IP, IP_MULTICAST_IF) => {
            let u = udp.ok_or(Errno::EINVAL)?;
            // An in_addr alone names the address; a longer value is an
            // ip_mreq or ip_mreqn, whose second field does.
            let (addr, index) = match raw.len() {
                0..=3 => return Err(Errno::EINVAL),
                4..MREQ => (v4_at(raw, 0), 0),
                _ => {
                    let (_, addr, index) = mreqn(raw);
                    (addr, index)
                }
            };
            let index = multicast::interface_v4(addr, index).map_err(errno)?;
            let mut o = u.multicast_options();
            (o.v4_index, o.v4_addr) = (index, addr);
            u.set_multicast_options(o);
            s.stored.lock().insert(opt, addr.octets().to_vec());
            Ok(())
        }
        (IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP | IPV6_DROP_MEMBERSHIP) => {
            if raw.len() < IPV6_MREQ {
                return Err(Errno::EINVAL);
            }
            let u = udp.ok_or(Errno::EPROTO)?;
            let mut group = [0u8; 16];
            group.copy_from_slice(&raw[..16]);
            let index = u32_at(raw, 16);
            u.membership_v6(opt.1 == IPV6_ADD_MEMBERSHIP, Ipv6Addr::from(group), index).map_err(errno)
        }
        (IPPROTO_IP | IPPROTO_IPV6, MCAST_JOIN_GROUP | MCAST_LEAVE_GROUP) => {
            let u = udp.ok_or(Errno::ENOPROTOOPT)?;
            if raw.len() < GROUP_REQ {
                return Err(Errno::EINVAL);
            }
            let join = opt.1 == MCAST_JOIN_GROUP;
            let index = u32_at(raw, 0);
            let family = i32::from(u16::from_le_bytes([raw[GROUP_AT], raw[GROUP_AT + 1]]));
            match (opt.0, family) {
                (IPPROTO_IP, AF_INET) => {
                    u.membership_v4(join, v4_at(raw, GROUP_AT + 4), Ipv4Addr::UNSPECIFIED, index).map_err(errno)
                }
                (IPPROTO_IP, _) => Err(Errno::EINVAL),
                (_, AF_INET6) => {
                    let mut group = [0u8; 16];
                    group.copy_from_slice(&raw[GROUP_AT + 8..GROUP_AT + 24]);
                    u.membership_v6(join, Ipv6Addr::from(group), index).map_err(errno)
                }
                _ => Err(Errno::EADDRNOTAVAIL),
            }
        }
        (IPPROTO_IPV6, IPV6_MULTICAST_IF) => {
            if udp.is_none() {
                return Err(Errno::ENOPROTOOPT);
            }
            if raw.len() < 4 {
                return Err(Errno::EINVAL);
            }
            let index = multicast::interface_v6(u32_at(raw, 0)).map_err(errno)?;
            s.stored.lock().insert(opt, index.to_le_bytes().to_vec());
            Ok(())
        }
        _ => Err(Errno::ENOPROTOOPT),
    }
}

/// Passes a UDP socket's int-valued IPv4 multicast options (as sockopt_ip
/// keeps them) on to its endpoint; the IPv6 ones have no effect there
/// (IPv6 datagrams to a group never come back).
pub(super) fn update(s: &InetSocket, v6: bool) {
    let Endpoint::Udp(u) = &s.endpoint else { return };
    let on = |opt| value(s, v6, opt) != 0;
    let mut o = u.multicast_options();
    o.v4_loop = on((IPPROTO_IP, IP_MULTICAST_LOOP));
    o.v4_all = on((IPPROTO_IP, IP_MULTICAST_ALL));
    o.ttl = u8::try_from(value(s, v6, (IPPROTO_IP, IP_MULTICAST_TTL))).unwrap_or(1);
    u.set_multicast_options(o);
}
