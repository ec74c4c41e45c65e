//! The egress row: TCP throughput from a guest, through husk's egress
//! gateway (`--egress-allow`), to a server on the far side of a veth pair,
//! against the same client run natively and under `runsc do` with the
//! host's network (runsc's own sandbox network cannot be built here). The bench builds that network
//! itself, from 198.18.0.0/15 (the benchmarking range) only: a namespace
//! for the client (husk's gateway uses the sockets of the namespace husk
//! runs in) with 198.18.0.1/30, and one for the server with 198.18.0.2/30.
//! Nothing else is reachable from either; both are deleted at the end of
//! the run, whatever happened. For the DNS row, dnsmasq (when the host
//! has it) answers `bench.test` on the server's address, and the client
//! namespace's /etc/resolv.conf (`/etc/netns/NS/resolv.conf`, which `ip
//! netns exec` mounts, removed at the end) names it.

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
/// Where `ip netns exec NS` finds files to mount over /etc's.
const NETNS_ETC: &str = "/etc/netns";
/// The name the DNS row asks for, the only one the guest may resolve.
pub const DNS_NAME: &str = "bench.test";

/// The two namespaces and the server in the far one.
pub struct Egress {
    client_ns: String,
    /// The namespaces made so far, deleted on drop.
    made: Vec<String>,
    server: Option<runner::Server>,
    /// dnsmasq for the DNS row, or why there is none.
    dns: Result<runner::Server, String>,
    /// The client namespace's resolv.conf folder, removed on drop, and
    /// whether /etc/netns was made for it (then removed too).
    netns_etc: Option<(std::path::PathBuf, bool)>,
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
            dns: Err("unavailable: the network is not built".into()),
            netns_etc: None,
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
        net.dns = net.start_dns(&far_ns);
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

    /// dnsmasq on the server's address answering `bench.test`, and the
    /// client namespace's resolv.conf naming it.
    fn start_dns(&mut self, far_ns: &str) -> Result<runner::Server, String> {
        let bin = ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"].into_iter().find(|p| Path::new(p).exists());
        let bin = bin.ok_or("unavailable: no dnsmasq (Debian's dnsmasq-base) to answer")?;
        let etc = Path::new(NETNS_ETC).join(&self.client_ns);
        let made_parent = !Path::new(NETNS_ETC).exists();
        std::fs::create_dir_all(&etc).map_err(|e| format!("{}: {e}", etc.display()))?;
        self.netns_etc = Some((etc.clone(), made_parent));
        std::fs::write(etc.join("resolv.conf"), format!("nameserver {SERVER}\n"))
            .map_err(|e| format!("{}/resolv.conf: {e}", etc.display()))?;
        let argv = [
            "ip",
            "netns",
            "exec",
            far_ns,
            bin,
            "--keep-in-foreground",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            &format!("--listen-address={SERVER}"),
            "--user=root",
            "--pid-file=",
            &format!("--address=/{DNS_NAME}/{SERVER}"),
        ]
        .map(str::to_string);
        runner::Server::start(&argv, &self.work)
    }

    /// `argv` (the client) under `rt` in the client namespace: natively,
    /// or under `husk do` allowed to reach the server and resolve
    /// bench.test alone.
    pub fn command(&self, rt: &Runtime, argv: &[String]) -> Result<Vec<String>, String> {
        applies(rt)?;
        if argv.get(1).is_some_and(|op| op == "dns_lookup") {
            self.dns.as_ref().map_err(Clone::clone)?;
        }
        let mut cmd = Vec::new();
        match &rt.kind {
            Kind::HuskDo { husk, platform } => {
                cmd.extend([husk.to_string_lossy().into_owned(), format!("--platform={platform}")]);
                cmd.extend(["--egress-allow".into(), SERVER.into(), "--egress-allow".into(), DNS_NAME.into()]);
                cmd.extend(["--dns-upstream".into(), SERVER.into(), "do".into(), "--".into()]);
            }
            Kind::RunscDo { runsc, platform } => {
                // runsc's own sandbox network needs iptables and a way out of
                // the root namespace; with the host's network (`--rootless`
                // keeps `do` from building one) its netstack is bypassed and
                // the sentry's host sockets carry the traffic, unfiltered:
                // the closest runsc has to a gateway.
                cmd.push(runsc.to_string_lossy().into_owned());
                cmd.extend(["--rootless", "--network=host", "--ignore-cgroups"].map(String::from));
                cmd.extend([format!("--platform={platform}"), "do".into(), "-quiet".into()]);
            }
            _ => {}
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
        self.dns = Err(String::new());
        if let Some((etc, made_parent)) = self.netns_etc.take() {
            if let Err(why) = std::fs::remove_dir_all(&etc) {
                eprintln!("husk-bench: {} left in place: {why}", etc.display());
            }
            if made_parent {
                let _ = std::fs::remove_dir(NETNS_ETC);
            }
        }
        for ns in std::mem::take(&mut self.made) {
            if let Err(why) = self.ip(&["netns", "del", &ns]) {
                eprintln!("husk-bench: network namespace {ns} left in place: {why}");
            }
        }
    }
}

/// Whether the row runs under `rt`: natively, under `husk do` and under
/// `runsc do` (with the host's network, unfiltered); the others have no
/// gateway of husk's to compare.
pub fn applies(rt: &Runtime) -> Result<(), String> {
    match &rt.kind {
        Kind::Native | Kind::HuskDo { .. } | Kind::RunscDo { .. } => Ok(()),
        _ if rt.is_husk() => Err("not applicable: measured under husk do (the same gateway)".into()),
        Kind::Oci { .. } if rt.name.starts_with("runsc") => {
            Err("not applicable: measured under runsc do (the same network)".into())
        }
        Kind::Oci { .. } => Err("not applicable: an OCI runtime's egress is the host kernel's path, as native".into()),
    }
}
