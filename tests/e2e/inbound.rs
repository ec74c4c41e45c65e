//! Connections into the sandbox end to end (`husk do --publish`), in the
//! egress tests' small internet (egress.rs): `husk do` runs in the
//! sandbox-side namespace (198.18.0.1) and a client in the internet
//! namespace (198.18.0.2) connects to the published port there.

use crate::egress::Internet;
use crate::util::{husk_bin, kill_group, run, TempDir};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a guest may take to say something.
const PATIENCE: Duration = Duration::from_secs(90);

/// A `husk do` running in the background in its own process group,
/// whose stdout lines the test reads as they come; the group is killed
/// when dropped.
struct Guest {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Guest {
    fn start(net: &Internet, args: &[&str]) -> Guest {
        let mut cmd = net.husk_in_sandbox_ns(args);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
        let mut child = cmd.spawn().expect("starting husk do");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Guest { child, stdin, lines, seen: Vec::new() }
    }

    /// Waits (bounded) for a line that starts with `prefix`.
    fn expect(&mut self, prefix: &str) -> String {
        let start = Instant::now();
        while let Some(left) = PATIENCE.checked_sub(start.elapsed()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!("the guest did not say {prefix:?}; it said:\n{}", self.seen.join("\n"));
    }

    /// Waits (bounded) for the guest to end; its exit code.
    fn wait(&mut self) -> Option<i32> {
        drop(self.stdin.take());
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

/// A guest server: one connection on 0.0.0.0:8000, read to its end and
/// answered in capitals; then the listener closes and it waits for a line
/// on stdin.
const ECHO: &str = r#"
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("0.0.0.0", 8000))
l.listen(8)
print("ready", flush=True)
c, peer = l.accept()
print("peer", peer[0], peer[1], "local", *c.getsockname(), flush=True)
data = b""
while True:
    d = c.recv(100)
    if not d:
        break
    data += d
c.sendall(data.upper())
c.close()
l.close()
print("closed", flush=True)
sys.stdin.readline()
print("done", flush=True)
"#;

/// A client (of 198.18.0.1, or of the address in argv[2]): sends `hello`, half-closes, reads
/// the answer to its end; or says `refused` (no listener) or `reset`.
const CLIENT: &str = r#"
import errno, socket, sys
try:
    host = sys.argv[2] if len(sys.argv) > 2 else "198.18.0.1"
    s = socket.create_connection((host, int(sys.argv[1])), timeout=20)
except ConnectionRefusedError:
    print("refused")
    sys.exit(0)
port = s.getsockname()[1]
data = b""
try:
    s.sendall(b"hello")
    s.shutdown(socket.SHUT_WR)
    while True:
        d = s.recv(100)
        if not d:
            break
        data += d
except (ConnectionResetError, BrokenPipeError):
    print("reset")
    sys.exit(0)
except OSError as e:
    # A reset that came before shutdown(): ENOTCONN, as Linux says.
    if e.errno != errno.ENOTCONN:
        raise
    print("reset")
    sys.exit(0)
print("got", data.decode(), "from", port)
"#;

fn client(net: &Internet, port: u16) -> String {
    let port = port.to_string();
    let r = run(net.in_internet(&["python3", "-c", CLIENT, &port]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    r.stdout_str().trim().to_string()
}

#[test]
fn inbound_publish_hands_connections_to_the_guest_listener_and_refuses_without_one() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("inbound");
    let log = dir.path().join("audit.jsonl");
    let log_arg = log.to_str().unwrap();
    assert_eq!(client(&net, 18080), "refused", "nothing listens before husk starts");
    let mut guest =
        Guest::start(&net, &["--audit-log", log_arg, "do", "--publish", "18080:8000/tcp", "--", "python3", "-c", ECHO]);
    guest.expect("ready");
    let got = client(&net, 18080);
    let from = got.strip_prefix("got HELLO from ").unwrap_or_else(|| panic!("client: {got}"));
    let peer = guest.expect("peer");
    assert_eq!(
        peer,
        format!("peer 198.18.0.2 {from} local 10.0.2.15 8000"),
        "the guest's accept sees the real peer, and its own address (eth0's) as the local one"
    );
    guest.expect("closed");
    assert_eq!(client(&net, 18080), "refused", "with no guest listener the host refuses at once");
    guest.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    guest.expect("done");
    assert_eq!(guest.wait(), Some(0));
    let records = std::fs::read_to_string(&log).unwrap();
    let find = |kind: &str| -> serde_json::Value {
        records
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|r| r["type"] == kind && r["direction"] == "inbound")
            .unwrap_or_else(|| panic!("no inbound {kind}:\n{records}"))
    };
    let connect = find("net.connect");
    assert_eq!(connect["address"], "198.18.0.2");
    assert_eq!(connect["port"].to_string(), from);
    assert_eq!(connect["rule"], "--publish 0.0.0.0:18080:8000");
    let close = find("net.close");
    assert_eq!((close["sent"].as_u64(), close["received"].as_u64()), (Some(5), Some(5)));
}

/// A host-side client on the outer namespace's loopback shows in the
/// guest as the gateway (10.0.2.2), as docker-proxy shows the bridge's
/// gateway, never as the guest's own loopback a guest service may trust;
/// the audit log keeps the real peer.
#[test]
fn inbound_publish_shows_a_loopback_peer_as_the_gateway() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("inbound-lo");
    let log = dir.path().join("audit.jsonl");
    let log_arg = log.to_str().unwrap();
    let mut guest =
        Guest::start(&net, &["--audit-log", log_arg, "do", "--publish", "18083:8000", "--", "python3", "-c", ECHO]);
    guest.expect("ready");
    let r = run(net.in_sandbox(&["python3", "-c", CLIENT, "18083", "127.0.0.1"]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    let got = r.stdout_str().trim().to_string();
    let from = got.strip_prefix("got HELLO from ").unwrap_or_else(|| panic!("client: {got}"));
    assert_eq!(guest.expect("peer"), format!("peer 10.0.2.2 {from} local 10.0.2.15 8000"));
    guest.expect("closed");
    guest.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    guest.expect("done");
    assert_eq!(guest.wait(), Some(0));
    let records = std::fs::read_to_string(&log).unwrap();
    let connect = records
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["type"] == "net.connect" && r["direction"] == "inbound")
        .unwrap_or_else(|| panic!("no inbound net.connect:\n{records}"));
    assert_eq!((connect["address"].as_str(), connect["port"].to_string()), (Some("127.0.0.1"), from.to_owned()));
}

#[test]
fn inbound_publish_reaches_python_http_server_from_outside() {
    let Some(net) = Internet::new() else { return };
    let mut guest = Guest::start(
        &net,
        &[
            "do",
            "-p",
            "198.18.0.1:18081:8000",
            "--",
            "python3",
            "-u",
            "-m",
            "http.server",
            "8000",
            "--bind",
            "0.0.0.0",
            "--directory",
            "/etc",
        ],
    );
    guest.expect("Serving HTTP");
    let r = run(net.in_internet(&["curl", "-sS", "--max-time", "20", "http://198.18.0.1:18081/hostname"]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str(), std::fs::read_to_string("/etc/hostname").unwrap());
}

#[test]
fn inbound_malformed_publish_fails_at_start_naming_the_token() {
    for (args, token) in [
        (vec!["do", "--publish", "8080", "--", "/bin/true"], "\"8080\""),
        (vec!["do", "--publish", "8080:0", "--", "/bin/true"], "\"8080:0\""),
        (vec!["do", "--publish", "8080:80/udp", "--", "/bin/true"], "\"8080:80/udp\""),
        (vec!["do", "--publish", "1.2.3:8080:80", "--", "/bin/true"], "\"1.2.3:8080:80\""),
        (vec!["--network", "none", "do", "--publish", "8080:80", "--", "/bin/true"], "--network none"),
    ] {
        let mut cmd = std::process::Command::new(husk_bin());
        cmd.args(&args);
        let r = run(cmd, None);
        assert_eq!(r.code, 125, "{}", r.describe());
        let err = r.stderr_str();
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(token), "{token} not named: {err}");
    }
}

/// A guest server that holds its first connection and then waits 3 s for
/// a second one.
const HOLD_FIRST: &str = r#"
import socket, sys
l = socket.socket()
l.bind(("0.0.0.0", 8000))
l.listen(8)
print("ready", flush=True)
c1, _ = l.accept()
print("first", flush=True)
l.settimeout(3)
try:
    c2, _ = l.accept()
    print("second accepted", flush=True)
except socket.timeout:
    print("second not accepted", flush=True)
"#;

#[test]
fn inbound_connections_count_against_egress_max_conns() {
    let Some(net) = Internet::new() else { return };
    let dir = TempDir::new("inbound-max");
    let log = dir.path().join("audit.jsonl");
    let log_arg = log.to_str().unwrap();
    let args = ["--egress-max-conns", "1", "--audit-log", log_arg, "do", "-p", "18082:8000", "--"];
    let mut guest = Guest::start(&net, &[&args[..], &["python3", "-c", HOLD_FIRST]].concat());
    guest.expect("ready");
    // The first connection stays open (its client waits) and holds the
    // sandbox's one place.
    let mut first = net.in_internet(&[
        "python3",
        "-c",
        "import socket, time; s = socket.create_connection(('198.18.0.1', 18082)); time.sleep(30)",
    ]);
    first.stdin(Stdio::null()).process_group(0);
    let mut first = first.spawn().unwrap();
    guest.expect("first");
    let second = client(&net, 18082);
    kill_group(first.id());
    let _ = first.wait();
    assert!(second == "reset" || second.starts_with("got  from "), "the second was answered: {second}");
    assert_eq!(guest.expect("second"), "second not accepted");
    assert_eq!(guest.wait(), Some(0));
    let records = std::fs::read_to_string(&log).unwrap();
    let denied = records
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["type"] == "net.denied")
        .unwrap_or_else(|| panic!("no net.denied:\n{records}"));
    assert_eq!(denied["address"], "198.18.0.2");
    assert!(denied["reason"].as_str().unwrap().contains("--egress-max-conns"), "{denied}");
    assert_eq!(denied["direction"], "inbound", "a connection in, told apart from egress: {denied}");
}

#[test]
fn inbound_publish_on_an_ipv6_host_address_reaches_an_ipv6_guest_listener() {
    let Some(net) = Internet::new() else { return };
    let guest_script = r#"
import socket
l = socket.socket(socket.AF_INET6)
l.bind(("::", 8000))
l.listen(8)
print("ready", flush=True)
c, peer = l.accept()
print("peer", peer[0], flush=True)
c.sendall(c.recv(100).upper())
c.close()
"#;
    let mut guest = Guest::start(&net, &["do", "-p", "[2001:2::1]:18083:8000", "--", "python3", "-c", guest_script]);
    guest.expect("ready");
    let client = "import socket; s = socket.create_connection(('2001:2::1', 18083), timeout=20); \
                  s.sendall(b'six'); print(s.recv(100).decode())";
    let r = run(net.in_internet(&["python3", "-c", client]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str().trim(), "SIX");
    assert_eq!(guest.expect("peer"), "peer 2001:2::2");
    assert_eq!(guest.wait(), Some(0));
}
