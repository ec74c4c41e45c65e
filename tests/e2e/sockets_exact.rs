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

/// TCP errors after the peer closed, non-blocking connect, binding rules.
#[test]
fn sockets_exact_tcp() {
    guest_test("tcp_exact", &[]);
}
