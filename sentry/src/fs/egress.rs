//! The egress gateway's side in the files (ARCHITECTURE.md §5): the
//! sandbox's policy and its way out, and the host connection a guest IP
//! socket is carried on once the policy lets it leave. The guest keeps
//! its own socket file (`inet.rs`); the host descriptor never reaches it.
//! Readiness comes from the host socket through the host-descriptor
//! notifier, so a guest waits for it as for any file.

use crate::abi::ioctl::FIONREAD;
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRNORM};
use crate::abi::socket::{
    IPPROTO_TCP, SOL_SOCKET, SO_KEEPALIVE, SO_RCVBUF, SO_SNDBUF, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_NODELAY,
};
use crate::abi::Errno;
use crate::audit::{AuditLog, Record};
use crate::fs::egress_rate::{Rate, Shaper};
use crate::fs::inbound::{Inbound, Mode};
use crate::host::outer::{Kind, Outer};
use crate::host::{fd as host_fd, socket as host};
use crate::mm::accounting::{self, Accountant, Charge};
use crate::waiter::Queue;
use husk_netstack::dns::Resolver;
use husk_netstack::egress::{Denial, Host, Policy, Rule, Verdict};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The int options a carried connection passes on to its host socket
/// (set before the connect, they are applied when it goes out); the
/// sentry's seccomp filter allows setting exactly these.
pub(crate) const FORWARDED_OPTIONS: &[(i32, i32)] = &[
    (SOL_SOCKET, SO_KEEPALIVE),
    (IPPROTO_TCP, TCP_NODELAY),
    (IPPROTO_TCP, TCP_KEEPIDLE),
    (IPPROTO_TCP, TCP_KEEPINTVL),
    (IPPROTO_TCP, TCP_KEEPCNT),
];

/// The ports DNS servers answer on (53 over UDP and TCP, DNS over TLS
/// on 853): only the sandbox's resolver may be asked, unless an address
/// rule names the server.
const DNS_PORTS: [u16; 2] = [53, 853];

/// Whether `value` is one Linux accepts for option `opt` (do_tcp_setsockopt:
/// TCP_KEEPIDLE and TCP_KEEPINTVL 1..=32767 s, TCP_KEEPCNT 1..=127); a
/// value the host would refuse must be refused when the guest sets it,
/// not when a later connect forwards it.
pub(crate) fn valid_option(opt: (i32, i32), value: i32) -> bool {
    match opt {
        (IPPROTO_TCP, TCP_KEEPIDLE | TCP_KEEPINTVL) => (1..=32767).contains(&value),
        (IPPROTO_TCP, TCP_KEEPCNT) => (1..=127).contains(&value),
        _ => true,
    }
}

/// The most host sockets a sandbox holds at once unless
/// `--egress-max-conns` says otherwise: each is a descriptor of the
/// sentry, so a guest may not take them all.
pub const HOST_SOCKETS: usize = 1024;

/// What the operator limits a sandbox's egress to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Host sockets (connections, datagram flows) open at once; past it
    /// a connect or datagram out is refused (EPERM, net.denied).
    pub max_conns: usize,
    /// Bytes a second each way, for the whole sandbox.
    pub rate: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_conns: HOST_SOCKETS, rate: None }
    }
}

/// Why the gateway opened no host socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// The sandbox holds `--egress-max-conns` (the number) already.
    Limit(usize),
    /// The host's or the memory limit's failure.
    Errno(Errno),
}

impl From<Errno> for OpenError {
    fn from(e: Errno) -> OpenError {
        OpenError::Errno(e)
    }
}

/// Each host socket's SO_SNDBUF and SO_RCVBUF. Linux doubles what is set
/// (for its bookkeeping), so a socket may hold twice both: that is what
/// is charged to the sandbox's memory, so `--memory-mb` bounds it.
pub(crate) const HOST_BUFFER: i32 = 64 * 1024;
const HOST_CHARGE: u64 = 4 * 64 * 1024;

/// The setsockopt calls the gateway makes on each host socket it opens;
/// the sentry's seccomp filter allows them.
pub(crate) const BUFFER_OPTIONS: &[(i32, i32)] = &[(SOL_SOCKET, SO_SNDBUF), (SOL_SOCKET, SO_RCVBUF)];

/// A sandbox's egress gateway: what may leave, the resolver that knows
/// which addresses allowed names stand for, and the thread that opens host
/// sockets in the outer network namespace.
pub(crate) struct Gateway {
    policy: Policy,
    resolver: Arc<Resolver>,
    outer: Arc<Outer>,
    /// Host sockets open now, and how many may be.
    live: Arc<AtomicUsize>,
    budget: usize,
    /// The sandbox's memory, which host socket buffers are charged to.
    memory: Arc<Accountant>,
    /// `--egress-rate`'s buckets.
    rate: Option<Arc<Rate>>,
    /// `--network host`: no policy at all.
    unfiltered: bool,
    /// Connections into the sandbox (`--publish`, a container's ports).
    inbound: Option<Arc<Inbound>>,
}

/// A host socket's place in the sandbox's budget and its buffers' charge,
/// both returned when it is dropped.
pub(crate) struct Lease {
    live: Arc<AtomicUsize>,
    charge: Charge,
    /// The sandbox's rate, which the connection is paced by.
    rate: Option<Arc<Rate>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A host socket the gateway opened, with its lease.
pub(crate) struct Opened {
    pub fd: OwnedFd,
    pub lease: Lease,
}

impl Gateway {
    pub(crate) fn new(policy: Policy, resolver: Resolver, outer: Outer, limits: Limits) -> Gateway {
        Gateway {
            policy,
            resolver: Arc::new(resolver),
            outer: Arc::new(outer),
            live: Arc::default(),
            budget: limits.max_conns,
            memory: accounting::sandbox(),
            rate: limits.rate.map(Rate::new),
            unfiltered: false,
            inbound: None,
        }
    }

    /// The gateway of `--network host`: it lets every destination out
    /// (the limits still hold).
    pub(crate) fn unfiltered(self) -> Gateway {
        Gateway { unfiltered: true, ..self }
    }

    /// The verdict on a connection or datagram to `dest`: allowed when an
    /// address rule allows it, or when no rule denies it and it is an
    /// address an allowed name resolved to whose rule opens the port. The
    /// reserved ranges and deny rules win over names; a DNS server other
    /// than the sandbox's resolver needs an address rule of its own (`*`
    /// is not one), so DNS cannot carry data past the resolver. With the
    /// verdict, the allowed name the address came from when that is what
    /// lets it through.
    pub(crate) fn decide(&self, dest: SocketAddr) -> (Verdict, Option<String>) {
        if self.unfiltered {
            return (Verdict::Allowed { rule: "--network host".into() }, None);
        }
        let verdict = self.policy.check(dest);
        let dns = DNS_PORTS.contains(&dest.port());
        match &verdict {
            Verdict::Allowed { .. } if dns => match self.address_rule_for(dest) {
                Some(rule) => (Verdict::Allowed { rule }, None),
                None => (Verdict::Denied(Denial::NoAllowRule), None),
            },
            Verdict::Denied(Denial::NoAllowRule) if !dns => {
                let now = Instant::now();
                let learned = |ip| self.resolver.name_allowing(ip, dest.port(), now);
                match learned(dest.ip()).or_else(|| learned(husk_netstack::egress::canonical(dest.ip()))) {
                    Some((name, rule)) => (Verdict::Allowed { rule: rule.to_string() }, Some(name)),
                    None => (verdict, None),
                }
            }
            _ => (verdict, None),
        }
    }

    /// The first address rule (not `*`) that allows `dest`, whose verdict
    /// the policy already found allowed.
    fn address_rule_for(&self, dest: SocketAddr) -> Option<String> {
        let ip = husk_netstack::egress::canonical(dest.ip());
        let names_it = |r: &&Rule| matches!(r.host, Host::Net(_)) && r.covers_addr(ip) && r.covers_port(dest.port());
        self.policy.allow_rules().iter().find(names_it).map(|r| r.text.clone())
    }

    /// The sandbox's resolver.
    pub(crate) fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// The thread that opens host sockets in the outer namespace.
    pub(crate) fn outer(&self) -> &Arc<Outer> {
        &self.outer
    }

    /// A new host socket in the outer namespace, IPv6 or IPv4, with
    /// bounded buffers; refused past the sandbox's budget of sockets
    /// (`--egress-max-conns`), ENOBUFS past its memory limit.
    pub(crate) fn open(&self, v6: bool, kind: Kind) -> Result<Opened, OpenError> {
        let lease = self.lease()?;
        let fd = self.outer.socket(v6, kind)?;
        bound_buffers(&fd)?;
        Ok(Opened { fd, lease })
    }

    /// A place in the sandbox's budget of host sockets
    /// (`--egress-max-conns`), with their buffers' charge to its memory
    /// (ENOBUFS past its limit).
    pub(crate) fn lease(&self) -> Result<Lease, OpenError> {
        let taken = self.live.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.budget).then_some(n + 1));
        if taken.is_err() {
            return Err(OpenError::Limit(self.budget));
        }
        let charge = Charge::new(self.memory.clone());
        let mut lease = Lease { live: self.live.clone(), charge, rate: self.rate.clone() };
        if !lease.charge.grow(HOST_CHARGE) {
            return Err(OpenError::Errno(Errno::ENOBUFS));
        }
        Ok(lease)
    }

    /// Carries a connection a host listener accepted (`inbound`): it takes
    /// a lease like a connection out, and the same bounded buffers.
    pub(crate) fn admit(&self, fd: OwnedFd) -> Result<Opened, OpenError> {
        let lease = self.lease()?;
        bound_buffers(&fd)?;
        Ok(Opened { fd, lease })
    }

    /// Connections into the sandbox, when it takes any.
    pub(crate) fn inbound(&self) -> Option<&Arc<Inbound>> {
        self.inbound.as_ref()
    }

    /// Lets connections in as `mode` says (binding `--publish`'s ports
    /// now); a port that cannot be had is the error.
    pub(crate) fn with_inbound(self, mode: Mode) -> Result<Gateway, String> {
        let inbound = Inbound::new(mode, &self.outer)?;
        Ok(Gateway { inbound: Some(inbound), ..self })
    }
}

/// Bounds a host socket's buffers (`HOST_BUFFER`), which its lease charges.
fn bound_buffers(fd: &OwnedFd) -> Result<(), Errno> {
    for &(level, name) in BUFFER_OPTIONS {
        host::set_int_option(fd.as_fd(), level, name, HOST_BUFFER)?;
    }
    Ok(())
}

/// The kernel extension (`Kernel::ext`) that holds the sandbox's gateway;
/// without one (`--network none`) nothing leaves the sandbox and every
/// other destination stays unreachable.
#[derive(Default)]
pub(crate) struct Egress(OnceLock<Arc<Gateway>>);

impl Egress {
    /// Installs the gateway; the first call wins.
    pub(crate) fn install(&self, g: Gateway) -> bool {
        self.0.set(Arc::new(g)).is_ok()
    }

    pub(crate) fn gateway(&self) -> Option<&Arc<Gateway>> {
        self.0.get()
    }
}

/// A guest connection carried on a host socket of the outer namespace:
/// a stream, or the datagrams a guest UDP socket sends out of the
/// sandbox (its loopback datagrams stay in the netstack).
pub(crate) struct HostConn {
    fd: OwnedFd,
    /// A datagram socket connected outside: sends without an address
    /// go there.
    connected: AtomicBool,
    /// Where a stream's host socket was sent to connect, while that
    /// connect is under way or made; None while it is unconnected (never
    /// connected, or its connect failed and was reported). The lock makes
    /// connects on the socket one at a time.
    dialed: Mutex<Option<SocketAddr>>,
    /// The peers a datagram socket last sent to or connected to (the
    /// most recent `PEERS_KEPT`): only their datagrams reach the guest,
    /// so no other host of the outer namespace (its loopback, a private
    /// range) can talk to it through the gateway.
    peers: Mutex<VecDeque<SocketAddr>>,
    /// The gateway's lease on the host socket, when it opened it.
    _lease: Option<Lease>,
    /// A connection a host listener accepted into the sandbox: the port
    /// of the guest listener it was handed to, which getsockname shows.
    guest_port: Option<u16>,
    /// The sandbox's rate, when it has one.
    shaper: Option<Shaper>,
    /// What its net.close record says, once the gateway let it out.
    flow: OnceLock<Flow>,
    /// Bytes out and in so far.
    sent: AtomicU64,
    received: AtomicU64,
}

/// A carried connection or datagram flow, for the net.close record its
/// end writes.
pub(crate) struct Flow {
    pub log: Option<Arc<AuditLog>>,
    pub pid: i32,
    pub protocol: String,
    pub dest: SocketAddr,
    pub start: Instant,
    /// A connection into the sandbox (`dest` is its peer).
    pub inbound: bool,
}

/// How many peers a datagram socket accepts replies from.
const PEERS_KEPT: usize = 256;

/// `a` with a v4-mapped address as the IPv4 address, so that a peer
/// compares equal however the host socket's family spells it.
fn plain(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

/// What the host poll is asked for (ERR and HUP come unasked).
const HOST_EVENTS: u32 = POLLIN | POLLOUT | POLLRDHUP | POLLRDNORM | POLLWRNORM;

impl HostConn {
    /// Carries a connection on a socket the gateway opened.
    pub(crate) fn leased(opened: Opened, queue: &Arc<Queue>) -> HostConn {
        HostConn::with_lease(opened.fd, queue, Some(opened.lease))
    }

    /// Carries a connection a host listener accepted from `peer` for the
    /// guest listener on `guest_port`: connected from the start.
    pub(crate) fn accepted(opened: Opened, queue: &Arc<Queue>, peer: SocketAddr, guest_port: u16) -> HostConn {
        let mut c = HostConn::with_lease(opened.fd, queue, Some(opened.lease));
        c.guest_port = Some(guest_port);
        *c.dialed.get_mut() = Some(peer);
        c
    }

    /// The guest listener's port, for a connection accepted into the
    /// sandbox.
    pub(crate) fn guest_port(&self) -> Option<u16> {
        self.guest_port
    }

    /// Carries a connection on `fd`; `queue` hears of its readiness.
    #[cfg(test)]
    pub(crate) fn new(fd: OwnedFd, queue: &Arc<Queue>) -> HostConn {
        HostConn::with_lease(fd, queue, None)
    }

    fn with_lease(fd: OwnedFd, queue: &Arc<Queue>, lease: Option<Lease>) -> HostConn {
        if !crate::waiter::host::watch(fd.as_raw_fd(), queue) {
            log::warn!("the host-descriptor notifier cannot watch an egress socket");
        }
        let shaper = lease.as_ref().and_then(|l| l.rate.clone()).map(|r| Shaper::new(r, queue));
        HostConn {
            fd,
            connected: AtomicBool::new(false),
            dialed: Mutex::new(None),
            peers: Mutex::default(),
            _lease: lease,
            guest_port: None,
            shaper,
            flow: OnceLock::new(),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
        }
    }

    /// Records the connection's end (net.close) when it closes; the
    /// first call wins (a datagram flow's first destination).
    pub(crate) fn track(&self, flow: Flow) {
        let _ = self.flow.set(flow);
    }

    /// Counts bytes moved by a successful transfer.
    fn count<T>(&self, up: bool, r: Result<T, Errno>, n: impl FnOnce(&T) -> usize) -> Result<T, Errno> {
        if let Ok(v) = &r {
            let counter = if up { &self.sent } else { &self.received };
            counter.fetch_add(u64::try_from(n(v)).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
        r
    }

    /// The host socket's readiness as the guest sees it: under a rate, not
    /// readable or writable while the direction's bucket is short (an
    /// alarm then wakes the socket's waiters).
    pub(crate) fn paced_events(&self) -> u32 {
        let events = self.events();
        let Some(s) = &self.shaper else { return events };
        let mut hidden = 0;
        if events & (POLLIN | POLLRDNORM) != 0 && !self.at_end(events) && !s.ready(&s.rate.down) {
            hidden |= POLLIN | POLLRDNORM;
        }
        if events & (POLLOUT | POLLWRNORM) != 0 && !s.ready(&s.rate.up) {
            hidden |= POLLOUT | POLLWRNORM;
        }
        events & !hidden
    }

    /// Whether a stream's next read sees only its end (the peer shut
    /// down and nothing is left): that is not paced, or a guest waiting
    /// for it would find the end readable and its read failing until the
    /// bucket refilled.
    fn at_end(&self, events: u32) -> bool {
        events & POLLRDHUP != 0 && self.readable_bytes().is_ok_and(|n| n == 0)
    }

    /// Runs `io` on at most the bytes `want` the rate grants in
    /// `direction` (all of them when `whole`), returning what it did not
    /// move; EAGAIN while the bucket is short.
    fn paced(
        &self,
        up: bool,
        want: usize,
        whole: bool,
        io: impl FnOnce(usize) -> Result<usize, Errno>,
    ) -> Result<usize, Errno> {
        let Some(s) = &self.shaper else { return io(want) };
        let bucket = if up { &s.rate.up } else { &s.rate.down };
        let granted = s.take(bucket, want, whole).ok_or(Errno::EAGAIN)?;
        let r = io(granted);
        bucket.refund(granted - r.as_ref().map_or(0, |&n| n.min(granted)));
        r
    }

    /// The host socket's readiness now, as poll bits.
    pub(crate) fn events(&self) -> u32 {
        let ask = i16::try_from(HOST_EVENTS).unwrap_or(0);
        match host_fd::poll_now(self.fd.as_fd(), ask) {
            Ok(r) => u32::from(u16::from_ne_bytes(r.to_ne_bytes())),
            Err(_) => POLLERR,
        }
    }

    /// connect(2) of a stream, the host's answer (EINPROGRESS, EALREADY,
    /// EISCONN, ECONNREFUSED …). While a connect is under way or made,
    /// the host socket is asked again with the destination it was given,
    /// so its answer is about that connection and it never goes
    /// anywhere else; only an unconnected socket takes a new destination,
    /// the one `admit` returns after checking it.
    pub(crate) fn dial(&self, admit: impl FnOnce() -> Result<SocketAddr, Errno>) -> Result<(), Errno> {
        let mut dialed = self.dialed.lock();
        let dest = match *dialed {
            Some(dest) => dest,
            None => admit()?,
        };
        let r = host::connect(self.fd.as_fd(), dest);
        *dialed = match r {
            Ok(()) | Err(Errno::EINPROGRESS | Errno::EALREADY | Errno::EISCONN) => Some(dest),
            Err(_) => None,
        };
        r
    }

    /// After a waited-for connect ended: asks the host socket once more,
    /// which settles it as Linux's blocking connect does when it returns:
    /// connected (EISCONN from then on), or after a failure unconnected,
    /// so that the next connect is checked afresh.
    pub(crate) fn settle(&self) {
        let _ = self.dial(|| Err(Errno::EALREADY));
    }

    /// connect(2) of a datagram socket: sends without an address go to `to`.
    pub(crate) fn connect_datagrams(&self, to: SocketAddr) -> Result<(), Errno> {
        host::connect(self.fd.as_fd(), to)?;
        self.heard_from(to);
        self.connected.store(true, Ordering::Release);
        Ok(())
    }

    /// connect(2) of a datagram socket to AF_UNSPEC or into the sandbox:
    /// sends without an address no longer go to the outside peer.
    pub(crate) fn disconnect_datagrams(&self) -> Result<(), Errno> {
        if self.connected.swap(false, Ordering::AcqRel) {
            host::disconnect(self.fd.as_fd())?;
        }
        Ok(())
    }

    /// Accepts replies from `peer` from now on.
    fn heard_from(&self, peer: SocketAddr) {
        let peer = plain(peer);
        let mut peers = self.peers.lock();
        if !peers.contains(&peer) {
            if peers.len() == PEERS_KEPT {
                peers.pop_front();
            }
            peers.push_back(peer);
        }
    }

    /// Whether a datagram socket was connected outside.
    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    pub(crate) fn send_to(&self, buf: &[u8], to: SocketAddr) -> Result<usize, Errno> {
        self.heard_from(to);
        let r = self.paced(true, buf.len(), true, |_| host::send_to(self.fd.as_fd(), buf, to));
        self.count(true, r, |&n| n)
    }

    /// One datagram from a peer the socket sent to or connected to:
    /// bytes copied, its whole length, its sender. Datagrams from anyone
    /// else are dropped unseen.
    pub(crate) fn recv_from(&self, buf: &mut [u8], peek: bool) -> Result<(usize, usize, Option<SocketAddr>), Errno> {
        self.recv_msg(buf, peek, &mut []).map(|r| (r.copied, r.full, r.from))
    }

    /// recv_from with the host's control messages into `control` (the
    /// options the socket was given decide which).
    pub(crate) fn recv_msg(&self, buf: &mut [u8], peek: bool, control: &mut [u8]) -> Result<host::Received, Errno> {
        if let Some(s) = &self.shaper {
            if !s.ready(&s.rate.down) {
                return Err(Errno::EAGAIN);
            }
        }
        loop {
            let got = host::recv_msg(self.fd.as_fd(), buf, peek, false, control)?;
            let known = got.from.is_some_and(|from| self.peers.lock().contains(&plain(from)));
            if known {
                if let Some(s) = self.shaper.as_ref().filter(|_| !peek) {
                    s.rate.down.charge(got.full);
                }
                let moved = if peek { 0 } else { got.full };
                return self.count(false, Ok(got), |_| moved);
            }
            if peek {
                host::recv_from(self.fd.as_fd(), &mut [], false)?;
            }
        }
    }

    /// One entry of the host socket's error queue (MSG_ERRQUEUE) with its
    /// control messages; EAGAIN when it is empty. Never blocks.
    pub(crate) fn recv_error(&self, buf: &mut [u8], peek: bool, control: &mut [u8]) -> Result<host::Received, Errno> {
        host::recv_msg(self.fd.as_fd(), buf, peek, true, control)
    }

    /// A started connect's outcome: EAGAIN while it is under way.
    pub(crate) fn connected(&self) -> Result<(), Errno> {
        if self.events() & (POLLOUT | POLLERR | POLLHUP) == 0 {
            return Err(Errno::EAGAIN);
        }
        match self.take_error()? {
            0 => Ok(()),
            e => Err(Errno(e)),
        }
    }

    /// A stream's send of what the rate grants now; a datagram socket's
    /// (connected outside) of the whole datagram.
    pub(crate) fn send(&self, buf: &[u8]) -> Result<usize, Errno> {
        let whole = self.is_connected();
        let r = self.paced(true, buf.len(), whole, |n| host::send(self.fd.as_fd(), &buf[..n.min(buf.len())]));
        self.count(true, r, |&n| n)
    }

    /// A stream's receive of what the rate grants now (a peek takes
    /// nothing from it).
    pub(crate) fn recv(&self, buf: &mut [u8], peek: bool) -> Result<usize, Errno> {
        if peek || (self.shaper.is_some() && self.at_end(self.events())) {
            return host::recv(self.fd.as_fd(), buf, peek);
        }
        let r = self.paced(false, buf.len(), false, |n| {
            let end = n.min(buf.len());
            host::recv(self.fd.as_fd(), &mut buf[..end], false)
        });
        self.count(false, r, |&n| n)
    }

    pub(crate) fn shutdown(&self, read: bool, write: bool) -> Result<(), Errno> {
        host::shutdown(self.fd.as_fd(), read, write)
    }

    /// The real peer.
    pub(crate) fn peer(&self) -> Result<SocketAddr, Errno> {
        host::peer(self.fd.as_fd())
    }

    /// bind(2) of the host socket (an ICMP echo socket's id).
    pub(crate) fn bind(&self, to: SocketAddr) -> Result<(), Errno> {
        host::bind(self.fd.as_fd(), to)
    }

    /// The host socket's own address (its port is the connection's).
    pub(crate) fn local(&self) -> Result<SocketAddr, Errno> {
        host::local(self.fd.as_fd())
    }

    /// SO_ERROR, cleared.
    pub(crate) fn take_error(&self) -> Result<i32, Errno> {
        host::take_error(self.fd.as_fd())
    }

    /// An int option the host socket honors (TCP_NODELAY, SO_KEEPALIVE …).
    pub(crate) fn set_option(&self, level: i32, name: i32, value: i32) -> Result<(), Errno> {
        host::set_int_option(self.fd.as_fd(), level, name, value)
    }

    /// An option given as bytes (ping sockets' IP_TTL, ICMP6_FILTER …).
    pub(crate) fn set_option_bytes(&self, level: i32, name: i32, value: &[u8]) -> Result<(), Errno> {
        host::set_option(self.fd.as_fd(), level, name, value)
    }

    /// An option's value as the host socket holds it (ping sockets'
    /// options): the bytes of `value` the host filled.
    pub fn option_bytes(&self, level: i32, name: i32, value: &mut [u8]) -> Result<usize, Errno> {
        host::get_option(self.fd.as_fd(), level, name, value)
    }

    /// FIONREAD: bytes waiting to be read.
    pub(crate) fn readable_bytes(&self) -> Result<i32, Errno> {
        let mut n = [0u8; 4];
        host_fd::tty_ioctl(self.fd.as_fd(), FIONREAD, &mut n)?;
        Ok(i32::from_le_bytes(n))
    }
}

impl Drop for HostConn {
    fn drop(&mut self) {
        crate::waiter::host::unwatch(self.fd.as_raw_fd());
        let Some(flow) = self.flow.take() else { return };
        if let Some(log) = &flow.log {
            let record = Record::NetClose {
                pid: flow.pid,
                protocol: flow.protocol,
                address: flow.dest.ip().to_string(),
                port: flow.dest.port(),
                sent: self.sent.load(Ordering::Relaxed),
                received: self.received.load(Ordering::Relaxed),
                duration_ms: u64::try_from(flow.start.elapsed().as_millis()).unwrap_or(u64::MAX),
                direction: flow.inbound.then(|| "inbound".to_owned()),
            };
            // A log that fails has stopped the sandbox already (it fails
            // closed); a close has nobody to report to.
            let _ = log.write(&record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use husk_netstack::dns::{Config, NamePolicy, Proto, Transport, TransportError};

    /// An upstream that answers every A query with 198.18.0.2.
    struct Upstream;

    impl Transport for Upstream {
        fn exchange(&self, _: SocketAddr, _: Proto, query: &[u8], _: Instant) -> Result<Vec<u8>, TransportError> {
            let mut end = 12;
            while query[end] != 0 {
                end += usize::from(query[end]) + 1;
            }
            let question = &query[12..end + 5];
            let mut reply = query[..2].to_vec();
            reply.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
            reply.extend_from_slice(question);
            reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 2]);
            Ok(reply)
        }
    }

    /// A query for `name`'s A record.
    fn query(name: &str) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(u8::try_from(label.len()).unwrap());
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }

    fn gateway(allow: &[&str]) -> Gateway {
        let policy = Policy::parse(allow, &["198.18.0.66"]).unwrap();
        let names = NamePolicy::from_rules(allow.iter().copied(), []).unwrap();
        let resolver = Resolver::new(names, vec!["192.0.2.53:53".parse().unwrap()], Config::default());
        Gateway::new(policy, resolver, Outer::start(|| Ok(())).unwrap(), Limits::default())
    }

    fn allowed(g: &Gateway, dest: &str) -> bool {
        g.decide(dest.parse().unwrap()).0.is_allowed()
    }

    #[test]
    fn an_address_is_allowed_once_an_allowed_name_resolved_to_it_and_on_its_ports_only() {
        let g = gateway(&["api.test:8080"]);
        assert!(!allowed(&g, "198.18.0.2:8080"), "not before the name was resolved");
        let reply = g.resolver().resolve(&query("api.test"), Proto::Udp, &Upstream, &Instant::now);
        assert!(reply.message.is_some(), "{:?}", reply.record);
        assert_eq!(
            g.decide("198.18.0.2:8080".parse().unwrap()),
            (Verdict::Allowed { rule: "api.test:8080".into() }, Some("api.test".into()))
        );
        assert!(allowed(&g, "[::ffff:198.18.0.2]:8080"), "its v4-mapped spelling too");
        assert!(!allowed(&g, "198.18.0.2:8081"), "a port the name's rule does not open");
        assert!(!allowed(&g, "198.18.0.3:8080"), "an address the name did not resolve to");
        assert!(!allowed(&g, "198.18.0.2:53"), "DNS on an allowed name's host");
    }

    #[test]
    fn an_unfiltered_gateway_lets_everything_out() {
        let g = gateway(&[]).unfiltered();
        for dest in ["169.254.169.254:80", "10.0.0.1:80", "198.18.0.66:443", "198.18.0.5:53", "[::1]:22"] {
            assert_eq!(g.decide(dest.parse().unwrap()), (Verdict::Allowed { rule: "--network host".into() }, None));
        }
    }

    #[test]
    fn other_dns_servers_need_an_address_rule() {
        let g = gateway(&["*", "198.18.0.9:53"]);
        assert!(allowed(&g, "198.18.0.5:443"));
        for port in [53, 853] {
            assert!(!allowed(&g, &format!("198.18.0.5:{port}")), "{port} under *");
        }
        assert!(allowed(&g, "198.18.0.9:53"), "a server an address rule names");
        assert!(!allowed(&g, "198.18.0.66:443"), "deny rules still win");
    }

    use std::cell::Cell;
    use std::net::TcpListener;
    use std::time::Duration;

    fn stream() -> HostConn {
        let fd = crate::host::outer::Outer::start(|| Ok(())).unwrap().socket(false, Kind::Stream).unwrap();
        HostConn::new(fd, &Arc::new(Queue::default()))
    }

    /// Waits for a started connect's outcome.
    fn outcome(c: &HostConn) -> Result<(), Errno> {
        let start = Instant::now();
        loop {
            match c.connected() {
                Err(Errno::EAGAIN) if start.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                r => return r,
            }
        }
    }

    fn closed_port() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }

    #[test]
    fn a_connect_under_way_or_made_never_takes_a_new_destination() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = stream();
        let r = c.dial(|| Ok(l.local_addr().unwrap()));
        assert!(matches!(r, Ok(()) | Err(Errno::EINPROGRESS)), "{r:?}");
        let asked = Cell::new(false);
        let other = closed_port();
        let again = c.dial(|| {
            asked.set(true);
            Ok(other)
        });
        assert!(!asked.get(), "a second destination was considered");
        assert!(matches!(again, Ok(()) | Err(Errno::EALREADY | Errno::EISCONN)), "{again:?}");
        outcome(&c).unwrap();
        assert_eq!(c.dial(|| Ok(other)), Err(Errno::EISCONN));
        assert_eq!(c.peer().unwrap(), l.local_addr().unwrap());
    }

    #[test]
    fn a_failed_connect_leaves_the_socket_to_connect_afresh_after_a_check() {
        let c = stream();
        let r = c.dial(|| Ok(closed_port()));
        assert!(matches!(r, Err(Errno::EINPROGRESS | Errno::ECONNREFUSED)), "{r:?}");
        if r.is_ok() || r == Err(Errno::EINPROGRESS) {
            assert_eq!(outcome(&c), Err(Errno::ECONNREFUSED));
            c.settle();
        }
        // The next connect is the policy's again: a refusal stops it.
        assert_eq!(c.dial(|| Err(Errno::EPERM)), Err(Errno::EPERM));
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let r = c.dial(|| Ok(l.local_addr().unwrap()));
        assert!(matches!(r, Ok(()) | Err(Errno::EINPROGRESS)), "{r:?}");
        outcome(&c).unwrap();
        assert_eq!(c.peer().unwrap(), l.local_addr().unwrap());
    }

    #[test]
    fn a_datagram_socket_hears_only_from_its_peers() {
        let fd = crate::host::outer::Outer::start(|| Ok(())).unwrap().socket(false, Kind::Datagram).unwrap();
        let c = HostConn::new(fd, &Arc::new(Queue::default()));
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        c.send_to(b"hi", peer.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 16];
        let (_, me) = peer.recv_from(&mut buf).unwrap();
        stranger.send_to(b"intruder", me).unwrap();
        peer.send_to(b"reply", me).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        for peek in [true, false] {
            let (n, _, from) = c.recv_from(&mut buf, peek).unwrap();
            assert_eq!((&buf[..n], from), (&b"reply"[..], Some(peer.local_addr().unwrap())));
        }
        assert_eq!(c.recv_from(&mut buf, false), Err(Errno::EAGAIN));
    }

    fn budgeted(budget: usize, memory: Arc<Accountant>) -> Gateway {
        Gateway { budget, memory, ..gateway(&["*"]) }
    }

    #[test]
    fn host_sockets_are_budgeted_and_their_buffers_bounded_and_charged() {
        let memory = Accountant::new(1 << 30);
        let g = budgeted(3, memory.clone());
        let open: Vec<Opened> = (0..3).map(|_| g.open(false, Kind::Stream).unwrap()).collect();
        assert_eq!(g.open(false, Kind::Datagram).err(), Some(OpenError::Limit(3)), "past the budget");
        assert_eq!(memory.charged(), 3 * HOST_CHARGE);
        let sndbuf = nix::sys::socket::getsockopt(&open[0].fd, nix::sys::socket::sockopt::SndBuf).unwrap();
        assert_eq!(sndbuf, 2 * 64 * 1024, "Linux doubles what is set");
        drop(open);
        assert_eq!(memory.charged(), 0);
        let again = g.open(true, Kind::Datagram).unwrap();
        drop(again);
        let small = budgeted(10, Accountant::new(2 * HOST_CHARGE));
        let first = small.open(false, Kind::Stream).unwrap();
        let past = small.open(false, Kind::Stream).err();
        assert_eq!(past, Some(OpenError::Errno(Errno::ENOBUFS)), "past the memory limit");
        drop(first);
        small.open(false, Kind::Stream).unwrap();
    }

    #[test]
    fn a_paced_stream_waits_for_its_bucket_but_not_for_its_end() {
        use std::io::Write;
        let limits = Limits { max_conns: 4, rate: Some(16 * 1024) };
        let policy = Policy::parse(&["*"], &[] as &[&str]).unwrap();
        let resolver = Resolver::new(NamePolicy::from_rules(["*"], []).unwrap(), Vec::new(), Config::default());
        let g = Gateway::new(policy, resolver, Outer::start(|| Ok(())).unwrap(), limits);
        let queue = Arc::new(Queue::default());
        let c = HostConn::leased(g.open(false, Kind::Stream).unwrap(), &queue);
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _ = c.dial(|| Ok(l.local_addr().unwrap()));
        outcome(&c).unwrap();
        let (mut peer, _) = l.accept().unwrap();
        peer.write_all(&[7u8; 20 * 1024]).unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut buf = vec![0u8; 64 * 1024];
        assert_eq!(c.recv(&mut buf, false), Ok(16 * 1024), "the burst");
        assert_eq!(c.recv(&mut buf, false), Err(Errno::EAGAIN), "the rest waits for the bucket");
        assert_eq!(c.paced_events() & POLLIN, 0, "and does not read as ready");
        let start = Instant::now();
        let rest = loop {
            match c.recv(&mut buf, false) {
                Err(Errno::EAGAIN) if start.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                r => break r,
            }
        };
        assert_eq!(rest, Ok(4 * 1024));
        assert!(start.elapsed() >= Duration::from_millis(150), "4K at 16K a second came early");
        // The bucket is empty again, but the end is not paced.
        assert_ne!(c.paced_events() & POLLIN, 0, "the end reads as ready");
        assert_eq!(c.recv(&mut buf, false), Ok(0));
        assert_eq!((c.sent.load(Ordering::Relaxed), c.received.load(Ordering::Relaxed)), (0, 20 * 1024));
    }

    #[test]
    fn keepalive_options_take_linux_ranges() {
        for (opt, ok, bad) in [
            ((IPPROTO_TCP, TCP_KEEPIDLE), [1, 32767], [0, 32768]),
            ((IPPROTO_TCP, TCP_KEEPINTVL), [1, 32767], [-1, 32768]),
            ((IPPROTO_TCP, TCP_KEEPCNT), [1, 127], [0, 128]),
        ] {
            assert!(ok.iter().all(|&v| valid_option(opt, v)), "{opt:?}");
            assert!(!bad.iter().any(|&v| valid_option(opt, v)), "{opt:?}");
        }
        assert!(valid_option((IPPROTO_TCP, TCP_NODELAY), 0));
    }
}
