//! TCP endpoints. A connection between two of the sandbox's sockets is
//! made at once when a listener takes it (there is no handshake to wait
//! for on loopback) and carries bytes in two bounded directions; closing
//! an end sends FIN, or RST when it leaves bytes unread, as Linux does.
//! A listener whose accept queue is full drops the SYN: the connector
//! waits (SYN_SENT) until the queue has room or the listener goes (then
//! it is refused); a closing listener resets the connections it queued.

use crate::addr::{self, Family};
use crate::ports::{Binding, Local, ShareOpts};
use crate::stream::{Direction, Limits, Sent};
use crate::waiter::Queue;
use crate::{events, Error, Stack};

pub use crate::stream::{CORK_CEILING, LOOPBACK_MSS};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// One end of an established connection.
struct Conn {
    rx: Arc<Direction>,
    tx: Arc<Direction>,
    local: SocketAddr,
    peer: SocketAddr,
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

/// Linux's default net.core.somaxconn: the largest listen backlog.
const SOMAXCONN: usize = 4096;

/// A listener's queues.
struct Listen {
    /// Established connections, oldest first, for accept.
    pending: VecDeque<Arc<TcpEndpoint>>,
    /// listen(2)'s backlog: the queue is full once it holds more
    /// (Linux's sk_acceptq_is_full).
    backlog: usize,
    /// Connectors whose SYN the full queue dropped: they try again when
    /// accept makes room, as their retransmitted SYN would.
    waiting: Vec<Weak<TcpEndpoint>>,
    /// TCP_DEFER_ACCEPT: connections held back until data (or FIN)
    /// arrives on them or their time is up.
    deferred: Vec<Deferred>,
}

struct Deferred {
    conn: Arc<TcpEndpoint>,
    until: Instant,
    /// Pokes the listener when the connection's first bytes arrive.
    poke: Arc<dyn crate::waiter::Notifier>,
}

enum State {
    /// Not connected; maybe bound.
    Closed,
    /// SYN_SENT: connect found the listener's queue full.
    Connecting {
        dest: SocketAddr,
        local: SocketAddr,
    },
    Listening(Listen),
    Connected(Conn),
}

struct Inner {
    state: State,
    local: Local,
    /// SO_ERROR: a connect's failure, a reset before it was reported.
    error: Option<Error>,
    /// The socket layer's SS_CONNECTING: a connect is under way or its
    /// outcome not yet reported to a connect call.
    unreported: bool,
    /// A refusal or reset closed the socket both ways (Linux's tcp_done):
    /// reads return 0.
    done: bool,
    /// The address a connect that failed had, shown until the socket
    /// holds a port again.
    closed_local: Option<SocketAddr>,
}

/// What offering a new connection to a listener came to.
enum Offer {
    Queued,
    Full,
    Refused,
}

/// Wakes a listener's waiters when a deferred connection's data arrives.
struct Poke(Weak<TcpEndpoint>);

impl crate::waiter::Notifier for Poke {
    fn notify(&self) {
        if let Some(l) = self.0.upgrade() {
            l.queue.notify();
        }
    }
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
    /// TCP_DEFER_ACCEPT on a listener, in seconds (0: off).
    defer_accept: AtomicU32,
    /// TCP_CORK: sends hold back what does not fill a segment.
    corked: AtomicBool,
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
            inner: Mutex::new(Inner {
                state,
                local: Local::default(),
                error: None,
                unreported: false,
                done: false,
                closed_local: None,
            }),
            reset_on_close: std::sync::atomic::AtomicBool::new(false),
            oob_inline: std::sync::atomic::AtomicBool::new(false),
            defer_accept: AtomicU32::new(0),
            corked: AtomicBool::new(false),
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

    /// listen(2) with `backlog` (a negative one or one past somaxconn is
    /// somaxconn); listening again sets the backlog.
    pub fn listen(&self, backlog: i32) -> Result<(), Error> {
        let backlog = usize::try_from(backlog).map_or(SOMAXCONN, |b| b.min(SOMAXCONN));
        let mut i = self.inner.lock();
        let unreported = i.unreported;
        match &mut i.state {
            State::Listening(l) => {
                l.backlog = backlog;
                return Ok(());
            }
            State::Connected(_) | State::Connecting { .. } => return Err(Error::Invalid),
            State::Closed if unreported => return Err(Error::Invalid),
            State::Closed => {}
        }
        let h = i.local.hold_or_bind(&self.stack.tcp, self.family, &self.me)?;
        self.stack.tcp.lock().update(&h, |b| b.listening = true)?;
        i.done = false;
        i.state =
            State::Listening(Listen { pending: VecDeque::new(), backlog, waiting: Vec::new(), deferred: Vec::new() });
        Ok(())
    }

    /// connect(2). A connection the listener takes is established at once;
    /// with `nonblock` that is still reported as EINPROGRESS (and a refusal
    /// through SO_ERROR), as Linux reports a loopback connect. A listener
    /// whose queue is full leaves the socket connecting: InProgress (the
    /// caller of a blocking connect waits for writability and calls again),
    /// and EALREADY to a non-blocking connect until it completes.
    pub fn connect(&self, to: SocketAddr, nonblock: bool) -> Result<(), Error> {
        let mut i = self.inner.lock();
        if i.unreported {
            match &i.state {
                State::Connecting { .. } if nonblock => return Err(Error::Already),
                State::Connecting { .. } => return Err(Error::InProgress),
                State::Connected(_) => {
                    i.unreported = false;
                    return Ok(());
                }
                // Refused or reset while connecting: the error once, then
                // ECONNABORTED (Linux's sock_error path of connect).
                State::Closed => {
                    i.unreported = false;
                    return Err(i.error.take().unwrap_or(Error::ConnAborted));
                }
                State::Listening(_) => i.unreported = false,
            }
        }
        match &i.state {
            State::Connected(_) | State::Listening(_) => return Err(Error::IsConnected),
            State::Connecting { .. } => return Err(Error::Already),
            State::Closed => {}
        }
        let dest = addr::destination(self.family, i.local.opts.v6only, to)?;
        addr::check_bound_family(i.local.hold.map(|h| h.ip), dest.ip())?;
        // A group is no peer for a stream (Linux's tcp_v4_connect).
        if dest.ip().is_multicast() {
            return Err(Error::NetUnreachable);
        }
        let h = i.local.hold_or_bind(&self.stack.tcp, self.family, &self.me)?;
        let local = SocketAddr::new(addr::source(h.ip, dest.ip()), h.port);
        if self.stack.tcp.lock().connected(&h, local.ip(), dest) {
            return Err(Error::AddrNotAvailable);
        }
        i.error = None;
        i.done = false;
        // A SYN to the socket's own address meets itself: a simultaneous
        // open makes the socket its own peer.
        if addr::canonical(local.ip()) == dest.ip() && local.port() == dest.port() {
            let mine = *self.buffers.lock();
            let limits =
                Limits { send: mine.send.unwrap_or(SNDBUF_CONNECTED), recv: mine.recv.unwrap_or(RCVBUF_DEFAULT) };
            let d = Direction::new(&self.stack, self.queue.clone(), self.queue.clone(), limits);
            d.set_inline(self.oob_inline(), true);
            let (l, p) = (addr::presented(self.family, local), addr::presented(self.family, dest));
            i.state = State::Connected(Conn::new(d.clone(), d, l, p));
            i.unreported = nonblock;
            drop(i);
            self.queue.notify();
            return if nonblock { Err(Error::InProgress) } else { Ok(()) };
        }
        self.handshake(&mut i, dest, local);
        let r = match &i.state {
            State::Connected(_) if !nonblock => Ok(()),
            State::Closed if !nonblock => Err(i.error.take().unwrap_or(Error::ConnRefused)),
            _ => {
                i.unreported = true;
                Err(Error::InProgress)
            }
        };
        drop(i);
        self.queue.notify();
        r
    }

    /// Sends the SYN to whatever listens at `dest` and moves to the state
    /// the answer gives: Connected, Connecting (the queue is full: the
    /// listener keeps this socket to retry) or Closed and refused.
    fn handshake(&self, i: &mut Inner, dest: SocketAddr, local: SocketAddr) {
        let listener = self.stack.tcp.lock().lookup(dest, local, |b| b.listening);
        let Some(listener) = listener else {
            self.refuse(i);
            return;
        };
        let mut conn = None;
        let offer = listener.offer(&self.me, |opts| {
            let theirs = Arc::new(Queue::default());
            // The accepted socket takes the listener's buffer sizes, as
            // Linux clones a listener's sock.
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
            conn = Some(Conn::new(
                back.clone(),
                out.clone(),
                addr::presented(self.family, local),
                addr::presented(self.family, dest),
            ));
            let server = Arc::new_cyclic(|me| TcpEndpoint {
                stack: self.stack.clone(),
                family: listener.family,
                me: me.clone(),
                queue: theirs,
                inner: Mutex::new(Inner {
                    state: State::Connected(Conn::new(
                        out,
                        back,
                        addr::presented(listener.family, dest),
                        addr::presented(listener.family, local),
                    )),
                    local: Local::default(),
                    error: None,
                    unreported: false,
                    done: false,
                    closed_local: None,
                }),
                reset_on_close: AtomicBool::new(false),
                oob_inline: AtomicBool::new(listener_inline),
                defer_accept: AtomicU32::new(0),
                corked: AtomicBool::new(false),
                buffers: Mutex::new(their_bufs),
                fin_timeout: Mutex::new(FIN_TIMEOUT),
            });
            // The accepted connection shares the listener's port (Linux's
            // inet_inherit_port): binding it conflicts while the
            // connection lasts, its TIME_WAIT too.
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
            server
        });
        match (offer, conn) {
            (Offer::Queued, Some(c)) => {
                // The port now carries this connection: no other may make
                // the same.
                if let Some(h) = &i.local.hold {
                    self.stack.tcp.lock().set(h, |b| b.remote = Some(dest));
                }
                i.state = State::Connected(c);
            }
            (Offer::Full, _) => i.state = State::Connecting { dest, local },
            _ => self.refuse(i),
        }
    }

    /// The peer answered with RST: closed both ways, ECONNREFUSED pending.
    fn refuse(&self, i: &mut Inner) {
        self.close_unconnected(i);
        i.error = Some(Error::ConnRefused);
        i.done = true;
    }

    /// A connect that ends without a connection (TCP_CLOSE): a port not
    /// bound explicitly goes back, as Linux's inet_put_port.
    fn close_unconnected(&self, i: &mut Inner) {
        i.state = State::Closed;
        // getsockname still shows the port (inet_sport stays).
        i.closed_local = Some(i.local.addr(self.family));
        // Unhashing only fails for a port already given back.
        let _ = i.local.disconnect(&self.stack.tcp, self.family);
    }

    /// A connecting socket's SYN again (the listener's queue has room or
    /// the listener is gone).
    fn retry_connect(&self) {
        let mut i = self.inner.lock();
        let State::Connecting { dest, local } = i.state else { return };
        self.handshake(&mut i, dest, local);
        drop(i);
        self.queue.notify();
    }

    /// Takes a new connection (made by `make`) for accept, or holds it
    /// back under TCP_DEFER_ACCEPT; Full (`who` is kept to retry) when
    /// the queue is, Refused when this no longer listens.
    fn offer(&self, who: &Weak<TcpEndpoint>, make: impl FnOnce(ShareOpts) -> Arc<TcpEndpoint>) -> Offer {
        let mut i = self.inner.lock();
        let opts = i.local.opts;
        let State::Listening(l) = &mut i.state else { return Offer::Refused };
        if l.pending.len() > l.backlog {
            l.waiting.push(who.clone());
            return Offer::Full;
        }
        let conn = make(opts);
        let defer = self.defer_accept.load(Ordering::Relaxed);
        if defer > 0 {
            let poke: Arc<dyn crate::waiter::Notifier> = Arc::new(Poke(self.me.clone()));
            conn.queue.register(poke.clone());
            let until = Instant::now() + Duration::from_secs(u64::from(defer));
            l.deferred.push(Deferred { conn, until, poke });
            return Offer::Queued;
        }
        l.pending.push_back(conn);
        drop(i);
        self.queue.notify();
        Offer::Queued
    }

    /// accept(2): the next established connection. Taking one makes room
    /// for the connectors waiting on the full queue.
    pub fn accept(&self) -> Result<Arc<TcpEndpoint>, Error> {
        let mut i = self.inner.lock();
        let State::Listening(l) = &mut i.state else { return Err(Error::Invalid) };
        l.promote(Instant::now());
        let conn = l.pending.pop_front().ok_or(Error::WouldBlock)?;
        let waiting = std::mem::take(&mut l.waiting);
        drop(i);
        for w in waiting.iter().filter_map(Weak::upgrade) {
            w.retry_connect();
        }
        Ok(conn)
    }

    /// TCP_DEFER_ACCEPT in seconds (0: off), as getsockopt rounds it.
    pub fn set_defer_accept(&self, secs: u32) {
        self.defer_accept.store(secs, Ordering::Relaxed);
    }

    /// When the earliest connection TCP_DEFER_ACCEPT holds back becomes
    /// acceptable without data (the embedder wakes the listener's waiters
    /// then).
    pub fn defer_deadline(&self) -> Option<Instant> {
        match &self.inner.lock().state {
            State::Listening(l) => l.deferred.iter().map(|d| d.until).min(),
            _ => None,
        }
    }

    /// Sends what fits of `buf` (corked, what does not fill a segment
    /// waits).
    pub fn send(&self, buf: &[u8]) -> Result<usize, Error> {
        self.send_with(buf, false, self.corked.load(Ordering::Relaxed))
    }

    /// send(MSG_MORE): sends what fits of `buf` as if corked.
    pub fn send_more(&self, buf: &[u8]) -> Result<usize, Error> {
        self.send_with(buf, false, true)
    }

    /// send(MSG_OOB): sends what fits of `buf` and marks its last byte
    /// sent urgent (which pushes what was held back).
    pub fn send_urgent(&self, buf: &[u8]) -> Result<usize, Error> {
        self.send_with(buf, true, false)
    }

    /// Whether TCP_CORK is on (only then may a plain send leave bytes
    /// held back: one without it pushes them).
    pub fn corked(&self) -> bool {
        self.corked.load(Ordering::Relaxed)
    }

    /// TCP_CORK: on, sends hold back partial segments; off, what was held
    /// goes out (Linux's __tcp_sock_set_cork).
    pub fn set_cork(&self, on: bool) {
        self.corked.store(on, Ordering::Relaxed);
        if !on {
            self.push();
        }
    }

    /// Sends what was held back now (TCP_NODELAY set, TCP_CORK cleared,
    /// or the hold's time up).
    pub fn push(&self) {
        if let State::Connected(c) = &self.inner.lock().state {
            c.tx.push();
        }
    }

    /// When the bytes held back go out by themselves (the embedder calls
    /// [`TcpEndpoint::push_expired`] then), if any are held.
    pub fn held_until(&self) -> Option<Instant> {
        match &self.inner.lock().state {
            State::Connected(c) => c.tx.held_until(),
            _ => None,
        }
    }

    /// Sends the bytes held back whose time is up.
    pub fn push_expired(&self) {
        if self.held_until().is_some_and(|t| t <= Instant::now()) {
            self.push();
        }
    }

    fn send_with(&self, buf: &[u8], urgent: bool, hold: bool) -> Result<usize, Error> {
        let mut i = self.inner.lock();
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        if matches!(i.state, State::Connecting { .. }) {
            return Err(Error::WouldBlock);
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
        match tx.write(buf, urgent, hold)? {
            Sent::Bytes(n) => {
                self.stack.count(n);
                Ok(n)
            }
            // The first send to a closed peer goes out (what the send
            // buffer takes of it) and draws its RST; only the next fails.
            Sent::NoReader(n) => {
                if let State::Connected(c) = &mut self.inner.lock().state {
                    c.broken = true;
                }
                Ok(n)
            }
        }
    }

    /// Receives into `buf` (or with `peek` copies); 0 at EOF.
    pub fn recv(&self, buf: &mut [u8], peek: bool) -> Result<usize, Error> {
        let mut i = self.inner.lock();
        // A refused connect's error once (even to a peek), then EOF.
        if let Some(e) = i.error.take() {
            return Err(e);
        }
        let c = match &i.state {
            State::Connected(c) => c,
            State::Connecting { .. } => return Err(Error::WouldBlock),
            _ if i.done => return Ok(0),
            _ => return Err(Error::NotConnected),
        };
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
            State::Closed | State::Connecting { .. } => Err(Error::Invalid),
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
                if let State::Listening(l) = closed {
                    l.stop();
                }
                self.queue.notify();
            }
            return Ok(());
        }
        // Shutting a connecting socket aborts the connect (Linux's
        // tcp_disconnect from SYN_SENT): closed, ECONNRESET pending.
        if matches!(i.state, State::Connecting { .. }) {
            self.close_unconnected(&mut i);
            i.error = Some(Error::ConnReset);
            i.unreported = false;
            drop(i);
            self.queue.notify();
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
        let mut i = self.inner.lock();
        let err = if i.error.is_some() { ERR } else { 0 };
        let done = i.done;
        match &mut i.state {
            // A refused connect leaves the socket closed and shut both
            // ways (Linux's tcp_done).
            State::Closed if done => IN | RDNORM | RDHUP | OUT | WRNORM | HUP | err,
            State::Closed => OUT | HUP | err,
            // SYN_SENT: nothing yet.
            State::Connecting { .. } => 0,
            State::Listening(l) => {
                l.promote(Instant::now());
                if l.pending.is_empty() {
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
                // where the peer is done but we may still send), or reset;
                // ERR while the reset is unreported.
                let reset = c.rx.was_reset();
                if (read_shut && c.write_shut) || c.broken || reset {
                    ev |= HUP;
                }
                if reset {
                    ev |= OUT | WRNORM;
                }
                if c.broken || c.rx.reset_pending() {
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
        let mut i = self.inner.lock();
        match &i.state {
            // A reset not yet reported by a receive or send.
            State::Connected(c) if i.error.is_none() && c.rx.take_reset() => Some(Error::ConnReset),
            _ => i.error.take(),
        }
    }

    /// The address bound or connected from (getsockname); the family's
    /// unspecified address and port 0 when unbound.
    pub fn local_addr(&self) -> SocketAddr {
        let i = self.inner.lock();
        match &i.state {
            State::Connected(c) => c.local,
            _ => match i.closed_local {
                Some(a) if i.local.hold.is_none() => a,
                _ => i.local.addr(self.family),
            },
        }
    }

    /// getpeername(2).
    /// The address a connection came from, even once it is reset (what
    /// accept reports).
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        match &self.inner.lock().state {
            State::Connected(c) => Some(c.peer),
            _ => None,
        }
    }

    pub fn peer_addr(&self) -> Result<SocketAddr, Error> {
        match &self.inner.lock().state {
            // A reset connection is gone (Linux's TCP_CLOSE).
            State::Connected(c) if c.broken || c.rx.was_reset() => Err(Error::NotConnected),
            State::Connected(c) => Ok(c.peer),
            _ => Err(Error::NotConnected),
        }
    }

    /// Bytes or a FIN reached this connection (a deferred one is ready).
    fn has_arrivals(&self) -> bool {
        match &self.inner.lock().state {
            State::Connected(c) => c.rx.read_state().0,
            _ => true,
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

    /// SIOCINQ: the bytes to read before the urgent mark, or all of them
    /// (Linux's tcp_inq).
    pub fn inq(&self) -> usize {
        match &self.inner.lock().state {
            State::Connected(c) => c.rx.inq(),
            _ => 0,
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
        const SYN_SENT: u8 = 2;
        const FIN_WAIT2: u8 = 5;
        const TIME_WAIT: u8 = 6;
        const CLOSE: u8 = 7;
        const CLOSE_WAIT: u8 = 8;
        const LISTEN: u8 = 10;
        match &self.inner.lock().state {
            State::Closed => CLOSE,
            State::Connecting { .. } => SYN_SENT,
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
        Conn { rx, tx, local, peer, broken: false, read_shut: false, write_shut: false }
    }
}

impl Listen {
    /// Queues the deferred connections whose data (or FIN) arrived or
    /// whose time is up.
    fn promote(&mut self, now: Instant) {
        let mut k = 0;
        while k < self.deferred.len() {
            let d = &self.deferred[k];
            if d.until <= now || d.conn.has_arrivals() {
                let d = self.deferred.remove(k);
                d.conn.queue.unregister(&d.poke);
                self.pending.push_back(d.conn);
            } else {
                k += 1;
            }
        }
    }

    /// The listener closed: its connections are reset (Linux's
    /// inet_csk_listen_stop), its waiting connectors try again (and are
    /// refused unless another listener took the port).
    fn stop(self) {
        for conn in self.pending.into_iter().chain(self.deferred.into_iter().map(|d| d.conn)) {
            conn.set_reset_on_close(true);
        }
        for w in self.waiting.iter().filter_map(Weak::upgrade) {
            w.retry_connect();
        }
    }
}

impl Drop for TcpEndpoint {
    fn drop(&mut self) {
        let fin_timeout = *self.fin_timeout.get_mut();
        let i = self.inner.get_mut();
        // A listener lets its port go first: connectors it resets or
        // retries find nothing listening.
        if matches!(i.state, State::Listening(_)) {
            i.local.release(&self.stack.tcp);
            if let State::Listening(l) = std::mem::replace(&mut i.state, State::Closed) {
                l.stop();
            }
            return;
        }
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
        l.listen(-1).unwrap();
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
    fn a_full_queue_leaves_connectors_waiting_until_accept_makes_room() {
        let stack = Stack::new();
        let l = TcpEndpoint::new(&stack, Family::V4);
        l.bind(addr("127.0.0.1:7002")).unwrap();
        l.listen(1).unwrap();
        let first: Vec<_> = (0..2).map(|_| TcpEndpoint::new(&stack, Family::V4)).collect();
        for c in &first {
            assert_eq!(c.connect(addr("127.0.0.1:7002"), false), Ok(()));
        }
        // Past backlog + 1 the SYN waits: EINPROGRESS, then EALREADY.
        let blocking = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(blocking.connect(addr("127.0.0.1:7002"), false), Err(Error::InProgress));
        let nb = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::InProgress));
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::Already));
        assert_eq!(nb.events(), 0);
        assert_eq!(nb.send(b"x"), Err(Error::WouldBlock));
        assert!(l.accept().is_ok());
        assert_eq!(blocking.connect(addr("127.0.0.1:7002"), true), Ok(()));
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::Already));
        assert!(l.accept().is_ok());
        assert_ne!(nb.events() & events::OUT, 0);
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Ok(()));
        assert_eq!(nb.connect(addr("127.0.0.1:7002"), true), Err(Error::IsConnected));
    }

    #[test]
    fn a_listener_gone_resets_its_queue_and_refuses_who_waits() {
        let stack = Stack::new();
        let l = TcpEndpoint::new(&stack, Family::V4);
        l.bind(addr("127.0.0.1:7003")).unwrap();
        l.listen(0).unwrap();
        let queued = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(queued.connect(addr("127.0.0.1:7003"), false), Ok(()));
        let waiting = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(waiting.connect(addr("127.0.0.1:7003"), true), Err(Error::InProgress));
        drop(l);
        let mut buf = [0u8; 4];
        assert_ne!(queued.events() & (events::ERR | events::HUP), 0);
        assert_eq!(queued.recv(&mut buf, false), Err(Error::ConnReset));
        assert_eq!(queued.recv(&mut buf, false), Ok(0));
        assert_eq!(waiting.events() & (events::ERR | events::HUP), events::ERR | events::HUP);
        assert_eq!(waiting.recv(&mut buf, true), Err(Error::ConnRefused));
        assert_eq!(waiting.recv(&mut buf, true), Ok(0));
        assert_eq!(waiting.connect(addr("127.0.0.1:7003"), true), Err(Error::ConnAborted));
        assert_eq!(waiting.connect(addr("127.0.0.1:7003"), false), Err(Error::ConnRefused));
    }

    #[test]
    fn shutting_a_connecting_socket_aborts_it() {
        let stack = Stack::new();
        let l = TcpEndpoint::new(&stack, Family::V4);
        l.bind(addr("127.0.0.1:7004")).unwrap();
        l.listen(0).unwrap();
        let queued = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(queued.connect(addr("127.0.0.1:7004"), false), Ok(()));
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.connect(addr("127.0.0.1:7004"), true), Err(Error::InProgress));
        assert_eq!(c.shutdown(true, false), Ok(()));
        assert_eq!(c.events(), events::OUT | events::HUP | events::ERR);
        assert_eq!(c.take_error(), Some(Error::ConnReset));
        // No longer waiting: accept leaves it alone.
        assert!(l.accept().is_ok());
        assert_eq!(c.linux_state(), 7);
    }

    #[test]
    fn deferred_connections_wait_for_data() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7005");
        l.set_defer_accept(30);
        let c = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(c.connect(addr("127.0.0.1:7005"), false), Ok(()));
        assert_eq!(l.accept().err(), Some(Error::WouldBlock));
        assert_eq!(l.events(), 0);
        assert!(l.defer_deadline().is_some());
        assert_eq!(c.send(b"hi"), Ok(2));
        assert_ne!(l.events() & events::IN, 0);
        let s = l.accept().unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        assert!(l.defer_deadline().is_none());
    }

    #[test]
    fn a_socket_connected_to_itself_reads_what_it_sends() {
        let stack = Stack::new();
        let s = TcpEndpoint::new(&stack, Family::V4);
        s.bind(addr("127.0.0.1:7006")).unwrap();
        assert_eq!(s.connect(addr("127.0.0.1:7006"), false), Ok(()));
        assert_eq!(s.peer_addr(), Ok(addr("127.0.0.1:7006")));
        assert_eq!(s.send(b"me"), Ok(2));
        let mut buf = [0u8; 4];
        assert_eq!(s.recv(&mut buf, false), Ok(2));
        assert_eq!(s.shutdown(false, true), Ok(()));
        assert_eq!(s.recv(&mut buf, false), Ok(0));
    }

    #[test]
    fn a_shut_listener_refuses() {
        let stack = Stack::new();
        let l = listener(&stack, "127.0.0.1:7007");
        assert_eq!(l.shutdown(true, true), Ok(()));
        assert_eq!(l.accept().err(), Some(Error::Invalid));
        let late = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(late.connect(addr("127.0.0.1:7007"), false), Err(Error::ConnRefused));
        let nb = TcpEndpoint::new(&stack, Family::V4);
        assert_eq!(nb.connect(addr("127.0.0.1:7007"), true), Err(Error::InProgress));
        assert_eq!(nb.connect(addr("127.0.0.1:7007"), true), Err(Error::ConnRefused));
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
        assert_eq!(s.inq(), 3);
        let mut buf = [0u8; 16];
        assert_eq!(s.recv(&mut buf, true), Ok(3));
        assert_eq!(s.recv(&mut buf, false), Ok(3));
        assert_eq!(&buf[..3], b"abc");
        assert!(s.at_mark());
        assert_eq!(s.inq(), 0);
        assert_eq!(s.recv_urgent(true), Ok(b'X'));
        assert_eq!(s.recv_urgent(false), Ok(b'X'));
        assert_eq!(s.recv_urgent(false), Err(Error::Invalid));
        assert_eq!(s.events() & events::PRI, 0);
        assert!(s.at_mark());
        assert_eq!(s.inq(), 0);
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
