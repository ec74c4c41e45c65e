//! The message queues of message-oriented Unix sockets: a datagram
//! socket's receive queue (SOCK_DGRAM) and each direction of a
//! SOCK_SEQPACKET connection. Messages keep their boundaries, their
//! sender's name and the descriptors sent with them (SCM_RIGHTS); a
//! receive takes one whole message, discarding what does not fit (the
//! caller learns its full length for MSG_TRUNC).

use super::unix::{PeerCred, Rights, UnixName};
use crate::abi::poll::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::mm::accounting::{self, Charge};
use crate::waiter::{Queue, ALL};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The most a receive queue holds, in charged bytes. Linux bounds a Unix
/// receive queue only through its senders: each is charged for what it
/// sent until it is read (SO_SNDBUF), and a datagram socket takes at most
/// `MAX_DGRAM_QLEN` messages from senders it is not connected to. This
/// hard bound is the sentry's own, above what any sender's SO_SNDBUF
/// lets it queue, so that no guest can grow a queue without limit.
pub(crate) const QUEUE_BYTES: usize = 16 << 20;
/// net.unix.max_dgram_qlen: the messages past which a datagram socket's
/// queue is full to senders it is not connected to (Linux's
/// unix_recvq_full: more than this many queued).
pub(crate) const MAX_DGRAM_QLEN: usize = 10;
/// What each message is charged beyond its data, against its sender's
/// SO_SNDBUF and the queue: an approximation of Linux's skb truesize
/// overhead (the sk_buff and its skb_shared_info, about 768 bytes on a
/// 64-bit kernel). Linux's real truesize also rounds the data up to its
/// allocation (a 4 KiB message costs about 8 KiB there); the sentry does
/// not model the allocator, so somewhat more small messages fit.
pub(crate) const MESSAGE_OVERHEAD: usize = 768;

/// A message's (or a stream segment's) approximate truesize.
pub(crate) fn cost(len: usize) -> usize {
    len.saturating_add(MESSAGE_OVERHEAD)
}

/// One message.
pub(crate) struct Message {
    pub data: Vec<u8>,
    /// The sending socket's name, if it has one (recvfrom's address).
    pub from: Option<UnixName>,
    pub rights: Option<Rights>,
    /// The sender's credentials (SCM_CREDENTIALS).
    pub cred: PeerCred,
    /// The message's bytes on its sending socket's count (SIOCOUTQ).
    pub unread: Option<Unread>,
}

/// What a datagram socket sent that was not read yet: the data bytes
/// (SIOCOUTQ) and their charge (`cost`, Linux's sk_wmem_alloc) against its
/// SO_SNDBUF; `room` is told (POLLOUT) when a read or drop releases some.
#[derive(Default)]
pub(crate) struct Outstanding {
    pub data: AtomicUsize,
    pub wmem: AtomicUsize,
    pub room: Option<std::sync::Weak<Queue>>,
}

/// A message of `n` bytes counted on its sending socket's `Outstanding`
/// until it is read or dropped.
pub(crate) struct Unread(Arc<Outstanding>, usize);

impl Unread {
    pub(crate) fn new(counter: &Arc<Outstanding>, n: usize) -> Unread {
        counter.data.fetch_add(n, Ordering::Relaxed);
        counter.wmem.fetch_add(cost(n), Ordering::Relaxed);
        Unread(counter.clone(), n)
    }
}

impl Drop for Unread {
    fn drop(&mut self) {
        self.0.data.fetch_sub(self.1, Ordering::Relaxed);
        self.0.wmem.fetch_sub(cost(self.1), Ordering::Relaxed);
        if let Some(q) = self.0.room.as_ref().and_then(std::sync::Weak::upgrade) {
            q.notify(POLLOUT | POLLWRNORM);
        }
    }
}

/// What a receive got: `len` bytes copied of a message of `full` bytes.
pub(crate) struct Received {
    pub len: usize,
    pub full: usize,
    pub from: Option<UnixName>,
    pub rights: Option<Rights>,
    pub cred: Option<PeerCred>,
    /// Nothing came: the senders are gone (or the receiver shut down).
    pub ended: bool,
}

struct State {
    msgs: VecDeque<Message>,
    bytes: usize,
    /// `bytes`, charged to the sandbox's memory.
    charge: Charge,
    /// Nobody receives any more: sends fail.
    receiver_gone: bool,
    /// Nobody sends any more (a closed SEQPACKET peer, shutdown): once
    /// empty, receives return 0.
    senders_gone: bool,
    /// The receiver shut its receiving side (a datagram socket's
    /// SHUT_RD): sends fail with ESHUTDOWN.
    refusing: bool,
}

pub(crate) struct MsgQueue {
    state: Mutex<State>,
    /// The receiving socket's SO_PASSCRED: messages sent meanwhile carry
    /// their sender's credentials.
    passcred: AtomicBool,
    /// Receivers wait here for messages, senders for room.
    pub queue: Queue,
}

impl MsgQueue {
    pub(crate) fn new() -> Arc<MsgQueue> {
        let state = State {
            msgs: VecDeque::new(),
            bytes: 0,
            charge: Charge::new(accounting::sandbox()),
            receiver_gone: false,
            senders_gone: false,
            refusing: false,
        };
        Arc::new(MsgQueue { state: Mutex::new(state), passcred: AtomicBool::new(false), queue: Queue::default() })
    }

    /// The receiving socket's SO_PASSCRED.
    pub(crate) fn receiver_passcred(&self) -> bool {
        self.passcred.load(Ordering::Relaxed)
    }

    pub(crate) fn set_receiver_passcred(&self, on: bool) {
        self.passcred.store(on, Ordering::Relaxed);
    }

    /// Queues the message `msg` holds (taking it), or fails and leaves it
    /// there: EAGAIN without room or, with `qlen`, when more than `qlen`
    /// messages wait (the sender waits on `queue`), EPIPE when the
    /// receiver is gone (the caller turns it into what its socket type
    /// reports), ESHUTDOWN when it shut down receiving, EMSGSIZE when the
    /// message could never fit. Once queued, the message counts on
    /// `sender` (if given) until it is read or dropped.
    pub(crate) fn send(
        &self,
        msg: &mut Option<Message>,
        qlen: Option<usize>,
        sender: Option<&Arc<Outstanding>>,
    ) -> Result<usize, Errno> {
        let len = msg.as_ref().map_or(0, |m| m.data.len());
        if len > QUEUE_BYTES {
            return Err(Errno::EMSGSIZE);
        }
        {
            let mut s = self.state.lock();
            if s.receiver_gone {
                return Err(Errno::EPIPE);
            }
            if s.refusing {
                return Err(Errno::ESHUTDOWN);
            }
            if (s.bytes + cost(len) > QUEUE_BYTES && !s.msgs.is_empty()) || qlen.is_some_and(|q| s.msgs.len() > q) {
                return Err(Errno::EAGAIN);
            }
            // Past the sandbox's memory limit the message cannot be
            // allocated: ENOBUFS, as Linux's socket allocation fails.
            if !s.charge.grow(cost(len) as u64) {
                return Err(Errno::ENOBUFS);
            }
            s.bytes += cost(len);
            s.msgs.extend(msg.take().map(|m| Message { unread: sender.map(|c| Unread::new(c, len)), ..m }));
        }
        self.queue.notify(POLLIN | POLLRDNORM);
        Ok(len)
    }

    /// Takes (or with `peek` copies) the next message into `buf`; EAGAIN
    /// when there is none (the receiver waits on `queue`). Once the
    /// senders are gone and the queue is empty, a receive returns 0 bytes.
    pub(crate) fn recv(&self, buf: &mut [u8], peek: bool) -> Result<Received, Errno> {
        let (got, unread) = {
            let mut s = self.state.lock();
            let Some(m) = s.msgs.front() else {
                if s.senders_gone {
                    return Ok(Received { len: 0, full: 0, from: None, rights: None, cred: None, ended: true });
                }
                return Err(Errno::EAGAIN);
            };
            let len = buf.len().min(m.data.len());
            buf[..len].copy_from_slice(&m.data[..len]);
            let full = m.data.len();
            if peek {
                // Linux installs a peeked message's descriptors too.
                let rights = m.rights.as_ref().map(Rights::dup);
                return Ok(Received { len, full, from: m.from.clone(), rights, cred: Some(m.cred), ended: false });
            }
            let m = s.msgs.pop_front().ok_or(Errno::EAGAIN)?;
            s.bytes -= cost(full);
            s.charge.shrink(cost(full) as u64);
            (Received { len, full, from: m.from, rights: m.rights, cred: Some(m.cred), ended: false }, m.unread)
        };
        // Read: off its sender's count (which tells its pollers), outside
        // the queue's lock.
        drop(unread);
        self.queue.notify(POLLOUT | POLLWRNORM);
        Ok(got)
    }

    /// The receiving side closed: queued messages (and their descriptors)
    /// are dropped, senders fail from now on.
    pub(crate) fn close_receiver(&self) {
        let mut s = self.state.lock();
        s.receiver_gone = true;
        let dropped = std::mem::take(&mut s.msgs);
        s.bytes = 0;
        let held = s.charge.bytes();
        s.charge.shrink(held);
        drop(s);
        self.queue.notify(ALL);
        // Dropped descriptors may close sockets whose queues (this one
        // included) take their locks: never under ours.
        drop(dropped);
    }

    /// The sending side closed: receivers see the end once it is drained.
    pub(crate) fn close_senders(&self) {
        self.state.lock().senders_gone = true;
        self.queue.notify(ALL);
    }

    /// The receiver shut down receiving (a datagram socket's SHUT_RD):
    /// what is queued is still read, then receives end; sends fail.
    pub fn shut_receiving(&self) {
        {
            let mut s = self.state.lock();
            s.senders_gone = true;
            s.refusing = true;
        }
        self.queue.notify(ALL);
    }

    /// The bytes of data waiting, for FIONREAD: of every message when
    /// `all` (a seqpacket socket's), else of the next one (a datagram
    /// socket's).
    pub(crate) fn data_len(&self, all: bool) -> usize {
        let s = self.state.lock();
        if all {
            s.msgs.iter().map(|m| m.data.len()).sum()
        } else {
            s.msgs.front().map_or(0, |m| m.data.len())
        }
    }

    /// The messages waiting.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().msgs.len()
    }

    /// What the messages waiting are charged (their sender's sk_wmem_alloc
    /// when it has one sender, a seqpacket direction's).
    pub(crate) fn charged(&self) -> usize {
        self.state.lock().bytes
    }

    /// (readable, writable, receiver gone or refusing, senders gone).
    pub(crate) fn readiness(&self) -> (bool, bool, bool, bool) {
        let s = self.state.lock();
        (!s.msgs.is_empty(), s.bytes + cost(0) <= QUEUE_BYTES, s.receiver_gone || s.refusing, s.senders_gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(data: &[u8]) -> Message {
        Message {
            data: data.to_vec(),
            from: Some(UnixName::Abstract(b"me".to_vec())),
            rights: None,
            cred: (1, 0, 0),
            unread: None,
        }
    }

    #[test]
    fn messages_keep_their_boundaries() {
        let q = MsgQueue::new();
        q.send(&mut Some(msg(b"hello")), None, None).unwrap();
        q.send(&mut Some(msg(b"world!")), None, None).unwrap();
        let mut buf = [0u8; 3];
        let r = q.recv(&mut buf, true).unwrap();
        assert_eq!((r.len, r.full, &buf), (3, 5, b"hel"), "peek leaves it");
        let r = q.recv(&mut buf, false).unwrap();
        assert_eq!((r.len, r.full), (3, 5));
        assert_eq!(r.from, Some(UnixName::Abstract(b"me".to_vec())));
        let mut big = [0u8; 64];
        let r = q.recv(&mut big, false).unwrap();
        assert_eq!(&big[..r.len], b"world!", "the rest of the first is gone");
        assert_eq!(q.recv(&mut big, false).err(), Some(Errno::EAGAIN));
    }

    #[test]
    fn unread_bytes_stay_on_the_senders_count_until_read_or_dropped() {
        let counter = Arc::new(Outstanding::default());
        let q = MsgQueue::new();
        for data in [&b"hello"[..], b"hi"] {
            q.send(&mut Some(msg(data)), None, Some(&counter)).unwrap();
        }
        assert_eq!(counter.data.load(Ordering::Relaxed), 7);
        let mut buf = [0u8; 8];
        q.recv(&mut buf, true).unwrap();
        assert_eq!(counter.data.load(Ordering::Relaxed), 7, "a peek leaves it");
        q.recv(&mut buf, false).unwrap();
        assert_eq!(counter.data.load(Ordering::Relaxed), 2);
        q.close_receiver();
        assert_eq!(counter.data.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn full_queues_and_closed_ends() {
        let q = MsgQueue::new();
        assert_eq!(q.send(&mut Some(msg(&vec![0; QUEUE_BYTES + 1])), None, None).err(), Some(Errno::EMSGSIZE));
        let mut empties = 0;
        while q.send(&mut Some(msg(b"")), None, None).is_ok() {
            empties += 1;
        }
        assert_eq!(empties, QUEUE_BYTES / MESSAGE_OVERHEAD, "empty messages are bounded too");
        let mut buf = [0u8; 1];
        while q.recv(&mut buf, false).is_ok() {}
        q.send(&mut Some(msg(&vec![0; QUEUE_BYTES])), None, None).unwrap();
        assert_eq!(q.send(&mut Some(msg(b"x")), None, None).err(), Some(Errno::EAGAIN));
        assert_eq!(q.readiness(), (true, false, false, false));
        let q2 = MsgQueue::new();
        for _ in 0..=MAX_DGRAM_QLEN {
            q2.send(&mut Some(msg(b"x")), Some(MAX_DGRAM_QLEN), None).unwrap();
        }
        assert_eq!(q2.send(&mut Some(msg(b"x")), Some(MAX_DGRAM_QLEN), None).err(), Some(Errno::EAGAIN), "past qlen");
        assert!(q2.send(&mut Some(msg(b"x")), None, None).is_ok(), "a connected peer is not held to it");
        q.close_receiver();
        assert_eq!(q.send(&mut Some(msg(b"x")), None, None).err(), Some(Errno::EPIPE));
        let q = MsgQueue::new();
        q.send(&mut Some(msg(b"last")), None, None).unwrap();
        q.close_senders();
        let mut buf = [0u8; 8];
        assert_eq!(q.recv(&mut buf, false).unwrap().len, 4);
        assert_eq!(q.recv(&mut buf, false).unwrap().full, 0, "then the end");
    }
}
