//! The network-interface ioctls any socket answers (SIOCGIFCONF,
//! SIOCGIFFLAGS, SIOCGIFINDEX …), from the netstack's interface list:
//! loopback only, 127.0.0.1/8, MTU 65536, as `ifconfig` and
//! `if_nametoindex` see it in a Linux network namespace of its own.

use crate::abi::layout::{Decoder, Encoder};
use crate::abi::Errno;
use crate::mm::MemoryManager;
use husk_netstack::INTERFACES;

const SIOCGIFNAME: u64 = 0x8910;
const SIOCGIFCONF: u64 = 0x8912;
const SIOCGIFFLAGS: u64 = 0x8913;
const SIOCGIFADDR: u64 = 0x8915;
const SIOCGIFNETMASK: u64 = 0x891b;
const SIOCGIFMTU: u64 = 0x8921;
const SIOCGIFHWADDR: u64 = 0x8927;
const SIOCGIFINDEX: u64 = 0x8933;
const SIOCGIFTXQLEN: u64 = 0x8942;
/// sizeof(struct ifreq).
const IFREQ: usize = 40;
const IFNAMSIZ: usize = 16;
const ARPHRD_LOOPBACK: u16 = 772;
const LOOPBACK_MTU: i32 = 65536;
const LOOPBACK_TXQLEN: i32 = 1000;

/// A sockaddr_in for `ip` (port 0), as ifreq carries addresses.
fn sockaddr_in(ip: [u8; 4]) -> Encoder {
    let mut e = Encoder::new();
    e.u16(2).u16(0).bytes(&ip).bytes(&[0u8; 8]);
    e
}

/// An ifreq: the name, then the union's bytes.
fn ifreq(name: &str, body: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; IFREQ];
    v[..name.len()].copy_from_slice(name.as_bytes());
    v[IFNAMSIZ..IFNAMSIZ + body.len()].copy_from_slice(body);
    v
}

/// Answers an interface ioctl `req` with argument `arg`; ENOTTY for any
/// other request, ENODEV for an interface the sandbox lacks.
pub fn ioctl(mm: &MemoryManager, req: u64, arg: u64) -> Result<u64, Errno> {
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
    let mut raw = [0u8; IFREQ];
    mm.copy_in(arg, &mut raw)?;
    let iface = if req == SIOCGIFNAME {
        let index = Decoder::new(&raw[IFNAMSIZ..]).u32();
        INTERFACES.iter().find(|i| i.0 == index)
    } else {
        let end = raw[..IFNAMSIZ].iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        INTERFACES.iter().find(|i| i.1.as_bytes() == &raw[..end])
    };
    let &(index, name, flags) = iface.ok_or(Errno::ENODEV)?;
    let mut body = Encoder::new();
    match req {
        SIOCGIFFLAGS => {
            body.u16(flags);
        }
        SIOCGIFINDEX | SIOCGIFNAME => {
            body.u32(index);
        }
        SIOCGIFMTU => {
            body.i32(LOOPBACK_MTU);
        }
        SIOCGIFTXQLEN => {
            body.i32(LOOPBACK_TXQLEN);
        }
        SIOCGIFADDR => body = sockaddr_in([127, 0, 0, 1]),
        SIOCGIFNETMASK => body = sockaddr_in([255, 0, 0, 0]),
        _ => {
            body.u16(ARPHRD_LOOPBACK).bytes(&[0u8; 14]);
        }
    }
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
        INTERFACES.iter().map(|&(_, name, _)| ifreq(name, sockaddr_in([127, 0, 0, 1]).as_bytes())).collect();
    let used = if buf == 0 {
        all.len() * IFREQ
    } else {
        let fit: Vec<u8> = all.into_iter().take(room / IFREQ).flatten().collect();
        mm.copy_out(buf, &fit)?;
        fit.len()
    };
    mm.copy_out(arg, &i32::try_from(used).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}
