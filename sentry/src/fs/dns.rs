//! The sandbox's DNS server (ARCHITECTURE.md §5). The guest's
//! `/etc/resolv.conf` names 10.0.2.2, eth0's gateway, an address no guest
//! socket can bind (the netstack binds only loopback). A query a guest UDP
//! socket sends there never leaves the sandbox as such: the resolver
//! answers what needs no upstream (denied names get NXDOMAIN) at once, and
//! an allowed name's upstream exchange runs on a thread of its own, over
//! host sockets the outer-namespace thread opens, so no task of the sentry
//! waits for it. The reply is queued on the guest socket as a datagram from
//! 10.0.2.2:53: the guest waits on its own socket's queue.

use super::egress::Gateway;
use crate::abi::poll::{POLLIN, POLLOUT};
use crate::abi::Errno;
use crate::audit::{AuditLog, Record};
use crate::host::outer::{Kind, Outer};
use crate::host::socket as host;
use crate::waiter::{until_ready, Queue};
use husk_netstack::dns::{Proto, Reply, Step, Transport, TransportError, MAX_UDP_ANSWER};
use husk_netstack::udp::UdpEndpoint;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// How many upstream exchanges may be under way at once; a query beyond
/// them is dropped, and the guest's resolver asks again after its timeout.
const MAX_IN_FLIGHT: usize = 32;

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The address the guest's resolv.conf names.
pub(crate) fn resolver_addr() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(husk_netstack::iface::Uplink::SANDBOX.gateway), 53)
}

/// Whether `to` (in any spelling) is the sandbox's resolver.
pub(crate) fn is_resolver(to: SocketAddr) -> bool {
    let ip = husk_netstack::egress::canonical(to.ip());
    SocketAddr::new(ip, to.port()) == resolver_addr()
}

/// The text of the guest's /etc/resolv.conf.
pub(crate) fn resolv_conf() -> String {
    format!("# the sandbox's resolver (husk)\nnameserver {}\n", resolver_addr().ip())
}

/// Answers a query datagram `query` that a guest UDP socket (`reply_to`)
/// sent to the resolver; the reply arrives on that socket later.
/// Each answer is recorded in `audit` (net.dns).
pub(crate) fn query(gateway: &Gateway, audit: Option<Arc<AuditLog>>, reply_to: &Arc<UdpEndpoint>, query: &[u8]) {
    let resolver = gateway.resolver().clone();
    let pending = match resolver.begin(query, Proto::Udp, Instant::now()) {
        Step::Done(reply) => return answer(audit.as_deref(), reply_to, reply),
        Step::Forward(pending) => pending,
    };
    let Some(slot) = Slot::take() else {
        log::debug!("dns: {MAX_IN_FLIGHT} queries under way; one dropped");
        return;
    };
    let transport = HostTransport::new(gateway.outer().clone());
    let target = Arc::downgrade(reply_to);
    let spawned = std::thread::Builder::new().name("dns".into()).spawn(move || {
        let _slot = slot;
        let answered = pending.exchange(&transport);
        let reply = resolver.finish(answered, Instant::now());
        if let Some(endpoint) = target.upgrade() {
            answer(audit.as_deref(), &endpoint, reply);
        }
    });
    if let Err(e) = spawned {
        log::warn!("dns: cannot start a query's thread: {e}");
    }
}

/// Records a reply: in the debug log, and as a net.dns record in the
/// sandbox's audit log when it keeps one (a log that fails closed stops
/// the sandbox itself).
pub(super) fn log_reply(audit: Option<&AuditLog>, reply: &Reply) {
    let r = &reply.record;
    log::debug!("dns: {} {} {} {} {:?}", r.name, r.qtype, r.verdict.as_str(), r.rcode, r.answers);
    if let Some(log) = audit {
        let record = Record::NetDns {
            name: r.name.clone(),
            qtype: r.qtype.clone(),
            verdict: r.verdict.as_str().to_owned(),
            rcode: r.rcode.clone(),
            answers: r.answers.clone(),
            upstream: r.upstream.map(|u| u.to_string()),
            reason: r.reason.clone(),
        };
        if let Err(e) = log.write(&record) {
            log::warn!("dns: audit record not written: {e}");
        }
    }
}

/// Queues `reply` on the guest's socket as a datagram from the resolver.
fn answer(audit: Option<&AuditLog>, endpoint: &UdpEndpoint, reply: Reply) {
    log_reply(audit, &reply);
    if let Some(message) = reply.message {
        endpoint.deliver(resolver_addr(), &message);
    }
}

/// One of the [`MAX_IN_FLIGHT`] places, given back when dropped.
pub(super) struct Slot;

impl Slot {
    pub(super) fn take() -> Option<Slot> {
        IN_FLIGHT.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < MAX_IN_FLIGHT).then_some(n + 1)).ok()?;
        Some(Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The resolver's way to its upstreams: a host socket of the outer
/// namespace per exchange, waited on through the host-descriptor notifier
/// until the deadline.
pub(super) struct HostTransport {
    outer: Arc<Outer>,
}

fn transport_error(e: Errno) -> TransportError {
    match e {
        Errno::ETIMEDOUT | Errno::EAGAIN => TransportError::TimedOut,
        Errno(n) => TransportError::Io(std::io::Error::from_raw_os_error(n).kind()),
    }
}

/// A host socket watched by the notifier while it lives.
struct Watched {
    fd: OwnedFd,
    queue: Arc<Queue>,
}

impl Watched {
    fn new(fd: OwnedFd) -> Watched {
        let queue = Arc::new(Queue::default());
        if !crate::waiter::host::watch(fd.as_raw_fd(), &queue) {
            log::warn!("dns: the host-descriptor notifier cannot watch an upstream socket");
        }
        Watched { fd, queue }
    }

    /// `attempt` until it stops failing with EAGAIN, waiting for `mask`,
    /// ETIMEDOUT at `deadline`. This is no file's wait: the guest's socket
    /// never blocks (its query is sent at once and its reply arrives as a
    /// datagram it waits for on its own queue, in the syscall layer). Only
    /// the query's own sentry thread waits here, for a host socket, and
    /// always until a deadline (the resolver's per-upstream timeout), so
    /// it ends even though no guest signal can interrupt it.
    fn until<T>(&self, mask: u32, deadline: Instant, attempt: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
        until_ready(&self.queue, mask, Some(deadline), attempt)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        crate::waiter::host::unwatch(self.fd.as_raw_fd());
    }
}

impl HostTransport {
    pub(super) fn new(outer: Arc<Outer>) -> HostTransport {
        HostTransport { outer }
    }

    fn udp(&self, upstream: SocketAddr, query: &[u8], deadline: Instant) -> Result<Vec<u8>, Errno> {
        let s = Watched::new(self.outer.socket(upstream.is_ipv6(), Kind::Datagram)?);
        // Connected, the socket takes datagrams from the upstream alone.
        host::connect(s.fd.as_fd(), upstream)?;
        host::send(s.fd.as_fd(), query)?;
        let mut buf = vec![0u8; MAX_UDP_ANSWER + 1];
        let n = s.until(POLLIN, deadline, || host::recv(s.fd.as_fd(), &mut buf, false))?;
        buf.truncate(n);
        Ok(buf)
    }

    fn tcp(&self, upstream: SocketAddr, query: &[u8], deadline: Instant) -> Result<Vec<u8>, Errno> {
        let s = Watched::new(self.outer.socket(upstream.is_ipv6(), Kind::Stream)?);
        match host::connect(s.fd.as_fd(), upstream) {
            Ok(()) | Err(Errno::EINPROGRESS) => {}
            Err(e) => return Err(e),
        }
        let len = u16::try_from(query.len()).map_err(|_| Errno::EMSGSIZE)?;
        let mut framed = len.to_be_bytes().to_vec();
        framed.extend_from_slice(query);
        let mut sent = 0;
        while sent < framed.len() {
            // A send before the handshake is over is EAGAIN; a refused
            // connect is its error.
            sent += s.until(POLLOUT, deadline, || host::send(s.fd.as_fd(), &framed[sent..]))?;
        }
        let mut prefix = [0u8; 2];
        self.read_exact(&s, &mut prefix, deadline)?;
        let mut message = vec![0u8; usize::from(u16::from_be_bytes(prefix))];
        self.read_exact(&s, &mut message, deadline)?;
        Ok(message)
    }

    fn read_exact(&self, s: &Watched, buf: &mut [u8], deadline: Instant) -> Result<(), Errno> {
        let mut got = 0;
        while got < buf.len() {
            match s.until(POLLIN, deadline, || host::recv(s.fd.as_fd(), &mut buf[got..], false))? {
                0 => return Err(Errno::ECONNRESET),
                n => got += n,
            }
        }
        Ok(())
    }
}

impl Transport for HostTransport {
    fn exchange(
        &self,
        upstream: SocketAddr,
        proto: Proto,
        query: &[u8],
        deadline: Instant,
    ) -> Result<Vec<u8>, TransportError> {
        match proto {
            Proto::Udp => self.udp(upstream, query, deadline),
            Proto::Tcp => self.tcp(upstream, query, deadline),
        }
        .map_err(transport_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resolver_address_in_every_spelling() {
        assert!(is_resolver("10.0.2.2:53".parse().unwrap()));
        assert!(is_resolver("[::ffff:10.0.2.2]:53".parse().unwrap()));
        assert!(!is_resolver("10.0.2.2:54".parse().unwrap()));
        assert!(!is_resolver("10.0.2.3:53".parse().unwrap()));
        assert!(resolv_conf().contains("\nnameserver 10.0.2.2\n"));
    }
}
