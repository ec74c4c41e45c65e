//! The egress policy: which destinations outside the sandbox a guest may
//! reach (ARCHITECTURE.md §5). Deny by default: a destination is allowed
//! only when an allow rule matches it and no deny rule does, and the
//! reserved ranges (cloud metadata, link-local, the outer namespace's
//! loopback, private networks, multicast, broadcast) stay denied even
//! under `*` unless a CIDR rule names the range itself. Rules naming a
//! host by DNS name are parsed and kept for the resolver, which is what
//! can tell which addresses a name stands for.

mod cidr;
mod policy;
mod reserved;
mod rule;

pub use cidr::Cidr;
pub use policy::{Denial, Policy, Verdict};
pub use reserved::canonical;
pub use rule::{Host, PortRange, Rule, RuleError};
