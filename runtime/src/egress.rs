//! The sandbox's network from the global flags (`--network`,
//! `--egress-allow`, `--egress-deny`), checked when a command starts so
//! that a bad rule fails at once with the token that is wrong, before any
//! sandbox exists.

use crate::cli::{GlobalArgs, NetworkMode};
use anyhow::bail;
use husk_netstack::egress::Policy;
use husk_sentry::boot::Network;

/// The network the flags ask for, or why they are wrong.
pub fn network(g: &GlobalArgs) -> anyhow::Result<Network> {
    let policy = Policy::parse(&g.egress_allow, &g.egress_deny)?;
    if let Some(rule) = policy.name_rules().next() {
        bail!("egress rule {:?}: DNS names in rules are not supported yet", rule.text);
    }
    match g.network {
        NetworkMode::Sandbox => Ok(Network::Sandbox(policy)),
        NetworkMode::None => Ok(Network::None),
        NetworkMode::Host => bail!("--network host is not supported yet"),
    }
}
