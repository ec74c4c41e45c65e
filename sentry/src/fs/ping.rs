//! ICMP echo sockets (SOCK_DGRAM with IPPROTO_ICMP or IPPROTO_ICMPV6),
//! as unprivileged `ping` uses them. Each is carried on a host ping
//! socket the egress gateway opens in the outer network namespace, so
//! the host kernel assigns echo ids, checks the ICMP header and routes
//! replies exactly as Linux's ping sockets do; the guest only ever holds
//! this file. Without a gateway (`--network none`) the socket exists but
//! has no way out: sends fail with ENETUNREACH, as with no route.

use crate::abi::poll::{POLLOUT, POLLWRNORM};
use crate::abi::Errno;
use crate::fs::egress::{HostConn, Opened};
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::{Entry, Queue};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// ICMPv6's type filter (struct icmp6_filter; netinet/icmp6.h).
pub(crate) const ICMP6_FILTER: i32 = 1;

/// The options a guest sets on its ping socket's host socket, as Linux's
/// ping sockets take them (the host's answer, errno included, is the
/// guest's); the sentry's seccomp filter allows exactly these.
pub(crate) const HOST_OPTIONS: &[(i32, i32)] = &[
    (libc::SOL_IP, libc::IP_RECVERR),
    (libc::SOL_IP, libc::IP_RECVTTL),
    (libc::SOL_IP, libc::IP_TTL),
    (libc::SOL_IP, libc::IP_TOS),
    (libc::SOL_IP, libc::IP_MTU_DISCOVER),
    (libc::SOL_IP, libc::IP_RETOPTS),
    (libc::SOL_SOCKET, libc::SO_TIMESTAMP),
    (libc::SOL_SOCKET, libc::SO_TIMESTAMPNS),
    (libc::SOL_SOCKET, libc::SO_SNDBUF),
    (libc::SOL_SOCKET, libc::SO_RCVBUF),
    (libc::SOL_SOCKET, libc::SO_BROADCAST),
    (libc::SOL_IPV6, libc::IPV6_RECVERR),
    (libc::SOL_IPV6, libc::IPV6_RECVHOPLIMIT),
    (libc::SOL_IPV6, libc::IPV6_UNICAST_HOPS),
    (libc::SOL_ICMPV6, ICMP6_FILTER),
];

/// The control messages the host's recvmsg may pass on to the guest
/// (what the options above ask for); x86_64 host and guest share their
/// layout.
pub(crate) const HOST_CONTROL: &[(i32, i32)] = &[
    (libc::SOL_IP, libc::IP_RECVERR),
    (libc::SOL_IP, libc::IP_TTL),
    (libc::SOL_IP, libc::IP_TOS),
    (libc::SOL_SOCKET, libc::SCM_TIMESTAMP),
    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS),
    (libc::SOL_IPV6, libc::IPV6_RECVERR),
    (libc::SOL_IPV6, libc::IPV6_HOPLIMIT),
];

/// A guest ICMP echo socket.
pub(crate) struct PingSocket {
    ino: u64,
    created: TimeSpec,
    /// An ICMPv6 socket (AF_INET6), else ICMP (AF_INET).
    pub v6: bool,
    /// The host ping socket; None without a gateway.
    host: Option<HostConn>,
    /// Waiters for the host socket's readiness.
    events: Arc<Queue>,
    /// Destinations this socket's echo requests to were recorded for
    /// (one net.connect per destination).
    pub recorded: Mutex<HashSet<IpAddr>>,
    /// SO_RCVTIMEO and SO_SNDTIMEO.
    pub timeouts: Mutex<(Option<Duration>, Option<Duration>)>,
}

impl PingSocket {
    pub(crate) fn new(ino: u64, created: TimeSpec, v6: bool, host: Option<Opened>) -> Arc<PingSocket> {
        let events = Arc::new(Queue::default());
        let host = host.map(|o| HostConn::leased(o, &events));
        Arc::new(PingSocket { ino, created, v6, host, events, recorded: Mutex::default(), timeouts: Mutex::default() })
    }

    /// The host socket the echo requests leave on: ENETUNREACH without
    /// a gateway.
    pub(crate) fn host(&self) -> Result<&HostConn, Errno> {
        self.host.as_ref().ok_or(Errno::ENETUNREACH)
    }
}

super::anon::socket_node!(PingSocket);

impl FileOps for PingSocket {
    /// One echo reply (with its ICMP header); EAGAIN without one.
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        let host = self.host.as_ref().ok_or(Errno::EAGAIN)?;
        host.recv_from(buf, false).map(|(n, _, _)| n)
    }

    /// An echo request to the connected peer (whose connect the policy
    /// allowed); the host checks its header.
    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        let host = self.host()?;
        if !host.is_connected() {
            return Err(Errno::EDESTADDRREQ);
        }
        host.send(buf)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        self.host.as_ref().map_or(POLLOUT | POLLWRNORM, HostConn::paced_events)
    }

    fn event_register(&self, e: &Entry) {
        self.events.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }

    fn io_timeout(&self, write: bool) -> Option<Duration> {
        crate::fs::sockopt::io_timeout(&self.timeouts, write)
    }
}
