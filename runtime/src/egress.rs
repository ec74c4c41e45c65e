//! The sandbox's network from the global flags (`--network`,
//! `--egress-allow`, `--egress-deny`, `--dns-upstream`, `--egress-policy`,
//! `--egress-max-conns`, `--egress-rate`), checked when a command starts
//! so that a bad rule, file or limit fails at once with the token that is
//! wrong, before any sandbox exists.

use crate::cli::{parse_size, GlobalArgs, NetworkMode};
use anyhow::{bail, Context};
use husk_netstack::dns::{parse_upstream, upstreams_from_resolv_conf, NamePolicy};
use husk_netstack::egress::Policy;
use husk_sentry::api::boot::{EgressConfig, Network};
use husk_sentry::api::fs::egress::{Limits, HOST_SOCKETS};
use husk_sentry::api::fs::inbound::Publish;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::Path;

/// Where the resolver's upstreams come from when no `--dns-upstream` is
/// given: read here, before the sentry leaves the host's root.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// `--egress-max-conns` when the operator gives none.
pub const DEFAULT_MAX_CONNS: u64 = HOST_SOCKETS as u64;

/// The most concurrent connections `--egress-max-conns` may allow: each
/// is a host descriptor of the sentry, whose own limit must hold them.
const MAX_CONNS_CEILING: u64 = 65536;

/// An `--egress-policy` file: the flags' rules and limits in TOML.
/// Unknown keys are errors, so a misspelt `alow` cannot pass for a
/// policy that allows nothing.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PolicyFile {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub dns_upstream: Vec<String>,
    pub max_conns: Option<u64>,
    pub rate: Option<Rate>,
}

/// A rate in a policy file: bytes per second, as a number or with a
/// suffix (`"10M"`).
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Rate {
    Bytes(u64),
    Text(String),
}

impl PolicyFile {
    /// Parses the file's text; `path` names it in errors, which name the
    /// bad token (the key, the rule, the value) and its line.
    pub fn parse(path: &Path, text: &str) -> anyhow::Result<PolicyFile> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| anyhow::anyhow!("{}: {}", path.display(), one_line(&e.to_string())))?;
        let what = |key: &str| format!("{}: {key}", path.display());
        Policy::parse(&file.allow, &file.deny).with_context(|| what("allow/deny"))?;
        for u in &file.dns_upstream {
            parse_upstream(u).with_context(|| what("dns-upstream"))?;
        }
        if let Some(n) = file.max_conns {
            parse_max_conns(&n.to_string()).map_err(anyhow::Error::msg).with_context(|| what("max-conns"))?;
        }
        if let Some(r) = &file.rate {
            r.bytes().map_err(anyhow::Error::msg).with_context(|| what("rate"))?;
        }
        Ok(file)
    }

    /// Reads and parses `path`.
    pub fn read(path: &Path) -> anyhow::Result<PolicyFile> {
        let text = std::fs::read_to_string(path).with_context(|| format!("--egress-policy {}", path.display()))?;
        PolicyFile::parse(path, &text)
    }
}

impl Rate {
    fn bytes(&self) -> Result<u64, String> {
        match self {
            Rate::Bytes(n) => parse_rate(&n.to_string()),
            Rate::Text(t) => parse_rate(t),
        }
    }
}

/// toml's messages quote the offending line over several lines; the
/// runtime's errors are one line.
fn one_line(msg: &str) -> String {
    msg.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "|").collect::<Vec<_>>().join(" ")
}

/// `--egress-max-conns N`: 1 to 65536.
pub fn parse_max_conns(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if (1..=MAX_CONNS_CEILING).contains(&n) => Ok(n),
        _ => Err(format!("{s:?} is not a number of connections (1 to {MAX_CONNS_CEILING})")),
    }
}

/// `--egress-rate RATE`: bytes per second, at least 1K (a smaller rate
/// could not carry one full-sized packet a second).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    match parse_size(s)? {
        n if n >= 1024 => Ok(n),
        _ => Err(format!("{s:?} is too low a rate (at least 1K bytes a second)")),
    }
}

/// The network the flags ask for, or why they are wrong.
pub fn network(g: &GlobalArgs) -> anyhow::Result<Network> {
    let file = g.egress_policy.as_deref().map(PolicyFile::read).transpose()?.unwrap_or_default();
    let allow = [&g.egress_allow[..], &file.allow[..]].concat();
    let deny = [&g.egress_deny[..], &file.deny[..]].concat();
    let policy = Policy::parse(&allow, &deny)?;
    let names = name_policy(&policy)?;
    let limits = limits(g, &file)?;
    match g.network {
        NetworkMode::Sandbox => Ok(Network::Sandbox(EgressConfig {
            policy,
            names,
            upstreams: upstreams(g, &file)?,
            limits,
            unfiltered: false,
        })),
        NetworkMode::None => Ok(Network::None),
        NetworkMode::Host => {
            // Rules would read as a filter that is not there.
            if !(allow.is_empty() && deny.is_empty()) {
                bail!("--network host is unfiltered: it takes no --egress-allow or --egress-deny rules");
            }
            let names = NamePolicy::from_rules(["*"], [])?;
            let upstreams = upstreams(g, &file)?;
            Ok(Network::Sandbox(EgressConfig { policy, names, upstreams, limits, unfiltered: true }))
        }
    }
}

/// `husk do --publish`'s mappings, each checked (a bad one is named), for
/// a network that has a way in.
pub fn publish(g: &GlobalArgs, tokens: &[String]) -> anyhow::Result<Vec<Publish>> {
    if !tokens.is_empty() && g.network == NetworkMode::None {
        bail!("--publish needs a network: --network none takes no connections in");
    }
    tokens.iter().map(|t| Publish::parse(t).map_err(|e| anyhow::anyhow!("--publish {t:?}: {e}"))).collect()
}

/// The lower of a limit set by flag and by file.
fn lower(flag: Option<u64>, file: Option<u64>) -> Option<u64> {
    match (flag, file) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn limits(g: &GlobalArgs, file: &PolicyFile) -> anyhow::Result<Limits> {
    let rate = file.rate.as_ref().map(Rate::bytes).transpose().map_err(anyhow::Error::msg)?;
    let max_conns = fit_max_conns(lower(g.egress_max_conns, file.max_conns), nofile_ceiling())?;
    Ok(Limits { max_conns: usize::try_from(max_conns)?, rate: lower(g.egress_rate, rate) })
}

/// The sentry's host descriptor ceiling: RLIMIT_NOFILE's hard limit,
/// which `husk boot` raises its soft limit to (`raise_nofile`).
fn nofile_ceiling() -> u64 {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct, which `r` is.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return u64::MAX;
    }
    r.rlim_max
}

/// Raises this process's soft RLIMIT_NOFILE to its hard one: the
/// sentry's carried connections are host descriptors, counted by
/// `fit_max_conns` against the hard limit.
pub fn raise_nofile() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct, which `r` is.
    let mut ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    if ok {
        r.rlim_cur = r.rlim_max;
        // SAFETY: setrlimit reads one rlimit struct.
        ok = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } == 0;
    }
    if !ok {
        log::warn!("cannot raise the sentry's descriptor limit: {}", std::io::Error::last_os_error());
    }
}

/// The connections a sandbox may hold at once, given the sentry's
/// descriptor ceiling `hard`: half of it at most, so that a guest
/// holding all its connections leaves the sentry descriptors for its own
/// files and pipes. An explicit limit above that is an error; the
/// default is lowered to it.
fn fit_max_conns(asked: Option<u64>, hard: u64) -> anyhow::Result<u64> {
    let room = hard / 2;
    match asked {
        Some(n) if n > room => bail!(
            "--egress-max-conns {n}: the sentry may hold {hard} descriptors (RLIMIT_NOFILE), and its connections at most half of them ({room})"
        ),
        Some(n) => Ok(n),
        None => Ok(default_max_conns(hard)),
    }
}

/// The limit without `--egress-max-conns`, given the sentry's descriptor
/// ceiling `hard`: the default lowered to fit half of it.
fn default_max_conns(hard: u64) -> u64 {
    DEFAULT_MAX_CONNS.min(hard / 2).max(1)
}

/// The connection limit a container's annotation asking for `n` gets:
/// never above the operator's `--egress-max-conns` or, without one, the
/// default that fits this host (`fit_max_conns` refuses more).
pub fn annotated_max_conns(n: u64, operator: Option<u64>) -> u64 {
    cap_max_conns(n, operator, nofile_ceiling())
}

fn cap_max_conns(n: u64, operator: Option<u64>, hard: u64) -> u64 {
    n.min(operator.unwrap_or_else(|| default_max_conns(hard)))
}

/// The resolver's half of the rules: those naming hosts by DNS name, and
/// `*` (any name).
fn name_policy(policy: &Policy) -> anyhow::Result<NamePolicy> {
    let texts = |rules: &[husk_netstack::egress::Rule]| rules.iter().map(|r| r.text.clone()).collect::<Vec<_>>();
    let (allow, deny) = (texts(policy.allow_rules()), texts(policy.deny_rules()));
    Ok(NamePolicy::from_rules(allow.iter().map(String::as_str), deny.iter().map(String::as_str))?)
}

/// `--dns-upstream` values and the policy file's, or the nameservers of
/// /etc/resolv.conf (none when it cannot be read: allowed names then
/// fail with SERVFAIL).
fn upstreams(g: &GlobalArgs, file: &PolicyFile) -> anyhow::Result<Vec<SocketAddr>> {
    let given = [&g.dns_upstream[..], &file.dns_upstream[..]].concat();
    if !given.is_empty() {
        return given.iter().map(|u| parse_upstream(u).context("--dns-upstream")).collect();
    }
    match std::fs::read_to_string(RESOLV_CONF) {
        Ok(text) => Ok(upstreams_from_resolv_conf(&text)),
        Err(e) => {
            log::warn!("no DNS upstream: reading {RESOLV_CONF}: {e}");
            Ok(Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<PolicyFile> {
        PolicyFile::parse(Path::new("p.toml"), text)
    }

    fn error(text: &str) -> String {
        format!("{:#}", parse(text).unwrap_err())
    }

    #[test]
    fn a_policy_file_holds_the_flags_rules_and_limits() {
        let f = parse(
            "allow = [\"api.test:8080\", \"198.18.0.0/15:80,443\"]\n\
             deny = [\"*.evil.test\"]\n\
             dns-upstream = [\"198.18.0.2\"]\n\
             max-conns = 16\n\
             rate = \"10M\"\n",
        )
        .unwrap();
        assert_eq!(f.allow, ["api.test:8080", "198.18.0.0/15:80,443"]);
        assert_eq!(f.deny, ["*.evil.test"]);
        assert_eq!(f.dns_upstream, ["198.18.0.2"]);
        assert_eq!(f.max_conns, Some(16));
        assert_eq!(f.rate.unwrap().bytes(), Ok(10 << 20));
        assert_eq!(parse("rate = 65536").unwrap().rate.unwrap().bytes(), Ok(65536));
        assert_eq!(parse("").unwrap(), PolicyFile::default(), "an empty file allows nothing");
    }

    #[test]
    fn a_malformed_policy_file_is_refused_naming_the_bad_token() {
        for (text, token) in [
            ("alow = [\"x.test\"]", "alow"),
            ("allow = [\"198.18.0.2:0\"]", "\"0\""),
            ("deny = [\"bad!host\"]", "\"bad!host\""),
            ("allow = \"api.test\"", "allow"),
            ("allow = [1]", "allow"),
            ("dns-upstream = [\"not an address\"]", "not an address"),
            ("max-conns = 0", "\"0\""),
            ("max-conns = -3", "max-conns"),
            ("max-conns = 100000", "\"100000\""),
            ("rate = \"10Q\"", "\"Q\""),
            ("rate = \"12\"", "\"12\""),
            ("rate = true", "rate"),
            ("allow = [\"a.test\"", "allow"),
            ("[egress]\nallow = []", "egress"),
        ] {
            let e = error(text);
            assert!(e.contains(token), "{text}: {token} not named in {e}");
            assert!(e.starts_with("p.toml"), "{text}: the file is not named: {e}");
            assert!(!e.contains('\n'), "{text}: not one line: {e}");
        }
    }

    #[test]
    fn of_a_limit_in_both_the_flag_and_the_file_the_lower_holds() {
        assert_eq!(lower(Some(5), Some(9)), Some(5));
        assert_eq!(lower(Some(9), Some(5)), Some(5));
        assert_eq!(lower(None, Some(5)), Some(5));
        assert_eq!(lower(Some(5), None), Some(5));
        assert_eq!(lower(None, None), None);
    }

    #[test]
    fn connections_leave_the_sentry_half_its_descriptors() {
        assert_eq!(fit_max_conns(None, 1 << 20).unwrap(), DEFAULT_MAX_CONNS);
        assert_eq!(fit_max_conns(None, 1024).unwrap(), 512, "the default lowered to fit");
        assert_eq!(fit_max_conns(Some(4000), 8192).unwrap(), 4000);
        let e = fit_max_conns(Some(4000), 4096).unwrap_err().to_string();
        assert!(e.contains("--egress-max-conns 4000") && e.contains("2048"), "{e}");
        assert_eq!(fit_max_conns(Some(9), u64::MAX).unwrap(), 9, "no limit at all");
        // A container's annotation is held below what fit_max_conns takes.
        for (n, operator, hard, want) in [(900, None, 1024, 512), (8, None, 1024, 8), (900, Some(100), 1024, 100)] {
            let capped = cap_max_conns(n, operator, hard);
            assert_eq!(capped, want);
            assert_eq!(fit_max_conns(Some(capped), hard).unwrap(), want);
        }
    }

    #[test]
    fn limit_flags_take_sane_values_only() {
        assert_eq!(parse_max_conns("1"), Ok(1));
        assert!(parse_max_conns("0").unwrap_err().contains("\"0\""));
        assert!(parse_max_conns("ten").unwrap_err().contains("\"ten\""));
        assert_eq!(parse_rate("1M"), Ok(1 << 20));
        assert_eq!(parse_rate("1k"), Ok(1024));
        assert!(parse_rate("100").unwrap_err().contains("\"100\""));
        assert!(parse_rate("1X").unwrap_err().contains("\"X\""));
    }
}
