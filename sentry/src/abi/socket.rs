//! Socket families, levels, options and message flags, with Linux's x86-64
//! values (`include/linux/socket.h`, `include/uapi/asm-generic/socket.h`).
//! Levels and option names are `int` in the guest's calls; message flags
//! are compared against raw argument registers, so they are `u64`.

use super::layout::{Decoder, Encoder, Layout};

pub const AF_UNSPEC: u16 = 0;
pub const AF_UNIX: i32 = libc::AF_UNIX;
pub const AF_INET: i32 = libc::AF_INET;
pub const AF_INET6: i32 = libc::AF_INET6;
pub const AF_NETLINK: i32 = libc::AF_NETLINK;

pub const SOCK_STREAM: i32 = libc::SOCK_STREAM;
pub const SOCK_DGRAM: i32 = libc::SOCK_DGRAM;
pub const SOCK_RAW: i32 = libc::SOCK_RAW;
/// The bits of `socket`'s type argument that are the type (the rest are
/// SOCK_NONBLOCK and SOCK_CLOEXEC).
pub const SOCK_TYPE_MASK: i32 = 0xf;

// Levels.
pub const SOL_SOCKET: i32 = libc::SOL_SOCKET;
pub const SOL_NETLINK: i32 = libc::SOL_NETLINK;
pub const IPPROTO_IP: i32 = libc::IPPROTO_IP;
pub const IPPROTO_TCP: i32 = libc::IPPROTO_TCP;
pub const IPPROTO_UDP: i32 = libc::IPPROTO_UDP;
pub const IPPROTO_IPV6: i32 = libc::IPPROTO_IPV6;
pub const IPPROTO_UDPLITE: i32 = libc::IPPROTO_UDPLITE;
/// SOL_UDPLITE, the level of the UDP-Lite options.
pub const SOL_UDPLITE: i32 = 136;
/// The UDP-Lite checksum coverage options.
pub const UDPLITE_SEND_CSCOV: i32 = 10;
pub const UDPLITE_RECV_CSCOV: i32 = 11;

// SOL_SOCKET options.
pub const SO_REUSEADDR: i32 = libc::SO_REUSEADDR;
pub const SO_TYPE: i32 = libc::SO_TYPE;
pub const SO_ERROR: i32 = libc::SO_ERROR;
pub const SO_BROADCAST: i32 = libc::SO_BROADCAST;
pub const SO_SNDBUF: i32 = libc::SO_SNDBUF;
pub const SO_RCVBUF: i32 = libc::SO_RCVBUF;
pub const SO_KEEPALIVE: i32 = libc::SO_KEEPALIVE;
pub const SO_OOBINLINE: i32 = libc::SO_OOBINLINE;
pub const SO_PRIORITY: i32 = libc::SO_PRIORITY;
pub const SO_LINGER: i32 = libc::SO_LINGER;
pub const SO_REUSEPORT: i32 = libc::SO_REUSEPORT;
pub const SO_PASSCRED: i32 = libc::SO_PASSCRED;
pub const SO_SNDBUFFORCE: i32 = libc::SO_SNDBUFFORCE;
pub const SO_RCVBUFFORCE: i32 = libc::SO_RCVBUFFORCE;
pub const SO_PEERCRED: i32 = libc::SO_PEERCRED;
/// The `timeval` forms of the timeouts (`SO_RCVTIMEO_OLD`, which x86-64's
/// 64-bit `time_t` makes the only one).
pub const SO_RCVTIMEO: i32 = 20;
pub const SO_SNDTIMEO: i32 = 21;
pub const SO_ACCEPTCONN: i32 = libc::SO_ACCEPTCONN;
pub const SO_PROTOCOL: i32 = libc::SO_PROTOCOL;
pub const SO_DOMAIN: i32 = libc::SO_DOMAIN;
// The rest of the SOL_SOCKET options (x86-64 numbers).
pub const SO_DEBUG: i32 = 1;
pub const SO_DONTROUTE: i32 = 5;
pub const SO_NO_CHECK: i32 = 11;
pub const SO_RCVLOWAT: i32 = 18;
pub const SO_SNDLOWAT: i32 = 19;
pub const SO_BINDTODEVICE: i32 = 25;
pub const SO_TIMESTAMP_OLD: i32 = 29;
pub const SO_PASSSEC: i32 = 34;
pub const SO_TIMESTAMPNS_OLD: i32 = 35;
pub const SO_MARK: i32 = 36;
pub const SO_TIMESTAMPING_OLD: i32 = 37;
pub const SO_RXQ_OVFL: i32 = 40;
pub const SO_WIFI_STATUS: i32 = 41;
pub const SO_NOFCS: i32 = 43;
pub const SO_SELECT_ERR_QUEUE: i32 = 45;
pub const SO_BUSY_POLL: i32 = 46;
pub const SO_INCOMING_CPU: i32 = 49;
pub const SO_COOKIE: i32 = 57;
pub const SO_PEERGROUPS: i32 = 59;
pub const SO_ZEROCOPY: i32 = 60;
pub const SO_BINDTOIFINDEX: i32 = 62;
pub const SO_TIMESTAMP_NEW: i32 = 63;
pub const SO_TIMESTAMPNS_NEW: i32 = 64;
pub const SO_TIMESTAMPING_NEW: i32 = 65;
pub const SO_RCVTIMEO_NEW: i32 = 66;
pub const SO_SNDTIMEO_NEW: i32 = 67;

// IPPROTO_IP options.
pub const IP_TOS: i32 = libc::IP_TOS;
pub const IP_TTL: i32 = libc::IP_TTL;
pub const IP_RECVERR: i32 = libc::IP_RECVERR;
pub const IP_MTU_DISCOVER: i32 = 10;
/// IP_PMTUDISC_WANT (IPV6_PMTUDISC_WANT): a socket's default path MTU
/// discovery; IP_PMTUDISC_OMIT (IPV6_PMTUDISC_OMIT) is the last mode.
pub const IP_PMTUDISC_WANT: i32 = 1;
pub const IP_PMTUDISC_OMIT: i32 = 5;

// IPPROTO_IPV6 options.
pub const IPV6_RECVERR: i32 = libc::IPV6_RECVERR;
pub const IPV6_V6ONLY: i32 = libc::IPV6_V6ONLY;

// IPPROTO_TCP options.
pub const TCP_NODELAY: i32 = libc::TCP_NODELAY;
pub const TCP_CORK: i32 = libc::TCP_CORK;
pub const TCP_KEEPIDLE: i32 = libc::TCP_KEEPIDLE;
pub const TCP_KEEPINTVL: i32 = libc::TCP_KEEPINTVL;
pub const TCP_KEEPCNT: i32 = libc::TCP_KEEPCNT;
pub const TCP_QUICKACK: i32 = libc::TCP_QUICKACK;
pub const TCP_USER_TIMEOUT: i32 = libc::TCP_USER_TIMEOUT;

// Netlink protocols.
pub const NETLINK_ROUTE: i32 = libc::NETLINK_ROUTE;

// `shutdown`'s `how`.
pub const SHUT_RD: i32 = libc::SHUT_RD;
pub const SHUT_WR: i32 = libc::SHUT_WR;
pub const SHUT_RDWR: i32 = libc::SHUT_RDWR;

// Message flags.
pub const MSG_OOB: u64 = 0x1;
pub const MSG_ERRQUEUE: u64 = 0x2000;
pub const MSG_PEEK: u64 = 0x2;
/// Reported in `msg_flags`, which is an `int`.
pub const MSG_CTRUNC: i32 = libc::MSG_CTRUNC;
pub const MSG_TRUNC: u64 = 0x20;
pub const MSG_DONTWAIT: u64 = 0x40;
pub const MSG_WAITALL: u64 = 0x100;
pub const MSG_NOSIGNAL: u64 = 0x4000;
/// More data follows: a stream holds a partial segment back.
pub const MSG_MORE: u64 = 0x8000;
pub const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
/// recvmmsg(2): stop waiting once one message arrived.
pub const MSG_WAITFORONE: u64 = 0x10000;

// Control messages (SOL_SOCKET).
pub const SCM_RIGHTS: i32 = libc::SCM_RIGHTS;
pub const SCM_CREDENTIALS: i32 = libc::SCM_CREDENTIALS;
/// The most descriptors one message may carry.
pub const SCM_MAX_FD: usize = 253;

/// A `struct msghdr`, as sendmsg and recvmsg take it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsgHdr {
    pub name: u64,
    pub namelen: u32,
    pub iov: u64,
    pub iovlen: u64,
    pub control: u64,
    pub controllen: u64,
    pub flags: i32,
}

impl MsgHdr {
    /// Where recvmsg writes back `msg_namelen`, `msg_controllen` and
    /// `msg_flags`, from the structure's start.
    pub const NAMELEN_OFFSET: u64 = 8;
    pub const CONTROLLEN_OFFSET: u64 = 40;
    pub const FLAGS_OFFSET: u64 = 48;
}

impl Layout for MsgHdr {
    const SIZE: usize = 56;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.name).u32(self.namelen).zeros(4).u64(self.iov).u64(self.iovlen);
        e.u64(self.control).u64(self.controllen).i32(self.flags).zeros(4);
    }

    fn decode_from(d: &mut Decoder) -> MsgHdr {
        let name = d.u64();
        let namelen = d.u32();
        d.skip(4);
        let (iov, iovlen, control, controllen, flags) = (d.u64(), d.u64(), d.u64(), d.u64(), d.i32());
        d.skip(4);
        MsgHdr { name, namelen, iov, iovlen, control, controllen, flags }
    }
}

/// A `struct cmsghdr`: the header of one control message, its data
/// following at `CMSG_DATA` (the header's size).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CmsgHdr {
    /// The header's and the data's length (`CMSG_LEN`).
    pub len: u64,
    pub level: i32,
    pub ty: i32,
}

impl Layout for CmsgHdr {
    const SIZE: usize = CMSG_HDR;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.len).i32(self.level).i32(self.ty);
    }

    fn decode_from(d: &mut Decoder) -> CmsgHdr {
        CmsgHdr { len: d.u64(), level: d.i32(), ty: d.i32() }
    }
}

/// `CMSG_ALIGN`: control messages start at multiples of 8.
pub fn cmsg_align(n: usize) -> usize {
    n.saturating_add(7) & !7
}

/// A `struct ucred`: SCM_CREDENTIALS data and SO_PEERCRED's value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ucred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

impl Layout for Ucred {
    const SIZE: usize = 12;

    fn encode_to(&self, e: &mut Encoder) {
        e.i32(self.pid).u32(self.uid).u32(self.gid);
    }

    fn decode_from(d: &mut Decoder) -> Ucred {
        Ucred { pid: d.i32(), uid: d.u32(), gid: d.u32() }
    }
}

/// sizeof(struct cmsghdr): cmsg_len (u64), cmsg_level, cmsg_type.
pub const CMSG_HDR: usize = 16;

/// `ee_origin` of an error an ICMP message reported.
pub const SO_EE_ORIGIN_ICMP: u8 = 2;
/// `ee_origin` of an error an ICMPv6 message reported.
pub const SO_EE_ORIGIN_ICMP6: u8 = 3;

/// A `struct sock_extended_err`: how an error-queue entry failed, the
/// start of an IP_RECVERR or IPV6_RECVERR control message (the offender's
/// sockaddr, SO_EE_OFFENDER, follows it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SockExtendedErr {
    pub errno: u32,
    pub origin: u8,
    /// The ICMP type and code.
    pub ty: u8,
    pub code: u8,
    pub info: u32,
    pub data: u32,
}

impl Layout for SockExtendedErr {
    const SIZE: usize = 16;

    fn encode_to(&self, e: &mut Encoder) {
        e.u32(self.errno).u8(self.origin).u8(self.ty).u8(self.code).u8(0).u32(self.info).u32(self.data);
    }

    fn decode_from(d: &mut Decoder) -> SockExtendedErr {
        let (errno, origin, ty, code) = (d.u32(), d.u8(), d.u8(), d.u8());
        d.skip(1);
        SockExtendedErr { errno, origin, ty, code, info: d.u32(), data: d.u32() }
    }
}

// IPPROTO_IP and IPPROTO_IPV6 options on packet information, hop limits
// and multicast.
pub const IP_PKTINFO: i32 = 8;
pub const IP_RECVTTL: i32 = 12;
pub const IP_RECVTOS: i32 = 13;
pub const IP_MULTICAST_IF: i32 = 32;
pub const IP_MULTICAST_TTL: i32 = 33;
pub const IP_MULTICAST_LOOP: i32 = 34;
pub const IPV6_UNICAST_HOPS: i32 = 16;
pub const IPV6_MULTICAST_IF: i32 = 17;
pub const IPV6_MULTICAST_HOPS: i32 = 18;
pub const IPV6_MULTICAST_LOOP: i32 = 19;
pub const IP_ADD_MEMBERSHIP: i32 = 35;
pub const IP_DROP_MEMBERSHIP: i32 = 36;
pub const IP_MULTICAST_ALL: i32 = 49;
pub const MCAST_JOIN_GROUP: i32 = 42;
pub const MCAST_LEAVE_GROUP: i32 = 45;
pub const IPV6_ADD_MEMBERSHIP: i32 = 20;
pub const IPV6_DROP_MEMBERSHIP: i32 = 21;
pub const IPV6_MULTICAST_ALL: i32 = 29;
pub const IPV6_RECVPKTINFO: i32 = 49;
pub const IPV6_PKTINFO: i32 = 50;
pub const IPV6_RECVHOPLIMIT: i32 = 51;
pub const IPV6_HOPLIMIT: i32 = 52;
pub const IPV6_RECVTCLASS: i32 = 66;
pub const IPV6_TCLASS: i32 = 67;
pub const IPV6_MTU_DISCOVER: i32 = 23;
/// IP_RECVORIGDSTADDR and IPV6_RECVORIGDSTADDR, each also its message's
/// type (IP_ORIGDSTADDR, IPV6_ORIGDSTADDR).
pub const IP_RECVORIGDSTADDR: i32 = 20;
pub const IPV6_RECVORIGDSTADDR: i32 = 74;
/// Removes a socket's filter (SO_ATTACH_FILTER's).
pub const SO_DETACH_FILTER: i32 = libc::SO_DETACH_FILTER;
/// `ee_origin` of an error the sender's own stack reported.
pub const SO_EE_ORIGIN_LOCAL: u8 = 1;
/// SO_TIMESTAMP's and SO_TIMESTAMPNS's message types, old and new.
pub const SCM_TIMESTAMP_OLD: i32 = 29;
pub const SCM_TIMESTAMPNS_OLD: i32 = 35;
pub const SCM_TIMESTAMP_NEW: i32 = 63;
pub const SCM_TIMESTAMPNS_NEW: i32 = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_flags_match_linux() {
        let flags = [
            (MSG_OOB, libc::MSG_OOB),
            (MSG_PEEK, libc::MSG_PEEK),
            (MSG_TRUNC, libc::MSG_TRUNC),
            (MSG_DONTWAIT, libc::MSG_DONTWAIT),
            (MSG_WAITALL, libc::MSG_WAITALL),
            (MSG_NOSIGNAL, libc::MSG_NOSIGNAL),
            (MSG_MORE, libc::MSG_MORE),
            (MSG_CMSG_CLOEXEC, libc::MSG_CMSG_CLOEXEC),
            (MSG_WAITFORONE, libc::MSG_WAITFORONE),
        ];
        for (ours, linux) in flags {
            assert_eq!(Ok(ours), u64::try_from(linux));
        }
        assert_eq!(i32::from(AF_UNSPEC), libc::AF_UNSPEC);
    }

    #[test]
    fn layouts_match_linux() {
        assert_eq!(std::mem::size_of::<libc::msghdr>(), MsgHdr::SIZE);
        assert_eq!(std::mem::size_of::<libc::cmsghdr>(), CmsgHdr::SIZE);
        assert_eq!(std::mem::size_of::<libc::ucred>(), Ucred::SIZE);
        let at = |offset: usize| u64::try_from(offset);
        assert_eq!(at(std::mem::offset_of!(libc::msghdr, msg_namelen)), Ok(MsgHdr::NAMELEN_OFFSET));
        assert_eq!(at(std::mem::offset_of!(libc::msghdr, msg_controllen)), Ok(MsgHdr::CONTROLLEN_OFFSET));
        assert_eq!(at(std::mem::offset_of!(libc::msghdr, msg_flags)), Ok(MsgHdr::FLAGS_OFFSET));
        let h = MsgHdr { name: 1, namelen: 2, iov: 3, iovlen: 4, control: 5, controllen: 6, flags: 7 };
        assert_eq!(MsgHdr::decode(&h.encode()), h);
        let c = CmsgHdr { len: 28, level: SOL_SOCKET, ty: SCM_CREDENTIALS };
        assert_eq!(CmsgHdr::decode(&c.encode()), c);
        assert_eq!(cmsg_align(28), 32);
    }
}
