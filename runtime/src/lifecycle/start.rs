//! `husk start`: lets a created container's process run.

use super::{run_hooks, HookStage};
use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::bundle::Bundle;
use crate::oci::control;
use crate::oci::state::{Container, StateRoot, Status};
use anyhow::bail;
use husk_sentry::api::boot::control::protocol::Request;

pub fn run(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    let mut c = StateRoot::new(&g.root).open(&args.id)?;
    start(&mut c)?;
    match Bundle::load(&c.record.bundle) {
        Ok(bundle) => poststart(&c, &bundle),
        Err(e) => log::warn!("poststart hooks not run: {e}"),
    }
    Ok(0)
}

/// Releases the container process and records that it runs.
pub fn start(c: &mut Container) -> anyhow::Result<()> {
    match c.status() {
        Status::Created => {}
        s => bail!("cannot start a container in the {s} state"),
    }
    control::call(&c.control_path(), Request::Start)?;
    c.record.started = true;
    c.save()?;
    Ok(())
}

/// Runs the poststart hooks; their failure is only logged (runtime-spec).
pub fn poststart(c: &Container, bundle: &Bundle) {
    if let Err(e) = run_hooks(c, bundle, HookStage::Poststart) {
        log::warn!("{e}");
    }
}
