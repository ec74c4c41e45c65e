//! ICMP echo through the egress gateway, in the egress tests' own network
//! namespaces (`egress::Internet`): unprivileged `ping` (SOCK_DGRAM,
//! IPPROTO_ICMP) reaches an allowed destination on a host ping socket of
//! the outer namespace, a denied one fails at once with EPERM and a
//! net.denied record, and the socket is refused (EACCES) wherever the
//! outer namespace's `net.ipv4.ping_group_range` refuses it natively.

use crate::egress::Internet;
use crate::util::{guest_bin, run, TempDir};
use std::path::Path;

/// Lets every group open ping sockets in the sandbox-side namespace, as
/// Docker does in a container's.
fn allow_ping(net: &Internet) {
    let r = run(net.in_sandbox(&["sysctl", "-w", "net.ipv4.ping_group_range=0 2147483647"]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
}

fn ping_bin() -> Option<&'static str> {
    let found = ["/usr/bin/ping", "/bin/ping"].into_iter().find(|p| Path::new(p).exists());
    if found.is_none() {
        println!("skipped: no ping (iputils-ping)");
    }
    found
}

fn records(path: &Path, kind: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all = text.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    all.filter(|r| r["type"] == kind && r["protocol"] == "icmp").collect()
}

/// A Python probe: opens an ICMP echo socket of `family` and sends one
/// echo request to each address, printing `reply`, `eperm`, or the
/// errno's name.
const PROBE: &str = "import errno, select, socket, sys\n\
    v6 = sys.argv[1] == '6'\n\
    try:\n\
    \x20   s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM,\n\
    \x20                     socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)\n\
    except OSError as e: print('socket', errno.errorcode[e.errno]); sys.exit(0)\n\
    for a in sys.argv[2:]:\n\
    \x20   try: s.sendto(bytes([128 if v6 else 8, 0, 0, 0, 0, 0, 0, 1]) + b'husk', (a, 0))\n\
    \x20   except OSError as e: print(a, errno.errorcode[e.errno]); continue\n\
    \x20   ready = select.select([s], [], [], 5)[0]\n\
    \x20   r = s.recvfrom(64) if ready else (b'', None)\n\
    \x20   print(a, 'reply' if r[0][:1] == bytes([129 if v6 else 0]) and r[0][8:] == b'husk' else 'none')\n";

fn python() -> &'static str {
    ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("python3")
}

#[test]
fn icmp_ping_reaches_an_allowed_destination_and_is_recorded() {
    let Some(net) = Internet::new() else { return };
    let Some(ping) = ping_bin() else { return };
    allow_ping(&net);
    let dir = TempDir::new("icmp");
    let audit = dir.path().join("audit.jsonl");
    let flags = ["--egress-allow", "198.18.0.2,2001:2::2", "--audit-log", audit.to_str().unwrap()];
    let r = net.husk_do(&flags, &[ping, "-c", "1", "-W", "2", "198.18.0.2"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert!(r.stdout_str().contains("1 received"), "{}", r.describe());
    // The options ping sets (IP_RECVERR, IP_RECVTTL, IP_RETOPTS, SO_TIMESTAMP
    // …) are all taken, and the reply's TTL comes with it (IP_RECVTTL's
    // control message), as natively.
    let out = format!("{}{}", r.stdout_str(), r.stderr_str());
    assert!(!out.contains("Warning") && !out.contains("WARNING"), "{}", r.describe());
    assert!(!out.contains("ttl=0 "), "{}", r.describe());
    let ttl = out.split("ttl=").nth(1).and_then(|t| t.split(' ').next()).and_then(|t| t.parse::<u8>().ok());
    assert!(ttl.is_some_and(|t| t > 0), "a real ttl: {}", r.describe());
    let r = net.husk_do(&flags, &[python(), "-c", PROBE, "6", "2001:2::2", "2001:2::2"]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "2001:2::2 reply\n2001:2::2 reply\n"), "{}", r.describe());
    // iputils' ping -6 (IPV6_RECVERR, IPV6_RECVHOPLIMIT, ICMP6_FILTER …).
    let r = net.husk_do(&flags[..2], &[ping, "-6", "-c", "1", "-W", "2", "2001:2::2"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let out = format!("{}{}", r.stdout_str(), r.stderr_str());
    assert!(out.contains("1 received") && !out.contains("Warning") && !out.contains("ttl=0 "), "{}", r.describe());
    let connects = records(&audit, "net.connect");
    let addresses: Vec<_> = connects.iter().map(|r| r["address"].as_str().unwrap()).collect();
    assert_eq!(addresses, ["198.18.0.2", "2001:2::2"], "one record per destination: {connects:?}");
    assert_eq!(connects[0]["rule"], "198.18.0.2", "{connects:?}");
    let closes = records(&audit, "net.close");
    assert_eq!(closes.len(), 2, "each socket's end: {closes:?}");
    assert_eq!(closes[1]["sent"], 2 * 12, "two echo requests of 8 + 4 bytes: {closes:?}");
    assert_eq!(closes[1]["received"], 2 * 12, "and their replies: {closes:?}");
}

#[test]
fn icmp_to_a_denied_destination_fails_at_once_with_eperm_and_is_recorded() {
    let Some(net) = Internet::new() else { return };
    let Some(ping) = ping_bin() else { return };
    allow_ping(&net);
    let dir = TempDir::new("icmp");
    let audit = dir.path().join("audit.jsonl");
    let flags = ["--egress-allow", "*", "--egress-deny", "198.18.0.3", "--audit-log", audit.to_str().unwrap()];
    let r = net.husk_do(&flags, &[python(), "-c", PROBE, "4", "198.18.0.3", "169.254.169.254", "198.18.0.2"]);
    assert_eq!(r.code, 0, "{}", r.describe());
    let want = "198.18.0.3 EPERM\n169.254.169.254 EPERM\n198.18.0.2 reply\n";
    assert_eq!(r.stdout_str(), want, "a deny rule and an always-denied range, then an allowed host\n{}", r.describe());
    let denied = records(&audit, "net.denied");
    let addresses: Vec<_> = denied.iter().map(|r| r["address"].as_str().unwrap()).collect();
    assert_eq!(addresses, ["198.18.0.3", "169.254.169.254"], "{denied:?}");
    // ping itself reports the refusal.
    let r = net.husk_do(&flags, &[ping, "-c", "1", "-W", "1", "198.18.0.3"]);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(r.stderr_str().contains("Operation not permitted"), "{}", r.describe());
    // Natively the denied hosts answer: only the policy kept them out.
    let native = run(net.in_sandbox(&[python(), "-c", PROBE, "4", "198.18.0.3", "169.254.169.254"]), None);
    assert_eq!(native.stdout_str(), "198.18.0.3 reply\n169.254.169.254 reply\n", "{}", native.describe());
}

#[test]
fn icmp_sockets_are_eacces_where_the_outer_namespace_refuses_them() {
    let Some(net) = Internet::new() else { return };
    // A new namespace's ping_group_range is "1 0": no group may.
    for v in ["4", "6"] {
        let native = run(net.in_sandbox(&[python(), "-c", PROBE, v]), None);
        assert_eq!(native.stdout_str(), "socket EACCES\n", "{}", native.describe());
        let r = net.husk_do(&["--egress-allow", "*"], &[python(), "-c", PROBE, v]);
        assert_eq!((r.code, r.stdout_str().as_str()), (0, "socket EACCES\n"), "{}", r.describe());
    }
}

#[test]
fn icmp_without_a_network_has_no_route() {
    let Some(net) = Internet::new() else { return };
    allow_ping(&net);
    let r = net.husk_do(&["--network", "none"], &[python(), "-c", PROBE, "4", "198.18.0.2"]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "198.18.0.2 ENETUNREACH\n"), "{}", r.describe());
}

#[test]
fn icmp_socket_semantics_match_linux() {
    let Some(net) = Internet::new() else { return };
    allow_ping(&net);
    let bin = guest_bin("ping_socket");
    let bin = bin.to_str().unwrap();
    let native = run(net.in_sandbox(&[bin, "198.18.0.2"]), None);
    assert_eq!(native.code, 0, "ping_socket FAILS NATIVELY: the test is wrong, not husk\n{}", native.describe());
    let r = net.husk_do(&["--egress-allow", "198.18.0.2"], &[bin, "198.18.0.2"]);
    assert_eq!(r.code, 0, "{}", r.describe());
}

#[test]
fn icmp_sockets_past_egress_max_conns_are_enobufs_and_recorded() {
    let Some(net) = Internet::new() else { return };
    allow_ping(&net);
    let dir = TempDir::new("icmp");
    let audit = dir.path().join("audit.jsonl");
    let flags = ["--egress-allow", "198.18.0.2", "--egress-max-conns", "1", "--audit-log", audit.to_str().unwrap()];
    let script = "import errno, socket\n\
        a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)\n\
        try: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP); print('opened')\n\
        except OSError as e: print(errno.errorcode[e.errno])\n";
    let r = net.husk_do(&flags, &[python(), "-c", script]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "ENOBUFS\n"), "{}", r.describe());
    let denied = records(&audit, "net.denied");
    assert_eq!(denied.len(), 1, "{denied:?}");
    let reason = denied[0]["reason"].as_str().unwrap();
    assert!(reason.contains("--egress-max-conns"), "the limit is the reason: {denied:?}");
}

#[test]
fn icmp_to_the_sandboxs_own_addresses_is_answered_inside_without_a_rule() {
    let Some(net) = Internet::new() else { return };
    let Some(ping) = ping_bin() else { return };
    allow_ping(&net);
    let dir = TempDir::new("icmp");
    let audit = dir.path().join("audit.jsonl");
    let flags = ["--audit-log", audit.to_str().unwrap()];
    // No allow rule at all: nothing leaves, yet the sandbox answers itself,
    // from the address pinged (0.0.0.0: from loopback), TTL 64, as Linux.
    for (dest, from) in [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "127.0.0.1")] {
        let r = net.husk_do(&flags, &[ping, "-c", "2", "-i", "0.2", "-W", "2", dest]);
        let out = format!("{}{}", r.stdout_str(), r.stderr_str());
        assert_eq!(r.code, 0, "{dest}: {}", r.describe());
        assert!(out.contains("2 received") && out.contains(&format!("from {from}: icmp_seq=1 ttl=64")), "{out}");
        assert!(!out.contains("Warning") && !out.contains("WARNING"), "{out}");
    }
    let r = net.husk_do(&flags, &[ping, "-6", "-c", "1", "-W", "2", "::1"]);
    let out = format!("{}{}", r.stdout_str(), r.stderr_str());
    assert!(r.code == 0 && out.contains("from ::1: icmp_seq=1 ttl=64"), "{}", r.describe());
    // eth0's own address too (iputils' ping first probes its source with a
    // UDP connect, which the sandbox's stack takes for egress to a private
    // range: the probe sends the echo request alone).
    let r = net.husk_do(&[], &[python(), "-c", PROBE, "4", "10.0.2.15", "127.0.0.1", "10.0.2.2"]);
    assert_eq!(r.stdout_str(), "10.0.2.15 reply\n127.0.0.1 reply\n10.0.2.2 EPERM\n", "{}", r.describe());
    let text = std::fs::read_to_string(&audit).unwrap_or_default();
    assert!(!text.contains("\"icmp\""), "the sandbox's own addresses are neither egress nor denied:\n{text}");
    // Without a network at all, loopback still answers.
    let r = net.husk_do(&["--network", "none"], &[python(), "-c", PROBE, "4", "127.0.0.1", "198.18.0.2"]);
    assert_eq!(r.stdout_str(), "127.0.0.1 reply\n198.18.0.2 ENETUNREACH\n", "{}", r.describe());
    let r = net.husk_do(&["--network", "none"], &[python(), "-c", PROBE, "6", "::1"]);
    assert_eq!(r.stdout_str(), "::1 reply\n", "{}", r.describe());
}

/// A Python probe: one echo request with IP_RECVERR to argv[1], then
/// its answer: `reply FROM` or `error DEST ERRNO ORIGIN TYPE CODE OFFENDER`
/// from the error queue.
const ERRQUEUE: &str = "import errno, select, socket, struct, sys\n\
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)\n\
    s.setsockopt(socket.SOL_IP, 11, 1)  # IP_RECVERR\n\
    s.sendto(bytes([8, 0, 0, 0, 0, 0, 0, 1]) + b'husk', (sys.argv[1], 0))\n\
    p = select.poll(); p.register(s, select.POLLIN | select.POLLERR)\n\
    ev = p.poll(8000)\n\
    if ev and ev[0][1] & select.POLLIN:\n\
    \x20   data, who = s.recvfrom(64); print('reply', who[0]); sys.exit(0)\n\
    data, anc, flags, dest = s.recvmsg(64, 512, socket.MSG_ERRQUEUE)\n\
    for lvl, ty, d in anc:\n\
    \x20   e, origin, t, code = struct.unpack('=IBBB', d[:7])\n\
    \x20   print('error', dest[0], errno.errorcode[e], origin, t, code, socket.inet_ntoa(d[20:24]))\n";

#[test]
fn icmp_addresses_of_the_outer_namespace_show_as_the_sandbox_gateway() {
    let Some(net) = Internet::new() else { return };
    allow_ping(&net);
    let flags = ["--egress-allow", "198.18.0.0/24"];
    // 198.18.0.99 has no host: the outer namespace itself (198.18.0.1)
    // reports it unreachable; the guest sees its gateway report it.
    let native = run(net.in_sandbox(&[python(), "-c", ERRQUEUE, "198.18.0.99"]), None);
    assert_eq!(native.stdout_str(), "error 198.18.0.99 EHOSTUNREACH 2 3 1 198.18.0.1\n", "{}", native.describe());
    let r = net.husk_do(&flags, &[python(), "-c", ERRQUEUE, "198.18.0.99"]);
    assert_eq!(
        (r.code, r.stdout_str().as_str()),
        (0, "error 198.18.0.99 EHOSTUNREACH 2 3 1 10.0.2.2\n"),
        "{}",
        r.describe()
    );
    // An echo reply from the outer namespace's own address, too; a real
    // remote peer's shows as itself.
    let r = net.husk_do(&flags, &[python(), "-c", ERRQUEUE, "198.18.0.1"]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "reply 10.0.2.2\n"), "{}", r.describe());
    let r = net.husk_do(&flags, &[python(), "-c", ERRQUEUE, "198.18.0.2"]);
    assert_eq!((r.code, r.stdout_str().as_str()), (0, "reply 198.18.0.2\n"), "{}", r.describe());
}
