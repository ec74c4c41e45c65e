//! Where the resolver forwards allowed names: `--dns-upstream ADDR[:PORT]`
//! or, by default, the nameservers of the outer namespace's
//! `/etc/resolv.conf`.

use std::net::{IpAddr, SocketAddr};

/// The DNS port.
const DNS_PORT: u16 = 53;

/// A `--dns-upstream` value that is not `ADDR[:PORT]`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad DNS upstream {input:?}: {why}")]
pub struct UpstreamError {
    pub input: String,
    pub why: &'static str,
}

/// Parses `--dns-upstream`: `1.2.3.4`, `1.2.3.4:5353`, `2001:db8::1`,
/// `[2001:db8::1]` or `[2001:db8::1]:5353`; port 53 when none is given.
pub fn parse_upstream(input: &str) -> Result<SocketAddr, UpstreamError> {
    let bad = |why| UpstreamError { input: input.to_owned(), why };
    if let Ok(ip) = input.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DNS_PORT));
    }
    let (host, port) = match input.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']').ok_or_else(|| bad("'[' without ']'"))?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(|| bad("expected ':PORT' after ']'"))?)),
            }
        }
        None => match input.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (input, None),
        },
    };
    let ip = match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) if !input.starts_with('[') => {
            return Err(bad("write an IPv6 address with a port as [ADDR]:PORT"))
        }
        Ok(IpAddr::V4(_)) if input.starts_with('[') => return Err(bad("only IPv6 addresses go in brackets")),
        Ok(ip) => ip,
        Err(_) => return Err(bad("not an IPv4 or IPv6 address")),
    };
    let port = match port {
        None => DNS_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(port) if port != 0 && p.bytes().all(|b| b.is_ascii_digit()) => port,
            _ => return Err(bad("not a port number 1-65535")),
        },
    };
    Ok(SocketAddr::new(ip, port))
}

/// The nameservers of an `/etc/resolv.conf` text, port 53, in order and
/// without repeats. As glibc does, a line that does not hold an address is
/// skipped; so is a link-local IPv6 one with a `%zone` (the zone names an
/// interface of the outer namespace the sentry cannot resolve).
pub fn upstreams_from_resolv_conf(text: &str) -> Vec<SocketAddr> {
    let mut found = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let Some(Ok(ip)) = words.next().map(str::parse::<IpAddr>) else { continue };
        let addr = SocketAddr::new(ip, DNS_PORT);
        if !found.contains(&addr) {
            found.push(addr);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn upstream_forms() {
        assert_eq!(parse_upstream("192.0.2.1"), Ok(sa("192.0.2.1:53")));
        assert_eq!(parse_upstream("192.0.2.1:5353"), Ok(sa("192.0.2.1:5353")));
        assert_eq!(parse_upstream("2001:db8::1"), Ok(sa("[2001:db8::1]:53")));
        assert_eq!(parse_upstream("[2001:db8::1]"), Ok(sa("[2001:db8::1]:53")));
        assert_eq!(parse_upstream("[2001:db8::1]:5353"), Ok(sa("[2001:db8::1]:5353")));
    }

    #[test]
    fn bad_upstreams_are_named() {
        for input in [
            "",
            "dns.example",
            "192.0.2.1:",
            "192.0.2.1:0",
            "192.0.2.1:65536",
            "192.0.2.1:+53",
            "192.0.2.1:53:53",
            "[2001:db8::1",
            "[2001:db8::1]53",
            "[192.0.2.1]:53",
            "[2001:db8::1]:x",
            "300.0.0.1",
        ] {
            let err = parse_upstream(input).unwrap_err();
            assert_eq!(err.input, input);
            assert!(err.to_string().contains(&format!("{input:?}")), "{err}");
        }
    }

    #[test]
    fn resolv_conf_nameservers() {
        let text = "# generated\n\
                    ; comment\n\
                    search example\n\
                    nameserver 192.0.2.53\n\
                    nameserver\t2001:db8::53  # trailing words are ignored\n\
                    nameserver fe80::1%eth0\n\
                    nameserver not-an-address\n\
                    nameserver\n\
                    #nameserver 192.0.2.99\n\
                    nameserver 192.0.2.53\n\
                    options ndots:2\n";
        assert_eq!(upstreams_from_resolv_conf(text), vec![sa("192.0.2.53:53"), sa("[2001:db8::53]:53")]);
        assert!(upstreams_from_resolv_conf("").is_empty());
    }
}
