//! System calls: sockets. Unix sockets (stream, datagram, seqpacket) are
//! served here; IP sockets (AF_INET, AF_INET6) are netstack endpoints,
//! whose calls inet.rs serves. Other families fail the way Linux fails for
//! a family it does not have.

use super::args::{self, int};
use super::sockopt::{self, Sock};
use super::{inet, netlink, ping};
use super::{Entries, Support::*};
use crate::abi::fcntl::{AT_FDCWD_ARG, O_NONBLOCK, O_RDWR};
use crate::abi::layout::{Encoder, Layout};
use crate::abi::socket::{
    cmsg_align, CmsgHdr, MsgHdr, Ucred, AF_INET, AF_INET6, AF_NETLINK, AF_UNIX, MSG_CMSG_CLOEXEC, MSG_CTRUNC,
    MSG_DONTWAIT, MSG_NOSIGNAL, MSG_OOB, MSG_PEEK, MSG_TRUNC, MSG_WAITALL, SCM_CREDENTIALS, SCM_MAX_FD, SCM_RIGHTS,
    SHUT_RD, SHUT_RDWR, SHUT_WR, SOCK_TYPE_MASK, SOL_SOCKET, SO_ACCEPTCONN, SO_PASSCRED, SO_PEERCRED, SO_PEERGROUPS,
};
use crate::abi::uio::Iovec;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::fs::unix::{Inflight, PeerCred, Rights, SenderCred, SockType, UnixName, UnixNames, UnixSocket, UnixStream};
use crate::fs::unix_msg::QUEUE_BYTES;
use crate::kernel::Task;
use crate::vfs::FileOps;
use crate::vfs::{FileDescription, READ_EVENTS, WRITE_EVENTS};
use std::sync::Arc;

const FAMILIES: &str = "AF_UNIX (stream, datagram, seqpacket), AF_INET/AF_INET6 (TCP, UDP; the sandbox's own, out through the egress gateway, in through --publish or a container's ports; ICMP echo sockets, SOCK_DGRAM with IPPROTO_ICMP/IPPROTO_ICMPV6 as unprivileged ping uses, carried on host ping sockets of the outer namespace, so EACCES when its net.ipv4.ping_group_range refuses them, each echo request checked against the egress policy (EPERM when denied), with --network none sends fail with ENETUNREACH, their options other than SO_RCVTIMEO/SO_SNDTIMEO are ENOPROTOOPT; raw and packet sockets EPERM) and AF_NETLINK (NETLINK_ROUTE dumps, no events): other families fail with EAFNOSUPPORT";
const UNIX: &str = "Unix and IP sockets (ENOTSOCK on other descriptors)";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_socket, sys_socket, Partial(FAMILIES)),
    (libc::SYS_socketpair, sys_socketpair, Partial("AF_UNIX only; IP families fail with EOPNOTSUPP as in Linux")),
    (libc::SYS_bind, sys_bind, Partial(UNIX)),
    (libc::SYS_listen, sys_listen, Partial("the backlog is not limited")),
    (libc::SYS_accept, sys_accept, Partial(UNIX)),
    (libc::SYS_accept4, sys_accept4, Partial(UNIX)),
    (libc::SYS_connect, sys_connect, Partial("connections are accepted immediately (no backlog limit, never EAGAIN)")),
    (libc::SYS_getsockname, sys_getsockname, Partial(UNIX)),
    (libc::SYS_getpeername, sys_getpeername, Partial(UNIX)),
    (libc::SYS_sendto, sys_sendto, Partial(UNIX)),
    (libc::SYS_recvfrom, sys_recvfrom, Partial("no MSG_OOB (EOPNOTSUPP); MSG_ERRQUEUE on an IP socket is EAGAIN (its error queue stays empty)")),
    (libc::SYS_sendmsg, sys_sendmsg, Partial("SCM_RIGHTS and SCM_CREDENTIALS on Unix sockets (IP sockets ignore control messages); descriptors in flight are capped at RLIMIT_NOFILE sandbox-wide, for root too (ETOOMANYREFS)")),
    (libc::SYS_recvmsg, sys_recvmsg, Partial("a UDP datagram of the sandbox's own comes with SO_TIMESTAMP(NS), IP_PKTINFO, IP_TTL, IP_TOS, IPV6_PKTINFO, IPV6_HOPLIMIT and IPV6_TCLASS messages as asked, truncated as put_cmsg does; no SO_TIMESTAMPING or TCP_INQ messages, none for datagrams from outside the sandbox; on a Unix stream socket one read may take several sends' descriptors, and reports the first explicitly sent credentials (else the peer's); MSG_PEEK returns no descriptors; no MSG_OOB")),
    (libc::SYS_shutdown, sys_shutdown, Partial("SHUT_RD of a datagram socket does not refuse senders")),
    (
        libc::SYS_getsockopt,
        sys_getsockopt,
        Partial("every SOL_SOCKET option Linux has, on every family, with its argument checks (no SO_PEERSEC label, no SO_PEEK_OFF, no socket filters; SO_PEERGROUPS of a connected Unix socket is ENOPROTOOPT); TCP: every IPPROTO_TCP option with Linux's ranges and rounding, TCP_INFO with the connection's state (counters of a lossless path), TCP_CONGESTION cubic or reno; IP: IPV6_V6ONLY, and IP_TOS, IP_TTL, IPV6_TCLASS, IPV6_UNICAST_HOPS, the IP_RECV*/IPV6_RECV* flags and IP(V6)_MULTICAST_* with Linux's ranges and defaults"),
    ),
    (libc::SYS_setsockopt, sys_setsockopt, Partial("every SOL_SOCKET option is checked and stored as Linux does (buffer doubling and net.core limits, CAP_NET_ADMIN for SO_MARK, SO_*BUFFORCE, SO_PRIORITY above 6, EDOM timeouts, SO_BINDTODEVICE to lo/eth0); SO_PASSCRED, SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY, SO_RCVTIMEO, SO_SNDTIMEO, SO_LINGER with a zero time (close resets) and SO_RCVLOWAT on TCP (readiness, blocking receives) take effect; IPPROTO_TCP options are checked as Linux; buffer sizes, a lingering close's wait, timestamps, keepalive, TCP_NODELAY and similar are stored without effect")),
];

/// The largest control buffer sendmsg reads (Linux's optmem_max).
const OPTMEM_MAX: usize = 20480;
/// sizeof(struct cmsghdr).
const CMSG_HDR: usize = CmsgHdr::SIZE;

/// The Unix stream socket behind descriptor `fd`.
fn socket_of(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Arc<UnixSocket>), Errno> {
    let f = args::file(task, fd)?;
    // The description's operations are the socket itself.
    let s = f.ops.clone().into_any().downcast::<UnixSocket>().map_err(|_| Errno::ENOTSOCK)?;
    Ok((f, s))
}

/// A socket of a family other than AF_UNIX, served by its own module.
enum Other {
    Inet(inet::Open),
    Netlink(netlink::Open),
    Ping(ping::Open),
}

/// The IP or netlink socket behind descriptor `fd`, if it is one.
fn other(task: &Task, fd: u64) -> Result<Option<Other>, Errno> {
    let f = args::file(task, fd)?;
    Ok(inet::socket_of(&f)
        .map(Other::Inet)
        .or_else(|| netlink::socket_of(&f).map(Other::Netlink))
        .or_else(|| ping::socket_of(&f).map(Other::Ping)))
}

/// Does socket description `f` (or this one call's flags) not block?
pub(super) fn nonblocking(f: &FileDescription, flags: u64) -> bool {
    flags & MSG_DONTWAIT != 0 || f.flags() & O_NONBLOCK != 0
}

/// Checks socket(2)/socketpair(2) arguments; returns (type, nonblock,
/// cloexec).
fn check_type(domain: i32, ty: i32, protocol: i32) -> Result<(SockType, bool, bool), Errno> {
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if ty & !(SOCK_TYPE_MASK | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    // Linux: types past SOCK_PACKET are invalid, others Unix sockets lack
    // are unsupported.
    if ty & SOCK_TYPE_MASK > 10 {
        return Err(Errno::EINVAL);
    }
    let kind = SockType::from_number(ty & SOCK_TYPE_MASK).ok_or(Errno::ESOCKTNOSUPPORT)?;
    if protocol != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok((kind, ty & libc::SOCK_NONBLOCK != 0, ty & libc::SOCK_CLOEXEC != 0))
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
    let (kind, nonblock, cloexec) = check_type(domain, ty, int(a[2]))?;
    let s = UnixSocket::new(task.kernel.anon_ino(), super::fd::now(), kind);
    u64::try_from(install(task, s, nonblock, cloexec)?).map_err(|_| Errno::EMFILE)
}

fn sys_socketpair(task: &mut Task, a: [u64; 6]) -> SysResult {
    if int(a[0]) == AF_INET || int(a[0]) == AF_INET6 {
        return Err(Errno::EOPNOTSUPP);
    }
    let (kind, nonblock, cloexec) = check_type(int(a[0]), int(a[1]), int(a[2]))?;
    let k = &task.kernel;
    let now = super::fd::now();
    let creds = task.thread.creds();
    let cred = (task.thread.tgid, creds.euid, creds.egid);
    let inos = (k.anon_ino(), k.anon_ino());
    let (sa, sb) = match kind {
        SockType::Dgram => UnixSocket::dgram_pair(inos, now, cred),
        _ => {
            let (x, y) = match kind {
                SockType::SeqPacket => UnixStream::packet_pair((cred, cred)),
                _ => UnixStream::pair(inos, now, (cred, cred)),
            };
            (UnixSocket::connected(inos.0, now, kind, x), UnixSocket::connected(inos.1, now, kind, y))
        }
    };
    let fa = install(task, sa, nonblock, cloexec)?;
    let fds = task.thread.fds();
    let fb = match install(task, sb, nonblock, cloexec) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = fds.remove(fa);
            return Err(e);
        }
    };
    let mut out = Encoder::new();
    out.i32(fa).i32(fb);
    if let Err(e) = task.thread.mm().copy_out(a[3], out.as_bytes()) {
        let _ = fds.remove(fa);
        let _ = fds.remove(fb);
        return Err(e);
    }
    Ok(0)
}

/// Reads a sockaddr_un: None for an unnamed address (autobind).
fn read_unix_addr(task: &Task, addr: u64, len: u64) -> Result<Option<(bool, Vec<u8>)>, Errno> {
    let len = usize::try_from(len).map_err(|_| Errno::EINVAL)?;
    if !(2..=110).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut raw)?;
    if u16::from_le_bytes([raw[0], raw[1]]) != 1 {
        return Err(Errno::EINVAL);
    }
    let path = &raw[2..];
    if path.is_empty() {
        return Ok(None);
    }
    if path[0] == 0 {
        return Ok(Some((true, path[1..].to_vec())));
    }
    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    Ok(Some((false, path[..end].to_vec())))
}

/// Writes a sockaddr_un for `name` (family only when unnamed).
fn write_unix_addr(task: &Task, addr: u64, len_addr: u64, name: Option<&UnixName>) -> Result<(), Errno> {
    let mut e = Encoder::new();
    e.u16(1);
    if let Some(n) = name {
        e.bytes(&n.sun_path());
    }
    write_sockaddr(task, addr, len_addr, e.as_bytes())
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

fn sys_bind(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::bind(task, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::bind(task, &s, a),
        Some(Other::Ping((_, s))) => return ping::bind(task, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    // Linux makes the socket file before it checks the socket is unbound.
    let bound = || if s.local_name().is_some() || s.stream().is_ok() { Err(Errno::EINVAL) } else { Ok(()) };
    let k = &task.kernel;
    let name = match read_unix_addr(task, a[1], a[2])? {
        // Autobind: a unique abstract name.
        None => {
            bound()?;
            UnixName::Abstract(format!("{:05x}", k.anon_ino()).into_bytes())
        }
        Some((true, n)) => {
            bound()?;
            UnixName::Abstract(n)
        }
        Some((false, path)) => {
            let pn = args::parent_at(task, AT_FDCWD_ARG, &path)?;
            if pn.name.is_empty() {
                return Err(Errno::EADDRINUSE);
            }
            if pn.parent.node.lookup(&pn.name).is_ok() {
                return Err(Errno::EADDRINUSE);
            }
            bound()?;
            let creds = task.thread.creds();
            let mode = crate::vfs::S_IFSOCK | (0o777 & !task.thread.fs().umask());
            pn.parent.node.mknod(&pn.name, crate::vfs::NewNode { mode, uid: creds.fsuid, gid: creds.fsgid }, 0)?;
            crate::vfs::notify::created(pn.parent.node.as_ref(), &pn.name, false);
            let st = pn.parent.node.lookup(&pn.name)?.stat()?;
            UnixName::File { dev: st.dev, ino: st.ino, path }
        }
    };
    k.ext::<UnixNames>().bind(&name, &s)?;
    Ok(0)
}

fn sys_listen(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::listen(task, &s),
        Some(Other::Netlink((_, _))) => return Err(Errno::EOPNOTSUPP),
        Some(Other::Ping((_, _))) => return Err(Errno::EOPNOTSUPP),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    let creds = task.thread.creds();
    s.listen((task.thread.tgid, creds.euid, creds.egid))?;
    Ok(0)
}

/// The socket bound to the address at `addr` that a socket of type `ty`
/// reaches (connect, sendto). A path bound by a socket of another type is
/// EPROTOTYPE (the caller checks); an abstract name is per type.
fn bound_socket(task: &Task, addr: u64, len: u64, ty: SockType) -> Result<Arc<UnixSocket>, Errno> {
    let name = match read_unix_addr(task, addr, len)? {
        None => return Err(Errno::EINVAL),
        Some((true, n)) => UnixName::Abstract(n),
        Some((false, path)) => {
            let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
            let st = d.node.stat()?;
            if st.mode & crate::vfs::S_IFMT != crate::vfs::S_IFSOCK {
                return Err(Errno::ECONNREFUSED);
            }
            UnixName::File { dev: st.dev, ino: st.ino, path: Vec::new() }
        }
    };
    let key = name.key(ty);
    task.kernel.ext::<UnixNames>().find(&key).ok_or(Errno::ECONNREFUSED)
}

/// The address family of the sockaddr at `addr` (`len` bytes long).
fn family(task: &Task, addr: u64, len: u64) -> Result<u16, Errno> {
    if len < 2 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 2];
    task.thread.mm().copy_in(addr, &mut raw)?;
    Ok(u16::from_ne_bytes(raw))
}

/// sa_family_t's "no family": a datagram socket's connect(2) to it
/// disconnects.
const AF_UNSPEC: u16 = 0;

fn sys_connect(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::connect(task, &f, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::connect(task, &s, a),
        Some(Other::Ping((_, s))) => return ping::connect(task, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    if s.ty() == SockType::Dgram && family(task, a[1], a[2])? == AF_UNSPEC {
        // Dissolves the association, as Linux's unix_dgram_connect.
        s.dgram_disconnect()?;
        return Ok(0);
    }
    let target = bound_socket(task, a[1], a[2], s.ty())?;
    if s.ty() == SockType::Dgram {
        s.dgram_connect(&target)?;
        return Ok(0);
    }
    let k = &task.kernel;
    let creds = task.thread.creds();
    s.connect(&target, (k.anon_ino(), k.anon_ino()), (task.thread.tgid, creds.euid, creds.egid))?;
    Ok(0)
}

fn accept(task: &Task, a: [u64; 6], flags: i32) -> SysResult {
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::accept(task, &f, &s, a, flags),
        Some(Other::Netlink((_, _))) => return Err(Errno::EOPNOTSUPP),
        Some(Other::Ping((_, _))) => return Err(Errno::EOPNOTSUPP),
        None => {}
    }
    let (f, s) = socket_of(task, a[0])?;
    let nonblock_listener = f.flags() & O_NONBLOCK != 0;
    // SO_RCVTIMEO bounds the wait (EAGAIN), as in Linux's accept.
    let deadline = f.ops.io_timeout(false).map(crate::waiter::deadline_in);
    let conn = super::block::wait_io(&f, READ_EVENTS, nonblock_listener, deadline, || s.accept())?;
    let nonblock = flags & libc::SOCK_NONBLOCK != 0;
    let peer = conn.peer_name().ok().flatten();
    let fd = install(task, conn, nonblock, flags & libc::SOCK_CLOEXEC != 0)?;
    if a[1] != 0 {
        write_unix_addr(task, a[1], a[2], peer.as_ref())?;
    }
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_accept(task: &mut Task, a: [u64; 6]) -> SysResult {
    accept(task, a, 0)
}

fn sys_accept4(task: &mut Task, a: [u64; 6]) -> SysResult {
    accept(task, a, int(a[3]))
}

fn sys_getsockname(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::getsockname(task, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::getsockname(task, &s, a),
        Some(Other::Ping((_, s))) => return ping::getsockname(task, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    write_unix_addr(task, a[1], a[2], s.local_name().as_ref())?;
    Ok(0)
}

fn sys_getpeername(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::getpeername(task, &s, a),
        Some(Other::Netlink((_, _))) => return netlink::getpeername(task, a),
        Some(Other::Ping(_)) => return ping::getpeername(),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    let peer = s.peer_name()?;
    write_unix_addr(task, a[1], a[2], peer.as_ref())?;
    Ok(0)
}

/// The most a stream send or receive moves per step (the sentry's own
/// buffer; the guest's length is not allocated whole).
const STREAM_CHUNK: usize = 1 << 20;

/// The most one call moves through the sentry's own buffer: a message is
/// at most a queue's size; a stream moves a chunk and reports a short
/// count.
fn buffer_cap(s: &UnixSocket) -> usize {
    if s.ty().has_messages() {
        QUEUE_BYTES
    } else {
        STREAM_CHUNK
    }
}

/// Does an EPIPE from `s` raise SIGPIPE? Only for stream sockets, as in
/// Linux (datagram and seqpacket sends just fail).
fn sigpipe(task: &Task, s: &UnixSocket, flags: u64, r: &Result<usize, Errno>) {
    if *r == Err(Errno::EPIPE) && flags & MSG_NOSIGNAL == 0 && !s.ty().has_messages() {
        task.kernel.raise_sigpipe(&task.thread);
    }
}

/// Sends `data` on Unix socket `s` (description `f`), to `to` if given,
/// with the descriptors in `rights` on its first byte: a message whole,
/// a stream's bytes all, unless `nonblock` (then what fits). The call
/// waits for room on the queue it comes from (`to`'s receive queue, else
/// the socket's own), until SO_SNDTIMEO (EAGAIN) and interruptibly; a
/// wait that ends after some of a stream's bytes returns their count, as
/// Linux's unix_stream_sendmsg.
fn unix_send(
    f: &FileDescription,
    s: &UnixSocket,
    to: Option<&Arc<UnixSocket>>,
    data: &[u8],
    nonblock: bool,
    mut rights: Option<Rights>,
    cred: SenderCred,
) -> Result<usize, Errno> {
    let deadline = f.ops.io_timeout(true).map(crate::waiter::deadline_in);
    let inbox = to.and_then(|t| t.inbox().cloned());
    let mut done = 0;
    loop {
        let attempt = || s.send_msg(to, &data[done..], &mut rights, cred);
        let r = match &inbox {
            Some(q) => super::block::wait_io_on(&q.queue, WRITE_EVENTS, nonblock, deadline, attempt),
            None => super::block::wait_io(f, WRITE_EVENTS, nonblock, deadline, attempt),
        };
        match r {
            Ok(n) => {
                done += n;
                if n == 0 || done >= data.len() || nonblock || s.ty().has_messages() {
                    return Ok(done);
                }
            }
            Err(_) if done > 0 => return Ok(done),
            Err(e) => return Err(e),
        }
    }
}

/// Receives from Unix socket `s` (description `f`) into `buf`, waiting
/// for data unless `dontwait`, until SO_RCVTIMEO (EAGAIN) and
/// interruptibly.
fn unix_recv(
    f: &FileDescription,
    s: &UnixSocket,
    buf: &mut [u8],
    dontwait: bool,
    peek: bool,
) -> Result<crate::fs::unix::Delivery, Errno> {
    let deadline = f.ops.io_timeout(false).map(crate::waiter::deadline_in);
    super::block::wait_io(f, READ_EVENTS, dontwait, deadline, || s.recv_msg(buf, peek))
}

/// Sends `len` bytes at `addr` (the whole, blocking, unless DONTWAIT),
/// to `to` if given (a datagram's destination).
fn send(task: &Task, fd: u64, addr: u64, len: usize, flags: u64, to: Option<Arc<UnixSocket>>) -> SysResult {
    let (f, s) = socket_of(task, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    args::user_range(addr, len)?;
    let nonblock = nonblocking(&f, flags);
    if s.ty().has_messages() {
        if len > QUEUE_BYTES {
            return Err(Errno::EMSGSIZE);
        }
        let mut buf = vec![0u8; len];
        task.thread.mm().copy_in(addr, &mut buf)?;
        let r = unix_send(&f, &s, to.as_ref(), &buf, nonblock, None, SenderCred::of_current());
        sigpipe(task, &s, flags, &r);
        return r.map(|n| n as u64);
    }
    // A stream takes the bytes a chunk at a time.
    let mut done = 0usize;
    let mut buf = vec![0u8; len.min(STREAM_CHUNK)];
    while done < len || len == 0 {
        let n = (len - done).min(STREAM_CHUNK);
        task.thread.mm().copy_in(addr + done as u64, &mut buf[..n])?;
        let r = unix_send(&f, &s, None, &buf[..n], nonblock, None, SenderCred::of_current());
        match r {
            Ok(w) => {
                done += w;
                if w < n || len == 0 {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => {
                sigpipe(task, &s, flags, &r);
                return Err(e);
            }
        }
    }
    Ok(done as u64)
}

/// Receives up to `len` bytes into `addr`; returns the count (a message's
/// whole length with MSG_TRUNC) and the sender's name.
fn recv(task: &Task, fd: u64, addr: u64, len: usize, flags: u64) -> Result<(u64, Option<UnixName>), Errno> {
    let (f, s) = socket_of(task, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    args::user_range(addr, len)?;
    let dontwait = nonblocking(&f, flags);
    let peek = flags & MSG_PEEK != 0;
    // No message is longer than a queue; a stream read may return less.
    let len = len.min(buffer_cap(&s));
    let mut buf = vec![0u8; len];
    let d = unix_recv(&f, &s, &mut buf, dontwait, peek)?;
    let mut got = d.len;
    // MSG_WAITALL gathers more only when a stream's bytes are consumed.
    while s.ty() == SockType::Stream && flags & MSG_WAITALL != 0 && got < len && !dontwait && !peek {
        let n = match unix_recv(&f, &s, &mut buf[got..], false, false) {
            Ok(more) => more.len,
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        got += n;
    }
    task.thread.mm().copy_out(addr, &buf[..got])?;
    let reported = if flags & MSG_TRUNC != 0 && s.ty().has_messages() { d.full } else { got };
    Ok((reported as u64, d.from))
}

fn sys_sendto(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::sendto(task, &f, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::sendto(task, &s, a),
        Some(Other::Ping((f, s))) => return ping::sendto(task, &f, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    let to = destination(task, &s, a[4], a[5])?;
    send(task, a[0], a[1], super::file::count(a[2]), a[3], to)
}

/// The destination a send names (address `addr` of `len` bytes), as
/// Linux reads it: a datagram socket's target; ignored by a seqpacket
/// socket; refused by a stream socket (EISCONN, or EOPNOTSUPP unconnected).
fn destination(task: &Task, s: &UnixSocket, addr: u64, len: u64) -> Result<Option<Arc<UnixSocket>>, Errno> {
    if addr == 0 || len == 0 {
        return Ok(None);
    }
    match s.ty() {
        SockType::Dgram => bound_socket(task, addr, len, s.ty()).map(Some),
        SockType::SeqPacket => Ok(None),
        SockType::Stream => Err(if s.stream().is_ok() { Errno::EISCONN } else { Errno::EOPNOTSUPP }),
    }
}

fn sys_recvfrom(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::recvfrom(task, &f, &s, a),
        Some(Other::Netlink((f, s))) => return netlink::recvfrom(task, &f, &s, a),
        Some(Other::Ping((f, s))) => return ping::recvfrom(task, &f, &s, a),
        None => {}
    }
    let (n, from) = recv(task, a[0], a[1], super::file::count(a[2]), a[3])?;
    if a[4] != 0 && a[5] != 0 {
        match from {
            Some(name) => write_unix_addr(task, a[4], a[5], Some(&name))?,
            None => task.thread.mm().copy_out(a[5], &0u32.to_le_bytes())?,
        }
    }
    Ok(n)
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

/// The descriptors a sendmsg control buffer passes with SCM_RIGHTS.
/// sendmsg's control messages: descriptors (SCM_RIGHTS) and credentials
/// (SCM_CREDENTIALS, checked as Linux does: one's own pid and ids unless
/// privileged).
fn read_control(task: &Task, h: &MsgHdr) -> Result<(Option<Rights>, SenderCred), Errno> {
    let mut cred = SenderCred::of_current();
    let len = usize::try_from(h.controllen).map_err(|_| Errno::ENOBUFS)?;
    if len < CMSG_HDR {
        return Ok((None, cred));
    }
    if len > OPTMEM_MAX {
        return Err(Errno::ENOBUFS);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(h.control, &mut raw)?;
    let mut files = Vec::new();
    let mut off = 0;
    while len - off >= CMSG_HDR {
        let CmsgHdr { len: cmsg_len, level, ty } = CmsgHdr::decode(&raw[off..off + CMSG_HDR]);
        let cmsg_len = usize::try_from(cmsg_len).map_err(|_| Errno::EINVAL)?;
        if cmsg_len < CMSG_HDR || cmsg_len > len - off {
            return Err(Errno::EINVAL);
        }
        if level == SOL_SOCKET {
            match ty {
                SCM_RIGHTS => {
                    let fds = &raw[off + CMSG_HDR..off + cmsg_len];
                    let n = fds.len() / 4;
                    if n == 0 || files.len() + n > SCM_MAX_FD {
                        return Err(Errno::EINVAL);
                    }
                    for fd in fds.chunks_exact(4) {
                        let fd = i32::from_le_bytes([fd[0], fd[1], fd[2], fd[3]]);
                        files.push(task.thread.fds().get(fd)?);
                    }
                }
                SCM_CREDENTIALS => {
                    if cmsg_len != CMSG_HDR + Ucred::SIZE {
                        return Err(Errno::EINVAL);
                    }
                    let Ucred { pid, uid, gid } = Ucred::decode(&raw[off + CMSG_HDR..off + cmsg_len]);
                    let given = (pid, uid, gid);
                    check_cred(task, given)?;
                    cred = SenderCred { cred: given, explicit: true };
                }
                _ => return Err(Errno::EINVAL),
            }
        }
        off = off.saturating_add(cmsg_align(cmsg_len)).min(len);
    }
    if files.is_empty() {
        return Ok((None, cred));
    }
    let limit = usize::try_from(task.thread.nofile()).unwrap_or(usize::MAX);
    Ok((Some(Rights::new(files, &task.kernel.ext::<Inflight>(), limit)?), cred))
}

/// May the caller claim `(pid, uid, gid)`? Each as scm_check_creds: its
/// own process or CAP_SYS_ADMIN, one of its real, effective or saved uids
/// or CAP_SETUID, and likewise for the gid with CAP_SETGID; the process
/// must exist.
fn check_cred(task: &Task, (pid, uid, gid): PeerCred) -> Result<(), Errno> {
    let c = task.thread.creds();
    let pid_ok = pid == task.thread.tgid || c.capable(caps::CAP_SYS_ADMIN);
    let uid_ok = [c.uid, c.euid, c.suid].contains(&uid) || c.capable(caps::CAP_SETUID);
    let gid_ok = [c.gid, c.egid, c.sgid].contains(&gid) || c.capable(caps::CAP_SETGID);
    if !(pid_ok && uid_ok && gid_ok) {
        return Err(Errno::EPERM);
    }
    if task.kernel.procs.alive(pid) {
        Ok(())
    } else {
        Err(Errno::ESRCH)
    }
}

/// Writes an SCM_CREDENTIALS message at the start of the recvmsg control
/// buffer (Linux puts it first); returns (control bytes used, msg_flags).
fn write_cred(task: &Task, h: &MsgHdr, (pid, uid, gid): PeerCred) -> Result<(usize, i32), Errno> {
    let cmsg_len = CMSG_HDR + Ucred::SIZE;
    let room = usize::try_from(h.controllen).unwrap_or(usize::MAX);
    if room < cmsg_len {
        return Ok((0, MSG_CTRUNC));
    }
    let mut e = Encoder::new();
    CmsgHdr { len: cmsg_len as u64, level: SOL_SOCKET, ty: SCM_CREDENTIALS }.encode_to(&mut e);
    Ucred { pid, uid, gid }.encode_to(&mut e);
    task.thread.mm().copy_out(h.control, e.as_bytes())?;
    Ok((cmsg_align(cmsg_len).min(room), 0))
}

/// Installs received descriptors and writes their SCM_RIGHTS message into
/// the recvmsg control buffer at offset `at`; returns (control bytes used
/// there, msg_flags).
fn write_rights(task: &Task, h: &MsgHdr, at: usize, rights: Vec<Rights>, cloexec: bool) -> Result<(u64, i32), Errno> {
    let files: Vec<Arc<FileDescription>> = rights.into_iter().flat_map(Rights::take).collect();
    if files.is_empty() {
        return Ok((0, 0));
    }
    let room = usize::try_from(h.controllen).unwrap_or(usize::MAX).saturating_sub(at);
    if room < CMSG_HDR + 4 {
        return Ok((0, MSG_CTRUNC));
    }
    let fit = files.len().min((room - CMSG_HDR) / 4);
    let table = task.thread.fds();
    let mut fds = Vec::with_capacity(fit);
    let mut flags = if fit < files.len() { MSG_CTRUNC } else { 0 };
    for f in files.into_iter().take(fit) {
        match table.install(f, cloexec, 0, task.thread.nofile()) {
            Ok(fd) => fds.push(fd),
            Err(_) => {
                flags |= MSG_CTRUNC;
                break;
            }
        }
    }
    if fds.is_empty() {
        return Ok((0, flags));
    }
    let cmsg_len = CMSG_HDR + 4 * fds.len();
    let mut e = Encoder::new();
    CmsgHdr { len: cmsg_len as u64, level: SOL_SOCKET, ty: SCM_RIGHTS }.encode_to(&mut e);
    for fd in &fds {
        e.i32(*fd);
    }
    if let Err(err) = task.thread.mm().copy_out(h.control + at as u64, e.as_bytes()) {
        for fd in fds {
            let _ = table.remove(fd);
        }
        return Err(err);
    }
    Ok((cmsg_align(cmsg_len).min(room) as u64, flags))
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

pub(super) fn sys_sendmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::sendmsg(task, &f, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::sendmsg(task, &s, a),
        Some(Other::Ping((f, s))) => return ping::sendmsg(task, &f, &s, a),
        None => {}
    }
    let (f, s) = socket_of(task, a[0])?;
    let h = read_msghdr(task, a[1])?;
    let to = destination(task, &s, h.name, u64::from(h.namelen))?;
    let (rights, cred) = read_control(task, &h)?;
    // A message must fit a queue; a stream send takes what fits in one
    // chunk of the sentry's buffer (a short count, as sockets may give).
    let limit = buffer_cap(&s);
    let mut data = Vec::new();
    for (base, len) in iovec_list(task, &h)? {
        let take = len.min(limit.saturating_sub(data.len()));
        if take < len && s.ty().has_messages() {
            return Err(Errno::EMSGSIZE);
        }
        let mut part = vec![0u8; take];
        task.thread.mm().copy_in(base, &mut part)?;
        data.extend_from_slice(&part);
    }
    // Linux sends nothing, descriptors included, for an empty stream
    // message; an empty datagram or packet is a message of its own.
    let rights = rights.filter(|_| !data.is_empty() || s.ty().has_messages());
    let nonblock = nonblocking(&f, a[2]);
    let r = unix_send(&f, &s, to.as_ref(), &data, nonblock, rights, cred);
    sigpipe(task, &s, a[2], &r);
    r.map(|n| n as u64)
}

pub(super) fn sys_recvmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((f, s))) => return inet::recvmsg(task, &f, &s, a),
        Some(Other::Netlink((f, s))) => return netlink::recvmsg(task, &f, &s, a),
        Some(Other::Ping((f, s))) => return ping::recvmsg(task, &f, &s, a),
        None => {}
    }
    let (f, s) = socket_of(task, a[0])?;
    if a[2] & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let h = read_msghdr(task, a[1])?;
    let iov = iovec_list(task, &h)?;
    let total: usize = iov.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add).min(buffer_cap(&s));
    let mut buf = vec![0u8; total];
    let d = unix_recv(&f, &s, &mut buf, nonblocking(&f, a[2]), a[2] & MSG_PEEK != 0)?;
    let got = d.len;
    let mut at = 0;
    for (base, len) in iov {
        if at >= got {
            break;
        }
        let n = len.min(got - at);
        task.thread.mm().copy_out(base, &buf[at..at + n])?;
        at += n;
    }
    let (cred_len, cred_flags) =
        if s.passcred.load(std::sync::atomic::Ordering::Relaxed) { write_cred(task, &h, d.cred)? } else { (0, 0) };
    let (rights_len, mut flags) = write_rights(task, &h, cred_len, d.rights, a[2] & MSG_CMSG_CLOEXEC != 0)?;
    flags |= cred_flags;
    let controllen = cred_len as u64 + rights_len;
    // Linux echoes MSG_CMSG_CLOEXEC back in msg_flags.
    if a[2] & MSG_CMSG_CLOEXEC != 0 {
        flags |= i32::try_from(MSG_CMSG_CLOEXEC).unwrap_or(0);
    }
    if d.len < d.full {
        flags |= i32::try_from(MSG_TRUNC).unwrap_or(0);
    }
    match d.from.filter(|_| h.name != 0) {
        Some(name) => write_unix_addr(task, h.name, a[1] + MsgHdr::NAMELEN_OFFSET, Some(&name))?,
        None => task.thread.mm().copy_out(a[1] + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?,
    }
    write_msg_results(task, a[1], controllen, flags)?;
    let reported = if a[2] & MSG_TRUNC != 0 && s.ty().has_messages() { d.full } else { got };
    Ok(reported as u64)
}

fn sys_shutdown(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::shutdown(&s, int(a[1])),
        Some(Other::Netlink((_, _))) => return Err(Errno::EOPNOTSUPP),
        Some(Other::Ping((_, s))) => return ping::shutdown(&s, int(a[1])),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    match int(a[1]) {
        SHUT_RD => s.shutdown(true, false)?,
        SHUT_WR => s.shutdown(false, true)?,
        SHUT_RDWR => s.shutdown(true, true)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

fn sys_getsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::getsockopt(task, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::getsockopt(task, &s, a),
        Some(Other::Ping((_, s))) => return ping::getsockopt(task, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    if int(a[1]) != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let len = read_optlen(task, a)?;
    let mut value = Encoder::new();
    match int(a[2]) {
        SO_ACCEPTCONN => value.i32(i32::from(s.is_listening())),
        SO_PASSCRED => value.i32(i32::from(s.passcred.load(std::sync::atomic::Ordering::Relaxed))),
        SO_PEERCRED => {
            // An unconnected socket has no peer: pid 0, the overflow ids.
            let (pid, uid, gid) = s.peer_cred();
            Ucred { pid, uid, gid }.encode_to(&mut value);
            &mut value
        }
        // The peer's supplementary groups are not recorded at connect.
        SO_PEERGROUPS if s.peer_cred().0 != 0 => return Err(Errno::ENOPROTOOPT),
        opt => value.bytes(&sockopt::get(&unix_sock(&s), opt, len)?),
    };
    write_sockopt(task, a, value.as_bytes())
}

/// A Unix socket as the shared SOL_SOCKET options see it.
fn unix_sock(s: &UnixSocket) -> Sock<'_> {
    Sock { domain: AF_UNIX, ty: s.ty().number(), protocol: 0, opts: &s.opts, timeouts: &s.timeouts }
}

/// getsockopt's length argument: EFAULT when unreadable, EINVAL when
/// negative.
pub(super) fn read_optlen(task: &Task, a: [u64; 6]) -> Result<usize, Errno> {
    let mut len = [0u8; 4];
    task.thread.mm().copy_in(a[4], &mut len)?;
    usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)
}

/// Writes getsockopt's `value` to the guest: as much as its length
/// argument allows, and the length written back.
pub(super) fn write_sockopt(task: &Task, a: [u64; 6], value: &[u8]) -> SysResult {
    let mm = task.thread.mm();
    let mut len = [0u8; 4];
    mm.copy_in(a[4], &mut len)?;
    let len = usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)?;
    let n = len.min(value.len());
    mm.copy_out(a[3], &value[..n])?;
    mm.copy_out(a[4], &u32::try_from(n).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}

fn sys_setsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    match other(task, a[0])? {
        Some(Other::Inet((_, s))) => return inet::setsockopt(task, &s, a),
        Some(Other::Netlink((_, s))) => return netlink::setsockopt(task, &s, a),
        Some(Other::Ping((_, s))) => return ping::setsockopt(task, &s, a),
        None => {}
    }
    let (_, s) = socket_of(task, a[0])?;
    if int(a[1]) != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    if int(a[2]) == SO_PASSCRED {
        if int(a[4]) < 4 {
            return Err(Errno::EINVAL);
        }
        let mut raw = [0u8; 4];
        task.thread.mm().copy_in(a[3], &mut raw)?;
        s.passcred.store(i32::from_le_bytes(raw) != 0, std::sync::atomic::Ordering::Relaxed);
        return Ok(0);
    }
    sockopt::set(task, &unix_sock(&s), int(a[2]), a[3], a[4]).map(|()| 0)
}
