//! DNS over TCP to the sandbox's resolver (glibc asks again over TCP when
//! an answer comes back truncated). A guest stream connect to 10.0.2.2:53
//! is joined to a netstack connection of the sentry's own, made through
//! a loopback listener that is closed again at once, so no guest can
//! reach it; a thread of its own reads the length-prefixed queries, has
//! the resolver answer each (forwarding allowed names upstream) and writes
//! the answers back, until the guest closes or goes idle. The guest's
//! getpeername shows that listener's loopback address, not 10.0.2.2:53.

use super::dns::{log_reply, HostTransport, Slot};
use super::egress::Gateway;
use crate::audit::AuditLog;
use husk_netstack::dns::Proto;
use husk_netstack::waiter::Notifier;
use husk_netstack::{Error, Family, Stack, TcpEndpoint};
use parking_lot::{Condvar, Mutex};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a connection may wait for the guest's next query.
const IDLE: Duration = Duration::from_secs(10);

/// Connects `guest` (connect(2) with `nonblock`, whose result this is) to
/// a resolver connection served on a thread of its own; its answers are
/// recorded in `audit` (net.dns).
pub(crate) fn connect(
    gateway: &Gateway,
    audit: Option<Arc<AuditLog>>,
    net: &Arc<Stack>,
    guest: &TcpEndpoint,
    nonblock: bool,
) -> Result<(), Error> {
    let listener = TcpEndpoint::new(net, Family::V4);
    listener.bind(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0))?;
    listener.listen(1)?;
    let connected = guest.connect(listener.local_addr(), nonblock);
    let server = listener.accept();
    listener.shutdown(true, true)?;
    let server = server?;
    let Some(slot) = Slot::take() else {
        log::debug!("dns: too many queries under way; a TCP connection closed");
        server.shutdown(true, true)?;
        return connected;
    };
    let resolver = gateway.resolver().clone();
    let transport = HostTransport::new(gateway.outer().clone());
    let spawned = std::thread::Builder::new().name("dns-tcp".into()).spawn(move || {
        let _slot = slot;
        let conn = Conn::new(server);
        while let Some(query) = conn.read_message() {
            let reply = resolver.resolve(&query, Proto::Tcp, &transport, &Instant::now);
            log_reply(audit.as_deref(), &reply);
            let Some(message) = reply.message else { break };
            let Ok(len) = u16::try_from(message.len()) else { break };
            let mut framed = len.to_be_bytes().to_vec();
            framed.extend_from_slice(&message);
            if !conn.write_all(&framed) {
                break;
            }
        }
    });
    if let Err(e) = spawned {
        log::warn!("dns: cannot start a TCP connection's thread: {e}");
    }
    connected
}

/// A notifier that wakes the connection's thread.
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

impl Wake {
    /// Waits for a notification until `deadline`; false when it passed.
    fn wait(&self, deadline: Instant) -> bool {
        let mut fired = self.fired.lock();
        if !*fired {
            self.cond.wait_until(&mut fired, deadline);
        }
        std::mem::replace(&mut *fired, false) || Instant::now() < deadline
    }
}

/// The resolver's end of one guest connection.
struct Conn {
    endpoint: Arc<TcpEndpoint>,
    wake: Arc<Wake>,
    registered: Arc<dyn Notifier>,
}

impl Conn {
    fn new(endpoint: Arc<TcpEndpoint>) -> Conn {
        let wake = Arc::new(Wake::default());
        let registered: Arc<dyn Notifier> = wake.clone();
        endpoint.queue().register(registered.clone());
        Conn { endpoint, wake, registered }
    }

    /// The next length-prefixed message; None at EOF, error or idle.
    fn read_message(&self) -> Option<Vec<u8>> {
        let deadline = Instant::now() + IDLE;
        let mut prefix = [0u8; 2];
        self.read_exact(&mut prefix, deadline)?;
        let mut message = vec![0u8; usize::from(u16::from_be_bytes(prefix))];
        self.read_exact(&mut message, deadline)?;
        Some(message)
    }

    fn read_exact(&self, buf: &mut [u8], deadline: Instant) -> Option<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.endpoint.recv(&mut buf[got..], false) {
                Ok(0) => return None,
                Ok(n) => got += n,
                Err(Error::WouldBlock) if self.wake.wait(deadline) => {}
                Err(_) => return None,
            }
        }
        Some(())
    }

    fn write_all(&self, buf: &[u8]) -> bool {
        let deadline = Instant::now() + IDLE;
        let mut sent = 0;
        while sent < buf.len() {
            match self.endpoint.send(&buf[sent..]) {
                Ok(n) => sent += n,
                Err(Error::WouldBlock) if self.wake.wait(deadline) => {}
                Err(_) => return false,
            }
        }
        true
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.endpoint.queue().unregister(&self.registered);
        let _ = self.endpoint.shutdown(true, true);
    }
}
