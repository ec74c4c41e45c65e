//! IP multicast on the sandbox's interfaces, as Linux does it with the
//! same interfaces: `lo` (index 1) and, with an uplink, `eth0` (index 2,
//! IPv4 only, the default route).
//!
//! A socket joins a group on an interface (IP_ADD_MEMBERSHIP,
//! IPV6_JOIN_GROUP); the interface then takes the group's datagrams. An
//! IPv4 datagram to a group leaves on the interface IP_MULTICAST_IF names,
//! or the one of the socket's source address, or the default route's
//! (eth0; without an uplink there is no route). Sent on `lo` it comes back
//! in whatever IP_MULTICAST_LOOP says; on eth0 the sandbox's members get
//! the looped-back copy only with IP_MULTICAST_LOOP on, and the copy for
//! the wire never leaves the sandbox (the caller may record it). Either
//! way the interface must have joined the group, and then each socket
//! bound to the port (the wildcard or the group's address) takes a copy
//! if it joined the group there or has IP_MULTICAST_ALL on (Linux's
//! ip_mc_sf_allow). Source filters (IP_ADD_SOURCE_MEMBERSHIP and kin) are
//! not kept.
//!
//! IPv6 multicast has no route here, as on Linux: `lo` has no multicast
//! route and eth0 no IPv6, so a send or connect fails (ENETUNREACH);
//! memberships are kept all the same.

use crate::iface::uplink;
use crate::Error;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The loopback interface's index.
pub const LO: u32 = 1;
/// The uplink's index (eth0), when there is one.
pub const ETH0: u32 = 2;
/// net.ipv4.igmp_max_memberships: IPv4 groups a socket may join.
pub const MAX_V4_MEMBERSHIPS: usize = 20;
/// The IPv6 groups a socket may join: as many as Linux 6.x fits in
/// net.core.optmem_max (131072 bytes); past them it says ENOMEM.
pub const MAX_V6_MEMBERSHIPS: usize = 2340;
/// 224.0.0.1, which every interface joins.
const ALL_HOSTS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);

/// Does interface `index` exist?
fn exists(index: u32) -> bool {
    index == LO || (index == ETH0 && uplink().is_some())
}

/// The interface that owns the IPv4 address `a` (Linux's ip_dev_find).
fn owner(a: Ipv4Addr) -> Option<u32> {
    if a.is_loopback() {
        Some(LO)
    } else if uplink().is_some_and(|u| u.addr == a) {
        Some(ETH0)
    } else {
        None
    }
}

/// The interface the route to an IPv4 group leaves on: the default
/// route's.
fn default_route() -> Option<u32> {
    uplink().map(|_| ETH0)
}

/// The source address Linux picks for a group on either interface:
/// eth0's address (`lo`'s are host-scoped, so Linux takes one of another
/// interface), or none without an uplink.
fn group_source() -> Ipv4Addr {
    uplink().map_or(Ipv4Addr::UNSPECIFIED, |u| u.addr)
}

/// An IPv6 address's multicast scope needs an interface (interface- or
/// link-local): binding one needs a scope id, which the stack does not
/// take.
pub(crate) fn needs_scope(a: Ipv6Addr) -> bool {
    a.is_multicast() && matches!(a.octets()[1] & 0xf, 1 | 2)
}

/// A socket's multicast options and memberships.
#[derive(Clone, Debug)]
pub struct Options {
    /// IP_MULTICAST_IF: the interface (0: by route) and the source
    /// address it names (0: the interface's).
    pub v4_index: u32,
    pub v4_addr: Ipv4Addr,
    /// IP_MULTICAST_LOOP, IP_MULTICAST_ALL, IP_MULTICAST_TTL.
    pub v4_loop: bool,
    pub v4_all: bool,
    pub ttl: u8,
}

impl Default for Options {
    fn default() -> Options {
        Options { v4_index: 0, v4_addr: Ipv4Addr::UNSPECIFIED, v4_loop: true, v4_all: true, ttl: 1 }
    }
}

/// One IPv4 membership: the group, the interface, and the address it was
/// joined by (IP_DROP_MEMBERSHIP by address matches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct V4Membership {
    group: Ipv4Addr,
    index: u32,
    addr: Ipv4Addr,
}

/// A socket's memberships, in the order joined.
#[derive(Default, Debug)]
pub(crate) struct Memberships {
    v4: Vec<V4Membership>,
    v6: Vec<(Ipv6Addr, u32)>,
}

/// The groups each interface has joined: how many memberships hold each.
#[derive(Default)]
pub(crate) struct Groups(Mutex<HashMap<(IpAddr, u32), usize>>);

impl Groups {
    fn hold(&self, group: IpAddr, index: u32) {
        *self.0.lock().entry((group, index)).or_default() += 1;
    }

    fn release(&self, group: IpAddr, index: u32) {
        let mut g = self.0.lock();
        if let Some(n) = g.get_mut(&(group, index)) {
            *n -= 1;
            if *n == 0 {
                g.remove(&(group, index));
            }
        }
    }

    /// Has interface `index` joined `group`?
    pub fn joined(&self, group: IpAddr, index: u32) -> bool {
        group == IpAddr::V4(ALL_HOSTS) || self.0.lock().contains_key(&(group, index))
    }
}

/// The interface an IPv4 membership request names: by index, by one of
/// its addresses, or (neither given) the route to the group's.
fn find_v4(addr: Ipv4Addr, index: u32) -> Option<u32> {
    if index != 0 {
        return exists(index).then_some(index);
    }
    if !addr.is_unspecified() {
        return owner(addr);
    }
    default_route()
}

impl Memberships {
    /// IP_ADD_MEMBERSHIP: EINVAL for an address that is no group, ENODEV
    /// without the interface, EADDRINUSE joined there already, ENOBUFS
    /// past the limit.
    pub fn join_v4(&mut self, groups: &Groups, group: Ipv4Addr, addr: Ipv4Addr, index: u32) -> Result<(), Error> {
        if !group.is_multicast() {
            return Err(Error::Invalid);
        }
        let index = find_v4(addr, index).ok_or(Error::NoDevice)?;
        if self.v4.iter().any(|m| m.group == group && m.index == index) {
            return Err(Error::AddrInUse);
        }
        if self.v4.len() >= MAX_V4_MEMBERSHIPS {
            return Err(Error::NoBufs);
        }
        self.v4.push(V4Membership { group, index, addr });
        groups.hold(IpAddr::V4(group), index);
        Ok(())
    }

    /// IP_DROP_MEMBERSHIP: the membership on the interface named, or,
    /// named by an address no interface has, the one joined by that
    /// address; EADDRNOTAVAIL if there is none, ENODEV when nothing names
    /// an interface and there is no route.
    pub fn leave_v4(&mut self, groups: &Groups, group: Ipv4Addr, addr: Ipv4Addr, index: u32) -> Result<(), Error> {
        let found = find_v4(addr, index);
        if index == 0 && addr.is_unspecified() && found.is_none() {
            return Err(Error::NoDevice);
        }
        let index = if index != 0 { index } else { found.unwrap_or(0) };
        let at = self
            .v4
            .iter()
            .position(|m| {
                m.group == group && if index != 0 { m.index == index } else { addr.is_unspecified() || m.addr == addr }
            })
            .ok_or(Error::AddrNotAvailable)?;
        let m = self.v4.remove(at);
        groups.release(IpAddr::V4(m.group), m.index);
        Ok(())
    }

    /// IPV6_JOIN_GROUP: EINVAL for no group, EADDRINUSE when joined on
    /// that interface (or any, for index 0), ENODEV without the
    /// interface or (index 0) a route, ENOMEM past the limit.
    pub fn join_v6(&mut self, groups: &Groups, group: Ipv6Addr, index: u32) -> Result<(), Error> {
        if !group.is_multicast() {
            return Err(Error::Invalid);
        }
        if self.v6.iter().any(|&(g, i)| g == group && (index == 0 || i == index)) {
            return Err(Error::AddrInUse);
        }
        // No interface has a route for IPv6 multicast.
        if !exists(index) {
            return Err(Error::NoDevice);
        }
        if self.v6.len() >= MAX_V6_MEMBERSHIPS {
            return Err(Error::NoMemory);
        }
        self.v6.push((group, index));
        groups.hold(IpAddr::V6(group), index);
        Ok(())
    }

    /// IPV6_LEAVE_GROUP: EINVAL for no group, EADDRNOTAVAIL when not
    /// joined (on that interface, or any for index 0).
    pub fn leave_v6(&mut self, groups: &Groups, group: Ipv6Addr, index: u32) -> Result<(), Error> {
        if !group.is_multicast() {
            return Err(Error::Invalid);
        }
        let at = self
            .v6
            .iter()
            .position(|&(g, i)| g == group && (index == 0 || i == index))
            .ok_or(Error::AddrNotAvailable)?;
        let (g, i) = self.v6.remove(at);
        groups.release(IpAddr::V6(g), i);
        Ok(())
    }

    /// Whether a datagram to IPv4 `group` arriving on `index` is this
    /// socket's: joined there, or IP_MULTICAST_ALL.
    pub fn takes_v4(&self, group: Ipv4Addr, index: u32, all: bool) -> bool {
        all || self.v4.iter().any(|m| m.group == group && m.index == index)
    }

    /// Leaves every group (the socket closes).
    pub fn leave_all(&mut self, groups: &Groups) {
        for m in self.v4.drain(..) {
            groups.release(IpAddr::V4(m.group), m.index);
        }
        for (g, i) in self.v6.drain(..) {
            groups.release(IpAddr::V6(g), i);
        }
    }
}

/// IP_MULTICAST_IF's interface for a request by address or index
/// (EADDRNOTAVAIL when there is none); (0, 0) resets it.
pub fn interface_v4(addr: Ipv4Addr, index: u32) -> Result<u32, Error> {
    match index {
        0 if addr.is_unspecified() => Ok(0),
        0 => owner(addr).ok_or(Error::AddrNotAvailable),
        i if exists(i) => Ok(i),
        _ => Err(Error::AddrNotAvailable),
    }
}

/// IPV6_MULTICAST_IF: ENODEV for an interface there is not.
pub fn interface_v6(index: u32) -> Result<u32, Error> {
    if index == 0 || exists(index) {
        Ok(index)
    } else {
        Err(Error::NoDevice)
    }
}

/// Where an IPv4 datagram to a group goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub index: u32,
    pub source: Ipv4Addr,
}

/// The route of an IPv4 datagram to a group from a socket whose source
/// address is `bound` (unspecified when none) with options `o`
/// (Linux's ip_route_output_key_hash for a multicast destination).
pub(crate) fn route(bound: Ipv4Addr, o: &Options) -> Result<Route, Error> {
    let source = if bound.is_unspecified() { o.v4_addr } else { bound };
    let index = match o.v4_index {
        0 if !source.is_unspecified() => owner(source).ok_or(Error::NetUnreachable)?,
        0 => default_route().ok_or(Error::NetUnreachable)?,
        i if exists(i) => i,
        _ => return Err(Error::NoDevice),
    };
    let source = if source.is_unspecified() { group_source() } else { source };
    Ok(Route { index, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Ipv4Addr = Ipv4Addr::new(239, 1, 2, 3);
    const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;
    const ANY: Ipv4Addr = Ipv4Addr::UNSPECIFIED;

    /// (Without an uplink: the tests of this crate never install one.)
    #[test]
    fn joins_and_leaves_as_linux_on_loopback_alone() {
        let groups = Groups::default();
        let mut m = Memberships::default();
        assert_eq!(m.join_v4(&groups, G, ANY, 0), Err(Error::NoDevice), "no route to the group");
        assert_eq!(m.join_v4(&groups, Ipv4Addr::new(10, 1, 1, 1), LOCAL, 0), Err(Error::Invalid));
        assert_eq!(m.join_v4(&groups, G, Ipv4Addr::new(10, 9, 9, 9), 0), Err(Error::NoDevice));
        assert_eq!(m.join_v4(&groups, G, ANY, 7), Err(Error::NoDevice));
        assert_eq!(m.join_v4(&groups, G, LOCAL, 0), Ok(()));
        assert!(groups.joined(IpAddr::V4(G), LO));
        assert_eq!(m.join_v4(&groups, G, ANY, LO), Err(Error::AddrInUse), "the same interface by index");
        assert_eq!(m.leave_v4(&groups, G, ANY, 0), Err(Error::NoDevice));
        assert_eq!(m.leave_v4(&groups, Ipv4Addr::new(239, 9, 9, 9), LOCAL, 0), Err(Error::AddrNotAvailable));
        assert_eq!(m.leave_v4(&groups, G, Ipv4Addr::new(127, 0, 0, 2), 0), Ok(()), "lo's by another address");
        assert!(!groups.joined(IpAddr::V4(G), LO));
        for i in 0..MAX_V4_MEMBERSHIPS {
            let g = Ipv4Addr::new(239, 0, 0, u8::try_from(i).unwrap());
            assert_eq!(m.join_v4(&groups, g, LOCAL, 0), Ok(()));
        }
        assert_eq!(m.join_v4(&groups, G, LOCAL, 0), Err(Error::NoBufs));
        m.leave_all(&groups);
        assert!(groups.0.lock().is_empty());
    }

    #[test]
    fn ipv6_groups_are_joined_by_index() {
        let groups = Groups::default();
        let mut m = Memberships::default();
        let g: Ipv6Addr = "ff12::1234".parse().unwrap();
        assert_eq!(m.join_v6(&groups, g, 0), Err(Error::NoDevice));
        assert_eq!(m.join_v6(&groups, g, 9), Err(Error::NoDevice));
        assert_eq!(m.join_v6(&groups, Ipv6Addr::LOCALHOST, LO), Err(Error::Invalid));
        assert_eq!(m.join_v6(&groups, g, LO), Ok(()));
        assert_eq!(m.join_v6(&groups, g, 0), Err(Error::AddrInUse));
        assert_eq!(m.leave_v6(&groups, g, ETH0), Err(Error::AddrNotAvailable));
        assert_eq!(m.leave_v6(&groups, g, 0), Ok(()));
        assert_eq!(m.leave_v6(&groups, g, 0), Err(Error::AddrNotAvailable));
    }

    #[test]
    fn the_interface_decides_the_route() {
        let o = Options::default();
        assert_eq!(route(ANY, &o), Err(Error::NetUnreachable), "no default route");
        assert_eq!(route(LOCAL, &o), Ok(Route { index: LO, source: LOCAL }), "the bound address's interface");
        let by_addr = Options { v4_index: LO, v4_addr: LOCAL, ..Options::default() };
        assert_eq!(route(ANY, &by_addr), Ok(Route { index: LO, source: LOCAL }));
        let by_index = Options { v4_index: LO, ..Options::default() };
        assert_eq!(route(ANY, &by_index), Ok(Route { index: LO, source: ANY }), "lo has no address for a group");
        assert_eq!(interface_v4(Ipv4Addr::new(10, 9, 9, 9), 0), Err(Error::AddrNotAvailable));
        assert_eq!(interface_v4(ANY, 55), Err(Error::AddrNotAvailable));
        assert_eq!(interface_v6(55), Err(Error::NoDevice));
        assert!(needs_scope("ff02::1".parse().unwrap()) && !needs_scope("ff15::1".parse().unwrap()));
    }
}
