//! Unix domain sockets. A stream connection is two ends, each a pair of
//! pipe buffers (one per direction), made by socketpair(2) or by connect(2)
//! to a socket listening on a path or an abstract name (the kernel's
//! registry maps names to sockets); descriptors sent with SCM_RIGHTS ride
//! on a stream position of their direction. A SOCK_SEQPACKET connection
//! carries packets instead (unix_msg.rs), as does every datagram socket's
//! receive queue; their descriptors ride on the message.

use super::pipe::{Pipe, PipeEnd};
use super::unix_msg::{cost, Message, MsgQueue, Outstanding, MAX_DGRAM_QLEN};
use super::unix_oob::Urgent;
use crate::abi::poll::{POLLIN, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::vfs::{FileDescription, FileOps, IoctlContext, TimeSpec, UrgentSignal};
use crate::waiter::{Entry, Forward, Queue, ALL};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

/// A buffer's notifications that data arrived (to read) or room was made
/// (to write).
const DATA: u32 = POLLIN | POLLRDNORM;
const ROOM: u32 = POLLOUT | POLLWRNORM;

/// The sandbox-wide count of descriptors in flight in Unix sockets.
#[derive(Default)]
pub(crate) struct Inflight(AtomicUsize);

/// Descriptors sent with SCM_RIGHTS, counted in the sandbox-wide in-flight
/// total until they are received or dropped. The total is what bounds
/// sockets that are sent through themselves and so are never freed.
pub(crate) struct Rights {
    files: Vec<Arc<FileDescription>>,
    inflight: Arc<Inflight>,
}

impl Rights {
    /// Takes `files` in flight, or ETOOMANYREFS when that would put more
    /// than `limit` descriptors in flight.
    pub(crate) fn new(
        files: Vec<Arc<FileDescription>>,
        inflight: &Arc<Inflight>,
        limit: usize,
    ) -> Result<Rights, Errno> {
        let n = files.len();
        inflight
            .0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| cur.checked_add(n).filter(|&t| t <= limit))
            .map_err(|_| Errno::ETOOMANYREFS)?;
        Ok(Rights { files, inflight: inflight.clone() })
    }

    /// The descriptions, now out of flight.
    pub(crate) fn take(mut self) -> Vec<Arc<FileDescription>> {
        let files = std::mem::take(&mut self.files);
        self.inflight.0.fetch_sub(files.len(), Ordering::AcqRel);
        files
    }
}

impl Drop for Rights {
    fn drop(&mut self) {
        self.inflight.0.fetch_sub(self.files.len(), Ordering::AcqRel);
    }
}

impl Rights {
    /// The same descriptions again, in flight too (what MSG_PEEK installs
    /// while the message keeps its own).
    pub fn dup(&self) -> Rights {
        self.inflight.0.fetch_add(self.files.len(), Ordering::AcqRel);
        Rights { files: self.files.clone(), inflight: self.inflight.clone() }
    }
}

/// A mark on a stream direction: where one send began (`at`) and ended
/// (`end`), the credentials it was sent with (explicit or the writer's
/// own) and its descriptors. A send is marked when it carries descriptors
/// or its credentials differ from the previous send's.
struct Mark {
    at: u64,
    end: u64,
    rights: Option<Rights>,
    cred: PeerCred,
}

/// The marks of one direction, and the credentials in effect for its
/// bytes: of the last send marked (the writer's side) and of the bytes at
/// the read position (the reader's); its urgent data; and the F_SETOWN
/// owner of the socket that reads it, told of urgent data with SIGURG.
#[derive(Default)]
struct MarkQueue {
    marks: VecDeque<Mark>,
    written: Option<PeerCred>,
    reading: Option<PeerCred>,
    /// The reading socket's SO_PASSCRED.
    reader_passcred: bool,
    /// The reading socket shut its reading side: what is queued is still
    /// read, then EOF; writes fail with EPIPE.
    reader_shut: bool,
    urgent: Urgent,
    reader_owner: Option<OwnerSlot>,
    /// Where each segment the writer sent ends (stream positions), until
    /// the reader is past it: what the writer is charged (`wmem`).
    segments: VecDeque<u64>,
    /// The writer closed with data of its own unread (Linux sets the
    /// reader's sk_err): the reader's next receive that finds nothing
    /// fails with ECONNRESET, once.
    reset: bool,
}

/// What a socket's urgent data sends its F_SETOWN owner (SIGURG, and the
/// F_SETSIG signal with POLL_PRI under O_ASYNC), shared with the
/// directions it reads.
type OwnerSlot = Arc<Mutex<Option<UrgentSignal>>>;

impl MarkQueue {
    /// What the writer of this direction is charged against its
    /// SO_SNDBUF (Linux's sk_wmem_alloc): the bytes not read yet and, per
    /// segment not wholly read, `cost`'s overhead (an skb's truesize is
    /// released only once it is wholly read). `consumed` and `produced`
    /// are the direction's positions.
    fn wmem(&mut self, (produced, consumed): (u64, u64)) -> usize {
        while self.segments.front().is_some_and(|&end| end <= consumed) {
            self.segments.pop_front();
        }
        let unread = usize::try_from(produced.wrapping_sub(consumed)).unwrap_or(usize::MAX);
        unread.saturating_add(self.segments.len().saturating_mul(cost(0)))
    }

    /// Where one receive starting at `start` must end at the latest, as
    /// Linux's unix_stream_read_generic: never past the end of a send that
    /// carried descriptors, and with `per_writer` (SO_PASSCRED) never
    /// into another writer's bytes.
    fn limit(marks: &VecDeque<Mark>, reading: Option<PeerCred>, start: u64, per_writer: bool) -> u64 {
        let mut cred = reading;
        let mut limit = u64::MAX - start;
        for m in marks {
            let Some(off) = m.at.checked_sub(start) else { continue };
            if off >= limit {
                break;
            }
            if off == 0 {
                cred = Some(m.cred);
            } else if per_writer && cred.is_some_and(|c| c != m.cred) {
                limit = off;
                break;
            }
            if m.rights.is_some() {
                limit = limit.min(m.end.saturating_sub(start));
                break;
            }
        }
        start + limit
    }
}

/// The marks of one direction.
type RightsQueue = Arc<Mutex<MarkQueue>>;

/// The credentials a send carries (SCM_CREDENTIALS): given by the sender,
/// or its own. They go with the data when given (`attach`), when the
/// sending socket has SO_PASSCRED (also `attach`) or the receiving one
/// has it at the time; otherwise the data carries none (NO_PEER), as
/// Linux's maybe_add_creds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SenderCred {
    pub cred: PeerCred,
    pub attach: bool,
}

impl SenderCred {
    /// The calling guest thread's own: its process id and real ids.
    pub(crate) fn of_current() -> SenderCred {
        let cred = crate::kernel::thread::current().map_or(NO_PEER, |t| {
            let c = t.creds();
            (t.tgid(), c.uid, c.gid)
        });
        SenderCred { cred, attach: false }
    }

    /// What the data carries to a receiver with SO_PASSCRED `passcred`.
    pub(crate) fn stamp(self, passcred: bool) -> PeerCred {
        if self.attach || passcred {
            self.cred
        } else {
            NO_PEER
        }
    }
}

/// The receiving end of a packet direction; dropping it makes sends fail.
struct PacketRx(Arc<MsgQueue>);

impl Drop for PacketRx {
    fn drop(&mut self) {
        self.0.close_receiver();
    }
}

/// The sending end of a packet direction; dropping it ends the receiver's
/// stream of packets.
struct PacketTx(Arc<MsgQueue>);

impl Drop for PacketTx {
    fn drop(&mut self) {
        self.0.close_senders();
    }
}

/// How a connection carries data: a byte stream (SOCK_STREAM) or packets
/// that keep their boundaries (SOCK_SEQPACKET).
enum Link {
    Bytes {
        rx: Mutex<Option<Arc<PipeEnd>>>,
        tx: Mutex<Option<Arc<PipeEnd>>>,
        rx_rights: RightsQueue,
        tx_rights: RightsQueue,
    },
    Packets {
        rx: Mutex<Option<PacketRx>>,
        tx: Mutex<Option<Arc<PacketTx>>>,
    },
}

/// What a receive got: `len` bytes copied of `full` (a packet's whole
/// length; for a byte stream the same), descriptors sent with them, and
/// the sender's credentials if known (a stream knows only explicit ones).
pub(crate) struct Got {
    pub len: usize,
    pub full: usize,
    pub rights: Vec<Rights>,
    pub cred: Option<PeerCred>,
}

/// The most a stream direction holds whatever its writer's SO_SNDBUF (the
/// sentry's bound; Linux has none but the sender's buffer).
const STREAM_BOUND: usize = super::pipe::PIPE_MAX_SIZE;

/// The SO_SNDBUF the sentry honours at most (SO_SNDBUFFORCE may ask for
/// up to 2 GiB): what a socket may have queued, and its largest message.
pub(crate) const SNDBUF_BOUND: usize = 8 << 20;

/// Linux's per-message header allowance: a datagram or packet may be at
/// most SO_SNDBUF less this (unix_dgram_sendmsg's EMSGSIZE).
const MSG_HEADROOM: usize = 32;

/// Writable, as Linux's unix_writable: at most a quarter of the send
/// buffer charged.
fn writable(wmem: usize, sndbuf: usize) -> bool {
    wmem.saturating_mul(4) <= sndbuf
}

/// One end of a connected Unix socket pair (stream or seqpacket).
pub(crate) struct UnixStream {
    link: Link,
    /// The peer's credentials (SO_PEERCRED).
    pub peer_cred: PeerCred,
}

/// A peer's (pid, uid, gid) as SO_PEERCRED reports it.
pub(crate) type PeerCred = (i32, u32, u32);

/// What data sent without credentials carries (SCM_CREDENTIALS): pid 0
/// and the overflow ids.
pub(crate) const NO_PEER: PeerCred = (0, 65534, 65534);

/// What SO_PEERCRED reports without a peer: pid 0 and ids -1 (Linux's
/// cred_to_ucred without credentials).
pub(crate) const NO_PEER_CRED: PeerCred = (0, u32::MAX, u32::MAX);

impl Drop for UnixStream {
    /// Closed with data of its own unread: the peer's next receive that
    /// finds nothing fails with ECONNRESET (Linux's unix_release_sock).
    fn drop(&mut self) {
        if let Link::Bytes { rx, tx_rights, .. } = &self.link {
            if rx.lock().as_ref().is_some_and(|r| r.buffered() > 0) {
                tx_rights.lock().reset = true;
            }
        }
    }
}

impl UnixStream {
    /// A connected byte-stream pair; `inos` and `now` label its two pipe
    /// buffers; `creds` are what each end reports as its peer's.
    pub(crate) fn pair(
        inos: (u64, u64),
        now: TimeSpec,
        creds: (PeerCred, PeerCred),
    ) -> (Arc<UnixStream>, Arc<UnixStream>) {
        let a_to_b = Pipe::new(inos.0, now);
        let b_to_a = Pipe::new(inos.1, now);
        // The writer's SO_SNDBUF is what bounds a direction (`wmem`); the
        // buffer's own capacity is only the sentry's hard bound.
        for p in [&a_to_b, &b_to_a] {
            let _ = p.set_capacity(STREAM_BOUND, true);
        }
        let (a_to_b_rights, b_to_a_rights) = (RightsQueue::default(), RightsQueue::default());
        let end = |rx: &Arc<Pipe>, tx: &Arc<Pipe>, rx_rights: &RightsQueue, tx_rights: &RightsQueue, cred| {
            Arc::new(UnixStream {
                link: Link::Bytes {
                    rx: Mutex::new(Some(rx.reader())),
                    tx: Mutex::new(Some(tx.writer())),
                    rx_rights: rx_rights.clone(),
                    tx_rights: tx_rights.clone(),
                },
                peer_cred: cred,
            })
        };
        (
            end(&b_to_a, &a_to_b, &b_to_a_rights, &a_to_b_rights, creds.0),
            end(&a_to_b, &b_to_a, &a_to_b_rights, &b_to_a_rights, creds.1),
        )
    }

    /// A connected SOCK_SEQPACKET pair; `creds` as for `pair`.
    pub(crate) fn packet_pair(creds: (PeerCred, PeerCred)) -> (Arc<UnixStream>, Arc<UnixStream>) {
        let (a_to_b, b_to_a) = (MsgQueue::new(), MsgQueue::new());
        let end = |rx: &Arc<MsgQueue>, tx: &Arc<MsgQueue>, cred| {
            Arc::new(UnixStream {
                link: Link::Packets {
                    rx: Mutex::new(Some(PacketRx(rx.clone()))),
                    tx: Mutex::new(Some(Arc::new(PacketTx(tx.clone())))),
                },
                peer_cred: cred,
            })
        };
        (end(&b_to_a, &a_to_b, creds.0), end(&a_to_b, &b_to_a, creds.1))
    }

    /// This end's socket set SO_PASSCRED to `on`: what is sent to it from
    /// now carries the sender's credentials (or not).
    pub(crate) fn set_rx_passcred(&self, on: bool) {
        match &self.link {
            Link::Bytes { rx_rights, .. } => rx_rights.lock().reader_passcred = on,
            Link::Packets { rx, .. } => {
                if let Some(r) = rx.lock().as_ref() {
                    r.0.set_receiver_passcred(on);
                }
            }
        }
    }

    /// shutdown(2): closes the writing direction, and refuses more data
    /// on the reading one (what is queued there stays readable, as Linux
    /// keeps the receive queue).
    pub(crate) fn shutdown(&self, read: bool, write: bool) {
        match &self.link {
            Link::Bytes { rx, tx, rx_rights, .. } => {
                if read {
                    rx_rights.lock().reader_shut = true;
                    // Blocked readers see the end, blocked writers EPIPE.
                    if let Some(r) = rx.lock().clone() {
                        r.notify_waiters(ALL);
                    }
                }
                if write {
                    tx.lock().take();
                }
            }
            Link::Packets { rx, tx } => {
                if read {
                    if let Some(r) = rx.lock().as_ref() {
                        r.0.shut_receiving();
                    }
                }
                // The end closes (and wakes its peer) outside the lock.
                let tx_end = if write { tx.lock().take() } else { None };
                drop(tx_end);
            }
        }
    }

    /// sendmsg(2), with SCM_RIGHTS descriptors and explicit credentials
    /// riding on the first byte sent of `buf` (a stream) or on the packet:
    /// what fits now (a packet whole or not at all), else EAGAIN. The
    /// descriptors are taken out of `rights` once sent and left there
    /// when nothing was. With `urgent` (a stream's MSG_OOB) `buf` is the
    /// one urgent byte, and the reading socket's owner gets SIGURG.
    /// `sndbuf` is the sending socket's SO_SNDBUF: a stream takes
    /// segments of at most half of it less 64 bytes while what it has
    /// queued is charged less than it (Linux's unix_stream_sendmsg, which
    /// may overshoot by a segment); a packet fails with EMSGSIZE beyond
    /// it, and waits while the queue is charged as much.
    pub(crate) fn send_rights(
        &self,
        buf: &[u8],
        rights: &mut Option<Rights>,
        cred: SenderCred,
        urgent: bool,
        sndbuf: usize,
    ) -> Result<usize, Errno> {
        match &self.link {
            Link::Bytes { tx, tx_rights, .. } => {
                let tx = tx.lock().clone().ok_or(Errno::EPIPE)?;
                // The marks stay locked across the write, so that a reader
                // never sees bytes without the mark they were sent with.
                let mut q = tx_rights.lock();
                if q.reader_shut {
                    return Err(Errno::EPIPE);
                }
                if urgent && (buf.len() != 1 || !q.urgent.has_room()) {
                    return Err(if buf.len() != 1 { Errno::EINVAL } else { Errno::EAGAIN });
                }
                let stamped = cred.stamp(q.reader_passcred);
                let mark = rights.is_some() || q.written != Some(stamped);
                let mut charged = q.wmem(tx.positions());
                if charged >= sndbuf && !buf.is_empty() {
                    return Err(Errno::EAGAIN);
                }
                let segment = (sndbuf / 2).saturating_sub(64).max(1);
                let mut ends = Vec::new();
                let mut taken = 0;
                while taken < buf.len() && charged < sndbuf {
                    let n = segment.min(buf.len() - taken);
                    taken += n;
                    charged = charged.saturating_add(cost(n));
                    ends.push(taken);
                }
                let at = tx.positions().0;
                let n = tx.write(&buf[..taken], 0)?;
                for end in ends {
                    q.segments.push_back(at.wrapping_add(end.min(n) as u64));
                    if end >= n {
                        break;
                    }
                }
                if mark && n > 0 {
                    let end = at.wrapping_add(n as u64);
                    q.marks.push_back(Mark { at, end, rights: rights.take(), cred: stamped });
                    q.written = Some(stamped);
                }
                if urgent && n > 0 {
                    q.urgent.set(at, buf[0]);
                    let owner = q.reader_owner.as_ref().and_then(|o| o.lock().clone());
                    drop(q);
                    tx.notify_waiters(POLLPRI);
                    // Signalled outside the direction's lock.
                    if let Some(signal) = owner {
                        signal();
                    }
                }
                Ok(n)
            }
            Link::Packets { .. } if urgent => Err(Errno::EOPNOTSUPP),
            Link::Packets { tx, .. } => {
                let tx = tx.lock().clone().ok_or(Errno::EPIPE)?;
                if buf.len() > sndbuf.saturating_sub(MSG_HEADROOM) {
                    return Err(Errno::EMSGSIZE);
                }
                if tx.0.charged() >= sndbuf {
                    return Err(Errno::EAGAIN);
                }
                let stamped = cred.stamp(tx.0.receiver_passcred());
                let mut msg = Some(Message {
                    data: buf.to_vec(),
                    from: None,
                    rights: rights.take(),
                    cred: stamped,
                    unread: None,
                });
                let r = tx.0.send(&mut msg, None, None);
                if let Some(m) = msg {
                    *rights = m.rights;
                }
                // The peer shut down receiving: EPIPE, as a closed one.
                r.map_err(|e| if e == Errno::ESHUTDOWN { Errno::EPIPE } else { e })
            }
        }
    }

    /// recv(2)/recvmsg(2), MSG_PEEK when `peek`: the bytes read and the
    /// descriptors sent with them (copies of them for a peek, as Linux
    /// installs them then too); EAGAIN when nothing is queued. A stream
    /// receive stops at the end of a send with descriptors and, with
    /// `per_writer` (SO_PASSCRED), where another writer's bytes begin.
    /// Descriptors whose bytes were consumed before are dropped here, as
    /// Linux closes them. A stream's urgent data is passed as `Urgent`
    /// says, read inline with `inline` (SO_OOBINLINE).
    pub(crate) fn recv_rights(&self, buf: &mut [u8], peek: bool, per_writer: bool, inline: bool) -> Result<Got, Errno> {
        match &self.link {
            Link::Bytes { rx, rx_rights, .. } => {
                let Some(rx) = rx.lock().clone() else {
                    return Ok(Got { len: 0, full: 0, rights: Vec::new(), cred: None });
                };
                let mut q = rx_rights.lock();
                let ended = q.reader_shut || rx.poll_events() & crate::abi::poll::POLLHUP != 0;
                if rx.buffered() == 0 {
                    if q.reset {
                        q.reset = false;
                        return Err(Errno::ECONNRESET);
                    }
                    // A receive of no bytes waits for data as any other
                    // (Linux's unix_stream_read_generic); read(2) of none
                    // never gets here.
                    if buf.is_empty() && !ended {
                        return Err(Errno::EAGAIN);
                    }
                }
                let MarkQueue { marks, reading, urgent, reader_shut, .. } = &mut *q;
                let stop = |from| MarkQueue::limit(marks, *reading, from, per_writer);
                let read = match urgent.read(&rx, buf, peek, inline, stop) {
                    // Shut for reading and drained: the end.
                    Err(Errno::EAGAIN) if *reader_shut => {
                        let end = rx.positions().1;
                        Ok((end, end, 0))
                    }
                    r => r,
                };
                // Where the read began and ended, places passed included
                // (they are consumed even when nothing was read).
                let (start, last, n) = match read {
                    Ok(r) if r.2 > 0 => r,
                    _ => {
                        let end = rx.positions().1;
                        (end, end, 0)
                    }
                };
                let mut cred = q.reading;
                let mut got = Vec::new();
                // A receive of no bytes still takes the descriptors of the
                // send at the read position, as Linux's
                // unix_stream_read_generic (its bytes stay queued).
                if buf.is_empty() && read.is_ok() {
                    if let Some(m) = q.marks.iter_mut().find(|m| m.at == start && m.rights.is_some()) {
                        cred = Some(m.cred);
                        got.extend(if peek { m.rights.as_ref().map(Rights::dup) } else { m.rights.take() });
                        return Ok(Got { len: 0, full: 0, rights: got, cred });
                    }
                }
                if peek {
                    for m in q.marks.iter().take_while(|m| m.at < last) {
                        if m.at <= start {
                            cred = Some(m.cred);
                        }
                        if m.at >= start {
                            got.extend(m.rights.as_ref().map(Rights::dup));
                        }
                    }
                    read?;
                    return Ok(Got { len: n, full: n, rights: got, cred });
                }
                let mut skipped = Vec::new();
                while q.marks.front().is_some_and(|m| m.at < last) {
                    if let Some(m) = q.marks.pop_front() {
                        if m.at <= start {
                            cred = Some(m.cred);
                        }
                        q.reading = Some(m.cred);
                        if m.at >= start {
                            got.extend(m.rights);
                        } else {
                            skipped.extend(m.rights);
                        }
                    }
                }
                drop(q);
                // Closed only now, outside the queue's lock.
                drop(skipped);
                read?;
                Ok(Got { len: n, full: n, rights: got, cred })
            }
            Link::Packets { rx, .. } => {
                let Some(q) = rx.lock().as_ref().map(|r| r.0.clone()) else {
                    return Ok(Got { len: 0, full: 0, rights: Vec::new(), cred: None });
                };
                let r = q.recv(buf, peek)?;
                Ok(Got { len: r.len, full: r.full, rights: r.rights.into_iter().collect(), cred: r.cred })
            }
        }
    }

    /// recv(MSG_OOB): the urgent byte, taken unless `peek`; EINVAL when
    /// none waits or `inline` keeps it in the stream; EOPNOTSUPP on a
    /// seqpacket connection.
    fn recv_urgent(&self, peek: bool, inline: bool) -> Result<u8, Errno> {
        match &self.link {
            Link::Bytes { rx_rights, .. } => rx_rights.lock().urgent.take(peek, inline),
            Link::Packets { .. } => Err(Errno::EOPNOTSUPP),
        }
    }

    /// SIOCATMARK: the next read starts at the urgent mark.
    fn at_mark(&self) -> bool {
        match &self.link {
            Link::Bytes { rx, rx_rights, .. } => {
                let Some(rx) = rx.lock().clone() else { return false };
                let q = rx_rights.lock();
                q.urgent.at_mark(rx.positions().1)
            }
            Link::Packets { .. } => false,
        }
    }

    /// Makes this end the one of a socket: `queue` is told of each change
    /// of this side's readiness (data arriving on the receive buffer, room
    /// made on the send one, any change of state: ALL), and urgent data for
    /// it signals the owner in `owner`. Room made by its own reads and data
    /// queued by its own writes are the peer's news (and would send an
    /// O_ASYNC owner a signal Linux does not).
    fn attach(&self, queue: &Arc<Queue>, owner: &OwnerSlot) {
        let forward = |mask| Entry::new(mask, Arc::new(Forward(Arc::downgrade(queue))));
        let (incoming, outgoing) = (forward(!ROOM), forward(!DATA));
        match &self.link {
            Link::Bytes { rx, tx, rx_rights, .. } => {
                rx_rights.lock().reader_owner = Some(owner.clone());
                if let Some(r) = rx.lock().clone() {
                    r.event_register(&incoming);
                }
                if let Some(t) = tx.lock().clone() {
                    t.event_register(&outgoing);
                }
            }
            Link::Packets { rx, tx } => {
                if let Some(r) = rx.lock().as_ref() {
                    r.0.queue.register(&incoming);
                }
                if let Some(t) = tx.lock().as_ref() {
                    t.0.queue.register(&outgoing);
                }
            }
        }
    }

    /// The bytes waiting to be read, of every message of a seqpacket
    /// (Linux's unix_inq_len): an urgent byte counts until taken.
    fn unread(&self) -> usize {
        match &self.link {
            Link::Bytes { rx, rx_rights, .. } => {
                let Some(rx) = rx.lock().clone() else { return 0 };
                let q = rx_rights.lock();
                rx.buffered().saturating_sub(q.urgent.taken_bytes())
            }
            Link::Packets { rx, .. } => rx.lock().as_ref().map_or(0, |r| r.0.data_len(true)),
        }
    }

    /// The bytes this end sent that its peer has not read yet (SIOCOUTQ).
    fn unsent(&self) -> usize {
        match &self.link {
            Link::Bytes { tx, .. } => tx.lock().as_ref().map_or(0, |t| t.buffered()),
            Link::Packets { tx, .. } => tx.lock().as_ref().map_or(0, |t| t.0.data_len(true)),
        }
    }

    /// Readiness of this end, as Linux's unix_poll reports it: a side is
    /// shut by this end's shutdown(2) or the peer's (or its close); a shut
    /// reading side reads as EOF (POLLIN|POLLRDHUP), both shut is POLLHUP,
    /// and POLLOUT stays unless the peer's buffer is full. POLLPRI tells
    /// of an urgent byte waiting.
    pub(crate) fn poll_events(&self, sndbuf: usize) -> u32 {
        use crate::abi::poll::{POLLERR, POLLHUP, POLLRDHUP};
        let mut ev = 0;
        let (readable, writable, rd_shut, wr_shut) = match &self.link {
            Link::Bytes { rx, tx, rx_rights, tx_rights } => {
                let rx_shut = {
                    let q = rx_rights.lock();
                    if q.urgent.waiting() {
                        ev |= POLLPRI;
                    }
                    q.reader_shut
                };
                let (tx_shut, wmem) = {
                    let mut q = tx_rights.lock();
                    let wmem = tx.lock().as_ref().map_or(0, |t| q.wmem(t.positions()));
                    (q.reader_shut, wmem)
                };
                let (readable, rd_shut) = rx.lock().as_ref().map_or((false, true), |r| {
                    let ev = r.poll_events();
                    (r.buffered() > 0, rx_shut || ev & POLLHUP != 0)
                });
                let (writable, wr_shut) = tx.lock().as_ref().map_or((true, true), |t| {
                    let ev = t.poll_events();
                    (ev & POLLOUT != 0 && writable(wmem, sndbuf), tx_shut || ev & POLLERR != 0)
                });
                (readable, writable, rd_shut, wr_shut)
            }
            Link::Packets { rx, tx } => {
                let (readable, rd_shut) = rx.lock().as_ref().map_or((false, true), |r| {
                    let (queued, _, _, ended) = r.0.readiness();
                    (queued, ended)
                });
                let (writable, wr_shut) = tx.lock().as_ref().map_or((true, true), |t| {
                    let (_, room, gone, _) = t.0.readiness();
                    (room && writable(t.0.charged(), sndbuf), gone)
                });
                (readable, writable, rd_shut, wr_shut)
            }
        };
        if readable || rd_shut {
            ev |= POLLIN | POLLRDNORM;
        }
        if rd_shut {
            ev |= POLLRDHUP;
        }
        if rd_shut && wr_shut {
            ev |= POLLHUP;
        }
        if writable || wr_shut {
            ev |= POLLOUT | POLLWRNORM;
        }
        ev
    }
}

/// How the registry of bound sockets names them.
pub(crate) type RegistryKey = (Option<SockType>, UnixName);

/// The sandbox's bound Unix sockets by name (socket files by inode,
/// abstract names per socket type).
#[derive(Default)]
pub(crate) struct UnixNames(Mutex<HashMap<RegistryKey, Weak<UnixSocket>>>);

impl UnixNames {
    /// Binds `s` to `name` unless a live socket holds it (EADDRINUSE).
    pub(crate) fn bind(&self, name: &UnixName, s: &Arc<UnixSocket>) -> Result<(), Errno> {
        let mut names = self.0.lock();
        let key = name.key(s.ty());
        if names.get(&key).is_some_and(|w| w.strong_count() > 0) {
            return Err(Errno::EADDRINUSE);
        }
        s.bind(name.clone())?;
        // Closed sockets leave dead entries; sweep them as the registry
        // doubles so a guest binding in a loop cannot grow the sentry
        // without bound.
        if names.len() >= 64 && names.len().is_power_of_two() {
            names.retain(|_, w| w.strong_count() > 0);
        }
        names.insert(key, Arc::downgrade(s));
        Ok(())
    }

    /// The live socket bound to `key`.
    pub(crate) fn find(&self, key: &RegistryKey) -> Option<Arc<UnixSocket>> {
        self.0.lock().get(key).and_then(Weak::upgrade)
    }
}

/// The name a Unix socket is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum UnixName {
    /// In the abstract namespace (no file).
    Abstract(Vec<u8>),
    /// A socket file, by (device, inode); `path` is what getsockname shows.
    File { dev: u64, ino: u64, path: Vec<u8> },
}

impl UnixName {
    /// The registry key for a socket of type `ty`: paths compare by file,
    /// not by spelling; abstract names are per socket type, as in Linux
    /// (a stream and a datagram socket may share one).
    pub(crate) fn key(&self, ty: SockType) -> RegistryKey {
        match self {
            UnixName::File { dev, ino, .. } => (None, UnixName::File { dev: *dev, ino: *ino, path: Vec::new() }),
            a => (Some(ty), a.clone()),
        }
    }

    /// The `sun_path` bytes as getsockname reports them.
    pub(crate) fn sun_path(&self) -> Vec<u8> {
        match self {
            UnixName::Abstract(n) => {
                let mut v = vec![0u8];
                v.extend_from_slice(n);
                v
            }
            UnixName::File { path, .. } => {
                let mut v = path.clone();
                v.push(0);
                v
            }
        }
    }
}

enum SockState {
    Unbound,
    Bound(UnixName),
    Listening(UnixName),
    /// `local` is the peer's `peer`: a name this end binds once
    /// connected is the one its peer reports (getpeername, recvfrom), as
    /// Linux reads the peer's address when asked.
    Connected {
        stream: Arc<UnixStream>,
        local: NameCell,
        peer: NameCell,
    },
}

/// A connected end's name, shared with the peer that reports it.
type NameCell = Arc<Mutex<Option<UnixName>>>;

/// A Unix socket's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SockType {
    Stream,
    Dgram,
    SeqPacket,
}

impl SockType {
    /// SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET (SOCK_RAW is a datagram
    /// socket, as in Linux).
    pub(crate) fn from_number(n: i32) -> Option<SockType> {
        match n {
            1 => Some(SockType::Stream),
            2 | 3 => Some(SockType::Dgram),
            5 => Some(SockType::SeqPacket),
            _ => None,
        }
    }

    /// Whether the type keeps message boundaries (datagram, seqpacket).
    pub(crate) fn has_messages(self) -> bool {
        self != SockType::Stream
    }

    pub(crate) fn number(self) -> i32 {
        match self {
            SockType::Stream => 1,
            SockType::Dgram => 2,
            SockType::SeqPacket => 5,
        }
    }
}

/// What a socket received: `len` bytes copied of `full`, from whom, and
/// the descriptors that came with them.
pub(crate) struct Delivery {
    pub len: usize,
    pub full: usize,
    pub from: Option<UnixName>,
    pub rights: Vec<Rights>,
    /// The sender's credentials: as sent, or else the peer's.
    pub cred: PeerCred,
    /// A datagram socket's receiving side is shut and empty: a blocking
    /// receive returns 0, a non-blocking one EAGAIN (as Linux's
    /// __skb_wait_for_more_packets).
    pub ended: bool,
}

/// A datagram socket's default destination: its queue, its name, and the
/// entry on its queue that tells the socket's pollers when it has room.
/// The entry goes with the destination (a reconnect, a disconnect, the
/// socket's close), so connecting again and again leaves one behind.
struct DgramPeer {
    queue: Arc<MsgQueue>,
    /// The destination's socket: whether it is connected back decides
    /// whether its queue's length limits this one's sends.
    sock: Weak<UnixSocket>,
    name: Option<UnixName>,
    writable: Entry,
}

impl Drop for DgramPeer {
    fn drop(&mut self) {
        self.queue.queue.unregister(&self.writable);
    }
}

/// A datagram socket's own parts: its receive queue and the destination
/// it is connected to, if any.
struct Datagram {
    inbox: PacketRx,
    peer: Mutex<Option<DgramPeer>>,
    /// shutdown(SHUT_WR): sends fail with EPIPE.
    no_send: std::sync::atomic::AtomicBool,
    /// A socketpair's maker (SO_PEERCRED).
    pair_cred: Mutex<Option<PeerCred>>,
    /// Its messages not read yet: their bytes (SIOCOUTQ) and charge
    /// against SO_SNDBUF.
    sent: Arc<Outstanding>,
}

/// A Unix socket. A stream or seqpacket socket is unbound, bound,
/// listening or connected; a datagram socket is unbound or bound, and may
/// have a default destination.
pub(crate) struct UnixSocket {
    ino: u64,
    created: TimeSpec,
    ty: SockType,
    state: Mutex<SockState>,
    /// Connections waiting for accept (a listening socket's).
    queue: Mutex<VecDeque<Arc<UnixSocket>>>,
    /// Pollers wait here; the buffers the socket uses forward to it.
    events: Arc<Queue>,
    dgram: Option<Datagram>,
    /// A listening socket's credentials from listen(2): what its
    /// connections report to their clients (SO_PEERCRED).
    listen_cred: Mutex<Option<PeerCred>>,
    /// SO_PASSCRED: receives report the sender's credentials (set with
    /// `set_passcred`).
    pub passcred: std::sync::atomic::AtomicBool,
    /// SO_OOBINLINE: a stream's urgent byte is read as data.
    oob_inline: std::sync::atomic::AtomicBool,
    /// F_SETOWN's owner, signalled (SIGURG) when urgent data arrives.
    owner: OwnerSlot,
    /// The directions shut down (1: reading, 2: writing).
    shut: std::sync::atomic::AtomicU8,
    /// SO_RCVTIMEO and SO_SNDTIMEO (None: no timeout).
    pub timeouts: Mutex<(Option<std::time::Duration>, Option<std::time::Duration>)>,
    /// The other socket-level options.
    pub opts: crate::fs::sockopt::SockOpts,
}

impl UnixSocket {
    fn with_state(ino: u64, created: TimeSpec, ty: SockType, state: SockState) -> Arc<UnixSocket> {
        let events = Arc::new(Queue::default());
        let dgram = (ty == SockType::Dgram).then(|| Datagram {
            inbox: PacketRx(MsgQueue::new()),
            peer: Mutex::new(None),
            no_send: std::sync::atomic::AtomicBool::new(false),
            pair_cred: Mutex::new(None),
            sent: Arc::new(Outstanding { room: Some(Arc::downgrade(&events)), ..Outstanding::default() }),
        });
        let owner = OwnerSlot::default();
        if let SockState::Connected { stream, .. } = &state {
            stream.attach(&events, &owner);
        }
        if let Some(d) = &dgram {
            d.inbox.0.queue.register(&Entry::new(!ROOM, Arc::new(Forward(Arc::downgrade(&events)))));
        }
        Arc::new(UnixSocket {
            ino,
            created,
            ty,
            state: Mutex::new(state),
            queue: Mutex::default(),
            events,
            dgram,
            listen_cred: Mutex::new(None),
            passcred: std::sync::atomic::AtomicBool::new(false),
            oob_inline: std::sync::atomic::AtomicBool::new(false),
            owner,
            shut: std::sync::atomic::AtomicU8::new(0),
            timeouts: Mutex::default(),
            opts: crate::fs::sockopt::SockOpts::default(),
        })
    }

    /// A new, unbound socket.
    pub(crate) fn new(ino: u64, created: TimeSpec, ty: SockType) -> Arc<UnixSocket> {
        UnixSocket::with_state(ino, created, ty, SockState::Unbound)
    }

    /// The two ends of a connected stream or seqpacket pair (socketpair),
    /// unnamed until one binds.
    pub(crate) fn connected_pair(
        inos: (u64, u64),
        created: TimeSpec,
        ty: SockType,
        (a, b): (Arc<UnixStream>, Arc<UnixStream>),
    ) -> (Arc<UnixSocket>, Arc<UnixSocket>) {
        let (a_name, b_name) = (NameCell::default(), NameCell::default());
        let a = SockState::Connected { stream: a, local: a_name.clone(), peer: b_name.clone() };
        let b = SockState::Connected { stream: b, local: b_name, peer: a_name };
        (UnixSocket::with_state(inos.0, created, ty, a), UnixSocket::with_state(inos.1, created, ty, b))
    }

    /// A datagram socket pair, each the other's destination, made by a
    /// process with credentials `cred`.
    pub(crate) fn dgram_pair(
        inos: (u64, u64),
        created: TimeSpec,
        cred: PeerCred,
    ) -> (Arc<UnixSocket>, Arc<UnixSocket>) {
        let a = UnixSocket::new(inos.0, created, SockType::Dgram);
        let b = UnixSocket::new(inos.1, created, SockType::Dgram);
        if let (Some(da), Some(db)) = (&a.dgram, &b.dgram) {
            // Each is writable when the other's inbox has room.
            *da.peer.lock() = Some(a.dgram_peer(&b, &db.inbox.0, None));
            *db.peer.lock() = Some(b.dgram_peer(&a, &da.inbox.0, None));
            *da.pair_cred.lock() = Some(cred);
            *db.pair_cred.lock() = Some(cred);
        }
        (a, b)
    }

    /// setsockopt(SO_PASSCRED): from now on, data sent to this socket
    /// carries its sender's credentials, and receives report them.
    pub(crate) fn set_passcred(&self, on: bool) {
        self.passcred.store(on, Ordering::Relaxed);
        match &self.dgram {
            Some(d) => d.inbox.0.set_receiver_passcred(on),
            None => {
                if let Ok(stream) = self.stream() {
                    stream.set_rx_passcred(on);
                }
            }
        }
    }

    /// SO_PEERCRED: the peer's credentials; a listening socket's own from
    /// listen(2) (Linux's init_peercred); else NO_PEER_CRED.
    pub(crate) fn peer_cred(&self) -> PeerCred {
        if let Some(d) = &self.dgram {
            return d.pair_cred.lock().unwrap_or(NO_PEER_CRED);
        }
        match &*self.state.lock() {
            SockState::Connected { stream, .. } => stream.peer_cred,
            SockState::Listening(_) => self.listen_cred.lock().unwrap_or(NO_PEER_CRED),
            _ => NO_PEER_CRED,
        }
    }

    pub(crate) fn ty(&self) -> SockType {
        self.ty
    }

    /// `queue` as this socket's destination, with an entry on it that
    /// tells this socket's pollers when the destination has room again.
    fn dgram_peer(&self, sock: &Arc<UnixSocket>, queue: &Arc<MsgQueue>, name: Option<UnixName>) -> DgramPeer {
        let writable = Entry::new(POLLOUT | POLLWRNORM, Arc::new(Forward(Arc::downgrade(&self.events))));
        queue.queue.register(&writable);
        DgramPeer { queue: queue.clone(), sock: Arc::downgrade(sock), name, writable }
    }

    /// Is this datagram socket connected to the one receiving on `inbox`?
    fn dgram_connected_to(&self, inbox: &Arc<MsgQueue>) -> bool {
        self.dgram.as_ref().is_some_and(|d| d.peer.lock().as_ref().is_some_and(|p| Arc::ptr_eq(&p.queue, inbox)))
    }

    /// SO_SNDBUF as the socket honours it (at most `SNDBUF_BOUND`).
    pub(crate) fn sndbuf(&self) -> usize {
        let set = self.opts.get().sndbuf.unwrap_or(crate::fs::sockopt::WMEM_DEFAULT);
        usize::try_from(set).unwrap_or(0).min(SNDBUF_BOUND)
    }

    /// SO_SNDBUF changed: blocked senders and pollers look again (Linux's
    /// sk_write_space).
    pub(crate) fn sndbuf_changed(&self) {
        self.events.notify(POLLOUT | POLLWRNORM);
    }

    /// connect(2) of a datagram socket: `target` becomes the default
    /// destination (in place of any other).
    pub(crate) fn dgram_connect(&self, target: &Arc<UnixSocket>) -> Result<(), Errno> {
        let (Some(mine), Some(theirs)) = (&self.dgram, &target.dgram) else { return Err(Errno::EPROTOTYPE) };
        let name = target.local_name();
        let old = {
            let mut peer = mine.peer.lock();
            match peer.as_mut() {
                Some(p) if Arc::ptr_eq(&p.queue, &theirs.inbox.0) => {
                    p.name = name;
                    None
                }
                _ => peer.replace(self.dgram_peer(target, &theirs.inbox.0, name)),
            }
        };
        drop(old);
        self.events.notify(POLLOUT | POLLWRNORM);
        Ok(())
    }

    /// connect(2) to AF_UNSPEC of a datagram socket: it no longer has a
    /// default destination.
    pub(crate) fn dgram_disconnect(&self) -> Result<(), Errno> {
        let Some(mine) = &self.dgram else { return Err(Errno::EINVAL) };
        let old = mine.peer.lock().take();
        drop(old);
        Ok(())
    }

    /// How many entries wait on this socket's receive queue (what a test
    /// checks for leaks).
    #[cfg(test)]
    fn inbox_entries(&self) -> usize {
        self.dgram.as_ref().map_or(0, |d| d.inbox.0.queue.entry_count())
    }

    /// `cred` as this socket sends it: with its credentials attached when
    /// it has SO_PASSCRED on, as Linux's `unix_scm_to_skb`.
    fn own_cred(&self, cred: SenderCred) -> SenderCred {
        SenderCred { attach: cred.attach || self.passcred.load(Ordering::Relaxed), ..cred }
    }

    /// Sends one message: to `to` (a datagram's address) or the connected
    /// destination or peer; what fits now, else EAGAIN (the sender waits
    /// on this socket's queue, or for `to` on `to.inbox()`'s). The
    /// descriptors in `rights` are taken once sent.
    pub(crate) fn send_msg(
        &self,
        to: Option<&Arc<UnixSocket>>,
        data: &[u8],
        rights: &mut Option<Rights>,
        cred: SenderCred,
    ) -> Result<usize, Errno> {
        let sndbuf = self.sndbuf();
        let cred = self.own_cred(cred);
        let Some(d) = &self.dgram else {
            return self.stream()?.send_rights(data, rights, cred, false, sndbuf);
        };
        if d.no_send.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Errno::EPIPE);
        }
        // As Linux's unix_dgram_sendmsg: at most the send buffer (less a
        // header's room), sent while less than it is charged.
        if data.len() > sndbuf.saturating_sub(MSG_HEADROOM) {
            return Err(Errno::EMSGSIZE);
        }
        if d.sent.wmem.load(Ordering::Relaxed) >= sndbuf {
            return Err(Errno::EAGAIN);
        }
        let (dest, receiver) = match to {
            Some(t) => (t.dgram.as_ref().map(|td| td.inbox.0.clone()).ok_or(Errno::EPROTOTYPE)?, Some(t.clone())),
            None => d.peer.lock().as_ref().map(|p| (p.queue.clone(), p.sock.upgrade())).ok_or(Errno::ENOTCONN)?,
        };
        // A receiver not connected back (nor this socket itself) takes at
        // most max_dgram_qlen messages (Linux's unix_recvq_full).
        let to_self = Arc::ptr_eq(&dest, &d.inbox.0);
        let qlen = (!to_self && !receiver.is_some_and(|r| r.dgram_connected_to(&d.inbox.0))).then_some(MAX_DGRAM_QLEN);
        let stamped = cred.stamp(dest.receiver_passcred());
        let mut msg = Some(Message {
            data: data.to_vec(),
            from: self.local_name(),
            rights: rights.take(),
            cred: stamped,
            unread: None,
        });
        let r = dest.send(&mut msg, qlen, Some(&d.sent));
        if let Some(m) = msg {
            *rights = m.rights;
        }
        match r {
            // A destination whose socket is gone refuses, once; a connected
            // socket is then disconnected (ENOTCONN), as in Linux.
            Err(Errno::EPIPE) => {
                if to.is_none() {
                    d.peer.lock().take();
                }
                Err(Errno::ECONNREFUSED)
            }
            // The destination shut down receiving.
            Err(Errno::ESHUTDOWN) => Err(Errno::EPIPE),
            r => r,
        }
    }

    /// send(MSG_OOB) of a stream's urgent byte `byte` (one byte), with
    /// the descriptors in `rights` if they are still to go; EOPNOTSUPP on
    /// other socket types.
    pub(crate) fn send_urgent(
        &self,
        byte: &[u8],
        rights: &mut Option<Rights>,
        cred: SenderCred,
    ) -> Result<usize, Errno> {
        if self.ty != SockType::Stream {
            return Err(Errno::EOPNOTSUPP);
        }
        let cred = self.own_cred(cred);
        self.stream()?.send_rights(byte, rights, cred, true, self.sndbuf())
    }

    /// recv(MSG_OOB): a stream's urgent byte, never waiting; EINVAL
    /// unconnected (as Linux's stream receive), EOPNOTSUPP on other
    /// socket types.
    pub(crate) fn recv_urgent(&self, peek: bool) -> Result<u8, Errno> {
        if self.ty != SockType::Stream {
            return Err(Errno::EOPNOTSUPP);
        }
        let stream = self.stream().map_err(|_| Errno::EINVAL)?;
        stream.recv_urgent(peek, self.oob_inline.load(Ordering::Relaxed))
    }

    /// A stream's next read starts at the urgent mark (SIOCATMARK); a
    /// read that has bytes stops there.
    pub(crate) fn at_mark(&self) -> bool {
        self.ty == SockType::Stream && self.stream().is_ok_and(|s| s.at_mark())
    }

    /// SO_OOBINLINE was set or cleared.
    pub(crate) fn set_oob_inline(&self, on: bool) {
        self.oob_inline.store(on, Ordering::Relaxed);
    }

    /// Receives (or with `peek` looks at) the next data: a message of a
    /// datagram or seqpacket socket, bytes of a stream; EAGAIN when
    /// nothing is queued (the receiver waits on this socket's queue).
    pub(crate) fn recv_msg(&self, buf: &mut [u8], peek: bool) -> Result<Delivery, Errno> {
        if let Some(d) = &self.dgram {
            let r = d.inbox.0.recv(buf, peek)?;
            let cred = r.cred.unwrap_or(NO_PEER);
            return Ok(Delivery {
                len: r.len,
                full: r.full,
                from: r.from,
                rights: r.rights.into_iter().collect(),
                cred,
                ended: r.ended,
            });
        }
        let stream = self.stream()?;
        let from = self.peer_name().ok().flatten();
        let peer = stream.peer_cred;
        let per_writer = self.passcred.load(Ordering::Relaxed);
        let got = stream.recv_rights(buf, peek, per_writer, self.oob_inline.load(Ordering::Relaxed))?;
        Ok(Delivery {
            len: got.len,
            full: got.full,
            from,
            rights: got.rights,
            cred: got.cred.unwrap_or(peer),
            ended: false,
        })
    }

    /// shutdown(2): of a connection's directions (the peer's opposite
    /// ones with them), of a datagram socket's own sending or receiving;
    /// on a socket not connected it is recorded for poll, as Linux.
    pub(crate) fn shutdown(&self, read: bool, write: bool) -> Result<(), Errno> {
        let bits = u8::from(read) | (u8::from(write) << 1);
        self.shut.fetch_or(bits, Ordering::Relaxed);
        match &self.dgram {
            Some(d) => {
                if read {
                    d.inbox.0.shut_receiving();
                }
                if write {
                    d.no_send.store(true, Ordering::Relaxed);
                }
            }
            None => {
                if let Ok(stream) = self.stream() {
                    stream.shutdown(read, write);
                }
            }
        }
        self.events.notify(ALL);
        Ok(())
    }

    /// A datagram socket's receive queue: where a sender to it waits for
    /// room.
    pub(crate) fn inbox(&self) -> Option<&Arc<MsgQueue>> {
        self.dgram.as_ref().map(|d| &d.inbox.0)
    }

    /// The connected stream (ENOTCONN otherwise).
    pub(crate) fn stream(&self) -> Result<Arc<UnixStream>, Errno> {
        match &*self.state.lock() {
            SockState::Connected { stream, .. } => Ok(stream.clone()),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// bind(2): names an unbound socket, a connected one too (Linux's
    /// unix_bind checks only that the socket has no name: an accepted
    /// one has its listener's).
    pub(crate) fn bind(&self, name: UnixName) -> Result<(), Errno> {
        let mut s = self.state.lock();
        match &*s {
            SockState::Unbound => {
                *s = SockState::Bound(name);
                Ok(())
            }
            SockState::Connected { local, .. } => {
                let mut local = local.lock();
                if local.is_some() {
                    return Err(Errno::EINVAL);
                }
                *local = Some(name);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// listen(2) by a process with credentials `cred`.
    pub(crate) fn listen(&self, cred: PeerCred) -> Result<(), Errno> {
        if self.ty == SockType::Dgram {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut s = self.state.lock();
        match &*s {
            SockState::Bound(n) | SockState::Listening(n) => {
                *s = SockState::Listening(n.clone());
                *self.listen_cred.lock() = Some(cred);
                Ok(())
            }
            SockState::Unbound => Err(Errno::EINVAL),
            SockState::Connected { .. } => Err(Errno::EINVAL),
        }
    }

    pub(crate) fn is_listening(&self) -> bool {
        matches!(*self.state.lock(), SockState::Listening(_))
    }

    /// The name bound (getsockname), if any.
    pub(crate) fn local_name(&self) -> Option<UnixName> {
        match &*self.state.lock() {
            SockState::Unbound => None,
            SockState::Bound(n) | SockState::Listening(n) => Some(n.clone()),
            SockState::Connected { local, .. } => local.lock().clone(),
        }
    }

    /// The peer's name (getpeername); ENOTCONN unless connected.
    pub(crate) fn peer_name(&self) -> Result<Option<UnixName>, Errno> {
        if let Some(d) = &self.dgram {
            return d.peer.lock().as_ref().map(|p| p.name.clone()).ok_or(Errno::ENOTCONN);
        }
        match &*self.state.lock() {
            SockState::Connected { peer, .. } => Ok(peer.lock().clone()),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// connect(2) to `listener` by a process with credentials `cred`:
    /// queues the server's end for accept.
    pub(crate) fn connect(&self, listener: &Arc<UnixSocket>, inos: (u64, u64), cred: PeerCred) -> Result<(), Errno> {
        if listener.ty != self.ty {
            return Err(Errno::EPROTOTYPE);
        }
        let Some(name) = listener.local_name().filter(|_| listener.is_listening()) else {
            return Err(Errno::ECONNREFUSED);
        };
        let mut s = self.state.lock();
        let local = match &*s {
            SockState::Connected { .. } => return Err(Errno::EISCONN),
            SockState::Listening(_) => return Err(Errno::EINVAL),
            SockState::Bound(n) => Some(n.clone()),
            SockState::Unbound => None,
        };
        // The client sees the listener's credentials, the server the
        // client's.
        let creds = (listener.listen_cred.lock().unwrap_or(NO_PEER), cred);
        let (mine, theirs) = match self.ty {
            SockType::SeqPacket => UnixStream::packet_pair(creds),
            _ => UnixStream::pair(inos, self.created, creds),
        };
        // The connection inherits the listener's SO_PASSCRED (Linux's
        // unix_sock_inherit_flags); each end's flag applies to its receives.
        mine.set_rx_passcred(self.passcred.load(Ordering::Relaxed));
        let (local, server_name) = (Arc::new(Mutex::new(local)), Arc::new(Mutex::new(Some(name))));
        let server = UnixSocket::with_state(
            inos.1,
            self.created,
            self.ty,
            SockState::Connected { stream: theirs, local: server_name.clone(), peer: local.clone() },
        );
        server.set_passcred(listener.passcred.load(Ordering::Relaxed));
        mine.attach(&self.events, &self.owner);
        *s = SockState::Connected { stream: mine, local, peer: server_name };
        drop(s);
        self.events.notify(ALL);
        listener.queue.lock().push_back(server);
        listener.events.notify(POLLIN | POLLRDNORM);
        Ok(())
    }

    /// accept(2): the next queued connection; EAGAIN when none waits
    /// (the caller waits on the listener's queue).
    pub(crate) fn accept(&self) -> Result<Arc<UnixSocket>, Errno> {
        if self.ty == SockType::Dgram {
            return Err(Errno::EOPNOTSUPP);
        }
        if !self.is_listening() {
            return Err(Errno::EINVAL);
        }
        self.queue.lock().pop_front().ok_or(Errno::EAGAIN)
    }
}

super::anon::socket_node!(UnixSocket);

impl FileOps for UnixSocket {
    /// read(2): of no bytes returns 0 at once, whatever is queued (Linux's
    /// sock_read_iter); otherwise a receive.
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.recv_msg(buf, false).map(|d| d.len)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send_msg(None, buf, &mut None, SenderCred::of_current())
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        use crate::abi::poll::{POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRNORM};
        // The directions this socket shut: reading shut reads as EOF
        // (POLLIN|POLLRDHUP), both as POLLHUP (Linux's unix_dgram_poll).
        let shut = self.shut.load(Ordering::Relaxed);
        let shut_bits =
            if shut & 1 != 0 { POLLIN | POLLRDNORM | POLLRDHUP } else { 0 } | if shut == 3 { POLLHUP } else { 0 };
        if let Some(d) = &self.dgram {
            let (queued, _, _, _) = d.inbox.0.readiness();
            // Linux's unix_dgram_poll: capacity-based (a shut sending side
            // does not count), and not while the destination, when not
            // connected back, holds more than max_dgram_qlen messages.
            // The destination's parts are taken out first: its socket's
            // own lock is never taken under this one's.
            let peer = d.peer.lock().as_ref().map(|p| (p.queue.clone(), p.sock.clone()));
            let peer_full = peer.is_some_and(|(queue, sock)| {
                !queue.readiness().1
                    || (queue.len() > MAX_DGRAM_QLEN
                        && !Arc::ptr_eq(&queue, &d.inbox.0)
                        && !sock.upgrade().is_some_and(|r| r.dgram_connected_to(&d.inbox.0)))
            });
            let writable = !peer_full && writable(d.sent.wmem.load(Ordering::Relaxed), self.sndbuf());
            return (if queued { POLLIN | POLLRDNORM } else { 0 })
                | if writable { POLLOUT | POLLWRNORM } else { 0 }
                | shut_bits;
        }
        if self.is_listening() {
            return if self.queue.lock().is_empty() {
                0
            } else {
                crate::abi::poll::POLLIN | crate::abi::poll::POLLRDNORM
            };
        }
        match self.stream() {
            Ok(s) => s.poll_events(self.sndbuf()),
            Err(_) => POLLOUT | POLLWRNORM | POLLHUP | shut_bits,
        }
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

    /// SO_RCVTIMEO and SO_SNDTIMEO.
    fn io_timeout(&self, write: bool) -> Option<std::time::Duration> {
        crate::fs::sockopt::io_timeout(&self.timeouts, write)
    }

    fn set_signal_owner(&self, urgent: Option<UrgentSignal>) {
        *self.owner.lock() = urgent;
    }

    /// FIONREAD (SIOCINQ): the unread bytes of a stream or seqpacket
    /// socket, the next datagram's size, EINVAL on a listening socket;
    /// SIOCATMARK: a stream's next read starts at the urgent mark
    /// (EOPNOTSUPP on other types), as Linux's unix_ioctl; SIOCOUTQ
    /// (TIOCOUTQ): the data the socket sent that was not read yet (Linux
    /// counts its buffers' sizes). Any socket answers the
    /// interface ioctls (glibc asks a Unix one).
    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        if req == crate::abi::ioctl::SIOCOUTQ {
            let n = match &self.dgram {
                Some(d) => d.sent.data.load(Ordering::Relaxed),
                None => self.stream().map_or(0, |s| s.unsent()),
            };
            ctx.mm().copy_out(arg, &i32::try_from(n).unwrap_or(i32::MAX).to_le_bytes())?;
            return Ok(0);
        }
        if req == crate::abi::ioctl::SIOCATMARK {
            if self.ty != SockType::Stream {
                return Err(Errno::EOPNOTSUPP);
            }
            let at = self.at_mark();
            ctx.mm().copy_out(arg, &i32::from(at).to_le_bytes())?;
            return Ok(0);
        }
        if req != crate::abi::ioctl::FIONREAD {
            return super::netdev::ioctl(ctx.mm(), req, arg);
        }
        if self.is_listening() {
            return Err(Errno::EINVAL);
        }
        let n = match &self.dgram {
            Some(d) => d.inbox.0.data_len(false),
            None => self.stream().map_or(0, |s| s.unread()),
        };
        ctx.mm().copy_out(arg, &i32::try_from(n).unwrap_or(i32::MAX).to_le_bytes())?;
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgram() -> Arc<UnixSocket> {
        UnixSocket::new(1, TimeSpec::default(), SockType::Dgram)
    }

    #[test]
    fn a_datagram_socket_keeps_one_entry_on_its_destination_however_often_it_connects() {
        let (a, b, c) = (dgram(), dgram(), dgram());
        let base = b.inbox_entries();
        for _ in 0..1000 {
            c.dgram_connect(&a).unwrap();
            c.dgram_connect(&b).unwrap();
        }
        assert_eq!(b.inbox_entries(), base + 1);
        assert_eq!(a.inbox_entries(), base);
        c.dgram_disconnect().unwrap();
        assert_eq!(b.inbox_entries(), base);
        c.dgram_connect(&b).unwrap();
        drop(c);
        assert_eq!(b.inbox_entries(), base);
    }

    fn send(end: &UnixStream, n: usize, sndbuf: usize) -> Result<usize, Errno> {
        end.send_rights(&vec![7u8; n], &mut None, SenderCred { cred: NO_PEER, attach: false }, false, sndbuf)
    }

    fn recv(end: &UnixStream, n: usize) -> usize {
        end.recv_rights(&mut vec![0u8; n], false, false, false).map_or(0, |g| g.len)
    }

    #[test]
    fn a_stream_writer_is_charged_its_unread_segments_against_its_send_buffer() {
        let (a, b) = UnixStream::pair((1, 2), TimeSpec::default(), (NO_PEER, NO_PEER));
        // Segments of at most half the buffer less 64 bytes, taken while
        // less than the buffer is charged: one past it at most.
        assert_eq!(send(&a, 10_000, 8192), Ok(2 * 4032));
        assert_eq!(send(&a, 1, 8192), Err(Errno::EAGAIN));
        assert_eq!(send(&a, 1, 20_000), Ok(1), "a larger buffer lets more in");
        // Part of the first segment read: its overhead stays charged.
        assert_eq!(recv(&b, 4000), 4000);
        let charged = 4065 + 3 * 768;
        assert_eq!(send(&a, 1, charged), Err(Errno::EAGAIN));
        assert_eq!(recv(&b, 32), 32);
        assert_eq!(send(&a, 1, charged), Ok(1), "a wholly read segment is released");
        let charged = 4034 + 3 * 768;
        assert_eq!(a.poll_events(4 * charged) & POLLOUT, POLLOUT);
        assert_eq!(a.poll_events(4 * charged - 1) & POLLOUT, 0, "writable at a quarter charged");
    }

    #[test]
    fn a_datagram_sender_is_charged_until_its_messages_are_read() {
        let (a, b) = UnixSocket::dgram_pair((1, 2), TimeSpec::default(), NO_PEER);
        let me = SenderCred { cred: NO_PEER, attach: false };
        let mut sent = 0;
        while a.send_msg(None, &[0u8; 50_000], &mut None, me).is_ok() {
            sent += 1;
        }
        assert_eq!(sent, 5, "sent while less than 212992 is charged");
        assert_eq!(a.poll_events() & POLLOUT, 0);
        assert!(b.recv_msg(&mut [0u8; 16], false).is_ok());
        assert!(a.send_msg(None, &[0u8; 50_000], &mut None, me).is_ok());
        let big = vec![0u8; 212_992 - 31];
        assert_eq!(a.send_msg(None, &big, &mut None, me).err(), Some(Errno::EMSGSIZE));
    }
}
