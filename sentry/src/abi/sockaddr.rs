//! Socket addresses as the guest passes them: `struct sockaddr_in`,
//! `sockaddr_in6`, `sockaddr_nl` and `sockaddr_un`. Each begins with its
//! `sa_family_t`; ports are in network order, every other field in the
//! guest's.

use super::layout::{Decoder, Encoder, Layout};
use super::socket::{AF_INET, AF_INET6, AF_NETLINK};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// `sa_family_t` of a family number.
fn family(af: i32) -> u16 {
    u16::try_from(af).unwrap_or(0)
}

/// The address family a sockaddr starts with (`raw` holds at least two
/// bytes).
pub fn family_of(raw: &[u8]) -> u16 {
    u16::from_ne_bytes([raw.first().copied().unwrap_or(0), raw.get(1).copied().unwrap_or(0)])
}

/// A `struct sockaddr_in`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockaddrIn(pub SocketAddrV4);

impl Layout for SockaddrIn {
    const SIZE: usize = 16;

    fn encode_to(&self, e: &mut Encoder) {
        e.u16(family(AF_INET)).bytes(&self.0.port().to_be_bytes()).bytes(&self.0.ip().octets()).zeros(8);
    }

    /// Reads the port and address (the caller checked the family).
    fn decode_from(d: &mut Decoder) -> SockaddrIn {
        d.skip(2);
        let port = u16::from_be(d.u16());
        let ip = Ipv4Addr::from(d.u32().to_le_bytes());
        d.skip(8);
        SockaddrIn(SocketAddrV4::new(ip, port))
    }
}

/// A `struct sockaddr_in6`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockaddrIn6(pub SocketAddrV6);

impl Layout for SockaddrIn6 {
    const SIZE: usize = 28;

    fn encode_to(&self, e: &mut Encoder) {
        let a = &self.0;
        e.u16(family(AF_INET6)).bytes(&a.port().to_be_bytes()).u32(a.flowinfo());
        e.bytes(&a.ip().octets()).u32(a.scope_id());
    }

    /// Reads the port, flow label, address and scope (the caller checked
    /// the family).
    fn decode_from(d: &mut Decoder) -> SockaddrIn6 {
        d.skip(2);
        let port = u16::from_be(d.u16());
        let flowinfo = d.u32();
        let mut ip = [0u8; 16];
        for chunk in ip.chunks_exact_mut(4) {
            chunk.copy_from_slice(&d.u32().to_le_bytes());
        }
        let scope = d.u32();
        SockaddrIn6(SocketAddrV6::new(Ipv6Addr::from(ip), port, flowinfo, scope))
    }
}

/// The sockaddr_in or sockaddr_in6 bytes of `a`.
pub fn encode_inet(a: SocketAddr) -> Vec<u8> {
    match a {
        SocketAddr::V4(v4) => SockaddrIn(v4).encode(),
        SocketAddr::V6(v6) => SockaddrIn6(v6).encode(),
    }
}

/// The sockaddr_in or sockaddr_in6 bytes of `ip` and `port`, with no
/// flow label or scope.
pub fn encode_ip(ip: IpAddr, port: u16) -> Vec<u8> {
    encode_inet(SocketAddr::new(ip, port))
}

/// A `struct sockaddr_nl`: a netlink port and multicast groups.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockaddrNl {
    pub pid: u32,
    pub groups: u32,
}

impl Layout for SockaddrNl {
    const SIZE: usize = 12;

    fn encode_to(&self, e: &mut Encoder) {
        e.u16(family(AF_NETLINK)).u16(0).u32(self.pid).u32(self.groups);
    }

    /// Reads the port and groups (the caller checked the family).
    fn decode_from(d: &mut Decoder) -> SockaddrNl {
        d.skip(4);
        SockaddrNl { pid: d.u32(), groups: d.u32() }
    }
}

/// `struct sockaddr_un`: the family, then `sun_path`.
pub struct SockaddrUn;

impl SockaddrUn {
    /// Where `sun_path` starts.
    pub const PATH_OFFSET: usize = 2;
    /// sizeof(struct sockaddr_un): the longest address.
    pub const SIZE: usize = 110;
    /// `sun_family`: AF_UNIX (a test checks it).
    pub(crate) const FAMILY: u16 = 1;

    /// The bytes of an address whose `sun_path` is `path` (the family
    /// alone for an unnamed socket).
    pub fn encode(path: &[u8]) -> Vec<u8> {
        let mut e = Encoder::with_capacity(Self::PATH_OFFSET + path.len());
        e.u16(Self::FAMILY).bytes(path);
        e.finish()
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // libc constants that fit
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layouts_match_linux() {
        assert_eq!(size_of::<libc::sockaddr_in>(), SockaddrIn::SIZE);
        assert_eq!(size_of::<libc::sockaddr_in6>(), SockaddrIn6::SIZE);
        assert_eq!(size_of::<libc::sockaddr_nl>(), SockaddrNl::SIZE);
        assert_eq!(size_of::<libc::sockaddr_un>(), SockaddrUn::SIZE);
        assert_eq!(offset_of!(libc::sockaddr_un, sun_path), SockaddrUn::PATH_OFFSET);
        assert_eq!(i32::from(SockaddrUn::FAMILY), libc::AF_UNIX);
        assert_eq!(offset_of!(libc::sockaddr_nl, nl_pid), 4);
        assert_eq!(offset_of!(libc::sockaddr_in6, sin6_scope_id), 24);
    }

    #[test]
    fn encodings_match_libc() {
        let v4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 2, 2), 53);
        let raw = SockaddrIn(v4).encode();
        // What a C program builds for the same address.
        let mut c: libc::sockaddr_in = zeroed_in();
        c.sin_family = libc::sa_family_t::try_from(libc::AF_INET).unwrap();
        c.sin_port = 53u16.to_be();
        c.sin_addr.s_addr = u32::from_ne_bytes([10, 0, 2, 2]);
        assert_eq!(raw[..2], c.sin_family.to_ne_bytes());
        assert_eq!(raw[2..4], c.sin_port.to_ne_bytes());
        assert_eq!(raw[4..8], c.sin_addr.s_addr.to_ne_bytes());
        assert_eq!(SockaddrIn::decode(&raw), SockaddrIn(v4));
        let v6 = SocketAddrV6::new("fe80::1".parse().unwrap(), 8080, 7, 3);
        let raw = SockaddrIn6(v6).encode();
        assert_eq!(i32::from(family_of(&raw)), libc::AF_INET6);
        assert_eq!(SockaddrIn6::decode(&raw), SockaddrIn6(v6));
        let nl = SockaddrNl { pid: 42, groups: 1 };
        assert_eq!(SockaddrNl::decode(&nl.encode()), nl);
        assert_eq!(i32::from(family_of(&nl.encode())), libc::AF_NETLINK);
        assert_eq!(SockaddrUn::encode(b"\0x"), vec![1, 0, 0, b'x']);
    }

    /// A zeroed sockaddr_in, built field by field.
    fn zeroed_in() -> libc::sockaddr_in {
        libc::sockaddr_in { sin_family: 0, sin_port: 0, sin_addr: libc::in_addr { s_addr: 0 }, sin_zero: [0; 8] }
    }
}
