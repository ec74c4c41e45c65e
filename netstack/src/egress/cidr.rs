//! Address blocks (`10.0.0.0/8`, `2001:db8::/32`, a single address).

use std::fmt;
use std::net::IpAddr;

/// An address block: the addresses sharing the first `len` bits of
/// `addr` (the bits past `len` are zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

/// The width of an address in bits.
fn width(ip: IpAddr) -> u8 {
    if ip.is_ipv4() {
        32
    } else {
        128
    }
}

/// The address's bits, left-aligned in a u128 (an IPv4 address in the
/// top 32 bits), so one mask serves both families.
fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)) << 96,
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The mask of the first `len` bits.
fn mask(len: u8) -> u128 {
    match len {
        0 => 0,
        n => u128::MAX << (128 - u32::from(n.min(128))),
    }
}

impl Cidr {
    /// The block of `addr`'s first `len` bits; None when `len` is longer
    /// than the address or bits past it are set (`10.0.0.1/8` is a typo
    /// more often than a meaning, so it is refused).
    pub fn new(addr: IpAddr, len: u8) -> Option<Cidr> {
        if len > width(addr) || bits(addr) & !mask(len) != 0 {
            return None;
        }
        Some(Cidr { addr, len })
    }

    /// The block holding only `addr`.
    pub fn host(addr: IpAddr) -> Cidr {
        Cidr { addr, len: width(addr) }
    }

    pub fn addr(&self) -> IpAddr {
        self.addr
    }

    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// Whether `ip` (of the same family) lies in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && (bits(ip) ^ bits(self.addr)) & mask(self.len) == 0
    }

    /// Whether every address of `other` lies in this block.
    pub fn covers(&self, other: &Cidr) -> bool {
        other.len >= self.len && self.contains(other.addr)
    }

    /// Parses `a.b.c.d/len`, `v6/len` or a bare address.
    pub fn parse(s: &str) -> Option<Cidr> {
        match s.split_once('/') {
            None => s.parse().ok().map(Cidr::host),
            Some((a, l)) => {
                let addr: IpAddr = a.parse().ok()?;
                // Digits only: `+8` and ` 8` are not lengths.
                if l.is_empty() || !l.bytes().all(|b| b.is_ascii_digit()) || l.len() > 3 {
                    return None;
                }
                Cidr::new(addr, l.parse().ok()?)
            }
        }
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_contain_their_addresses_only() {
        let c = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(c.contains(ip("10.255.1.2")));
        assert!(!c.contains(ip("11.0.0.0")));
        assert!(!c.contains(ip("::a00:1")), "families never mix");
        let all = Cidr::parse("0.0.0.0/0").unwrap();
        assert!(all.contains(ip("1.2.3.4")));
        let v6 = Cidr::parse("fe80::/10").unwrap();
        assert!(v6.contains(ip("febf::1")) && !v6.contains(ip("fec0::1")));
        assert!(Cidr::parse("::/0").unwrap().contains(ip("2001:db8::1")));
        assert!(Cidr::parse("1.2.3.4").unwrap().contains(ip("1.2.3.4")));
        assert!(!Cidr::parse("1.2.3.4").unwrap().contains(ip("1.2.3.5")));
    }

    #[test]
    fn covering_is_containment_of_blocks() {
        let ten = Cidr::parse("10.0.0.0/8").unwrap();
        assert!(ten.covers(&Cidr::parse("10.1.0.0/16").unwrap()));
        assert!(ten.covers(&ten));
        assert!(!ten.covers(&Cidr::parse("0.0.0.0/0").unwrap()));
    }

    #[test]
    fn malformed_blocks_are_refused() {
        for bad in
            ["10.0.0.1/8", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/+8", "::/129", "10.0.0/8", "x/8", "1.2.3.4/0008"]
        {
            assert_eq!(Cidr::parse(bad), None, "{bad}");
        }
    }
}
