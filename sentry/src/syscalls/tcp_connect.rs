//! A TCP connection's start inside the sandbox: connect(2) waiting for a
//! listener whose accept queue is full (the SYN waits, as Linux's is
//! retransmitted), and what an accepted socket takes from its listener.

use super::block::wait_io;
use super::socket::nonblocking;
use crate::abi::{Errno, SysResult};
use crate::fs::inet::{errno, Endpoint, InetSocket};
use crate::vfs::{FileDescription, WRITE_EVENTS};
use crate::waiter::deadline_in;
use husk_netstack::{Error as NetError, TcpEndpoint};
use std::net::SocketAddr;

/// connect(2) of a TCP socket to `to` in the sandbox. A blocking connect
/// the listener cannot take yet waits until it does, is refused, or
/// SO_SNDTIMEO passes (EINPROGRESS, still connecting), as Linux's
/// inet_wait_for_connect.
pub(super) fn connect(f: &FileDescription, s: &InetSocket, t: &TcpEndpoint, to: SocketAddr) -> SysResult {
    let nonblock = nonblocking(f, 0);
    match t.connect(to, nonblock) {
        Ok(()) => Ok(0),
        Err(NetError::InProgress) if !nonblock => {
            let deadline = s.timeouts.lock().1.map(deadline_in);
            let done = || match t.connect(to, true) {
                Err(NetError::Already) => Err(Errno::EAGAIN),
                r => r.map_err(errno),
            };
            match wait_io(f, WRITE_EVENTS, false, deadline, done) {
                Ok(()) => Ok(0),
                Err(Errno::EAGAIN) => Err(Errno::EINPROGRESS),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(errno(e)),
    }
}

/// An accepted socket is a clone of its listener, as Linux's
/// sk_clone_lock makes it: the socket options (all but SO_PRIORITY,
/// which the connection's own packets set), the timeouts and the IP and
/// TCP options.
pub(super) fn inherit(listener: &InetSocket, sock: &InetSocket) {
    let mut v = listener.opts.get();
    v.priority = crate::fs::sockopt::Values::default().priority;
    let (linger, secs) = v.linger;
    let _ = sock.opts.update::<Errno>(|w| {
        *w = v;
        Ok(())
    });
    *sock.timeouts.lock() = *listener.timeouts.lock();
    *sock.stored.lock() = listener.stored.lock().clone();
    if let Endpoint::Tcp(t) = &sock.endpoint {
        t.set_reset_on_close(linger && secs == 0);
    }
}
