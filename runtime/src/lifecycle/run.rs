//! `husk run`: create and start a container; unless detached, wait for it,
//! delete it and exit with its status.

use super::create::create;
use super::delete::delete;
use super::start::{poststart, start};
use crate::cli::{GlobalArgs, RunArgs};
use crate::sandbox::{exit_code, forward_signals};
use anyhow::Context as _;

pub fn run(g: &GlobalArgs, args: RunArgs) -> anyhow::Result<i32> {
    let mut created = create(g, &args.create)?;
    if let Err(e) = start(&mut created.container) {
        delete(created.container);
        return Err(e);
    }
    poststart(&created.container, &created.bundle);
    if args.detach {
        return Ok(0);
    }
    let sandbox = &mut created.sandbox;
    forward_signals(sandbox.sentry.id(), true)?;
    let status = sandbox.sentry.wait().context("waiting for the sentry")?;
    for gofer in &mut sandbox.gofers {
        let _ = gofer.wait();
    }
    delete(created.container);
    Ok(exit_code(status))
}
