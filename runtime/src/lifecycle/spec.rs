//! `husk spec`: writes a default config.json (runc's defaults, without a
//! terminal) for a bundle whose root filesystem is `rootfs`.

use crate::cli::{GlobalArgs, SpecArgs};
use anyhow::{bail, Context as _};
use oci_spec::runtime::Spec;

pub fn run(_: &GlobalArgs, args: SpecArgs) -> anyhow::Result<i32> {
    let path = args.bundle.join("config.json");
    if path.exists() {
        bail!("{} already exists; remove it first", path.display());
    }
    let mut spec = Spec::default();
    if let Some(p) = spec.process_mut() {
        p.set_terminal(Some(false));
    }
    let json = serde_json::to_string_pretty(&spec).context("formatting the spec")?;
    std::fs::write(&path, json + "\n").with_context(|| format!("{}", path.display()))?;
    Ok(0)
}
