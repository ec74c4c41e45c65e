//! The husk netstack: IP sockets (TCP and UDP endpoints over IPv4 and
//! IPv6), the sandbox's loopback interface, and in time the egress gateway
//! and its policy, the DNS resolver and flow records.
//!
//! The stack knows nothing of the sentry. Its operations never block:
//! one that would returns [`Error::WouldBlock`], and the caller waits for
//! the endpoint's [`waiter::Queue`] to notify it, as gVisor's tcpip stack
//! does. Traffic between the sandbox's own sockets stays inside the stack;
//! the only interface is loopback, so every other destination is
//! unreachable until the egress gateway exists.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

mod addr;
mod error;
mod ports;
mod stream;
pub mod tcp;
pub mod udp;
pub mod waiter;

pub use addr::{Family, INTERFACES};
pub use error::Error;
pub use ports::ShareOpts;
pub use tcp::TcpEndpoint;
pub use udp::UdpEndpoint;

use parking_lot::Mutex;
use ports::PortTable;
use std::sync::Arc;

/// Readiness bits, with Linux's poll(2) values.
pub mod events {
    pub const IN: u32 = 0x1;
    pub const OUT: u32 = 0x4;
    pub const ERR: u32 = 0x8;
    pub const HUP: u32 = 0x10;
    pub const RDNORM: u32 = 0x40;
    pub const WRNORM: u32 = 0x100;
    pub const RDHUP: u32 = 0x2000;
}

/// One sandbox's network stack: the ports its sockets hold.
pub struct Stack {
    tcp: Mutex<PortTable<TcpEndpoint>>,
    udp: Mutex<PortTable<UdpEndpoint>>,
}

impl Stack {
    pub fn new() -> Arc<Stack> {
        Arc::new(Stack { tcp: Mutex::new(PortTable::default()), udp: Mutex::new(PortTable::default()) })
    }
}
