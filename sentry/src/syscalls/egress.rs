//! Connections and datagrams out of the sandbox (ARCHITECTURE.md §5): a
//! guest socket's connect or datagram to a destination the netstack has
//! no route to passes the egress gateway. Denied, it fails at once with
//! EPERM, as a local firewall's refusal does on Linux; allowed, a stream
//! is carried on a host socket the gateway opens in the outer network
//! namespace, and the connect, its readiness, its errors and its peer are
//! the host's; a datagram socket gets a host socket of its own that
//! carries what it sends out (each datagram checked) and the replies.

use super::block::wait_io;
use super::socket::nonblocking;
use crate::abi::{Errno, SysResult};
use crate::audit::Record;
use crate::fs::egress::{Egress, Flow, Gateway, HostConn, OpenError, Opened, FORWARDED_OPTIONS};
use crate::fs::inet::{Endpoint, InetSocket};
use crate::host::outer::Kind;
use crate::kernel::Task;
use crate::vfs::{FileDescription, WRITE_EVENTS};
use crate::waiter::deadline_in;
use husk_netstack::egress::Verdict;
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

/// Whether `to` lies outside the sandbox: not loopback, not "this host",
/// not eth0's own address (which the netstack delivers inside, as Linux
/// delivers to its own addresses through `lo`), not a multicast group
/// (the netstack's: see `group_copy_left`).
pub(super) fn outbound(to: SocketAddr) -> bool {
    let ip = unmapped(to).ip();
    let own = husk_netstack::iface::uplink().is_some_and(|u| ip == IpAddr::V4(u.addr));
    !(ip.is_loopback() || ip.is_unspecified() || own || ip.is_multicast())
}

/// The group a datagram of `s` to `to` (or its peer) is sent to when it
/// leaves on eth0, where Linux would put a copy on the wire.
pub(super) fn group_on_uplink(s: &InetSocket, to: Option<SocketAddr>) -> Option<SocketAddr> {
    let Endpoint::Udp(u) = &s.endpoint else { return None };
    if u.group_interface(to) != Some(husk_netstack::multicast::ETH0) {
        return None;
    }
    to.or_else(|| u.peer_addr().ok()).map(unmapped)
}

/// Records that the copy for the wire of a datagram sent to `group` on
/// eth0 stayed in the sandbox (net.denied): multicast never passes the
/// gateway, whatever the policy (it denies every group in any case).
pub(super) fn group_copy_left(task: &Task, s: &InetSocket, group: SocketAddr) -> Result<(), Errno> {
    let (pid, protocol, address) = (task.thread.tgid(), protocol(s), group.ip().to_string());
    let reason = "denied: multicast stays in the sandbox".to_owned();
    task.kernel.audit(|| Record::NetDenied { pid, protocol, address, port: group.port(), reason, direction: None })
}

/// Whether a connect of `s` to `to` is the gateway's: a destination
/// outside the sandbox, a stream socket not yet connected or listening
/// (or any datagram socket), and a gateway to pass (none with
/// `--network none`).
pub(super) fn takes(task: &Task, s: &InetSocket, to: SocketAddr) -> bool {
    let fresh = match &s.endpoint {
        Endpoint::Tcp(t) => t.peer_addr().is_err() && !t.is_listening(),
        Endpoint::Udp(_) => true,
    };
    fresh && outbound(to) && task.kernel.ext::<Egress>().gateway().is_some()
}

/// A destination the policy allowed: by which rule, and the allowed name
/// its address came from when that is what let it through.
struct Allowed {
    dest: SocketAddr,
    rule: String,
    name: Option<String>,
}

fn protocol(s: &InetSocket) -> String {
    match &s.endpoint {
        Endpoint::Tcp(_) => "tcp",
        Endpoint::Udp(u) if is_lite(u) => "udplite",
        Endpoint::Udp(_) => "udp",
    }
    .to_owned()
}

/// UDP-Lite stays in the sandbox: the gateway has no host path for it.
fn is_lite(u: &husk_netstack::UdpEndpoint) -> bool {
    u.protocol() == husk_netstack::udp::Protocol::UdpLite
}

/// The policy's word on `to` for socket `s`: EPERM when it is denied,
/// ENETUNREACH for IPv4 through a v6-only socket (as in the netstack). A
/// denial is recorded (net.denied).
fn permit(task: &Task, gateway: &Gateway, s: &InetSocket, to: SocketAddr) -> Result<Allowed, Errno> {
    let (family, v6only) = match &s.endpoint {
        Endpoint::Tcp(t) => (t.family(), t.share_opts().v6only),
        Endpoint::Udp(u) => (u.family(), u.share_opts().v6only),
    };
    if family == Family::V6 && v6only && unmapped(to).is_ipv4() {
        return Err(Errno::ENETUNREACH);
    }
    let dest = unmapped(to);
    if matches!(&s.endpoint, Endpoint::Udp(u) if is_lite(u)) {
        log::debug!("egress: {to} udplite denied");
        return deny(task, s, dest, "denied: UDP-Lite does not leave the sandbox".to_owned());
    }
    match gateway.decide(dest) {
        (Verdict::Allowed { rule }, name) => {
            let address = dest.ip().to_string();
            if task.kernel.package_registry_refuses(task, &protocol(s), &address, dest.port(), name.as_deref())? {
                return Err(Errno::EPERM);
            }
            Ok(Allowed { dest, rule, name })
        }
        (verdict, _) => {
            log::debug!("egress: {to} {verdict}");
            deny(task, s, dest, verdict.to_string())
        }
    }
}

/// Records a refusal (net.denied) and fails with EPERM.
fn deny<T>(task: &Task, s: &InetSocket, dest: SocketAddr, reason: String) -> Result<T, Errno> {
    let (pid, protocol, address) = (task.thread.tgid(), protocol(s), dest.ip().to_string());
    task.kernel.audit(|| Record::NetDenied { pid, protocol, address, port: dest.port(), reason, direction: None })?;
    Err(Errno::EPERM)
}

/// What the net.close of a connection to `dest` will say.
fn flow(task: &Task, s: &InetSocket, dest: SocketAddr) -> Flow {
    let log = task.kernel.audit_log().cloned();
    Flow { log, pid: task.thread.tgid(), protocol: protocol(s), dest, start: std::time::Instant::now(), inbound: false }
}

/// Records an allowed connect (net.connect).
fn record_connect(task: &Task, s: &InetSocket, a: Allowed) -> Result<(), Errno> {
    let (pid, protocol, address) = (task.thread.tgid(), protocol(s), a.dest.ip().to_string());
    let (port, name, rule) = (a.dest.port(), a.name, a.rule);
    task.kernel.package_connected(task, &address, port, name.as_deref());
    task.kernel.audit(|| Record::NetConnect { pid, protocol, address, port, name, rule, direction: None })?;
    Ok(())
}

/// A host socket from the gateway for a connection or flow to `dest`;
/// past `--egress-max-conns` the guest gets EPERM at once and the log a
/// net.denied naming the limit.
fn open(task: &Task, gateway: &Gateway, s: &InetSocket, dest: SocketAddr, kind: Kind) -> Result<Opened, Errno> {
    let v6 = match kind {
        Kind::Stream | Kind::Ping => dest.is_ipv6(),
        // Of the guest socket's family, so that a reply's sender reads
        // as the guest expects.
        Kind::Datagram => matches!(&s.endpoint, Endpoint::Udp(u) if u.family() == Family::V6),
    };
    match gateway.open(v6, kind) {
        Ok(o) => Ok(o),
        Err(OpenError::Errno(e)) => Err(e),
        Err(OpenError::Limit(n)) => {
            log::debug!("egress: {dest}: {n} connections open already");
            deny(task, s, dest, format!("denied: the limit of {n} connections at once (--egress-max-conns)"))
        }
    }
}

/// connect(2) out of the sandbox through the gateway.
pub(super) fn connect(task: &Task, f: &FileDescription, s: &InetSocket, to: SocketAddr) -> SysResult {
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway().ok_or(Errno::ENETUNREACH)?;
    let allowed = permit(task, gateway, s, to)?;
    let dest = allowed.dest;
    if !s.is_stream() {
        let conn = datagram_conn(task, gateway, s, dest)?;
        record_connect(task, s, allowed)?;
        conn.connect_datagrams(to)?;
        // The guest's socket is bound as Linux binds one connected out:
        // a port and eth0's address (getsockname).
        if let Endpoint::Udp(u) = &s.endpoint {
            u.connect_outside(to).map_err(crate::fs::inet::errno)?;
        }
        return Ok(0);
    }
    let opened = open(task, gateway, s, dest, Kind::Stream)?;
    record_connect(task, s, allowed)?;
    let conn = s.carry_outside(opened)?;
    conn.track(flow(task, s, dest));
    // A thread that connected the socket first wins; this one then gets
    // the host's answer about that connection (EALREADY, EISCONN).
    let stored = s.stored.lock().clone();
    for &(level, name) in FORWARDED_OPTIONS {
        if let Some(v) = stored.get(&(level, name)).and_then(|v| v.get(..4)) {
            conn.set_option(level, name, i32::from_le_bytes([v[0], v[1], v[2], v[3]]))?;
        }
    }
    finish(f, s, conn, conn.dial(|| Ok(dest)))
}

/// The host socket a datagram socket sends out of the sandbox on, made
/// on its first datagram out (to `dest`).
fn datagram_conn<'a>(
    task: &Task,
    gateway: &Gateway,
    s: &'a InetSocket,
    dest: SocketAddr,
) -> Result<&'a HostConn, Errno> {
    if let Some(conn) = s.outside() {
        return Ok(conn);
    }
    let fd = open(task, gateway, s, dest, Kind::Datagram)?;
    // A racing thread may have made one first: then that one serves.
    match s.carry_outside(fd) {
        Ok(conn) => {
            conn.track(flow(task, s, dest));
            Ok(conn)
        }
        Err(_) => s.outside().ok_or(Errno::EISCONN),
    }
}

/// A datagram of a guest UDP socket that leaves the sandbox: one to an
/// address outside it, or one without an address from a socket connected
/// outside. None when it is the netstack's.
pub(super) fn send_datagram(
    task: &Task,
    s: &InetSocket,
    data: &[u8],
    to: Option<SocketAddr>,
) -> Option<Result<usize, Errno>> {
    if s.is_stream() {
        return None;
    }
    let to_resolver = match to {
        _ if matches!(&s.endpoint, Endpoint::Udp(u) if is_lite(u)) => false,
        Some(to) => crate::fs::dns::is_resolver(to),
        None => s.resolver_peer.lock().is_some(),
    };
    match to {
        _ if to_resolver => {
            let egress = task.kernel.ext::<Egress>();
            let gateway = egress.gateway()?;
            let Endpoint::Udp(u) = &s.endpoint else { return None };
            crate::fs::dns::query(gateway, task.kernel.audit_log().cloned(), u, data);
            Some(Ok(data.len()))
        }
        Some(to) if outbound(to) && !matches!(&s.endpoint, Endpoint::Udp(u) if u.broadcasts_on_lo(to)) => {
            let egress = task.kernel.ext::<Egress>();
            let gateway = egress.gateway()?;
            let sent = permit(task, gateway, s, to)
                .and_then(|a| datagram_conn(task, gateway, s, a.dest))
                .and_then(|conn| conn.send_to(data, to));
            Some(sent)
        }
        None => s.outside().filter(|c| c.is_connected()).map(|c| c.send(data)),
        Some(_) => None,
    }
}

/// connect(2) of a datagram socket to the sandbox's resolver, which the
/// socket remembers (true); any other connect of a datagram socket
/// forgets it and goes on (false).
pub(super) fn connect_resolver(task: &Task, s: &InetSocket, to: Option<SocketAddr>) -> bool {
    match &s.endpoint {
        Endpoint::Udp(u) if !is_lite(u) => {}
        _ => return false,
    }
    let has_gateway = task.kernel.ext::<Egress>().gateway().is_some();
    let resolver = to.filter(|&to| has_gateway && crate::fs::dns::is_resolver(to));
    *s.resolver_peer.lock() = resolver;
    resolver.is_some()
}

/// connect(2) of a fresh stream socket to the sandbox's resolver: DNS
/// over TCP, served in the sentry; None for any other connect.
pub(super) fn connect_resolver_stream(
    task: &Task,
    f: &FileDescription,
    s: &InetSocket,
    to: Option<SocketAddr>,
) -> Option<SysResult> {
    let Endpoint::Tcp(t) = &s.endpoint else { return None };
    let to = to.filter(|&to| crate::fs::dns::is_resolver(to) && t.peer_addr().is_err() && !t.is_listening())?;
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway()?;
    log::debug!("dns: a TCP connection to {to}");
    let audit = task.kernel.audit_log().cloned();
    let connected = crate::fs::dns_tcp::connect(gateway, audit, task.kernel.net(), t, nonblocking(f, 0));
    Some(connected.map(|()| 0).map_err(crate::fs::inet::errno))
}

/// getsockname(2) of a connection carried outside: the sandbox's own
/// address (eth0's) with the connection's port; an IPv6 connection, which
/// eth0 has no address for, shows the outer namespace's.
pub(super) fn sandbox_local(conn: &HostConn) -> Result<SocketAddr, Errno> {
    let mut local = conn.local()?;
    if let Some(port) = conn.guest_port() {
        local.set_port(port);
    }
    Ok(match husk_netstack::iface::uplink() {
        Some(u) if local.is_ipv4() => SocketAddr::new(IpAddr::V4(u.addr), local.port()),
        _ => local,
    })
}

/// The peer a guest sees for a connection accepted from outside (see
/// `fs::inbound::shown_peer`).
pub(super) fn sandbox_peer(peer: SocketAddr) -> SocketAddr {
    crate::fs::inbound::shown_peer(
        peer,
        husk_netstack::iface::uplink().unwrap_or(&husk_netstack::iface::Uplink::SANDBOX),
    )
}

/// getpeername(2) of a connection carried outside: the host socket's
/// peer, shown as `sandbox_peer` shows it when it was accepted from outside.
pub(super) fn outside_peer(conn: &HostConn) -> Result<SocketAddr, Errno> {
    let peer = conn.peer()?;
    Ok(if conn.guest_port().is_some() { sandbox_peer(peer) } else { peer })
}

/// connect(2) again on a socket already carried outside: the host's
/// answer (EALREADY while connecting, EISCONN once connected, 0 the first
/// time after a non-blocking connect completed, the failure then
/// ECONNABORTED once a failed connect was reported). A socket whose
/// connect failed connects anew, to a destination the policy is asked
/// about afresh; one inside the sandbox it cannot reach any more (its
/// netstack side is left behind): ENETUNREACH.
pub(super) fn reconnect(
    task: &Task,
    f: &FileDescription,
    s: &InetSocket,
    conn: &HostConn,
    to: Option<SocketAddr>,
) -> SysResult {
    let to = to.ok_or(Errno::EISCONN)?;
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway().ok_or(Errno::ENETUNREACH)?;
    let admit = || {
        if !outbound(to) {
            return Err(Errno::ENETUNREACH);
        }
        let allowed = permit(task, gateway, s, to)?;
        let dest = allowed.dest;
        record_connect(task, s, allowed).map(|()| dest)
    };
    finish(f, s, conn, conn.dial(admit))
}

/// A blocking connect waits for the handshake (until SO_SNDTIMEO, then
/// EINPROGRESS as Linux); a non-blocking one returns the host's answer.
/// The end it waited for leaves the socket as Linux's would: connected
/// (EISCONN next), or unconnected after a failure.
fn finish(f: &FileDescription, s: &InetSocket, conn: &HostConn, first: Result<(), Errno>) -> SysResult {
    match first {
        Ok(()) => Ok(0),
        Err(Errno::EINPROGRESS | Errno::EALREADY) if !nonblocking(f, 0) => {
            let deadline = s.timeouts.lock().1.map(deadline_in);
            match wait_io(f, WRITE_EVENTS, false, deadline, || conn.connected()) {
                Err(Errno::EAGAIN) => Err(Errno::EINPROGRESS),
                r => {
                    conn.settle();
                    r.map(|()| 0)
                }
            }
        }
        Err(e) => Err(e),
    }
}
