//! The sandbox limits of the global flags (`--memory-mb`, `--pids-limit`,
//! `--cpu-limit`, `--timeout`, `--timeout-grace`, `--nofile`): their
//! syntax, `husk do`'s defaults, and how they reach the sentry.
//!
//! The sentry learns them as flags of `husk boot`; a `--timeout` that
//! ends the sandbox makes it exit with 124 (the status timeout(1) uses),
//! which `husk do` and a container's waiter pass on.

use crate::cli::GlobalArgs;
use std::ffi::OsString;
use std::time::Duration;

/// `husk do`'s pids limit when none is given.
pub const DEFAULT_PIDS: u64 = 4096;
/// `husk do`'s memory limit when none is given, unless half the host's
/// RAM is less.
const DEFAULT_MEMORY_MB: u64 = 4096;

/// A duration: a number with a unit (`ms`, `s`, `m`, `h`), or seconds
/// without one (`2`, `1.5s`, `500ms`, `1m`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{s:?} is not a duration (say 500ms, 2s, 1.5m, 1h)"))?;
    let scale = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("{s:?} is out of range"))
}

/// `husk do`'s memory limit: `--memory-mb`, else 4 GiB or half the
/// host's RAM, whichever is less.
pub fn do_memory_mb(g: &GlobalArgs) -> u64 {
    g.memory_mb.unwrap_or_else(|| host_ram_mb().map_or(DEFAULT_MEMORY_MB, |ram| DEFAULT_MEMORY_MB.min(ram / 2)).max(1))
}

/// The host's RAM in MiB (/proc/meminfo's MemTotal).
fn host_ram_mb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_total_mb(&info)
}

fn mem_total_mb(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// The lower of two optional limits.
pub fn lower(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A duration as `husk boot` takes it back.
fn text(d: Duration) -> OsString {
    format!("{}ms", d.as_millis()).into()
}

/// The flags that give `husk boot` the limits: memory and pids as the
/// caller settled them, the others as given.
pub fn boot_args(g: &GlobalArgs, memory_mb: u64, pids: Option<u64>) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--memory-mb".into(), memory_mb.to_string().into()];
    if let Some(n) = pids {
        args.extend(["--pids-max".into(), n.to_string().into()]);
    }
    if let Some(c) = g.cpu_limit {
        args.extend(["--cpu-limit".into(), text(c)]);
    }
    if let Some(t) = g.timeout {
        args.extend(["--timeout".into(), text(t)]);
    }
    args.extend(["--timeout-grace".into(), text(g.timeout_grace)]);
    if let Some(n) = g.nofile {
        args.extend(["--nofile".into(), n.to_string().into()]);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_or_seconds() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("2 fortnights").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(
            parse_duration(&text(Duration::from_millis(1500)).to_string_lossy()),
            Ok(Duration::from_millis(1500))
        );
    }

    #[test]
    fn memory_defaults_to_half_the_ram_at_most() {
        assert_eq!(mem_total_mb("MemTotal:       24557348 kB\nMemFree: 1 kB\n"), Some(23981));
        assert_eq!(mem_total_mb("nothing"), None);
        assert_eq!(lower(Some(3), Some(2)), Some(2));
        assert_eq!(lower(None, Some(2)), Some(2));
        assert_eq!(lower(None, None), None);
    }
}
