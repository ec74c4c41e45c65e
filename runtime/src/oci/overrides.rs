//! Per-container flag overrides: the annotation `dev.husk.flag.NAME=VALUE`
//! sets husk's flag NAME for one container (as runsc's `dev.gvisor.flag.*`
//! do), but only when the operator allows it with --allow-flag-override;
//! otherwise such annotations are ignored with a warning. Besides the
//! diagnostics switches, a container may set its limits this way.
//! What can only narrow a container's egress it may always set: deny
//! rules (`egress-deny`) and lower egress limits (`egress-max-conns`,
//! `egress-rate`); allow rules (`egress-allow`) need the consent.

use crate::cli::GlobalArgs;
use crate::limits::parse_duration;
use std::collections::HashMap;

pub const PREFIX: &str = "dev.husk.flag.";
/// The flags a container may set for itself.
type Flag = fn(&mut GlobalArgs) -> &mut bool;
const OVERRIDABLE: &[(&str, Flag)] = &[("debug", |g| &mut g.debug), ("strace", |g| &mut g.strace)];
/// The flags with a value a container may set for itself (its limits),
/// each with how its value is taken. An annotation can only lower a limit
/// the operator set: the operator's flags stay the ceiling.
type Setter = fn(&mut GlobalArgs, &str) -> Result<(), String>;
const VALUED: &[(&str, Setter)] = &[
    ("memory-mb", |g, v| count(v).map(|n| g.memory_mb = lower(g.memory_mb, n))),
    ("pids-limit", |g, v| count(v).map(|n| g.pids_limit = lower(g.pids_limit, n))),
    ("cpu-limit", |g, v| parse_duration(v).map(|d| g.cpu_limit = lower(g.cpu_limit, d))),
    ("timeout", |g, v| parse_duration(v).map(|d| g.timeout = lower(g.timeout, d))),
    ("timeout-grace", |g, v| parse_duration(v).map(|d| g.timeout_grace = g.timeout_grace.min(d))),
    ("nofile", |g, v| count(v).map(|n| g.nofile = lower(g.nofile, n))),
    ("disk-limit", |g, v| crate::cli::parse_size(v).map(|n| g.disk_limit = lower(g.disk_limit, n))),
];

/// `new`, or `current` if the operator set a lower one.
fn lower<T: Ord>(current: Option<T>, new: T) -> Option<T> {
    Some(match current {
        Some(c) => c.min(new),
        None => new,
    })
}

/// The annotations a container may always set: each can only narrow
/// what its sandbox may reach or use, below the operator's flags.
const NARROWING: &[(&str, Setter)] = &[
    ("egress-deny", |g, v| {
        husk_netstack::egress::Rule::parse_list(v).map_err(|e| e.to_string())?;
        // The operator chose unfiltered host networking, which takes no
        // rules: a container's cannot refuse its own start.
        if g.network == crate::cli::NetworkMode::Host {
            log::warn!("annotation {PREFIX}egress-deny ignored: --network host is unfiltered");
            return Ok(());
        }
        g.egress_deny.push(v.to_owned());
        Ok(())
    }),
    ("egress-max-conns", |g, v| {
        let n = crate::egress::parse_max_conns(v)?;
        g.egress_max_conns = Some(crate::egress::annotated_max_conns(n, g.egress_max_conns));
        Ok(())
    }),
    ("egress-rate", |g, v| crate::egress::parse_rate(v).map(|n| g.egress_rate = lower(g.egress_rate, n))),
];

/// The flags a container may set only with the operator's consent and
/// that add to the flags' values.
const ADDING: &[(&str, Setter)] = &[("egress-allow", |g, v| {
    husk_netstack::egress::Rule::parse_list(v).map_err(|e| e.to_string())?;
    g.egress_allow.push(v.to_owned());
    Ok(())
})];

fn count(v: &str) -> Result<u64, String> {
    v.parse().map_err(|_| format!("{v:?} is not a number"))
}

fn names() -> String {
    let valued = VALUED.iter().chain(NARROWING).chain(ADDING).map(|(n, _)| *n);
    OVERRIDABLE.iter().map(|(n, _)| *n).chain(valued).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OverrideError {
    #[error("annotation {PREFIX}{0}: no such flag (overridable: {list})", list = names())]
    Unknown(String),
    #[error("annotation {PREFIX}{0}: {1:?} is not true or false")]
    Value(String, String),
    #[error("annotation {PREFIX}{0}: {1}")]
    Invalid(String, String),
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
        if let Some((_, set)) = NARROWING.iter().find(|(n, _)| *n == name) {
            set(&mut out, value).map_err(|e| OverrideError::Invalid(name.into(), e))?;
            continue;
        }
        if !g.allow_flag_override {
            log::warn!("annotation {PREFIX}{name} ignored: the operator did not pass --allow-flag-override");
            continue;
        }
        if let Some((_, set)) = VALUED.iter().chain(ADDING).find(|(n, _)| *n == name) {
            set(&mut out, value).map_err(|e| OverrideError::Invalid(name.into(), e))?;
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
    use crate::cli::test_globals as globals;

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
    fn a_container_may_set_its_limits() {
        let a = notes(&[
            ("dev.husk.flag.pids-limit", "64"),
            ("dev.husk.flag.timeout", "2s"),
            ("dev.husk.flag.timeout-grace", "500ms"),
            ("dev.husk.flag.cpu-limit", "3"),
            ("dev.husk.flag.nofile", "100"),
            ("dev.husk.flag.memory-mb", "256"),
        ]);
        let g = apply(&globals(&["--allow-flag-override"]), &a).unwrap();
        assert_eq!((g.pids_limit, g.nofile, g.memory_mb), (Some(64), Some(100), Some(256)));
        let s = std::time::Duration::from_secs;
        assert_eq!((g.timeout, g.timeout_grace, g.cpu_limit), (Some(s(2)), s(1) / 2, Some(s(3))));
        assert_eq!(apply(&globals(&[]), &a).unwrap().pids_limit, None, "not without the operator's consent");
        let bad = notes(&[("dev.husk.flag.pids-limit", "many")]);
        let err = apply(&globals(&["--allow-flag-override"]), &bad).err();
        assert_eq!(err, Some(OverrideError::Invalid("pids-limit".into(), "\"many\" is not a number".into())));
    }

    #[test]
    fn unknown_flags_and_values_are_refused() {
        let g = globals(&["--allow-flag-override"]);
        let bad = notes(&[("dev.husk.flag.root", "/tmp")]);
        assert_eq!(apply(&g, &bad).err(), Some(OverrideError::Unknown("root".into())));
        let bad = notes(&[("dev.husk.flag.strace", "yes")]);
        assert_eq!(apply(&g, &bad).err(), Some(OverrideError::Value("strace".into(), "yes".into())));
        let bad = notes(&[("dev.husk.flag.disk-limit", "lots")]);
        assert!(matches!(apply(&g, &bad), Err(OverrideError::Invalid(..))));
    }

    #[test]
    fn a_container_may_lower_the_operators_limits_but_not_raise_them() {
        let op = globals(&["--allow-flag-override", "--pids-limit", "64", "--timeout", "10m", "--disk-limit", "1G"]);
        let raise = notes(&[
            ("dev.husk.flag.pids-limit", "1000000"),
            ("dev.husk.flag.timeout", "1000h"),
            ("dev.husk.flag.disk-limit", "1T"),
            ("dev.husk.flag.timeout-grace", "1h"),
        ]);
        let g = apply(&op, &raise).unwrap();
        let m = std::time::Duration::from_secs(600);
        assert_eq!((g.pids_limit, g.timeout, g.disk_limit), (Some(64), Some(m), Some(1 << 30)));
        assert_eq!(g.timeout_grace, op.timeout_grace, "the grace is a ceiling too");
        let lower = notes(&[("dev.husk.flag.pids-limit", "8"), ("dev.husk.flag.timeout", "2s")]);
        let g = apply(&op, &lower).unwrap();
        assert_eq!((g.pids_limit, g.timeout), (Some(8), Some(std::time::Duration::from_secs(2))));
    }

    #[test]
    fn a_container_may_always_narrow_its_egress_and_widen_it_only_with_consent() {
        let a = notes(&[
            ("dev.husk.flag.egress-deny", "198.18.0.3,*.evil.test:443"),
            ("dev.husk.flag.egress-max-conns", "8"),
            ("dev.husk.flag.egress-rate", "1M"),
            ("dev.husk.flag.egress-allow", "api.test:443"),
        ]);
        let op = globals(&["--egress-allow", "*", "--egress-rate", "10M"]);
        let g = apply(&op, &a).unwrap();
        assert_eq!(g.egress_deny, ["198.18.0.3,*.evil.test:443"]);
        assert_eq!((g.egress_max_conns, g.egress_rate), (Some(8), Some(1 << 20)));
        assert_eq!(g.egress_allow, ["*"], "an allow rule without the operator's consent");
        let g = apply(&globals(&["--allow-flag-override"]), &a).unwrap();
        assert_eq!(g.egress_allow, ["api.test:443"]);
    }

    #[test]
    fn an_egress_annotation_never_makes_its_own_start_fail() {
        // A connection limit above what the host fits is lowered to it.
        let many = notes(&[("dev.husk.flag.egress-max-conns", "65536")]);
        let g = apply(&globals(&[]), &many).unwrap();
        assert!(g.egress_max_conns.unwrap() <= crate::egress::DEFAULT_MAX_CONNS);
        crate::egress::network(&g).unwrap();
        // Deny rules under unfiltered host networking are ignored.
        let deny = notes(&[("dev.husk.flag.egress-deny", "198.18.0.3")]);
        let g = apply(&globals(&["--network", "host"]), &deny).unwrap();
        assert!(g.egress_deny.is_empty());
        crate::egress::network(&g).unwrap();
        assert_eq!(apply(&globals(&[]), &deny).unwrap().egress_deny, ["198.18.0.3"]);
    }

    #[test]
    fn egress_annotations_cannot_raise_the_operators_limits() {
        let raise = notes(&[("dev.husk.flag.egress-max-conns", "60000"), ("dev.husk.flag.egress-rate", "1G")]);
        let g = apply(&globals(&["--egress-max-conns", "16", "--egress-rate", "1M"]), &raise).unwrap();
        assert_eq!((g.egress_max_conns, g.egress_rate), (Some(16), Some(1 << 20)));
        let g = apply(&globals(&[]), &raise).unwrap();
        assert_eq!(g.egress_max_conns, Some(crate::egress::DEFAULT_MAX_CONNS), "nor the default");
        assert_eq!(g.egress_rate, Some(1 << 30), "no rate set: any is lower");
    }

    #[test]
    fn bad_egress_annotations_name_their_token() {
        for (flag, value, token) in [
            ("egress-deny", "bad!host", "\"bad!host\""),
            ("egress-max-conns", "0", "\"0\""),
            ("egress-rate", "9Q", "\"Q\""),
        ] {
            let a = notes(&[(&format!("dev.husk.flag.{flag}"), value)]);
            let e = apply(&globals(&[]), &a).unwrap_err().to_string();
            assert!(e.contains(flag) && e.contains(token), "{e}");
        }
        let a = notes(&[("dev.husk.flag.egress-allow", "1.2.3.4:0")]);
        let e = apply(&globals(&["--allow-flag-override"]), &a).unwrap_err().to_string();
        assert!(e.contains("egress-allow") && e.contains("\"0\""), "{e}");
    }

    #[test]
    fn a_container_may_set_its_disk_limit() {
        let a = notes(&[("dev.husk.flag.disk-limit", "64M")]);
        assert_eq!(apply(&globals(&["--allow-flag-override"]), &a).unwrap().disk_limit, Some(64 << 20));
        assert_eq!(apply(&globals(&["--disk-limit", "1G"]), &a).unwrap().disk_limit, Some(1 << 30), "not allowed");
    }
}
