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
    ("168.63.129.16/32", "cloud metadata"),
    ("169.254.0.0/16", "link-local"),
    ("fe80::/10", "link-local"),
    ("127.0.0.0/8", "loopback"),
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("::/96", "IPv4-compatible"),
    ("0.0.0.0/8", "this network"),
    ("192.0.0.0/24", "protocol assignments"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "shared address space"),
    ("fc00::/7", "unique local"),
    ("fec0::/10", "site-local"),
    ("2002::/16", "6to4"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("224.0.0.0/4", "multicast"),
    ("ff00::/8", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
];

/// The reserved blocks, parsed once.
fn blocks() -> impl Iterator<Item = (Cidr, &'static str)> {
    RESERVED.iter().filter_map(|&(c, why)| Cidr::parse(c).map(|c| (c, why)))
}

/// The NAT64 prefixes (RFC 6052, RFC 8215) whose /96 embeds an IPv4
/// address in its last 32 bits: the well-known 64:ff9b::/96 and the /96
/// at the start of the local-use 64:ff9b:1::/48 (the rest of that /48,
/// other embeddings, stays reserved).
const NAT64: [Ipv6Addr; 2] =
    [Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0)];

/// `ip` as the policy judges it: a v4-mapped (`::ffff:a.b.c.d`) or NAT64
/// (`64:ff9b::a.b.c.d`, `64:ff9b:1::a.b.c.d`) address as the IPv4
/// address it stands for.
pub fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else { return ip };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return IpAddr::V4(v4);
    }
    let o = v6.octets();
    if NAT64.iter().any(|p| o[..12] == p.octets()[..12]) {
        return IpAddr::V4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
    }
    ip
}

/// A block given in a v4-mapped or NAT64 spelling, as the IPv4 block it
/// stands for (so a rule `::ffff:10.0.0.0/104` names 10.0.0.0/8). Only a
/// block of /96 or longer lies within one prefix's embedded addresses; a
/// shorter one (`64:ff9b::/64`) stays the IPv6 block it is, which no
/// translated address matches, rather than becoming 0.0.0.0/0.
pub(super) fn canonical_block(c: Cidr) -> Cidr {
    match canonical(c.addr()) {
        IpAddr::V4(v4) if c.addr().is_ipv6() && c.prefix_len() >= 96 => {
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
        let nat64 = canonical_block(Cidr::parse("64:ff9b::a00:0/104").unwrap());
        assert_eq!(nat64, Cidr::parse("10.0.0.0/8").unwrap());
    }

    #[test]
    fn nat64_blocks_shorter_than_96_are_not_everything() {
        for short in ["64:ff9b::/64", "64:ff9b::/95", "64:ff9b::/80", "64:ff9b:1::/48"] {
            let c = Cidr::parse(short).unwrap();
            assert_eq!(canonical_block(c), c, "{short}");
            assert!(!canonical_block(c).contains(ip("8.8.8.8")), "{short}");
        }
        assert_eq!(canonical_block(Cidr::parse("64:ff9b::/96").unwrap()), Cidr::parse("0.0.0.0/0").unwrap());
    }

    #[test]
    fn local_use_nat64_is_its_ipv4_address_and_the_rest_reserved() {
        assert_eq!(canonical(ip("64:ff9b:1::a9fe:a9fe")), ip("169.254.169.254"));
        assert_eq!(canonical(ip("64:ff9b:1::808:808")), ip("8.8.8.8"));
        assert_eq!(reserved(canonical(ip("64:ff9b:1:1::808:808"))).map(|r| r.1), Some("local-use NAT64"));
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
            ("168.63.129.16", "cloud metadata"),
            ("192.0.0.8", "protocol assignments"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.254", "reserved"),
            ("2002:a9fe:a9fe::1", "6to4"),
            ("::a9fe:a9fe", "IPv4-compatible"),
            ("::", "unspecified"),
            ("fec0::1", "site-local"),
            ("64:ff9b:1:ffff::1", "local-use NAT64"),
        ] {
            assert_eq!(reserved(ip(addr)).map(|r| r.1), Some(why), "{addr}");
        }
        for open in ["198.18.0.2", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:db8::1", "192.0.1.1", "168.63.129.17"]
        {
            assert_eq!(reserved(ip(open)), None, "{open}");
        }
    }
}
