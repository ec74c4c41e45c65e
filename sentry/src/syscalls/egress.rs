//! Connections out of the sandbox (ARCHITECTURE.md §5): a guest stream
//! socket's connect to a destination the netstack has no route to passes
//! the egress gateway. Denied, it fails at once with EPERM, as a local
//! firewall's refusal does on Linux; allowed, the socket is carried on a
//! host socket the gateway opens in the outer network namespace, and the
//! connect, its readiness, its errors and its peer are the host's.

use super::block::wait_io;
use super::socket::nonblocking;
use crate::abi::{Errno, SysResult};
use crate::fs::egress::{Egress, HostConn, FORWARDED_OPTIONS};
use crate::fs::inet::{Endpoint, InetSocket};
use crate::host::outer::Kind;
use crate::kernel::Task;
use crate::vfs::{FileDescription, WRITE_EVENTS};
use crate::waiter::deadline_in;
use husk_netstack::Family;
use std::net::{IpAddr, SocketAddr};

/// `to` with a v4-mapped address written as the IPv4 address, which is
/// how the netstack routes it and how the host socket is opened.
fn unmapped(to: SocketAddr) -> SocketAddr {
    match to.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(to, |v4| SocketAddr::new(IpAddr::V4(v4), to.port())),
        IpAddr::V4(_) => to,
    }
}

/// Whether a connect of `s` to `to` is the gateway's: a stream socket
/// not yet connected or listening, a destination outside the sandbox
/// (not loopback, not "this host"), and a gateway to pass (none with
/// `--network none`).
pub(super) fn takes(task: &Task, s: &InetSocket, to: SocketAddr) -> bool {
    let Endpoint::Tcp(t) = &s.endpoint else { return false };
    let ip = unmapped(to).ip();
    !(ip.is_loopback() || ip.is_unspecified())
        && t.peer_addr().is_err()
        && !t.is_listening()
        && task.kernel.ext::<Egress>().gateway().is_some()
}

/// connect(2) out of the sandbox through the gateway.
pub(super) fn connect(task: &Task, f: &FileDescription, s: &InetSocket, to: SocketAddr) -> SysResult {
    let Endpoint::Tcp(t) = &s.endpoint else { return Err(Errno::EOPNOTSUPP) };
    let dest = unmapped(to);
    // A v6-only socket has no route to an IPv4 address, as in the netstack.
    if t.family() == Family::V6 && t.share_opts().v6only && dest.is_ipv4() {
        return Err(Errno::ENETUNREACH);
    }
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway().ok_or(Errno::ENETUNREACH)?;
    // Flow records (net.connect / net.denied) hook in here, with the
    // verdict's rule.
    let verdict = gateway.check(dest);
    if !verdict.is_allowed() {
        log::debug!("egress: connect to {to} {verdict}");
        return Err(Errno::EPERM);
    }
    let conn = s.carry_outside(gateway.open(dest, Kind::Stream)?)?;
    let stored = s.stored.lock().clone();
    for &(level, name) in FORWARDED_OPTIONS {
        if let Some(v) = stored.get(&(level, name)).and_then(|v| v.get(..4)) {
            conn.set_option(level, name, i32::from_le_bytes([v[0], v[1], v[2], v[3]]))?;
        }
    }
    finish(f, s, conn, conn.connect(dest))
}

/// connect(2) again on a socket already carried outside: the host's
/// answer (EALREADY while connecting, EISCONN once connected, 0 the first
/// time after a non-blocking connect completed).
pub(super) fn reconnect(f: &FileDescription, s: &InetSocket, conn: &HostConn, to: Option<SocketAddr>) -> SysResult {
    let to = to.ok_or(Errno::EISCONN)?;
    finish(f, s, conn, conn.connect(unmapped(to)))
}

/// A blocking connect waits for the handshake (until SO_SNDTIMEO, then
/// EINPROGRESS as Linux); a non-blocking one returns the host's answer.
fn finish(f: &FileDescription, s: &InetSocket, conn: &HostConn, first: Result<(), Errno>) -> SysResult {
    match first {
        Ok(()) => Ok(0),
        Err(Errno::EINPROGRESS | Errno::EALREADY) if !nonblocking(f, 0) => {
            let deadline = s.timeouts.lock().1.map(deadline_in);
            match wait_io(f, WRITE_EVENTS, false, deadline, || conn.connected()) {
                Err(Errno::EAGAIN) => Err(Errno::EINPROGRESS),
                r => r.map(|()| 0),
            }
        }
        Err(e) => Err(e),
    }
}
