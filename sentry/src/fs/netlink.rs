//! Netlink sockets (NETLINK_ROUTE): requests go to the netstack's
//! read-only route answers, and their replies queue here as datagrams.

use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::vfs::{FileOps, IoctlContext, TimeSpec};
use crate::waiter::{Entry, Queue};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// How many reply bytes may wait before further requests fail (ENOBUFS),
/// as a full receive buffer does in Linux.
const QUEUE_BYTES: usize = 1 << 20;

/// A NETLINK_ROUTE socket.
pub(crate) struct NetlinkSocket {
    ino: u64,
    created: TimeSpec,
    /// The port id (nl_pid) bound, 0 until bound.
    pub port: AtomicU32,
    /// Reply datagrams waiting to be received.
    replies: Mutex<VecDeque<Vec<u8>>>,
    /// Receivers wait here for replies.
    events: Queue,
    /// SOCK_RAW or SOCK_DGRAM, as created.
    pub ty: i32,
    /// SO_RCVTIMEO and SO_SNDTIMEO (None: none).
    pub timeouts: Mutex<(Option<std::time::Duration>, Option<std::time::Duration>)>,
    /// The other socket-level options.
    pub opts: crate::fs::sockopt::SockOpts,
}

impl NetlinkSocket {
    pub(crate) fn new(ino: u64, created: TimeSpec, ty: i32) -> Arc<NetlinkSocket> {
        Arc::new(NetlinkSocket {
            ino,
            created,
            port: AtomicU32::new(0),
            replies: Mutex::default(),
            events: Queue::default(),
            ty,
            timeouts: Mutex::default(),
            opts: crate::fs::sockopt::SockOpts::default(),
        })
    }

    /// Sends a datagram of requests to the kernel; their replies queue.
    pub(crate) fn send(&self, data: &[u8]) -> Result<usize, Errno> {
        let port = self.port.load(Ordering::Relaxed);
        let replies = husk_netstack::netlink::route_requests(data, port);
        let mut q = self.replies.lock();
        if q.iter().map(Vec::len).sum::<usize>() + replies.iter().map(Vec::len).sum::<usize>() > QUEUE_BYTES {
            return Err(Errno::ENOBUFS);
        }
        q.extend(replies);
        drop(q);
        self.events.notify(POLLIN | POLLRDNORM);
        Ok(data.len())
    }

    /// Receives the next reply datagram into `buf` (with `peek` leaving
    /// it queued): (bytes copied, its whole length); EAGAIN without
    /// replies.
    pub(crate) fn recv(&self, buf: &mut [u8], peek: bool) -> Result<(usize, usize), Errno> {
        let mut q = self.replies.lock();
        let Some(front) = q.front() else { return Err(Errno::EAGAIN) };
        let full = front.len();
        let n = full.min(buf.len());
        buf[..n].copy_from_slice(&front[..n]);
        if !peek {
            q.pop_front();
        }
        Ok((n, full))
    }
}

super::anon::socket_node!(NetlinkSocket);

impl FileOps for NetlinkSocket {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.recv(buf, false).map(|(n, _)| n)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send(buf)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        use crate::abi::poll::{POLLOUT, POLLWRNORM};
        (if self.replies.lock().is_empty() { 0 } else { POLLIN | POLLRDNORM }) | POLLOUT | POLLWRNORM
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

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        super::netdev::ioctl(ctx.mm(), req, arg)
    }
}
