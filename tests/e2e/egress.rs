//! The egress gateway end to end. Each test builds a small internet of its
//! own: a network namespace for the sandbox side and one for the
//! "internet", joined by a veth pair with addresses from 198.18.0.0/15
//! (the benchmarking range); TCP/HTTP listeners on 198.18.0.2 and, bound
//! inside the internet namespace, on 169.254.169.254 and 10.77.0.1 (which
//! the sandbox side routes to, so only husk's policy stands between a
//! guest and them), and dnsmasq on 198.18.0.2:53 for the name tests
//! (198.18.0.3 is a second internet host). `husk do` runs in the
//! sandbox-side namespace through
//! `ip netns exec`. Nothing reaches any address outside those namespaces;
//! both are deleted (and the listeners killed) even when a test fails.
//! Without `ip netns` (not root) the tests pass after saying why they
//! did not run.

use crate::util::{husk_bin, run, unique, Run, TempDir};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The internet side's address, as the guest script knows it.
const INTERNET: &str = "198.18.0.2";

/// A sandbox-side and an internet-side namespace with listeners.
pub(crate) struct Internet {
    sandbox_ns: String,
    internet_ns: String,
    server: Option<Child>,
    log: PathBuf,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).stdin(Stdio::null()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn python() -> &'static str {
    ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("python3")
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/egress").join(name)
}

impl Internet {
    /// Builds the namespaces and starts the listeners; None (after
    /// printing why) when network namespaces cannot be made here.
    pub(crate) fn new() -> Option<Internet> {
        let tag = unique("e");
        // Interface names have 15 bytes: a short tag from the unique name.
        let short = format!("{:08x}", tag.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b))));
        let net = Internet {
            sandbox_ns: format!("husk-{tag}-sbx"),
            internet_ns: format!("husk-{tag}-net"),
            server: None,
            log: Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}-connections.log")),
        };
        if let Err(e) = ip(&["netns", "add", &net.sandbox_ns]) {
            println!("skipped: cannot create a network namespace ({e}); the egress tests need root and `ip netns`");
            return None;
        }
        let mut net = net;
        if let Err(e) = net.wire(&short) {
            panic!("building the test network: {e}");
        }
        Some(net)
    }

    fn wire(&mut self, short: &str) -> Result<(), String> {
        let (s, i) = (self.sandbox_ns.clone(), self.internet_ns.clone());
        let (vs, vi) = (format!("hs{short}"), format!("hi{short}"));
        ip(&["netns", "add", &i])?;
        ip(&["link", "add", &vs, "netns", &s, "type", "veth", "peer", "name", &vi, "netns", &i])?;
        for (ns, dev, addr, addr6) in
            [(&s, &vs, "198.18.0.1/24", "2001:2::1/64"), (&i, &vi, "198.18.0.2/24", "2001:2::2/64")]
        {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev])?;
            ip(&["-n", ns, "addr", "add", addr6, "dev", dev, "nodad"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        ip(&["-n", &i, "addr", "add", "169.254.169.254/32", "dev", "lo"])?;
        ip(&["-n", &i, "addr", "add", "10.77.0.1/32", "dev", "lo"])?;
        ip(&["-n", &i, "addr", "add", "198.18.0.3/24", "dev", &vi])?;
        ip(&["-n", &s, "route", "add", "default", "via", INTERNET])?;
        let ready = self.log.with_extension("ready");
        let child = Command::new("ip")
            .args(["netns", "exec", &i, python()])
            .arg(script("server.py"))
            .args([&self.log, &ready])
            .args([
                "198.18.0.2:8080:http",
                "198.18.0.2:8081:eof",
                "198.18.0.2:8090:bulk",
                "198.18.0.3:8080:http",
                "[2001:2::2]:8080:http",
                "169.254.169.254:80:http",
                "10.77.0.1:80:http",
                "198.18.0.2:5300:udp",
                "10.77.0.1:5300:udp",
            ])
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting the listeners: {e}"))?;
        self.server = Some(child);
        let start = Instant::now();
        while !ready.exists() {
            if start.elapsed() > Duration::from_secs(20) {
                return Err("the listeners did not start within 20 s".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// `husk [flags] do -- python3 guest.py CHECKS` in the sandbox-side
    /// namespace (bounded by util::run's timeout).
    fn husk(&self, flags: &[&str], checks: &str) -> Run {
        let guest = script("guest.py");
        self.husk_do(flags, &[python(), guest.to_str().unwrap(), checks])
    }

    /// `husk [flags] do -- ARGV` in the sandbox-side namespace.
    pub(crate) fn husk_do(&self, flags: &[&str], argv: &[&str]) -> Run {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.sandbox_ns]).arg(husk_bin()).args(flags);
        cmd.arg("do").arg("--").args(argv).current_dir("/");
        run(cmd, None)
    }

    /// Starts dnsmasq on 198.18.0.2:53 in the internet namespace with a
    /// query log: api.test and the names under exfil.test are 198.18.0.2,
    /// other.test is 198.18.0.3. None (after printing why) without
    /// dnsmasq.
    fn dnsmasq(&self) -> Option<Dnsmasq> {
        let Some(bin) = ["/usr/sbin/dnsmasq", "/usr/bin/dnsmasq"].into_iter().find(|p| Path::new(p).exists()) else {
            println!("skipped: no dnsmasq (Debian's dnsmasq-base) to serve the test names");
            return None;
        };
        let log = self.log.with_extension("dns.log");
        let child = Command::new("ip")
            .args(["netns", "exec", &self.internet_ns, bin, "--keep-in-foreground", "--conf-file=/dev/null"])
            .args(["--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=198.18.0.2"])
            .args(["--user=root", "--pid-file=", "--log-queries"])
            .arg(format!("--log-facility={}", log.display()))
            .args(["--address=/api.test/198.18.0.2", "--address=/other.test/198.18.0.3"])
            .arg("--address=/exfil.test/198.18.0.2")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                println!("skipped: cannot start dnsmasq: {e}");
                return None;
            }
        };
        let dns = Dnsmasq { child, log };
        let start = Instant::now();
        while !dns.queries().contains("started") {
            if start.elapsed() > Duration::from_secs(10) {
                println!("skipped: dnsmasq did not start within 10 s:\n{}", dns.queries());
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(dns)
    }

    /// `husk [flags] run` of a bundle over the host's root whose spec
    /// names the sandbox-side namespace (as a container engine wires
    /// one), running the guest script with `checks`.
    fn husk_run(&self, flags: &[&str], checks: &str) -> Run {
        let dir = TempDir::new("egress-oci");
        let bundle = dir.path().join("bundle");
        std::fs::create_dir_all(&bundle).unwrap();
        let guest = script("guest.py");
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": "/" },
            "process": {
                "args": [python(), guest.to_str().unwrap(), checks],
                "cwd": "/",
                "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                "user": { "uid": 0, "gid": 0 },
            },
            "linux": { "namespaces": [{ "type": "network", "path": format!("/var/run/netns/{}", self.sandbox_ns) }] },
        });
        std::fs::write(bundle.join("config.json"), config.to_string()).unwrap();
        let mut cmd = Command::new(husk_bin());
        cmd.arg("--root").arg(dir.path().join("state")).args(flags);
        cmd.args(["run", "--bundle", bundle.to_str().unwrap(), &unique("egress")]);
        run(cmd, None)
    }

    /// The connections the listeners logged ("ADDR:PORT from PEER").
    fn connections(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A dnsmasq of the internet namespace, killed when dropped.
struct Dnsmasq {
    child: Child,
    log: PathBuf,
}

impl Dnsmasq {
    /// Its log: "query[A] NAME from ADDR" for each query that arrived.
    fn queries(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Internet {
    fn drop(&mut self) {
        if let Some(mut c) = self.server.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = ip(&["netns", "del", &self.internet_ns]);
        let _ = ip(&["netns", "del", &self.sandbox_ns]);
    }
}

fn assert_checks(r: &Run, checks: &[&str]) {
    let out = r.stdout_str();
    assert_eq!(r.code, 0, "{}", r.describe());
    for c in checks {
        assert!(out.lines().any(|l| l == format!("ok {c}")), "no `ok {c}`\n{}", r.describe());
    }
    assert!(out.lines().any(|l| l == "done"), "{}", r.describe());
}

#[test]
fn egress_allowed_destinations_are_reached_with_linux_semantics() {
    let Some(net) = Internet::new() else { return };
    let r = net.husk(&["--egress-allow", "198.18.0.2:8080,8081,8089,5300", "--egress-allow", "*:5300"], "allowed");
    assert_checks(
        &r,
        &[
            "urllib",
            "half_close",
            "v4_mapped",
            "nonblocking_connect",
            "epoll",
            "rcvtimeo",
            "nonblocking_refused",
            "refused",
            "port_not_allowed",
            "loopback",
            "refused_then",
            "reconnect_reserved",
            "reconnect_port_not_allowed",
            "reconnect_loopback",
            "reconnect",
            "reconnect_connected",
            "keepidle_zero",
            "keepcnt_128",
            "keepalive_ranges",
            "concurrent_connects",
            "udp_port_not_allowed",
            "udp_reserved",
            "udp_unspec_send",
            "udp_unspec_peer",
            "udp_disconnect",
            "udp",
        ],
    );
    let seen = net.connections();
    assert!(seen.contains("198.18.0.2:8080 from 198.18.0.1"), "{seen}");
    assert!(seen.contains("198.18.0.2:5300 udp from 198.18.0.1"), "{seen}");
    assert!(!seen.contains("10.77.0.1"), "a reserved server was reached:\n{seen}");
}

#[test]
fn egress_works_for_husk_run_in_the_namespace_the_spec_names() {
    let Some(net) = Internet::new() else { return };
    let r = net.husk_run(&["--egress-allow", "198.18.0.2:8080,8081,8089,5300", "--egress-allow", "*:5300"], "allowed");
    assert_checks(&r, &["urllib", "half_close", "nonblocking_refused", "port_not_allowed", "udp"]);
    let r = net.husk_run(&[], "none_allowed");
    assert_checks(&r, &["no_rule", "no_rule_v6"]);
    let r = net.husk_run(&["--egress-allow", "*"], "reserved");
    assert_checks(&r, &["reserved 169.254.169.254", "reserved 10.77.0.1"]);
    let seen = net.connections();
    assert!(!seen.contains("169.254.169.254") && !seen.contains("10.77.0.1"), "reached a reserved server:\n{seen}");
}

#[test]
fn egress_without_an_allow_rule_nothing_leaves() {
    let Some(net) = Internet::new() else { return };
    let start = Instant::now();
    let r = net.husk(&[], "none_allowed");
    assert_checks(&r, &["interfaces", "no_rule", "no_rule_v6"]);
    assert!(start.elapsed() < Duration::from_secs(30), "denials must be immediate");
    assert_eq!(net.connections(), "", "a denied connection reached the server");
}

#[test]
fn egress_reserved_ranges_stay_closed_under_any() {
    let Some(net) = Internet::new() else { return };
    for allow in ["*", "0.0.0.0/0"] {
        let r = net.husk(&["--egress-allow", allow, "--egress-allow", "::/0"], "reserved");
        assert_checks(&r, &["reserved 169.254.169.254", "reserved 10.77.0.1", "reserved ::ffff:169.254.169.254"]);
    }
    let seen = net.connections();
    assert!(!seen.contains("169.254.169.254") && !seen.contains("10.77.0.1"), "reached a reserved server:\n{seen}");
    // The servers were reachable from the sandbox's namespace all along:
    // only the policy kept the guest from them.
    let probe = Command::new("ip")
        .args(["netns", "exec", &net.sandbox_ns, python(), "-c"])
        .arg("import socket; [socket.create_connection((a, 80), timeout=5).close() for a in ('169.254.169.254', '10.77.0.1')]")
        .status()
        .unwrap();
    assert!(probe.success());
    let start = Instant::now();
    while !(net.connections().contains("169.254.169.254:80") && net.connections().contains("10.77.0.1:80")) {
        assert!(start.elapsed() < Duration::from_secs(10), "the native probe was not logged:\n{}", net.connections());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn egress_network_none_shows_only_loopback() {
    let Some(net) = Internet::new() else { return };
    let r = net.husk(&["--network", "none", "--egress-allow", "*"], "no_network");
    assert_checks(&r, &["only_lo", "unreachable"]);
    assert_eq!(net.connections(), "");
}

#[test]
fn egress_malformed_rules_fail_at_start_naming_the_token() {
    for (flags, token) in [
        (["--egress-allow", "198.18.0.2:0"], "\"0\""),
        (["--egress-allow", "10.0.0.1/8"], "\"10.0.0.1/8\""),
        (["--egress-deny", "bad!host"], "\"bad!host\""),
        (["--egress-allow", "1.2.3.4:80-70"], "\"80-70\""),
    ] {
        let mut cmd = Command::new(husk_bin());
        cmd.args(flags).args(["do", "--", "/bin/true"]);
        let r = run(cmd, None);
        assert_eq!(r.code, 125, "{}", r.describe());
        let err = r.stderr_str();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(token), "{token} not named: {err}");
    }
}

#[test]
fn egress_names_resolve_only_through_the_sandbox_resolver() {
    let Some(net) = Internet::new() else { return };
    let Some(dns) = net.dnsmasq() else { return };
    let flags = ["--egress-allow", "api.test:8080", "--dns-upstream", INTERNET];
    let checks = [
        "resolv_conf",
        "name_urllib",
        "other_nxdomain",
        "other_address_eperm",
        "name_port_not_allowed",
        "exfil_nxdomain",
        "resolver_udp",
        "resolver_tcp",
        "direct_dns_udp",
        "direct_dns_tcp",
        "direct_dot",
        "lookups",
    ];
    let audit = net.log.with_extension("audit.jsonl");
    let audited = [&flags[..], &["--audit-log", audit.to_str().unwrap()]].concat();
    let r = net.husk(&audited, "dns");
    assert_checks(&r, &checks);
    // Every query and connection is recorded, allowed or not.
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(&audit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let find = |ty: &str, field: &str, value: &str| {
        records.iter().find(|r| r["type"] == ty && r[field] == value).unwrap_or_else(|| {
            panic!("no {ty} record with {field} {value}:\n{}", std::fs::read_to_string(&audit).unwrap())
        })
    };
    // (dnsmasq refuses api.test's AAAA, which it has no address for.)
    let q = records.iter().find(|r| r["type"] == "net.dns" && r["name"] == "api.test" && r["qtype"] == "A");
    let q = q.expect("no net.dns record of api.test's A query");
    assert_eq!(
        (&q["verdict"], &q["rcode"], &q["answers"][0]),
        (&"allowed".into(), &"NOERROR".into(), &"A 198.18.0.2".into()),
        "{q}"
    );
    assert_eq!(find("net.dns", "name", "secret-data.exfil.test")["verdict"], "denied");
    let c = find("net.connect", "address", "198.18.0.2");
    assert_eq!(
        (&c["name"], &c["rule"], &c["port"]),
        (&"api.test".into(), &"api.test:8080".into(), &8080.into()),
        "{c}"
    );
    assert_eq!(find("net.denied", "address", "198.18.0.3")["protocol"], "tcp");
    if let Some(line) = r.stdout_str().lines().find(|l| l.starts_with("lookup_median_ms")) {
        println!("guest getaddrinfo of an allowed name, median of 20: {line}");
    }
    let r = net.husk_run(&flags, "dns");
    assert_checks(&r, &checks);
    // glibc's own resolver (A and AAAA together) through getent.
    let r = net.husk_do(&flags, &["getent", "hosts", "api.test"]);
    assert!(r.code == 0 && r.stdout_str().contains("198.18.0.2"), "{}", r.describe());
    let queries = dns.queries();
    assert!(queries.contains("query[A] api.test from 198.18.0.1"), "{queries}");
    assert!(
        !queries.contains("exfil") && !queries.contains("other.test"),
        "a denied name left the sandbox:\n{queries}"
    );
    let seen = net.connections();
    assert!(seen.contains("198.18.0.2:8080 from 198.18.0.1"), "{seen}");
    assert!(!seen.contains("198.18.0.3") && !seen.contains("198.18.0.2:8081"), "a denied address was reached:\n{seen}");
}
