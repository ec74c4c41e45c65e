//! `husk pause` / `husk resume`: freeze and thaw every process of the
//! sandbox (sentry, stubs, gofer) with the cgroup freezer. Guest timers
//! run on the host's clocks, so none is lost: those due while frozen fire
//! on resume.

use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::state::{StateRoot, Status};
use anyhow::{bail, Context as _};

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
    cgroup.freeze(frozen)?;
    Ok(0)
}
