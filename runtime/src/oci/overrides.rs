//! Per-container flag overrides: the annotation `dev.husk.flag.NAME=VALUE`
//! sets husk's flag NAME for one container (as runsc's `dev.gvisor.flag.*`
//! do), but only when the operator allows it with --allow-flag-override;
//! otherwise such annotations are ignored with a warning.

use crate::cli::GlobalArgs;
use std::collections::HashMap;

pub const PREFIX: &str = "dev.husk.flag.";
/// The flags a container may set for itself.
type Flag = fn(&mut GlobalArgs) -> &mut bool;
const OVERRIDABLE: &[(&str, Flag)] = &[("debug", |g| &mut g.debug), ("strace", |g| &mut g.strace)];
/// The flags with a value a container may set for itself: each parses the
/// annotation's value into the flags.
type ValueFlag = fn(&mut GlobalArgs, &str) -> Result<(), String>;
const OVERRIDABLE_VALUES: &[(&str, ValueFlag)] = &[("disk-limit", |g, v| {
    g.disk_limit = Some(crate::cli::parse_size(v)?);
    Ok(())
})];

fn names() -> String {
    let all = OVERRIDABLE.iter().map(|(n, _)| *n).chain(OVERRIDABLE_VALUES.iter().map(|(n, _)| *n));
    all.collect::<Vec<_>>().join(", ")
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OverrideError {
    #[error("annotation {PREFIX}{0}: no such flag (overridable: {list})", list = names())]
    Unknown(String),
    #[error("annotation {PREFIX}{0}: {1:?} is not true or false")]
    Value(String, String),
    #[error("annotation {PREFIX}{0}: {1}")]
    BadValue(String, String),
}

/// The global flags for a container with `annotations`.
pub fn apply(g: &GlobalArgs, annotations: &HashMap<String, String>) -> Result<GlobalArgs, OverrideError> {
    let mut out = g.clone();
    let mut names: Vec<(&str, &str)> =
        annotations.iter().filter_map(|(k, v)| Some((k.strip_prefix(PREFIX)?, v.as_str()))).collect();
    names.sort_unstable();
    for (name, value) in names {
        if crate::secrets::FLAG_ANNOTATIONS.contains(&name) {
            continue; // `secrets::apply_annotations` takes them.
        }
        if !g.allow_flag_override {
            log::warn!("annotation {PREFIX}{name} ignored: the operator did not pass --allow-flag-override");
            continue;
        }
        if let Some((_, set)) = OVERRIDABLE_VALUES.iter().find(|(n, _)| *n == name) {
            set(&mut out, value).map_err(|e| OverrideError::BadValue(name.into(), e))?;
            continue;
        }
        let Some((_, flag)) = OVERRIDABLE.iter().find(|(n, _)| *n == name) else {
            return Err(OverrideError::Unknown(name.into()));
        };
        *flag(&mut out) = match value {
            "true" => true,
            "false" => false,
            other => return Err(OverrideError::Value(name.into(), other.into())),
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn globals(args: &[&str]) -> GlobalArgs {
        let mut argv = vec!["husk"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["state", "x"]);
        crate::cli::Cli::parse_from(argv).global
    }

    fn notes(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn overrides_need_the_operators_consent() {
        let a = notes(&[("dev.husk.flag.strace", "true"), ("other", "x")]);
        assert!(!apply(&globals(&[]), &a).unwrap().strace);
        assert!(apply(&globals(&["--allow-flag-override"]), &a).unwrap().strace);
        let off = notes(&[("dev.husk.flag.debug", "false")]);
        assert!(!apply(&globals(&["--allow-flag-override", "--debug"]), &off).unwrap().debug);
    }

    #[test]
    fn unknown_flags_and_values_are_refused() {
        let g = globals(&["--allow-flag-override"]);
        let bad = notes(&[("dev.husk.flag.root", "/tmp")]);
        assert_eq!(apply(&g, &bad).err(), Some(OverrideError::Unknown("root".into())));
        let bad = notes(&[("dev.husk.flag.strace", "yes")]);
        assert_eq!(apply(&g, &bad).err(), Some(OverrideError::Value("strace".into(), "yes".into())));
        let bad = notes(&[("dev.husk.flag.disk-limit", "lots")]);
        assert!(matches!(apply(&g, &bad), Err(OverrideError::BadValue(..))));
    }

    #[test]
    fn a_container_may_set_its_disk_limit() {
        let a = notes(&[("dev.husk.flag.disk-limit", "64M")]);
        assert_eq!(apply(&globals(&["--allow-flag-override"]), &a).unwrap().disk_limit, Some(64 << 20));
        assert_eq!(apply(&globals(&["--disk-limit", "1G"]), &a).unwrap().disk_limit, Some(1 << 30), "not allowed");
    }
}
