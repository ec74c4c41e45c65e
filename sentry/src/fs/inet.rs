//! IP sockets: the file behind a descriptor for a netstack TCP or UDP
//! endpoint. Neither the netstack nor the socket blocks: an endpoint that
//! is not ready fails with EAGAIN and announces its changes on its
//! notifier queue, which the socket passes on to its own wait queue.
//! A socket the egress gateway let out is carried on a host connection
//! instead (`egress.rs`), whose readiness reaches the same queue.

use crate::abi::ioctl::{FIONREAD, SIOCATMARK, SIOCOUTQ};
use crate::abi::Errno;
use crate::fs::egress::{HostConn, Opened};
use crate::fs::inbound::Listener;
use crate::vfs::{Fasync, FileOps, IoctlContext, ReadCall, TimeSpec, UrgentSignal};
use crate::waiter::{alarm, Entry, Notify, Queue, ALL};
use husk_netstack::udp::HeaderOverride;
use husk_netstack::waiter::Notifier;
use husk_netstack::{Error as NetError, TcpEndpoint, UdpEndpoint};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

/// The netstack endpoint a socket is.
pub(crate) enum Endpoint {
    Tcp(Arc<TcpEndpoint>),
    Udp(Arc<UdpEndpoint>),
}

/// An AF_INET or AF_INET6 socket.
pub(crate) struct InetSocket {
    ino: u64,
    created: TimeSpec,
    pub endpoint: Endpoint,
    /// Waiters for the endpoint's readiness.
    events: Arc<Queue>,
    /// Options accepted without effect, reported back as they were set,
    /// by (level, name).
    pub stored: Mutex<HashMap<(i32, i32), Vec<u8>>>,
    /// SO_RCVTIMEO and SO_SNDTIMEO.
    pub timeouts: Mutex<(Option<Duration>, Option<Duration>)>,
    /// The other socket-level options.
    pub opts: crate::fs::sockopt::SockOpts,
    /// The host connection carrying this socket once it connected out of
    /// the sandbox through the egress gateway.
    outside: OnceLock<HostConn>,
    /// The sandbox's resolver, when this datagram socket is connected to
    /// it (the netstack has no route there: the syscall layer carries its
    /// datagrams).
    pub resolver_peer: Mutex<Option<std::net::SocketAddr>>,
    /// A listener's host listeners in the outer namespace, whose
    /// connections its accept takes too (`inbound.rs`).
    pub inbound: Mutex<Vec<Listener>>,
    /// Tells F_SETOWN's owner that urgent data arrived.
    owner: Arc<Mutex<Option<UrgentSignal>>>,
    /// A listener's alarm for the time a connection TCP_DEFER_ACCEPT
    /// holds back becomes acceptable.
    defer_alarm: Mutex<Option<alarm::Key>>,
    /// When the last datagram received without a timestamp message
    /// arrived (Linux's sk_stamp, which SIOCGSTAMP reads).
    stamp: Mutex<Option<std::time::SystemTime>>,
    /// A connection's alarm for the time the bytes it holds back
    /// (TCP_CORK, MSG_MORE) go out by themselves.
    cork_alarm: Mutex<Option<alarm::Key>>,
    me: Weak<InetSocket>,
}

/// What recv gives: bytes copied, the whole datagram's length, its sender
/// and how it arrived.
pub(crate) type Received = (usize, usize, Option<std::net::SocketAddr>, Option<husk_netstack::udp::Meta>);

/// The errno Linux returns for a netstack failure.
pub(crate) fn errno(e: NetError) -> Errno {
    match e {
        NetError::WouldBlock => Errno::EAGAIN,
        NetError::InProgress => Errno::EINPROGRESS,
        NetError::Already => Errno::EALREADY,
        NetError::ConnAborted => Errno::ECONNABORTED,
        NetError::AfNotSupported => Errno::EAFNOSUPPORT,
        NetError::AddrInUse => Errno::EADDRINUSE,
        NetError::AddrNotAvailable => Errno::EADDRNOTAVAIL,
        NetError::ConnRefused => Errno::ECONNREFUSED,
        NetError::ConnReset => Errno::ECONNRESET,
        NetError::IsConnected => Errno::EISCONN,
        NetError::NotConnected => Errno::ENOTCONN,
        NetError::Invalid => Errno::EINVAL,
        NetError::NetUnreachable => Errno::ENETUNREACH,
        NetError::MsgSize => Errno::EMSGSIZE,
        NetError::BrokenPipe => Errno::EPIPE,
        NetError::DestAddrRequired => Errno::EDESTADDRREQ,
        NetError::NoDevice => Errno::ENODEV,
        NetError::NoBufs => Errno::ENOBUFS,
        NetError::NoMemory => Errno::ENOMEM,
        NetError::Access => Errno::EACCES,
    }
}

/// Passes an endpoint's readiness changes on to its socket's queue, and
/// urgent data to its owner as SIGURG (Linux's sk_send_sigurg).
struct Forward(Weak<Queue>, Arc<Mutex<Option<UrgentSignal>>>);

impl Notifier for Forward {
    fn notify(&self) {
        if let Some(q) = self.0.upgrade() {
            q.notify(ALL);
        }
    }

    fn urgent(&self) {
        let owner = self.1.lock().clone();
        if let Some(signal) = owner {
            signal();
        }
    }
}

impl InetSocket {
    pub(crate) fn new(ino: u64, created: TimeSpec, endpoint: Endpoint) -> Arc<InetSocket> {
        let events = Arc::new(Queue::default());
        let owner = Arc::new(Mutex::new(None));
        let forward: Arc<dyn Notifier> = Arc::new(Forward(Arc::downgrade(&events), owner.clone()));
        match &endpoint {
            Endpoint::Tcp(t) => t.queue().register(forward),
            Endpoint::Udp(u) => u.queue().register(forward),
        }
        Arc::new_cyclic(|me| InetSocket {
            ino,
            created,
            endpoint,
            events,
            stored: Mutex::default(),
            timeouts: Mutex::default(),
            opts: crate::fs::sockopt::SockOpts::default(),
            outside: OnceLock::new(),
            resolver_peer: Mutex::new(None),
            inbound: Mutex::default(),
            owner,
            defer_alarm: Mutex::new(None),
            stamp: Mutex::new(None),
            cork_alarm: Mutex::new(None),
            me: me.clone(),
        })
    }

    /// Sets an alarm that wakes this listener's waiters when the earliest
    /// connection TCP_DEFER_ACCEPT holds back becomes acceptable (its
    /// readiness is checked again then), unless one is set for that time.
    pub(crate) fn wake_for_deferred(&self, t: &TcpEndpoint) {
        self.alarm_at(&self.defer_alarm, t.defer_deadline());
    }

    /// Sets an alarm that sends the bytes this connection holds back
    /// (corked) when their time is up, unless one is set for that time.
    fn push_held_in_time(&self, t: &TcpEndpoint) {
        self.alarm_at(&self.cork_alarm, t.held_until());
    }

    /// Keeps the alarm in `slot` set for `at` (none for None).
    fn alarm_at(&self, slot: &Mutex<Option<alarm::Key>>, at: Option<std::time::Instant>) {
        let Some(at) = at else { return };
        let mut key = slot.lock();
        if key.is_some_and(|k| k.when() == at) {
            return;
        }
        if let Some(k) = key.take() {
            alarm::cancel(k);
        }
        let me: Weak<dyn Notify> = self.me.clone();
        *key = alarm::at(at, me);
    }

    /// The host connection this socket is carried on, if it left the
    /// sandbox.
    pub(crate) fn outside(&self) -> Option<&HostConn> {
        self.outside.get()
    }

    /// Carries this socket on the gateway's host socket from now on
    /// (EISCONN when it already is).
    pub(crate) fn carry_outside(&self, host: Opened) -> Result<&HostConn, Errno> {
        self.outside.set(HostConn::leased(host, &self.events)).map_err(|_| Errno::EISCONN)?;
        self.outside.get().ok_or(Errno::EISCONN)
    }

    /// Carries this fresh socket on a connection a host listener accepted
    /// from `peer` for the guest listener on `guest_port`.
    pub(crate) fn carry_accepted(
        &self,
        host: Opened,
        peer: std::net::SocketAddr,
        guest_port: u16,
    ) -> Result<&HostConn, Errno> {
        let conn = HostConn::accepted(host, &self.events, peer, guest_port);
        self.outside.set(conn).map_err(|_| Errno::EISCONN)?;
        self.outside.get().ok_or(Errno::EISCONN)
    }

    /// Feeds this listener the connections of `listeners` too, waking its
    /// waiters when one arrives.
    pub(crate) fn listen_outside(&self, listen: impl FnOnce(&Arc<Queue>) -> Vec<Listener>) {
        let mut inbound = self.inbound.lock();
        if inbound.is_empty() {
            *inbound = listen(&self.events);
        }
    }

    /// Receives into `buf` like recv(2): bytes copied, the whole datagram's
    /// length, and the sender of a datagram; EAGAIN when nothing waits.
    /// A datagram of the sandbox's own also says how it arrived. A
    /// datagram socket shut for reading gives 0 instead of waiting (a
    /// receive that `may_wait`), as Linux's udp_recvmsg.
    pub(crate) fn recv(&self, buf: &mut [u8], peek: bool, may_wait: bool) -> Result<Received, Errno> {
        let r = match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(_), Some(h)) => return h.recv(buf, peek).map(|n| (n, n, None, None)),
            // Datagrams from outside first, then the sandbox's own.
            (Endpoint::Udp(_), Some(h)) => match h.recv_from(buf, peek) {
                Err(Errno::EAGAIN) => None,
                r => Some(r.map(|(n, full, from)| (n, full, from, None))),
            },
            _ => None,
        };
        let r = match (r, &self.endpoint) {
            (Some(r), _) => r,
            (None, Endpoint::Tcp(t)) => return t.recv(buf, peek).map(|n| (n, n, None, None)).map_err(errno),
            (None, Endpoint::Udp(u)) => match u.recv_from(buf, peek) {
                Err(NetError::WouldBlock) if may_wait && u.read_shut() => return Ok((0, 0, None, None)),
                r => r.map(|d| (d.len, d.full, Some(d.from), Some(d.meta))).map_err(errno),
            },
        };
        if let Ok((.., meta)) = &r {
            self.note_arrival(meta.map(|m| m.at));
        }
        r
    }

    /// Keeps when a datagram just received arrived (now for one from
    /// outside) for SIOCGSTAMP, unless the socket asked for timestamp
    /// messages, which take its place (sock_recv_timestamp).
    fn note_arrival(&self, at: Option<std::time::SystemTime>) {
        if self.opts.get().stamping.is_none() {
            *self.stamp.lock() = Some(at.unwrap_or_else(std::time::SystemTime::now));
        }
    }

    /// SIOCGSTAMP: when the last datagram received without a timestamp
    /// message arrived; ENOENT before there was one (and always on TCP,
    /// whose receives keep none).
    pub(crate) fn last_stamp(&self) -> Result<std::time::Duration, Errno> {
        let at = (*self.stamp.lock()).ok_or(Errno::ENOENT)?;
        Ok(at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default())
    }

    /// A TCP endpoint's readiness with SO_RCVLOWAT: readable once that
    /// many bytes wait, at EOF or on an error.
    pub(crate) fn tcp_events(&self, t: &TcpEndpoint) -> u32 {
        use husk_netstack::events::{ERR, HUP, IN, RDHUP, RDNORM};
        let ev = t.events();
        let lowat = usize::try_from(self.opts.get().rcvlowat).unwrap_or(1);
        if lowat > 1 && ev & (RDHUP | ERR | HUP) == 0 && t.queued().0 < lowat {
            ev & !(IN | RDNORM)
        } else {
            ev
        }
    }

    /// Sends like sendto(2): a stream takes what fits (EAGAIN when nothing
    /// does); a datagram goes whole to `to` or the peer.
    pub(crate) fn send(&self, buf: &[u8], to: Option<std::net::SocketAddr>) -> Result<usize, Errno> {
        self.send_with(buf, to, HeaderOverride::default())
    }

    /// send, a datagram of the sandbox's own with the header fields its
    /// control messages set (`over`; a host connection does not take
    /// them).
    pub(crate) fn send_with(
        &self,
        buf: &[u8],
        to: Option<std::net::SocketAddr>,
        over: HeaderOverride,
    ) -> Result<usize, Errno> {
        match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(_), Some(h)) => h.send(buf),
            (Endpoint::Tcp(t), None) => {
                let sent = t.send(buf).map_err(errno);
                if t.corked() {
                    self.push_held_in_time(t);
                }
                sent
            }
            // A socket connected outside sends there (its connect passed
            // the gateway's policy); datagrams to an address outside are
            // the syscall layer's: each passes the policy.
            (Endpoint::Udp(_), Some(h)) if to.is_none() && h.is_connected() => h.send(buf),
            (Endpoint::Udp(u), _) => u.send_with(to, buf, over).map_err(errno),
        }
    }

    /// send(MSG_MORE) on a stream: what fits of `buf`, held back as if
    /// corked on a TCP socket of the sandbox's own (a host connection
    /// sends it as it is).
    pub(crate) fn send_more(&self, buf: &[u8]) -> Result<usize, Errno> {
        match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(t), None) => {
                let sent = t.send_more(buf).map_err(errno);
                self.push_held_in_time(t);
                sent
            }
            _ => self.send(buf, None),
        }
    }

    /// send(MSG_OOB) on a TCP socket of the sandbox's own: what fits of
    /// `buf`, its last byte urgent. A stream carried on a host connection
    /// does not carry urgent data (EOPNOTSUPP), nor does UDP.
    pub(crate) fn send_urgent(&self, buf: &[u8]) -> Result<usize, Errno> {
        match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(t), None) => t.send_urgent(buf).map_err(errno),
            _ => Err(Errno::EOPNOTSUPP),
        }
    }

    /// recv(MSG_OOB): the urgent byte of a TCP socket of the sandbox's own.
    pub(crate) fn recv_urgent(&self, peek: bool) -> Result<u8, Errno> {
        match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(t), None) => t.recv_urgent(peek).map_err(errno),
            _ => Err(Errno::EOPNOTSUPP),
        }
    }

    /// A read of this TCP socket would start at the urgent mark.
    pub(crate) fn at_mark(&self) -> bool {
        matches!((&self.endpoint, self.outside()), (Endpoint::Tcp(t), None) if t.at_mark())
    }

    /// The host connection of a stream carried outside (a datagram
    /// socket's host socket carries only what it sends out).
    pub(crate) fn stream_outside(&self) -> Option<&HostConn> {
        self.outside().filter(|_| self.is_stream())
    }

    /// Whether EPIPE from this socket raises SIGPIPE (a stream's does).
    pub(crate) fn is_stream(&self) -> bool {
        matches!(self.endpoint, Endpoint::Tcp(_))
    }
}

super::anon::socket_node!(InetSocket);

/// An alarm went off: the TCP_DEFER_ACCEPT one (waiters look again) or
/// the one for bytes held back (they go out now).
impl Notify for InetSocket {
    fn notify(&self, _mask: u32) {
        let now = std::time::Instant::now();
        for slot in [&self.defer_alarm, &self.cork_alarm] {
            let mut key = slot.lock();
            if key.is_some_and(|k| k.when() <= now) {
                *key = None;
            }
        }
        if let Endpoint::Tcp(t) = &self.endpoint {
            t.push_expired();
        }
        self.events.notify(ALL);
    }
}

impl FileOps for InetSocket {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.recv(buf, false, false).map(|(n, ..)| n)
    }

    fn read_call(&self, buf: &mut [u8], call: &mut ReadCall) -> Result<usize, Errno> {
        self.recv(buf, false, !call.nonblock).map(|(n, ..)| n)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send(buf, None)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        match (&self.endpoint, self.outside()) {
            (Endpoint::Tcp(_), Some(h)) => h.paced_events(),
            (Endpoint::Tcp(t), None) => {
                let ev = self.tcp_events(t) | super::inbound::events(&self.inbound.lock());
                if ev == 0 && t.is_listening() {
                    self.wake_for_deferred(t);
                }
                ev
            }
            (Endpoint::Udp(u), h) => u.events() | h.map_or(0, HostConn::paced_events),
        }
    }

    fn event_register(&self, e: &Entry) {
        self.events.register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events.unregister(e);
    }

    fn set_signal_owner(&self, urgent: Option<UrgentSignal>) {
        *self.owner.lock() = urgent;
    }

    fn fasync(&self) -> Option<Fasync> {
        Some(Fasync::Stream)
    }

    /// SO_RCVTIMEO and SO_SNDTIMEO.
    fn io_timeout(&self, write: bool) -> Option<Duration> {
        crate::fs::sockopt::io_timeout(&self.timeouts, write)
    }

    /// FIONREAD (SIOCINQ): bytes to read, or the next datagram's size;
    /// TIOCOUTQ (SIOCOUTQ): bytes sent but not yet read by the peer;
    /// SIOCATMARK: a TCP socket's next byte is the urgent mark.
    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        let mm = ctx.mm();
        if let Some(bytes) = super::sockstamp::ioctl(self, req)? {
            mm.copy_out(arg, &bytes)?;
            return Ok(0);
        }
        if let (SIOCATMARK, Endpoint::Tcp(t)) = (req, &self.endpoint) {
            let at = self.outside().is_none() && t.at_mark();
            mm.copy_out(arg, &i32::from(at).to_le_bytes())?;
            return Ok(0);
        }
        let (inq, outq) = match &self.endpoint {
            _ if self.stream_outside().is_some() && req == FIONREAD => {
                let n = self.stream_outside().map_or(Ok(0), HostConn::readable_bytes)?;
                (usize::try_from(n).unwrap_or(0), 0)
            }
            Endpoint::Tcp(t) if t.is_listening() => return Err(Errno::EINVAL),
            Endpoint::Tcp(t) => (t.inq(), t.queued().1),
            Endpoint::Udp(u) => (u.next_len(), 0),
        };
        let n = match req {
            FIONREAD => inq,
            SIOCOUTQ => outq,
            _ => return super::netdev::ioctl(mm, req, arg),
        };
        mm.copy_out(arg, &i32::try_from(n).unwrap_or(i32::MAX).to_le_bytes())?;
        Ok(0)
    }
}
