//! Addresses and routes. The sandbox's own addresses are loopback's
//! (127.0.0.1/8 and ::1) and, when it has an uplink, eth0's (10.0.2.15):
//! those (and the unspecified addresses, which mean "this host" as a
//! destination) are delivered inside the stack, as Linux delivers a packet
//! to one of its own addresses through `lo`; every other destination is
//! unreachable here (the gateway carries what the policy allows).

use crate::iface::{uplink, Uplink};
use crate::Error;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// A socket's address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    /// The unspecified address of the family.
    pub fn any(self) -> IpAddr {
        match self {
            Family::V4 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            Family::V6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        }
    }
}

/// An address with a v4-mapped IPv6 address written as the IPv4 address
/// it maps, which is how the stack compares addresses.
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// How a socket of family `f` shows `addr`: an IPv4 address on an IPv6
/// socket is v4-mapped.
pub(crate) fn presented(f: Family, addr: SocketAddr) -> SocketAddr {
    match (f, addr.ip()) {
        (Family::V6, IpAddr::V4(v4)) => SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), addr.port()),
        _ => addr,
    }
}

/// Whether `ip` (canonical) is the address of the uplink `up` (eth0).
fn on_uplink(ip: IpAddr, up: Option<&Uplink>) -> bool {
    up.is_some_and(|u| ip == IpAddr::V4(u.addr))
}

/// May a socket bind `ip` (canonical)? Only the sandbox's own addresses,
/// broadcast addresses (the limited one and eth0's) and multicast groups.
pub(crate) fn bindable(ip: IpAddr) -> Result<(), Error> {
    bindable_with(ip, uplink())
}

fn bindable_with(ip: IpAddr, up: Option<&Uplink>) -> Result<(), Error> {
    match ip {
        // A group's address takes its datagrams; one of a scope that
        // needs an interface needs a scope id too.
        IpAddr::V6(v6) if crate::multicast::needs_scope(v6) => return Err(Error::Invalid),
        ip if ip.is_multicast() || is_broadcast_with(ip, up) => return Ok(()),
        _ => {}
    }
    if ip.is_unspecified() || ip.is_loopback() || on_uplink(ip, up) {
        Ok(())
    } else {
        Err(Error::AddrNotAvailable)
    }
}

/// Whether `ip` (canonical) is a broadcast address: the limited one
/// (255.255.255.255) or eth0's subnet's.
pub(crate) fn is_broadcast(ip: IpAddr) -> bool {
    is_broadcast_with(ip, uplink())
}

fn is_broadcast_with(ip: IpAddr, up: Option<&Uplink>) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_broadcast() || up.is_some_and(|u| v4 == u.broadcast()),
        IpAddr::V6(_) => false,
    }
}

/// The local address a packet to `ip` (canonical) reaches: loopback or
/// eth0's own, with the unspecified address meaning loopback as in Linux;
/// anything else has no route.
pub(crate) fn route(ip: IpAddr) -> Result<IpAddr, Error> {
    route_with(ip, uplink())
}

fn route_with(ip: IpAddr, up: Option<&Uplink>) -> Result<IpAddr, Error> {
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(v6) if v6.is_unspecified() => Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ip if ip.is_loopback() || on_uplink(ip, up) => Ok(ip),
        _ => Err(Error::NetUnreachable),
    }
}

/// The source address of a packet to `dest` (routed) from a socket bound
/// to `bound` (canonical): the bound address (not a group's), or the one
/// of the interface that owns `dest` (eth0's own address is its own
/// source, as Linux picks it).
pub(crate) fn source(bound: IpAddr, dest: IpAddr) -> IpAddr {
    source_with(bound, dest, uplink())
}

fn source_with(bound: IpAddr, dest: IpAddr, up: Option<&Uplink>) -> IpAddr {
    // A socket bound to a group or a broadcast address sends from its
    // interface's address (__inet_bind leaves inet_saddr unset).
    if !bound.is_unspecified() && !bound.is_multicast() && !is_broadcast_with(bound, up) {
        return bound;
    }
    if on_uplink(dest, up) {
        return dest;
    }
    match dest {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// A destination given to a socket of family `f` (with IPV6_V6ONLY as
/// `v6only`), made canonical and routed (a group as it is); IPv4 through
/// a v6-only socket has no route.
pub(crate) fn destination(f: Family, v6only: bool, addr: SocketAddr) -> Result<SocketAddr, Error> {
    let ip = canonical(addr.ip());
    if f == Family::V6 && v6only && ip.is_ipv4() {
        return Err(Error::NetUnreachable);
    }
    if ip.is_multicast() {
        // A group's route is the socket's multicast options' (multicast.rs).
        return Ok(SocketAddr::new(ip, addr.port()));
    }
    Ok(SocketAddr::new(route(ip)?, addr.port()))
}

/// A destination of the other IP version than the address a socket was
/// bound to has no route: IPv4 from an IPv6 address (ENETUNREACH), IPv6
/// from a v4-mapped one (EAFNOSUPPORT), as Linux answers. `bound` is
/// canonical, None when the socket holds no address of its choosing.
pub(crate) fn check_bound_family(bound: Option<IpAddr>, dest: IpAddr) -> Result<(), Error> {
    match bound.filter(|b| !b.is_unspecified()) {
        Some(IpAddr::V6(_)) if dest.is_ipv4() => Err(Error::NetUnreachable),
        Some(IpAddr::V4(_)) if dest.is_ipv6() => Err(Error::AfNotSupported),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_is_routed() {
        assert_eq!(route("127.0.0.2".parse().unwrap()), Ok([127, 0, 0, 2].into()));
        assert_eq!(route(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(route(IpAddr::V4(Ipv4Addr::new(8, 8, 8, 8))), Err(Error::NetUnreachable));
        assert_eq!(route(IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))), Err(Error::NetUnreachable));
        assert_eq!(route(IpAddr::V6(Ipv6Addr::LOCALHOST)), Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    }

    #[test]
    fn v4_mapped_addresses_compare_as_ipv4() {
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert_eq!(canonical(mapped), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let a = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 80);
        assert_eq!(presented(Family::V6, a), SocketAddr::new(mapped, 80));
        assert_eq!(destination(Family::V6, true, SocketAddr::new(mapped, 80)), Err(Error::NetUnreachable));
    }

    #[test]
    fn eth0s_own_address_is_local_only_with_an_uplink() {
        let eth0 = IpAddr::V4(Uplink::SANDBOX.addr);
        let up = Some(&Uplink::SANDBOX);
        assert_eq!(route_with(eth0, up), Ok(eth0));
        assert_eq!(route_with(eth0, None), Err(Error::NetUnreachable), "--network none has no eth0");
        assert_eq!(route_with(IpAddr::V4(Uplink::SANDBOX.gateway), up), Err(Error::NetUnreachable));
        assert_eq!(bindable_with(eth0, up), Ok(()));
        assert_eq!(bindable_with(eth0, None), Err(Error::AddrNotAvailable));
        assert_eq!(bindable_with(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 16)), up), Err(Error::AddrNotAvailable));
        let any = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        assert_eq!(source_with(any, eth0, up), eth0);
        assert_eq!(source_with(any, IpAddr::V4(Ipv4Addr::LOCALHOST), up), IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(source_with(IpAddr::V4(Ipv4Addr::LOCALHOST), eth0, up), IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
}
