//! `husk pause` / `husk resume`: freeze and thaw every process of the
//! sandbox (sentry, stubs, gofer) with the cgroup freezer. Guest timers
//! run on the host's clocks, so none is lost: those due while frozen fire
//! on resume.
//!
//! The sentry keeps the audit log's chain in memory, so the runtime never
//! appends to it while the sentry lives: it asks the sentry to write
//! `sandbox.pause` (synced) before freezing, and `sandbox.resume` after
//! thawing.

use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::control;
use crate::oci::state::{StateRoot, Status};
use anyhow::{bail, Context as _};
use husk_sentry::api::boot::control::protocol::Request;

pub fn pause(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    set_frozen(g, &args.id, true)
}

pub fn resume(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    set_frozen(g, &args.id, false)
}

fn set_frozen(g: &GlobalArgs, id: &str, frozen: bool) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(id)?;
    match (c.status(), frozen) {
        (Status::Running, true) | (Status::Paused, false) => {}
        (s, true) => bail!("cannot pause a {s} container"),
        (s, false) => bail!("cannot resume a {s} container"),
    }
    let cgroup = c.cgroup().context("the container has no cgroup to freeze")?;
    if frozen {
        // A log that cannot take the record (failing closed) stops the
        // pause: nothing is frozen that the log does not show.
        control::call(&c.control_path(), Request::Pausing).context("recording sandbox.pause")?;
        if let Err(e) = cgroup.freeze(true) {
            // Not frozen after all: thaw what was, and let the log say the
            // sandbox runs again.
            if let Err(e) = cgroup.freeze(false) {
                log::warn!("{e}");
            }
            if let Err(e) = control::call(&c.control_path(), Request::Resumed) {
                log::warn!("recording sandbox.resume: {e}");
            }
            return Err(e.into());
        }
    } else {
        cgroup.freeze(false)?;
        control::call(&c.control_path(), Request::Resumed).context("recording sandbox.resume")?;
    }
    Ok(0)
}
