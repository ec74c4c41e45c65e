//! The sandbox's filtering DNS resolver (ARCHITECTURE.md §5).
//!
//! The guest's `/etc/resolv.conf` names this resolver. It answers only the
//! names the egress policy allows, by forwarding them to the upstream
//! servers, and NXDOMAIN for every other name without asking anyone, so a
//! query for `<data>.exfil.example` never leaves the sandbox. The upstream
//! is asked a query built afresh (its own ID, the lowercase name, no
//! options of the guest's), and its answer must match that query before
//! any of it reaches the guest. The A/AAAA addresses of allowed answers
//! are remembered for their TTL, so the gateway can let a connection to an
//! address through because an allowed name resolved to it.
//!
//! Messages are read and written by `hickory-proto`; the upstream exchange
//! is the caller's [`Transport`], so the resolver neither opens sockets nor
//! picks the thread that waits.

mod policy;
mod resolver;
mod rule;
mod table;
mod upstream;
mod wire;

#[cfg(test)]
mod tests;

pub use policy::{NamePolicy, Ports};
pub use resolver::{
    Answered, Config, Pending, Proto, QueryRecord, Reply, Resolver, Step, Transport, TransportError, Verdict,
};
pub use rule::{NamePattern, NameRule, PortSet, RuleError};
pub use upstream::{parse_upstream, upstreams_from_resolv_conf, UpstreamError};
pub use wire::{MAX_TCP_MESSAGE, MAX_UDP_ANSWER};
