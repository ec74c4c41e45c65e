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
    pub(crate) sandbox_ns: String,
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

    /// `ip netns exec` of `argv` in the internet namespace.
    pub(crate) fn in_internet(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.internet_ns]).args(argv);
        cmd
    }

    /// `ip netns exec` of `argv` in the sandbox-side namespace.
    pub(crate) fn in_sandbox(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.sandbox_ns]).args(argv).current_dir("/");
        cmd
    }

    /// `ip netns exec` of husk with `args` in the sandbox-side namespace.
    pub(crate) fn husk_in_sandbox_ns(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.sandbox_ns]).arg(husk_bin()).args(args).current_dir("/");
        cmd
    }

    /// Starts dnsmasq on 198.18.0.2:53 in the internet namespace with a
    /// query log: api.test, pypi.test and the names under exfil.test are 198.18.0.2,
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
            .arg("--address=/pypi.test/198.18.0.2")
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
        let guest = script("guest.py");
        self.husk_run_argv(flags, &[python(), guest.to_str().unwrap(), checks], serde_json::json!({}))
    }

    /// `husk [flags] run` of a bundle running `argv`, with `annotations`.
    fn husk_run_argv(&self, flags: &[&str], argv: &[&str], annotations: serde_json::Value) -> Run {
        let dir = TempDir::new("egress-oci");
        let bundle = dir.path().join("bundle");
        std::fs::create_dir_all(&bundle).unwrap();
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": "/" },
            "annotations": annotations,
            "process": {
                "args": argv,
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
            "udp_sockname",
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
    assert_checks(&r, &["interfaces", "own_address", "other_on_eth0_subnet", "no_rule", "no_rule_v6"]);
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
        "resolver_udp_write",
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

/// The net.* records of an audit log, parsed.
fn audit_records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn egress_policy_file_carries_the_rules_of_the_flags() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("egress-policy");
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, "# the API and nothing else\nallow = [\"198.18.0.0/24:8080\"]\ndeny = [\"198.18.0.3\"]\n")
        .unwrap();
    let probe = "import socket\n\
        for host in ('198.18.0.2', '198.18.0.3'):\n\
        \x20   try:\n\
        \x20       socket.create_connection((host, 8080), timeout=5).close(); print('reached', host)\n\
        \x20   except PermissionError: print('eperm', host)\n";
    let r = net.husk_do(&["--egress-policy", file.to_str().unwrap()], &[python(), "-c", probe]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str(), "reached 198.18.0.2\neperm 198.18.0.3\n", "{}", r.describe());
    // The file adds to the flags: the flag's rule opens 8081 too.
    let probe81 = "import socket; socket.create_connection(('198.18.0.2', 8081), timeout=5).close(); print('ok')";
    let flags = ["--egress-policy", file.to_str().unwrap(), "--egress-allow", "198.18.0.2:8081"];
    let r = net.husk_do(&flags, &[python(), "-c", probe81]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "ok\n"), "{}", r.describe());
    let seen = net.connections();
    assert!(seen.contains("198.18.0.2:8080 from") && seen.contains("198.18.0.2:8081 from"), "{seen}");
    assert!(!seen.contains("198.18.0.3"), "a denied host was reached:\n{seen}");
}

#[test]
fn egress_malformed_policy_files_fail_at_start_naming_the_token() {
    let dir = TempDir::new("egress-policy-bad");
    for (text, token) in [
        ("alow = [\"api.test\"]", "alow"),
        ("allow = [\"198.18.0.2:0\"]", "\"0\""),
        ("max-conns = 0", "\"0\""),
        ("rate = \"5Q\"", "\"Q\""),
        ("allow = [\"x.test\"", "allow"),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let mut cmd = Command::new(husk_bin());
        cmd.arg("--egress-policy").arg(&file).args(["do", "--", "/bin/true"]);
        let r = run(cmd, None);
        assert_eq!(r.code, 125, "{text}: {}", r.describe());
        let err = r.stderr_str();
        assert_eq!(err.lines().count(), 1, "{text}: one line: {err}");
        assert!(err.contains(token) && err.contains("bad.toml"), "{text}: {token} not named: {err}");
    }
    let mut cmd = Command::new(husk_bin());
    cmd.args(["--egress-policy", "/nonexistent/policy.toml", "do", "--", "/bin/true"]);
    let r = run(cmd, None);
    assert_eq!(r.code, 125, "{}", r.describe());
    assert!(r.stderr_str().contains("/nonexistent/policy.toml"), "{}", r.describe());
    for (flag, value) in [("--egress-max-conns", "0"), ("--egress-max-conns", "many"), ("--egress-rate", "1Z")] {
        let mut cmd = Command::new(husk_bin());
        cmd.args([flag, value, "do", "--", "/bin/true"]);
        let r = run(cmd, None);
        assert_ne!(r.code, 0, "{flag} {value}: {}", r.describe());
        assert!(r.stderr_str().contains(value), "{flag} {value} not named: {}", r.describe());
    }
}

#[test]
fn egress_max_conns_refuses_connections_past_the_limit_at_once() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("egress-conns");
    let audit = dir.path().join("audit.jsonl");
    // Two connections held open (the eof listener waits for the end of
    // the stream); the third is refused at once; once one is closed, a
    // new one goes through.
    let probe = "import socket, time\n\
        a = socket.create_connection(('198.18.0.2', 8081), timeout=5)\n\
        b = socket.create_connection(('198.18.0.2', 8081), timeout=5)\n\
        t = time.monotonic()\n\
        try:\n\
        \x20   socket.create_connection(('198.18.0.2', 8081), timeout=5); print('third reached')\n\
        except PermissionError: print('third eperm', round(time.monotonic() - t) == 0)\n\
        a.close()\n\
        c = socket.create_connection(('198.18.0.2', 8081), timeout=5); print('after close ok')\n";
    let flags =
        ["--egress-allow", "198.18.0.2:8081", "--egress-max-conns", "2", "--audit-log", audit.to_str().unwrap()];
    let r = net.husk_do(&flags, &[python(), "-c", probe]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str(), "third eperm True\nafter close ok\n", "{}", r.describe());
    let records = audit_records(&audit);
    let denied: Vec<_> = records.iter().filter(|r| r["type"] == "net.denied").collect();
    assert_eq!(denied.len(), 1, "{records:?}");
    assert!(denied[0]["reason"].as_str().unwrap().contains("limit of 2 connections"), "{}", denied[0]);
    assert_eq!(records.iter().filter(|r| r["type"] == "net.connect").count(), 3, "{records:?}");
    assert_eq!(
        records.iter().filter(|r| r["type"] == "net.close").count(),
        3,
        "every carried connection's end: {records:?}"
    );
    assert_eq!(net.connections().matches("198.18.0.2:8081 from").count(), 3, "{}", net.connections());
}

#[test]
fn egress_rate_holds_a_download_and_an_upload_to_the_rate() {
    let Some(net) = Internet::new() else { return };
    // 10 MiB down from the bulk listener, 3 MiB up to the eof listener,
    // at 1 MiB a second each way: about 10 s and 3 s. The one place a
    // time is part of the spec: the rate holds (never faster than it,
    // less the first second's burst); the upper bounds only catch a rate
    // applied far too low, with room for a loaded machine (a full suite
    // beside other builds took 15 s for the download).
    let probe = "import socket, time\n\
        t = time.monotonic()\n\
        s = socket.create_connection(('198.18.0.2', 8090), timeout=30)\n\
        s.sendall(b'10485760')\n\
        n = 0\n\
        while True:\n\
        \x20   d = s.recv(1 << 20)\n\
        \x20   if not d: break\n\
        \x20   n += len(d)\n\
        print('down', n, time.monotonic() - t)\n\
        t = time.monotonic()\n\
        s = socket.create_connection(('198.18.0.2', 8081), timeout=30)\n\
        s.sendall(b'x' * (3 << 20))\n\
        s.shutdown(socket.SHUT_WR)\n\
        print('up', s.recv(64).decode(), time.monotonic() - t)\n";
    let dir = TempDir::new("egress-rate");
    let audit = dir.path().join("audit.jsonl");
    let flags =
        ["--egress-allow", "198.18.0.2:8081,8090", "--egress-rate", "1M", "--audit-log", audit.to_str().unwrap()];
    let r = net.husk_do(&flags, &[python(), "-c", probe]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let out = r.stdout_str();
    let field = |prefix: &str| -> Vec<String> {
        let line = out.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{}", r.describe()));
        line.split_whitespace().map(str::to_owned).collect()
    };
    let down = field("down ");
    assert_eq!(down[1], "10485760", "{out}");
    let secs: f64 = down[2].parse().unwrap();
    assert!((7.0..=40.0).contains(&secs), "10 MiB at 1M took {secs} s");
    let up = field("up ");
    assert_eq!((up[1].as_str(), up[2].as_str()), ("got", "3145728"), "{out}");
    let secs: f64 = up[3].parse().unwrap();
    assert!((2.1..=12.0).contains(&secs), "3 MiB up at 1M took {secs} s");
    // Each connection's end is recorded with the bytes it carried.
    let records = audit_records(&audit);
    let closed = |port: u16| {
        let c = records.iter().find(|r| r["type"] == "net.close" && r["port"] == port);
        c.unwrap_or_else(|| panic!("no net.close of port {port}: {records:?}")).clone()
    };
    let (down, up) = (closed(8090), closed(8081));
    assert_eq!((&down["sent"], &down["received"], &down["protocol"]), (&8.into(), &10485760.into(), &"tcp".into()));
    assert_eq!((&up["sent"], &up["received"]), (&3145728.into(), &"got 3145728".len().into()));
    assert!(down["duration_ms"].as_u64().unwrap() >= 7000, "{down}");
}

#[test]
fn egress_network_host_is_unfiltered_and_says_so() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("egress-host");
    let audit = dir.path().join("audit.jsonl");
    // The servers the sandbox network never lets a guest reach, and a
    // DNS-port destination, which needs no rule here.
    let probe = "import socket\n\
        for host, port in (('169.254.169.254', 80), ('10.77.0.1', 80), ('198.18.0.2', 8080)):\n\
        \x20   socket.create_connection((host, port), timeout=5).close(); print('reached', host)\n";
    let flags = ["--network", "host", "--audit-log", audit.to_str().unwrap()];
    let r = net.husk_do(&flags, &[python(), "-c", probe]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str(), "reached 169.254.169.254\nreached 10.77.0.1\nreached 198.18.0.2\n", "{}", r.describe());
    let seen = net.connections();
    assert!(seen.contains("169.254.169.254:80 from") && seen.contains("10.77.0.1:80 from"), "{seen}");
    let records = audit_records(&audit);
    let create = records.iter().find(|r| r["type"] == "sandbox.create").expect("no sandbox.create");
    assert!(create.to_string().contains("host: unfiltered"), "{create}");
    let c = records.iter().find(|r| r["type"] == "net.connect" && r["address"] == "10.77.0.1").expect("no net.connect");
    assert_eq!(c["rule"], "--network host", "{c}");
    // Rules with it would read as a filter that is not there.
    let mut cmd = Command::new(husk_bin());
    cmd.args(["--network", "host", "--egress-allow", "api.test", "do", "--", "/bin/true"]);
    let r = run(cmd, None);
    assert_eq!(r.code, 125, "{}", r.describe());
    assert!(r.stderr_str().contains("--network host is unfiltered"), "{}", r.describe());
}

/// A package index of one tiny wheel (demo-pkg 1.0, whose module says
/// `VALUE = 42`), served by `python3 -m http.server` on 198.18.0.2:8000
/// in the internet namespace (its directory listings are the simple
/// index pip reads), killed when dropped.
pub(crate) struct Index {
    server: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Index {
    pub(crate) fn start(net: &Internet) -> Index {
        let dir = TempDir::new("pypi");
        let project = dir.path().join("simple/demo-pkg");
        std::fs::create_dir_all(&project).unwrap();
        let wheel = project.join("demo_pkg-1.0-py3-none-any.whl");
        let build = "import sys, zipfile\n\
            files = {'demo_pkg/__init__.py': 'VALUE = 42\\n',\n\
            \x20        'demo_pkg-1.0.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n',\n\
            \x20        'demo_pkg-1.0.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: husk-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}\n\
            record = ''.join(n + ',,\\n' for n in files) + 'demo_pkg-1.0.dist-info/RECORD,,\\n'\n\
            with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
            \x20   for n, t in files.items(): z.writestr(n, t)\n\
            \x20   z.writestr('demo_pkg-1.0.dist-info/RECORD', record)\n";
        let status = Command::new(python()).args(["-c", build]).arg(&wheel).status().unwrap();
        assert!(status.success(), "building the wheel");
        let log = dir.path().join("requests.log");
        let server = Command::new("ip")
            .args(["netns", "exec", &net.internet_ns, python(), "-m", "http.server", "8000", "--bind", INTERNET])
            .arg("--directory")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let index = Index { server, log, _dir: dir };
        // Ready once it answers from the sandbox side.
        let probe =
            format!("import urllib.request; urllib.request.urlopen('http://{INTERNET}:8000/simple/', timeout=2)");
        let start = Instant::now();
        loop {
            let mut cmd = Command::new("ip");
            let ok =
                cmd.args(["netns", "exec", &net.sandbox_ns, python(), "-c", &probe]).stderr(Stdio::null()).status();
            if ok.is_ok_and(|s| s.success()) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "the index did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        index
    }

    /// The requests it served ("GET /path").
    fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

#[test]
fn egress_pip_curl_and_wget_reach_an_allowed_index_and_fail_clearly_when_not() {
    let Some(net) = Internet::new() else { return };
    let Some(_dns) = net.dnsmasq() else { return };
    let index = Index::start(&net);
    let url = "http://pypi.test:8000/simple";
    let allowed = ["--egress-allow", "pypi.test:8000", "--dns-upstream", INTERNET];
    let denied = ["--egress-allow", "api.test:8000", "--dns-upstream", INTERNET];
    let pip = |flags: &[&str], args: &[&str]| {
        // (pip ignores a plain-HTTP index that is not on loopback unless
        // it is trusted.)
        let common = ["-m", "pip", "--no-cache-dir", "--disable-pip-version-check", "--retries", "0", "--timeout", "5"];
        let common = [&common[..], &["--trusted-host", "pypi.test"]].concat();
        net.husk_do(flags, &[&[python()][..], &common[..], args].concat())
    };
    let before = index.requests().matches("GET /simple/demo-pkg/").count();
    // pip download, then pip install into a directory the guest imports from.
    let r = pip(&allowed, &["download", "--no-deps", "--index-url", url, "-d", "/root/dl", "demo-pkg"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout_str().contains("Saved /root/dl/demo_pkg-1.0-py3-none-any.whl"), "{}", r.describe());
    let script = format!(
        "{py} -m pip --no-cache-dir --disable-pip-version-check install --trusted-host pypi.test --no-deps --index-url {url} --target /opt/demo demo-pkg \
         && {py} -c 'import sys; sys.path.insert(0, \"/opt/demo\"); import demo_pkg; print(\"value\", demo_pkg.VALUE)'",
        py = python()
    );
    let r = net.husk_do(&allowed, &["/bin/sh", "-c", &script]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout_str().contains("value 42"), "{}", r.describe());
    let served = index.requests().matches("GET /simple/demo-pkg/").count();
    assert!(served >= before + 2, "the index served no pip request:\n{}", index.requests());
    // Not allowed: pypi.test is NXDOMAIN at the sandbox's resolver, and
    // pip says it cannot reach the index, fast, with nothing served.
    let start = Instant::now();
    let r = pip(&denied, &["download", "--no-deps", "--index-url", url, "-d", "/root/dl", "demo-pkg"]);
    assert_ne!(r.code, 0, "{}", r.describe());
    let said = format!("{}{}", r.stdout_str(), r.stderr_str());
    assert!(said.contains("No matching distribution found for demo-pkg"), "{}", r.describe());
    assert!(start.elapsed() < Duration::from_secs(60), "a denied index must fail fast");
    assert_eq!(index.requests().matches("GET /simple/demo-pkg/").count(), served, "a denied request was served");
    let page = format!("{url}/demo-pkg/");
    for (tool, ok_args, denied_code) in [
        ("curl", vec!["-sS", "--max-time", "10", &page[..]], 6),
        ("wget", vec!["-q", "-T", "10", "-O", "-", &page[..]], 4),
    ] {
        if !Path::new("/usr/bin").join(tool).exists() {
            println!("skipped {tool}: not on the host (husk do runs the host's own)");
            continue;
        }
        let argv = [&[tool][..], &ok_args].concat();
        let r = net.husk_do(&allowed, &argv);
        assert_eq!(r.code, 0, "{tool}: {}", r.describe());
        assert!(r.stdout_str().contains("demo_pkg-1.0-py3-none-any.whl"), "{tool}: {}", r.describe());
        // curl: 6 (could not resolve host); wget: 4 (network failure).
        let r = net.husk_do(&denied, &argv);
        assert_eq!(r.code, denied_code, "{tool} denied: {}", r.describe());
        if tool == "curl" {
            assert!(r.stderr_str().contains("pypi.test"), "{}", r.describe());
        }
    }
    let after = index.requests().matches("GET /simple/demo-pkg/").count();
    let curls = ["curl", "wget"].iter().filter(|t| Path::new("/usr/bin").join(t).exists()).count();
    assert_eq!(after, served + curls, "only the allowed fetches were served:\n{}", index.requests());
}

#[test]
fn egress_containers_narrow_their_egress_by_annotation() {
    let Some(net) = Internet::new() else { return };
    let probe = "import socket\n\
        for port in (8080, 8081):\n\
        \x20   try:\n\
        \x20       socket.create_connection(('198.18.0.2', port), timeout=5).close(); print('reached', port)\n\
        \x20   except PermissionError: print('eperm', port)\n";
    let argv = [python(), "-c", probe];
    let operator = ["--egress-allow", "198.18.0.2:8080,8081"];
    // A deny rule needs no consent from the operator.
    let deny = serde_json::json!({ "dev.husk.flag.egress-deny": "198.18.0.2:8081" });
    let r = net.husk_run_argv(&operator, &argv, deny);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "reached 8080\neperm 8081\n"), "{}", r.describe());
    // An allow rule does: ignored without it, honoured with it.
    let allow = serde_json::json!({ "dev.husk.flag.egress-allow": "198.18.0.2:8081" });
    let r = net.husk_run_argv(&["--egress-allow", "198.18.0.2:8080"], &argv, allow.clone());
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "reached 8080\neperm 8081\n"), "{}", r.describe());
    let consent = ["--egress-allow", "198.18.0.2:8080", "--allow-flag-override"];
    let r = net.husk_run_argv(&consent, &argv, allow);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "reached 8080\nreached 8081\n"), "{}", r.describe());
    // A bad one fails the container's start, naming the token.
    let bad = serde_json::json!({ "dev.husk.flag.egress-deny": "bad!host" });
    let r = net.husk_run_argv(&operator, &argv, bad);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(r.stderr_str().contains("\"bad!host\""), "{}", r.describe());
}
