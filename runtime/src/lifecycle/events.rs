//! `husk events`: a container's resource usage as runc's JSON events —
//! one with --stats, else one every --interval until the container stops;
//! each with the limits the sandbox met so far (`limits`: the audit log's
//! `limit.*` records) and its network counters (`network`: from its
//! `net.*` records; connections in apart, as `network.inbound`).

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
        let network = c.record.audit_log.as_deref().map(|l| network_report(l, &args.id));
        drop(c);
        let mut event = serde_json::json!({ "type": "stats", "id": args.id, "data": cgroup.stats() });
        if let Some(l) = limits.filter(|l| !l.is_empty()) {
            event["limits"] = l.into();
        }
        if let Some(n) = network {
            event["network"] = serde_json::to_value(n)?;
        }
        println!("{event}");
        if args.stats {
            return Ok(0);
        }
        std::thread::sleep(interval);
    }
}

/// A sandbox's egress so far, counted from its audit log; connections
/// in (`--publish`, Docker's `-p`: records with `direction` `inbound`)
/// apart, under `inbound`.
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetworkStats {
    /// Connections and datagram flows the gateway let out (net.connect).
    pub connections: u64,
    /// Those that ended (net.close), and the bytes they moved each way.
    pub closed: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Connections and datagrams refused (net.denied).
    pub denied: u64,
    /// Queries the sandbox's resolver answered (net.dns).
    pub dns_queries: u64,
    /// Connections from outside to guest listeners.
    pub inbound: InboundStats,
}

/// Connections in: those handed to a guest listener (net.connect), those
/// that ended (net.close) with the bytes each way (out: from the guest),
/// and those turned away (net.denied).
#[derive(Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct InboundStats {
    pub connections: u64,
    pub closed: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub denied: u64,
}

impl NetworkStats {
    fn add(&mut self, r: &serde_json::Value) {
        let n = |f: &str| r[f].as_u64().unwrap_or(0);
        let i = &mut self.inbound;
        let (connections, closed, bytes_out, bytes_in, denied) = if r["direction"] == "inbound" {
            (&mut i.connections, &mut i.closed, &mut i.bytes_out, &mut i.bytes_in, &mut i.denied)
        } else {
            (&mut self.connections, &mut self.closed, &mut self.bytes_out, &mut self.bytes_in, &mut self.denied)
        };
        match r["type"].as_str() {
            Some("net.connect") => *connections += 1,
            Some("net.close") => {
                *closed += 1;
                *bytes_out = bytes_out.saturating_add(n("sent"));
                *bytes_in = bytes_in.saturating_add(n("received"));
            }
            Some("net.denied") => *denied += 1,
            Some("net.dns") => self.dns_queries += 1,
            _ => {}
        }
    }
}

/// The `net.*` records of sandbox `id` in the log at `path`, counted (a
/// log that cannot be read counts nothing).
pub fn network_report(path: &std::path::Path, id: &str) -> NetworkStats {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut stats = NetworkStats::default();
    for r in text.lines().filter(|l| l.contains("\"type\":\"net.")) {
        match serde_json::from_str::<serde_json::Value>(r) {
            Ok(r) if r["sandbox"] == id => stats.add(&r),
            _ => {}
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_counters_come_from_the_sandboxs_net_records() {
        let dir = std::env::temp_dir().join(format!("husk-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("audit.jsonl");
        let lines = [
            r#"{"sandbox":"a","type":"net.connect","address":"198.18.0.2","port":80}"#,
            r#"{"sandbox":"a","type":"net.close","sent":100,"received":2000}"#,
            r#"{"sandbox":"a","type":"net.connect","address":"198.18.0.2","port":80}"#,
            r#"{"sandbox":"a","type":"net.close","sent":5,"received":7}"#,
            r#"{"sandbox":"a","type":"net.denied","address":"10.0.0.1","port":80}"#,
            r#"{"sandbox":"a","type":"net.dns","name":"api.test"}"#,
            r#"{"sandbox":"b","type":"net.connect","address":"198.18.0.2","port":80}"#,
            r#"{"sandbox":"a","type":"process.exec","argv":["net.connect"]}"#,
            r#"{"sandbox":"a","type":"net.close","sent":1,"recei"#,
            r#"{"sandbox":"a","type":"net.connect","address":"10.0.2.2","port":4000,"direction":"inbound"}"#,
            r#"{"sandbox":"a","type":"net.close","sent":30,"received":4,"direction":"inbound"}"#,
            r#"{"sandbox":"a","type":"net.denied","address":"198.18.0.1","port":4001,"direction":"inbound"}"#,
            r#"{"sandbox":"b","type":"net.connect","address":"10.0.2.2","port":4000,"direction":"inbound"}"#,
        ];
        std::fs::write(&log, lines.join("\n")).unwrap();
        let stats = network_report(&log, "a");
        std::fs::remove_dir_all(&dir).unwrap();
        let inbound = InboundStats { connections: 1, closed: 1, bytes_out: 30, bytes_in: 4, denied: 1 };
        let expect = NetworkStats {
            connections: 2,
            closed: 2,
            bytes_out: 105,
            bytes_in: 2007,
            denied: 1,
            dns_queries: 1,
            inbound,
        };
        assert_eq!(stats, expect);
        assert_eq!(network_report(std::path::Path::new("/nonexistent/audit.jsonl"), "a"), NetworkStats::default());
    }

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
