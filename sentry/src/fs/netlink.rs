//! Netlink sockets (NETLINK_ROUTE): requests go to the netstack's
//! read-only route answers, and their replies queue here as datagrams.

use crate::abi::Errno;
use crate::kernel::wait::{self, Waker};
use crate::vfs::{FileOps, TimeSpec};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// How many reply bytes may wait before further requests fail (ENOBUFS),
/// as a full receive buffer does in Linux.
const QUEUE_BYTES: usize = 1 << 20;

/// A NETLINK_ROUTE socket.
pub struct NetlinkSocket {
    ino: u64,
    created: TimeSpec,
    /// The port id (nl_pid) bound, 0 until bound.
    pub port: AtomicU32,
    replies: Arc<Replies>,
    nonblock: AtomicBool,
}

/// Reply datagrams waiting to be received.
#[derive(Default)]
struct Replies {
    queue: Mutex<VecDeque<Vec<u8>>>,
    arrived: Condvar,
}

impl NetlinkSocket {
    pub fn new(ino: u64, created: TimeSpec) -> Arc<NetlinkSocket> {
        Arc::new(NetlinkSocket {
            ino,
            created,
            port: AtomicU32::new(0),
            replies: Arc::default(),
            nonblock: AtomicBool::new(false),
        })
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    /// Sends a datagram of requests to the kernel; their replies queue.
    pub fn send(&self, data: &[u8]) -> Result<usize, Errno> {
        let port = self.port.load(Ordering::Relaxed);
        let replies = husk_netstack::netlink::route_requests(data, port);
        let mut q = self.replies.queue.lock();
        if q.iter().map(Vec::len).sum::<usize>() + replies.iter().map(Vec::len).sum::<usize>() > QUEUE_BYTES {
            return Err(Errno::ENOBUFS);
        }
        q.extend(replies);
        drop(q);
        self.replies.arrived.notify_all();
        crate::kernel::wait::readiness_changed();
        Ok(data.len())
    }

    /// Receives the next reply datagram into `buf` (with `peek` leaving
    /// it queued): (bytes copied, its whole length). Without replies it
    /// waits, unless `dontwait`.
    pub fn recv(&self, buf: &mut [u8], dontwait: bool, peek: bool) -> Result<(usize, usize), Errno> {
        let r = &self.replies;
        let mut q = r.queue.lock();
        if q.is_empty() {
            if dontwait {
                return Err(Errno::EAGAIN);
            }
            let me = r.clone();
            let wake: Waker = Arc::new(move || {
                let _g = me.queue.lock();
                me.arrived.notify_all();
            });
            wait::block_on(&mut q, &r.arrived, wake, None, |q| !q.is_empty())?;
        }
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
        self.recv(buf, self.nonblocking(), false).map(|(n, _)| n)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send(buf)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        use crate::vfs::{POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
        (if self.replies.queue.lock().is_empty() { 0 } else { POLLIN | POLLRDNORM }) | POLLOUT | POLLWRNORM
    }

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), Ordering::Relaxed);
    }

    fn ioctl(&self, mm: &crate::mm::MemoryManager, req: u64, arg: u64) -> Result<u64, Errno> {
        super::netdev::ioctl(mm, req, arg)
    }
}
