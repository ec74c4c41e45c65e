//! The egress gateway's side in the files (ARCHITECTURE.md §5): the
//! sandbox's policy and its way out, and the host connection a guest IP
//! socket is carried on once the policy lets it leave. The guest keeps
//! its own socket file (`inet.rs`); the host descriptor never reaches it.
//! Readiness comes from the host socket through the host-descriptor
//! notifier, so a guest waits for it as for any file.

use crate::abi::ioctl::FIONREAD;
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRNORM};
use crate::abi::socket::{
    IPPROTO_TCP, SOL_SOCKET, SO_KEEPALIVE, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_NODELAY,
};
use crate::abi::Errno;
use crate::host::outer::{Kind, Outer};
use crate::host::{fd as host_fd, socket as host};
use crate::waiter::Queue;
use husk_netstack::dns::Resolver;
use husk_netstack::egress::{Denial, Host, Policy, Rule, Verdict};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The int options a carried connection passes on to its host socket
/// (set before the connect, they are applied when it goes out); the
/// sentry's seccomp filter allows setting exactly these.
pub const FORWARDED_OPTIONS: &[(i32, i32)] = &[
    (SOL_SOCKET, SO_KEEPALIVE),
    (IPPROTO_TCP, TCP_NODELAY),
    (IPPROTO_TCP, TCP_KEEPIDLE),
    (IPPROTO_TCP, TCP_KEEPINTVL),
    (IPPROTO_TCP, TCP_KEEPCNT),
];

/// The ports DNS servers answer on (53 over UDP and TCP, DNS over TLS
/// on 853): only the sandbox's resolver may be asked, unless an address
/// rule names the server.
const DNS_PORTS: [u16; 2] = [53, 853];

/// A sandbox's egress gateway: what may leave, the resolver that knows
/// which addresses allowed names stand for, and the thread that opens host
/// sockets in the outer network namespace.
pub struct Gateway {
    policy: Policy,
    resolver: Arc<Resolver>,
    outer: Arc<Outer>,
}

impl Gateway {
    pub fn new(policy: Policy, resolver: Resolver, outer: Outer) -> Gateway {
        Gateway { policy, resolver: Arc::new(resolver), outer: Arc::new(outer) }
    }

    /// The verdict on a connection or datagram to `dest`: allowed when an
    /// address rule allows it, or when no rule denies it and it is an
    /// address an allowed name resolved to whose rule opens the port. The
    /// reserved ranges and deny rules win over names; a DNS server other
    /// than the sandbox's resolver needs an address rule of its own (`*`
    /// is not one), so DNS cannot carry data past the resolver.
    pub fn check(&self, dest: SocketAddr) -> Verdict {
        self.decide(dest).0
    }

    /// [`Gateway::check`], with the allowed name the address came from
    /// when that is what lets it through.
    pub fn decide(&self, dest: SocketAddr) -> (Verdict, Option<String>) {
        let verdict = self.policy.check(dest);
        let dns = DNS_PORTS.contains(&dest.port());
        match &verdict {
            Verdict::Allowed { .. } if dns => match self.address_rule_for(dest) {
                Some(rule) => (Verdict::Allowed { rule }, None),
                None => (Verdict::Denied(Denial::NoAllowRule), None),
            },
            Verdict::Denied(Denial::NoAllowRule) if !dns => {
                let now = Instant::now();
                let learned = |ip| self.resolver.name_allowing(ip, dest.port(), now);
                match learned(dest.ip()).or_else(|| learned(husk_netstack::egress::canonical(dest.ip()))) {
                    Some((name, rule)) => (Verdict::Allowed { rule: rule.to_string() }, Some(name)),
                    None => (verdict, None),
                }
            }
            _ => (verdict, None),
        }
    }

    /// The first address rule (not `*`) that allows `dest`, whose verdict
    /// the policy already found allowed.
    fn address_rule_for(&self, dest: SocketAddr) -> Option<String> {
        let ip = husk_netstack::egress::canonical(dest.ip());
        let names_it = |r: &&Rule| matches!(r.host, Host::Net(_)) && r.covers_addr(ip) && r.covers_port(dest.port());
        self.policy.allow_rules().iter().find(names_it).map(|r| r.text.clone())
    }

    /// The sandbox's resolver.
    pub fn resolver(&self) -> &Arc<Resolver> {
        &self.resolver
    }

    /// The thread that opens host sockets in the outer namespace.
    pub fn outer(&self) -> &Arc<Outer> {
        &self.outer
    }

    /// A new host socket in the outer namespace, IPv6 or IPv4.
    pub fn open(&self, v6: bool, kind: Kind) -> Result<OwnedFd, Errno> {
        self.outer.socket(v6, kind)
    }
}

/// The kernel extension (`Kernel::ext`) that holds the sandbox's gateway;
/// without one (`--network none`) nothing leaves the sandbox and every
/// other destination stays unreachable.
#[derive(Default)]
pub struct Egress(OnceLock<Arc<Gateway>>);

impl Egress {
    /// Installs the gateway; the first call wins.
    pub fn install(&self, g: Gateway) -> bool {
        self.0.set(Arc::new(g)).is_ok()
    }

    pub fn gateway(&self) -> Option<&Arc<Gateway>> {
        self.0.get()
    }
}

/// A guest connection carried on a host socket of the outer namespace:
/// a stream, or the datagrams a guest UDP socket sends out of the
/// sandbox (its loopback datagrams stay in the netstack).
pub struct HostConn {
    fd: OwnedFd,
    /// A datagram socket connected outside: sends without an address
    /// go there.
    connected: AtomicBool,
}

/// What the host poll is asked for (ERR and HUP come unasked).
const HOST_EVENTS: u32 = POLLIN | POLLOUT | POLLRDHUP | POLLRDNORM | POLLWRNORM;

impl HostConn {
    /// Carries a connection on `fd`; `queue` hears of its readiness.
    pub fn new(fd: OwnedFd, queue: &Arc<Queue>) -> HostConn {
        if !crate::waiter::host::watch(fd.as_raw_fd(), queue) {
            log::warn!("the host-descriptor notifier cannot watch an egress socket");
        }
        HostConn { fd, connected: AtomicBool::new(false) }
    }

    /// The host socket's readiness now, as poll bits.
    pub fn events(&self) -> u32 {
        let ask = i16::try_from(HOST_EVENTS).unwrap_or(0);
        match host_fd::poll_now(self.fd.as_fd(), ask) {
            Ok(r) => u32::from(u16::from_ne_bytes(r.to_ne_bytes())),
            Err(_) => POLLERR,
        }
    }

    /// connect(2) on the host socket (EINPROGRESS, EALREADY, EISCONN …
    /// as the host says).
    pub fn connect(&self, to: SocketAddr) -> Result<(), Errno> {
        host::connect(self.fd.as_fd(), to)
    }

    /// connect(2) of a datagram socket: sends without an address go to `to`.
    pub fn connect_datagrams(&self, to: SocketAddr) -> Result<(), Errno> {
        host::connect(self.fd.as_fd(), to)?;
        self.connected.store(true, Ordering::Release);
        Ok(())
    }

    /// Whether a datagram socket was connected outside.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    pub fn send_to(&self, buf: &[u8], to: SocketAddr) -> Result<usize, Errno> {
        host::send_to(self.fd.as_fd(), buf, to)
    }

    /// One datagram: bytes copied, its whole length, its sender.
    pub fn recv_from(&self, buf: &mut [u8], peek: bool) -> Result<(usize, usize, Option<SocketAddr>), Errno> {
        host::recv_from(self.fd.as_fd(), buf, peek)
    }

    /// A started connect's outcome: EAGAIN while it is under way.
    pub fn connected(&self) -> Result<(), Errno> {
        if self.events() & (POLLOUT | POLLERR | POLLHUP) == 0 {
            return Err(Errno::EAGAIN);
        }
        match self.take_error()? {
            0 => Ok(()),
            e => Err(Errno(e)),
        }
    }

    pub fn send(&self, buf: &[u8]) -> Result<usize, Errno> {
        host::send(self.fd.as_fd(), buf)
    }

    pub fn recv(&self, buf: &mut [u8], peek: bool) -> Result<usize, Errno> {
        host::recv(self.fd.as_fd(), buf, peek)
    }

    pub fn shutdown(&self, read: bool, write: bool) -> Result<(), Errno> {
        host::shutdown(self.fd.as_fd(), read, write)
    }

    /// The real peer.
    pub fn peer(&self) -> Result<SocketAddr, Errno> {
        host::peer(self.fd.as_fd())
    }

    /// The host socket's own address (its port is the connection's).
    pub fn local(&self) -> Result<SocketAddr, Errno> {
        host::local(self.fd.as_fd())
    }

    /// SO_ERROR, cleared.
    pub fn take_error(&self) -> Result<i32, Errno> {
        host::take_error(self.fd.as_fd())
    }

    /// An int option the host socket honors (TCP_NODELAY, SO_KEEPALIVE …).
    pub fn set_option(&self, level: i32, name: i32, value: i32) -> Result<(), Errno> {
        host::set_int_option(self.fd.as_fd(), level, name, value)
    }

    /// FIONREAD: bytes waiting to be read.
    pub fn readable_bytes(&self) -> Result<i32, Errno> {
        let mut n = [0u8; 4];
        host_fd::tty_ioctl(self.fd.as_fd(), FIONREAD, &mut n)?;
        Ok(i32::from_le_bytes(n))
    }
}

impl Drop for HostConn {
    fn drop(&mut self) {
        crate::waiter::host::unwatch(self.fd.as_raw_fd());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use husk_netstack::dns::{Config, NamePolicy, Proto, Transport, TransportError};

    /// An upstream that answers every A query with 198.18.0.2.
    struct Upstream;

    impl Transport for Upstream {
        fn exchange(&self, _: SocketAddr, _: Proto, query: &[u8], _: Instant) -> Result<Vec<u8>, TransportError> {
            let mut end = 12;
            while query[end] != 0 {
                end += usize::from(query[end]) + 1;
            }
            let question = &query[12..end + 5];
            let mut reply = query[..2].to_vec();
            reply.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0]);
            reply.extend_from_slice(question);
            reply.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 2]);
            Ok(reply)
        }
    }

    /// A query for `name`'s A record.
    fn query(name: &str) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name.split('.') {
            q.push(u8::try_from(label.len()).unwrap());
            q.extend_from_slice(label.as_bytes());
        }
        q.extend_from_slice(&[0, 0, 1, 0, 1]);
        q
    }

    fn gateway(allow: &[&str]) -> Gateway {
        let policy = Policy::parse(allow, &["198.18.0.66"]).unwrap();
        let names = NamePolicy::from_rules(allow.iter().copied(), []).unwrap();
        let resolver = Resolver::new(names, vec!["192.0.2.53:53".parse().unwrap()], Config::default());
        Gateway::new(policy, resolver, Outer::start(|| Ok(())).unwrap())
    }

    fn allowed(g: &Gateway, dest: &str) -> bool {
        g.check(dest.parse().unwrap()).is_allowed()
    }

    #[test]
    fn an_address_is_allowed_once_an_allowed_name_resolved_to_it_and_on_its_ports_only() {
        let g = gateway(&["api.test:8080"]);
        assert!(!allowed(&g, "198.18.0.2:8080"), "not before the name was resolved");
        let reply = g.resolver().resolve(&query("api.test"), Proto::Udp, &Upstream, &Instant::now);
        assert!(reply.message.is_some(), "{:?}", reply.record);
        assert_eq!(
            g.decide("198.18.0.2:8080".parse().unwrap()),
            (Verdict::Allowed { rule: "api.test:8080".into() }, Some("api.test".into()))
        );
        assert!(allowed(&g, "[::ffff:198.18.0.2]:8080"), "its v4-mapped spelling too");
        assert!(!allowed(&g, "198.18.0.2:8081"), "a port the name's rule does not open");
        assert!(!allowed(&g, "198.18.0.3:8080"), "an address the name did not resolve to");
        assert!(!allowed(&g, "198.18.0.2:53"), "DNS on an allowed name's host");
    }

    #[test]
    fn other_dns_servers_need_an_address_rule() {
        let g = gateway(&["*", "198.18.0.9:53"]);
        assert!(allowed(&g, "198.18.0.5:443"));
        for port in [53, 853] {
            assert!(!allowed(&g, &format!("198.18.0.5:{port}")), "{port} under *");
        }
        assert!(allowed(&g, "198.18.0.9:53"), "a server an address rule names");
        assert!(!allowed(&g, "198.18.0.66:443"), "deny rules still win");
    }
}
