//! The husk netstack: IP sockets (TCP, UDP and UDP-Lite endpoints over
//! IPv4 and IPv6), the sandbox's loopback interface, and in time the
//! egress gateway and its policy, the DNS resolver and flow records.
//!
//! The stack knows nothing of the sentry. Its operations never block:
//! one that would returns [`Error::WouldBlock`], and the caller waits for
//! the endpoint's [`waiter::Queue`] to notify it, as gVisor's tcpip stack
//! does. Traffic between the sandbox's own sockets stays inside the stack;
//! other destinations are the embedder's egress gateway's, judged by the
//! policy in [`egress`] (without a gateway they are unreachable).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

mod addr;
pub mod dns;
pub mod egress;
mod error;
pub mod iface;
pub mod multicast;
pub mod netlink;
mod ports;
mod stream;
pub mod tcp;
pub mod udp;
pub mod waiter;

pub use addr::Family;
pub use error::Error;
pub use ports::{local_port_range, set_local_port_range, ShareOpts};
pub use tcp::TcpEndpoint;
pub use udp::UdpEndpoint;

use parking_lot::Mutex;
use ports::PortTable;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// What the bytes the stack queues (stream data, datagrams) are charged
/// to: the sandbox's memory, which the embedder accounts. A refused charge
/// makes a stream send wait (WouldBlock) and drops a datagram, as Linux
/// does under socket memory pressure.
pub trait BufferCharge: Send + Sync {
    /// Charges `bytes`; false past the limit (nothing charged).
    fn try_charge(&self, bytes: u64) -> bool;
    /// Returns `bytes` charged before.
    fn uncharge(&self, bytes: u64);
}

/// Readiness bits, with Linux's poll(2) values.
pub mod events {
    pub const IN: u32 = 0x1;
    pub const PRI: u32 = 0x2;
    pub const OUT: u32 = 0x4;
    pub const ERR: u32 = 0x8;
    pub const HUP: u32 = 0x10;
    pub const RDNORM: u32 = 0x40;
    pub const WRNORM: u32 = 0x100;
    pub const RDHUP: u32 = 0x2000;
}

/// One sandbox's network stack: the ports its sockets hold and the
/// loopback interface's traffic.
pub struct Stack {
    tcp: Mutex<PortTable<TcpEndpoint>>,
    udp: Mutex<PortTable<UdpEndpoint>>,
    /// UDP-Lite's ports, apart from UDP's.
    udplite: Mutex<PortTable<UdpEndpoint>>,
    /// The multicast groups the interfaces have joined.
    groups: multicast::Groups,
    loopback_bytes: AtomicU64,
    loopback_packets: AtomicU64,
    charge: OnceLock<Arc<dyn BufferCharge>>,
}

impl Stack {
    pub fn new() -> Arc<Stack> {
        Arc::new(Stack {
            tcp: Mutex::new(PortTable::default()),
            udp: Mutex::new(PortTable::default()),
            udplite: Mutex::new(PortTable::default()),
            groups: multicast::Groups::default(),
            loopback_bytes: AtomicU64::new(0),
            loopback_packets: AtomicU64::new(0),
            charge: OnceLock::new(),
        })
    }

    /// Charges the bytes this stack queues to `charge` from now on (set
    /// once, before the first socket; false if one was set already).
    pub fn set_buffer_charge(&self, charge: Arc<dyn BufferCharge>) -> bool {
        self.charge.set(charge).is_ok()
    }

    /// Charges `bytes` of queued data; always succeeds without a charge.
    pub(crate) fn charge(&self, bytes: usize) -> bool {
        self.charge.get().is_none_or(|c| c.try_charge(u64::try_from(bytes).unwrap_or(u64::MAX)))
    }

    /// Returns `bytes` charged by [`Stack::charge`].
    pub(crate) fn uncharge(&self, bytes: usize) {
        if let Some(c) = self.charge.get() {
            c.uncharge(u64::try_from(bytes).unwrap_or(u64::MAX));
        }
    }

    /// Counts a send of `bytes` through loopback (a stream send counts as
    /// one packet).
    fn count(&self, bytes: usize) {
        self.loopback_bytes.fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.loopback_packets.fetch_add(1, Ordering::Relaxed);
    }

    /// The payload bytes and sends that crossed loopback (each both sent
    /// and received), for /proc/net/dev.
    pub fn loopback_counters(&self) -> (u64, u64) {
        (self.loopback_bytes.load(Ordering::Relaxed), self.loopback_packets.load(Ordering::Relaxed))
    }
}
