//! NETLINK_ROUTE, read-only: the answers a Linux kernel gives to dumps of
//! the sandbox's links, addresses and routes (`ip addr`, getifaddrs,
//! if_nameindex, getaddrinfo's AI_ADDRCONFIG), from the sandbox's
//! interfaces (`iface`): loopback, and `eth0` with a default route when
//! the sandbox has a way out. Changes are refused with EPERM: the sandbox
//! holds no CAP_NET_ADMIN over its network.

use crate::iface::{self, Interface, Uplink};
use std::net::IpAddr;

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_GETADDR: u16 = 22;
const RTM_GETROUTE: u16 = 26;
const RTM_GETNEIGH: u16 = 30;
const RTM_GETRULE: u16 = 34;
const RTM_GETQDISC: u16 = 38;
const RTM_GETNETCONF: u16 = 82;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const RTM_NEWROUTE: u16 = 24;
const IFF_LOWER_UP: u32 = 0x1_0000;
const EPERM: i32 = 1;
const ENODEV: i32 = 19;
const EINVAL: i32 = 22;
const EOPNOTSUPP: i32 = 95;

/// A netlink message under construction: header, fixed part, attributes.
struct Msg {
    buf: Vec<u8>,
}

impl Msg {
    fn new(ty: u16, flags: u16, seq: u32, port: u32) -> Msg {
        let mut buf = Vec::with_capacity(128);
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&ty.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&port.to_ne_bytes());
        Msg { buf }
    }

    fn bytes(mut self, b: &[u8]) -> Msg {
        self.buf.extend_from_slice(b);
        self
    }

    /// An rtattr of `ty` holding `data`, padded to 4 bytes.
    fn attr(mut self, ty: u16, data: &[u8]) -> Msg {
        let len = u16::try_from(4 + data.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&ty.to_ne_bytes());
        self.buf.extend_from_slice(data);
        self.buf.resize(self.buf.len().next_multiple_of(4), 0);
        self
    }

    fn finish(mut self) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }
}

/// The header fields of a request.
struct Request {
    ty: u16,
    flags: u16,
    seq: u32,
    header: [u8; NLMSG_HDR],
    payload: Vec<u8>,
}

/// An NLMSG_ERROR answering `r`: `errno` 0 is an acknowledgement.
fn error(r: &Request, errno: i32, port: u32) -> Vec<u8> {
    Msg::new(NLMSG_ERROR, 0, r.seq, port).bytes(&(-errno).to_ne_bytes()).bytes(&r.header).finish()
}

fn link(i: &Interface, ty: u16, msg_flags: u16, seq: u32, port: u32) -> Vec<u8> {
    let mut ifinfo = vec![0u8, 0];
    ifinfo.extend_from_slice(&i.hw_type.to_ne_bytes());
    ifinfo.extend_from_slice(&i.index.to_ne_bytes());
    ifinfo.extend_from_slice(&(u32::from(i.flags) | IFF_LOWER_UP).to_ne_bytes());
    ifinfo.extend_from_slice(&0u32.to_ne_bytes());
    let mut name0 = i.name.as_bytes().to_vec();
    name0.push(0);
    // IFLA_OPERSTATE: lo reports unknown (0), a live device up (6).
    let operstate = if i.hw_type == iface::ARPHRD_LOOPBACK { 0 } else { 6 };
    let broadcast = if i.hw_type == iface::ARPHRD_LOOPBACK { [0; 6] } else { [0xff; 6] };
    Msg::new(ty, msg_flags, seq, port)
        .bytes(&ifinfo)
        .attr(3, &name0) // IFLA_IFNAME
        .attr(4, &i.mtu.to_ne_bytes()) // IFLA_MTU
        .attr(13, &1000u32.to_ne_bytes()) // IFLA_TXQLEN
        .attr(16, &[operstate]) // IFLA_OPERSTATE
        .attr(1, &i.mac) // IFLA_ADDRESS
        .attr(2, &broadcast) // IFLA_BROADCAST
        .finish()
}

fn address(i: &Interface, (ip, prefix): &(IpAddr, u8), seq: u32, port: u32) -> Vec<u8> {
    let (family, bytes) = match ip {
        IpAddr::V4(v4) => (AF_INET, v4.octets().to_vec()),
        IpAddr::V6(v6) => (AF_INET6, v6.octets().to_vec()),
    };
    // ifaddrmsg: family, prefix, IFA_F_PERMANENT, scope, index.
    let mut ifa = vec![family, *prefix, 0x80, i.scope];
    ifa.extend_from_slice(&i.index.to_ne_bytes());
    let mut m = Msg::new(RTM_NEWADDR, NLM_F_MULTI, seq, port).bytes(&ifa).attr(1, &bytes); // IFA_ADDRESS
    if let IpAddr::V4(v4) = ip {
        let mut label = i.name.as_bytes().to_vec();
        label.push(0);
        m = m.attr(2, &bytes).attr(3, &label); // IFA_LOCAL, IFA_LABEL
        if i.hw_type != iface::ARPHRD_LOOPBACK {
            let u = Uplink { addr: *v4, prefix: *prefix, gateway: *v4 };
            m = m.attr(4, &u.broadcast().octets()); // IFA_BROADCAST
        }
    }
    m.finish()
}

/// The main table's IPv4 routes with an uplink on interface `index`:
/// the default route through its gateway and its own network's.
fn routes(u: &Uplink, index: u32, seq: u32, port: u32) -> Vec<u8> {
    // rtmsg: family, dst_len, src_len, tos, table main, protocol, scope,
    // type unicast, flags.
    let rtmsg = |dst_len: u8, protocol: u8, scope: u8| {
        let mut m = vec![AF_INET, dst_len, 0, 0, 254, protocol, scope, 1];
        m.extend_from_slice(&0u32.to_ne_bytes());
        m
    };
    let mut out = Msg::new(RTM_NEWROUTE, NLM_F_MULTI, seq, port)
        .bytes(&rtmsg(0, 3, 0)) // boot protocol, universe scope
        .attr(15, &254u32.to_ne_bytes()) // RTA_TABLE
        .attr(5, &u.gateway.octets()) // RTA_GATEWAY
        .attr(4, &index.to_ne_bytes()) // RTA_OIF
        .finish();
    out.extend(
        Msg::new(RTM_NEWROUTE, NLM_F_MULTI, seq, port)
            .bytes(&rtmsg(u.prefix, 2, 253)) // kernel protocol, link scope
            .attr(15, &254u32.to_ne_bytes())
            .attr(1, &u.network().octets()) // RTA_DST
            .attr(7, &u.addr.octets()) // RTA_PREFSRC
            .attr(4, &index.to_ne_bytes())
            .finish(),
    );
    out
}

fn done(seq: u32, port: u32) -> Vec<u8> {
    Msg::new(NLMSG_DONE, NLM_F_MULTI, seq, port).bytes(&0i32.to_ne_bytes()).finish()
}

/// Answers one request from a sandbox with `uplink`: the messages of the
/// reply datagram.
fn answer(r: &Request, port: u32, uplink: Option<&Uplink>) -> Vec<u8> {
    let dump = r.flags & NLM_F_DUMP == NLM_F_DUMP;
    let family = r.payload.first().copied().unwrap_or(0);
    let interfaces = iface::interfaces(uplink);
    let mut out = Vec::new();
    match r.ty {
        RTM_GETLINK if dump => {
            for i in &interfaces {
                out.extend(link(i, RTM_NEWLINK, NLM_F_MULTI, r.seq, port));
            }
            out.extend(done(r.seq, port));
        }
        RTM_GETLINK => {
            let index = r.payload.get(4..8).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
            match interfaces.iter().find(|i| i.index == index) {
                Some(i) => out.extend(link(i, RTM_NEWLINK, 0, r.seq, port)),
                None => out.extend(error(r, ENODEV, port)),
            }
        }
        RTM_GETADDR if dump => {
            for i in &interfaces {
                let wanted = |(ip, _): &&(IpAddr, u8)| family == 0 || (family == AF_INET) == ip.is_ipv4();
                for a in i.addrs.iter().filter(wanted) {
                    out.extend(address(i, a, r.seq, port));
                }
            }
            out.extend(done(r.seq, port));
        }
        RTM_GETROUTE if dump => {
            if let (Some(u), Some(i)) = (uplink, interfaces.iter().find(|i| i.name == "eth0")) {
                if family == 0 || family == AF_INET {
                    out.extend(routes(u, i.index, r.seq, port));
                }
            }
            out.extend(done(r.seq, port));
        }
        // The neighbour and rule tables this answers for are empty (and
        // so is the main routing table with loopback alone).
        RTM_GETNEIGH | RTM_GETRULE | RTM_GETQDISC | RTM_GETNETCONF if dump => out.extend(done(r.seq, port)),
        ty if ty >= 16 && ty % 4 != 2 => out.extend(error(r, EPERM, port)),
        _ => out.extend(error(r, EOPNOTSUPP, port)),
    }
    if r.flags & NLM_F_ACK != 0 && !dump && out.get(4..6) != Some(&NLMSG_ERROR.to_ne_bytes()[..]) {
        out.extend(error(r, 0, port));
    }
    out
}

/// Answers the requests in one datagram sent to the kernel by socket
/// `port`: one reply datagram per request. A malformed message ends the
/// batch with EINVAL, as Linux does.
pub fn route_requests(data: &[u8], port: u32) -> Vec<Vec<u8>> {
    requests_with(iface::uplink(), data, port)
}

/// `route_requests` for a sandbox with `uplink`.
fn requests_with(uplink: Option<&Uplink>, mut data: &[u8], port: u32) -> Vec<Vec<u8>> {
    let mut replies = Vec::new();
    while data.len() >= NLMSG_HDR {
        let mut header = [0u8; NLMSG_HDR];
        header.copy_from_slice(&data[..NLMSG_HDR]);
        let len = usize::try_from(u32::from_ne_bytes([header[0], header[1], header[2], header[3]])).unwrap_or(0);
        let r = Request {
            ty: u16::from_ne_bytes([header[4], header[5]]),
            flags: u16::from_ne_bytes([header[6], header[7]]),
            seq: u32::from_ne_bytes([header[8], header[9], header[10], header[11]]),
            header,
            payload: data.get(NLMSG_HDR..len).unwrap_or_default().to_vec(),
        };
        if len < NLMSG_HDR || len > data.len() {
            replies.push(error(&r, EINVAL, port));
            break;
        }
        // Only requests are answered; anything else is ignored.
        if r.flags & NLM_F_REQUEST != 0 {
            replies.push(answer(&r, port, uplink));
        }
        data = &data[len.next_multiple_of(4).min(data.len())..];
    }
    replies
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(ty: u16, flags: u16, payload: &[u8]) -> Vec<u8> {
        Msg::new(ty, flags | NLM_F_REQUEST, 7, 0).bytes(payload).finish()
    }

    /// (type, length) of each message in a reply.
    fn messages(mut reply: &[u8]) -> Vec<(u16, usize)> {
        let mut v = Vec::new();
        while reply.len() >= NLMSG_HDR {
            let len = u32::from_ne_bytes([reply[0], reply[1], reply[2], reply[3]]) as usize;
            v.push((u16::from_ne_bytes([reply[4], reply[5]]), len));
            reply = &reply[len.next_multiple_of(4)..];
        }
        v
    }

    #[test]
    fn dumps_list_loopback_then_done() {
        let r = route_requests(&request(RTM_GETLINK, NLM_F_DUMP, &[0; 16]), 42);
        assert_eq!(r.len(), 1);
        let m = messages(&r[0]);
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), vec![RTM_NEWLINK, NLMSG_DONE]);
        assert!(r[0].windows(3).any(|w| w == b"lo\0"));
        let v4 = route_requests(&request(RTM_GETADDR, NLM_F_DUMP, &[AF_INET, 0, 0, 0, 0, 0, 0, 0]), 42);
        assert_eq!(messages(&v4[0]).len(), 2);
        let all = route_requests(&request(RTM_GETADDR, NLM_F_DUMP, &[0; 8]), 42);
        assert_eq!(messages(&all[0]).len(), 3);
    }

    #[test]
    fn an_uplink_adds_eth0_its_address_and_a_default_route() {
        let u = Some(&Uplink::SANDBOX);
        let links = requests_with(u, &request(RTM_GETLINK, NLM_F_DUMP, &[0; 16]), 42);
        assert_eq!(messages(&links[0]).iter().map(|x| x.0).collect::<Vec<_>>(), [RTM_NEWLINK, RTM_NEWLINK, NLMSG_DONE]);
        assert!(links[0].windows(5).any(|w| w == b"eth0\0"));
        let v4 = requests_with(u, &request(RTM_GETADDR, NLM_F_DUMP, &[AF_INET, 0, 0, 0, 0, 0, 0, 0]), 42);
        assert_eq!(messages(&v4[0]).len(), 3);
        assert!(v4[0].windows(4).any(|w| w == [10, 0, 2, 15]));
        let routes = requests_with(u, &request(RTM_GETROUTE, NLM_F_DUMP, &[0; 12]), 42);
        let m = messages(&routes[0]);
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), [RTM_NEWROUTE, RTM_NEWROUTE, NLMSG_DONE]);
        assert!(routes[0].windows(4).any(|w| w == [10, 0, 2, 2]), "the gateway");
        let none = requests_with(None, &request(RTM_GETROUTE, NLM_F_DUMP, &[0; 12]), 42);
        assert_eq!(messages(&none[0]).iter().map(|x| x.0).collect::<Vec<_>>(), [NLMSG_DONE]);
        let v6 = requests_with(u, &request(RTM_GETROUTE, NLM_F_DUMP, &[AF_INET6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 42);
        assert_eq!(messages(&v6[0]).len(), 1, "no IPv6 route out");
    }

    #[test]
    fn changes_are_refused_and_garbage_is_invalid() {
        let r = route_requests(&request(RTM_NEWADDR, NLM_F_ACK, &[0; 8]), 1);
        assert_eq!(messages(&r[0]), vec![(NLMSG_ERROR, 36)]);
        assert_eq!(i32::from_ne_bytes([r[0][16], r[0][17], r[0][18], r[0][19]]), -EPERM);
        let mut bad = request(RTM_GETLINK, NLM_F_DUMP, &[0; 16]);
        bad[0] = 200;
        let r = route_requests(&bad, 1);
        assert_eq!(i32::from_ne_bytes([r[0][16], r[0][17], r[0][18], r[0][19]]), -EINVAL);
        assert!(route_requests(&[1, 2, 3], 1).is_empty());
    }
}
