//! `husk install` / `husk uninstall`: register husk as a Docker runtime in
//! daemon.json, keeping every other setting, written atomically.

use crate::cli::{InstallArgs, UninstallArgs};
use crate::oci::state::write_atomically;
use anyhow::{bail, Context as _};
use serde_json::{Map, Value};
use std::path::Path;

fn load(path: &Path) -> anyhow::Result<Map<String, Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
        Err(e) => return Err(e).with_context(|| format!("{}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match crate::oci::json::parse(path.display(), &text)? {
        Value::Object(m) => Ok(m),
        _ => bail!("{}: not a JSON object", path.display()),
    }
}

fn save(path: &Path, config: &Map<String, Value>) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let mut json = serde_json::to_vec_pretty(config)?;
    json.push(b'\n');
    write_atomically(path, &json)?;
    Ok(())
}

const RELOAD: &str = "Reload dockerd to apply it: kill -HUP $(pidof dockerd) (or systemctl reload docker).";

pub fn install(args: InstallArgs) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("locating the husk binary")?;
    let mut config = load(&args.config)?;
    let runtimes = config.entry("runtimes").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(runtimes) = runtimes else {
        bail!("{}: \"runtimes\" is not an object", args.config.display());
    };
    let mut entry = Map::new();
    entry.insert("path".into(), Value::String(exe.to_string_lossy().into_owned()));
    if !args.flags.is_empty() {
        entry.insert("runtimeArgs".into(), Value::Array(args.flags.iter().cloned().map(Value::String).collect()));
    }
    runtimes.insert(args.runtime.clone(), Value::Object(entry));
    save(&args.config, &config)?;
    println!("Added runtime \"{}\" ({}) to {}.", args.runtime, exe.display(), args.config.display());
    println!("{RELOAD}");
    Ok(0)
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<i32> {
    let mut config = load(&args.config)?;
    let removed = match config.get_mut("runtimes") {
        Some(Value::Object(r)) => {
            let removed = r.remove(&args.runtime).is_some();
            if r.is_empty() {
                config.remove("runtimes");
            }
            removed
        }
        _ => false,
    };
    if !removed {
        bail!("runtime \"{}\" is not in {}", args.runtime, args.config.display());
    }
    save(&args.config, &config)?;
    println!("Removed runtime \"{}\" from {}.", args.runtime, args.config.display());
    println!("{RELOAD}");
    Ok(0)
}
