//! Echo requests to the sandbox's own addresses (loopback, the unspecified
//! address, eth0's), which the sentry answers itself as Linux's own stack
//! answers a ping of the machine: never sent to the host, whose own
//! addresses are not the sandbox's. The reply is Linux's icmp_echo: the
//! request's bytes with type echo reply, the socket's echo id, its
//! sequence and payload, a fresh checksum (ICMPv6's over the
//! pseudo-header), from the address pinged (the unspecified address
//! answers from loopback), with TTL (hop limit) 64.

use crate::abi::socket::CMSG_HDR;
use husk_netstack::iface::Uplink;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The TTL (hop limit) of a reply from the sandbox itself: Linux's
/// default (`net.ipv4.ip_default_ttl`, IPv6's hop_limit).
pub const TTL: i32 = 64;

/// Loopback's interface index (as `husk_netstack::iface` numbers it):
/// every reply from the sandbox itself comes in on it, as on Linux.
pub const LOOPBACK_INDEX: i32 = 1;

/// The address a reply to an echo request to `dest` comes from, when
/// `dest` is the sandbox's own: loopback, the unspecified address (whose
/// reply comes from loopback) or eth0's address (`uplink`'s).
pub fn own_source(dest: IpAddr, uplink: Option<&Uplink>) -> Option<IpAddr> {
    match dest {
        IpAddr::V4(a) if a.is_unspecified() => Some(Ipv4Addr::LOCALHOST.into()),
        IpAddr::V4(a) if a.is_loopback() || uplink.is_some_and(|u| u.addr == a) => Some(dest),
        IpAddr::V6(a) if a.is_unspecified() => Some(Ipv6Addr::LOCALHOST.into()),
        IpAddr::V6(a) if a.is_loopback() => Some(dest),
        IpAddr::V6(_) | IpAddr::V4(_) => None,
    }
}

/// The reply to echo request `request` (a whole ICMP message whose header
/// was checked), with echo id `id`, from `from` to itself.
pub fn reply(request: &[u8], id: u16, from: IpAddr) -> Vec<u8> {
    let mut r = request.to_vec();
    r[0] = if from.is_ipv6() { 129 } else { 0 };
    r[1] = 0;
    r[2..4].fill(0);
    r[4..6].copy_from_slice(&id.to_be_bytes());
    let sum = match from {
        IpAddr::V4(_) => checksum(0, &r),
        IpAddr::V6(a) => {
            // The pseudo-header: source, destination (both `a`), the
            // length, the next header (ICMPv6, 58).
            let mut pseudo = Vec::with_capacity(40);
            pseudo.extend_from_slice(&a.octets());
            pseudo.extend_from_slice(&a.octets());
            pseudo.extend_from_slice(&u32::try_from(r.len()).unwrap_or(u32::MAX).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 58]);
            checksum(sum_words(0, &pseudo), &r)
        }
    };
    r[2..4].copy_from_slice(&sum.to_be_bytes());
    r
}

/// The one's-complement sum of `data`'s 16-bit big-endian words onto
/// `acc` (an odd last byte padded with zero), not yet folded.
fn sum_words(acc: u64, data: &[u8]) -> u64 {
    data.chunks(2).fold(acc, |acc, w| acc + u64::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
}

/// The Internet checksum (RFC 1071) of `data` with `acc` summed before.
pub fn checksum(acc: u64, data: &[u8]) -> u16 {
    let mut sum = sum_words(acc, data);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !u16::try_from(sum).unwrap_or(0xffff)
}

/// Control messages written as Linux's put_cmsg writes them into a
/// buffer of `room` bytes: one that does not fit whole is cut (its
/// cmsg_len says so) and marks the message MSG_CTRUNC; nothing at all
/// goes into less than a header.
pub struct Cmsgs {
    pub bytes: Vec<u8>,
    room: usize,
    pub truncated: bool,
}

impl Cmsgs {
    pub fn new(room: usize) -> Cmsgs {
        Cmsgs { bytes: Vec::new(), room, truncated: false }
    }

    pub fn put(&mut self, level: i32, ty: i32, data: &[u8]) {
        let left = self.room - self.bytes.len();
        if left < CMSG_HDR {
            self.truncated = true;
            return;
        }
        let mut len = CMSG_HDR + data.len();
        if left < len {
            self.truncated = true;
            len = left;
        }
        self.bytes.extend_from_slice(&u64::try_from(len).unwrap_or(0).to_le_bytes());
        self.bytes.extend_from_slice(&level.to_le_bytes());
        self.bytes.extend_from_slice(&ty.to_le_bytes());
        self.bytes.extend_from_slice(&data[..len - CMSG_HDR]);
        let space = (CMSG_HDR + data.len()).next_multiple_of(8).min(left);
        self.bytes.resize(self.bytes.len() + space - len, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_addresses_answer_from_themselves_or_loopback() {
        let u = Uplink::SANDBOX;
        let v4 = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(own_source(v4("127.0.0.1"), Some(&u)), Some(v4("127.0.0.1")));
        assert_eq!(own_source(v4("127.3.2.1"), None), Some(v4("127.3.2.1")));
        assert_eq!(own_source(v4("0.0.0.0"), Some(&u)), Some(v4("127.0.0.1")));
        assert_eq!(own_source(v4("10.0.2.15"), Some(&u)), Some(v4("10.0.2.15")));
        assert_eq!(own_source(v4("10.0.2.15"), None), None, "no eth0 without a way out");
        assert_eq!(own_source(v4("10.0.2.2"), Some(&u)), None, "the gateway is not the sandbox");
        assert_eq!(own_source(v4("198.18.0.2"), Some(&u)), None);
        assert_eq!(own_source(v4("::1"), None), Some(v4("::1")));
        assert_eq!(own_source(v4("::"), None), Some(v4("::1")));
        assert_eq!(own_source(v4("::ffff:127.0.0.1"), None), None);
        assert_eq!(own_source(v4("2001:2::2"), Some(&u)), None);
    }

    #[test]
    fn a_reply_is_the_request_turned_round_with_a_valid_checksum() {
        let request = [8, 0, 0xde, 0xad, 0, 7, 0, 3, b'h', b'u', b's', b'k', b'!'];
        let r = reply(&request, 0x1234, "127.0.0.1".parse().unwrap());
        assert_eq!(r[..2], [0, 0]);
        assert_eq!(r[4..], [0x12, 0x34, 0, 3, b'h', b'u', b's', b'k', b'!']);
        assert_eq!(checksum(0, &r), 0, "a message with its checksum sums to zero");
        // RFC 1071's example words sum to 0xddf2 (checksum 0x220d).
        assert_eq!(checksum(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), 0x220d);
        let r6 = reply(&[128, 0, 1, 1, 0, 0, 0, 9, 1], 77, "::1".parse().unwrap());
        assert_eq!(r6[..2], [129, 0]);
        assert_eq!(r6[4..], [0, 77, 0, 9, 1]);
        let mut pseudo = Ipv6Addr::LOCALHOST.octets().repeat(2);
        pseudo.extend_from_slice(&[0, 0, 0, 9, 0, 0, 0, 58]);
        assert_eq!(checksum(sum_words(0, &pseudo), &r6), 0, "ICMPv6's covers the pseudo-header");
    }

    #[test]
    fn control_messages_are_cut_as_linux_cuts_them() {
        let mut all = Cmsgs::new(64);
        all.put(0, 2, &64i32.to_le_bytes());
        assert_eq!((all.bytes.len(), all.truncated), (24, false));
        assert_eq!(all.bytes[..8], 20u64.to_le_bytes());
        let mut none = Cmsgs::new(15);
        none.put(0, 2, &64i32.to_le_bytes());
        assert_eq!((none.bytes.len(), none.truncated), (0, true));
        let mut cut = Cmsgs::new(18);
        cut.put(0, 2, &64i32.to_le_bytes());
        assert_eq!((cut.bytes.len(), cut.truncated), (18, true));
        assert_eq!(cut.bytes[..8], 18u64.to_le_bytes());
        cut.put(0, 2, &64i32.to_le_bytes());
        assert_eq!(cut.bytes.len(), 18, "nothing past a full buffer");
    }
}
