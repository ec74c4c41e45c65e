//! `husk list`: the containers under --root.

use crate::cli::{GlobalArgs, ListArgs, ListFormat};
use crate::oci::state::StateRoot;
use anyhow::Context as _;

pub fn run(g: &GlobalArgs, args: ListArgs) -> anyhow::Result<i32> {
    let root = StateRoot::new(&g.root);
    let containers: Vec<_> =
        root.ids()?.iter().filter_map(|id| root.open(id).map_err(|e| log::warn!("{e}")).ok()).collect();
    if args.quiet {
        for c in &containers {
            println!("{}", c.record.id);
        }
        return Ok(0);
    }
    match args.format {
        ListFormat::Json => {
            let states: Vec<_> = containers.iter().map(|c| c.oci_state()).collect();
            println!("{}", serde_json::to_string(&states).context("formatting the list")?);
        }
        ListFormat::Table => {
            println!("{:<24} {:<8} {:<8} {:<40} CREATED", "ID", "PID", "STATUS", "BUNDLE");
            for c in &containers {
                let s = c.oci_state();
                println!("{:<24} {:<8} {:<8} {:<40} {}", s.id, s.pid, s.status, s.bundle.display(), s.created);
            }
        }
    }
    Ok(0)
}
