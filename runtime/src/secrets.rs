//! `--secret`, `--secret-ttl`, `--secret-env` and the annotations
//! `dev.husk.secret.NAME=@FILE`: the runtime reads each value (from the
//! argument, a file or its own environment) and hands all of them to the
//! sentry on a memfd the sentry reads and closes (`--secrets-fd`), never
//! on its command line or in its environment.
//!
//! An annotation names a host file the runtime (often root) reads into
//! the container, so it is honoured only when the operator passed
//! --allow-flag-override, as `dev.husk.flag.*` are.

use crate::cli::{GlobalArgs, SecretArg};
use anyhow::{bail, Context as _};
use husk_sentry::api::boot::secrets::{check, encode, redacted, valid_name, SecretSpec};
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

pub const ANNOTATION_PREFIX: &str = "dev.husk.secret.";

/// The secrets the flags give, checked; the redactor of this process is
/// installed with them, so nothing we log shows a value either.
pub fn specs(g: &GlobalArgs) -> anyhow::Result<Vec<SecretSpec>> {
    let mut specs = g.secrets.iter().map(spec).collect::<anyhow::Result<Vec<_>>>()?;
    let named = |specs: &[SecretSpec], name: &str, flag: &str| -> anyhow::Result<usize> {
        specs.iter().position(|s| s.name == name).with_context(|| format!("{flag} {name}: no --secret {name}"))
    };
    for t in &g.secret_ttl {
        let (name, ttl) = t.split_once('=').with_context(|| format!("--secret-ttl {t:?}: want NAME=DURATION"))?;
        let i = named(&specs, name, "--secret-ttl")?;
        specs[i].ttl = Some(parse_duration(ttl).with_context(|| format!("--secret-ttl {t:?}"))?);
    }
    for name in &g.secret_env {
        let i = named(&specs, name, "--secret-env")?;
        // An environment cannot expire: the value would outlive its TTL in
        // every process's environ.
        if specs[i].ttl.is_some() {
            bail!("--secret-env {name}: {name} has a --secret-ttl, which its environment variable could not keep");
        }
        specs[i].env = true;
    }
    check(&specs).map_err(anyhow::Error::msg)?;
    if let Ok(Some(r)) = husk_sentry::api::audit::redact::Redactor::new(&redacted(&specs)) {
        husk_sentry::api::audit::redact::install(r);
    }
    Ok(specs)
}

/// One `--secret NAME=SOURCE`.
fn spec(arg: &SecretArg) -> anyhow::Result<SecretSpec> {
    let Some((name, source)) = arg.0.split_once('=') else {
        bail!("--secret: want NAME=VALUE, NAME=@FILE or NAME=env:VAR");
    };
    if !valid_name(name) {
        bail!("--secret {name:?}: a name is letters, digits, '_', '.' and '-' (not . or ..)");
    }
    let value = if let Some(path) = source.strip_prefix('@') {
        std::fs::read(path).with_context(|| format!("--secret {name}: reading {path}"))?
    } else if let Some(var) = source.strip_prefix("env:") {
        std::env::var_os(var).with_context(|| format!("--secret {name}: ${var} is not set"))?.into_vec()
    } else {
        source.as_bytes().to_vec()
    };
    Ok(SecretSpec { name: name.to_string(), value, ttl: None, env: false })
}

/// The variables `--secret NAME=env:VAR` read: the sandbox's processes
/// must not inherit them.
pub fn env_sources(g: &GlobalArgs) -> Vec<OsString> {
    g.secrets.iter().filter_map(|a| a.0.split_once("=env:").map(|(_, var)| OsString::from(var))).collect()
}

/// A duration: a number with `ms`, `s`, `m` or `h` (seconds without).
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().with_context(|| format!("{s:?} is not a duration (like 30s, 5m, 500ms)"))?;
    let unit_ms: u64 = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => bail!("{s:?}: use ms, s, m or h"),
    };
    Ok(Duration::from_millis(n.checked_mul(unit_ms).with_context(|| format!("{s:?} is too long"))?))
}

/// The flags `dev.husk.flag.NAME` may set for secrets (comma lists):
/// `secret-ttl` (NAME=DURATION,…) and `secret-env` (NAME,…).
pub const FLAG_ANNOTATIONS: [&str; 2] = ["secret-ttl", "secret-env"];

/// Adds to `g` what a container's annotations ask for: secrets
/// (`dev.husk.secret.NAME=@FILE`) and their TTLs and environment
/// (`dev.husk.flag.secret-ttl`, `dev.husk.flag.secret-env`), with the
/// operator's consent; without it they are ignored with a warning.
pub fn apply_annotations(g: &mut GlobalArgs, annotations: &HashMap<String, String>) -> anyhow::Result<()> {
    let mut notes: Vec<(&str, &str)> = annotations.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    notes.sort_unstable();
    for (key, value) in notes {
        let secret = key.strip_prefix(ANNOTATION_PREFIX);
        let flag = key.strip_prefix(crate::oci::overrides::PREFIX).filter(|f| FLAG_ANNOTATIONS.contains(f));
        if secret.is_none() && flag.is_none() {
            continue;
        }
        if !g.allow_flag_override {
            log::warn!("annotation {key} ignored: the operator did not pass --allow-flag-override");
            continue;
        }
        let list = || value.split(',').filter(|v| !v.is_empty()).map(str::to_string);
        match (secret, flag) {
            (Some(name), _) if value.starts_with('@') => g.secrets.push(SecretArg(format!("{name}={value}"))),
            (Some(_), _) => bail!("annotation {key}: want @FILE (a value in the spec would not stay secret)"),
            (None, Some("secret-ttl")) => g.secret_ttl.extend(list()),
            (None, _) => g.secret_env.extend(list()),
        }
    }
    Ok(())
}

/// A memfd holding `specs` for the sentry (`--secrets-fd`); None without
/// secrets.
pub fn boot_fd(specs: &[SecretSpec]) -> anyhow::Result<Option<OwnedFd>> {
    use std::io::{Seek, Write};
    if specs.is_empty() {
        return Ok(None);
    }
    let fd = nix::sys::memfd::memfd_create(c"husk-secrets", nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC)
        .context("memfd_create")?;
    let mut f = std::fs::File::from(fd);
    f.write_all(&encode(specs))?;
    f.rewind()?;
    Ok(Some(OwnedFd::from(f)))
}

/// Reads the secrets the runtime passed on `fd`, and closes it.
pub fn read_fd(fd: OwnedFd) -> anyhow::Result<Vec<SecretSpec>> {
    use std::io::Read;
    let mut data = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut data).context("reading the secrets")?;
    husk_sentry::api::boot::secrets::decode(&data).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::test_globals as globals;

    #[test]
    fn flags_make_secrets() {
        let dir = std::env::temp_dir().join(format!("husk-secret-test-{}", std::process::id()));
        std::fs::write(&dir, b"from a file 123").unwrap();
        let file = format!("F=@{}", dir.display());
        let g =
            globals(&["--secret", "A=literal-value", "--secret", &file, "--secret-ttl", "A=2s", "--secret-env", "F"]);
        let s = specs(&g).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(s[0].value, b"literal-value");
        assert_eq!(s[0].ttl, Some(Duration::from_secs(2)));
        assert_eq!((s[1].value.as_slice(), s[1].env), (&b"from a file 123"[..], true));
        let back = read_fd(boot_fd(&s).unwrap().unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn bad_flags_are_one_clear_error() {
        let err = |args: &[&str]| format!("{:#}", specs(&globals(args)).unwrap_err());
        assert!(err(&["--secret", "../x=long enough value"]).contains("name"));
        assert!(err(&["--secret", "NOEQUALS"]).contains("want NAME=VALUE"));
        assert!(err(&["--secret", "A=short"]).contains("shorter than 8"));
        assert!(err(&["--secret", "A=env:HUSK_SURELY_UNSET_VAR"]).contains("not set"));
        assert!(err(&["--secret", "A=long enough value", "--secret-ttl", "B=1s"]).contains("no --secret B"));
        assert!(err(&["--secret", "A=long enough value", "--secret-ttl", "A=soon"]).contains("duration"));
        assert!(err(&["--secret", "A=long enough value", "--secret-env", "C"]).contains("no --secret C"));
        let ttl_env = ["--secret", "A=long enough value", "--secret-ttl", "A=1s", "--secret-env", "A"];
        assert!(err(&ttl_env).contains("--secret-ttl"), "an environment variable cannot expire");
        // No message shows a value.
        assert!(!err(&["--secret", "A=short"]).contains("short\""));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("1d").is_err() && parse_duration("").is_err());
    }

    #[test]
    fn annotations_need_consent_and_a_file() {
        let notes: HashMap<String, String> = [
            ("dev.husk.secret.TOKEN", "@/run/t"),
            ("dev.husk.flag.secret-ttl", "TOKEN=5s"),
            ("dev.husk.flag.secret-env", "TOKEN"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let mut g = globals(&[]);
        apply_annotations(&mut g, &notes).unwrap();
        assert!(g.secrets.is_empty() && g.secret_ttl.is_empty() && g.secret_env.is_empty());
        let mut g = globals(&["--allow-flag-override"]);
        apply_annotations(&mut g, &notes).unwrap();
        assert_eq!(
            (g.secrets[0].0.as_str(), g.secret_ttl.as_slice()),
            ("TOKEN=@/run/t", &["TOKEN=5s".to_string()][..])
        );
        assert_eq!(g.secret_env, ["TOKEN"]);
        let literal: HashMap<String, String> = [("dev.husk.secret.T".to_string(), "plain".to_string())].into();
        assert!(apply_annotations(&mut globals(&["--allow-flag-override"]), &literal).is_err());
    }

    #[test]
    fn debug_of_the_flags_hides_values() {
        let g = globals(&["--secret", "API_KEY=hunter2hunter2"]);
        let shown = format!("{g:?}");
        assert!(shown.contains("API_KEY") && !shown.contains("hunter2"), "{shown}");
    }
}
