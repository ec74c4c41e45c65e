//! `husk run`: create and start a container; unless detached, wait for it,
//! delete it and exit with its status.

use super::create::{create, Created};
use super::delete::delete;
use super::start::{poststart, start};
use crate::cli::{GlobalArgs, RunArgs};
use crate::oci::state::{Container, StateRoot};
use crate::sandbox::{exit_code, forward_signals};
use anyhow::Context as _;

pub fn run(g: &GlobalArgs, args: RunArgs) -> anyhow::Result<i32> {
    let Created { mut container, bundle, mut sandbox } = create(g, &args.create)?;
    if let Err(e) = start(&mut container) {
        delete_recorded(container);
        return Err(e);
    }
    poststart(&container, &bundle);
    if args.detach {
        return Ok(0);
    }
    // Other commands (state, exec, kill) must not wait for our lock.
    drop(container);
    let gofers: Vec<u32> = sandbox.gofers.iter().map(std::process::Child::id).collect();
    let timed_out = forward_signals(sandbox.sentry.id(), &gofers, true, g.kill_grace())?;
    let status = sandbox.sentry.wait().context("waiting for the sentry")?;
    let log = crate::audit_cmd::container_log_path(g, &args.create.id);
    crate::audit_cmd::close_if_killed(log.as_deref(), status, &timed_out);
    for gofer in &mut sandbox.gofers {
        let _ = gofer.wait();
    }
    // Someone may have deleted it meanwhile.
    match StateRoot::new(&g.root).open(&args.create.id) {
        Ok(c) => delete_recorded(c),
        Err(e) => log::debug!("{e}"),
    }
    Ok(exit_code(status))
}

/// Deletes the container as `husk delete` does, its log (when a file)
/// ending with `sandbox.delete` once the sentry is gone.
fn delete_recorded(c: Container) {
    let log = c.record.audit_log.clone();
    delete(c);
    if let Some(log) = log {
        crate::audit_cmd::record_delete(&log, false);
    }
}
