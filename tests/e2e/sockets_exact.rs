//! Sockets, exactly: self-checking guest programs for the corners of the
//! socket API where husk must answer as Linux does. Each runs natively
//! (it must pass: otherwise the test is wrong) and then under `husk do`.

use crate::util::{guest_bin, husk_do, native, run};

fn both(name: &str) {
    let argv = vec![guest_bin(name).to_string_lossy().into_owned()];
    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 0, "guest program {name} FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());
    let sbx = run(husk_do(&[], &argv), None);
    assert_eq!(sbx.code, 0, "guest program {name} failed under husk do\n{}", sbx.describe());
}

/// SCM_RIGHTS boundaries on a stream, per-writer SCM_CREDENTIALS,
/// MSG_PEEK with descriptors, MSG_CTRUNC and cmsg alignment.
#[test]
fn sockets_exact_unix_ancillary() {
    both("unix_scm");
}

/// shutdown(2) of each direction on Unix, TCP and UDP sockets: poll bits,
/// EPIPE and SIGPIPE.
#[test]
fn sockets_exact_shutdown() {
    both("sock_shutdown");
}

/// recvmmsg's timeout and waiting, partial counts, EFAULT.
#[test]
fn sockets_exact_mmsg() {
    both("mmsg_exact");
}

/// TCP errors after the peer closed, non-blocking connect, binding rules.
#[test]
fn sockets_exact_tcp() {
    both("tcp_exact");
}
