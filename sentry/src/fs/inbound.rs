//! Connections into the sandbox (ARCHITECTURE.md §5): a guest listener
//! is reachable from the outer network namespace through a host listener
//! the sentry holds there. Each connection the host listener accepts is
//! handed to the guest's accept as a socket carried on that host
//! connection (`egress::HostConn`), so its bytes, half-close and
//! readiness are the host socket's own, as an outbound connection's are.
//!
//! Which guest listeners are reachable:
//! * `husk do --publish [HOSTIP:]HOSTPORT:GUESTPORT[/tcp]` (`Mode::Publish`):
//!   the host port is bound when the sandbox starts (a port in use is a
//!   start-up error) and listens only while a guest listener on GUESTPORT
//!   exists, so a connection to it with no guest listener is refused by
//!   the host kernel (RST), as Linux refuses a port nobody listens on;
//! * a container (`Mode::Mirror`): every guest listener on the wildcard
//!   or eth0 address gets a host listener on the same port of the
//!   container's network namespace, which is where Docker's `-p` sends
//!   (DNAT to the container's address), as under runc.
//!
//! A guest listener on loopback is never reachable from outside.

use crate::abi::poll::{POLLIN, POLLRDNORM};
use crate::abi::Errno;
use crate::fs::egress::Lease;
use crate::host::outer::{Kind, Outer};
use crate::host::{fd as host_fd, socket as host};
use crate::waiter::Queue;
use husk_netstack::iface::Uplink;
use parking_lot::Mutex;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

/// One `--publish` mapping: the host address and port the sentry listens
/// on, and the guest port it hands connections to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Publish {
    pub host: SocketAddr,
    pub guest_port: u16,
}

fn port(text: &str, what: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!("{what} {text:?} is not a port (1 to 65535)")),
    }
}

impl Publish {
    /// Parses `[HOSTIP:]HOSTPORT:GUESTPORT[/tcp]` (an IPv6 HOSTIP in
    /// brackets); without HOSTIP the host side is every IPv4 address of
    /// the outer namespace.
    pub fn parse(token: &str) -> Result<Publish, String> {
        let body = match token.split_once('/') {
            None => token,
            Some((body, "tcp")) => body,
            Some((_, proto)) => return Err(format!("protocol {proto:?} is not supported (only tcp)")),
        };
        let (ip, ports) = if let Some(rest) = body.strip_prefix('[') {
            let (ip, ports) = rest.split_once("]:").ok_or("an IPv6 address in brackets wants :HOSTPORT:GUESTPORT")?;
            let ip = ip.parse::<Ipv6Addr>().map_err(|_| format!("{ip:?} is not an IPv6 address"))?;
            (IpAddr::V6(ip), ports)
        } else {
            match body.split(':').collect::<Vec<_>>()[..] {
                [_, _] => (IpAddr::V4(Ipv4Addr::UNSPECIFIED), body),
                [ip, h, g] => {
                    let ip = ip.parse::<Ipv4Addr>().map_err(|_| format!("{ip:?} is not an IPv4 address"))?;
                    (IpAddr::V4(ip), &body[body.len() - h.len() - g.len() - 1..])
                }
                _ => return Err("want [HOSTIP:]HOSTPORT:GUESTPORT[/tcp]".into()),
            }
        };
        let (h, g) = ports.split_once(':').ok_or("want HOSTPORT:GUESTPORT")?;
        Ok(Publish { host: SocketAddr::new(ip, port(h, "host port")?), guest_port: port(g, "guest port")? })
    }
}

impl std::fmt::Display for Publish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.guest_port)
    }
}

/// Which guest listeners the outer namespace reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `husk do --publish`: these mappings only.
    Publish(Vec<Publish>),
    /// A container: every port a guest listens on outside loopback.
    Mirror,
}

/// A sandbox's inbound side: its mode and, for `--publish`, the host
/// sockets bound at start that no guest listener holds now.
pub(crate) struct Inbound {
    mode: Mode,
    idle: Mutex<Vec<Option<OwnedFd>>>,
}

/// Where a host listener came from: `--publish`'s table (returned to it,
/// no longer listening, when the guest listener closes) or opened for
/// one guest listener (closed with it).
enum Origin {
    Published(Arc<Inbound>, usize),
    /// Its place in the sandbox's budget of host sockets.
    Mirrored {
        _lease: Lease,
    },
}

/// A host listener in the outer namespace that feeds one guest listener.
pub(crate) struct Listener {
    fd: Option<OwnedFd>,
    origin: Origin,
    /// What the net.connect of a connection through it names as its rule.
    pub rule: String,
}

impl Inbound {
    /// The inbound side of `mode`; `--publish`'s host ports are bound now
    /// (in the outer namespace, through `outer`), so that a port another
    /// process holds fails the start naming the mapping.
    pub(crate) fn new(mode: Mode, outer: &Outer) -> Result<Arc<Inbound>, String> {
        let mut idle = Vec::new();
        if let Mode::Publish(list) = &mode {
            for p in list {
                let fail = |e: Errno| format!("--publish {p}: {}", std::io::Error::from_raw_os_error(e.0));
                let fd = outer.socket(p.host.is_ipv6(), Kind::Stream).map_err(fail)?;
                host::set_int_option(fd.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).map_err(fail)?;
                host::bind(fd.as_fd(), p.host).map_err(fail)?;
                idle.push(Some(fd));
            }
        }
        Ok(Arc::new(Inbound { mode, idle: Mutex::new(idle) }))
    }

    /// The host listeners for a guest listener now bound to `local`:
    /// `--publish`'s sockets for its port, listening from now on, or in a
    /// container one new socket on the port, from `open` (the gateway's,
    /// which leases it). None for a listener on loopback or on an address
    /// that is not the sandbox's interface's. A host failure is logged
    /// and leaves the guest listener unreachable from outside, not failed.
    pub(crate) fn listen(
        self: &Arc<Inbound>,
        local: SocketAddr,
        queue: &Arc<Queue>,
        open: impl FnOnce(bool) -> Result<(OwnedFd, Lease), Errno>,
    ) -> Vec<Listener> {
        if !reachable(local.ip()) {
            return Vec::new();
        }
        let mut out = Vec::new();
        match &self.mode {
            Mode::Publish(list) => {
                let mut idle = self.idle.lock();
                for (i, p) in list.iter().enumerate().filter(|(_, p)| p.guest_port == local.port()) {
                    // An IPv6 peer has no place in an IPv4 socket's accept.
                    if p.host.is_ipv6() && local.is_ipv4() {
                        log::warn!("--publish {p}: the guest listener on {local} is IPv4 and takes no IPv6 peers");
                        continue;
                    }
                    let Some(fd) = idle.get_mut(i).and_then(Option::take) else { continue };
                    let l = Listener {
                        fd: Some(fd),
                        origin: Origin::Published(self.clone(), i),
                        rule: format!("--publish {p}"),
                    };
                    match l.fd.as_ref().map_or(Err(Errno::EBADF), |fd| host::listen(fd.as_fd())) {
                        Ok(()) => out.push(l.watched(queue)),
                        Err(e) => log::warn!("--publish {p}: listen: {e:?}"),
                    }
                }
            }
            Mode::Mirror => {
                let v6 = local.is_ipv6() && local.ip().to_canonical().is_ipv6();
                let any = if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
                let at = SocketAddr::new(any, local.port());
                let opened = open(v6).and_then(|(fd, lease)| {
                    host::set_int_option(fd.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
                    host::bind(fd.as_fd(), at)?;
                    host::listen(fd.as_fd())?;
                    Ok((fd, lease))
                });
                match opened {
                    Ok((fd, lease)) => {
                        let rule = format!("container port {}", local.port());
                        out.push(
                            Listener { fd: Some(fd), origin: Origin::Mirrored { _lease: lease }, rule }.watched(queue),
                        );
                    }
                    Err(e) => log::warn!("inbound: a host listener on {at} for the guest's: {e:?}"),
                }
            }
        }
        out
    }
}

/// Whether a guest listener on `ip` is one the outer namespace may reach:
/// the wildcard or the sandbox interface's own address.
fn reachable(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    ip.is_unspecified() || husk_netstack::iface::uplink().is_some_and(|u| ip == IpAddr::V4(u.addr))
}

/// The peer a guest sees for a connection from `peer` outside, as
/// Docker's userland proxy shows it: a peer on the outer namespace's
/// loopback, or one claiming the sandbox's own address, shows as the
/// uplink's gateway (10.0.2.2), so a host user never passes a guest's
/// "trust loopback" check; any other peer as it is. The net.connect
/// record keeps the real peer.
pub(crate) fn shown_peer(peer: SocketAddr, uplink: &Uplink) -> SocketAddr {
    let ip = peer.ip().to_canonical();
    if ip.is_loopback() || ip == IpAddr::V4(uplink.addr) {
        SocketAddr::new(IpAddr::V4(uplink.gateway), peer.port())
    } else {
        SocketAddr::new(ip, peer.port())
    }
}

impl Listener {
    fn watched(self, queue: &Arc<Queue>) -> Listener {
        if let Some(fd) = &self.fd {
            if !crate::waiter::host::watch(fd.as_raw_fd(), queue) {
                log::warn!("the host-descriptor notifier cannot watch an inbound listener");
            }
        }
        self
    }

    /// Whether a connection waits to be accepted.
    pub(crate) fn ready(&self) -> bool {
        let ask = i16::try_from(POLLIN).unwrap_or(0);
        self.fd.as_ref().is_some_and(|fd| host_fd::poll_now(fd.as_fd(), ask).is_ok_and(|r| r & ask != 0))
    }

    /// The next waiting connection and its peer; EAGAIN when none.
    pub(crate) fn accept(&self) -> Result<(OwnedFd, SocketAddr), Errno> {
        host::accept(self.fd.as_ref().ok_or(Errno::EAGAIN)?.as_fd())
    }
}

/// What a listening guest socket's poll adds for its host listeners.
pub(crate) fn events(listeners: &[Listener]) -> u32 {
    if listeners.iter().any(Listener::ready) {
        POLLIN | POLLRDNORM
    } else {
        0
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        crate::waiter::host::unwatch(fd.as_raw_fd());
        if let Origin::Published(inbound, i) = &self.origin {
            // connect(AF_UNSPEC) takes a listener back to a bound, closed
            // socket (tcp_disconnect): the connections it queued are
            // reset and new ones refused until a guest listens again.
            match host::disconnect(fd.as_fd()) {
                Ok(()) => {
                    if let Some(slot) = inbound.idle.lock().get_mut(*i) {
                        *slot = Some(fd);
                    }
                }
                Err(e) => {
                    log::warn!("{}: stopping the host listener: {e:?}; the port is no longer published", self.rule)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(host: &str, guest: u16) -> Publish {
        Publish { host: host.parse().unwrap(), guest_port: guest }
    }

    #[test]
    fn publish_tokens_parse_as_docker_writes_them() {
        assert_eq!(Publish::parse("8080:80"), Ok(p("0.0.0.0:8080", 80)));
        assert_eq!(Publish::parse("8080:80/tcp"), Ok(p("0.0.0.0:8080", 80)));
        assert_eq!(Publish::parse("127.0.0.1:8080:80"), Ok(p("127.0.0.1:8080", 80)));
        assert_eq!(Publish::parse("[::1]:8080:80/tcp"), Ok(p("[::1]:8080", 80)));
        for bad in [
            "",
            "80",
            "8080:",
            ":80",
            "0:80",
            "8080:0",
            "8080:65536",
            "x:80",
            "8080:80/udp",
            "8080:80/",
            "1.2.3:8080:80",
            "a:b:c:d",
            "[::1]8080:80",
            "[zz]:1:2",
            "1:2:3",
        ] {
            assert!(Publish::parse(bad).is_err(), "{bad:?} passed");
        }
    }

    #[test]
    fn loopback_and_own_address_peers_show_as_the_gateway() {
        let u = Uplink::SANDBOX;
        let shown = |peer: &str| shown_peer(peer.parse().unwrap(), &u).to_string();
        assert_eq!(shown("127.0.0.1:40000"), "10.0.2.2:40000");
        assert_eq!(shown("127.3.4.5:1"), "10.0.2.2:1");
        assert_eq!(shown("[::1]:40000"), "10.0.2.2:40000");
        assert_eq!(shown("[::ffff:127.0.0.1]:40000"), "10.0.2.2:40000");
        assert_eq!(shown("10.0.2.15:5"), "10.0.2.2:5");
        assert_eq!(shown("198.18.0.2:40000"), "198.18.0.2:40000");
        assert_eq!(shown("[::ffff:198.18.0.2]:7"), "198.18.0.2:7");
        assert_eq!(shown("[2001:2::2]:40000"), "[2001:2::2]:40000");
    }

    fn inbound(list: Vec<Publish>) -> Arc<Inbound> {
        Inbound::new(Mode::Publish(list), &Outer::start(|| Ok(())).unwrap()).unwrap()
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    fn no_open(_: bool) -> Result<(OwnedFd, Lease), Errno> {
        Err(Errno::EPERM)
    }

    #[test]
    fn a_published_port_listens_only_while_a_guest_listener_holds_it() {
        let port = free_port();
        let i = inbound(vec![p(&format!("127.0.0.1:{port}"), 80)]);
        let to = format!("127.0.0.1:{port}");
        assert!(std::net::TcpStream::connect(&to).is_err(), "refused with no guest listener");
        let q = Arc::new(Queue::default());
        assert!(i.listen("127.0.0.1:80".parse().unwrap(), &q, no_open).is_empty(), "loopback stays inside");
        assert!(i.listen("0.0.0.0:81".parse().unwrap(), &q, no_open).is_empty(), "another port");
        let ls = i.listen("0.0.0.0:80".parse().unwrap(), &q, no_open);
        assert_eq!(ls.len(), 1);
        assert_eq!(events(&ls), 0);
        assert_eq!(ls[0].accept().err(), Some(Errno::EAGAIN));
        let client = std::net::TcpStream::connect(&to).unwrap();
        let start = std::time::Instant::now();
        while events(&ls) == 0 && start.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::yield_now();
        }
        let (conn, peer) = ls[0].accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        drop(conn);
        assert!(i.listen("0.0.0.0:80".parse().unwrap(), &q, no_open).is_empty(), "one guest listener holds it");
        drop(ls);
        assert!(std::net::TcpStream::connect(&to).is_err(), "refused again once the guest listener closed");
        let again = i.listen("[::]:80".parse().unwrap(), &q, no_open);
        assert_eq!(again.len(), 1, "the port serves the next guest listener");
        std::net::TcpStream::connect(&to).unwrap();
    }

    #[test]
    fn an_ipv6_host_address_feeds_only_an_ipv6_guest_listener() {
        let port = free_port();
        let i = inbound(vec![p(&format!("[::1]:{port}"), 80)]);
        let q = Arc::new(Queue::default());
        assert!(i.listen("0.0.0.0:80".parse().unwrap(), &q, no_open).is_empty());
        assert_eq!(i.listen("[::]:80".parse().unwrap(), &q, no_open).len(), 1);
    }

    #[test]
    fn a_container_listener_gets_a_host_listener_on_its_port_for_as_long_as_it_listens() {
        use crate::fs::egress::{Gateway, Limits, OpenError};
        use husk_netstack::dns::{Config, NamePolicy, Resolver};
        let names = NamePolicy::from_rules(["*"], []).unwrap();
        let resolver = Resolver::new(names, Vec::new(), Config::default());
        let policy = husk_netstack::egress::Policy::parse(&["*"], &[] as &[&str]).unwrap();
        let limits = Limits { max_conns: 1, rate: None };
        let g = Gateway::new(policy, resolver, Outer::start(|| Ok(())).unwrap(), limits);
        let i = Inbound::new(Mode::Mirror, g.outer()).unwrap();
        let open = |v6| {
            let o = g.open(v6, Kind::Stream).map_err(|e| match e {
                OpenError::Limit(_) => Errno::EMFILE,
                OpenError::Errno(e) => e,
            })?;
            Ok((o.fd, o.lease))
        };
        let q = Arc::new(Queue::default());
        let port = free_port();
        let to = format!("127.0.0.1:{port}");
        assert!(i.listen(format!("127.0.0.1:{port}").parse().unwrap(), &q, open).is_empty(), "loopback stays inside");
        let ls = i.listen(format!("[::]:{port}").parse().unwrap(), &q, open);
        assert_eq!(ls.len(), 1);
        assert!(i.listen("0.0.0.0:1".parse().unwrap(), &q, open).is_empty(), "each listener is a host socket");
        std::net::TcpStream::connect(&to).unwrap();
        let start = std::time::Instant::now();
        while events(&ls) == 0 && start.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::yield_now();
        }
        assert_eq!(ls[0].accept().unwrap().1.ip().to_canonical().to_string(), "127.0.0.1", "a dual-stack listener");
        drop(ls);
        assert!(std::net::TcpStream::connect(&to).is_err(), "closed with the guest listener");
        assert_eq!(i.listen(format!("0.0.0.0:{port}").parse().unwrap(), &q, open).len(), 1, "its place returned");
    }

    #[test]
    fn a_host_port_in_use_fails_the_start_naming_the_mapping() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = held.local_addr().unwrap();
        let e = Inbound::new(Mode::Publish(vec![p(&at.to_string(), 80)]), &Outer::start(|| Ok(())).unwrap()).err();
        assert!(e.is_some_and(|e| e.starts_with(&format!("--publish {at}:80: "))));
    }
}
