//! A sandbox's egress policy: allow and deny rules and the verdict for a
//! destination.

use super::reserved::{canonical, reserved};
use super::rule::{Host, Rule, RuleError};
use std::fmt;
use std::net::SocketAddr;

/// Allow and deny rules. Deny wins over allow; no allow rule means no
/// egress at all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

/// Why a destination was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// A deny rule matched (its text).
    Rule(String),
    /// The address lies in a reserved range (`why`: "cloud metadata",
    /// "private" …) that no allow rule names.
    Reserved { block: String, why: &'static str },
    /// No allow rule covers the destination.
    NoAllowRule,
}

/// The policy's decision on one destination, with what decided it (for
/// flow records and messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed by the allow rule `rule` (its text).
    Allowed {
        rule: String,
    },
    Denied(Denial),
}

impl Verdict {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed { .. })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Allowed { rule } => write!(f, "allowed by {rule:?}"),
            Verdict::Denied(Denial::Rule(rule)) => write!(f, "denied by {rule:?}"),
            Verdict::Denied(Denial::Reserved { block, why }) => write!(f, "denied: {block} is {why}"),
            Verdict::Denied(Denial::NoAllowRule) => f.write_str("denied: no allow rule matches"),
        }
    }
}

/// The rules of every flag value, in order.
fn rules<S: AsRef<str>>(flags: &[S]) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    for f in flags {
        rules.extend(Rule::parse_list(f.as_ref())?);
    }
    Ok(rules)
}

impl Policy {
    /// A policy from flag values: each a rule or a comma list of rules.
    pub fn parse<A: AsRef<str>, D: AsRef<str>>(allow: &[A], deny: &[D]) -> Result<Policy, RuleError> {
        Ok(Policy { allow: rules(allow)?, deny: rules(deny)? })
    }

    pub fn allow_rules(&self) -> &[Rule] {
        &self.allow
    }

    pub fn deny_rules(&self) -> &[Rule] {
        &self.deny
    }

    /// The verdict on a connection or datagram to `dest` by address
    /// alone (names are the resolver's). The address is judged in its
    /// IPv4 form when it spells one (v4-mapped, NAT64). A reserved range
    /// is open only to an allow rule whose block lies inside it: neither
    /// `*` nor a wider block (`0.0.0.0/0`) opens it.
    pub fn check(&self, dest: SocketAddr) -> Verdict {
        let ip = canonical(dest.ip());
        let port = dest.port();
        if let Some(rule) = self.deny.iter().find(|r| r.covers_addr(ip) && r.covers_port(port)) {
            return Verdict::Denied(Denial::Rule(rule.text.clone()));
        }
        let reserved = reserved(ip);
        let opens = |r: &&Rule| match (&r.host, reserved) {
            (_, None) => r.covers_addr(ip),
            (Host::Net(c), Some((block, _))) => c.contains(ip) && block.covers(c),
            _ => false,
        };
        match self.allow.iter().filter(|r| r.covers_port(port)).find(opens) {
            Some(rule) => Verdict::Allowed { rule: rule.text.clone() },
            None => match reserved {
                Some((block, why)) if self.allow.iter().any(|r| r.covers_addr(ip)) => {
                    Verdict::Denied(Denial::Reserved { block: block.to_string(), why })
                }
                _ => Verdict::Denied(Denial::NoAllowRule),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        Policy::parse(allow, deny).unwrap()
    }

    fn check(p: &Policy, dest: &str) -> Verdict {
        p.check(dest.parse().unwrap())
    }

    fn reserved_denial(v: &Verdict) -> Option<&'static str> {
        match v {
            Verdict::Denied(Denial::Reserved { why, .. }) => Some(why),
            _ => None,
        }
    }

    #[test]
    fn nothing_is_allowed_without_an_allow_rule() {
        let p = policy(&[], &[]);
        assert_eq!(check(&p, "198.18.0.2:8080"), Verdict::Denied(Denial::NoAllowRule));
        assert_eq!(check(&p, "[2001:db8::1]:443"), Verdict::Denied(Denial::NoAllowRule));
    }

    #[test]
    fn an_allow_rule_covers_its_address_and_ports_only() {
        let p = policy(&["198.18.0.2:8080"], &[]);
        assert_eq!(check(&p, "198.18.0.2:8080"), Verdict::Allowed { rule: "198.18.0.2:8080".into() });
        assert!(!check(&p, "198.18.0.2:8081").is_allowed());
        assert!(!check(&p, "198.18.0.3:8080").is_allowed());
        assert!(check(&p, "[::ffff:198.18.0.2]:8080").is_allowed(), "the v4-mapped spelling is the same host");
    }

    #[test]
    fn deny_wins_over_allow_and_says_which_rule() {
        let p = policy(&["*"], &["198.18.0.0/15:22"]);
        assert!(check(&p, "198.18.0.2:80").is_allowed());
        assert_eq!(check(&p, "198.18.0.2:22"), Verdict::Denied(Denial::Rule("198.18.0.0/15:22".into())));
        assert_eq!(check(&p, "[64:ff9b::c612:2]:22"), Verdict::Denied(Denial::Rule("198.18.0.0/15:22".into())));
    }

    #[test]
    fn reserved_ranges_stay_denied_under_any_and_everything() {
        for allow in ["*", "0.0.0.0/0", "::ffff:0.0.0.0/96"] {
            let p = policy(&[allow, "::/0"], &[]);
            for dest in [
                "169.254.169.254:80",
                "[::ffff:169.254.169.254]:80",
                "[64:ff9b::a9fe:a9fe]:80",
                "[fd00:ec2::254]:80",
                "[fe80::1]:80",
                "127.0.0.1:80",
                "[::1]:80",
                "10.1.2.3:80",
                "172.16.0.1:80",
                "192.168.0.1:80",
                "100.64.0.1:80",
                "[fc00::1]:80",
                "0.0.0.0:80",
                "224.0.0.1:80",
                "[ff02::1]:80",
                "255.255.255.255:80",
            ] {
                let v = check(&p, dest);
                assert!(!v.is_allowed(), "{allow} {dest}: {v}");
            }
            assert!(check(&p, "8.8.8.8:53").is_allowed(), "{allow}");
        }
        let any = policy(&["*"], &[]);
        assert_eq!(reserved_denial(&check(&any, "169.254.169.254:80")), Some("cloud metadata"));
        assert_eq!(reserved_denial(&check(&any, "[::ffff:10.0.0.1]:80")), Some("private"));
    }

    #[test]
    fn a_rule_naming_a_reserved_range_opens_it() {
        let p = policy(&["10.0.0.0/8:5432", "169.254.169.254"], &[]);
        assert!(check(&p, "10.9.9.9:5432").is_allowed());
        assert!(!check(&p, "10.9.9.9:80").is_allowed());
        assert!(check(&p, "169.254.169.254:80").is_allowed());
        assert!(check(&p, "[::ffff:10.1.1.1]:5432").is_allowed());
        // A block wider than the range does not name it.
        let wide = policy(&["8.0.0.0/5"], &[]);
        assert!(!check(&wide, "10.0.0.1:80").is_allowed());
        // Nor does a deny rule ever allow.
        let p = policy(&["10.0.0.0/8"], &["10.0.0.5"]);
        assert!(!check(&p, "10.0.0.5:1").is_allowed());
    }

    #[test]
    fn name_rules_allow_no_address() {
        let p = policy(&["api.example:443", "1.2.3.4"], &["*.evil.example"]);
        assert!(!check(&p, "5.6.7.8:443").is_allowed());
        assert!(check(&p, "1.2.3.4:443").is_allowed());
    }

    #[test]
    fn flags_may_carry_comma_lists_and_bad_ones_name_their_token() {
        let p = policy(&["1.2.3.4:80,443,5.6.7.8"], &[]);
        assert_eq!(p.allow_rules().len(), 2);
        assert!(check(&p, "1.2.3.4:443").is_allowed());
        assert!(check(&p, "5.6.7.8:9").is_allowed());
        assert_eq!(Policy::parse(&["1.2.3.4"], &["nope!"]).unwrap_err().token, "nope!");
    }
}
