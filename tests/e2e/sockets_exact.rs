//! Sockets, exactly: self-checking guest programs for the corners of the
//! socket API where husk must answer as Linux does. Each runs natively
//! (it must pass: otherwise the test is wrong) and then under `husk do`.

use crate::guest::guest_test;

/// SCM_RIGHTS boundaries on a stream, per-writer SCM_CREDENTIALS,
/// MSG_PEEK with descriptors, MSG_CTRUNC and cmsg alignment.
#[test]
fn sockets_exact_unix_ancillary() {
    guest_test("unix_scm", &[]);
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

/// TCP errors after the peer closed, non-blocking connect, binding rules.
#[test]
fn sockets_exact_tcp() {
    guest_test("tcp_exact", &[]);
}

/// UDP-Lite and SCTP are not served: `socket` says EPROTONOSUPPORT, as a
/// kernel built without them does, and the table says so. (Natively this
/// host may have them, so this runs under husk only.)
#[test]
fn sockets_exact_udplite_and_sctp_are_refused_as_linux_without_them() {
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
    let want = "136 93\n136 93\n132 93\n132 93\n";
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

/// MSG_OOB on Unix stream sockets (Linux 5.15 and later): the urgent
/// byte, the mark splitting reads, SO_OOBINLINE, SIOCATMARK, POLLPRI and
/// SIGURG to the receiver's owner.
#[test]
fn sockets_exact_unix_oob() {
    guest_test("unix_oob", &[]);
}
