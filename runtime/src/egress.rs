//! The sandbox's network from the global flags (`--network`,
//! `--egress-allow`, `--egress-deny`, `--dns-upstream`), checked when a
//! command starts so that a bad rule fails at once with the token that is
//! wrong, before any sandbox exists.

use crate::cli::{GlobalArgs, NetworkMode};
use anyhow::{bail, Context};
use husk_netstack::dns::{parse_upstream, upstreams_from_resolv_conf, NamePolicy};
use husk_netstack::egress::Policy;
use husk_sentry::boot::{EgressConfig, Network};
use std::net::SocketAddr;

/// Where the resolver's upstreams come from when no `--dns-upstream` is
/// given: read here, before the sentry leaves the host's root.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The network the flags ask for, or why they are wrong.
pub fn network(g: &GlobalArgs) -> anyhow::Result<Network> {
    let policy = Policy::parse(&g.egress_allow, &g.egress_deny)?;
    let names = name_policy(&policy)?;
    match g.network {
        NetworkMode::Sandbox => Ok(Network::Sandbox(EgressConfig { policy, names, upstreams: upstreams(g)? })),
        NetworkMode::None => Ok(Network::None),
        NetworkMode::Host => bail!("--network host is not supported yet"),
    }
}

/// The resolver's half of the rules: those naming hosts by DNS name, and
/// `*` (any name).
fn name_policy(policy: &Policy) -> anyhow::Result<NamePolicy> {
    let texts = |rules: &[husk_netstack::egress::Rule]| rules.iter().map(|r| r.text.clone()).collect::<Vec<_>>();
    let (allow, deny) = (texts(policy.allow_rules()), texts(policy.deny_rules()));
    Ok(NamePolicy::from_rules(allow.iter().map(String::as_str), deny.iter().map(String::as_str))?)
}

/// `--dns-upstream` values, or the nameservers of /etc/resolv.conf (none
/// when it cannot be read: allowed names then fail with SERVFAIL).
fn upstreams(g: &GlobalArgs) -> anyhow::Result<Vec<SocketAddr>> {
    if !g.dns_upstream.is_empty() {
        return g.dns_upstream.iter().map(|u| parse_upstream(u).context("--dns-upstream")).collect();
    }
    match std::fs::read_to_string(RESOLV_CONF) {
        Ok(text) => Ok(upstreams_from_resolv_conf(&text)),
        Err(e) => {
            log::warn!("no DNS upstream: reading {RESOLV_CONF}: {e}");
            Ok(Vec::new())
        }
    }
}
