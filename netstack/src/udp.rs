//! UDP endpoints. A datagram to one of the sandbox's addresses is queued
//! on the socket bound there, or dropped when that socket's queue is full;
//! to a port nobody holds it is lost, and a connected sender learns of it
//! (ECONNREFUSED on its next call), as Linux's ICMP port-unreachable does;
//! a sender that asked for errors (IP_RECVERR, IPV6_RECVERR) learns of it
//! connected or not, and finds the datagram on its error queue.
//!
//! A UDP-Lite endpoint (IPPROTO_UDPLITE) is one of these with its own
//! port space: inside the sandbox its datagrams travel whole, so the
//! checksum coverage it asks for changes nothing about them.
//!
//! The receive buffer (SO_RCVBUF) is charged what Linux charges a
//! datagram that came over loopback (its skb's truesize, `truesize`), and
//! a datagram that would take the charge past the buffer's size is
//! dropped unless the queue is empty, as in __udp_enqueue_schedule_skb.

use crate::addr::{self, Family};
use crate::multicast::{self, Memberships, Options as McastOptions};
use crate::ports::{Local, PortTable, ShareOpts};
use crate::waiter::Queue;
use crate::{events, Error, Stack};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Weak};

/// The receive buffer a socket has until SO_RCVBUF sets one (Linux's
/// default rmem, as SO_RCVBUF reports it).
pub const RECEIVE_BUFFER: usize = 212_992;

/// What a datagram of `len` bytes that travelled as IPv6 (`v6`) or IPv4
/// costs its receiver's buffer: the truesize Linux 6.18 gives the skb of
/// a datagram over loopback, as SO_MEMINFO shows it. Its head holds the
/// payload, the headers and reserve (59 bytes, 72 for IPv6) and the
/// shared info (320): up to 576 bytes it comes from the small-head cache,
/// below 16 KiB from a power-of-two allocation, above that from page
/// fragments; the sk_buff itself adds 256. So an empty datagram costs
/// 832, and a full buffer holds as many datagrams as on Linux.
fn truesize(len: usize, v6: bool) -> usize {
    const SKB: usize = 256;
    let head = len + if v6 { 392 } else { 379 };
    match head {
        ..=576 => 576 + SKB,
        577..16_384 => head.next_power_of_two() + SKB,
        _ => len + 832,
    }
}

/// The MTU of lo: what a datagram too big for it is told (ee_info).
const LOOPBACK_MTU: u32 = 65_536;

/// The largest payload of a datagram to `dest` (canonical): 65535 less
/// the IP and UDP headers.
fn max_payload(dest: SocketAddr) -> usize {
    match dest {
        SocketAddr::V4(_) => 65_507,
        SocketAddr::V6(_) => 65_527,
    }
}

/// How much of a datagram a port-unreachable error quotes: an ICMP error
/// fits in 576 bytes (IPv4) or 1280 (IPv6), less its own IP and ICMP
/// headers and the datagram's IP and UDP headers.
fn quoted(to: IpAddr) -> usize {
    match to {
        IpAddr::V4(_) => 576 - 28 - 28,
        IpAddr::V6(_) => 1280 - 48 - 48,
    }
}

/// The IP header of the port unreachable a datagram to `to` (canonical)
/// sent with `sent` draws: the default TTL (hop limit), and for IPv4 the
/// datagram's TOS bits under the internetwork-control precedence, as
/// icmp_send sets them (ICMPv6 errors have traffic class 0).
fn error_header(to: IpAddr, sent: Header) -> Header {
    /// IPTOS_TOS_MASK and IPTOS_PREC_INTERNETCONTROL.
    const TOS_MASK: u8 = 0x1e;
    const INTERNET_CONTROL: u8 = 0xc0;
    let tos = match to {
        IpAddr::V4(_) => sent.tos & TOS_MASK | INTERNET_CONTROL,
        IpAddr::V6(_) => 0,
    };
    Header { tos, ttl: Header::default().ttl }
}

/// A datagram waiting to be read: its sender, how it arrived, its bytes
/// and what it is charged.
struct Queued {
    from: SocketAddr,
    meta: Meta,
    data: Vec<u8>,
    cost: usize,
}

/// An entry of the error queue: where the datagram that drew it was sent,
/// how the error arrived, what the datagram left (the part an ICMP error
/// quotes; nothing of one refused locally), the error and its charge.
struct ErrorEntry {
    to: SocketAddr,
    arrived: Meta,
    data: Vec<u8>,
    kind: ErrorKind,
    cost: usize,
}

/// Why a datagram came back on the error queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Its destination's port unreachable (ECONNREFUSED, reported by an
    /// ICMP or ICMPv6 message from the destination).
    PortUnreachable,
    /// Too big for the route, refused by the sender's own stack (EMSGSIZE,
    /// SO_EE_ORIGIN_LOCAL, with the route's MTU).
    TooBig { mtu: u32 },
}

struct Inner {
    local: Local,
    peer: Option<SocketAddr>,
    inbox: VecDeque<Queued>,
    /// What the inbox and the error queue are charged (sk_rmem_alloc).
    queued: usize,
    /// SO_RCVBUF as Linux keeps it (the doubled value).
    rcvbuf: usize,
    /// What this socket's datagrams carry in their IP header.
    header: Header,
    error: Option<Error>,
    /// IP_RECVERR and IPV6_RECVERR: errors of datagrams to IPv4 and to
    /// IPv6 destinations are queued, and reach an unconnected socket too.
    recv_errors: (bool, bool),
    /// The datagrams that drew an error, charged to the receive buffer as
    /// Linux does.
    errors: VecDeque<ErrorEntry>,
    read_shut: bool,
    write_shut: bool,
    /// SO_BROADCAST.
    broadcast: bool,
}

/// The header fields one datagram's control messages set (IP_TTL and
/// IP_TOS, IPV6_HOPLIMIT and IPV6_TCLASS), over the socket's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeaderOverride {
    pub tos: Option<u8>,
    pub ttl: Option<u8>,
}

impl HeaderOverride {
    fn over(self, h: Header) -> Header {
        Header { tos: self.tos.unwrap_or(h.tos), ttl: self.ttl.unwrap_or(h.ttl) }
    }
}

/// Which protocol a datagram endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Udp,
    /// UDP-Lite: UDP's behaviour, its own ports.
    UdpLite,
}

/// The ports of `protocol` in `stack`.
fn ports_of(stack: &Stack, protocol: Protocol) -> &Mutex<PortTable<UdpEndpoint>> {
    match protocol {
        Protocol::Udp => &stack.udp,
        Protocol::UdpLite => &stack.udplite,
    }
}

/// A socket's multicast options and the groups it joined.
#[derive(Default)]
struct Multicast {
    opts: McastOptions,
    members: Memberships,
}

/// A UDP socket.
pub struct UdpEndpoint {
    stack: Arc<Stack>,
    family: Family,
    protocol: Protocol,
    me: Weak<UdpEndpoint>,
    queue: Queue,
    inner: Mutex<Inner>,
    /// Locked on its own, never while `inner` is: a datagram to a group
    /// looks at every member's.
    multicast: Mutex<Multicast>,
}

/// A received datagram: bytes copied, its whole length, its sender.
#[derive(Debug, PartialEq, Eq)]
pub struct Datagram {
    pub len: usize,
    pub full: usize,
    pub from: SocketAddr,
    pub meta: Meta,
}

/// A datagram the error queue gave back: bytes copied, the length the
/// error quoted, where it was sent, how the error arrived (a port
/// unreachable is sent to the datagram's source by that destination
/// itself, its header as Linux's icmp_send and icmp6_send make it) and
/// what the error is.
#[derive(Debug, PartialEq, Eq)]
pub struct QueuedError {
    pub len: usize,
    pub full: usize,
    pub to: SocketAddr,
    pub error: Meta,
    pub kind: ErrorKind,
}

/// The IP header fields a sender sets (IP_TOS/IPV6_TCLASS and
/// IP_TTL/IPV6_UNICAST_HOPS) and its receiver may ask to see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub tos: u8,
    pub ttl: u8,
}

impl Default for Header {
    fn default() -> Header {
        Header { tos: 0, ttl: 64 }
    }
}

/// How a datagram arrived: the address it was sent to, its header and
/// when it was queued (the receive timestamp).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    pub to: SocketAddr,
    pub header: Header,
    pub at: std::time::SystemTime,
}

impl UdpEndpoint {
    pub fn new(stack: &Arc<Stack>, family: Family) -> Arc<UdpEndpoint> {
        UdpEndpoint::with_protocol(stack, family, Protocol::Udp)
    }

    /// A UDP (or UDP-Lite) endpoint.
    pub fn with_protocol(stack: &Arc<Stack>, family: Family, protocol: Protocol) -> Arc<UdpEndpoint> {
        Arc::new_cyclic(|me| UdpEndpoint {
            stack: stack.clone(),
            family,
            protocol,
            me: me.clone(),
            queue: Queue::default(),
            inner: Mutex::new(Inner {
                local: Local::default(),
                peer: None,
                inbox: VecDeque::new(),
                queued: 0,
                rcvbuf: RECEIVE_BUFFER,
                header: Header::default(),
                error: None,
                recv_errors: (false, false),
                errors: VecDeque::new(),
                read_shut: false,
                write_shut: false,
                broadcast: false,
            }),
            multicast: Mutex::default(),
        })
    }

    pub fn family(&self) -> Family {
        self.family
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The ports of this endpoint's protocol.
    fn ports(&self) -> &Mutex<PortTable<UdpEndpoint>> {
        ports_of(&self.stack, self.protocol)
    }

    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// bind(2).
    pub fn bind(&self, addr: SocketAddr) -> Result<(), Error> {
        self.inner.lock().local.bind(self.ports(), self.family, addr, &self.me).map(drop)
    }

    /// connect(2): `to` becomes the default destination and the only
    /// source accepted; None (AF_UNSPEC) dissolves the association.
    pub fn connect(&self, to: Option<SocketAddr>) -> Result<(), Error> {
        let mut i = self.inner.lock();
        let Some(to) = to else {
            i.peer = None;
            return i.local.disconnect(self.ports(), self.family);
        };
        let dest = addr::destination(self.family, i.local.opts.v6only, to)?;
        addr::check_bound_family(i.local.hold.filter(|_| !i.local.chosen_ip).map(|h| h.ip), dest.ip())?;
        // (The address an implicit bind takes.)
        let bound = i.local.hold.map(|h| h.ip).or(i.local.released_ip).unwrap_or(self.family.any());
        let source = match dest.ip() {
            IpAddr::V4(_) if dest.ip().is_multicast() => IpAddr::V4(self.group_route(bound)?.source),
            // No interface has a route for IPv6 multicast.
            IpAddr::V6(_) if dest.ip().is_multicast() => return Err(Error::NetUnreachable),
            ip => addr::source(bound, ip),
        };
        i.local.hold_or_bind(self.ports(), self.family, &self.me)?;
        // Linux binds the socket to the source address toward the peer
        // (getsockname shows it).
        i.local.choose_ip(self.ports(), source, dest)?;
        i.peer = Some(dest);
        Ok(())
    }

    /// connect(2) to `to` outside the stack (the gateway carries the
    /// datagrams): the socket holds a port and, toward an IPv4 peer with
    /// an uplink, eth0's address, the source Linux would choose; it takes
    /// no datagram from inside the stack meanwhile.
    pub fn connect_outside(&self, to: SocketAddr) -> Result<(), Error> {
        let mut i = self.inner.lock();
        let remote = SocketAddr::new(addr::canonical(to.ip()), to.port());
        let h = i.local.hold_or_bind(self.ports(), self.family, &self.me)?;
        let source = match (remote.ip(), crate::iface::uplink()) {
            (IpAddr::V4(_), Some(up)) => IpAddr::V4(up.addr),
            _ => h.ip,
        };
        i.local.choose_ip(self.ports(), source, remote)?;
        i.peer = None;
        Ok(())
    }

    /// sendto(2): one datagram to `to`, or to the connected peer.
    pub fn send_to(&self, to: Option<SocketAddr>, data: &[u8]) -> Result<usize, Error> {
        self.send_with(to, data, HeaderOverride::default())
    }

    /// sendmsg(2): send_to with the header fields its control messages
    /// set.
    pub fn send_with(&self, to: Option<SocketAddr>, data: &[u8], over: HeaderOverride) -> Result<usize, Error> {
        let mut i = self.inner.lock();
        // Linux's order: the destination, the size, then (allocating the
        // packet) a shutdown and a pending error.
        let dest = self.destination(&i, to)?;
        if data.len() > max_payload(dest) {
            drop(i);
            return Err(self.too_big(dest, data.len()));
        }
        if i.write_shut {
            return Err(Error::BrokenPipe);
        }
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let h = i.local.hold_or_bind(self.ports(), self.family, &self.me)?;
        let i_header = over.over(i.header);
        if dest.ip().is_multicast() {
            drop(i);
            return self.send_to_group(h.ip, h.port, (i_header, over.ttl), dest, data);
        }
        if addr::is_broadcast(dest.ip()) {
            // Without SO_BROADCAST, EACCES (udp_sendmsg); with it, every
            // socket on the port bound to the wildcard or the broadcast
            // address takes a copy, as __udp4_lib_mcast_deliver gives it.
            if !i.broadcast {
                return Err(Error::Access);
            }
            drop(i);
            let from = SocketAddr::new(addr::source(h.ip, dest.ip()), h.port);
            self.stack.count(data.len());
            for m in self.ports().lock().lookup_all(dest, from) {
                m.deliver_to(from, dest, i_header, data);
            }
            return Ok(data.len());
        }
        // A source of the other version (connect chose an IPv6 one, the
        // datagram goes to IPv4) gives way to the route's, as Linux sends
        // from inet_saddr there.
        let bound = if h.ip.is_ipv4() == dest.ip().is_ipv4() { h.ip } else { self.family.any() };
        let from = SocketAddr::new(addr::source(bound, dest.ip()), h.port);
        let target = self.ports().lock().lookup(dest, from, |_| true);
        match target {
            Some(t) => {
                drop(i);
                self.stack.count(data.len());
                t.deliver_to(from, dest, i_header, data);
            }
            None => {
                drop(i);
                self.unreachable(from, dest, i_header, data);
            }
        }
        Ok(data.len())
    }

    /// Where a datagram to `to` (or the peer) goes: port 0 is EINVAL, as
    /// in udp_sendmsg; an address of the other version than the one the
    /// socket was bound to, or than the IPv4 one connect chose, has no
    /// route (addr::check_bound_family).
    fn destination(&self, i: &Inner, to: Option<SocketAddr>) -> Result<SocketAddr, Error> {
        let Some(t) = to else { return i.peer.ok_or(Error::DestAddrRequired) };
        if self.family == Family::V6 && i.local.opts.v6only && addr::canonical(t.ip()).is_ipv4() {
            return Err(Error::NetUnreachable);
        }
        if t.port() == 0 {
            return Err(Error::Invalid);
        }
        if addr::canonical(t.ip()) == IpAddr::V4(Ipv4Addr::BROADCAST) {
            // The limited broadcast goes out of lo from a socket bound to
            // a loopback address; the sentry takes it outside otherwise.
            return match i.local.hold {
                Some(h) if h.ip.is_loopback() => Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::BROADCAST), t.port())),
                _ => Err(Error::NetUnreachable),
            };
        }
        let dest = addr::destination(self.family, i.local.opts.v6only, t)?;
        let bound = i.local.hold.map(|h| h.ip).filter(|ip| !i.local.chosen_ip || ip.is_ipv4());
        addr::check_bound_family(bound, dest.ip())?;
        Ok(dest)
    }

    /// A datagram of `len` bytes to `to` (or the peer) that no IP packet
    /// holds: EMSGSIZE (EDESTADDRREQ and the other errors of a send
    /// first). The sentry asks this without copying the datagram in.
    pub fn refuse_oversize(&self, to: Option<SocketAddr>, len: usize) -> Error {
        // udp_sendmsg refuses it before it looks at the address.
        if self.family == Family::V4 && len > 0xffff {
            return Error::MsgSize;
        }
        let i = self.inner.lock();
        match self.destination(&i, to) {
            Ok(dest) => {
                drop(i);
                self.too_big(dest, len)
            }
            Err(e) => e,
        }
    }

    /// EMSGSIZE for a datagram of `len` bytes to `dest` (canonical). A
    /// socket asking for the errors of `dest`'s family finds it on its
    /// error queue when Linux's ip_append_data or __ip6_append_data
    /// reports it (ip_local_error, ipv6_local_error): IPv4 past the
    /// 65535-byte packet but within udp_sendmsg's 65535-byte payload
    /// bound, IPv6 at any size.
    fn too_big(&self, dest: SocketAddr, len: usize) -> Error {
        let mut i = self.inner.lock();
        let reported = match dest {
            SocketAddr::V4(_) => i.recv_errors.0 && len <= 0xffff,
            SocketAddr::V6(_) => i.recv_errors.1,
        };
        let cost = truesize(0, dest.is_ipv6());
        if reported && i.queued + cost < i.rcvbuf && self.stack.charge(cost) {
            i.queued += cost;
            let none = SocketAddr::new(self.family.any(), 0);
            let arrived = Meta { to: none, header: Header::default(), at: std::time::SystemTime::now() };
            let to = addr::presented(self.family, dest);
            let kind = ErrorKind::TooBig { mtu: LOOPBACK_MTU };
            i.errors.push_back(ErrorEntry { to, arrived, data: Vec::new(), kind, cost });
            drop(i);
            self.queue.notify();
        }
        Error::MsgSize
    }

    /// The port unreachable a datagram to `dest` (canonical) draws, as
    /// Linux's __udp4_lib_err and __udp6_lib_err take it: it reaches the
    /// sender unless that is connected to another peer; a connected
    /// socket, or one asking for the errors of `dest`'s family, fails its
    /// next call with ECONNREFUSED, and the latter queues the datagram.
    fn unreachable(&self, from: SocketAddr, dest: SocketAddr, header: Header, data: &[u8]) {
        let mut i = self.inner.lock();
        let asked = if dest.is_ipv4() { i.recv_errors.0 } else { i.recv_errors.1 };
        if i.peer.is_some_and(|p| p != dest) || !(asked || i.peer.is_some()) {
            return;
        }
        i.error = Some(Error::ConnRefused);
        let quote = &data[..data.len().min(quoted(dest.ip()))];
        let cost = truesize(quote.len(), dest.is_ipv6());
        // A full buffer drops the error's datagram, not the error (as
        // sock_queue_err_skb refuses what would reach the buffer's size).
        if asked && i.queued + cost < i.rcvbuf && self.stack.charge(cost) {
            i.queued += cost;
            let arrived = Meta {
                to: addr::presented(self.family, from),
                header: error_header(dest.ip(), header),
                at: std::time::SystemTime::now(),
            };
            let to = addr::presented(self.family, dest);
            i.errors.push_back(ErrorEntry {
                to,
                arrived,
                data: quote.to_vec(),
                kind: ErrorKind::PortUnreachable,
                cost,
            });
        }
        drop(i);
        // The news wakes a blocked receiver.
        self.queue.notify();
    }

    /// IP_RECVERR (`family` V4) or IPV6_RECVERR (V6) on or off; off
    /// empties the error queue, as Linux does.
    pub fn set_recv_errors(&self, family: Family, on: bool) {
        let mut i = self.inner.lock();
        match family {
            Family::V4 => i.recv_errors.0 = on,
            Family::V6 => i.recv_errors.1 = on,
        }
        if !on {
            let freed: usize = i.errors.drain(..).map(|e| e.cost).sum();
            i.queued -= freed;
            self.stack.uncharge(freed);
        }
        drop(i);
        self.queue.notify();
    }

    /// recvmsg(MSG_ERRQUEUE): the oldest datagram that drew an error, cut
    /// to `buf` (taken even with MSG_PEEK, as Linux's ip_recv_error
    /// does); WouldBlock when there is none. As in sock_dequeue_err_skb,
    /// a next entry an ICMP message brought makes its error pending, and
    /// taking one such entry without such a next clears the pending
    /// error.
    pub fn recv_error(&self, buf: &mut [u8]) -> Result<QueuedError, Error> {
        let mut i = self.inner.lock();
        let e = i.errors.pop_front().ok_or(Error::WouldBlock)?;
        i.queued -= e.cost;
        self.stack.uncharge(e.cost);
        let icmp = |k: ErrorKind| k == ErrorKind::PortUnreachable;
        if i.errors.front().is_some_and(|n| icmp(n.kind)) {
            i.error = Some(Error::ConnRefused);
        } else if icmp(e.kind) {
            i.error = None;
        }
        let len = e.data.len().min(buf.len());
        buf[..len].copy_from_slice(&e.data[..len]);
        Ok(QueuedError { len, full: e.data.len(), to: e.to, error: e.arrived, kind: e.kind })
    }

    /// The route of an IPv4 datagram to a group from a socket bound to
    /// `bound` (canonical).
    fn group_route(&self, bound: IpAddr) -> Result<multicast::Route, Error> {
        let bound = match bound {
            IpAddr::V4(b) if !b.is_multicast() => b,
            _ => Ipv4Addr::UNSPECIFIED,
        };
        multicast::route(bound, &self.multicast.lock().opts)
    }

    /// Sends a datagram to the group `dest` (canonical) from this socket,
    /// bound to `bound` and `port`, with `header` and the TTL the datagram
    /// set itself if any (else IP_MULTICAST_TTL's): it comes back to the
    /// sandbox's members (multicast.rs says when).
    fn send_to_group(
        &self,
        bound: IpAddr,
        port: u16,
        (header, own_ttl): (Header, Option<u8>),
        dest: SocketAddr,
        data: &[u8],
    ) -> Result<usize, Error> {
        let IpAddr::V4(group) = dest.ip() else {
            // No interface has a route for IPv6 multicast.
            return Err(Error::NetUnreachable);
        };
        let route = self.group_route(bound)?;
        let (looped, ttl) = {
            let m = self.multicast.lock();
            (m.opts.v4_loop, m.opts.ttl)
        };
        let from = SocketAddr::new(IpAddr::V4(route.source), port);
        if route.index == multicast::LO {
            self.stack.count(data.len());
        } else if !looped {
            return Ok(data.len());
        }
        if !self.stack.groups.joined(dest.ip(), route.index) {
            return Ok(data.len());
        }
        let header = Header { ttl: own_ttl.unwrap_or(ttl), ..header };
        let members = self.ports().lock().lookup_all(dest, from);
        for m in members {
            let takes = {
                let mc = m.multicast.lock();
                mc.members.takes_v4(group, route.index, mc.opts.v4_all)
            };
            if takes {
                m.deliver_to(from, dest, header, data);
            }
        }
        Ok(data.len())
    }

    /// The interface a datagram to `to` (or the connected peer) leaves on
    /// when it goes to an IPv4 group; None for any other datagram, or one
    /// without a route.
    pub fn group_interface(&self, to: Option<SocketAddr>) -> Option<u32> {
        let (dest, bound) = {
            let i = self.inner.lock();
            (
                to.map(|t| addr::canonical(t.ip())).or(i.peer.map(|p| p.ip()))?,
                i.local.hold.map_or(self.family.any(), |h| h.ip),
            )
        };
        (dest.is_ipv4() && dest.is_multicast()).then(|| self.group_route(bound).ok()).flatten().map(|r| r.index)
    }

    /// This socket's multicast options.
    pub fn multicast_options(&self) -> McastOptions {
        self.multicast.lock().opts.clone()
    }

    /// Sets this socket's multicast options.
    pub fn set_multicast_options(&self, opts: McastOptions) {
        self.multicast.lock().opts = opts;
    }

    /// IP_ADD_MEMBERSHIP (`join`) or IP_DROP_MEMBERSHIP of `group` on the
    /// interface of index `index` or address `addr` (see multicast.rs).
    pub fn membership_v4(&self, join: bool, group: Ipv4Addr, addr: Ipv4Addr, index: u32) -> Result<(), Error> {
        let mut m = self.multicast.lock();
        if join {
            m.members.join_v4(&self.stack.groups, group, addr, index)
        } else {
            m.members.leave_v4(&self.stack.groups, group, addr, index)
        }
    }

    /// IPV6_JOIN_GROUP (`join`) or IPV6_LEAVE_GROUP.
    pub fn membership_v6(&self, join: bool, group: Ipv6Addr, index: u32) -> Result<(), Error> {
        let mut m = self.multicast.lock();
        if join {
            m.members.join_v6(&self.stack.groups, group, index)
        } else {
            m.members.leave_v6(&self.stack.groups, group, index)
        }
    }

    /// Queues a datagram from `from`, as one arriving over the stack does
    /// (dropped when the queue is full); the sandbox's resolver answers
    /// guest queries this way.
    pub fn deliver(&self, from: SocketAddr, data: &[u8]) {
        let to = self.inner.lock().local.addr(self.family);
        self.deliver_to(from, to, Header::default(), data);
    }

    /// Sets the header fields of this socket's datagrams.
    pub fn set_header(&self, header: Header) {
        self.inner.lock().header = header;
    }

    /// Queues a datagram from `from` sent to `to` (canonical) with
    /// `header`.
    fn deliver_to(&self, from: SocketAddr, to: SocketAddr, header: Header, data: &[u8]) {
        let mut i = self.inner.lock();
        let cost = truesize(data.len(), to.is_ipv6());
        // A datagram that would charge the buffer past its size is
        // dropped unless nothing is queued, as is one the sandbox's
        // memory cannot hold.
        if (i.queued > 0 && i.queued + cost > i.rcvbuf) || !self.stack.charge(cost) {
            return;
        }
        i.queued += cost;
        let meta = Meta { to: addr::presented(self.family, to), header, at: std::time::SystemTime::now() };
        i.inbox.push_back(Queued { from: addr::presented(self.family, from), meta, data: data.to_vec(), cost });
        drop(i);
        self.queue.notify();
    }

    /// SO_BROADCAST on or off.
    pub fn set_broadcast(&self, on: bool) {
        self.inner.lock().broadcast = on;
    }

    /// Whether a datagram to `to` stays in the sandbox although its
    /// address is not the sandbox's: the limited broadcast from a socket
    /// bound to a loopback address, which Linux sends out of lo.
    pub fn broadcasts_on_lo(&self, to: SocketAddr) -> bool {
        addr::canonical(to.ip()) == IpAddr::V4(Ipv4Addr::BROADCAST)
            && self.inner.lock().local.hold.is_some_and(|h| h.ip.is_loopback())
    }

    /// SO_RCVBUF: the size of the receive buffer, as Linux keeps it (the
    /// doubled value SO_RCVBUF reads back). Datagrams already queued stay.
    pub fn set_receive_buffer(&self, size: usize) {
        self.inner.lock().rcvbuf = size;
    }

    /// recvfrom(2): the next datagram (with `peek`, left queued), cut to
    /// `buf`; WouldBlock when there is none, after SHUT_RD too (a
    /// receive that may wait then ends with nothing: see `read_shut`).
    pub fn recv_from(&self, buf: &mut [u8], peek: bool) -> Result<Datagram, Error> {
        let mut i = self.inner.lock();
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let q = i.inbox.front().ok_or(Error::WouldBlock)?;
        let (from, meta, full) = (q.from, q.meta, q.data.len());
        let len = full.min(buf.len());
        buf[..len].copy_from_slice(&q.data[..len]);
        if !peek {
            if let Some(q) = i.inbox.pop_front() {
                i.queued -= q.cost;
                self.stack.uncharge(q.cost);
            }
        }
        Ok(Datagram { len, full, from, meta })
    }

    /// Whether receiving was shut down (SHUT_RD): a receive that would
    /// wait for a datagram returns 0 instead, as Linux's
    /// __skb_wait_for_more_packets gives up; one that may not wait still
    /// fails with EAGAIN.
    pub fn read_shut(&self) -> bool {
        self.inner.lock().read_shut
    }

    /// shutdown(2): ENOTCONN unless connected, as Linux, which records
    /// the shutdown all the same. Datagrams still arrive after SHUT_RD.
    pub fn shutdown(&self, read: bool, write: bool) -> Result<(), Error> {
        let mut i = self.inner.lock();
        i.read_shut |= read;
        i.write_shut |= write;
        let connected = i.peer.is_some();
        drop(i);
        self.queue.notify();
        if connected {
            Ok(())
        } else {
            Err(Error::NotConnected)
        }
    }

    /// Readiness, as Linux's udp_poll reports it.
    pub fn events(&self) -> u32 {
        use events::*;
        let i = self.inner.lock();
        let mut ev = OUT | WRNORM;
        if !i.inbox.is_empty() || i.read_shut {
            ev |= IN | RDNORM;
        }
        if i.read_shut {
            ev |= RDHUP;
            if i.write_shut {
                ev |= HUP;
            }
        }
        if i.error.is_some() || !i.errors.is_empty() {
            ev |= ERR;
        }
        ev
    }

    pub fn take_error(&self) -> Option<Error> {
        self.inner.lock().error.take()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.inner.lock().local.addr(self.family)
    }

    pub fn peer_addr(&self) -> Result<SocketAddr, Error> {
        // Connected to port 0, it sends there but has no peer to show, as
        // inet_getname says.
        let peer = self.inner.lock().peer.filter(|p| p.port() != 0);
        peer.map(|p| addr::presented(self.family, p)).ok_or(Error::NotConnected)
    }

    /// The size of the next datagram (FIONREAD).
    pub fn next_len(&self) -> usize {
        self.inner.lock().inbox.front().map_or(0, |q| q.data.len())
    }

    pub fn share_opts(&self) -> ShareOpts {
        self.inner.lock().local.opts
    }

    pub fn set_share_opts(&self, opts: ShareOpts) -> Result<(), Error> {
        self.inner.lock().local.set_opts(self.family, opts)
    }
}

impl Drop for UdpEndpoint {
    fn drop(&mut self) {
        self.multicast.get_mut().members.leave_all(&self.stack.groups);
        let ports = ports_of(&self.stack, self.protocol);
        let i = self.inner.get_mut();
        i.local.release(ports);
        self.stack.uncharge(i.queued);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn datagrams_keep_boundaries_and_senders() {
        let stack = Stack::new();
        let a = UdpEndpoint::new(&stack, Family::V4);
        a.bind(addr("127.0.0.1:5353")).unwrap();
        let b = UdpEndpoint::new(&stack, Family::V4);
        assert_eq!(b.send_to(Some(addr("127.0.0.1:5353")), b"one"), Ok(3));
        assert_eq!(b.send_to(Some(addr("127.0.0.1:5353")), b"three"), Ok(5));
        let mut buf = [0u8; 4];
        let d = a.recv_from(&mut buf, false).unwrap();
        // Sent from the wildcard address b was bound to implicitly.
        assert_eq!(b.local_addr().ip(), Family::V4.any());
        assert_eq!((d.len, d.full, d.from), (3, 3, SocketAddr::new([127, 0, 0, 1].into(), b.local_addr().port())));
        let d = a.recv_from(&mut buf, false).unwrap();
        assert_eq!((d.len, d.full), (4, 5));
        assert_eq!(a.recv_from(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(b.send_to(Some(addr("192.0.2.1:53")), b"x"), Err(Error::NetUnreachable));
    }

    #[test]
    fn a_connected_socket_learns_of_an_unheld_port() {
        let stack = Stack::new();
        let u = UdpEndpoint::new(&stack, Family::V4);
        u.connect(Some(addr("127.0.0.1:9"))).unwrap();
        assert_eq!(u.send_to(None, b"x"), Ok(1));
        let mut buf = [0u8; 1];
        assert_eq!(u.recv_from(&mut buf, false), Err(Error::ConnRefused));
        assert_eq!(u.recv_from(&mut buf, false), Err(Error::WouldBlock));
    }

    /// With IP_RECVERR an unconnected sender learns of the unheld port
    /// too and finds the datagram (as much as the error quotes) on its
    /// error queue; each entry read leaves the next one's error pending.
    #[test]
    fn errors_asked_for_are_queued() {
        let stack = Stack::new();
        let u = UdpEndpoint::new(&stack, Family::V4);
        assert_eq!(u.send_to(Some(addr("127.0.0.1:9")), b"x"), Ok(1));
        assert_eq!((u.take_error(), u.events() & events::ERR), (None, 0), "not asked: lost");
        u.set_recv_errors(Family::V4, true);
        assert_eq!(u.send_to(Some(addr("127.0.0.1:9")), b"one"), Ok(3));
        assert_eq!(u.send_to(Some(addr("127.0.0.1:9")), b"x"), Err(Error::ConnRefused));
        assert_eq!(u.send_to(Some(addr("127.0.0.1:9")), &[7; 600]), Ok(600));
        assert_eq!(u.events() & (events::ERR | events::IN), events::ERR);
        let mut buf = [0u8; 600];
        let e = u.recv_error(&mut buf[..2]).unwrap();
        assert_eq!((e.len, e.full, e.to), (2, 3, addr("127.0.0.1:9")));
        assert_eq!(e.error.header, Header { tos: 0xc0, ttl: 64 });
        assert_eq!(e.error.to, SocketAddr::new(addr("127.0.0.1:9").ip(), u.local_addr().port()), "to the source");
        assert_eq!(u.take_error(), Some(Error::ConnRefused), "the next entry's");
        assert_eq!(u.recv_error(&mut buf).map(|e| e.full), Ok(520));
        assert_eq!(u.take_error(), None);
        assert_eq!(u.recv_error(&mut buf), Err(Error::WouldBlock));
        assert_eq!(u.events() & events::ERR, 0);
        // Turned off, the queue empties and gives back its charge.
        u.send_to(Some(addr("127.0.0.1:9")), b"x").unwrap();
        u.set_recv_errors(Family::V4, false);
        assert_eq!((u.recv_error(&mut buf), u.inner.lock().queued), (Err(Error::WouldBlock), 0));
        // A socket connected elsewhere does not hear of it.
        let c = UdpEndpoint::new(&stack, Family::V4);
        c.set_recv_errors(Family::V4, true);
        c.connect(Some(addr("127.0.0.1:10"))).unwrap();
        assert_eq!(c.send_to(Some(addr("127.0.0.1:9")), b"x"), Ok(1));
        assert_eq!(c.take_error(), None);
    }

    /// A dual-stack socket's datagram to an IPv4 address draws an IPv4
    /// error: IP_RECVERR, not IPV6_RECVERR, queues it.
    #[test]
    fn each_family_has_its_option() {
        let stack = Stack::new();
        let u = UdpEndpoint::new(&stack, Family::V6);
        u.set_header(Header { tos: 0xff, ttl: 5 });
        u.set_recv_errors(Family::V6, true);
        assert_eq!(u.send_to(Some(addr("[::ffff:127.0.0.1]:9")), b"x"), Ok(1));
        assert_eq!(u.take_error(), None);
        assert_eq!(u.send_to(Some(addr("[::1]:9")), &[1; 1500]), Ok(1500));
        let mut buf = [0u8; 1500];
        let e = u.recv_error(&mut buf).unwrap();
        assert_eq!((e.len, e.full, e.to), (1184, 1184, addr("[::1]:9")));
        assert_eq!(e.error.header, Header { tos: 0, ttl: 64 }, "ICMPv6: traffic class 0");
        u.set_recv_errors(Family::V4, true);
        assert_eq!(u.send_to(Some(addr("[::ffff:127.0.0.1]:9")), b"x"), Ok(1));
        let e = u.recv_error(&mut buf).unwrap();
        assert_eq!((e.to, e.error.to.ip()), (addr("[::ffff:127.0.0.1]:9"), addr("[::ffff:127.0.0.1]:9").ip()));
        assert_eq!(e.error.header, Header { tos: 0xde, ttl: 64 }, "the TOS bits, internetwork control");
    }

    #[test]
    fn empty_datagrams_fill_the_buffer_too() {
        let stack = Stack::new();
        let r = UdpEndpoint::new(&stack, Family::V4);
        r.bind(addr("127.0.0.1:7000")).unwrap();
        let w = UdpEndpoint::new(&stack, Family::V4);
        for _ in 0..10_000 {
            assert_eq!(w.send_to(Some(addr("127.0.0.1:7000")), b""), Ok(0));
        }
        assert_eq!(r.inner.lock().inbox.len(), RECEIVE_BUFFER / 832);
    }

    /// The truesize Linux 6.18 charges on loopback, at the edges of its
    /// allocation classes (measured with SO_MEMINFO).
    #[test]
    fn datagrams_cost_their_truesize() {
        let v4 = [(0, 832), (197, 832), (198, 1280), (645, 1280), (646, 2304), (2304, 4352), (16_004, 16_640)];
        for (len, cost) in v4 {
            assert_eq!(truesize(len, false), cost, "{len}");
        }
        assert_eq!(truesize(16_005, false), 16_837);
        assert_eq!(truesize(65_507, false), 66_339);
        assert_eq!((truesize(184, true), truesize(185, true)), (832, 1280));
        assert_eq!((truesize(15_991, true), truesize(15_992, true)), (16_640, 16_824));
    }

    /// SO_RCVBUF bounds the queue: a datagram that would take the charge
    /// past it is dropped unless nothing is queued.
    #[test]
    fn the_receive_buffer_bounds_the_queue() {
        let stack = Stack::new();
        let r = UdpEndpoint::new(&stack, Family::V4);
        r.bind(addr("127.0.0.1:7010")).unwrap();
        r.set_receive_buffer(9216);
        let w = UdpEndpoint::new(&stack, Family::V4);
        let to = Some(addr("127.0.0.1:7010"));
        for _ in 0..10 {
            assert_eq!(w.send_to(to, &[0; 2304]), Ok(2304));
        }
        assert_eq!(r.inner.lock().inbox.len(), 2);
        let mut buf = [0u8; 8];
        while r.recv_from(&mut buf, false).is_ok() {}
        r.set_receive_buffer(2304);
        assert_eq!(w.send_to(to, &[0; 4000]), Ok(4000));
        assert_eq!(w.send_to(to, b""), Ok(0));
        assert_eq!(r.inner.lock().inbox.len(), 1, "the first fits an empty queue only");
    }

    /// A datagram past any IPv6 packet is EMSGSIZE and, with IPV6_RECVERR,
    /// a local error on the queue that leaves no error pending; IPv4 past
    /// 65535 bytes queues nothing.
    #[test]
    fn an_ipv6_datagram_too_big_is_a_local_error() {
        let stack = Stack::new();
        let u = UdpEndpoint::new(&stack, Family::V6);
        let to = Some(addr("[::1]:9"));
        assert_eq!(u.send_to(to, &[0; 65_528]), Err(Error::MsgSize));
        let mut buf = [0u8; 4];
        assert_eq!(u.recv_error(&mut buf), Err(Error::WouldBlock), "not asked for");
        u.set_recv_errors(Family::V6, true);
        assert_eq!(u.refuse_oversize(to, 70_000), Error::MsgSize);
        let e = u.recv_error(&mut buf).unwrap();
        assert_eq!((e.len, e.to, e.kind), (0, addr("[::1]:9"), ErrorKind::TooBig { mtu: 65_536 }));
        assert_eq!(u.take_error(), None);
        assert_eq!(u.refuse_oversize(Some(addr("[::1]:0")), 70_000), Error::Invalid, "the address first");
        let v4 = UdpEndpoint::new(&stack, Family::V4);
        v4.set_recv_errors(Family::V4, true);
        assert_eq!(v4.refuse_oversize(Some(addr("127.0.0.1:9")), 70_000), Error::MsgSize);
        assert_eq!(v4.recv_error(&mut buf), Err(Error::WouldBlock));
        assert_eq!(v4.send_to(Some(addr("127.0.0.1:9")), &[0; 65_508]), Err(Error::MsgSize));
        assert_eq!(v4.recv_error(&mut buf).map(|e| e.kind), Ok(ErrorKind::TooBig { mtu: 65_536 }));
    }

    /// The limited broadcast from a socket bound to loopback, with
    /// SO_BROADCAST, reaches the port's wildcard and broadcast sockets.
    #[test]
    fn a_broadcast_on_lo_reaches_the_ports_wildcards() {
        let stack = Stack::new();
        let shared = ShareOpts { reuse_addr: true, ..ShareOpts::default() };
        let rx: Vec<_> = ["255.255.255.255:7030", "0.0.0.0:7030", "127.0.0.1:7030"]
            .iter()
            .map(|a| {
                let r = UdpEndpoint::new(&stack, Family::V4);
                r.set_share_opts(shared).unwrap();
                r.bind(addr(a)).unwrap();
                r
            })
            .collect();
        let to = Some(addr("255.255.255.255:7030"));
        let unbound = UdpEndpoint::new(&stack, Family::V4);
        assert!(!unbound.broadcasts_on_lo(addr("255.255.255.255:7030")));
        assert_eq!(unbound.send_to(to, b"x"), Err(Error::NetUnreachable), "no route off lo");
        let w = UdpEndpoint::new(&stack, Family::V4);
        w.bind(addr("127.0.0.1:0")).unwrap();
        assert!(w.broadcasts_on_lo(addr("255.255.255.255:7030")));
        assert_eq!(w.send_to(to, b"x"), Err(Error::Access));
        w.set_broadcast(true);
        assert_eq!(w.send_to(to, b"x"), Ok(1));
        let mut buf = [0u8; 1];
        let got: Vec<_> = rx.iter().map(|r| r.recv_from(&mut buf, false).is_ok()).collect();
        assert_eq!(got, [true, true, false]);
    }

    /// Connected to port 0: no peer to show, datagrams from any port of
    /// the address; sendto port 0 is EINVAL.
    #[test]
    fn port_zero_is_no_peer() {
        let stack = Stack::new();
        let u = UdpEndpoint::new(&stack, Family::V4);
        u.bind(addr("127.0.0.1:7020")).unwrap();
        u.connect(Some(addr("127.0.0.1:0"))).unwrap();
        assert_eq!(u.peer_addr(), Err(Error::NotConnected));
        let w = UdpEndpoint::new(&stack, Family::V4);
        assert_eq!(w.send_to(Some(addr("127.0.0.1:7020")), b"x"), Ok(1));
        let mut buf = [0u8; 1];
        assert_eq!(u.recv_from(&mut buf, false).map(|d| d.len), Ok(1));
        assert_eq!(w.send_to(Some(addr("127.0.0.1:0")), b"x"), Err(Error::Invalid));
    }

    #[test]
    fn a_connected_socket_takes_only_its_peer() {
        let stack = Stack::new();
        let a = UdpEndpoint::new(&stack, Family::V4);
        a.bind(addr("127.0.0.1:6000")).unwrap();
        a.connect(Some(addr("127.0.0.1:6001"))).unwrap();
        let stranger = UdpEndpoint::new(&stack, Family::V4);
        assert_eq!(stranger.send_to(Some(addr("127.0.0.1:6000")), b"x"), Ok(1));
        let mut buf = [0u8; 1];
        assert_eq!(a.recv_from(&mut buf, false), Err(Error::WouldBlock));
        let peer = UdpEndpoint::new(&stack, Family::V4);
        peer.bind(addr("127.0.0.1:6001")).unwrap();
        assert_eq!(peer.send_to(Some(addr("127.0.0.1:6000")), b"y"), Ok(1));
        assert_eq!(a.recv_from(&mut buf, false).map(|d| d.len), Ok(1));
    }

    /// connect binds the source address toward the peer, as Linux's
    /// getsockname shows; a disconnect forgets it and gives back a port
    /// not bound explicitly, while a bound address or port stays.
    #[test]
    fn connect_binds_the_source_address_toward_the_peer() {
        let stack = Stack::new();
        let local = |u: &UdpEndpoint| (u.local_addr().ip(), u.local_addr().port() != 0);
        let u = UdpEndpoint::new(&stack, Family::V4);
        u.connect(Some(addr("127.0.0.1:9"))).unwrap();
        assert_eq!(local(&u), (addr("127.0.0.1:0").ip(), true));
        u.connect(None).unwrap();
        assert_eq!(u.local_addr(), addr("0.0.0.0:0"));
        u.connect(Some(addr("127.0.0.1:9"))).unwrap();
        assert_eq!(local(&u), (addr("127.0.0.1:0").ip(), true), "bound anew");
        let port = UdpEndpoint::new(&stack, Family::V4);
        port.bind(addr("0.0.0.0:45678")).unwrap();
        port.connect(Some(addr("127.0.0.1:9"))).unwrap();
        assert_eq!(port.local_addr(), addr("127.0.0.1:45678"));
        port.connect(None).unwrap();
        assert_eq!(port.local_addr(), addr("0.0.0.0:45678"));
        let any = UdpEndpoint::new(&stack, Family::V4);
        any.connect(Some(addr("0.0.0.0:9"))).unwrap();
        assert_eq!(local(&any), (addr("127.0.0.1:0").ip(), true), "0.0.0.0 is this host: from loopback");
        let bound = UdpEndpoint::new(&stack, Family::V4);
        bound.bind(addr("127.0.0.2:0")).unwrap();
        bound.connect(Some(addr("127.0.0.1:9"))).unwrap();
        bound.connect(None).unwrap();
        assert_eq!(bound.local_addr(), addr("127.0.0.2:0"));
        assert_eq!(bound.send_to(Some(addr("127.0.0.1:9")), b"x"), Ok(1));
        assert_eq!(local(&bound), (addr("127.0.0.2:0").ip(), true), "the next implicit bind takes 127.0.0.2 again");
        let v6 = UdpEndpoint::new(&stack, Family::V6);
        v6.connect(Some(addr("[::1]:9"))).unwrap();
        assert_eq!(local(&v6), (addr("[::1]:0").ip(), true));
        let dual = UdpEndpoint::new(&stack, Family::V6);
        dual.connect(Some(addr("[::ffff:127.0.0.1]:9"))).unwrap();
        assert_eq!(local(&dual), (addr("[::ffff:127.0.0.1]:0").ip(), true));
        dual.connect(None).unwrap();
        assert_eq!(dual.local_addr(), addr("[::]:0"));
    }

    /// A socket connected to 127.0.0.1 is bound there: a datagram to
    /// 127.0.0.2 on its port no longer reaches it.
    #[test]
    fn a_connected_socket_is_bound_to_its_source_address() {
        let stack = Stack::new();
        let peer = UdpEndpoint::new(&stack, Family::V4);
        peer.bind(addr("127.0.0.1:6100")).unwrap();
        let u = UdpEndpoint::new(&stack, Family::V4);
        u.connect(Some(addr("127.0.0.1:6100"))).unwrap();
        let port = u.local_addr().port();
        assert_eq!(peer.send_to(Some(SocketAddr::new([127, 0, 0, 2].into(), port)), b"x"), Ok(1));
        let mut buf = [0u8; 1];
        assert_eq!(u.recv_from(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(peer.send_to(Some(SocketAddr::new([127, 0, 0, 1].into(), port)), b"y"), Ok(1));
        assert_eq!(u.recv_from(&mut buf, false).map(|d| d.len), Ok(1));
    }

    /// A datagram to a group through lo reaches each socket on the port
    /// that joined it there, or takes all of lo's groups, once each; lo
    /// takes it only while a socket is a member.
    #[test]
    fn a_group_reaches_its_members_through_lo() {
        let stack = Stack::new();
        let group: Ipv4Addr = "239.1.2.3".parse().unwrap();
        let lo = Ipv4Addr::LOCALHOST;
        let shared = ShareOpts { reuse_addr: true, ..ShareOpts::default() };
        let rx: Vec<_> = (0..3)
            .map(|_| {
                let r = UdpEndpoint::new(&stack, Family::V4);
                r.set_share_opts(shared).unwrap();
                r.bind(addr("0.0.0.0:7100")).unwrap();
                r
            })
            .collect();
        rx[2].set_multicast_options(McastOptions { v4_all: false, ..McastOptions::default() });
        let w = UdpEndpoint::new(&stack, Family::V4);
        let to = Some(addr("239.1.2.3:7100"));
        assert_eq!(w.send_to(to, b"x"), Err(Error::NetUnreachable), "no route without an uplink");
        assert_eq!(w.group_interface(to), None);
        w.set_multicast_options(McastOptions { v4_index: multicast::LO, v4_addr: lo, ..McastOptions::default() });
        assert_eq!(w.group_interface(to), Some(multicast::LO));
        let mut buf = [0u8; 4];
        let mut got = |r: &UdpEndpoint| std::iter::from_fn(|| r.recv_from(&mut buf, false).ok()).count();
        assert_eq!(w.send_to(to, b"x"), Ok(1));
        assert_eq!(rx.iter().map(|r| got(r)).collect::<Vec<_>>(), [0, 0, 0], "lo has not joined");
        assert_eq!(rx[0].membership_v4(true, group, lo, 0), Ok(()));
        assert_eq!(w.send_to(to, b"x"), Ok(1));
        assert_eq!(rx.iter().map(|r| got(r)).collect::<Vec<_>>(), [1, 1, 0]);
        drop(rx.into_iter().next());
        assert!(!stack.groups.joined(IpAddr::V4(group), multicast::LO), "a closed socket leaves");
    }

    /// UDP-Lite has its own ports: a UDP and a UDP-Lite socket bind the
    /// same one, and each protocol's datagrams reach only its own.
    #[test]
    fn udplite_has_its_own_ports() {
        let stack = Stack::new();
        let lite = |s: &Arc<Stack>| UdpEndpoint::with_protocol(s, Family::V4, Protocol::UdpLite);
        let u = UdpEndpoint::new(&stack, Family::V4);
        u.bind(addr("127.0.0.1:7300")).unwrap();
        let l = lite(&stack);
        assert_eq!(l.protocol(), Protocol::UdpLite);
        l.bind(addr("127.0.0.1:7300")).unwrap();
        assert_eq!(lite(&stack).bind(addr("127.0.0.1:7300")), Err(Error::AddrInUse));
        let mut buf = [0u8; 4];
        assert_eq!(lite(&stack).send_to(Some(addr("127.0.0.1:7300")), b"lite"), Ok(4));
        assert_eq!(u.recv_from(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(l.recv_from(&mut buf, false).map(|d| d.len), Ok(4));
        assert_eq!(UdpEndpoint::new(&stack, Family::V4).send_to(Some(addr("127.0.0.1:7300")), b"udp"), Ok(3));
        assert_eq!(l.recv_from(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(u.recv_from(&mut buf, false).map(|d| d.len), Ok(3));
    }

    /// A datagram's own TTL and TOS win over the socket's, one field at a
    /// time; the next datagram has the socket's again.
    #[test]
    fn a_datagram_sets_its_own_header() {
        let stack = Stack::new();
        let r = UdpEndpoint::new(&stack, Family::V6);
        r.bind(addr("[::1]:7400")).unwrap();
        let w = UdpEndpoint::new(&stack, Family::V6);
        w.set_header(Header { tos: 0x10, ttl: 7 });
        let to = Some(addr("[::1]:7400"));
        let mut buf = [0u8; 1];
        let mut header = || r.recv_from(&mut buf, false).map(|d| d.meta.header);
        assert_eq!(w.send_with(to, b"x", HeaderOverride { tos: None, ttl: Some(2) }), Ok(1));
        assert_eq!(header(), Ok(Header { tos: 0x10, ttl: 2 }));
        assert_eq!(w.send_with(to, b"x", HeaderOverride { tos: Some(0x20), ttl: None }), Ok(1));
        assert_eq!(header(), Ok(Header { tos: 0x20, ttl: 7 }));
        assert_eq!(w.send_to(to, b"x"), Ok(1));
        assert_eq!(header(), Ok(Header { tos: 0x10, ttl: 7 }));
    }
}
