//! `husk update`: changes a container's resource limits (`docker
//! update`), given as OCI `linux.resources` JSON.

use crate::cli::{GlobalArgs, UpdateArgs};
use crate::oci::state::{StateRoot, Status};
use anyhow::{bail, Context as _};
use husk_sentry::api::boot::control::protocol::Request;
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
    // The sandbox's /sys/fs/cgroup shows the new limits too.
    let cpu_max = resources.cpu().as_ref().and_then(|cpu| {
        let quota = cpu.quota()?;
        let period = cpu.period().filter(|&p| p > 0).unwrap_or(100_000);
        Some(u64::try_from(quota).ok().filter(|&q| q > 0).map(|q| (q, period)))
    });
    let pids_max = resources.pids().as_ref().map(|p| u64::try_from(p.limit()).ok().filter(|&n| n > 0));
    let memory_max =
        resources.memory().as_ref().and_then(|m| m.limit()).map(|l| u64::try_from(l).ok().filter(|&n| n > 0));
    let request = Request::Limits { cpu_max, pids_max, memory_max };
    if let Err(e) = crate::oci::control::call(&c.control_path(), request) {
        log::warn!("the sandbox's cgroup view keeps its old limits: {e}");
    }
    Ok(0)
}
