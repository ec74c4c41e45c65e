//! The ranges no rule but one naming them opens: cloud metadata,
//! link-local, loopback of the outer namespace, private and shared
//! networks, "this network", multicast and broadcast. An address given in
//! another spelling of the same IPv4 address (v4-mapped IPv6, NAT64) is
//! judged as that IPv4 address.

use super::Cidr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// (block, why it is reserved), most specific first so a denial names
/// the narrowest reason.
const RESERVED: &[(&str, &str)] = &[
    ("169.254.169.254/32", "cloud metadata"),
    ("fd00:ec2::254/128", "cloud metadata"),
    ("169.254.0.0/16", "link-local"),
    ("fe80::/10", "link-local"),
    ("127.0.0.0/8", "loopback"),
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("0.0.0.0/8", "this network"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "shared address space"),
    ("fc00::/7", "unique local"),
    ("224.0.0.0/4", "multicast"),
    ("ff00::/8", "multicast"),
    ("255.255.255.255/32", "broadcast"),
];

/// The reserved blocks, parsed once.
fn blocks() -> impl Iterator<Item = (Cidr, &'static str)> {
    RESERVED.iter().filter_map(|&(c, why)| Cidr::parse(c).map(|c| (c, why)))
}

/// The NAT64 well-known prefix (RFC 6052): 64:ff9b::/96 embeds an IPv4
/// address in its last 32 bits.
const NAT64: Ipv6Addr = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0);

/// `ip` as the policy judges it: a v4-mapped (`::ffff:a.b.c.d`) or NAT64
/// (`64:ff9b::a.b.c.d`) address as the IPv4 address it stands for.
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let o = v6.octets();
    if o[..12] == NAT64.octets()[..12] {
        return IpAddr::V4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    ip
}

/// A block given in a v4-mapped or NAT64 spelling, as the IPv4 block it
/// stands for (so a rule `::ffff:10.0.0.0/104` names 10.0.0.0/8).
pub(super) fn canonical_block(c: Cidr) -> Cidr {
    match canonical(c.addr()) {
        IpAddr::V4(v4) if c.addr().is_ipv6() => {
            Cidr::new(IpAddr::V4(v4), c.prefix_len().saturating_sub(96)).unwrap_or(c)
        }
        _ => c,
    }
}

/// The reserved block `ip` (canonical) lies in and why, if any.
pub(super) fn reserved(ip: IpAddr) -> Option<(Cidr, &'static str)> {
    blocks().find(|(c, _)| c.contains(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn other_spellings_of_an_ipv4_address_are_that_address() {
        assert_eq!(canonical(ip("::ffff:169.254.169.254")), ip("169.254.169.254"));
        assert_eq!(canonical(ip("64:ff9b::a9fe:a9fe")), ip("169.254.169.254"));
        assert_eq!(canonical(ip("2001:db8::1")), ip("2001:db8::1"));
        assert_eq!(canonical(ip("1.2.3.4")), ip("1.2.3.4"));
    }

    #[test]
    fn mapped_blocks_become_ipv4_blocks() {
        let c = canonical_block(Cidr::parse("::ffff:10.0.0.0/104").unwrap());
        assert_eq!(c, Cidr::parse("10.0.0.0/8").unwrap());
        let plain = Cidr::parse("2001:db8::/32").unwrap();
        assert_eq!(canonical_block(plain), plain);
    }

    #[test]
    fn every_reserved_block_parses_and_is_found() {
        assert_eq!(blocks().count(), RESERVED.len());
        for (addr, why) in [
            ("169.254.169.254", "cloud metadata"),
            ("fd00:ec2::254", "cloud metadata"),
            ("169.254.1.1", "link-local"),
            ("fe80::1", "link-local"),
            ("127.0.0.53", "loopback"),
            ("::1", "loopback"),
            ("0.1.2.3", "this network"),
            ("10.9.8.7", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.127.0.1", "shared address space"),
            ("fd12::1", "unique local"),
            ("239.1.1.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
        ] {
            assert_eq!(reserved(ip(addr)).map(|r| r.1), Some(why), "{addr}");
        }
        for open in ["198.18.0.2", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:db8::1"] {
            assert_eq!(reserved(ip(open)), None, "{open}");
        }
    }
}
