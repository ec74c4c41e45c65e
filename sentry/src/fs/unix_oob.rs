//! Urgent data (MSG_OOB) on one direction of a Unix stream connection, as
//! Linux 5.15 and later have it (CONFIG_AF_UNIX_OOB). The last byte of a
//! send(MSG_OOB) is written to the stream like any other and becomes the
//! direction's one urgent byte (Linux's `oob_skb`); a later one makes it
//! ordinary data. recv(MSG_OOB) takes the urgent byte out of band: its
//! byte stays in the buffer as a *taken* place that reads skip. A read
//! stops before the urgent byte, and before a taken place unless another
//! urgent byte waits; one that meets the urgent byte first drops it
//! (SO_OOBINLINE reads it as data instead), as Linux's manage_oob.

use super::pipe::PipeEnd;
use crate::abi::Errno;
use std::collections::VecDeque;

/// How many taken places a direction holds before urgent sends wait: in
/// Linux each is a buffer charged to the sender until a read passes it,
/// so a few hundred fill the default send buffer.
const MAX_TAKEN: usize = 256;

/// The urgent data of one direction, by stream position.
#[derive(Default)]
pub(super) struct Urgent {
    /// The urgent byte not yet taken: its position and value.
    pending: Option<(u64, u8)>,
    /// Runs [start, end) of taken places still in the buffer, in order.
    /// Adjacent ones are one run, as Linux unlinks a consumed urgent
    /// buffer that directly precedes the one just taken.
    taken: VecDeque<(u64, u64)>,
}

impl Urgent {
    /// May another urgent byte be sent now (else the sender waits)?
    pub(super) fn has_room(&self) -> bool {
        self.taken.len() < MAX_TAKEN
    }

    /// The byte just written at `at` is the urgent one now.
    pub(super) fn set(&mut self, at: u64, byte: u8) {
        self.pending = Some((at, byte));
    }

    pub(super) fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    /// recv(MSG_OOB): the urgent byte, taken unless `peek`; EINVAL when
    /// there is none or `inline` (SO_OOBINLINE) keeps it in the stream.
    pub(super) fn take(&mut self, peek: bool, inline: bool) -> Result<u8, Errno> {
        let (at, byte) = self.pending.filter(|_| !inline).ok_or(Errno::EINVAL)?;
        if !peek {
            self.pending = None;
            match self.taken.back_mut() {
                Some(run) if run.1 == at => run.1 = at + 1,
                _ => self.taken.push_back((at, at + 1)),
            }
        }
        Ok(byte)
    }

    /// SIOCATMARK for a reader at `head`: the urgent byte is next, or a
    /// taken run is, with no urgent byte waiting or the urgent byte
    /// right after it.
    pub(super) fn at_mark(&self, head: u64) -> bool {
        match (self.pending, self.taken.front()) {
            (Some((at, _)), _) if at == head => true,
            (pending, Some(&(start, end))) if start == head => pending.is_none_or(|(at, _)| at == end),
            _ => false,
        }
    }

    /// The bytes of taken places still buffered (FIONREAD leaves them out).
    pub(super) fn taken_bytes(&self) -> usize {
        self.taken.iter().map(|&(s, e)| usize::try_from(e - s).unwrap_or(0)).sum()
    }

    /// The first urgent byte or taken run after `pos`, if any.
    fn next_after(&self, pos: u64) -> u64 {
        let hole = self.taken.iter().map(|r| r.0).find(|&s| s > pos);
        let urgent = self.pending.map(|p| p.0).filter(|&at| at > pos);
        hole.into_iter().chain(urgent).min().unwrap_or(u64::MAX)
    }

    /// A stream receive into `buf` from `rx`, leaving the bytes queued
    /// when `peek`: the positions of the first byte copied and just past
    /// the last, and how many were (0 at EOF); EAGAIN when nothing is to
    /// be read now. Urgent
    /// bytes and taken places are passed as Linux's manage_oob does;
    /// `stop(first)` is where the receive must end at the latest for
    /// other reasons (descriptors, another writer's credentials). A
    /// receive that consumes only places passed still consumes them.
    pub(super) fn read(
        &mut self,
        rx: &PipeEnd,
        buf: &mut [u8],
        peek: bool,
        inline: bool,
        stop: impl Fn(u64) -> u64,
    ) -> Result<(u64, u64, usize), Errno> {
        let head = rx.positions().1;
        let mut pos = head;
        let mut first = None;
        let mut end = u64::MAX;
        let mut copied = 0;
        while copied < buf.len() {
            if let Some(i) = self.taken.iter().position(|r| r.0 == pos) {
                if copied > 0 && self.pending.is_none() {
                    break;
                }
                let (start, run_end) = self.taken[i];
                if !peek {
                    self.taken.remove(i);
                    discard(rx, run_end - start)?;
                }
                pos = run_end;
                continue;
            }
            if self.pending.is_some_and(|(at, _)| at == pos) {
                if copied > 0 {
                    break;
                }
                if !peek {
                    self.pending = None;
                }
                if !inline {
                    if !peek {
                        discard(rx, 1)?;
                    }
                    pos += 1;
                    continue;
                }
            }
            let from = *first.get_or_insert(pos);
            if end == u64::MAX {
                end = stop(from);
            }
            let run = self.next_after(pos).min(end).saturating_sub(pos);
            let want = usize::try_from(run).unwrap_or(usize::MAX).min(buf.len() - copied);
            if want == 0 {
                break;
            }
            let dst = &mut buf[copied..copied + want];
            let got = if peek {
                rx.peek_at(dst, usize::try_from(pos - head).unwrap_or(usize::MAX))
            } else {
                rx.try_read(dst, false)
            };
            match got {
                Ok(n) => {
                    copied += n;
                    pos += n as u64;
                    if n < want {
                        break;
                    }
                }
                Err(e) if copied == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok((first.unwrap_or(pos), pos, copied))
    }
}

/// Reads and drops the next `n` bytes of `rx`, which are buffered.
fn discard(rx: &PipeEnd, mut n: u64) -> Result<(), Errno> {
    let mut scratch = [0u8; 64];
    while n > 0 {
        let want = usize::try_from(n).unwrap_or(usize::MAX).min(scratch.len());
        let got = rx.try_read(&mut scratch[..want], false)?;
        if got == 0 {
            break;
        }
        n -= got as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::pipe::Pipe;
    use crate::vfs::{FileOps, TimeSpec};
    use std::sync::Arc;

    /// A direction: its read end, its write end and its urgent data.
    fn direction() -> (Arc<PipeEnd>, Arc<PipeEnd>, Urgent) {
        let p = Pipe::new(1, TimeSpec::default());
        (p.reader(), p.writer(), Urgent::default())
    }

    /// Sends `data`, its last byte urgent when `urgent`.
    fn send(tx: &PipeEnd, u: &mut Urgent, data: &[u8], urgent: bool) {
        let at = tx.positions().0;
        assert_eq!(tx.write(data, 0).unwrap(), data.len());
        if urgent {
            let last = data.len() - 1;
            u.set(at + last as u64, data[last]);
        }
    }

    fn read(rx: &PipeEnd, u: &mut Urgent, peek: bool, inline: bool) -> Result<Vec<u8>, Errno> {
        let mut buf = [0u8; 32];
        let (_, _, n) = u.read(rx, &mut buf, peek, inline, |_| u64::MAX)?;
        Ok(buf[..n].to_vec())
    }

    #[test]
    fn reads_stop_at_the_mark_and_drop_the_byte_they_meet_first() {
        let (rx, tx, mut u) = direction();
        send(&tx, &mut u, b"hello", true);
        send(&tx, &mut u, b"world", false);
        assert!(!u.at_mark(rx.positions().1));
        assert_eq!(read(&rx, &mut u, true, false).unwrap(), b"hell");
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"hell");
        assert!(u.at_mark(rx.positions().1));
        assert_eq!(read(&rx, &mut u, true, false).unwrap(), b"world", "a peek looks past it");
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"world");
        assert_eq!(u.take(false, false), Err(Errno::EINVAL), "dropped");
        assert_eq!(read(&rx, &mut u, false, false), Err(Errno::EAGAIN));
    }

    #[test]
    fn a_taken_byte_splits_reads_and_adjacent_ones_are_one_place() {
        let (rx, tx, mut u) = direction();
        send(&tx, &mut u, b"ab", true);
        assert_eq!(u.take(true, false), Ok(b'b'));
        assert_eq!(u.take(false, false), Ok(b'b'));
        send(&tx, &mut u, b"c", true);
        assert_eq!(u.take(false, false), Ok(b'c'));
        assert_eq!(u.taken.len(), 1, "one run");
        assert_eq!(u.taken_bytes(), 2);
        send(&tx, &mut u, b"de", false);
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"a");
        assert!(u.at_mark(rx.positions().1));
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"de");
        assert_eq!(u.taken_bytes(), 0);
    }

    #[test]
    fn a_later_urgent_byte_makes_the_earlier_one_data_and_skips_taken_places() {
        let (rx, tx, mut u) = direction();
        send(&tx, &mut u, b"hello", true);
        send(&tx, &mut u, b"wor", true);
        assert_eq!(u.take(false, false), Ok(b'r'));
        send(&tx, &mut u, b"ld", true);
        assert_eq!(read(&rx, &mut u, true, false).unwrap(), b"hellowol");
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"hellowol");
        assert_eq!(u.take(false, false), Ok(b'd'));
    }

    #[test]
    fn inline_urgent_data_is_read_as_data_after_the_mark() {
        let (rx, tx, mut u) = direction();
        send(&tx, &mut u, b"abc", true);
        send(&tx, &mut u, b"de", false);
        assert_eq!(u.take(false, true), Err(Errno::EINVAL));
        assert_eq!(read(&rx, &mut u, false, true).unwrap(), b"ab");
        assert_eq!(read(&rx, &mut u, true, true).unwrap(), b"cde");
        assert!(u.waiting(), "a peek leaves it urgent");
        assert_eq!(read(&rx, &mut u, false, true).unwrap(), b"cde");
        assert!(!u.waiting());
    }

    #[test]
    fn places_passed_are_consumed_even_when_nothing_is_read() {
        let (rx, tx, mut u) = direction();
        send(&tx, &mut u, b"x", true);
        assert_eq!(read(&rx, &mut u, false, false), Err(Errno::EAGAIN));
        assert_eq!(rx.buffered(), 0);
        drop(tx);
        assert_eq!(read(&rx, &mut u, false, false).unwrap(), b"", "EOF");
    }
}
