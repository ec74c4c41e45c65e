//! Addresses and routes. The sandbox has one interface, loopback, with
//! 127.0.0.1/8 and ::1: those (and the unspecified addresses, which mean
//! "this host" as a destination) are its own, and every other destination
//! is unreachable.

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

/// May a socket bind `ip` (canonical)? Only the sandbox's own addresses.
pub(crate) fn bindable(ip: IpAddr) -> Result<(), Error> {
    if ip.is_unspecified() || ip.is_loopback() {
        Ok(())
    } else {
        Err(Error::AddrNotAvailable)
    }
}

/// The local address a packet to `ip` (canonical) reaches: loopback, with
/// the unspecified address meaning loopback as in Linux; anything else has
/// no route.
pub(crate) fn route(ip: IpAddr) -> Result<IpAddr, Error> {
    match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => Ok(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        IpAddr::V6(v6) if v6.is_unspecified() => Ok(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        ip if ip.is_loopback() => Ok(ip),
        _ => Err(Error::NetUnreachable),
    }
}

/// The source address of a packet to `dest` (routed) from a socket bound
/// to `bound` (canonical): the bound address, or the interface's.
pub(crate) fn source(bound: IpAddr, dest: IpAddr) -> IpAddr {
    if !bound.is_unspecified() {
        return bound;
    }
    match dest {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// A destination given to a socket of family `f` (with IPV6_V6ONLY as
/// `v6only`), made canonical; IPv4 through a v6-only socket has no route.
pub(crate) fn destination(f: Family, v6only: bool, addr: SocketAddr) -> Result<SocketAddr, Error> {
    let ip = canonical(addr.ip());
    if f == Family::V6 && v6only && ip.is_ipv4() {
        return Err(Error::NetUnreachable);
    }
    Ok(SocketAddr::new(route(ip)?, addr.port()))
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
}
