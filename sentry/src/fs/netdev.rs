//! The network-interface ioctls any socket answers (SIOCGIFCONF,
//! SIOCGIFFLAGS, SIOCGIFINDEX …), from the netstack's interface list:
//! loopback (127.0.0.1/8, MTU 65536), and `eth0` when the sandbox has a
//! way out, as `ifconfig` and `if_nametoindex` see them in Linux.

use crate::abi::layout::{Decoder, Encoder, Layout};
use crate::abi::netdevice::{
    IfReq, IFNAMSIZ, SIOCGIFADDR, SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFHWADDR, SIOCGIFINDEX, SIOCGIFMTU, SIOCGIFNAME,
    SIOCGIFNETMASK, SIOCGIFTXQLEN,
};
use crate::abi::sockaddr::SockaddrIn;
use crate::abi::Errno;
use crate::mm::MemoryManager;
use husk_netstack::iface::{self, Interface};
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};

const TXQLEN: i32 = 1000;

/// A sockaddr_in for `ip` (port 0), as ifreq carries addresses.
fn sockaddr_in(ip: [u8; 4]) -> Encoder {
    let mut e = Encoder::new();
    SockaddrIn(SocketAddrV4::new(Ipv4Addr::from(ip), 0)).encode_to(&mut e);
    e
}

/// The interface's IPv4 address and prefix length (0.0.0.0/0 if none).
fn ipv4(i: &Interface) -> (Ipv4Addr, u8) {
    i.addrs
        .iter()
        .find_map(|&(ip, prefix)| match ip {
            IpAddr::V4(v4) => Some((v4, prefix)),
            IpAddr::V6(_) => None,
        })
        .unwrap_or((Ipv4Addr::UNSPECIFIED, 0))
}

/// An ifreq: the name, then the union's bytes.
fn ifreq(name: &str, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; IfReq::SIZE];
    v[..name.len()].copy_from_slice(name.as_bytes());
    v[IfReq::UNION_OFFSET..IfReq::UNION_OFFSET + body.len()].copy_from_slice(body);
    v
}

/// Answers an interface ioctl `req` with argument `arg`; ENOTTY for any
/// other request, ENODEV for an interface the sandbox lacks.
pub(crate) fn ioctl(mm: &MemoryManager, req: u64, arg: u64) -> Result<u64, Errno> {
    if req == SIOCGIFCONF {
        return ifconf(mm, arg);
    }
    let known = [
        SIOCGIFNAME,
        SIOCGIFFLAGS,
        SIOCGIFADDR,
        SIOCGIFNETMASK,
        SIOCGIFMTU,
        SIOCGIFHWADDR,
        SIOCGIFINDEX,
        SIOCGIFTXQLEN,
    ];
    if !known.contains(&req) {
        return Err(Errno::ENOTTY);
    }
    let mut raw = [0u8; IfReq::SIZE];
    mm.copy_in(arg, &mut raw)?;
    let interfaces = iface::current();
    let i = if req == SIOCGIFNAME {
        let index = Decoder::new(&raw[IfReq::UNION_OFFSET..]).u32();
        interfaces.iter().find(|i| i.index == index)
    } else {
        let end = raw[..IFNAMSIZ].iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        interfaces.iter().find(|i| i.name.as_bytes() == &raw[..end])
    };
    let i = i.ok_or(Errno::ENODEV)?;
    let (addr, prefix) = ipv4(i);
    let mut body = Encoder::new();
    match req {
        SIOCGIFFLAGS => {
            body.u16(i.flags);
        }
        SIOCGIFINDEX | SIOCGIFNAME => {
            body.u32(i.index);
        }
        SIOCGIFMTU => {
            body.i32(i32::try_from(i.mtu).unwrap_or(i32::MAX));
        }
        SIOCGIFTXQLEN => {
            body.i32(TXQLEN);
        }
        SIOCGIFADDR => body = sockaddr_in(addr.octets()),
        SIOCGIFNETMASK => {
            body = sockaddr_in(u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0).to_be_bytes());
        }
        _ => {
            body.u16(i.hw_type).bytes(&i.mac).bytes(&[0u8; 8]);
        }
    }
    let name = i.name;
    mm.copy_out(arg, &ifreq(name, body.as_bytes()))?;
    Ok(0)
}

/// SIOCGIFCONF: an ifreq with the IPv4 address of each interface that has
/// one, as many as fit; with a null buffer, just the length needed.
fn ifconf(mm: &MemoryManager, arg: u64) -> Result<u64, Errno> {
    let mut raw = [0u8; 16];
    mm.copy_in(arg, &mut raw)?;
    let mut d = Decoder::new(&raw);
    let room = usize::try_from(d.i32()).map_err(|_| Errno::EINVAL)?;
    d.skip(4);
    let buf = d.u64();
    let all: Vec<Vec<u8>> =
        iface::current().iter().map(|i| ifreq(i.name, sockaddr_in(ipv4(i).0.octets()).as_bytes())).collect();
    let used = if buf == 0 {
        all.len() * IfReq::SIZE
    } else {
        let fit: Vec<u8> = all.into_iter().take(room / IfReq::SIZE).flatten().collect();
        mm.copy_out(buf, &fit)?;
        fit.len()
    };
    mm.copy_out(arg, &i32::try_from(used).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}
