//! One direction of a TCP connection inside the sandbox: a bounded byte
//! queue between a writer and a reader endpoint, with the FIN and RST a
//! close sends.

use crate::waiter::Queue;
use crate::{Error, Stack};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// How many bytes a direction holds before the writer waits (roughly
/// Linux's default send plus receive buffer).
pub(crate) const CAPACITY: usize = 512 * 1024;

#[derive(Default)]
struct State {
    data: VecDeque<u8>,
    /// The writer sent FIN: the reader sees EOF after the data.
    fin: bool,
    /// The writer reset the connection: the reader's next receive fails
    /// with ECONNRESET once.
    reset: bool,
    /// The reader is gone: sends reach nobody.
    reader_gone: bool,
    /// The writer reset the connection, reported or not: the connection
    /// is gone (CLOSE).
    was_reset: bool,
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
    /// The reader has closed its end.
    NoReader,
}

impl Direction {
    pub fn new(stack: &Arc<Stack>, writer: Arc<Queue>, reader: Arc<Queue>) -> Arc<Direction> {
        Arc::new(Direction { stack: stack.clone(), state: Mutex::default(), reader, writer })
    }

    /// Queues what fits of `buf`; WouldBlock when nothing does.
    pub fn write(&self, buf: &[u8]) -> Result<Sent, Error> {
        let mut s = self.state.lock();
        if s.reader_gone {
            return Ok(Sent::NoReader);
        }
        if s.fin {
            return Err(Error::BrokenPipe);
        }
        let n = buf.len().min(CAPACITY - s.data.len());
        // Past the sandbox's memory the bytes wait, as under Linux's TCP
        // memory pressure.
        if n == 0 && !buf.is_empty() || !self.stack.charge(n) {
            return Err(Error::WouldBlock);
        }
        s.data.extend(&buf[..n]);
        drop(s);
        if n > 0 {
            self.reader.notify();
        }
        Ok(Sent::Bytes(n))
    }

    /// Takes (or with `peek` copies) queued bytes; 0 at EOF, WouldBlock
    /// when there is nothing yet.
    pub fn read(&self, buf: &mut [u8], peek: bool) -> Result<usize, Error> {
        let mut s = self.state.lock();
        if s.data.is_empty() {
            if s.reset {
                s.reset = false;
                return Err(Error::ConnReset);
            }
            return if s.fin || buf.is_empty() { Ok(0) } else { Err(Error::WouldBlock) };
        }
        let n = buf.len().min(s.data.len());
        let (a, b) = s.data.as_slices();
        let from_a = n.min(a.len());
        buf[..from_a].copy_from_slice(&a[..from_a]);
        buf[from_a..n].copy_from_slice(&b[..n - from_a]);
        if peek {
            return Ok(n);
        }
        s.data.drain(..n);
        self.stack.uncharge(n);
        drop(s);
        self.writer.notify();
        Ok(n)
    }

    /// The writer is done sending (shutdown or close): FIN.
    pub fn finish(&self) {
        self.state.lock().fin = true;
        self.reader.notify();
    }

    /// The writer closed with data unread on its own side: RST.
    pub fn reset(&self) {
        let mut s = self.state.lock();
        s.fin = true;
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
        drop(s);
        self.writer.notify();
        unread
    }

    /// (readable or at EOF, the writer finished, bytes queued).
    pub fn read_state(&self) -> (bool, bool, usize) {
        let s = self.state.lock();
        (!s.data.is_empty() || s.fin, s.fin, s.data.len())
    }

    /// (room to write, the reader is gone, bytes queued).
    pub fn write_state(&self) -> (bool, bool, usize) {
        let s = self.state.lock();
        (s.data.len() < CAPACITY && !s.fin, s.reader_gone, s.data.len())
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

    fn dir() -> Arc<Direction> {
        Direction::new(&Stack::new(), Arc::default(), Arc::default())
    }

    #[test]
    fn bytes_then_eof() {
        let d = dir();
        assert!(matches!(d.write(b"hello"), Ok(Sent::Bytes(5))));
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
        assert!(matches!(d.write(&big), Ok(Sent::Bytes(CAPACITY))));
        assert_eq!(d.write(b"x").err(), Some(Error::WouldBlock));
        let mut buf = [0u8; 10];
        assert_eq!(d.read(&mut buf, false), Ok(10));
        assert!(matches!(d.write(&big), Ok(Sent::Bytes(10))));
    }

    #[test]
    fn reset_is_reported_once_after_the_data() {
        let d = dir();
        assert!(d.write(b"ab").is_ok());
        d.reset();
        let mut buf = [0u8; 4];
        assert_eq!(d.read(&mut buf, false), Ok(2));
        assert_eq!(d.read(&mut buf, false), Err(Error::ConnReset));
        assert_eq!(d.read(&mut buf, false), Ok(0));
        assert!(!d.close_reader());
        assert!(matches!(d.write(b"x"), Ok(Sent::NoReader)));
    }
}
