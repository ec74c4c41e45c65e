//! The egress row: TCP throughput from a guest, through husk's egress
//! gateway (`--egress-allow`), to a server on the far side of a veth pair,
//! against the same client run natively. The bench builds that network
//! itself, from 198.18.0.0/15 (the benchmarking range) only: a namespace
//! for the client (husk's gateway uses the sockets of the namespace husk
//! runs in) with 198.18.0.1/30, and one for the server with 198.18.0.2/30.
//! Nothing else is reachable from either; both are deleted at the end of
//! the run, whatever happened.

use crate::runner;
use crate::runtimes::{Kind, Runtime};
use std::path::Path;
use std::time::{Duration, Instant};

/// The server's address, the only one the guest is allowed to reach.
pub const SERVER: &str = "198.18.0.2";
/// Bound on each `ip` call.
const IP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server has to start listening.
const SERVER_START: Duration = Duration::from_secs(10);

/// The two namespaces and the server in the far one.
pub struct Egress {
    client_ns: String,
    /// The namespaces made so far, deleted on drop.
    made: Vec<String>,
    server: Option<runner::Server>,
    work: std::path::PathBuf,
}

impl Egress {
    /// Builds the network and starts `ops tcp_sink` in the far namespace.
    pub fn new(ops: &Path, work: &Path) -> Result<Egress, String> {
        if !crate::is_root() {
            return Err("unavailable: needs root (it makes network namespaces)".into());
        }
        let pid = std::process::id();
        let far_ns = format!("husk-bench-{pid}-far");
        let mut net = Egress {
            client_ns: format!("husk-bench-{pid}-cli"),
            made: Vec::new(),
            server: None,
            work: work.to_path_buf(),
        };
        // Interface names have at most 15 bytes.
        let (vc, vf) = (format!("hbc{pid}"), format!("hbf{pid}"));
        for ns in [net.client_ns.clone(), far_ns.clone()] {
            net.ip(&["netns", "add", &ns])?;
            net.made.push(ns);
        }
        let cli = net.client_ns.clone();
        net.ip(&["link", "add", &vc, "netns", &cli, "type", "veth", "peer", "name", &vf, "netns", &far_ns])?;
        for (ns, dev, addr) in [(&cli, &vc, "198.18.0.1/30"), (&far_ns, &vf, "198.18.0.2/30")] {
            net.ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            net.ip(&["-n", ns, "link", "set", dev, "up"])?;
            net.ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        let ops = ops.to_string_lossy().into_owned();
        let server = ["ip", "netns", "exec", &far_ns, &ops, "tcp_sink", "1", SERVER].map(str::to_string);
        net.server = Some(runner::Server::start(&server, work)?);
        // Ready once a native client gets its answer.
        let probe = net.in_client_ns(vec![ops, "tcp_egress".into(), "1".into(), SERVER.into()]);
        let start = Instant::now();
        while let Err(why) = runner::run(&probe, work, IP_TIMEOUT) {
            if start.elapsed() > SERVER_START {
                return Err(format!("the server did not answer within {} s: {why}", SERVER_START.as_secs()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(net)
    }

    /// `argv` (the client) under `rt` in the client namespace: natively,
    /// or under `husk do` allowed to reach the server alone.
    pub fn command(&self, rt: &Runtime, argv: &[String]) -> Result<Vec<String>, String> {
        applies(rt)?;
        let mut cmd = Vec::new();
        if let Kind::HuskDo { husk, platform } = &rt.kind {
            cmd.extend([husk.to_string_lossy().into_owned(), format!("--platform={platform}")]);
            cmd.extend(["--egress-allow".into(), SERVER.into(), "do".into(), "--".into()]);
        }
        cmd.extend(argv.iter().cloned());
        Ok(self.in_client_ns(cmd))
    }

    fn in_client_ns(&self, argv: Vec<String>) -> Vec<String> {
        let mut cmd = vec!["ip".to_string(), "netns".into(), "exec".into(), self.client_ns.clone()];
        cmd.extend(argv);
        cmd
    }

    fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut argv = vec!["ip".to_string()];
        argv.extend(args.iter().map(|a| (*a).to_string()));
        runner::run(&argv, &self.work, IP_TIMEOUT).map(drop).map_err(|e| format!("ip {}: {e}", args.join(" ")))
    }
}

impl Drop for Egress {
    /// Stops the server, then deletes the namespaces (the veth pair goes
    /// with them).
    fn drop(&mut self) {
        self.server = None;
        for ns in std::mem::take(&mut self.made) {
            if let Err(why) = self.ip(&["netns", "del", &ns]) {
                eprintln!("husk-bench: network namespace {ns} left in place: {why}");
            }
        }
    }
}

/// Whether the row runs under `rt`: natively and under `husk do`; the
/// others have no gateway of husk's to compare.
pub fn applies(rt: &Runtime) -> Result<(), String> {
    match &rt.kind {
        Kind::Native | Kind::HuskDo { .. } => Ok(()),
        _ if rt.is_husk() => Err("not applicable: measured under husk do (the same gateway)".into()),
        Kind::RunscDo { .. } => {
            Err("not applicable: runsc runs with --network=none here, no gateway to compare".into())
        }
        Kind::Oci { .. } if rt.name.starts_with("runsc") => {
            Err("not applicable: runsc runs with --network=none here, no gateway to compare".into())
        }
        Kind::Oci { .. } => Err("not applicable: an OCI runtime's egress is the host kernel's path, as native".into()),
    }
}
