//! Name rules: `HOST[:PORTS]` strings whose HOST is a domain name pattern.
//!
//! The egress rule grammar also has address and CIDR hosts; those belong to
//! the gateway, so [`NameRule::parse`] recognises their shape and hands them
//! back as `None` instead of judging them.

use std::fmt;
use std::net::IpAddr;
use std::ops::RangeInclusive;

/// The longest name in presentation form, without the trailing dot
/// (RFC 1035 §2.3.4 allows 255 octets on the wire).
const MAX_NAME: usize = 253;
/// The longest label (RFC 1035 §2.3.4).
const MAX_LABEL: usize = 63;

/// A rule string that is not a valid name rule; each message names the
/// token at fault and the rule it came from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("empty rule")]
    Empty,
    #[error("bad name {token:?} in rule {rule:?}: {why}")]
    Name { rule: String, token: String, why: &'static str },
    #[error("bad port {token:?} in rule {rule:?}: {why}")]
    Port { rule: String, token: String, why: &'static str },
}

/// Which names a rule covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamePattern {
    /// `*`: every name.
    Any,
    /// `name.example`: that name only.
    Exact(Vec<Vec<u8>>),
    /// `*.example`: names below `example`, not `example` itself.
    Subdomains(Vec<Vec<u8>>),
}

impl NamePattern {
    /// Whether the name with these labels (leftmost first, no root label)
    /// matches; labels compare ASCII case-insensitively.
    pub(crate) fn matches(&self, labels: &[&[u8]]) -> bool {
        let suffix_eq = |pat: &[Vec<u8>]| {
            labels.len() >= pat.len()
                && labels[labels.len() - pat.len()..].iter().zip(pat).all(|(l, p)| l.eq_ignore_ascii_case(p))
        };
        match self {
            NamePattern::Any => true,
            NamePattern::Exact(pat) => labels.len() == pat.len() && suffix_eq(pat),
            NamePattern::Subdomains(pat) => labels.len() > pat.len() && suffix_eq(pat),
        }
    }
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |labels: &[Vec<u8>]| {
            labels.iter().map(|l| String::from_utf8_lossy(l).into_owned()).collect::<Vec<_>>().join(".")
        };
        match self {
            NamePattern::Any => f.write_str("*"),
            NamePattern::Exact(l) => f.write_str(&join(l)),
            NamePattern::Subdomains(l) => write!(f, "*.{}", join(l)),
        }
    }
}

/// A set of ports: `443`, `8000-8100`, `80,443`, or any port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSet(Option<Vec<RangeInclusive<u16>>>);

impl PortSet {
    /// Every port (a rule without `:PORTS`).
    pub const ANY: PortSet = PortSet(None);

    /// Whether `port` is in the set.
    pub fn contains(&self, port: u16) -> bool {
        self.0.as_ref().is_none_or(|ranges| ranges.iter().any(|r| r.contains(&port)))
    }

    /// Whether this is the set of every port.
    pub fn is_any(&self) -> bool {
        self.0.is_none()
    }

    /// Parses the PORTS part of `rule` (only for error messages): a comma
    /// list of ports 1-65535 and ranges `LOW-HIGH`.
    pub fn parse(ports: &str, rule: &str) -> Result<PortSet, RuleError> {
        let bad = |token: &str, why| RuleError::Port { rule: rule.to_owned(), token: token.to_owned(), why };
        if ports.is_empty() {
            return Err(bad(ports, "empty port list"));
        }
        let port = |token: &str| match token.parse::<u16>() {
            Ok(0) => Err(bad(token, "port 0 cannot be reached")),
            Ok(p) if token.bytes().all(|b| b.is_ascii_digit()) => Ok(p),
            _ => Err(bad(token, "not a port number 1-65535")),
        };
        let mut ranges = Vec::new();
        for token in ports.split(',') {
            let range = match token.split_once('-') {
                Some((low, high)) => {
                    let (low, high) = (port(low)?, port(high)?);
                    if low > high {
                        return Err(bad(token, "range ends below its start"));
                    }
                    low..=high
                }
                None => {
                    let p = port(token)?;
                    p..=p
                }
            };
            ranges.push(range);
        }
        Ok(PortSet(Some(ranges)))
    }
}

impl fmt::Display for PortSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(ranges) = &self.0 else { return f.write_str("*") };
        let parts: Vec<String> = ranges
            .iter()
            .map(|r| if r.start() == r.end() { r.start().to_string() } else { format!("{}-{}", r.start(), r.end()) })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// One `HOST[:PORTS]` rule whose HOST is a name pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameRule {
    pub pattern: NamePattern,
    pub ports: PortSet,
}

impl NameRule {
    /// Parses `rule`. `Ok(None)` when its HOST is an address or CIDR
    /// (`[v6]…`, a bare IPv6 address, `a.b.c.d`, anything with `/`, or a
    /// last label that inet_aton would read as a number, like `0x7f.1`):
    /// the gateway's address rules judge those.
    pub fn parse(rule: &str) -> Result<Option<NameRule>, RuleError> {
        if rule.is_empty() {
            return Err(RuleError::Empty);
        }
        if rule.starts_with('[') || rule.matches(':').count() > 1 {
            return Ok(None);
        }
        let (host, ports) = match rule.split_once(':') {
            Some((host, ports)) => (host, Some(ports)),
            None => (rule, None),
        };
        if host.contains('/') || host.parse::<IpAddr>().is_ok() || host.rsplit('.').next().is_some_and(numeric) {
            return Ok(None);
        }
        let pattern = parse_pattern(host, rule)?;
        let ports = match ports {
            Some(p) => PortSet::parse(p, rule)?,
            None => PortSet::ANY,
        };
        Ok(Some(NameRule { pattern, ports }))
    }
}

impl fmt::Display for NameRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ports.is_any() {
            write!(f, "{}", self.pattern)
        } else {
            write!(f, "{}:{}", self.pattern, self.ports)
        }
    }
}

/// Whether a label is a number in inet_aton's spellings (decimal, octal,
/// `0x` hex), which makes the host an address, not a name (RFC 3696 §2: a
/// top-level label is never all-numeric).
fn numeric(label: &str) -> bool {
    let hex = label.strip_prefix("0x").or_else(|| label.strip_prefix("0X"));
    match hex {
        Some(digits) => digits.bytes().all(|b| b.is_ascii_hexdigit()),
        None => !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// Parses HOST: `*`, `*.name` or `name`, case-folded, one trailing dot
/// ignored.
fn parse_pattern(host: &str, rule: &str) -> Result<NamePattern, RuleError> {
    let bad = |why| RuleError::Name { rule: rule.to_owned(), token: host.to_owned(), why };
    if host == "*" {
        return Ok(NamePattern::Any);
    }
    let (wild, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return Err(bad("empty name"));
    }
    if name.len() > MAX_NAME {
        return Err(bad("longer than 253 characters"));
    }
    let mut labels = Vec::new();
    for label in name.split('.') {
        if label.contains('*') {
            return Err(bad("a wildcard must be the whole first label, as in *.example"));
        }
        if label.is_empty() || label.len() > MAX_LABEL {
            return Err(bad("each label must have 1 to 63 characters"));
        }
        if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(bad("a label may hold only letters, digits, '-' and '_'"));
        }
        labels.push(label.to_ascii_lowercase().into_bytes());
    }
    Ok(if wild { NamePattern::Subdomains(labels) } else { NamePattern::Exact(labels) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> NameRule {
        NameRule::parse(s).unwrap().unwrap()
    }

    fn labels(name: &str) -> Vec<&[u8]> {
        name.split('.').map(str::as_bytes).collect()
    }

    #[test]
    fn patterns_match_exact_wildcard_and_any() {
        let exact = rule("Api.Example").pattern;
        assert!(exact.matches(&labels("api.example")));
        assert!(exact.matches(&labels("API.EXAMPLE")));
        assert!(!exact.matches(&labels("x.api.example")));
        assert!(!exact.matches(&labels("example")));
        let wild = rule("*.example.").pattern;
        assert!(wild.matches(&labels("a.example")));
        assert!(wild.matches(&labels("a.b.EXAMPLE")));
        assert!(!wild.matches(&labels("example")));
        assert!(!wild.matches(&labels("notexample")));
        assert!(!wild.matches(&labels("a.example.evil")));
        assert!(rule("*").pattern.matches(&labels("anything.at.all")));
    }

    #[test]
    fn trailing_dot_is_ignored() {
        assert_eq!(rule("api.example.:443"), rule("API.example:443"));
        assert_eq!(rule("api.example.").to_string(), "api.example");
    }

    #[test]
    fn ports_parse_single_ranges_and_lists() {
        assert!(rule("a.example").ports.is_any());
        let p = rule("a.example:80,443,8000-8100").ports;
        for port in [80, 443, 8000, 8050, 8100] {
            assert!(p.contains(port), "{port}");
        }
        for port in [1, 81, 442, 7999, 8101, 65535] {
            assert!(!p.contains(port), "{port}");
        }
        assert_eq!(p.to_string(), "80,443,8000-8100");
        assert!(rule("a.example:65535").ports.contains(65535));
    }

    #[test]
    fn address_hosts_are_left_to_the_gateway() {
        for s in [
            "10.0.0.0/8",
            "10.0.0.1:80",
            "[::1]:443",
            "2001:db8::1",
            "2001:db8::/32",
            "127.1",
            "0x7f.0.0.1:80",
            "2130706433",
            "0x7f000001",
        ] {
            assert_eq!(NameRule::parse(s), Ok(None), "{s}");
        }
    }

    #[test]
    fn bad_rules_name_the_bad_token() {
        let cases = [
            ("a.example:http", "\"http\""),
            ("a.example:0", "\"0\""),
            ("a.example:65536", "\"65536\""),
            ("a.example:90-80", "\"90-80\""),
            ("a.example:80,", "\"\""),
            ("a.example:", "empty port list"),
            ("a.example:+80", "\"+80\""),
            ("exa mple", "\"exa mple\""),
            ("a..example", "\"a..example\""),
            ("foo.*.example", "\"foo.*.example\""),
            ("*foo.example", "\"*foo.example\""),
            ("*.", "\"*.\""),
            (".", "empty name"),
        ];
        for (input, needle) in cases {
            let err = NameRule::parse(input).unwrap_err().to_string();
            assert!(err.contains(needle), "{input}: {err}");
            assert!(err.contains(input), "{input}: {err}");
        }
        assert_eq!(NameRule::parse(""), Err(RuleError::Empty));
        let long = format!("{}.example", "a".repeat(64));
        assert!(NameRule::parse(&long).unwrap_err().to_string().contains("1 to 63"));
    }
}
