//! The sandbox's interfaces: loopback always, and `eth0` when the sandbox
//! has a way out (the egress gateway), with the sandbox's address and a
//! default route, so programs that look for a network (getifaddrs, `ip
//! route`, AI_ADDRCONFIG) find one. The addresses follow QEMU's user-mode
//! network (10.0.2.15/24 via 10.0.2.2), which many tools already know; the
//! gateway's traffic leaves from the outer namespace's own address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

pub const IFF_UP: u16 = 0x1;
pub const IFF_BROADCAST: u16 = 0x2;
pub const IFF_LOOPBACK: u16 = 0x8;
pub const IFF_RUNNING: u16 = 0x40;
pub const IFF_MULTICAST: u16 = 0x1000;
pub const ARPHRD_ETHER: u16 = 1;
pub const ARPHRD_LOOPBACK: u16 = 772;

/// The sandbox's side of its way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uplink {
    pub addr: Ipv4Addr,
    pub prefix: u8,
    pub gateway: Ipv4Addr,
}

impl Uplink {
    /// The uplink every gateway-connected sandbox shows.
    pub const SANDBOX: Uplink =
        Uplink { addr: Ipv4Addr::new(10, 0, 2, 15), prefix: 24, gateway: Ipv4Addr::new(10, 0, 2, 2) };

    pub fn netmask(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0))
    }

    /// The network's own address (10.0.2.0).
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & u32::from(self.netmask()))
    }

    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !u32::from(self.netmask()))
    }
}

/// One interface as netlink, the interface ioctls and /proc/net show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub index: u32,
    pub name: &'static str,
    /// SIOCGIFFLAGS's flags.
    pub flags: u16,
    pub mtu: u32,
    pub hw_type: u16,
    pub mac: [u8; 6],
    /// Its addresses with their prefix lengths.
    pub addrs: Vec<(IpAddr, u8)>,
    /// The addresses' scope: host (254) for loopback, universe (0).
    pub scope: u8,
}

/// The interfaces of a sandbox with `uplink` (loopback alone without).
pub fn interfaces(uplink: Option<&Uplink>) -> Vec<Interface> {
    let mut v = vec![Interface {
        index: 1,
        name: "lo",
        flags: IFF_UP | IFF_LOOPBACK | IFF_RUNNING,
        mtu: 65536,
        hw_type: ARPHRD_LOOPBACK,
        mac: [0; 6],
        addrs: vec![(IpAddr::V4(Ipv4Addr::LOCALHOST), 8), (IpAddr::V6(Ipv6Addr::LOCALHOST), 128)],
        scope: 254,
    }];
    if let Some(u) = uplink {
        v.push(Interface {
            index: 2,
            name: "eth0",
            flags: IFF_UP | IFF_BROADCAST | IFF_RUNNING | IFF_MULTICAST,
            mtu: 1500,
            hw_type: ARPHRD_ETHER,
            // A locally administered address (QEMU's user network's).
            mac: [0x52, 0x54, 0x00, 0x12, 0x34, 0x56],
            addrs: vec![(IpAddr::V4(u.addr), u.prefix)],
            scope: 0,
        });
    }
    v
}

/// The sentry hosts one sandbox: its uplink is set once, at boot.
static UPLINK: OnceLock<Uplink> = OnceLock::new();

/// Gives this process's sandbox an uplink (false if it has one).
pub fn install_uplink(u: Uplink) -> bool {
    UPLINK.set(u).is_ok()
}

/// This process's sandbox's uplink, if it has a way out.
pub fn uplink() -> Option<&'static Uplink> {
    UPLINK.get()
}

/// This process's sandbox's interfaces.
pub fn current() -> Vec<Interface> {
    interfaces(uplink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_alone_or_with_the_uplink() {
        let lo = interfaces(None);
        assert_eq!(lo.iter().map(|i| i.name).collect::<Vec<_>>(), ["lo"]);
        let both = interfaces(Some(&Uplink::SANDBOX));
        assert_eq!(both.iter().map(|i| (i.index, i.name)).collect::<Vec<_>>(), [(1, "lo"), (2, "eth0")]);
        assert_eq!(both[1].addrs, vec![(IpAddr::V4(Ipv4Addr::new(10, 0, 2, 15)), 24)]);
        let u = Uplink::SANDBOX;
        assert_eq!(
            (u.netmask(), u.network(), u.broadcast()),
            ([255, 255, 255, 0].into(), [10, 0, 2, 0].into(), [10, 0, 2, 255].into())
        );
    }
}
