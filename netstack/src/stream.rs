//! One direction of a TCP connection inside the sandbox: a bounded byte
//! queue between a writer and a reader endpoint, with the FIN and RST a
//! close sends, the urgent byte (MSG_OOB) the writer marks, and the bytes
//! a corked writer (TCP_CORK, MSG_MORE) holds back.

use crate::waiter::Queue;
use crate::{Error, Stack};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The segment size over loopback: its 65536-byte MTU less the IPv4 and
/// TCP headers with timestamps. A corked writer sends full segments.
pub const LOOPBACK_MSS: usize = 65_483;

/// How long a corked writer holds a partial segment back before it goes
/// anyway (Linux's ceiling on TCP_CORK: TCP_RTO_MIN, 200 ms).
pub const CORK_CEILING: Duration = Duration::from_millis(200);

/// A direction holds as many bytes as its writer's send buffer and its
/// reader's receive buffer together (SO_SNDBUF plus SO_RCVBUF, as Linux
/// fills both on loopback) before the writer waits.
#[derive(Clone, Copy, Default)]
pub(crate) struct Limits {
    pub send: usize,
    pub recv: usize,
}

impl Limits {
    fn capacity(self) -> usize {
        self.send.saturating_add(self.recv)
    }
}

#[derive(Default)]
struct State {
    /// The buffers bounding the queue (set at creation).
    limits: Limits,
    data: VecDeque<u8>,
    /// The writer sent FIN: the reader sees EOF after the data.
    fin: bool,
    /// When the writer first finished (FIN or RST).
    fin_at: Option<std::time::Instant>,
    /// The writer reset the connection: the reader's next receive fails
    /// with ECONNRESET once.
    reset: bool,
    /// The reader is gone: sends reach nobody.
    reader_gone: bool,
    /// The writer reset the connection, reported or not: the connection
    /// is gone (CLOSE).
    was_reset: bool,
    /// Bytes the reader has consumed (or skipped): the stream offset of
    /// `data`'s first byte.
    consumed: u64,
    /// The urgent mark, until the reader's reads pass it.
    urgent: Option<Urgent>,
    /// The reader's SO_OOBINLINE: the urgent byte stays in the stream.
    inline: bool,
    /// The last bytes of `data` the writer holds back (less than a
    /// segment, corked), and since when: the reader does not see them.
    held: usize,
    held_since: Option<Instant>,
}

impl State {
    /// The held bytes, none once their time is up.
    fn held_now(&self) -> usize {
        match self.held_since {
            Some(t) if t.elapsed() < CORK_CEILING => self.held,
            _ => 0,
        }
    }

    /// The bytes the reader may see.
    fn visible(&self) -> usize {
        self.data.len() - self.held_now()
    }

    /// Sends what the writer held (its segment goes out).
    fn push(&mut self) -> bool {
        self.held_since = None;
        std::mem::take(&mut self.held) > 0
    }
}

/// TCP's urgent pointer as Linux keeps it (tp->urg_seq, tp->urg_data):
/// the urgent byte stays queued among the data; a reader without
/// SO_OOBINLINE skips it and takes it with recv(MSG_OOB) instead.
#[derive(Clone, Copy)]
struct Urgent {
    /// The urgent byte's stream offset.
    at: u64,
    byte: u8,
    /// recv(MSG_OOB) took it (TCP_URG_READ).
    taken: bool,
}

/// Where a read may start and end in `data`: after the urgent byte it
/// skips (at the mark, not inline) and before the mark (reads stop there).
fn readable_span(s: &State) -> (usize, usize) {
    let visible = s.visible();
    let Some(u) = s.urgent else { return (0, visible) };
    match usize::try_from(u.at - s.consumed).unwrap_or(usize::MAX) {
        0 if !s.inline => (1.min(visible), visible),
        0 => (0, visible),
        off => (0, off.min(visible)),
    }
}

/// How many more bytes the direction takes.
fn room(s: &State) -> usize {
    s.limits.capacity().saturating_sub(s.data.len())
}

/// A byte queue from one endpoint to the other.
pub(crate) struct Direction {
    /// What the queued bytes are charged to.
    stack: Arc<Stack>,
    state: Mutex<State>,
    reader: Arc<Queue>,
    writer: Arc<Queue>,
}

/// What a send found.
pub(crate) enum Sent {
    Bytes(usize),
    /// The reader has closed its end: what the sender's buffer takes of
    /// the bytes goes out to draw the peer's reset.
    NoReader(usize),
}

impl Direction {
    pub fn new(stack: &Arc<Stack>, writer: Arc<Queue>, reader: Arc<Queue>, limits: Limits) -> Arc<Direction> {
        let state = Mutex::new(State { limits, ..State::default() });
        Arc::new(Direction { stack: stack.clone(), state, reader, writer })
    }

    /// Changes the writer's send buffer (`send`) or the reader's receive
    /// buffer; a writer waiting for room is woken to try again.
    pub fn set_limit(&self, send: bool, bytes: usize) {
        let mut s = self.state.lock();
        *(if send { &mut s.limits.send } else { &mut s.limits.recv }) = bytes;
        drop(s);
        self.writer.notify();
    }

    /// Queues what fits of `buf`; WouldBlock when nothing does. With
    /// `urgent` (MSG_OOB) the last byte queued becomes the urgent byte,
    /// replacing an earlier mark (Linux keeps only the latest). With
    /// `hold` (corked) what does not fill a segment waits, for more bytes,
    /// a push or [`CORK_CEILING`]; urgent data and a send without `hold`
    /// push everything.
    pub fn write(&self, buf: &[u8], urgent: bool, hold: bool) -> Result<Sent, Error> {
        let mut s = self.state.lock();
        if s.reader_gone {
            return Ok(Sent::NoReader(buf.len().min(s.limits.send)));
        }
        if s.fin {
            return Err(Error::BrokenPipe);
        }
        let n = buf.len().min(room(&s));
        // Past the sandbox's memory the bytes wait, as under Linux's TCP
        // memory pressure.
        if n == 0 && !buf.is_empty() || !self.stack.charge(n) {
            return Err(Error::WouldBlock);
        }
        let urgent = urgent && n > 0;
        if urgent {
            // A reader standing at the old mark would otherwise read the
            // old urgent byte as data: it is dropped (tcp_check_urg).
            if s.urgent.is_some_and(|u| u.at == s.consumed) && !s.inline && !s.data.is_empty() {
                s.data.pop_front();
                s.consumed += 1;
                self.stack.uncharge(1);
            }
        }
        s.data.extend(&buf[..n]);
        if urgent {
            let at = s.consumed + s.data.len() as u64 - 1;
            s.urgent = Some(Urgent { at, byte: buf[n - 1], taken: false });
        }
        let pushed = if hold && !urgent {
            let held = s.held_now() + n;
            s.held = held % LOOPBACK_MSS;
            // The first byte held starts the wait; a full segment sent
            // restarts it for what is left.
            s.held_since = match s.held {
                0 => None,
                _ if held >= LOOPBACK_MSS => Some(Instant::now()),
                _ => s.held_since.filter(|_| held > n).or_else(|| Some(Instant::now())),
            };
            held >= LOOPBACK_MSS
        } else {
            s.push() || n > 0
        };
        drop(s);
        if urgent {
            self.reader.notify_urgent();
        }
        if pushed {
            self.reader.notify();
        }
        Ok(Sent::Bytes(n))
    }

    /// Takes (or with `peek` copies) queued bytes; 0 at EOF, WouldBlock
    /// when there is nothing yet. A read stops before the urgent mark;
    /// one starting at it skips the urgent byte unless it is inline, as
    /// Linux's tcp_recvmsg does.
    pub fn read(&self, buf: &mut [u8], peek: bool) -> Result<usize, Error> {
        let mut s = self.state.lock();
        if buf.is_empty() && !s.data.is_empty() {
            return Ok(0);
        }
        let (start, end) = readable_span(&s);
        let n = buf.len().min(end - start);
        if n > 0 {
            for (d, b) in buf[..n].iter_mut().zip(s.data.range(start..start + n)) {
                *d = *b;
            }
        }
        if peek {
            return if n > 0 { Ok(n) } else { Self::nothing(&mut s, buf.is_empty()) };
        }
        let taken = start + n;
        s.data.drain(..taken);
        s.consumed += taken as u64;
        self.stack.uncharge(taken);
        if s.urgent.is_some_and(|u| u.at < s.consumed) {
            s.urgent = None;
        }
        let r = if n == 0 { Self::nothing(&mut s, buf.is_empty()) } else { Ok(n) };
        drop(s);
        if taken > 0 {
            self.writer.notify();
        }
        r
    }

    /// What a read finds when no byte is there for it: the reset once,
    /// EOF, or WouldBlock.
    fn nothing(s: &mut State, empty_buf: bool) -> Result<usize, Error> {
        if s.data.is_empty() && s.reset {
            s.reset = false;
            return Err(Error::ConnReset);
        }
        if s.data.is_empty() && s.fin || empty_buf {
            Ok(0)
        } else {
            Err(Error::WouldBlock)
        }
    }

    /// recv(MSG_OOB): the urgent byte not yet taken (with `peek` left
    /// there); EINVAL when there is none or it is inline, as Linux's
    /// tcp_recv_urg, which never waits.
    pub fn read_urgent(&self, peek: bool) -> Result<u8, Error> {
        let mut s = self.state.lock();
        let inline = s.inline;
        match &mut s.urgent {
            Some(u) if !u.taken && !inline => {
                u.taken |= !peek;
                Ok(u.byte)
            }
            _ => Err(Error::Invalid),
        }
    }

    /// SIOCATMARK: the next byte to read is the urgent mark.
    pub fn at_mark(&self) -> bool {
        let s = self.state.lock();
        s.urgent.is_some_and(|u| u.at == s.consumed)
    }

    /// An urgent byte waits to be taken (POLLPRI).
    pub fn urgent_pending(&self) -> bool {
        self.state.lock().urgent.is_some_and(|u| !u.taken)
    }

    /// The reader's SO_OOBINLINE (`quiet`: on a fresh connection, with
    /// nobody to tell).
    pub fn set_inline(&self, on: bool, quiet: bool) {
        self.state.lock().inline = on;
        if !quiet {
            self.reader.notify();
        }
    }

    /// Sends the bytes the writer held back (uncorked, TCP_NODELAY set,
    /// or their time is up).
    pub fn push(&self) {
        if self.state.lock().push() {
            self.reader.notify();
        }
    }

    /// When the bytes held back go out by themselves, if any are.
    pub fn held_until(&self) -> Option<Instant> {
        let s = self.state.lock();
        s.held_since.filter(|_| s.held > 0).map(|t| t + CORK_CEILING)
    }

    /// The writer is done sending (shutdown or close): FIN, after what it
    /// held back.
    pub fn finish(&self) {
        let mut s = self.state.lock();
        s.push();
        s.fin = true;
        s.fin_at.get_or_insert_with(std::time::Instant::now);
        drop(s);
        self.reader.notify();
    }

    /// When the writer finished (None while it may still send).
    pub fn fin_at(&self) -> Option<std::time::Instant> {
        self.state.lock().fin_at
    }

    /// The writer closed with data unread on its own side: RST.
    pub fn reset(&self) {
        let mut s = self.state.lock();
        s.push();
        s.fin = true;
        s.fin_at.get_or_insert_with(std::time::Instant::now);
        s.reset = true;
        s.was_reset = true;
        drop(s);
        self.reader.notify();
    }

    /// Takes the reset not yet reported (the reader's end then reports
    /// ECONNRESET from a send instead of a receive, as Linux's sk_err).
    pub fn take_reset(&self) -> bool {
        std::mem::take(&mut self.state.lock().reset)
    }

    /// A reset is not yet reported (POLLERR).
    pub fn reset_pending(&self) -> bool {
        self.state.lock().reset
    }

    /// Whether the writer reset the connection.
    pub fn was_reset(&self) -> bool {
        self.state.lock().was_reset
    }

    /// The reader closed; returns whether it left bytes unread.
    pub fn close_reader(&self) -> bool {
        let mut s = self.state.lock();
        s.reader_gone = true;
        let unread = !s.data.is_empty();
        self.stack.uncharge(s.data.len());
        s.data.clear();
        s.push();
        s.urgent = None;
        drop(s);
        self.writer.notify();
        unread
    }

    /// (readable or at EOF, the writer finished, bytes queued). An urgent
    /// byte a read would skip does not make the stream readable.
    pub fn read_state(&self) -> (bool, bool, usize) {
        let s = self.state.lock();
        let (start, end) = readable_span(&s);
        (end > start || s.fin, s.fin, s.visible())
    }

    /// The bytes SIOCINQ reports: those before an urgent byte not read
    /// past (none at the mark, even once taken), unless it is inline, as
    /// Linux's tcp_inq.
    pub fn inq(&self) -> usize {
        let s = self.state.lock();
        match s.urgent {
            Some(u) if !s.inline && u.at >= s.consumed => usize::try_from(u.at - s.consumed).unwrap_or(usize::MAX),
            _ => s.visible(),
        }
    }

    /// (room to write, the reader is gone, bytes queued).
    pub fn write_state(&self) -> (bool, bool, usize) {
        let s = self.state.lock();
        (room(&s) > 0 && !s.fin, s.reader_gone, s.data.len())
    }
}

impl Drop for Direction {
    fn drop(&mut self) {
        self.stack.uncharge(self.state.get_mut().data.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits { send: 4096, recv: 1024 };
    const CAPACITY: usize = 5120;

    fn dir() -> Arc<Direction> {
        Direction::new(&Stack::new(), Arc::default(), Arc::default(), LIMITS)
    }

    #[test]
    fn bytes_then_eof() {
        let d = dir();
        assert!(matches!(d.write(b"hello", false, false), Ok(Sent::Bytes(5))));
        let mut buf = [0u8; 3];
        assert_eq!(d.read(&mut buf, true), Ok(3));
        assert_eq!(d.read(&mut buf, false), Ok(3));
        assert_eq!(&buf, b"hel");
        d.finish();
        assert_eq!(d.read(&mut buf, false), Ok(2));
        assert_eq!(d.read(&mut buf, false), Ok(0));
    }

    #[test]
    fn a_full_direction_blocks_the_writer() {
        let d = dir();
        let big = vec![7u8; CAPACITY + 10];
        assert!(matches!(d.write(&big, false, false), Ok(Sent::Bytes(CAPACITY))));
        assert_eq!(d.write(b"x", false, false).err(), Some(Error::WouldBlock));
        let mut buf = [0u8; 10];
        assert_eq!(d.read(&mut buf, false), Ok(10));
        assert!(matches!(d.write(&big, false, false), Ok(Sent::Bytes(10))));
    }

    #[test]
    fn a_larger_send_buffer_makes_room() {
        let d = dir();
        let big = vec![7u8; 3 * CAPACITY];
        assert!(matches!(d.write(&big, false, false), Ok(Sent::Bytes(CAPACITY))));
        d.set_limit(true, 2 * LIMITS.send);
        assert!(matches!(d.write(&big, false, false), Ok(Sent::Bytes(n)) if n == LIMITS.send));
        // Shrunk below what is queued: no room, nothing lost.
        d.set_limit(true, 0);
        assert_eq!(d.write(b"x", false, false).err(), Some(Error::WouldBlock));
        assert_eq!(d.read_state().2, CAPACITY + LIMITS.send);
    }

    #[test]
    fn a_corked_writer_holds_partial_segments_until_pushed() {
        let d = dir();
        let mut buf = [0u8; 8];
        assert!(matches!(d.write(b"abc", false, true), Ok(Sent::Bytes(3))));
        assert_eq!(d.read(&mut buf, false), Err(Error::WouldBlock));
        assert_eq!(d.read_state(), (false, false, 0));
        assert!(d.held_until().is_some());
        // A send without the hold pushes what was held with it.
        assert!(matches!(d.write(b"d", false, false), Ok(Sent::Bytes(1))));
        assert_eq!(d.held_until(), None);
        assert_eq!(d.read(&mut buf, false), Ok(4));
        assert!(matches!(d.write(b"ef", false, true), Ok(Sent::Bytes(2))));
        d.push();
        assert_eq!(d.read(&mut buf, false), Ok(2));
        // The FIN goes after the held bytes.
        assert!(matches!(d.write(b"gh", false, true), Ok(Sent::Bytes(2))));
        d.finish();
        assert_eq!(d.read(&mut buf, false), Ok(2));
        assert_eq!(d.read(&mut buf, false), Ok(0));
    }

    #[test]
    fn a_corked_writer_sends_full_segments() {
        let limits = Limits { send: 4 * LOOPBACK_MSS, recv: 0 };
        let d = Direction::new(&Stack::new(), Arc::default(), Arc::default(), limits);
        let big = vec![1u8; LOOPBACK_MSS + 10];
        assert!(matches!(d.write(&big, false, true), Ok(Sent::Bytes(n)) if n == big.len()));
        assert_eq!(d.read_state().2, LOOPBACK_MSS);
        assert!(matches!(d.write(&big[..LOOPBACK_MSS - 10], false, true), Ok(Sent::Bytes(_))));
        assert_eq!(d.read_state().2, 2 * LOOPBACK_MSS);
        assert_eq!(d.held_until(), None);
        // Urgent data pushes.
        assert!(matches!(d.write(b"x", false, true), Ok(Sent::Bytes(1))));
        assert!(matches!(d.write(b"!", true, true), Ok(Sent::Bytes(1))));
        assert_eq!(d.held_until(), None);
    }

    #[test]
    fn reset_is_reported_once_after_the_data() {
        let d = dir();
        assert!(d.write(b"ab", false, false).is_ok());
        d.reset();
        let mut buf = [0u8; 4];
        assert_eq!(d.read(&mut buf, false), Ok(2));
        assert_eq!(d.read(&mut buf, false), Err(Error::ConnReset));
        assert_eq!(d.read(&mut buf, false), Ok(0));
        assert!(!d.close_reader());
        assert!(matches!(d.write(b"x", false, false), Ok(Sent::NoReader(1))));
    }
}
