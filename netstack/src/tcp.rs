//! TCP endpoints. A connection between two of the sandbox's sockets is
//! made at once when a listener takes it (there is no handshake to wait
//! for on loopback) and carries bytes in two bounded directions; closing
//! an end sends FIN, or RST when it leaves bytes unread, as Linux does.

use crate::addr::{self, Family};
use crate::ports::{Binding, Local, ShareOpts};
use crate::stream::{Direction, Limits, Sent};
use crate::waiter::Queue;
use crate::{events, Error, Stack};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// One end of an established connection.
struct Conn {
    rx: Arc<Direction>,
    tx: Arc<Direction>,
    local: SocketAddr,
    peer: SocketAddr,
    /// A non-blocking connect has not yet been told it completed.
    unreported: bool,
    /// Sent data has met a closed peer (its RST): later sends fail.
    broken: bool,
    /// shutdown(SHUT_RD): receives return 0 once nothing is queued.
    read_shut: bool,
    write_shut: bool,
}

/// SO_SNDBUF and SO_RCVBUF of a TCP socket that never set them: tcp_wmem
/// and tcp_rmem's defaults.
const SNDBUF_DEFAULT: usize = 16_384;
const RCVBUF_DEFAULT: usize = 131_072;
/// The send buffer Linux 6.18 grows an unset one to once a loopback
/// connection is established (tcp_sndbuf_expand with loopback's MSS).
const SNDBUF_CONNECTED: usize = 3_939_840;

/// How long a connection closed first by this end holds its port after
/// the peer's FIN (TIME_WAIT): Linux's is 60 s, the sandbox's shorter, as
/// nothing can arrive late on loopback.
const TIME_WAIT: Duration = Duration::from_secs(5);
/// How long a closed connection waits for the peer's FIN (orphaned
/// FIN_WAIT2) without TCP_LINGER2: net.ipv4.tcp_fin_timeout.
const FIN_TIMEOUT: Duration = Duration::from_secs(60);

/// SO_SNDBUF and SO_RCVBUF once set (as reported: twice what was asked).
#[derive(Clone, Copy, Default)]
struct Buffers {
    send: Option<usize>,
    recv: Option<usize>,
}

/// The most connections a listener queues for accept (Linux's default
/// net.core.somaxconn); past it, connects are refused.
const SOMAXCONN: usize = 4096;

enum State {
    /// Not connected; maybe bound.
    Closed,
    Listening {
        pending: VecDeque<Arc<TcpEndpoint>>,
    },
    Connected(Conn),
}

struct Inner {
    state: State,
    local: Local,
    /// SO_ERROR: a non-blocking connect's failure.
    error: Option<Error>,
}

/// A TCP socket.
pub struct TcpEndpoint {
    stack: Arc<Stack>,
    family: Family,
    me: Weak<TcpEndpoint>,
    queue: Arc<Queue>,
    inner: Mutex<Inner>,
    /// SO_LINGER with a zero time: closing resets the connection.
    reset_on_close: std::sync::atomic::AtomicBool,
    /// SO_OOBINLINE: the urgent byte stays among the data read.
    oob_inline: std::sync::atomic::AtomicBool,
    buffers: Mutex<Buffers>,
    /// TCP_LINGER2: how long the closed connection waits for the peer's
    /// FIN.
    fin_timeout: Mutex<Duration>,
}

impl TcpEndpoint {
    pub fn new(stack: &Arc<Stack>, family: Family) -> Arc<TcpEndpoint> {
        TcpEndpoint::with_state(stack, family, State::Closed)
    }

    fn with_state(stack: &Arc<Stack>, family: Family, state: State) -> Arc<TcpEndpoint> {
        Arc::new_cyclic(|me| TcpEndpoint {
            stack: stack.clone(),
            family,
            me: me.clone(),
            queue: Arc::default(),
            inner: Mutex::new(Inner { state, local: Local::default(), error: None }),
            reset_on_close: std::sync::atomic::AtomicBool::new(false),
            oob_inline: std::sync::atomic::AtomicBool::new(false),
            buffers: Mutex::default(),
            fin_timeout: Mutex::new(FIN_TIMEOUT),
        })
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// Where waiters register for this endpoint's readiness changes.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// bind(2).
    pub fn bind(&self, addr: SocketAddr) -> Result<(), Error> {
        let mut i = self.inner.lock();
        if !matches!(i.state, State::Closed) {
            return Err(Error::Invalid);
        }
        i.local.bind(&self.stack.tcp, self.family, addr, &self.me).map(drop)
    }

    /// listen(2); the backlog is not enforced.
    pub fn listen(&self) -> Result<(), Error> {
        let mut i = self.inner.lock();
        match i.state {
            State::Listening { .. } => return Ok(()),
            State::Connected(_) => return Err(Error::Invalid),
            State::Closed => {}
        }
        let h = i.local.hold_or_bind(&self.stack.tcp, self.family, &self.me)?;
        self.stack.tcp.lock().update(&h, |b| b.listening = true)?;
        i.state = State::Listening { pending: VecDeque::new() };
        Ok(())
    }

    /// connect(2). A connection the listener takes is established at once;
    /// with `nonblock` that is still reported as EINPROGRESS (and a refusal
    /// through SO_ERROR), as Linux reports a loopback connect.
    pub fn connect(&self, to: SocketAddr, nonblock: bool) -> Result<(), Error> {
        let mut i = self.inner.lock();
        match &mut i.state {
            State::Connected(c) if c.unreported => {
                c.unreported = false;
                return Ok(());
            }
            State::Connected(_) | State::Listening { .. } => return Err(Error::IsConnected),
            State::Closed => {}
        }
        // A refused non-blocking connect reports its error to the next
        // connect, as Linux does, instead of trying again.
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let dest = addr::destination(self.family, i.local.opts.v6only, to)?;
        // A group is no peer for a stream (Linux's tcp_v4_connect).
        if dest.ip().is_multicast() {
            return Err(Error::NetUnreachable);
        }
        let h = i.local.hold_or_bind(&self.stack.tcp, self.family, &self.me)?;
        let local = SocketAddr::new(addr::source(h.ip, dest.ip()), h.port);
        if self.stack.tcp.lock().connected(&h, local.ip(), dest) {
            return Err(Error::AddrNotAvailable);
        }
        let listener = self.stack.tcp.lock().lookup(dest, local, |b| b.listening);
        let Some(listener) = listener else {
            if nonblock {
                i.error = Some(Error::ConnRefused);
                drop(i);
                self.queue.notify();
                return Err(Error::InProgress);
            }
            return Err(Error::ConnRefused);
        };
        let theirs = Arc::new(Queue::default());
        // The accepted socket takes the listener's buffer sizes, as Linux
        // clones a listener's sock.
        let (mine, their_bufs) = (*self.buffers.lock(), *listener.buffers.lock());
        let out_limits =
            Limits { send: mine.send.unwrap_or(SNDBUF_CONNECTED), recv: their_bufs.recv.unwrap_or(RCVBUF_DEFAULT) };
        let back_limits =
            Limits { send: their_bufs.send.unwrap_or(SNDBUF_CONNECTED), recv: mine.recv.unwrap_or(RCVBUF_DEFAULT) };
        let out = Direction::new(&self.stack, self.queue.clone(), theirs.clone(), out_limits);
        let back = Direction::new(&self.stack, theirs.clone(), self.queue.clone(), back_limits);
        // The accepted socket inherits the listener's SO_OOBINLINE, as
        // Linux copies a listener's flags to its connections.
        let listener_inline = listener.oob_inline();
        out.set_inline(listener_inline, true);
        back.set_inline(self.oob_inline(), true);
        let server = Arc::new_cyclic(|me| TcpEndpoint {
            stack: self.stack.clone(),
            family: listener.family,
            me: me.clone(),
            queue: theirs,
            inner: Mutex::new(Inner {
                state: State::Connected(Conn::new(
                    out.clone(),
                    back.clone(),
                    addr::presented(listener.family, dest),
                    addr::presented(listener.family, local),
                )),
                local: Local::default(),
                error: None,
            }),
            reset_on_close: std::sync::atomic::AtomicBool::new(false),
            oob_inline: std::sync::atomic::AtomicBool::new(listener_inline),
            buffers: Mutex::new(their_bufs),
            fin_timeout: Mutex::new(FIN_TIMEOUT),
        });
        // The accepted connection shares the listener's port (Linux's
        // inet_inherit_port): binding it conflicts while the connection
        // lasts, its TIME_WAIT too.
        let opts = listener.share_opts();
        let binding = Binding {
            ip: dest.ip(),
            dual: false,
            reuse_addr: opts.reuse_addr,
            reuse_port: opts.reuse_port,
            listening: false,
            remote: None,
        };
        let hold = self.stack.tcp.lock().attach(dest.port(), binding, Arc::downgrade(&server));
        {
            let mut si = server.inner.lock();
            si.local.hold = Some(hold);
            si.local.opts = opts;
        }
        if !listener.enqueue(server) {
            return Err(Error::ConnRefused);
        }
        // The port now carries this connection: no other may make the same.
        self.stack.tcp.lock().set(&h, |b| b.remote = Some(dest));
        let mut conn = Conn::new(back, out, addr::presented(self.family, local), addr::presented(self.family, dest));
        conn.unreported = nonblock;
        i.state = State::Connected(conn);
        drop(i);
        self.queue.notify();
        if nonblock {
            Err(Error::InProgress)
        } else {
            Ok(())
        }
    }

    /// Queues a new connection for accept; false if this is no longer a
    /// listener or its queue is full.
    fn enqueue(&self, conn: Arc<TcpEndpoint>) -> bool {
        let mut i = self.inner.lock();
        let State::Listening { pending } = &mut i.state else { return false };
        if pending.len() >= SOMAXCONN {
            return false;
        }
        pending.push_back(conn);
        drop(i);
        self.queue.notify();
        true
    }

    /// accept(2): the next established connection.
    pub fn accept(&self) -> Result<Arc<TcpEndpoint>, Error> {
        let mut i = self.inner.lock();
        let State::Listening { pending } = &mut i.state else { return Err(Error::Invalid) };
        pending.pop_front().ok_or(Error::WouldBlock)
    }

    /// Sends what fits of `buf`.
    pub fn send(&self, buf: &[u8]) -> Result<usize, Error> {
        self.send_with(buf, false)
    }

    /// send(MSG_OOB): sends what fits of `buf` and marks its last byte
    /// sent urgent.
    pub fn send_urgent(&self, buf: &[u8]) -> Result<usize, Error> {
        self.send_with(buf, true)
    }

    fn send_with(&self, buf: &[u8], urgent: bool) -> Result<usize, Error> {
        let mut i = self.inner.lock();
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let State::Connected(c) = &mut i.state else { return Err(Error::BrokenPipe) };
        // A reset the peer sent fails the first send with ECONNRESET (as
        // Linux reports sk_err), the later ones with EPIPE.
        if c.rx.take_reset() {
            c.broken = true;
            return Err(Error::ConnReset);
        }
        if c.write_shut || c.broken || c.rx.was_reset() {
            return Err(Error::BrokenPipe);
        }
        let tx = c.tx.clone();
        drop(i);
        match tx.write(buf, urgent)? {
            Sent::Bytes(n) => {
                self.stack.count(n);
                Ok(n)
            }
            // The first send to a closed peer goes out and draws its RST;
            // only the next one fails.
            Sent::NoReader => {
                if let State::Connected(c) = &mut self.inner.lock().state {
                    c.broken = true;
                }
                Ok(buf.len())
            }
        }
    }

    /// Receives into `buf` (or with `peek` copies); 0 at EOF.
    pub fn recv(&self, buf: &mut [u8], peek: bool) -> Result<usize, Error> {
        let i = self.inner.lock();
        let State::Connected(c) = &i.state else { return Err(Error::NotConnected) };
        let (rx, read_shut) = (c.rx.clone(), c.read_shut);
        drop(i);
        // After SHUT_RD what arrived is still read, then 0 (Linux's
        // tcp_recvmsg), never a wait.
        match rx.read(buf, peek) {
            Err(Error::WouldBlock) if read_shut => Ok(0),
            r => r,
        }
    }

    /// recv(MSG_OOB): the urgent byte (left in place with `peek`); EINVAL
    /// when none waits, ENOTCONN on a listener, as Linux.
    pub fn recv_urgent(&self, peek: bool) -> Result<u8, Error> {
        match &self.inner.lock().state {
            State::Connected(c) => c.rx.read_urgent(peek),
            State::Listening { .. } => Err(Error::NotConnected),
            State::Closed => Err(Error::Invalid),
        }
    }

    /// SIOCATMARK: the next byte to read is at the urgent mark.
    pub fn at_mark(&self) -> bool {
        matches!(&self.inner.lock().state, State::Connected(c) if c.rx.at_mark())
    }

    pub fn oob_inline(&self) -> bool {
        self.oob_inline.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// SO_OOBINLINE.
    pub fn set_oob_inline(&self, on: bool) {
        self.oob_inline.store(on, std::sync::atomic::Ordering::Relaxed);
        let rx = match &self.inner.lock().state {
            State::Connected(c) => Some(c.rx.clone()),
            _ => None,
        };
        if let Some(rx) = rx {
            rx.set_inline(on, false);
        }
    }

    /// shutdown(2). Shutting a listener's reading side closes it: its
    /// queued connections go and a blocked accept fails (EINVAL).
    pub fn shutdown(&self, read: bool, write: bool) -> Result<(), Error> {
        let mut i = self.inner.lock();
        if matches!(i.state, State::Listening { .. }) {
            if read {
                let closed = std::mem::replace(&mut i.state, State::Closed);
                if let Some(h) = i.local.hold {
                    self.stack.tcp.lock().set(&h, |b| b.listening = false);
                }
                drop(i);
                drop(closed);
                self.queue.notify();
            }
            return Ok(());
        }
        let State::Connected(c) = &mut i.state else { return Err(Error::NotConnected) };
        // Once both ends sent FIN (or a reset ended it) the connection is
        // closed: shutdown still marks the socket but fails with ENOTCONN
        // (Linux's inet_shutdown in TCP_CLOSE).
        let closed = (c.write_shut && c.rx.read_state().1) || c.broken || c.rx.was_reset();
        c.read_shut |= read;
        if write && !c.write_shut {
            c.write_shut = true;
            c.tx.finish();
        }
        drop(i);
        self.queue.notify();
        if closed {
            Err(Error::NotConnected)
        } else {
            Ok(())
        }
    }

    /// Readiness, as Linux's tcp_poll reports it.
    pub fn events(&self) -> u32 {
        use events::*;
        let i = self.inner.lock();
        // A refused connect leaves the socket closed and shut both ways
        // (Linux's tcp_done).
        if i.error.is_some() {
            return IN | RDNORM | RDHUP | OUT | ERR | HUP;
        }
        match &i.state {
            State::Closed => OUT | HUP,
            State::Listening { pending } => {
                if pending.is_empty() {
                    0
                } else {
                    IN | RDNORM
                }
            }
            State::Connected(c) => {
                let (readable, fin, _) = c.rx.read_state();
                let (room, gone, _) = c.tx.write_state();
                let mut ev = 0;
                // The reading side is shut by the peer's FIN or our own
                // SHUT_RD; the writing side by our SHUT_WR.
                let read_shut = fin || c.read_shut;
                if readable || read_shut {
                    ev |= IN | RDNORM;
                }
                if read_shut {
                    ev |= RDHUP;
                }
                if room || gone || c.write_shut {
                    ev |= OUT | WRNORM;
                }
                // HUP once both directions are shut (not in CLOSE_WAIT,
                // where the peer is done but we may still send), or reset.
                if (read_shut && c.write_shut) || c.broken {
                    ev |= HUP;
                }
                if c.broken {
                    ev |= ERR;
                }
                if c.rx.urgent_pending() {
                    ev |= PRI;
                }
                ev
            }
        }
    }

    /// SO_ERROR: takes the pending error.
    pub fn take_error(&self) -> Option<Error> {
        self.inner.lock().error.take()
    }

    /// The address bound or connected from (getsockname); the family's
    /// unspecified address and port 0 when unbound.
    pub fn local_addr(&self) -> SocketAddr {
        let i = self.inner.lock();
        match &i.state {
            State::Connected(c) => c.local,
            _ => i.local.addr(self.family),
        }
    }

    /// getpeername(2).
    pub fn peer_addr(&self) -> Result<SocketAddr, Error> {
        match &self.inner.lock().state {
            // A reset connection is gone (Linux's TCP_CLOSE).
            State::Connected(c) if c.broken || c.rx.was_reset() => Err(Error::NotConnected),
            State::Connected(c) => Ok(c.peer),
            _ => Err(Error::NotConnected),
        }
    }

    pub fn is_listening(&self) -> bool {
        matches!(self.inner.lock().state, State::Listening { .. })
    }

    /// Bytes waiting to be read (SIOCINQ) and sent but unread by the peer
    /// (SIOCOUTQ).
    pub fn queued(&self) -> (usize, usize) {
        match &self.inner.lock().state {
            State::Connected(c) => (c.rx.read_state().2, c.tx.write_state().2),
            _ => (0, 0),
        }
    }

    pub fn share_opts(&self) -> ShareOpts {
        self.inner.lock().local.opts
    }

    /// SO_LINGER with l_linger 0: the last close resets the connection
    /// (the peer's reads fail with ECONNRESET) instead of ending it.
    pub fn set_reset_on_close(&self, on: bool) {
        self.reset_on_close.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The connection's state as Linux numbers it (TCP_ESTABLISHED = 1 …
    /// TCP_LISTEN = 10), for TCP_INFO.
    pub fn linux_state(&self) -> u8 {
        const ESTABLISHED: u8 = 1;
        const FIN_WAIT2: u8 = 5;
        const TIME_WAIT: u8 = 6;
        const CLOSE: u8 = 7;
        const CLOSE_WAIT: u8 = 8;
        const LISTEN: u8 = 10;
        match &self.inner.lock().state {
            State::Closed => CLOSE,
            State::Listening { .. } => LISTEN,
            State::Connected(c) if c.broken => CLOSE,
            State::Connected(c) => match (c.rx.read_state().1, c.write_shut) {
                (false, false) => ESTABLISHED,
                (true, false) => CLOSE_WAIT,
                (false, true) => FIN_WAIT2,
                (true, true) => TIME_WAIT,
            },
        }
    }

    /// TCP_LINGER2: how long the connection, once closed, waits for the
    /// peer's FIN (None: net.ipv4.tcp_fin_timeout).
    pub fn set_fin_timeout(&self, timeout: Option<Duration>) {
        *self.fin_timeout.lock() = timeout.unwrap_or(FIN_TIMEOUT);
    }

    /// SO_SNDBUF and SO_RCVBUF: what was set, else the default (a larger
    /// send buffer once connected, as Linux grows it).
    pub fn buffer_sizes(&self) -> (usize, usize) {
        let b = *self.buffers.lock();
        let connected = matches!(self.inner.lock().state, State::Connected(_));
        let send_default = if connected { SNDBUF_CONNECTED } else { SNDBUF_DEFAULT };
        (b.send.unwrap_or(send_default), b.recv.unwrap_or(RCVBUF_DEFAULT))
    }

    /// Sets SO_SNDBUF (`send`) or SO_RCVBUF: how much the connection
    /// queues towards the peer, or from it. A sender waiting for room is
    /// woken when it grows.
    pub fn set_buffer_size(&self, send: bool, bytes: usize) {
        let mut b = self.buffers.lock();
        *(if send { &mut b.send } else { &mut b.recv }) = Some(bytes);
        drop(b);
        let dir = match &self.inner.lock().state {
            State::Connected(c) => Some(if send { c.tx.clone() } else { c.rx.clone() }),
            _ => None,
        };
        if let Some(d) = dir {
            d.set_limit(send, bytes);
        }
    }

    pub fn set_share_opts(&self, opts: ShareOpts) -> Result<(), Error> {
        self.inner.lock().local.set_opts(self.family, opts)
    }
}

impl Conn {
    fn new(rx: Arc<Direction>, tx: Arc<Direction>, local: SocketAddr, peer: SocketAddr) -> Conn {
        Conn { rx, tx, local, peer, unreported: false, broken: false, read_shut: false, write_shut: false }
    }
}

impl Drop for TcpEndpoint {
    fn drop(&mut self) {
        let fin_timeout = *self.fin_timeout.get_mut();
        let i = self.inner.get_mut();
        if let State::Connected(c) = &i.state {
            let unread = c.rx.close_reader();
            if unread || self.reset_on_close.load(std::sync::atomic::Ordering::Relaxed) {
                c.tx.reset();
            } else {
                c.tx.finish();
                if let Some(h) = i.local.hold.take().filter(|_| !c.broken) {
                    linger(&self.stack, h, &c.tx, &c.rx, fin_timeout);
                }
            }
        }
        i.local.release(&self.stack.tcp);
    }
}

/// Keeps the port of a connection closed without a reset held as Linux
/// keeps it: when this end sent FIN first, until the peer's FIN or
/// `fin_timeout` (FIN_WAIT2), then TIME_WAIT after that FIN; an end that
/// closed after the peer's FIN (LAST_ACK) lets go at once.
fn linger(stack: &Stack, hold: crate::ports::Hold, tx: &Arc<Direction>, rx: &Arc<Direction>, fin_timeout: Duration) {
    let (ours, theirs) = (tx.fin_at(), rx.fin_at());
    let active = match (ours, theirs) {
        (Some(o), Some(t)) => o <= t,
        (_, None) => true,
        (None, Some(_)) => false,
    };
    let mut table = stack.tcp.lock();
    if !active || rx.was_reset() {
        table.unbind(&hold);
        return;
    }
    let closed = Instant::now();
    let rx = rx.clone();
    let held = move || {
        let now = Instant::now();
        match rx.fin_at() {
            _ if rx.was_reset() => false,
            Some(t) if t <= closed + fin_timeout => now < t.max(closed) + TIME_WAIT,
            _ => now < closed + fin_timeout,
        }
    };
    table.linger(hold, closed + fin_timeout + TIME_WAIT, Box::new(held));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn listener(stack: &Arc<Stack>, at: &str) -> Arc<TcpEndpoint> {
        let l = TcpEndpoint::new(stack, if at.starts_with('[') { Family::V6 } else { Family::V4 });
        l.bind(addr(at)).unwrap();
        l.listen().unwrap();
        l
    }

    #[test]
    fn connect_accept_and_exchange_bytes() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:8080");
        let c = TcpEndpoint::new(&stack, Family::V4);
        c.connect(addr("127.0.0.1:8080"), false).unwrap();
        let s = l.accept().unwrap();
        assert_eq!(s.peer_addr(), Ok(c.local_addr()));
        assert_eq!(c.peer_addr(), Ok(s.local_addr()));
        assert_eq!(c.send(b"ping"), Ok(4));
        let mut buf = [0u8; 8];
        assert_eq!(s.recv(&mut buf, false), Ok(4));
        assert_eq!(&buf[..4], b"ping");
        assert_eq!(s.recv(&mut buf, false), Err(Error::WouldBlock));
        drop(c);
        assert_eq!(s.recv(&mut buf, false), Ok(0));
        // The first send to a closed peer succeeds; the next fails.
        assert_eq!(s.send(b"x"), Ok(1));
        assert_eq!(s.send(b"x"), Err(Error::BrokenPipe));
    }

    #[test]
    fn refused_unreachable_and_in_use() {
        let stack = Stack::new();
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.connect(addr("127.0.0.1:1"), false), Err(Error::ConnRefused));
        assert_eq!(c.connect(addr("10.0.0.1:80"), false), Err(Error::NetUnreachable));
        let nb = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(nb.connect(addr("127.0.0.1:1"), true), Err(Error::InProgress));
        assert_eq!(nb.take_error(), Some(Error::ConnRefused));
        let _l = listener(&stack, "0.0.0.0:9000");
        let other = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(other.bind(addr("127.0.0.1:9000")), Err(Error::AddrInUse));
        assert_eq!(other.bind(addr("10.0.0.1:9001")), Err(Error::AddrNotAvailable));
    }

    #[test]
    fn nonblocking_connect_reports_in_progress_then_success() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7000");
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.connect(addr("127.0.0.1:7000"), true), Err(Error::InProgress));
        assert_ne!(c.events() & events::OUT, 0);
        assert_eq!(c.connect(addr("127.0.0.1:7000"), true), Ok(()));
        assert_eq!(c.connect(addr("127.0.0.1:7000"), true), Err(Error::IsConnected));
        assert!(l.accept().is_ok());
    }

    #[test]
    fn dual_stack_listener_takes_ipv4_with_mapped_addresses() {
        let stack = Stack::new();
        let l = listener(&stack, "[::]:8000");
        let c = TcpEndpoint::new(&stack, Family::V4);
        c.connect(addr("127.0.0.1:8000"), false).unwrap();
        let s = l.accept().unwrap();
        assert_eq!(s.local_addr(), addr("[::ffff:127.0.0.1]:8000"));
        let v6 = TcpEndpoint::new(&stack, Family::V6);
        v6.connect(addr("[::1]:8000"), false).unwrap();
        assert_eq!(l.accept().unwrap().peer_addr(), Ok(v6.local_addr()));
    }

    #[test]
    fn the_accept_queue_is_bounded_and_a_shut_listener_refuses() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7002");
        for _ in 0..SOMAXCONN {
            let c = TcpEndpoint::new(&stack, Family::V4);
            assert_eq!(c.connect(addr("127.0.0.1:7002"), false), Ok(()));
        }
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.connect(addr("127.0.0.1:7002"), false), Err(Error::ConnRefused));
        assert_eq!(l.shutdown(true, true), Ok(()));
        assert_eq!(l.accept().err(), Some(Error::Invalid));
        let late = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(late.connect(addr("127.0.0.1:7002"), false), Err(Error::ConnRefused));
        let nb = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::InProgress));
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::ConnRefused));
    }

    #[test]
    fn closing_with_unread_data_resets_the_peer() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7001");
        let c = TcpEndpoint::new(&stack, Family::V4);
        c.connect(addr("127.0.0.1:7001"), false).unwrap();
        let s = l.accept().unwrap();
        assert_eq!(c.send(b"unread"), Ok(6));
        drop(s);
        let mut buf = [0u8; 4];
        assert_eq!(c.recv(&mut buf, false), Err(Error::ConnReset));
        assert_ne!(c.events() & events::RDHUP, 0);
    }

    fn pair(stack: &Arc<Stack>, at: &str) -> (Arc<TcpEndpoint>, Arc<TcpEndpoint>) {
        let l = listener(stack, at);
        let c = TcpEndpoint::new(stack, Family::V4);
        c.connect(addr(at), false).unwrap();
        let s = l.accept().unwrap();
        (c, s)
    }

    #[test]
    fn the_buffers_bound_what_a_connection_queues() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7104");
        l.set_buffer_size(false, 500);
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.buffer_sizes(), (SNDBUF_DEFAULT, RCVBUF_DEFAULT));
        c.set_buffer_size(true, 1000);
        c.connect(addr("127.0.0.1:7104"), false).unwrap();
        let s = l.accept().unwrap();
        assert_eq!(s.buffer_sizes(), (SNDBUF_CONNECTED, 500));
        let big = vec![1u8; 4000];
        assert_eq!(c.send(&big), Ok(1500));
        assert_eq!(c.send(&big), Err(Error::WouldBlock));
        assert_eq!(c.events() & events::OUT, 0);
        c.set_buffer_size(true, 2000);
        assert_ne!(c.events() & events::OUT, 0);
        assert_eq!(c.send(&big), Ok(1000));
    }

    #[test]
    fn urgent_byte_is_out_of_band_and_reads_stop_at_the_mark() {
        let stack = Stack::new();
        let (c, s) = pair(&stack, "127.0.0.1:7100");
        assert_eq!(s.recv_urgent(false), Err(Error::Invalid));
        assert_eq!(c.send(b"ab"), Ok(2));
        assert_eq!(c.send_urgent(b"cX"), Ok(2));
        assert_eq!(c.send(b"de"), Ok(2));
        assert_ne!(s.events() & events::PRI, 0);
        assert!(!s.at_mark());
        let mut buf = [0u8; 16];
        assert_eq!(s.recv(&mut buf, true), Ok(3));
        assert_eq!(s.recv(&mut buf, false), Ok(3));
        assert_eq!(&buf[..3], b"abc");
        assert!(s.at_mark());
        assert_eq!(s.recv_urgent(true), Ok(b'X'));
        assert_eq!(s.recv_urgent(false), Ok(b'X'));
        assert_eq!(s.recv_urgent(false), Err(Error::Invalid));
        assert_eq!(s.events() & events::PRI, 0);
        assert!(s.at_mark());
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        assert_eq!(&buf[..2], b"de");
        assert!(!s.at_mark());
    }

    #[test]
    fn a_later_urgent_byte_replaces_the_mark() {
        let stack = Stack::new();
        let (c, s) = pair(&stack, "127.0.0.1:7101");
        assert_eq!(c.send_urgent(b"A"), Ok(1));
        assert_eq!(c.send_urgent(b"B"), Ok(1));
        let mut buf = [0u8; 16];
        // The old urgent byte is data now; the reader stood at its mark,
        // so it is dropped (Linux's tcp_check_urg).
        assert_eq!(s.recv_urgent(false), Ok(b'B'));
        assert_eq!(s.recv(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(c.send(b"x"), Ok(1));
        assert_eq!(c.send_urgent(b"C"), Ok(1));
        assert_eq!(c.send_urgent(b"D"), Ok(1));
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        assert_eq!(&buf[..2], b"xC");
        assert_eq!(s.recv_urgent(false), Ok(b'D'));
    }

    #[test]
    fn inline_urgent_data_stays_in_the_stream() {
        let stack = Stack::new();
        let (c, s) = pair(&stack, "127.0.0.1:7102");
        s.set_oob_inline(true);
        assert_eq!(c.send_urgent(b"abc"), Ok(3));
        assert_eq!(s.recv_urgent(false), Err(Error::Invalid));
        assert_ne!(s.events() & events::PRI, 0);
        let mut buf = [0u8; 16];
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        assert!(s.at_mark());
        assert_eq!(s.recv(&mut buf, false), Ok(1));
        assert_eq!(buf[0], b'c');
        assert_eq!(s.events() & events::PRI, 0);
    }

    #[test]
    fn reading_past_an_untaken_urgent_byte_loses_it() {
        let stack = Stack::new();
        let (c, s) = pair(&stack, "127.0.0.1:7103");
        assert_eq!(c.send_urgent(b"abc"), Ok(3));
        let mut buf = [0u8; 16];
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        // Only the urgent byte is left: the stream is not readable.
        assert_eq!(s.events() & events::IN, 0);
        assert_eq!(s.recv(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(s.recv_urgent(false), Err(Error::Invalid));
        assert!(!s.at_mark());
        assert_eq!(s.events() & events::PRI, 0);
    }
}
