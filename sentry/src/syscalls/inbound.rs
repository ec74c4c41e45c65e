//! Connections into the sandbox (ARCHITECTURE.md §5, `fs/inbound.rs`): a
//! guest listen on a published port (`husk do --publish`, or any port of
//! a container's) starts the host listener that feeds it, and accept
//! takes that listener's connections as sockets carried on the host
//! connection, each recorded (net.connect, direction inbound) and counted
//! against `--egress-max-conns`.

use crate::abi::Errno;
use crate::audit::Record;
use crate::fs::egress::{Egress, Flow, OpenError};
use crate::fs::inet::{Endpoint, InetSocket};
use crate::host::outer::Kind;
use crate::kernel::Task;
use husk_netstack::{Family, TcpEndpoint};
use std::net::SocketAddr;
use std::sync::Arc;

/// After a guest listen on `s`: the host listeners its address and port
/// are published on start feeding it.
pub(super) fn listened(task: &Task, s: &InetSocket) {
    let Endpoint::Tcp(t) = &s.endpoint else { return };
    let egress = task.kernel.ext::<Egress>();
    let Some(gateway) = egress.gateway() else { return };
    let Some(inbound) = gateway.inbound() else { return };
    let local = t.local_addr();
    s.listen_outside(|queue| {
        inbound.listen(local, queue, |v6| {
            let opened = gateway.open(v6, Kind::Stream).map_err(|e| match e {
                OpenError::Limit(_) => Errno::EMFILE,
                OpenError::Errno(e) => e,
            })?;
            Ok((opened.fd, opened.lease))
        })
    });
}

/// A connection from outside waiting on one of listener `s`'s host
/// listeners, as a new guest socket, and its peer as the guest sees it
/// (`fs::inbound::shown_peer`: never loopback); EAGAIN when none
/// waits. Past `--egress-max-conns` a connection is closed at once and
/// recorded (net.denied).
pub(super) fn accept(task: &Task, s: &InetSocket) -> Result<(Arc<InetSocket>, SocketAddr), Errno> {
    let Endpoint::Tcp(t) = &s.endpoint else { return Err(Errno::EAGAIN) };
    let listeners = s.inbound.lock();
    if listeners.is_empty() {
        return Err(Errno::EAGAIN);
    }
    let egress = task.kernel.ext::<Egress>();
    let gateway = egress.gateway().ok_or(Errno::EAGAIN)?;
    let pid = task.thread.tgid();
    for l in listeners.iter() {
        loop {
            let (fd, peer) = match l.accept() {
                Ok(c) => c,
                Err(Errno::EAGAIN) => break,
                // A connection reset before it was taken: the next one.
                Err(e) if e == Errno::ENOTCONN || e.0 == libc::ECONNABORTED => continue,
                Err(e) => {
                    log::warn!("inbound: {}: accept: {e:?}", l.rule);
                    break;
                }
            };
            let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
            let (address, port) = (peer.ip().to_string(), peer.port());
            let opened = match gateway.admit(fd) {
                Ok(o) => o,
                Err(OpenError::Limit(n)) => {
                    let reason = format!("denied: the limit of {n} connections at once (--egress-max-conns)");
                    let protocol = "tcp".to_owned();
                    let direction = Some("inbound".to_owned());
                    task.kernel.audit(|| Record::NetDenied { pid, protocol, address, port, reason, direction })?;
                    continue;
                }
                Err(OpenError::Errno(e)) => {
                    log::debug!("inbound: {}: {e:?}", l.rule);
                    continue;
                }
            };
            let local = t.local_addr();
            let conn = TcpEndpoint::new(task.kernel.net(), t.family());
            let sock = InetSocket::new(task.kernel.anon_ino(), super::fd::now(), Endpoint::Tcp(conn));
            let carried = sock.carry_accepted(opened, peer, local.port())?;
            let log = task.kernel.audit_log().cloned();
            let start = std::time::Instant::now();
            carried.track(Flow { log, pid, protocol: "tcp".into(), dest: peer, start, inbound: true });
            let (protocol, rule, direction) = ("tcp".to_owned(), l.rule.clone(), Some("inbound".to_owned()));
            task.kernel.audit(|| Record::NetConnect { pid, protocol, address, port, name: None, rule, direction })?;
            let seen = super::egress::sandbox_peer(peer);
            let shown = match (t.family(), seen.ip()) {
                (Family::V6, std::net::IpAddr::V4(v4)) => SocketAddr::new(v4.to_ipv6_mapped().into(), seen.port()),
                _ => seen,
            };
            return Ok((sock, shown));
        }
    }
    Err(Errno::EAGAIN)
}
