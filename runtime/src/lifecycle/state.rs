//! `husk state`: a container's OCI state as JSON, with the limits its
//! sandbox met (`limits`: the audit log's `limit.*` records) and, once it
//! stopped, why (`exitReason`: `exited`, `killed`, `oom`, `timeout`, `cpu` …).
//! Both come from the log's file; a container logging to a descriptor
//! (`--audit-log fd:N`) has none the runtime can read back, and its state
//! leaves them out.

use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::state::StateRoot;
use anyhow::Context as _;

pub fn run(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    let mut state = serde_json::to_value(c.oci_state()).context("formatting the state")?;
    // The network it was given: `host` is unfiltered, which an operator
    // looking at a container should not have to guess.
    if let Some(n) = &c.record.network {
        state["network"] = n.as_str().into();
        if n == "host" {
            state["egress"] = "unfiltered".into();
        }
    }
    // Beyond the OCI fields: the limits the sandbox met, and why it ended.
    if let Some(log) = &c.record.audit_log {
        let (limits, reason) = crate::audit_cmd::limit_report(log, &args.id);
        if !limits.is_empty() {
            state["limits"] = limits.into();
        }
        if let Some(r) = reason {
            state["exitReason"] = r.into();
        }
    }
    println!("{}", serde_json::to_string_pretty(&state).context("formatting the state")?);
    Ok(0)
}
