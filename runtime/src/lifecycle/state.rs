//! `husk state`: a container's OCI state as JSON.

use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::state::StateRoot;
use anyhow::Context as _;

pub fn run(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    println!("{}", serde_json::to_string_pretty(&c.oci_state()).context("formatting the state")?);
    Ok(0)
}
