//! Sockets, exactly: self-checking guest programs for the corners of the
//! socket API where husk must answer as Linux does. Each runs natively
//! (it must pass: otherwise the test is wrong) and then under `husk do`.

use crate::guest::guest_test;
use crate::util::{guest_bin, husk_do, native, run, TempDir};

/// SCM_RIGHTS boundaries on a stream, per-writer SCM_CREDENTIALS,
/// MSG_PEEK with descriptors, MSG_CTRUNC and cmsg alignment.
#[test]
fn sockets_exact_unix_ancillary() {
    guest_test("unix_scm", &[]);
}

/// Unix socket corners: an empty SCM_RIGHTS message, rights without a
/// control buffer (MSG_CTRUNC), zero-length receives taking descriptors,
/// credentials only when SO_PASSCRED was asked for at send time (and its
/// inheritance by accept), shutdown keeping queued data, PF_UNIX as
/// protocol, and connect needing write permission on the socket file.
#[test]
fn sockets_exact_unix_edges() {
    guest_test("unix_edges", &[]);
}

/// A Unix socket's send buffer: what it queued counts against SO_SNDBUF
/// until read (EAGAIN, POLLOUT off, a larger buffer letting more in, a
/// smaller one holding the next send), EMSGSIZE past it for messages, and
/// max_dgram_qlen for a datagram receiver not connected back.
#[test]
fn sockets_exact_unix_sndbuf() {
    guest_test("unix_sndbuf", &[]);
}

/// A connected Unix stream or seqpacket socket binds afterwards (the
/// accepted end, named after its listener, may not); its peer's recvfrom
/// and getpeername report the name as it is now.
#[test]
fn sockets_exact_unix_late_bind() {
    guest_test("unix_late_bind", &[]);
}

/// shutdown(2) of each direction on Unix, TCP and UDP sockets: poll bits,
/// EPIPE and SIGPIPE.
#[test]
fn sockets_exact_shutdown() {
    guest_test("sock_shutdown", &[]);
}

/// recvmmsg's timeout and waiting, partial counts, EFAULT.
#[test]
fn sockets_exact_mmsg() {
    guest_test("mmsg_exact", &[]);
}

/// getsockname after connect: the source address toward the peer (UDP
/// and TCP, IPv4, IPv6 and v4-mapped), and what a UDP disconnect gives back.
#[test]
fn sockets_exact_names() {
    guest_test("sock_names", &[]);
}

/// A UDP datagram to a loopback port nobody holds: ECONNREFUSED on a
/// connected socket's next call; with IP_RECVERR/IPV6_RECVERR the error
/// queue (MSG_ERRQUEUE, sock_extended_err and offender, after the control
/// messages asked for), SO_ERROR and POLLERR; TCP's IP_RECVERR and its
/// empty queue; recv(MSG_OOB) on UDP as a plain receive.
#[test]
fn sockets_exact_udp_error_queue() {
    guest_test("udp_errqueue", &[]);
}

/// UDP corners: connected to port 0, sendto port 0, SHUT_RD's EAGAIN and
/// 0, SIOCGSTAMP, the receive buffer's truesize accounting, IPv4 control
/// messages on a dual-stack socket, IP(V6)_RECVORIGDSTADDR, IP_PKTINFO of
/// a group's datagram, short IPv4 options, SOL_IPV6 on IPv4,
/// SO_DETACH_FILTER, bind(AF_UNSPEC), an IPv6 datagram too big (a local
/// error on the queue) and the source version of a dual-stack send.
#[test]
fn sockets_exact_udp() {
    guest_test("udp_exact", &[]);
}

/// TCP errors after the peer closed, non-blocking connect, binding rules.
#[test]
fn sockets_exact_tcp() {
    guest_test("tcp_exact", &[]);
}

/// A TCP connection's start and end: the listen backlog (SYN_SENT until
/// accept makes room), a listener gone with connections queued (reset)
/// and connecting (refused), shutdown while connecting, a refused
/// connect's error then EOF, accept after a reset, TCP_DEFER_ACCEPT, the
/// options an accepted socket inherits, and a socket connected to itself.
#[test]
fn sockets_exact_tcp_lifecycle() {
    guest_test("tcp_lifecycle", &[]);
}

/// UDP-Lite sockets are served (inside the sandbox); SCTP is not: `socket`
/// says EPROTONOSUPPORT, as a kernel built without it does, and the table
/// says so. (Natively this host may have SCTP, so this runs under husk
/// only.)
#[test]
fn sockets_exact_udplite_is_served_and_sctp_refused_as_linux_without_it() {
    let script = "import socket\n\
        for ty, p in ((socket.SOCK_DGRAM, 136), (socket.SOCK_STREAM, 132)):\n\
        \x20   for fam in (socket.AF_INET, socket.AF_INET6):\n\
        \x20       try:\n\
        \x20           socket.socket(fam, ty, p)\n\
        \x20           print(p, 'created')\n\
        \x20       except OSError as e:\n\
        \x20           print(p, e.errno)\n";
    let r = crate::util::run(crate::util::husk_do(&[], &["python3", "-c", script]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    let want = "136 created\n136 created\n132 93\n132 93\n";
    assert_eq!(r.stdout_str(), want, "{}", r.describe());
    let table = std::process::Command::new(crate::util::husk_bin()).arg("syscalls").output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    let socket = table.lines().find(|l| l.split_whitespace().nth(1) == Some("socket")).unwrap();
    assert!(socket.contains("IPPROTO_UDPLITE"), "{socket}");
}

/// TCP urgent data: MSG_OOB, the mark and SIOCATMARK, SO_OOBINLINE,
/// POLLPRI/EPOLLPRI/exceptfds, SIGURG to the F_SETOWN owner.
#[test]
fn sockets_exact_tcp_oob() {
    guest_test("tcp_oob", &[]);
}

/// The TCP data path: SO_SNDBUF/SO_RCVBUF bound what a connection queues
/// (partial non-blocking sends, a blocked sender woken by a larger
/// SO_SNDBUF), recv(MSG_TRUNC), TCP_INQ and SO_TIMESTAMP control
/// messages, IP_MTU_DISCOVER.
#[test]
fn sockets_exact_tcp_data() {
    guest_test("tcp_data", &[]);
}

/// TCP_CORK and MSG_MORE hold partial segments back from the peer until
/// uncorked, TCP_NODELAY (once), urgent data, SHUT_WR or close push them;
/// full segments go at once and the hold has a ceiling.
#[test]
fn sockets_exact_tcp_cork() {
    guest_test("tcp_cork", &[]);
}

/// Ports around a TCP connection's end: TIME_WAIT and FIN_WAIT2 (with
/// TCP_LINGER2) hold the closing end's, an accepted connection shares
/// its listener's, shutdown of a closed connection is ENOTCONN;
/// SO_REUSEPORT spreads TCP connections and UDP flows.
#[test]
fn sockets_exact_tcp_ports() {
    guest_test("tcp_ports", &[]);
}

/// Natively, a fresh network namespace like the sandbox's: `lo` alone
/// (`--network none`), or with an `eth0` of 10.0.2.15/24 carrying the
/// default route and no IPv6 (its veth peer has none either).
const NETNS_SETUP: &str = "set -e; ip link set lo up; \
    if [ \"$1\" = eth0 ]; then \
        ip link add peer0 type veth peer name eth0; \
        echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6; \
        echo 1 > /proc/sys/net/ipv6/conf/peer0/disable_ipv6; \
        ip addr add 10.0.2.15/24 dev eth0; ip link set peer0 up; ip link set eth0 up; \
        ip route add default via 10.0.2.2; \
    fi; exec \"$2\" \"$1\"";

/// Runs the multicast guest program natively in a namespace like the
/// sandbox's network `mode` (see NETNS_SETUP), then under `husk do` with
/// `flags`.
fn multicast_in(mode: &str, flags: &[&str]) {
    let bin = guest_bin("multicast");
    let bin = bin.to_str().unwrap();
    let nat = run(native(&["unshare", "--net", "--map-root-user", "sh", "-c", NETNS_SETUP, "sh", mode, bin]), None);
    assert_eq!(nat.code, 0, "multicast {mode} FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());
    let sbx = run(husk_do(flags, &[bin, mode]), None);
    assert_eq!(sbx.code, 0, "multicast {mode} failed under husk do\n{}", sbx.describe());
}

/// IP multicast with loopback alone: the options, memberships and their
/// errors, delivery through `lo` to each member once, no route without an
/// interface named.
#[test]
fn sockets_exact_multicast_loopback_alone() {
    multicast_in("lo", &["--network", "none"]);
}

/// IP multicast with the sandbox's eth0: the default route's datagrams
/// come back to the sandbox's members with IP_MULTICAST_LOOP, and the copy
/// for the wire stays in the sandbox, recorded as net.denied.
#[test]
fn sockets_exact_multicast_with_eth0() {
    let dir = TempDir::new("multicast");
    let log = dir.path().join("audit.log");
    multicast_in("eth0", &["--audit-log", log.to_str().unwrap()]);
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let denied: Vec<_> = records.iter().filter(|r| r["type"] == "net.denied").collect();
    assert!(!denied.is_empty(), "no net.denied for the wire's copies:\n{text}");
    for r in &denied {
        assert_eq!((r["protocol"].as_str(), r["address"].as_str()), (Some("udp"), Some("239.1.2.3")), "{r}");
        assert!(r["reason"].as_str().unwrap().contains("multicast"), "{r}");
    }
    assert!(!records.iter().any(|r| r["type"] == "net.connect"), "nothing left the sandbox:\n{text}");
}

/// MSG_OOB on Unix stream sockets (Linux 5.15 and later): the urgent
/// byte, the mark splitting reads, SO_OOBINLINE, SIOCATMARK, POLLPRI and
/// SIGURG to the receiver's owner.
#[test]
fn sockets_exact_unix_oob() {
    guest_test("unix_oob", &[]);
}
