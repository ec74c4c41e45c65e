//! `husk update`: changes a container's resource limits (`docker
//! update`), given as OCI `linux.resources` JSON.

use crate::cli::{GlobalArgs, UpdateArgs};
use crate::oci::state::{StateRoot, Status};
use anyhow::{bail, Context as _};
use oci_spec::runtime::LinuxResources;
use std::io::Read as _;

pub fn run(g: &GlobalArgs, args: UpdateArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    if c.status() == Status::Stopped {
        bail!("container not running");
    }
    let text = match args.resources.as_deref() {
        Some("-") => {
            let mut t = String::new();
            std::io::stdin().read_to_string(&mut t).context("reading resources from stdin")?;
            t
        }
        Some(path) => std::fs::read_to_string(path).with_context(|| path.to_string())?,
        None => bail!("nothing to update: give --resources FILE (or - for stdin)"),
    };
    let resources: LinuxResources = crate::oci::json::parse("resources", &text)?;
    let cgroup = c.cgroup().context("the container has no cgroup")?;
    cgroup.apply(&resources)?;
    Ok(0)
}
