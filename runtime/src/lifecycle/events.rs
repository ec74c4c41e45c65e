//! `husk events`: a container's resource usage as runc's JSON events —
//! one with --stats, else one every --interval until the container stops;
//! each with the limits the sandbox met so far (`limits`: the audit log's
//! `limit.*` records).

use crate::cli::{EventsArgs, GlobalArgs};
use crate::oci::state::{StateRoot, Status};
use anyhow::{bail, Context as _};
use std::time::Duration;

/// "5s", "500ms", "2m" or plain seconds.
fn parse_interval(s: &str) -> anyhow::Result<Duration> {
    let (num, unit) = s.find(|c: char| !c.is_ascii_digit()).map_or((s, "s"), |i| s.split_at(i));
    let n: u64 = num.parse().with_context(|| format!("bad interval {s:?}"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.checked_mul(60).with_context(|| format!("interval {s:?} is too long"))?),
        _ => bail!("bad interval {s:?}: use ms, s or m"),
    };
    if d.is_zero() {
        bail!("the interval must not be zero");
    }
    Ok(d)
}

pub fn run(g: &GlobalArgs, args: EventsArgs) -> anyhow::Result<i32> {
    let interval = parse_interval(&args.interval)?;
    let root = StateRoot::new(&g.root);
    loop {
        let c = root.open(&args.id)?;
        if c.status() == Status::Stopped {
            bail!("container not running");
        }
        let cgroup = c.cgroup().context("the container has no cgroup")?;
        let limits = c.record.audit_log.as_deref().map(|l| crate::audit_cmd::limit_report(l, &args.id).0);
        drop(c);
        let mut event = serde_json::json!({ "type": "stats", "id": args.id, "data": cgroup.stats() });
        if let Some(l) = limits.filter(|l| !l.is_empty()) {
            event["limits"] = l.into();
        }
        println!("{event}");
        if args.stats {
            return Ok(0);
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_interval("3").unwrap(), Duration::from_secs(3));
        assert!(parse_interval("0s").is_err());
        assert!(parse_interval("5h").is_err());
        assert!(parse_interval("x").is_err());
        assert!(parse_interval(&format!("{}m", u64::MAX)).is_err());
    }
}
