//! ICMP echo sockets (SOCK_DGRAM with IPPROTO_ICMP or IPPROTO_ICMPV6),
//! as unprivileged `ping` uses them. Each is carried on a host ping
//! socket the egress gateway opens in the outer network namespace, so
//! the host kernel assigns echo ids, checks the ICMP header and routes
//! replies exactly as Linux's ping sockets do; the guest only ever holds
//! this file. Without a gateway (`--network none`) the socket exists but
//! has no way out: sends fail with ENETUNREACH, as with no route. Echo
//! requests to the sandbox's own addresses never leave: the sentry
//! answers them (`fs/ping_local.rs`), gateway or not.

use crate::abi::poll::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::fs::egress::{HostConn, Opened};
use crate::fs::ping_local;
use crate::vfs::{FileOps, TimeSpec};
use crate::waiter::{Entry, Queue};
use parking_lot::Mutex;
use std::collections::{HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// ICMPv6's type filter (struct icmp6_filter; netinet/icmp6.h).
pub(crate) const ICMP6_FILTER: i32 = 1;

/// The options a guest sets on (and reads back from) its ping socket's
/// host socket, as Linux's ping sockets take them (the host's answer,
/// errno included, is the guest's); the sentry's seccomp filter allows
/// exactly these.
pub(crate) const HOST_OPTIONS: &[(i32, i32)] = &[
    (libc::SOL_IP, libc::IP_RECVERR),
    (libc::SOL_IP, libc::IP_RECVTTL),
    (libc::SOL_IP, libc::IP_TTL),
    (libc::SOL_IP, libc::IP_TOS),
    (libc::SOL_IP, libc::IP_MTU_DISCOVER),
    (libc::SOL_IP, libc::IP_RETOPTS),
    (libc::SOL_IP, libc::IP_PKTINFO),
    (libc::SOL_SOCKET, libc::SO_TIMESTAMP),
    (libc::SOL_SOCKET, libc::SO_TIMESTAMPNS),
    (libc::SOL_SOCKET, libc::SO_SNDBUF),
    (libc::SOL_SOCKET, libc::SO_RCVBUF),
    (libc::SOL_SOCKET, libc::SO_BROADCAST),
    (libc::SOL_IPV6, libc::IPV6_RECVERR),
    (libc::SOL_IPV6, libc::IPV6_RECVHOPLIMIT),
    (libc::SOL_IPV6, libc::IPV6_UNICAST_HOPS),
    (libc::SOL_IPV6, libc::IPV6_RECVPKTINFO),
    (libc::SOL_ICMPV6, ICMP6_FILTER),
];

/// The control messages the host's recvmsg may pass on to the guest
/// (what the options above ask for); x86_64 host and guest share their
/// layout. The packet-info ones name the outer namespace's interface and
/// address, which the guest sees as its own eth0's (`syscalls/ping.rs`).
pub(crate) const HOST_CONTROL: &[(i32, i32)] = &[
    (libc::SOL_IP, libc::IP_RECVERR),
    (libc::SOL_IP, libc::IP_TTL),
    (libc::SOL_IP, libc::IP_TOS),
    (libc::SOL_SOCKET, libc::SCM_TIMESTAMP),
    (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS),
    (libc::SOL_IPV6, libc::IPV6_RECVERR),
    (libc::SOL_IPV6, libc::IPV6_HOPLIMIT),
    (libc::SOL_IP, libc::IP_PKTINFO),
    (libc::SOL_IPV6, libc::IPV6_PKTINFO),
];

/// A reply from the sandbox itself, waiting to be received.
pub struct LocalReply {
    /// The address it comes from.
    pub from: IpAddr,
    /// The whole ICMP message.
    pub data: Vec<u8>,
    /// When it arrived (SO_TIMESTAMP's time).
    pub at: SystemTime,
}

/// The receive buffer of a socket whose SO_RCVBUF was never set:
/// Linux's net.core.rmem_default (212992). Replies from the sandbox
/// itself are held against it as Linux holds a socket's queued packets
/// against sk_rcvbuf: once the unread ones reach it, more are dropped.
const RCVBUF_DEFAULT: usize = 212_992;

/// What each held reply costs beyond its bytes, as an skb's truesize
/// counts its sk_buff and shared info (and as our queue entry costs),
/// so that tiny replies cannot be queued without bound either.
const REPLY_OVERHEAD: usize = 576;

/// Replies from the sandbox itself, unread, and what they are charged.
#[derive(Default)]
struct LocalQueue {
    replies: VecDeque<LocalReply>,
    charged: usize,
}

fn charge(r: &LocalReply) -> usize {
    r.data.len().saturating_add(REPLY_OVERHEAD)
}

/// Echo ids for sockets without a host socket (`--network none`), which
/// the sentry hands out itself.
static NEXT_ID: AtomicU16 = AtomicU16::new(1);

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
    /// Replies from the sandbox itself, unread.
    local: Mutex<LocalQueue>,
    /// The peer when connected to one of the sandbox's own addresses.
    local_peer: Mutex<Option<IpAddr>>,
    /// The echo id without a host socket (0: none yet).
    own_id: Mutex<u16>,
}

impl PingSocket {
    pub(crate) fn new(ino: u64, created: TimeSpec, v6: bool, host: Option<Opened>) -> Arc<PingSocket> {
        let events = Arc::new(Queue::default());
        let host = host.map(|o| HostConn::leased(o, &events));
        Arc::new(PingSocket {
            ino,
            created,
            v6,
            host,
            events,
            recorded: Mutex::default(),
            timeouts: Mutex::default(),
            local: Mutex::default(),
            local_peer: Mutex::default(),
            own_id: Mutex::default(),
        })
    }

    fn any(&self) -> IpAddr {
        if self.v6 {
            Ipv6Addr::UNSPECIFIED.into()
        } else {
            Ipv4Addr::UNSPECIFIED.into()
        }
    }

    /// The socket's echo id, given it (as Linux's first send does) when it
    /// has none: the host socket's, bound to one of the host's choosing,
    /// or without a host socket one of the sentry's.
    pub fn echo_id(&self) -> Result<u16, Errno> {
        match &self.host {
            Some(h) => match h.local()?.port() {
                0 => {
                    h.bind(SocketAddr::new(self.any(), 0))?;
                    Ok(h.local()?.port())
                }
                id => Ok(id),
            },
            None => {
                let mut id = self.own_id.lock();
                while *id == 0 {
                    *id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
                }
                Ok(*id)
            }
        }
    }

    /// The echo id as getsockname shows it: 0 before the socket has one.
    pub fn bound_id(&self) -> Result<u16, Errno> {
        match &self.host {
            Some(h) => Ok(h.local()?.port()),
            None => Ok(*self.own_id.lock()),
        }
    }

    /// bind(2) to echo id `id` (0: one of the host's or sentry's choosing).
    pub fn bind_id(&self, id: u16) -> Result<(), Errno> {
        match &self.host {
            Some(h) => h.bind(SocketAddr::new(self.any(), id)),
            None => {
                let mut own = self.own_id.lock();
                if *own != 0 {
                    return Err(Errno::EINVAL);
                }
                *own = id;
                drop(own);
                self.echo_id().map(drop)
            }
        }
    }

    /// Answers echo request `request` to the sandbox's own address
    /// `dest` (whose reply comes from `from`) as Linux's stack would:
    /// the reply waits to be received here. Never reaches the host.
    pub fn answer(&self, request: &[u8], from: IpAddr) -> Result<usize, Errno> {
        let id = self.echo_id()?;
        let data = ping_local::reply(request, id, from);
        let limit = self.rcvbuf();
        let mut local = self.local.lock();
        // As __sock_queue_rcv_skb: dropped once what is queued has
        // reached the receive buffer (the send still succeeds).
        if local.charged < limit {
            let reply = LocalReply { from, data, at: SystemTime::now() };
            local.charged = local.charged.saturating_add(charge(&reply));
            local.replies.push_back(reply);
        }
        drop(local);
        self.events.notify(POLLIN | POLLRDNORM);
        Ok(request.len())
    }

    /// The receive buffer's size (sk_rcvbuf): the host socket's, which
    /// carries the guest's SO_RCVBUF, else Linux's default.
    fn rcvbuf(&self) -> usize {
        let mut v = [0u8; 4];
        let Some(h) = &self.host else { return RCVBUF_DEFAULT };
        match h.option_bytes(libc::SOL_SOCKET, libc::SO_RCVBUF, &mut v) {
            Ok(4) => usize::try_from(i32::from_le_bytes(v)).unwrap_or(RCVBUF_DEFAULT),
            _ => RCVBUF_DEFAULT,
        }
    }

    /// The next reply from the sandbox itself, if any (kept with `peek`).
    pub fn take_local(&self, peek: bool) -> Option<LocalReply> {
        let mut local = self.local.lock();
        if peek {
            local.replies.front().map(|r| LocalReply { from: r.from, data: r.data.clone(), at: r.at })
        } else {
            let r = local.replies.pop_front()?;
            local.charged = local.charged.saturating_sub(charge(&r));
            Some(r)
        }
    }

    /// The sandbox's own address this socket is connected to, if it is.
    pub fn local_peer(&self) -> Option<IpAddr> {
        *self.local_peer.lock()
    }

    pub fn set_local_peer(&self, peer: Option<IpAddr>) {
        *self.local_peer.lock() = peer;
    }

    /// Whether an int option carried to the host socket is on (off
    /// without one).
    pub fn option_on(&self, level: i32, name: i32) -> bool {
        let mut v = [0u8; 4];
        let Some(h) = &self.host else { return false };
        matches!(h.option_bytes(level, name, &mut v), Ok(4) if i32::from_le_bytes(v) != 0)
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
        if let Some(r) = self.take_local(false) {
            let n = r.data.len().min(buf.len());
            buf[..n].copy_from_slice(&r.data[..n]);
            return Ok(n);
        }
        let host = self.host.as_ref().ok_or(Errno::EAGAIN)?;
        host.recv_from(buf, false).map(|(n, _, _)| n)
    }

    /// An echo request to the connected peer (whose connect the policy
    /// allowed, or the sandbox itself); the host checks its header.
    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        if let Some(peer) = self.local_peer() {
            let echo = if self.v6 { 128 } else { 8 };
            if buf.len() < 8 || buf[0] != echo || buf[1] != 0 {
                return Err(Errno::EINVAL);
            }
            let from = ping_local::own_source(peer, husk_netstack::iface::uplink()).unwrap_or(peer);
            return self.answer(buf, from);
        }
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
        let local = if self.local.lock().replies.is_empty() { 0 } else { POLLIN | POLLRDNORM };
        local | self.host.as_ref().map_or(POLLOUT | POLLWRNORM, HostConn::paced_events)
    }

    fn event_register(&self, e: &Entry) {
        self.events.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }

    fn fasync(&self) -> Option<crate::vfs::Fasync> {
        Some(crate::vfs::Fasync::Stream)
    }

    fn io_timeout(&self, write: bool) -> Option<Duration> {
        crate::fs::sockopt::io_timeout(&self.timeouts, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo request of `len` bytes (ICMP header included).
    fn request(len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        r[0] = 8;
        r
    }

    #[test]
    fn own_replies_are_capped_by_the_receive_buffer() {
        let s = PingSocket::new(1, TimeSpec::default(), false, None);
        let lo: IpAddr = Ipv4Addr::LOCALHOST.into();
        let big = request(65_507);
        // Every send succeeds, as Linux's does when the reply is dropped.
        for _ in 0..64 {
            assert_eq!(s.answer(&big, lo), Ok(big.len()));
        }
        let mut held = 0;
        let mut n = 0;
        while let Some(r) = s.take_local(false) {
            held += r.data.len();
            n += 1;
        }
        // Linux queues while rmem_alloc < sk_rcvbuf: 212992 holds four
        // such replies (the fourth is taken at 3 * 64 KiB < 212992).
        assert_eq!(n, 4, "replies past the receive buffer are dropped");
        assert!(held < RCVBUF_DEFAULT + big.len());
        // Reading them frees the buffer for more.
        assert_eq!(s.answer(&big, lo), Ok(big.len()));
        assert!(s.take_local(true).is_some());
        assert!(s.take_local(false).is_some());
        assert!(s.take_local(false).is_none());
    }

    #[test]
    fn tiny_replies_are_charged_their_overhead() {
        let s = PingSocket::new(2, TimeSpec::default(), false, None);
        let lo: IpAddr = Ipv4Addr::LOCALHOST.into();
        let small = request(8);
        for _ in 0..10_000 {
            assert_eq!(s.answer(&small, lo), Ok(8));
        }
        let mut n = 0;
        while s.take_local(false).is_some() {
            n += 1;
        }
        assert_eq!(n, RCVBUF_DEFAULT.div_ceil(8 + REPLY_OVERHEAD));
    }
}
