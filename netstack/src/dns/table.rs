//! The addresses allowed names resolved to, each until its TTL runs out,
//! so the gateway can let a connection through because of the name it
//! came from. The table is bounded: past its capacity the binding closest
//! to expiry goes first.

use hickory_proto::rr::Name;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::Instant;

/// How many names one address keeps at most (a CDN address shared by many
/// allowed names); past it the one closest to expiry is replaced.
const NAMES_PER_ADDR: usize = 8;

/// One name an address came from, and until when it counts.
#[derive(Clone, Debug)]
struct Binding {
    name: Name,
    expires: Instant,
}

/// Learned address → name bindings.
#[derive(Debug)]
pub(crate) struct AddressTable {
    by_addr: HashMap<IpAddr, Vec<Binding>>,
    /// Every binding by expiry, for purging and eviction.
    by_expiry: BTreeSet<(Instant, IpAddr, Name)>,
    capacity: usize,
}

impl AddressTable {
    pub(crate) fn new(capacity: usize) -> AddressTable {
        AddressTable { by_addr: HashMap::new(), by_expiry: BTreeSet::new(), capacity: capacity.max(1) }
    }

    /// How many bindings are held (expired ones included until purged).
    pub(crate) fn len(&self) -> usize {
        self.by_expiry.len()
    }

    /// Remembers that `addr` came from `name` (lowercase) until `expires`;
    /// a binding already there keeps the later expiry.
    pub(crate) fn learn(&mut self, addr: IpAddr, name: &Name, expires: Instant, now: Instant) {
        self.purge(now);
        let existing = self.by_addr.get(&addr).and_then(|b| b.iter().find(|b| &b.name == name)).map(|b| b.expires);
        if let Some(old) = existing {
            if old >= expires {
                return;
            }
            self.remove(addr, name, old);
        } else if self.by_addr.get(&addr).is_some_and(|b| b.len() >= NAMES_PER_ADDR) {
            let soonest = self.by_addr.get(&addr).and_then(|b| b.iter().min_by_key(|b| b.expires)).cloned();
            if let Some(b) = soonest {
                self.remove(addr, &b.name, b.expires);
            }
        } else if self.len() >= self.capacity {
            if let Some((when, a, n)) = self.by_expiry.first().cloned() {
                self.remove(a, &n, when);
            }
        }
        self.by_addr.entry(addr).or_default().push(Binding { name: name.clone(), expires });
        self.by_expiry.insert((expires, addr, name.clone()));
    }

    /// The unexpired names `addr` came from, latest expiry first.
    pub(crate) fn names(&mut self, addr: IpAddr, now: Instant) -> Vec<Name> {
        self.purge(now);
        let mut bindings = self.by_addr.get(&addr).cloned().unwrap_or_default();
        bindings.sort_by_key(|b| std::cmp::Reverse(b.expires));
        bindings.into_iter().map(|b| b.name).collect()
    }

    /// Drops every binding that has expired by `now`.
    fn purge(&mut self, now: Instant) {
        while let Some((when, addr, name)) = self.by_expiry.first().cloned() {
            if when > now {
                break;
            }
            self.remove(addr, &name, when);
        }
    }

    fn remove(&mut self, addr: IpAddr, name: &Name, expires: Instant) {
        self.by_expiry.remove(&(expires, addr, name.clone()));
        if let Some(bindings) = self.by_addr.get_mut(&addr) {
            bindings.retain(|b| &b.name != name);
            if bindings.is_empty() {
                self.by_addr.remove(&addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn name(s: &str) -> Name {
        Name::from_ascii(s).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn learns_and_expires() {
        let t0 = Instant::now();
        let mut t = AddressTable::new(16);
        t.learn(ip("198.18.0.1"), &name("a.example."), t0 + Duration::from_secs(60), t0);
        assert_eq!(t.names(ip("198.18.0.1"), t0), vec![name("a.example.")]);
        assert_eq!(t.names(ip("198.18.0.1"), t0 + Duration::from_secs(59)).len(), 1);
        assert!(t.names(ip("198.18.0.1"), t0 + Duration::from_secs(60)).is_empty());
        assert!(t.names(ip("198.18.0.2"), t0).is_empty());
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn relearning_keeps_the_later_expiry() {
        let t0 = Instant::now();
        let mut t = AddressTable::new(16);
        let a = ip("198.18.0.1");
        t.learn(a, &name("a.example."), t0 + Duration::from_secs(100), t0);
        t.learn(a, &name("a.example."), t0 + Duration::from_secs(10), t0);
        assert_eq!(t.len(), 1);
        assert_eq!(t.names(a, t0 + Duration::from_secs(50)).len(), 1);
        t.learn(a, &name("a.example."), t0 + Duration::from_secs(200), t0);
        assert_eq!(t.len(), 1);
        assert_eq!(t.names(a, t0 + Duration::from_secs(150)).len(), 1);
    }

    #[test]
    fn shared_address_lists_latest_first_and_is_bounded() {
        let t0 = Instant::now();
        let mut t = AddressTable::new(64);
        let a = ip("2001:db8::1");
        for i in 0..20u64 {
            t.learn(a, &name(&format!("n{i}.example.")), t0 + Duration::from_secs(100 + i), t0);
        }
        let names = t.names(a, t0);
        assert_eq!(names.len(), NAMES_PER_ADDR);
        assert_eq!(names[0], name("n19.example."));
        assert_eq!(t.len(), NAMES_PER_ADDR);
    }

    #[test]
    fn capacity_evicts_the_soonest_expiry() {
        let t0 = Instant::now();
        let mut t = AddressTable::new(4);
        for i in 0..10u8 {
            let expires = t0 + Duration::from_secs(100 + u64::from(i));
            t.learn(IpAddr::from([198, 18, 1, i]), &name("a.example."), expires, t0);
        }
        assert_eq!(t.len(), 4);
        assert!(t.names(IpAddr::from([198, 18, 1, 5]), t0).is_empty());
        assert_eq!(t.names(IpAddr::from([198, 18, 1, 6]), t0).len(), 1);
        assert_eq!(t.names(IpAddr::from([198, 18, 1, 9]), t0).len(), 1);
    }
}
