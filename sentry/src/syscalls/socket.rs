//! System calls: sockets. socket(2) and socketpair(2) make a socket of
//! the family asked for; every other socket call decodes its arguments,
//! finds the socket behind the descriptor with one lookup
//! (`socket_ops::of_fd`, ENOTSOCK for other files) and calls its
//! `SocketOps`, which each family implements in its own module: Unix
//! sockets (unix.rs), IP sockets (inet.rs, with the egress gateway and
//! inbound connections), ICMP echo sockets (ping.rs) and netlink
//! (netlink.rs). Other families fail the way Linux fails for a family it
//! does not have.

use super::args::{self, int};
use super::socket_ops::{of_fd, OptArg, SockAddrArg, UserBuf};
use super::{inet, netlink, ping, unix};
use super::{Entries, Support::*};
use crate::abi::fcntl::{O_NONBLOCK, O_RDWR};
use crate::abi::layout::Layout;
use crate::abi::socket::{MsgHdr, AF_INET, AF_INET6, AF_NETLINK, MSG_DONTWAIT, SOCK_TYPE_MASK};
use crate::abi::uio::Iovec;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::mm::MemoryManager;
use crate::vfs::FileDescription;
use crate::vfs::FileOps;
use std::sync::Arc;

const FAMILIES: &str = "AF_UNIX (stream, datagram, seqpacket), AF_INET/AF_INET6 (TCP, UDP; the sandbox's own, out through the egress gateway, in through --publish or a container's ports; ICMP echo sockets, SOCK_DGRAM with IPPROTO_ICMP/IPPROTO_ICMPV6 as unprivileged ping uses, carried on host ping sockets of the outer namespace, so EACCES when its net.ipv4.ping_group_range refuses them, each echo request checked against the egress policy (EPERM when denied), with --network none sends fail with ENETUNREACH, echo requests to the sandbox's own addresses (loopback, 0.0.0.0, eth0's) answered by the sentry without the host, the options iputils' ping sets carried to the host socket and read back from it, others ENOPROTOOPT; raw and packet sockets EPERM; UDP-Lite (SOCK_DGRAM with IPPROTO_UDPLITE) as UDP with its own ports among the sandbox's own addresses, its datagrams carried whole whatever checksum coverage UDPLITE_SEND_CSCOV/UDPLITE_RECV_CSCOV ask (the options are checked and read back as Linux), but never out of the sandbox: a send or connect to any other address fails with EPERM and a net.denied record (protocol udplite), as a UDP datagram the egress policy denies, whatever the policy; IPPROTO_SCTP EPROTONOSUPPORT, as a kernel built without it) and AF_NETLINK (NETLINK_ROUTE dumps, no events): other families fail with EAFNOSUPPORT";
const UNIX: &str = "Unix and IP sockets (ENOTSOCK on other descriptors)";
const SENDTO: &str = "MSG_MORE holds a partial segment back on the sandbox's own TCP sockets as TCP_CORK does (a send without it pushes; ignored on a stream carried outside); MSG_OOB (urgent data) on the sandbox's own TCP sockets and on Unix stream sockets as Linux (5.15 and later, for Unix: one urgent byte, the mark splitting reads, SO_OOBINLINE, SIGURG to the receiver's F_SETOWN owner); EOPNOTSUPP on a TCP stream carried outside through the egress gateway, as on Unix datagram and seqpacket sockets; a UDP datagram to an IPv4 multicast group goes through lo or eth0 as Linux routes it (IP_MULTICAST_IF, the bound address, the default route; ENETUNREACH with --network none and no interface named) and reaches the sandbox's members as Linux's would (on eth0 with IP_MULTICAST_LOOP), but never leaves the sandbox: Linux would put a copy on eth0's wire, husk records it as net.denied instead (the gateway carries no multicast, whatever the policy); IPv6 multicast has no route (ENETUNREACH), as on Linux with eth0 without IPv6; SO_BINDTODEVICE does not limit which members take a group's datagram; the limited broadcast (255.255.255.255, SO_BROADCAST or EACCES) from a socket bound to a loopback address goes out of lo to the port's wildcard and broadcast sockets, from any other socket it is the egress gateway's (which denies it unless a CIDR rule names it); port 0 is EINVAL; a UDP datagram too big for any packet is EMSGSIZE (on IPv6, and on IPv4 up to 65535 bytes, queued as a local error with IP(V6)_RECVERR)";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_socket, sys_socket, Partial(FAMILIES)),
    (libc::SYS_socketpair, sys_socketpair, Partial("AF_UNIX only; IP families fail with EOPNOTSUPP as in Linux")),
    (libc::SYS_bind, sys_bind, Partial(UNIX)),
    (libc::SYS_listen, sys_listen, Partial("TCP keeps Linux's backlog (a full accept queue leaves connectors in SYN_SENT) and TCP_DEFER_ACCEPT; a Unix socket's backlog is not limited")),
    (libc::SYS_accept, sys_accept, Partial(UNIX)),
    (libc::SYS_accept4, sys_accept4, Partial(UNIX)),
    (libc::SYS_connect, sys_connect, Partial("TCP in the sandbox: established at once unless the listener's accept queue is full (then SYN_SENT until accept makes room, EALREADY, SO_SNDTIMEO gives EINPROGRESS), refused with Linux's ECONNREFUSED/ECONNABORTED sequence; a Unix connect is accepted at once (no backlog limit, never EAGAIN)")),
    (libc::SYS_getsockname, sys_getsockname, Partial(UNIX)),
    (libc::SYS_getpeername, sys_getpeername, Partial(UNIX)),
    (libc::SYS_sendto, sys_sendto, Partial(SENDTO)),
    (libc::SYS_recvfrom, sys_recvfrom, Partial("MSG_OOB (urgent data) on the sandbox's own TCP sockets and on Unix stream sockets as Linux (5.15 and later, for Unix); EOPNOTSUPP on a TCP stream carried outside through the egress gateway, as on Unix datagram and seqpacket sockets; MSG_ERRQUEUE reads a UDP socket's error queue as recvmsg does (a TCP socket's stays empty: EAGAIN); UDP takes no notice of MSG_OOB (a plain receive, as Linux)")),
    (libc::SYS_sendmsg, sys_sendmsg, Partial("SCM_RIGHTS and SCM_CREDENTIALS on Unix sockets; on UDP and UDP-Lite sockets IP_TTL and IP_TOS (IPV6_HOPLIMIT and IPV6_TCLASS on IPv6, the IPv4 ones toward a v4-mapped address), checked as Linux and carried to the sandbox's receivers, not to datagrams sent outside through the egress gateway; other control messages of IP sockets are passed over (Linux takes IP_PKTINFO, SO_MARK, SCM_TXTIME … and refuses unknown ones with EINVAL); MSG_OOB and multicast as sendto; descriptors in flight are capped at RLIMIT_NOFILE sandbox-wide, for root too (ETOOMANYREFS)")),
    (libc::SYS_recvmsg, sys_recvmsg, Partial("a UDP datagram of the sandbox's own comes with SO_TIMESTAMP(NS), IP_PKTINFO, IP_TTL, IP_TOS, IPV6_PKTINFO, IPV6_HOPLIMIT, IPV6_TCLASS, IP_ORIGDSTADDR and IPV6_ORIGDSTADDR messages as asked (an IPv4 datagram on an IPv6 socket with IPV6_PKTINFO and the IPv4 ones, as Linux), truncated as put_cmsg does; no SO_TIMESTAMPING or TCP_INQ messages, none for datagrams from outside the sandbox; on a Unix stream socket a read stops at the end of a send with descriptors and, with SO_PASSCRED, where another writer's bytes begin (as Linux); MSG_PEEK installs descriptors too; MSG_OOB as recvfrom; MSG_ERRQUEUE on a UDP socket with IP_RECVERR/IPV6_RECVERR gives back a datagram that found no socket at its sandbox port with Linux's sock_extended_err (ECONNREFUSED, ICMP 3/3 or ICMPv6 1/4) and offender, the payload cut as the ICMP error quotes it, after the messages asked for describing the ICMP error as Linux does (SO_TIMESTAMP(NS), IP_PKTINFO to the source on lo, IP_TTL 64, IP_TOS with the internetwork-control precedence; IPV6_PKTINFO, IPV6_HOPLIMIT 64, IPV6_TCLASS 0; an IPv6 socket's IPv4 error IPV6_PKTINFO and the IPv4 ones); a datagram too big for any packet comes back as Linux's local error (EMSGSIZE, SO_EE_ORIGIN_LOCAL, lo's MTU, no offender); no errors for datagrams sent outside the sandbox; a TCP socket's error queue stays empty (EAGAIN)")),
    (libc::SYS_shutdown, sys_shutdown, Full),
    (
        libc::SYS_getsockopt,
        sys_getsockopt,
        Partial("every SOL_SOCKET option Linux has, on every family, with its argument checks (no SO_PEERSEC label, no SO_PEEK_OFF, no socket filters; SO_PEERGROUPS of a connected Unix socket is ENOPROTOOPT); TCP: every IPPROTO_TCP option with Linux's ranges and rounding, TCP_INFO with the connection's state (counters of a lossless path), TCP_CONGESTION cubic or reno; UDP: UDPLITE_SEND_CSCOV and UDPLITE_RECV_CSCOV at SOL_UDPLITE or SOL_UDP (0 on a UDP socket), other SOL_UDP options ENOPROTOOPT; IP: IPV6_V6ONLY, and IP_TOS, IP_TTL, IPV6_TCLASS, IPV6_UNICAST_HOPS, the IP_RECV*/IPV6_RECV* flags (IP(V6)_RECVORIGDSTADDR too) and IP(V6)_MULTICAST_* with Linux's ranges and defaults (IP_MULTICAST_IF as the in_addr; an IPv4 option read into fewer than 4 bytes as one byte); the membership options are ENOPROTOOPT, as in Linux; SOL_IPV6 on an IPv4 socket is EOPNOTSUPP"),
    ),
    (libc::SYS_setsockopt, sys_setsockopt, Partial("every SOL_SOCKET option is checked and stored as Linux does (buffer doubling and net.core limits, CAP_NET_ADMIN for SO_MARK, SO_*BUFFORCE, SO_PRIORITY above 6, EDOM timeouts, SO_BINDTODEVICE to lo/eth0); SO_PASSCRED, SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY, SO_RCVTIMEO, SO_SNDTIMEO, SO_LINGER with a zero time (close resets), SO_OOBINLINE on TCP and Unix stream sockets, SO_RCVLOWAT on TCP (readiness, blocking receives), IP_RECVERR and IPV6_RECVERR on UDP (the error queue; off empties it), SO_RCVBUF on UDP (datagrams charged Linux 6.18's loopback skb truesize, dropped past the buffer unless none is queued) and SO_BROADCAST on UDP take effect; SO_DETACH_FILTER is ENOENT (no filter can be attached); IPv4 options take fewer than 4 bytes (one, or none as 0) as Linux; IPPROTO_TCP options are checked as Linux; UDPLITE_SEND_CSCOV and UDPLITE_RECV_CSCOV (SOL_UDPLITE or SOL_UDP) are checked, raised and capped as Linux on UDP-Lite sockets (ENOPROTOOPT on UDP) and stored without effect; other SOL_UDP options are ENOPROTOOPT; IP_ADD_MEMBERSHIP/IP_DROP_MEMBERSHIP (ip_mreq or ip_mreqn), IP_MULTICAST_IF (in_addr, ip_mreq or ip_mreqn), IP_MULTICAST_TTL/LOOP/ALL, IPV6_JOIN_GROUP/IPV6_LEAVE_GROUP and IPV6_MULTICAST_IF take effect on UDP sockets with Linux's checks and errors (20 IPv4 groups a socket, ENOBUFS past them); so do MCAST_JOIN_GROUP/MCAST_LEAVE_GROUP at either level, except on TCP sockets (ENOPROTOOPT, where Linux lets them join a group to no use); source-specific multicast (IP_ADD_SOURCE_MEMBERSHIP, IP_BLOCK_SOURCE, IP_MSFILTER, MCAST_JOIN_SOURCE_GROUP and the other MCAST_* options) is not served: ENOPROTOOPT; TCP_CORK holds partial segments back on the sandbox's own connections (full segments go, the rest on uncork, TCP_NODELAY, urgent data, SHUT_WR, close or after Linux's 200 ms ceiling); other buffer sizes, a lingering close's wait, timestamps, keepalive and similar are stored without effect")),
];

/// Does socket description `f` (or this one call's flags) not block?
pub(super) fn nonblocking(f: &FileDescription, flags: u64) -> bool {
    flags & MSG_DONTWAIT != 0 || f.flags() & O_NONBLOCK != 0
}

/// Installs socket `s` as a new descriptor.
pub(super) fn install<S: FileOps + crate::vfs::Node + 'static>(
    task: &Task,
    s: Arc<S>,
    nonblock: bool,
    cloexec: bool,
) -> Result<i32, Errno> {
    let k = &task.kernel;
    let ino = crate::vfs::Node::stat(s.as_ref()).map(|st| st.ino).unwrap_or(0);
    let d = k.anon_dentry(format!("socket:[{ino}]").as_bytes(), s.clone());
    let flags = O_RDWR | if nonblock { O_NONBLOCK } else { 0 };
    task.thread.fds().install(FileDescription::new(d, s, flags), cloexec, 0, task.thread.nofile())
}

/// Makes a socket of type `ty` (with SOCK_NONBLOCK and SOCK_CLOEXEC) with
/// `make`, given the bare type, and installs it.
fn install_new<S: FileOps + crate::vfs::Node + 'static>(
    task: &Task,
    ty: i32,
    make: impl FnOnce(i32) -> Result<Arc<S>, Errno>,
) -> SysResult {
    if ty & !(SOCK_TYPE_MASK | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let nonblock = ty & libc::SOCK_NONBLOCK != 0;
    let s = make(ty & SOCK_TYPE_MASK)?;
    let fd = install(task, s, nonblock, ty & libc::SOCK_CLOEXEC != 0)?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_socket(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (domain, ty) = (int(a[0]), int(a[1]));
    if ping::wants(domain, ty, int(a[2])) {
        return install_new(task, ty, |_| ping::socket(task, domain));
    }
    if domain == AF_INET || domain == AF_INET6 {
        return install_new(task, ty, |kind| inet::socket(task, domain, kind, int(a[2])));
    }
    if domain == AF_NETLINK {
        return install_new(task, ty, |kind| netlink::socket(task, kind, int(a[2])));
    }
    unix::socket(task, domain, ty, int(a[2]))
}

fn sys_socketpair(task: &mut Task, a: [u64; 6]) -> SysResult {
    if int(a[0]) == AF_INET || int(a[0]) == AF_INET6 {
        return Err(Errno::EOPNOTSUPP);
    }
    unix::socketpair(task, a)
}

/// Writes the sockaddr bytes `raw` at `addr`, cut to the room the length
/// at `len_addr` gives, and stores the full length there, as Linux does.
pub(super) fn write_sockaddr(task: &Task, addr: u64, len_addr: u64, raw: &[u8]) -> Result<(), Errno> {
    let mm = task.thread.mm();
    let mut len = [0u8; 4];
    mm.copy_in(len_addr, &mut len)?;
    let room = usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)?;
    mm.copy_out(addr, &raw[..room.min(raw.len())])?;
    mm.copy_out(len_addr, &u32::try_from(raw.len()).unwrap_or(0).to_le_bytes())?;
    Ok(())
}

pub(super) fn read_msghdr(task: &Task, addr: u64) -> Result<MsgHdr, Errno> {
    let mut raw = [0u8; MsgHdr::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let h = MsgHdr::decode(&raw);
    if h.iovlen > 1024 {
        return Err(Errno::EMSGSIZE);
    }
    Ok(h)
}

/// Writes recvmsg's results into the guest's `msghdr` at `addr`: the
/// control bytes used and the flags.
pub(super) fn write_msg_results(task: &Task, addr: u64, controllen: u64, flags: i32) -> Result<(), Errno> {
    let mm = task.thread.mm();
    mm.copy_out(addr + MsgHdr::CONTROLLEN_OFFSET, &controllen.to_le_bytes())?;
    mm.copy_out(addr + MsgHdr::FLAGS_OFFSET, &flags.to_le_bytes())
}

pub(super) fn iovec_list(task: &Task, h: &MsgHdr) -> Result<Vec<(u64, usize)>, Errno> {
    let n = usize::try_from(h.iovlen).map_err(|_| Errno::EMSGSIZE)?;
    let mut raw = vec![0u8; n * Iovec::SIZE];
    task.thread.mm().copy_in(h.iov, &mut raw)?;
    Iovec::decode_all(&raw)
        .map(|Iovec { base, len }| {
            let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
            args::user_range(base, len)?;
            Ok((base, len))
        })
        .collect()
}

/// getsockopt's length argument: EFAULT when unreadable, EINVAL when
/// negative.
pub(super) fn read_optlen(task: &Task, opt: OptArg) -> Result<usize, Errno> {
    let mut len = [0u8; 4];
    task.thread.mm().copy_in(opt.len, &mut len)?;
    usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)
}

/// Writes getsockopt's `value` to the guest: as much as its length
/// argument allows, and the length written back.
pub(super) fn write_sockopt(task: &Task, opt: OptArg, value: &[u8]) -> SysResult {
    let mm = task.thread.mm();
    let mut len = [0u8; 4];
    mm.copy_in(opt.len, &mut len)?;
    let len = usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)?;
    let n = len.min(value.len());
    mm.copy_out(opt.val, &value[..n])?;
    mm.copy_out(opt.len, &u32::try_from(n).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}

/// A position in a list of guest buffers (address, length).
pub(super) struct Cursor<'a> {
    bufs: &'a [UserBuf],
    index: usize,
    offset: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bufs: &'a [UserBuf]) -> Cursor<'a> {
        Cursor { bufs, index: 0, offset: 0 }
    }

    /// Copies up to `max` bytes from the position into `out` (cleared
    /// first), without moving.
    pub(super) fn peek(&self, mm: &MemoryManager, out: &mut Vec<u8>, max: usize) -> Result<(), Errno> {
        out.clear();
        let mut off = self.offset;
        for &(base, len) in &self.bufs[self.index..] {
            let n = (len - off).min(max - out.len());
            let at = out.len();
            out.resize(at + n, 0);
            mm.copy_in(base + off as u64, &mut out[at..])?;
            if out.len() == max {
                break;
            }
            off = 0;
        }
        Ok(())
    }

    /// Moves past `n` bytes.
    pub(super) fn advance(&mut self, mut n: usize) {
        while n > 0 && self.index < self.bufs.len() {
            let left = self.bufs[self.index].1 - self.offset;
            if n < left {
                self.offset += n;
                return;
            }
            n -= left;
            self.index += 1;
            self.offset = 0;
        }
    }
}

/// A sockaddr argument: address and length (or where the length is).
fn addr_arg(addr: u64, len: u64) -> SockAddrArg {
    SockAddrArg { addr, len }
}

/// A socket option argument of get/setsockopt(2).
fn opt_arg(a: [u64; 6]) -> OptArg {
    OptArg { level: int(a[1]), name: int(a[2]), val: a[3], len: a[4] }
}

fn sys_bind(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.bind(task, addr_arg(a[1], a[2]))
}

fn sys_listen(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.listen(task, int(a[1]))
}

fn sys_connect(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    s.connect(task, &f, addr_arg(a[1], a[2]))
}

fn accept(task: &Task, a: [u64; 6], flags: i32) -> SysResult {
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (f, s) = of_fd(task, a[0])?;
    s.accept(task, &f, addr_arg(a[1], a[2]), flags)
}

fn sys_accept(task: &mut Task, a: [u64; 6]) -> SysResult {
    accept(task, a, 0)
}

fn sys_accept4(task: &mut Task, a: [u64; 6]) -> SysResult {
    accept(task, a, int(a[3]))
}

fn sys_getsockname(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.getsockname(task, addr_arg(a[1], a[2]))
}

fn sys_getpeername(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.getpeername(task, addr_arg(a[1], a[2]))
}

fn sys_sendto(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    s.sendto(task, &f, (a[1], super::file::count(a[2])), a[3], addr_arg(a[4], a[5]))
}

fn sys_recvfrom(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    s.recvfrom(task, &f, (a[1], super::file::count(a[2])), a[3], addr_arg(a[4], a[5]))
}

fn sys_sendmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    s.sendmsg(task, &f, a[1], a[2])
}

fn sys_recvmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = of_fd(task, a[0])?;
    s.recvmsg(task, &f, a[1], a[2])
}

fn sys_shutdown(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.shutdown(task, int(a[1]))
}

fn sys_getsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.getsockopt(task, opt_arg(a))
}

fn sys_setsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    of_fd(task, a[0])?.1.setsockopt(task, opt_arg(a))
}
