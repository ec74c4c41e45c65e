//! The name half of the egress policy: which names the resolver answers,
//! and which ports a connection to an address learned from a name may use.

use super::rule::{NameRule, RuleError};

/// The ports a name's rules leave open: those of some allow rule that
/// matches the name and of no deny rule that matches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ports {
    allow: Vec<NameRule>,
    deny: Vec<NameRule>,
}

impl Ports {
    /// Whether a connection to `port` is allowed.
    pub fn allows(&self, port: u16) -> bool {
        self.rule_for(port).is_some()
    }

    /// The allow rule that opens `port`, for the connection's record;
    /// `None` when no allow rule has it or a deny rule closes it.
    pub fn rule_for(&self, port: u16) -> Option<&NameRule> {
        if self.deny.iter().any(|r| r.ports.contains(port)) {
            return None;
        }
        self.allow.iter().find(|r| r.ports.contains(port))
    }
}

/// Allow and deny name rules. A name resolves when an allow rule matches
/// it and no port-less deny rule does (deny wins over allow); a deny rule
/// with ports only closes those ports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamePolicy {
    allow: Vec<NameRule>,
    deny: Vec<NameRule>,
}

impl NamePolicy {
    pub fn new(allow: Vec<NameRule>, deny: Vec<NameRule>) -> NamePolicy {
        NamePolicy { allow, deny }
    }

    /// Builds the policy from `--egress-allow` and `--egress-deny` rule
    /// strings, skipping address and CIDR rules (the gateway's); the first
    /// bad name rule is the error.
    pub fn from_rules<'a>(
        allow: impl IntoIterator<Item = &'a str>,
        deny: impl IntoIterator<Item = &'a str>,
    ) -> Result<NamePolicy, RuleError> {
        let parse = |rules: &mut dyn Iterator<Item = &'a str>| -> Result<Vec<NameRule>, RuleError> {
            rules.filter_map(|r| NameRule::parse(r).transpose()).collect()
        };
        Ok(NamePolicy { allow: parse(&mut allow.into_iter())?, deny: parse(&mut deny.into_iter())? })
    }

    /// Whether `name` (presentation form, trailing dot optional) resolves,
    /// and with which ports.
    pub fn ports_for(&self, name: &str) -> Option<Ports> {
        let name = name.strip_suffix('.').unwrap_or(name);
        let labels: Vec<&[u8]> =
            if name.is_empty() { Vec::new() } else { name.split('.').map(str::as_bytes).collect() };
        self.ports_for_labels(&labels)
    }

    /// [`NamePolicy::ports_for`] for a name given as its labels, leftmost
    /// first, without the root label.
    pub(crate) fn ports_for_labels(&self, labels: &[&[u8]]) -> Option<Ports> {
        let matching = |rules: &[NameRule]| -> Vec<NameRule> {
            rules.iter().filter(|r| r.pattern.matches(labels)).cloned().collect()
        };
        let allow = matching(&self.allow);
        let deny = matching(&self.deny);
        if allow.is_empty() || deny.iter().any(|r| r.ports.is_any()) {
            return None;
        }
        Some(Ports { allow, deny })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow: &[&str], deny: &[&str]) -> NamePolicy {
        NamePolicy::from_rules(allow.iter().copied(), deny.iter().copied()).unwrap()
    }

    #[test]
    fn no_allow_rule_allows_nothing() {
        let p = policy(&[], &[]);
        assert_eq!(p.ports_for("api.example"), None);
        assert_eq!(p.ports_for("."), None);
    }

    #[test]
    fn allowed_names_and_their_ports() {
        let p = policy(&["api.example:443", "*.cdn.example:80,443", "10.0.0.0/8"], &[]);
        let ports = p.ports_for("API.Example.").unwrap();
        assert!(ports.allows(443) && !ports.allows(80));
        assert_eq!(ports.rule_for(443).unwrap().to_string(), "api.example:443");
        assert_eq!(ports.rule_for(80), None);
        let ports = p.ports_for("img.cdn.example").unwrap();
        assert!(ports.allows(80) && ports.allows(443) && !ports.allows(22));
        assert_eq!(p.ports_for("cdn.example"), None);
        assert_eq!(p.ports_for("x.api.example"), None);
        assert_eq!(p.ports_for("exfil.example"), None);
    }

    #[test]
    fn ports_of_several_matching_rules_add_up() {
        let p = policy(&["*:443", "api.example:8080"], &[]);
        let ports = p.ports_for("api.example").unwrap();
        assert!(ports.allows(443) && ports.allows(8080) && !ports.allows(80));
        assert_eq!(ports.rule_for(8080).unwrap().to_string(), "api.example:8080");
        assert_eq!(ports.rule_for(443).unwrap().to_string(), "*:443");
        assert!(p.ports_for("other.example").unwrap().allows(443));
    }

    #[test]
    fn deny_wins_over_allow() {
        let p = policy(&["*"], &["*.exfil.example", "ssh.example:22"]);
        assert_eq!(p.ports_for("data.exfil.example"), None);
        assert!(p.ports_for("exfil.example").is_some());
        let ssh = p.ports_for("ssh.example").unwrap();
        assert!(!ssh.allows(22) && ssh.allows(443));
        assert_eq!(ssh.rule_for(22), None);
    }

    #[test]
    fn bad_rules_are_errors() {
        let err = NamePolicy::from_rules(["ok.example", "bad name:80"], []).unwrap_err();
        assert!(err.to_string().contains("\"bad name\""), "{err}");
        let err = NamePolicy::from_rules([], ["ok.example:x"]).unwrap_err();
        assert!(err.to_string().contains("\"x\""), "{err}");
    }
}
