//! The sandbox's way out: a thread left in the sandbox's outer network
//! namespace when the sentry moves into a namespace of its own, which
//! opens the host sockets the egress gateway carries guest connections
//! on. A socket stays in the namespace it was opened in, so every other
//! call on it can come from any sentry thread. The thread confines itself
//! first (the caller's `prepare`: an empty root of its own, no
//! capabilities) and is bound by the sentry's seccomp filter like every
//! other thread; it only ever makes `socket` calls (TCP, UDP, ICMP echo).
//! It also tells which addresses are the outer namespace's own, so that
//! none of them reaches the guest (`is_own`).

use crate::abi::Errno;
use nix::sys::socket::{socket, AddressFamily, SockFlag, SockProtocol, SockType};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc;

/// What kind of host socket to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Stream,
    Datagram,
    /// An ICMP (ICMPv6) echo socket: SOCK_DGRAM with IPPROTO_ICMP
    /// (IPPROTO_ICMPV6), which the outer namespace's
    /// `net.ipv4.ping_group_range` may refuse (EACCES).
    Ping,
}

struct Request {
    v6: bool,
    kind: Kind,
    reply: mpsc::SyncSender<Result<OwnedFd, Errno>>,
}

/// The handle of the socket-opening thread.
pub(crate) struct Outer {
    requests: Mutex<mpsc::Sender<Request>>,
    /// Addresses found to be (or not to be) the outer namespace's own.
    own: Mutex<HashMap<IpAddr, bool>>,
}

/// The most answers `Outer::is_own` keeps (then it starts afresh).
const OWN_KEPT: usize = 256;

fn open(v6: bool, kind: Kind) -> Result<OwnedFd, Errno> {
    let family = if v6 { AddressFamily::Inet6 } else { AddressFamily::Inet };
    let (ty, protocol) = match kind {
        Kind::Stream => (SockType::Stream, None),
        Kind::Datagram => (SockType::Datagram, None),
        Kind::Ping if v6 => (SockType::Datagram, Some(SockProtocol::IcmpV6)),
        Kind::Ping => (SockType::Datagram, Some(SockProtocol::Icmp)),
    };
    socket(family, ty, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC, protocol).map_err(|e| Errno(e as i32))
}

impl Outer {
    /// Starts the thread in the calling thread's network namespace; it
    /// runs `prepare` first (confining itself) and this returns
    /// once that is done. Call it before the sentry leaves the namespace.
    pub(crate) fn start(prepare: impl FnOnce() -> Result<(), String> + Send + 'static) -> Result<Outer, String> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("egress-outer".into())
            .spawn(move || {
                let ready = prepare();
                let ok = ready.is_ok();
                let _ = ready_tx.send(ready);
                if ok {
                    for r in rx {
                        let _ = r.reply.send(open(r.v6, r.kind));
                    }
                }
            })
            .map_err(|e| format!("starting the egress thread: {e}"))?;
        ready_rx.recv().map_err(|_| "the egress thread ended".to_string())??;
        Ok(Outer { requests: Mutex::new(tx), own: Mutex::default() })
    }

    /// Whether `ip` is the outer namespace's own: its loopback, the
    /// unspecified address, or an address a socket there can bind (one
    /// of its interfaces'). When the answer cannot be had (no socket),
    /// it is taken to be: the caller hides such addresses.
    pub fn is_own(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        if ip.is_loopback() || ip.is_unspecified() {
            return true;
        }
        if let Some(&own) = self.own.lock().get(&ip) {
            return own;
        }
        let own = match self.socket(ip.is_ipv6(), Kind::Datagram) {
            Ok(fd) => crate::host::socket::bind(fd.as_fd(), SocketAddr::new(ip, 0)) != Err(Errno::EADDRNOTAVAIL),
            Err(_) => true,
        };
        let mut known = self.own.lock();
        if known.len() >= OWN_KEPT {
            known.clear();
        }
        known.insert(ip, own);
        own
    }

    /// A new non-blocking, close-on-exec host socket in the outer
    /// namespace: IPv6 or IPv4, stream, datagram or ICMP echo.
    pub(crate) fn socket(&self, v6: bool, kind: Kind) -> Result<OwnedFd, Errno> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.requests.lock().send(Request { v6, kind, reply }).map_err(|_| Errno::ENETUNREACH)?;
        answer.recv().map_err(|_| Errno::ENETUNREACH)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_thread_opens_sockets_of_each_kind_after_preparing() {
        let outer = Outer::start(|| Ok(())).unwrap();
        let s = outer.socket(false, Kind::Stream).unwrap();
        let flags = nix::fcntl::fcntl(s.as_raw_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        assert_ne!(flags & libc::O_NONBLOCK, 0);
        outer.socket(true, Kind::Datagram).unwrap();
        assert!(Outer::start(|| Err("no".into())).is_err(), "a failed preparation is reported");
    }

    #[test]
    fn own_addresses_are_those_a_socket_there_can_bind() {
        let outer = Outer::start(|| Ok(())).unwrap();
        for own in ["127.0.0.1", "127.9.9.9", "0.0.0.0", "::1", "::ffff:127.0.0.1"] {
            assert!(outer.is_own(own.parse().unwrap()), "{own}");
        }
        // The benchmarking range is nobody's here (the tests never give it
        // to the namespace they run in).
        for other in ["198.18.255.254", "2001:2::fe"] {
            assert!(!outer.is_own(other.parse().unwrap()), "{other}");
            assert!(!outer.is_own(other.parse().unwrap()), "{other}, known");
        }
    }
}
