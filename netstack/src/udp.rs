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

use crate::addr::{self, Family};
use crate::multicast::{self, Memberships, Options as McastOptions};
use crate::ports::{Local, PortTable, ShareOpts};
use crate::waiter::Queue;
use crate::{events, Error, Stack};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Weak};

/// How many bytes a socket queues before it drops datagrams (Linux's
/// default rmem).
pub const RECEIVE_BUFFER: usize = 212_992;

/// What a queued datagram costs beyond its payload, as Linux charges a
/// buffer's overhead to the receive buffer: empty datagrams are not free.
const DATAGRAM_OVERHEAD: usize = 256;

fn cost(len: usize) -> usize {
    len + DATAGRAM_OVERHEAD
}

/// The largest datagram payload: 65535 less the IP and UDP headers.
fn max_payload(f: Family) -> usize {
    match f {
        Family::V4 => 65_507,
        Family::V6 => 65_527,
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

struct Inner {
    local: Local,
    peer: Option<SocketAddr>,
    inbox: VecDeque<(SocketAddr, Meta, Vec<u8>)>,
    queued: usize,
    /// What this socket's datagrams carry in their IP header.
    header: Header,
    error: Option<Error>,
    /// IP_RECVERR and IPV6_RECVERR: errors of datagrams to IPv4 and to
    /// IPv6 destinations are queued, and reach an unconnected socket too.
    recv_errors: (bool, bool),
    /// The datagrams that drew an error (their destination, how the error
    /// arrived and the part it quotes), charged to the receive buffer as
    /// Linux does.
    errors: VecDeque<(SocketAddr, Meta, Vec<u8>)>,
    read_shut: bool,
    write_shut: bool,
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
/// error quoted, where it was sent, and how the error arrived (sent to
/// the datagram's source; its header as Linux's icmp_send and icmp6_send
/// make it). Its error is always a port unreachable (ECONNREFUSED) from
/// that destination itself.
#[derive(Debug, PartialEq, Eq)]
pub struct Unreachable {
    pub len: usize,
    pub full: usize,
    pub to: SocketAddr,
    pub error: Meta,
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
                header: Header::default(),
                error: None,
                recv_errors: (false, false),
                errors: VecDeque::new(),
                read_shut: false,
                write_shut: false,
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
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        if i.write_shut {
            return Err(Error::BrokenPipe);
        }
        let dest = match to {
            Some(t) => {
                let dest = addr::destination(self.family, i.local.opts.v6only, t)?;
                addr::check_bound_family(i.local.hold.filter(|_| !i.local.chosen_ip).map(|h| h.ip), dest.ip())?;
                dest
            }
            None => i.peer.ok_or(Error::DestAddrRequired)?,
        };
        if data.len() > max_payload(self.family) {
            return Err(Error::MsgSize);
        }
        let h = i.local.hold_or_bind(self.ports(), self.family, &self.me)?;
        let i_header = over.over(i.header);
        if dest.ip().is_multicast() {
            drop(i);
            return self.send_to_group(h.ip, h.port, (i_header, over.ttl), dest, data);
        }
        let from = SocketAddr::new(addr::source(h.ip, dest.ip()), h.port);
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
        // A full buffer drops the error's datagram, not the error.
        if asked && i.queued + cost(quote.len()) <= RECEIVE_BUFFER && self.stack.charge(cost(quote.len())) {
            i.queued += cost(quote.len());
            let error = Meta {
                to: addr::presented(self.family, from),
                header: error_header(dest.ip(), header),
                at: std::time::SystemTime::now(),
            };
            i.errors.push_back((addr::presented(self.family, dest), error, quote.to_vec()));
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
            let freed: usize = i.errors.drain(..).map(|(.., d)| cost(d.len())).sum();
            i.queued -= freed;
            self.stack.uncharge(freed);
        }
        drop(i);
        self.queue.notify();
    }

    /// recvmsg(MSG_ERRQUEUE): the oldest datagram that drew an error, cut
    /// to `buf` (taken even with MSG_PEEK, as Linux's ip_recv_error
    /// does); WouldBlock when there is none. The pending error becomes
    /// that of the next entry, or none, as in sock_dequeue_err_skb.
    pub fn recv_error(&self, buf: &mut [u8]) -> Result<Unreachable, Error> {
        let mut i = self.inner.lock();
        let (to, error, data) = i.errors.pop_front().ok_or(Error::WouldBlock)?;
        i.queued -= cost(data.len());
        self.stack.uncharge(cost(data.len()));
        i.error = if i.errors.is_empty() { None } else { Some(Error::ConnRefused) };
        let len = data.len().min(buf.len());
        buf[..len].copy_from_slice(&data[..len]);
        Ok(Unreachable { len, full: data.len(), to, error })
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

    /// Queues a datagram from `from` sent to `to` with `header`.
    fn deliver_to(&self, from: SocketAddr, to: SocketAddr, header: Header, data: &[u8]) {
        let mut i = self.inner.lock();
        // A full queue, or the sandbox's memory spent, drops the datagram.
        if i.queued + cost(data.len()) > RECEIVE_BUFFER || !self.stack.charge(cost(data.len())) {
            return;
        }
        i.queued += cost(data.len());
        let meta = Meta { to: addr::presented(self.family, to), header, at: std::time::SystemTime::now() };
        i.inbox.push_back((addr::presented(self.family, from), meta, data.to_vec()));
        drop(i);
        self.queue.notify();
    }

    /// recvfrom(2): the next datagram (with `peek`, left queued), cut to
    /// `buf`; WouldBlock when there is none.
    pub fn recv_from(&self, buf: &mut [u8], peek: bool) -> Result<Datagram, Error> {
        let mut i = self.inner.lock();
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let Some((from, meta, data)) = i.inbox.front() else {
            return if i.read_shut {
                let none = SocketAddr::new(self.family.any(), 0);
                let meta = Meta { to: none, header: Header::default(), at: std::time::SystemTime::now() };
                Ok(Datagram { len: 0, full: 0, from: none, meta })
            } else {
                Err(Error::WouldBlock)
            };
        };
        let (from, meta, full) = (*from, *meta, data.len());
        let len = full.min(buf.len());
        buf[..len].copy_from_slice(&data[..len]);
        if !peek {
            i.inbox.pop_front();
            i.queued -= cost(full);
            self.stack.uncharge(cost(full));
        }
        Ok(Datagram { len, full, from, meta })
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
        self.inner.lock().peer.map(|p| addr::presented(self.family, p)).ok_or(Error::NotConnected)
    }

    /// The size of the next datagram (FIONREAD).
    pub fn next_len(&self) -> usize {
        self.inner.lock().inbox.front().map_or(0, |(_, _, d)| d.len())
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
        assert_eq!(r.inner.lock().inbox.len(), RECEIVE_BUFFER / DATAGRAM_OVERHEAD);
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
