//! The ports of one protocol: which sockets hold which (address, port),
//! under Linux's rules for sharing them (SO_REUSEADDR, SO_REUSEPORT,
//! IPV6_V6ONLY), and which socket a packet to an address reaches.

use crate::Error;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The ephemeral ports (net.ipv4.ip_local_port_range), low port in the
/// high half, high port in the low half; Linux's default 32768-60999.
static LOCAL_PORT_RANGE: AtomicU32 = AtomicU32::new((32768 << 16) | 60999);

/// The ephemeral port range, both ends included.
pub fn local_port_range() -> (u16, u16) {
    let [a, b, c, d] = LOCAL_PORT_RANGE.load(Ordering::Relaxed).to_be_bytes();
    (u16::from_be_bytes([a, b]), u16::from_be_bytes([c, d]))
}

/// Sets the ephemeral port range (`lo <= hi`, checked by the caller).
pub fn set_local_port_range(lo: u16, hi: u16) {
    LOCAL_PORT_RANGE.store((u32::from(lo) << 16) | u32::from(hi), Ordering::Relaxed);
}

/// What a socket holds: an address (canonical; unspecified for every
/// address of its family) and how it shares it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binding {
    pub ip: IpAddr,
    /// An IPv6 socket bound to `::` without IPV6_V6ONLY also takes IPv4.
    pub dual: bool,
    pub reuse_addr: bool,
    pub reuse_port: bool,
    pub listening: bool,
    /// A connected UDP socket takes packets from its peer only.
    pub remote: Option<SocketAddr>,
}

impl Binding {
    /// Does the binding take packets from `from`? A socket connected to
    /// port 0 takes any port of its peer's address, as compute_score
    /// checks only a remote port that is set.
    fn takes_from(&self, from: SocketAddr) -> bool {
        self.remote.is_none_or(|r| r.ip() == from.ip() && (r.port() == 0 || r.port() == from.port()))
    }

    /// Does the binding take packets sent to `dest` (canonical)?
    fn covers(&self, dest: IpAddr) -> bool {
        if !self.ip.is_unspecified() {
            return self.ip == dest;
        }
        match self.ip {
            IpAddr::V4(_) => dest.is_ipv4(),
            IpAddr::V6(_) => dest.is_ipv6() || self.dual,
        }
    }

    fn overlaps(&self, o: &Binding) -> bool {
        match (self.ip.is_unspecified(), o.ip.is_unspecified()) {
            (false, false) => self.ip == o.ip,
            (true, false) => self.covers(o.ip),
            (false, true) => o.covers(self.ip),
            (true, true) => self.ip.is_ipv4() == o.ip.is_ipv4() || self.dual || o.dual,
        }
    }

    /// May `o` share the port of this (existing) binding although their
    /// addresses overlap? SO_REUSEADDR on both shares it unless this one
    /// listens (Linux's inet_bind_conflict looks at the existing socket's
    /// state only).
    fn may_share(&self, o: &Binding) -> bool {
        (self.reuse_port && o.reuse_port) || (self.reuse_addr && o.reuse_addr && !self.listening)
    }
}

/// Whether a closed socket's binding still holds its port (a TCP
/// connection in FIN_WAIT2 or TIME_WAIT).
pub(crate) type Lingers = Box<dyn Fn() -> bool + Send>;

struct Entry<E> {
    id: u64,
    binding: Binding,
    endpoint: Weak<E>,
    /// The socket is gone but its port stays held while this says so.
    lingers: Option<Lingers>,
}

impl<E> Entry<E> {
    fn held(&self) -> bool {
        self.lingers.as_ref().is_none_or(|f| f())
    }
}

/// The bindings of one protocol, by port.
pub(crate) struct PortTable<E> {
    ports: HashMap<u16, Vec<Entry<E>>>,
    next_id: u64,
    next_ephemeral: u16,
    /// Lingering holds, oldest first, with the time past which they are
    /// surely over: dropped from the table once that time passed.
    lingering: std::collections::VecDeque<(Instant, Hold)>,
}

impl<E> Default for PortTable<E> {
    fn default() -> Self {
        PortTable {
            ports: HashMap::new(),
            next_id: 1,
            next_ephemeral: local_port_range().0,
            lingering: std::collections::VecDeque::new(),
        }
    }
}

/// A socket's hold on a port: what `unbind` needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hold {
    pub port: u16,
    pub id: u64,
    pub ip: IpAddr,
}

impl Hold {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }
}

impl<E> PortTable<E> {
    fn conflicts(&self, port: u16, b: &Binding, except: u64) -> bool {
        self.ports.get(&port).is_some_and(|v| {
            v.iter().any(|e| e.id != except && e.binding.overlaps(b) && !e.binding.may_share(b) && e.held())
        })
    }

    /// Keeps a closed socket's port held while `lingers` says so, and at
    /// most until `until`.
    pub fn linger(&mut self, hold: Hold, until: Instant, lingers: Lingers) {
        if let Some(e) = self.ports.get_mut(&hold.port).and_then(|v| v.iter_mut().find(|e| e.id == hold.id)) {
            e.lingers = Some(lingers);
            self.lingering.push_back((until, hold));
        }
    }

    /// Drops the lingering holds that are over for sure.
    fn expire(&mut self) {
        let now = Instant::now();
        while let Some(&(until, hold)) = self.lingering.front() {
            if until > now {
                break;
            }
            self.lingering.pop_front();
            self.unbind(&hold);
        }
    }

    /// Binds `b` to `port`, or with port 0 to a free ephemeral port.
    pub fn bind(&mut self, port: u16, b: Binding, endpoint: Weak<E>) -> Result<Hold, Error> {
        self.expire();
        let port = if port != 0 {
            if self.conflicts(port, &b, 0) {
                return Err(Error::AddrInUse);
            }
            port
        } else {
            self.free_port(&b)?
        };
        let id = self.next_id;
        self.next_id += 1;
        self.ports.entry(port).or_default().push(Entry { id, binding: b, endpoint, lingers: None });
        Ok(Hold { port, id, ip: b.ip })
    }

    /// Whether a live connection other than `hold`'s already goes from
    /// `src` to `dest`: a second one of the same four addresses cannot be
    /// made (Linux's __inet_check_established).
    pub fn connected(&self, hold: &Hold, src: IpAddr, dest: SocketAddr) -> bool {
        self.ports.get(&hold.port).is_some_and(|v| {
            v.iter().any(|e| {
                e.id != hold.id && e.lingers.is_none() && e.binding.remote == Some(dest) && e.binding.covers(src)
            })
        })
    }

    /// Changes a held binding where no conflict can come of it (a TCP
    /// binding's peer; a listener stopping, whose connections share its
    /// port).
    pub fn set(&mut self, hold: &Hold, change: impl FnOnce(&mut Binding)) {
        if let Some(e) = self.ports.get_mut(&hold.port).and_then(|v| v.iter_mut().find(|e| e.id == hold.id)) {
            change(&mut e.binding);
        }
    }

    /// Adds `b` to `port` without checking for conflicts: a connection
    /// accepted on a listener's port shares it.
    pub fn attach(&mut self, port: u16, b: Binding, endpoint: Weak<E>) -> Hold {
        let id = self.next_id;
        self.next_id += 1;
        self.ports.entry(port).or_default().push(Entry { id, binding: b, endpoint, lingers: None });
        Hold { port, id, ip: b.ip }
    }

    fn free_port(&mut self, b: &Binding) -> Result<u16, Error> {
        let (lo, hi) = local_port_range();
        for _ in lo..=hi {
            let p = self.next_ephemeral.clamp(lo, hi);
            self.next_ephemeral = if p >= hi { lo } else { p + 1 };
            if !self.ports.get(&p).is_some_and(|v| v.iter().any(|e| e.binding.overlaps(b) && e.held())) {
                return Ok(p);
            }
        }
        Err(Error::AddrInUse)
    }

    pub fn unbind(&mut self, hold: &Hold) {
        if let Some(v) = self.ports.get_mut(&hold.port) {
            v.retain(|e| e.id != hold.id);
            if v.is_empty() {
                self.ports.remove(&hold.port);
            }
        }
    }

    /// Changes a held binding (listen, connect): EADDRINUSE if it would
    /// then conflict.
    pub fn update(&mut self, hold: &Hold, change: impl FnOnce(&mut Binding)) -> Result<(), Error> {
        let Some(mut b) =
            self.ports.get(&hold.port).and_then(|v| v.iter().find(|e| e.id == hold.id)).map(|e| e.binding)
        else {
            return Err(Error::Invalid);
        };
        change(&mut b);
        if self.conflicts(hold.port, &b, hold.id) {
            return Err(Error::AddrInUse);
        }
        if let Some(e) = self.ports.get_mut(&hold.port).and_then(|v| v.iter_mut().find(|e| e.id == hold.id)) {
            e.binding = b;
        }
        Ok(())
    }

    /// The live socket that a packet from `from` to `dest` (canonical,
    /// routed) reaches among those `wanted` accepts: a specific address
    /// before a wildcard, the latest bound first. When that one shares
    /// its port with SO_REUSEPORT, the flow's hash picks one of the group
    /// bound to the same address (Linux's reuseport_select_sock), so
    /// flows spread over the group and each stays with one socket.
    pub fn lookup(&self, dest: SocketAddr, from: SocketAddr, wanted: impl Fn(&Binding) -> bool) -> Option<Arc<E>> {
        let v = self.ports.get(&dest.port())?;
        let fits = |e: &&Entry<E>| e.binding.covers(dest.ip()) && e.binding.takes_from(from) && wanted(&e.binding);
        let exact = v.iter().rev().filter(fits).find(|e| !e.binding.ip.is_unspecified());
        let best = exact.or_else(|| v.iter().rev().find(fits))?;
        if !best.binding.reuse_port || best.binding.remote.is_some() {
            return best.endpoint.upgrade();
        }
        let group: Vec<&Entry<E>> = v
            .iter()
            .filter(fits)
            .filter(|e| e.binding.reuse_port && e.binding.remote.is_none() && e.binding.ip == best.binding.ip)
            .collect();
        let pick = usize::try_from(flow_hash(dest, from) % group.len() as u64).unwrap_or(0);
        group.get(pick).unwrap_or(&best).endpoint.upgrade()
    }

    /// Every live socket that a multicast datagram from `from` to the
    /// group `dest` (canonical) reaches: bound to the port and the group's
    /// address or the wildcard, and taking datagrams from `from`.
    pub fn lookup_all(&self, dest: SocketAddr, from: SocketAddr) -> Vec<Arc<E>> {
        let Some(v) = self.ports.get(&dest.port()) else { return Vec::new() };
        v.iter()
            .filter(|e| e.binding.covers(dest.ip()) && e.binding.takes_from(from))
            .filter_map(|e| e.endpoint.upgrade())
            .collect()
    }
}

/// A flow's hash over its addresses and ports (SipHash with fixed keys:
/// the same flow always hashes alike).
fn flow_hash(dest: SocketAddr, from: SocketAddr) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (dest, from).hash(&mut h);
    h.finish()
}

/// The options that decide how a socket shares its port (SO_REUSEADDR,
/// SO_REUSEPORT, IPV6_V6ONLY).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShareOpts {
    pub reuse_addr: bool,
    pub reuse_port: bool,
    pub v6only: bool,
}

/// A socket's local side: its hold on a port and how it shares it.
#[derive(Default)]
pub(crate) struct Local {
    pub hold: Option<Hold>,
    pub opts: ShareOpts,
    /// The address held was chosen by connect (the source address toward
    /// the peer), not bound: a disconnect forgets it, as Linux does for a
    /// socket without SOCK_BINDADDR_LOCK.
    pub chosen_ip: bool,
    /// The port was bound explicitly (bind with a port other than 0): a
    /// disconnect keeps it (Linux's SOCK_BINDPORT_LOCK).
    pub port_locked: bool,
    /// The address a socket was bound to when a disconnect gave its port
    /// back: the next implicit bind binds it again.
    pub released_ip: Option<IpAddr>,
}

impl Local {
    /// bind(2) to `addr` in `table` for a socket of family `f`.
    pub fn bind<E>(
        &mut self,
        table: &parking_lot::Mutex<PortTable<E>>,
        f: crate::Family,
        addr: SocketAddr,
        me: &Weak<E>,
    ) -> Result<Hold, Error> {
        if self.hold.is_some() {
            return Err(Error::Invalid);
        }
        let h = bind_to(table, f, self.opts, addr, me.clone())?;
        self.hold = Some(h);
        self.port_locked = addr.port() != 0;
        self.released_ip = None;
        Ok(h)
    }

    /// The port held, binding an ephemeral one first if there is none
    /// (connect, listen and send bind implicitly).
    pub fn hold_or_bind<E>(
        &mut self,
        table: &parking_lot::Mutex<PortTable<E>>,
        f: crate::Family,
        me: &Weak<E>,
    ) -> Result<Hold, Error> {
        match self.hold {
            Some(h) => Ok(h),
            None => self.bind(table, f, SocketAddr::new(self.released_ip.unwrap_or(f.any()), 0), me),
        }
    }

    /// Sets the sharing options; IPV6_V6ONLY changes only on an unbound
    /// IPv6 socket (EINVAL otherwise), as in Linux.
    pub fn set_opts(&mut self, f: crate::Family, opts: ShareOpts) -> Result<(), Error> {
        if opts.v6only != self.opts.v6only && (self.hold.is_some() || f == crate::Family::V4) {
            return Err(Error::Invalid);
        }
        self.opts = opts;
        Ok(())
    }

    /// Gives a socket bound to the unspecified address the address `ip`
    /// (canonical) that connect chose, with `remote` as its only peer, in
    /// `table` and in its hold. A socket bound to an address keeps it (as
    /// Linux keeps a bound or earlier chosen source address).
    pub fn choose_ip<E>(
        &mut self,
        table: &parking_lot::Mutex<PortTable<E>>,
        ip: IpAddr,
        remote: SocketAddr,
    ) -> Result<(), Error> {
        let Some(h) = self.hold.as_mut() else { return Err(Error::Invalid) };
        if !h.ip.is_unspecified() || ip.is_unspecified() {
            return table.lock().update(h, |b| b.remote = Some(remote));
        }
        table.lock().update(h, |b| {
            b.ip = ip;
            b.dual = false;
            b.remote = Some(remote);
        })?;
        h.ip = ip;
        self.chosen_ip = true;
        Ok(())
    }

    /// Dissolves a socket's association with its peer: it takes datagrams
    /// from anyone again and, when connect chose its address, is bound to
    /// the unspecified address of family `f` again.
    /// A port not bound explicitly goes back (getsockname shows port 0
    /// until the next implicit bind), as Linux unhashes such a socket.
    pub fn disconnect<E>(&mut self, table: &parking_lot::Mutex<PortTable<E>>, f: crate::Family) -> Result<(), Error> {
        if !self.port_locked {
            let bound = self.hold.map(|h| h.ip).filter(|ip| !self.chosen_ip && !ip.is_unspecified());
            self.release(table);
            self.released_ip = bound;
            return Ok(());
        }
        let Some(h) = self.hold.as_mut() else { return Ok(()) };
        let mut table = table.lock();
        if self.chosen_ip {
            let any = f.any();
            let dual = f == crate::Family::V6 && !self.opts.v6only;
            // (Should another socket have bound the port's unspecified
            // address meanwhile, this one keeps the address it had.)
            if table
                .update(h, |b| {
                    b.ip = any;
                    b.dual = dual;
                    b.remote = None;
                })
                .is_ok()
            {
                h.ip = any;
                self.chosen_ip = false;
                return Ok(());
            }
        }
        table.update(h, |b| b.remote = None)
    }

    /// The local address as a socket of family `f` shows it.
    pub fn addr(&self, f: crate::Family) -> SocketAddr {
        let unheld = || crate::addr::presented(f, SocketAddr::new(self.released_ip.unwrap_or(f.any()), 0));
        self.hold.map_or_else(unheld, |h| crate::addr::presented(f, h.addr()))
    }

    /// Gives the port back.
    pub fn release<E>(&mut self, table: &parking_lot::Mutex<PortTable<E>>) {
        self.chosen_ip = false;
        if let Some(h) = self.hold.take() {
            table.lock().unbind(&h);
        }
    }
}

/// Binds a socket of family `f` to `addr` in `table`: only the sandbox's
/// own addresses; port 0 picks an ephemeral port.
fn bind_to<E>(
    table: &parking_lot::Mutex<PortTable<E>>,
    f: crate::Family,
    opts: ShareOpts,
    addr: SocketAddr,
    endpoint: Weak<E>,
) -> Result<Hold, Error> {
    let ip = crate::addr::canonical(addr.ip());
    if f == crate::Family::V6 && opts.v6only && ip.is_ipv4() {
        return Err(Error::Invalid);
    }
    crate::addr::bindable(ip)?;
    let b = Binding {
        ip,
        dual: f == crate::Family::V6 && !opts.v6only && ip.is_unspecified(),
        reuse_addr: opts.reuse_addr,
        reuse_port: opts.reuse_port,
        listening: false,
        remote: None,
    };
    table.lock().bind(addr.port(), b, endpoint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn b(ip: IpAddr) -> Binding {
        Binding { ip, dual: false, reuse_addr: false, reuse_port: false, listening: false, remote: None }
    }

    const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const ANY4: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    const ANY6: IpAddr = IpAddr::V6(Ipv6Addr::UNSPECIFIED);

    #[test]
    fn overlapping_binds_conflict_unless_shared() {
        let mut t: PortTable<()> = PortTable::default();
        let e = Weak::new();
        assert!(t.bind(80, b(LO), e.clone()).is_ok());
        assert_eq!(t.bind(80, b(ANY4), e.clone()).err(), Some(Error::AddrInUse));
        assert!(t.bind(80, b(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))), e.clone()).is_ok());
        // A v6-only wildcard does not take IPv4; a dual-stack one does.
        assert!(t.bind(80, b(ANY6), e.clone()).is_ok());
        assert_eq!(t.bind(81, b(ANY4), e.clone()).map(|h| h.port), Ok(81));
        assert_eq!(t.bind(81, Binding { dual: true, ..b(ANY6) }, e.clone()).err(), Some(Error::AddrInUse));
        let shared = Binding { reuse_port: true, ..b(LO) };
        assert!(t.bind(82, shared, e.clone()).is_ok());
        assert!(t.bind(82, shared, e).is_ok());
    }

    #[test]
    fn a_reuseport_group_spreads_flows_and_keeps_each_on_one_socket() {
        let mut t: PortTable<usize> = PortTable::default();
        let socks: Vec<Arc<usize>> = (0..3).map(Arc::new).collect();
        for s in &socks {
            assert!(t.bind(90, Binding { reuse_port: true, ..b(LO) }, Arc::downgrade(s)).is_ok());
        }
        let dest = SocketAddr::new(LO, 90);
        let mut counts = [0usize; 3];
        for port in 40000..40300 {
            let from = SocketAddr::new(LO, port);
            let got = t.lookup(dest, from, |_| true).unwrap();
            assert_eq!(t.lookup(dest, from, |_| true), Some(got.clone()));
            counts[*got] += 1;
        }
        assert!(counts.iter().all(|&n| (70..=130).contains(&n)), "{counts:?}");
    }

    #[test]
    fn ephemeral_ports_are_distinct_and_freed() {
        let mut t: PortTable<()> = PortTable::default();
        let h1 = t.bind(0, b(LO), Weak::new());
        let h2 = t.bind(0, b(LO), Weak::new());
        let (h1, h2) = (h1.unwrap(), h2.unwrap());
        assert_ne!(h1.port, h2.port);
        let (lo, hi) = local_port_range();
        assert!((lo..=hi).contains(&h1.port));
        t.unbind(&h1);
        assert!(t.bind(h1.port, b(LO), Weak::new()).is_ok());
    }

    #[test]
    fn lookup_prefers_the_specific_address() {
        let mut t: PortTable<u8> = PortTable::default();
        let wild = Arc::new(1u8);
        let lo = Arc::new(2u8);
        let from = SocketAddr::new(LO, 5);
        assert!(t.bind(80, Binding { reuse_addr: true, ..b(ANY4) }, Arc::downgrade(&wild)).is_ok());
        assert!(t.bind(80, Binding { reuse_addr: true, ..b(LO) }, Arc::downgrade(&lo)).is_ok());
        assert_eq!(t.lookup(SocketAddr::new(LO, 80), from, |_| true).as_deref(), Some(&2));
        let other = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9)), 80);
        assert_eq!(t.lookup(other, from, |_| true).as_deref(), Some(&1));
        assert!(t.lookup(SocketAddr::new(LO, 81), from, |_| true).is_none());
    }
}
