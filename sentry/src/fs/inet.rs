//! IP sockets: the file behind a descriptor for a netstack TCP or UDP
//! endpoint. The netstack never blocks; a blocking call here waits on the
//! endpoint's notifier queue, interruptibly, as any sentry wait does.

use crate::abi::Errno;
use crate::kernel::wait::{self, Waker};
use crate::mm::MemoryManager;
use crate::vfs::{FileOps, TimeSpec};
use husk_netstack::waiter::{Notifier, Queue};
use husk_netstack::{Error as NetError, TcpEndpoint, UdpEndpoint};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The netstack endpoint a socket is.
pub enum Endpoint {
    Tcp(Arc<TcpEndpoint>),
    Udp(Arc<UdpEndpoint>),
}

/// An AF_INET or AF_INET6 socket.
pub struct InetSocket {
    ino: u64,
    created: TimeSpec,
    pub endpoint: Endpoint,
    nonblock: AtomicBool,
    /// Options accepted without effect, reported back as they were set,
    /// by (level, name).
    pub stored: Mutex<HashMap<(i32, i32), Vec<u8>>>,
    /// SO_RCVTIMEO and SO_SNDTIMEO.
    pub timeouts: Mutex<(Option<Duration>, Option<Duration>)>,
}

/// The errno Linux returns for a netstack failure.
pub fn errno(e: NetError) -> Errno {
    match e {
        NetError::WouldBlock => Errno::EAGAIN,
        NetError::InProgress => Errno::EINPROGRESS,
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
    }
}

/// Wakes one blocked guest thread when the endpoint it waits on changes.
#[derive(Default)]
struct Wake {
    fired: Mutex<bool>,
    cond: Condvar,
}

impl Notifier for Wake {
    fn notify(&self) {
        *self.fired.lock() = true;
        self.cond.notify_all();
    }
}

/// Takes a notifier off its queue when the wait ends.
struct Registered<'a> {
    queue: &'a Queue,
    notifier: Arc<dyn Notifier>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.queue.unregister(&self.notifier);
    }
}

/// Runs `op` until it no longer would block: at once when `nonblock`,
/// else waiting on `queue` between tries, until `timeout` (then EAGAIN,
/// as SO_RCVTIMEO does) or a signal (ERESTARTSYS).
pub fn blocking<T>(
    queue: &Queue,
    nonblock: bool,
    timeout: Option<Duration>,
    mut op: impl FnMut() -> Result<T, NetError>,
) -> Result<T, Errno> {
    let first = op();
    if nonblock || !matches!(first, Err(NetError::WouldBlock)) {
        return first.map_err(errno);
    }
    let w = Arc::new(Wake::default());
    let notifier: Arc<dyn Notifier> = w.clone();
    queue.register(notifier.clone());
    let _registered = Registered { queue, notifier };
    let deadline = timeout.map(wait::deadline_in);
    loop {
        match op() {
            Err(NetError::WouldBlock) => {}
            r => return r.map_err(errno),
        }
        let mut fired = w.fired.lock();
        let w2 = w.clone();
        let wake: Waker = Arc::new(move || w2.notify());
        match wait::block_on(&mut fired, &w.cond, wake, deadline, |f| std::mem::replace(f, false)) {
            Ok(()) => {}
            Err(Errno::ETIMEDOUT) => return Err(Errno::EAGAIN),
            Err(e) => return Err(e),
        }
    }
}

/// Passes an endpoint's readiness changes on to the sandbox's pollers.
struct Pollers;

impl Notifier for Pollers {
    fn notify(&self) {
        wait::readiness_changed();
    }
}

impl InetSocket {
    pub fn new(ino: u64, created: TimeSpec, endpoint: Endpoint, nonblock: bool) -> Arc<InetSocket> {
        let pollers: Arc<dyn Notifier> = Arc::new(Pollers);
        match &endpoint {
            Endpoint::Tcp(t) => t.queue().register(pollers),
            Endpoint::Udp(u) => u.queue().register(pollers),
        }
        Arc::new(InetSocket {
            ino,
            created,
            endpoint,
            nonblock: AtomicBool::new(nonblock),
            stored: Mutex::default(),
            timeouts: Mutex::default(),
        })
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(Ordering::Relaxed)
    }

    pub fn queue(&self) -> &Queue {
        match &self.endpoint {
            Endpoint::Tcp(t) => t.queue(),
            Endpoint::Udp(u) => u.queue(),
        }
    }

    /// Receives into `buf` like recv(2): bytes copied, the whole datagram's
    /// length, and the sender of a datagram.
    pub fn recv(
        &self,
        buf: &mut [u8],
        dontwait: bool,
        peek: bool,
    ) -> Result<(usize, usize, Option<std::net::SocketAddr>), Errno> {
        let timeout = self.timeouts.lock().0;
        match &self.endpoint {
            Endpoint::Tcp(t) => blocking(t.queue(), dontwait, timeout, || t.recv(buf, peek)).map(|n| (n, n, None)),
            Endpoint::Udp(u) => {
                blocking(u.queue(), dontwait, timeout, || u.recv_from(buf, peek)).map(|d| (d.len, d.full, Some(d.from)))
            }
        }
    }

    /// Sends like sendto(2): a stream takes what fits, waiting for room
    /// when none does; a datagram goes whole to `to` or the peer.
    pub fn send(&self, buf: &[u8], dontwait: bool, to: Option<std::net::SocketAddr>) -> Result<usize, Errno> {
        let timeout = self.timeouts.lock().1;
        match &self.endpoint {
            Endpoint::Tcp(t) => blocking(t.queue(), dontwait, timeout, || t.send(buf)),
            Endpoint::Udp(u) => u.send_to(to, buf).map_err(errno),
        }
    }

    /// Whether EPIPE from this socket raises SIGPIPE (a stream's does).
    pub fn is_stream(&self) -> bool {
        matches!(self.endpoint, Endpoint::Tcp(_))
    }
}

super::anon::socket_node!(InetSocket);

impl FileOps for InetSocket {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.recv(buf, self.nonblocking(), false).map(|(n, _, _)| n)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send(buf, self.nonblocking(), None)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        match &self.endpoint {
            Endpoint::Tcp(t) => t.events(),
            Endpoint::Udp(u) => u.events(),
        }
    }

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), Ordering::Relaxed);
    }

    /// FIONREAD (SIOCINQ): bytes to read, or the next datagram's size;
    /// TIOCOUTQ (SIOCOUTQ): bytes sent but not yet read by the peer.
    fn ioctl(&self, mm: &MemoryManager, req: u64, arg: u64) -> Result<u64, Errno> {
        const FIONREAD: u64 = 0x541b;
        const SIOCOUTQ: u64 = 0x5411;
        let (inq, outq) = match &self.endpoint {
            Endpoint::Tcp(t) if t.is_listening() => return Err(Errno::EINVAL),
            Endpoint::Tcp(t) => t.queued(),
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
