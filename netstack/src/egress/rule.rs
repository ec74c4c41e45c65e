//! One egress rule, `HOST[:PORTS]`: HOST is `*`, an address, a CIDR
//! block, a DNS name or `*.suffix`; an IPv6 host with ports is written in
//! brackets (`[2001:db8::/32]:443`); PORTS is a port, a range
//! (`8000-8100`) or a comma list of them (`80,443`); no ports means any.

use super::reserved::canonical_block;
use super::Cidr;
use std::fmt;
use std::net::IpAddr;

/// What a rule's HOST names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// `*`: every name and every address (the reserved ranges still need
    /// a rule of their own).
    Any,
    /// An address block (a single address is a block of one).
    Net(Cidr),
    /// A DNS name, lowercase without a trailing dot; with `subdomains`
    /// (`*.example`) the names below it, not the name itself. Only the
    /// resolver can tell which addresses a name stands for.
    Name { name: String, subdomains: bool },
}

/// Ports `first..=last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub first: u16,
    pub last: u16,
}

/// A rule: a host and the ports it covers (empty: every port).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub host: Host,
    pub ports: Vec<PortRange>,
    /// The rule as written, for messages and records.
    pub text: String,
}

/// A malformed rule: the token that is wrong and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad egress rule {token:?}: {why}")]
pub struct RuleError {
    pub token: String,
    pub why: &'static str,
}

fn bad(token: &str, why: &'static str) -> RuleError {
    RuleError { token: token.to_string(), why }
}

/// Whether `s` is a port or port range token (digits, maybe `-digits`).
fn looks_like_ports(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-') && s.bytes().next().is_some_and(|b| b != b'-')
}

fn port(s: &str) -> Result<u16, RuleError> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(s, "not a port number"));
    }
    match s.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad(s, "not a port between 1 and 65535")),
        Ok(p) => Ok(p),
    }
}

/// A port or range token; an error names the whole token.
fn port_range(s: &str) -> Result<PortRange, RuleError> {
    let one = |p: &str| port(p).map_err(|e| bad(s, e.why));
    let (first, last) = match s.split_once('-') {
        Some((a, b)) => (one(a)?, one(b)?),
        None => {
            let p = one(s)?;
            (p, p)
        }
    };
    if first > last {
        return Err(bad(s, "port range runs backwards"));
    }
    Ok(PortRange { first, last })
}

/// Whether `label` is a DNS label: letters, digits, `-` and `_` (which
/// service names use), 1 to 63 of them, no `-` at either end.
fn label_ok(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

fn name(s: &str) -> Result<Host, RuleError> {
    let (subdomains, rest) = match s.strip_prefix("*.") {
        Some(r) => (true, r),
        None => (false, s),
    };
    let rest = rest.strip_suffix('.').unwrap_or(rest);
    let labels: Vec<&str> = rest.split('.').collect();
    if rest.len() > 253 || !labels.iter().all(|l| label_ok(l)) {
        return Err(bad(s, "not an address, CIDR block or DNS name"));
    }
    // A last label of digits is a mistyped address (`10.0.0`, `0177.0.0.1`),
    // never a top-level domain.
    if labels.last().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return Err(bad(s, "not an address, CIDR block or DNS name"));
    }
    Ok(Host::Name { name: rest.to_ascii_lowercase(), subdomains })
}

fn host(s: &str) -> Result<Host, RuleError> {
    if s == "*" {
        return Ok(Host::Any);
    }
    if s.is_empty() {
        return Err(bad(s, "no host"));
    }
    let numeric = s.contains('/') || s.contains(':') || s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if numeric {
        return Cidr::parse(s)
            .map(|c| Host::Net(canonical_block(c)))
            .ok_or_else(|| bad(s, "not an address or CIDR block"));
    }
    name(s)
}

impl Rule {
    /// Parses one rule, `HOST[:PORTS]` (PORTS may itself be a comma
    /// list).
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let (h, ports) = if let Some(rest) = text.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(|| bad(text, "no closing ]"))?;
            match after {
                "" => (h, None),
                a => (h, Some(a.strip_prefix(':').ok_or_else(|| bad(a, "expected :PORTS after ]"))?)),
            }
        } else if text.matches(':').count() > 1 {
            // A bare IPv6 address or block: it has no ports.
            (text, None)
        } else {
            match text.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        let host = host(h)?;
        let ports = match ports {
            None => Vec::new(),
            Some("") => return Err(bad(text, "empty port list")),
            Some(p) => p.split(',').map(port_range).collect::<Result<_, _>>()?,
        };
        Ok(Rule { host, ports, text: text.to_string() })
    }

    /// Parses a comma list of rules as one flag gives it. A piece that is
    /// only a port or range continues the port list of the rule before it
    /// when that rule has ports (`a.example:80,443,b.example`).
    pub fn parse_list(list: &str) -> Result<Vec<Rule>, RuleError> {
        let mut rules: Vec<Rule> = Vec::new();
        for piece in list.split(',') {
            match rules.last_mut() {
                Some(prev) if looks_like_ports(piece) && !prev.ports.is_empty() => {
                    prev.ports.push(port_range(piece)?);
                    prev.text.push(',');
                    prev.text.push_str(piece);
                }
                _ => rules.push(Rule::parse(piece)?),
            }
        }
        Ok(rules)
    }

    /// Whether the rule covers `port` (a rule without ports covers all).
    pub fn covers_port(&self, port: u16) -> bool {
        self.ports.is_empty() || self.ports.iter().any(|r| (r.first..=r.last).contains(&port))
    }

    /// Whether the rule's host covers address `ip` (canonical). A name
    /// rule covers no address by itself.
    pub fn covers_addr(&self, ip: IpAddr) -> bool {
        match &self.host {
            Host::Any => true,
            Host::Net(c) => c.contains(ip),
            Host::Name { .. } => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Host {
        Host::Net(Cidr::parse(s).unwrap())
    }

    fn ports(list: &[(u16, u16)]) -> Vec<PortRange> {
        list.iter().map(|&(first, last)| PortRange { first, last }).collect()
    }

    #[test]
    fn hosts_of_every_kind_parse() {
        assert_eq!(Rule::parse("*").unwrap().host, Host::Any);
        assert_eq!(Rule::parse("198.18.0.2").unwrap().host, net("198.18.0.2"));
        assert_eq!(Rule::parse("198.18.0.0/15").unwrap().host, net("198.18.0.0/15"));
        assert_eq!(Rule::parse("2001:db8::/32").unwrap().host, net("2001:db8::/32"));
        assert_eq!(Rule::parse("[2001:db8::1]:443").unwrap().host, net("2001:db8::1"));
        assert_eq!(Rule::parse("::ffff:10.0.0.0/104").unwrap().host, net("10.0.0.0/8"));
        assert_eq!(
            Rule::parse("API.Example.").unwrap().host,
            Host::Name { name: "api.example".into(), subdomains: false }
        );
        assert_eq!(Rule::parse("*.example").unwrap().host, Host::Name { name: "example".into(), subdomains: true });
    }

    #[test]
    fn ports_parse_as_single_ranges_and_lists() {
        assert_eq!(Rule::parse("*:443").unwrap().ports, ports(&[(443, 443)]));
        assert_eq!(Rule::parse("1.2.3.4:8000-8100").unwrap().ports, ports(&[(8000, 8100)]));
        assert_eq!(Rule::parse("a.example:80,443").unwrap().ports, ports(&[(80, 80), (443, 443)]));
        assert_eq!(Rule::parse("[::1]:1-65535").unwrap().ports, ports(&[(1, 65535)]));
        let r = Rule::parse("*:80,8000-8100").unwrap();
        assert!(r.covers_port(80) && r.covers_port(8050) && !r.covers_port(443));
        assert!(Rule::parse("*").unwrap().covers_port(1));
    }

    #[test]
    fn flag_lists_split_rules_but_keep_port_lists() {
        let rules = Rule::parse_list("a.example:80,443,1.2.3.4,*:22").unwrap();
        let texts: Vec<&str> = rules.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts, ["a.example:80,443", "1.2.3.4", "*:22"]);
        assert_eq!(rules[0].ports, ports(&[(80, 80), (443, 443)]));
        assert!(rules[1].ports.is_empty());
    }

    #[test]
    fn malformed_rules_name_the_bad_token() {
        for (rule, token) in [
            ("1.2.3.4:0", "0"),
            ("1.2.3.4:65536", "65536"),
            ("1.2.3.4:http", "http"),
            ("1.2.3.4:90-80", "90-80"),
            ("1.2.3.4:", "1.2.3.4:"),
            ("1.2.3.4:-5", "-5"),
            ("10.0.0.1/8", "10.0.0.1/8"),
            ("10.0.0.0/33", "10.0.0.0/33"),
            ("300.1.1.1", "300.1.1.1"),
            ("0177.0.0.1", "0177.0.0.1"),
            ("10.0.0", "10.0.0"),
            ("bad_host!", "bad_host!"),
            ("-a.example", "-a.example"),
            ("a..example", "a..example"),
            ("[::1", "[::1"),
            ("[::1]443", "443"),
            ("", ""),
            (":443", ""),
        ] {
            let e = Rule::parse(rule).unwrap_err();
            assert_eq!(e.token, token, "{rule}: {e}");
            assert!(e.to_string().contains(&format!("{token:?}")), "{e}");
        }
        let e = Rule::parse_list("1.2.3.4,443").unwrap_err();
        assert_eq!(e.token, "443");
        assert_eq!(Rule::parse_list("a.example:80,x!").unwrap_err().token, "x!");
    }

    #[test]
    fn addresses_are_covered_by_blocks_and_any_not_by_names() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(Rule::parse("*").unwrap().covers_addr(ip("8.8.8.8")));
        assert!(Rule::parse("198.18.0.0/15").unwrap().covers_addr(ip("198.19.1.1")));
        assert!(!Rule::parse("198.18.0.0/15").unwrap().covers_addr(ip("198.20.0.1")));
        assert!(!Rule::parse("a.example").unwrap().covers_addr(ip("8.8.8.8")));
    }
}
