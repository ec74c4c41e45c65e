//! System calls on Unix sockets (AF_UNIX stream, datagram and seqpacket):
//! the socket calls of socket.rs come here for a Unix descriptor, through
//! its `SocketOps`.

use super::args::{self, int};
use super::socket::{
    install, iovec_list, nonblocking, read_msghdr, read_optlen, write_msg_results, write_sockaddr, write_sockopt,
    Cursor,
};
use super::socket_ops::{OptArg, SockAddrArg, SocketOps, UserBuf};
use super::sockopt::{self, Sock};
use crate::abi::fcntl::{AT_FDCWD_ARG, O_NONBLOCK};
use crate::abi::layout::{Encoder, Layout};
use crate::abi::sockaddr::{family_of, SockaddrUn};
use crate::abi::socket::CMSG_HDR;
use crate::abi::socket::{
    cmsg_align, CmsgHdr, MsgHdr, Ucred, AF_UNIX, AF_UNSPEC, MSG_CMSG_CLOEXEC, MSG_CTRUNC, MSG_NOSIGNAL, MSG_OOB,
    MSG_PEEK, MSG_TRUNC, MSG_WAITALL, SCM_CREDENTIALS, SCM_MAX_FD, SCM_RIGHTS, SHUT_RD, SHUT_RDWR, SHUT_WR,
    SOCK_TYPE_MASK, SOL_SOCKET, SO_ACCEPTCONN, SO_OOBINLINE, SO_PASSCRED, SO_PEERCRED, SO_PEERGROUPS, SO_SNDBUF,
    SO_SNDBUFFORCE,
};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::fs::unix::{
    Inflight, PeerCred, Rights, SenderCred, SockType, UnixName, UnixNames, UnixSocket, UnixStream, SNDBUF_BOUND,
};
use crate::kernel::Task;
use crate::vfs::{FileDescription, READ_EVENTS, WRITE_EVENTS};
use std::sync::Arc;

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
    // Linux's unix_create: 0 or PF_UNIX itself.
    if protocol != 0 && protocol != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    Ok((kind, ty & libc::SOCK_NONBLOCK != 0, ty & libc::SOCK_CLOEXEC != 0))
}

pub(super) fn socketpair(task: &Task, a: [u64; 6]) -> SysResult {
    let (kind, nonblock, cloexec) = check_type(int(a[0]), int(a[1]), int(a[2]))?;
    let k = &task.kernel;
    let now = super::fd::now();
    let creds = task.thread.creds();
    let cred = (task.thread.tgid(), creds.euid, creds.egid);
    let inos = (k.anon_ino(), k.anon_ino());
    let (sa, sb) = match kind {
        SockType::Dgram => UnixSocket::dgram_pair(inos, now, cred),
        _ => {
            let (x, y) = match kind {
                SockType::SeqPacket => UnixStream::packet_pair((cred, cred)),
                _ => UnixStream::pair(inos, now, (cred, cred)),
            };
            UnixSocket::connected_pair(inos, now, kind, (x, y))
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
    if !(SockaddrUn::PATH_OFFSET..=SockaddrUn::SIZE).contains(&len) {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut raw)?;
    if family_of(&raw) != SockaddrUn::FAMILY {
        return Err(Errno::EINVAL);
    }
    let path = &raw[SockaddrUn::PATH_OFFSET..];
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
    let path = name.map(UnixName::sun_path).unwrap_or_default();
    write_sockaddr(task, addr, len_addr, &SockaddrUn::encode(&path))
}

fn bind(task: &Task, s: &Arc<UnixSocket>, addr: SockAddrArg) -> SysResult {
    // Linux makes the socket file before it checks the socket is unbound.
    let bound = || if s.local_name().is_some() { Err(Errno::EINVAL) } else { Ok(()) };
    let k = &task.kernel;
    let name = match read_unix_addr(task, addr.addr, addr.len)? {
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
            crate::vfs::perm::mount_writable(&pn.parent)?;
            bound()?;
            let creds = task.thread.creds();
            let mode = crate::vfs::S_IFSOCK | (0o777 & !task.thread.fs().umask());
            pn.parent.node.mknod(&pn.name, crate::vfs::NewNode { mode, uid: creds.fsuid, gid: creds.fsgid }, 0)?;
            crate::vfs::notify::created(pn.parent.node.as_ref(), &pn.name, false);
            let st = pn.parent.node.lookup(&pn.name)?.stat()?;
            UnixName::File { dev: st.dev, ino: st.ino, path }
        }
    };
    k.ext::<UnixNames>().bind(&name, s)?;
    Ok(0)
}

fn listen(task: &Task, s: &UnixSocket) -> SysResult {
    let creds = task.thread.creds();
    s.listen((task.thread.tgid(), creds.euid, creds.egid))?;
    Ok(0)
}

/// The socket bound to the address at `addr` that a socket of type `ty`
/// reaches (connect, sendto). A path bound by a socket of another type is
/// EPROTOTYPE (the caller checks); an abstract name is per type. A
/// socket file must be writable (EACCES).
fn bound_socket(task: &Task, addr: u64, len: u64, ty: SockType) -> Result<Arc<UnixSocket>, Errno> {
    let name = match read_unix_addr(task, addr, len)? {
        None => return Err(Errno::EINVAL),
        Some((true, n)) => UnixName::Abstract(n),
        Some((false, path)) => {
            let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
            let st = d.node.stat()?;
            // Reaching a socket file is writing to it (Linux's unix_find_bsd).
            crate::vfs::perm::check_node(&task.thread.creds(), d.node.as_ref(), &st, crate::vfs::perm::MAY_WRITE)?;
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
    Ok(family_of(&raw))
}

fn connect(task: &Task, s: &UnixSocket, addr: SockAddrArg) -> SysResult {
    if s.ty() == SockType::Dgram && family(task, addr.addr, addr.len)? == AF_UNSPEC {
        // Dissolves the association, as Linux's unix_dgram_connect.
        s.dgram_disconnect()?;
        return Ok(0);
    }
    let target = bound_socket(task, addr.addr, addr.len, s.ty())?;
    if s.ty() == SockType::Dgram {
        s.dgram_connect(&target)?;
        return Ok(0);
    }
    let k = &task.kernel;
    let creds = task.thread.creds();
    s.connect(&target, (k.anon_ino(), k.anon_ino()), (task.thread.tgid(), creds.euid, creds.egid))?;
    Ok(0)
}

fn accept(task: &Task, f: &FileDescription, s: &UnixSocket, peer_out: SockAddrArg, flags: i32) -> SysResult {
    let nonblock_listener = f.flags() & O_NONBLOCK != 0;
    // SO_RCVTIMEO bounds the wait (EAGAIN), as in Linux's accept.
    let deadline = f.ops.io_timeout(false).map(crate::waiter::deadline_in);
    let conn = super::block::wait_io(f, READ_EVENTS, nonblock_listener, deadline, || s.accept())?;
    let nonblock = flags & libc::SOCK_NONBLOCK != 0;
    let peer = conn.peer_name().ok().flatten();
    let fd = install(task, conn, nonblock, flags & libc::SOCK_CLOEXEC != 0)?;
    if peer_out.addr != 0 {
        write_unix_addr(task, peer_out.addr, peer_out.len, peer.as_ref())?;
    }
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn getsockname(task: &Task, s: &UnixSocket, out: SockAddrArg) -> SysResult {
    write_unix_addr(task, out.addr, out.len, s.local_name().as_ref())?;
    Ok(0)
}

fn getpeername(task: &Task, s: &UnixSocket, out: SockAddrArg) -> SysResult {
    let peer = s.peer_name()?;
    write_unix_addr(task, out.addr, out.len, peer.as_ref())?;
    Ok(0)
}

/// The most a stream send or receive moves per step (the sentry's own
/// buffer; the guest's length is not allocated whole).
const STREAM_CHUNK: usize = 1 << 20;

/// The most one call moves through the sentry's own buffer: a message is
/// at most the largest send buffer (a send checks its own socket's); a
/// stream moves a chunk and reports a short count.
fn buffer_cap(s: &UnixSocket) -> usize {
    if s.ty().has_messages() {
        SNDBUF_BOUND
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

/// Where a send goes: to the connected peer, to a datagram's
/// destination, or to a stream's peer as its urgent byte.
#[derive(Clone, Copy)]
enum Target<'a> {
    Peer,
    To(&'a Arc<UnixSocket>),
    Urgent,
}

impl<'a> From<Option<&'a Arc<UnixSocket>>> for Target<'a> {
    fn from(to: Option<&'a Arc<UnixSocket>>) -> Target<'a> {
        to.map_or(Target::Peer, Target::To)
    }
}

/// Sends `data` on Unix socket `s` (description `f`) to `target`,
/// with the descriptors in `rights` on its first byte: a message whole,
/// a stream's bytes all, unless `nonblock` (then what fits). The call
/// waits for room on the queue it comes from (`to`'s receive queue, else
/// the socket's own), until SO_SNDTIMEO (EAGAIN) and interruptibly; a
/// wait that ends after some of a stream's bytes returns their count, as
/// Linux's unix_stream_sendmsg.
fn unix_send(
    f: &FileDescription,
    s: &UnixSocket,
    target: Target,
    data: &[u8],
    nonblock: bool,
    mut rights: Option<Rights>,
    cred: SenderCred,
) -> Result<usize, Errno> {
    let deadline = f.ops.io_timeout(true).map(crate::waiter::deadline_in);
    let inbox = match target {
        Target::To(t) => t.inbox().cloned(),
        _ => None,
    };
    let mut done = 0;
    loop {
        let attempt = || match target {
            Target::Urgent => s.send_urgent(&data[done..], &mut rights, cred),
            Target::To(t) => s.send_msg(Some(t), &data[done..], &mut rights, cred),
            Target::Peer => s.send_msg(None, &data[done..], &mut rights, cred),
        };
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
    let d = super::block::wait_io(f, READ_EVENTS, dontwait, deadline, || s.recv_msg(buf, peek))?;
    // A datagram socket shut for reading: a blocking receive returns 0,
    // a non-blocking one finds nothing (EAGAIN), as in Linux.
    if d.ended && dontwait {
        return Err(Errno::EAGAIN);
    }
    Ok(d)
}

/// Sends the guest's `bufs` (the whole, blocking, unless DONTWAIT), to
/// `to` if given (a datagram's destination): a message in one piece, a
/// stream's bytes a chunk at a time. With MSG_OOB a stream's last byte
/// goes last, urgent, once all the others went (Linux's queue_oob).
fn send(
    task: &Task,
    f: &FileDescription,
    s: &UnixSocket,
    bufs: &[UserBuf],
    flags: u64,
    to: Option<Arc<UnixSocket>>,
) -> SysResult {
    let len = bufs.iter().map(|&(_, l)| l).fold(0, usize::saturating_add);
    let urgent = flags & MSG_OOB != 0;
    if urgent && (s.ty() != SockType::Stream || len == 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    for &(base, len) in bufs {
        args::user_range(base, len)?;
    }
    let nonblock = nonblocking(f, flags);
    let mm = task.thread.mm();
    let mut cursor = Cursor::new(bufs);
    let mut buf = Vec::new();
    if s.ty().has_messages() {
        if len > SNDBUF_BOUND {
            return Err(Errno::EMSGSIZE);
        }
        cursor.peek(&mm, &mut buf, len)?;
        let r = unix_send(f, s, to.as_ref().into(), &buf, nonblock, None, SenderCred::of_current());
        sigpipe(task, s, flags, &r);
        return r.map(|n| n as u64);
    }
    // A stream takes the bytes a chunk at a time.
    let ordinary = len - usize::from(urgent);
    let mut done = 0usize;
    while done < ordinary || len == 0 {
        cursor.peek(&mm, &mut buf, (ordinary - done).min(STREAM_CHUNK))?;
        let r = unix_send(f, s, Target::Peer, &buf, nonblock, None, SenderCred::of_current());
        match r {
            Ok(w) => {
                done += w;
                cursor.advance(w);
                if w < buf.len() || len == 0 {
                    break;
                }
            }
            Err(_) if done > 0 => break,
            Err(e) => {
                sigpipe(task, s, flags, &r);
                return Err(e);
            }
        }
    }
    if urgent && done == ordinary {
        cursor.peek(&mm, &mut buf, 1)?;
        let r = unix_send(f, s, Target::Urgent, &buf, nonblock, None, SenderCred::of_current());
        match r {
            Ok(w) => done += w,
            Err(_) if done > 0 => {}
            Err(e) => {
                sigpipe(task, s, flags, &r);
                return Err(e);
            }
        }
    }
    Ok(done as u64)
}

/// A stream sendmsg(MSG_OOB) of `data`, descriptors on its first byte:
/// all but the last byte as ordinary bytes, then, once they all went, the
/// last one urgent (Linux's queue_oob).
fn send_with_urgent(
    f: &FileDescription,
    s: &UnixSocket,
    data: &[u8],
    nonblock: bool,
    rights: Option<Rights>,
    cred: SenderCred,
) -> Result<usize, Errno> {
    let Some((last, rest)) = data.split_last() else { return Err(Errno::EOPNOTSUPP) };
    let (done, rights) = if rest.is_empty() {
        (0, rights)
    } else {
        (unix_send(f, s, Target::Peer, rest, nonblock, rights, cred)?, None)
    };
    if done < rest.len() {
        return Ok(done);
    }
    match unix_send(f, s, Target::Urgent, std::slice::from_ref(last), nonblock, rights, cred) {
        Ok(n) => Ok(done + n),
        Err(_) if done > 0 => Ok(done),
        Err(e) => Err(e),
    }
}

/// recv(MSG_OOB) on a Unix socket: a stream's urgent byte into `addr`
/// (if there is room: it is taken and counted even without), never
/// waiting.
fn recv_urgent(task: &Task, s: &UnixSocket, addr: u64, len: usize, flags: u64) -> Result<u64, Errno> {
    let byte = s.recv_urgent(flags & MSG_PEEK != 0)?;
    if len > 0 {
        task.thread.mm().copy_out(addr, &[byte])?;
    }
    Ok(1)
}

/// Receives up to `len` bytes into `addr`; returns the count (a message's
/// whole length with MSG_TRUNC) and the sender's name.
fn recv(
    task: &Task,
    f: &FileDescription,
    s: &UnixSocket,
    (addr, len): UserBuf,
    flags: u64,
) -> Result<(u64, Option<UnixName>), Errno> {
    args::user_range(addr, len)?;
    if flags & MSG_OOB != 0 {
        return recv_urgent(task, s, addr, len, flags).map(|n| (n, None));
    }
    let dontwait = nonblocking(f, flags);
    let peek = flags & MSG_PEEK != 0;
    // No message is longer than a queue; a stream read may return less.
    let len = len.min(buffer_cap(s));
    let mut buf = vec![0u8; len];
    let d = unix_recv(f, s, &mut buf, dontwait, peek)?;
    let mut got = d.len;
    // MSG_WAITALL gathers more only when a stream's bytes are consumed,
    // and not past the urgent mark.
    while s.ty() == SockType::Stream && flags & MSG_WAITALL != 0 && got < len && !dontwait && !peek && !s.at_mark() {
        let n = match unix_recv(f, s, &mut buf[got..], false, false) {
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

fn sendto(task: &Task, f: &FileDescription, s: &UnixSocket, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult {
    let to = destination(task, s, to.addr, to.len)?;
    send(task, f, s, &[buf], flags, to)
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

fn recvfrom(task: &Task, f: &FileDescription, s: &UnixSocket, buf: UserBuf, flags: u64, out: SockAddrArg) -> SysResult {
    let (n, from) = recv(task, f, s, buf, flags)?;
    if out.addr != 0 && out.len != 0 {
        match from {
            Some(name) => write_unix_addr(task, out.addr, out.len, Some(&name))?,
            None => task.thread.mm().copy_out(out.len, &0u32.to_le_bytes())?,
        }
    }
    Ok(n)
}

/// sendmsg's control messages: descriptors (SCM_RIGHTS) and credentials
/// (SCM_CREDENTIALS, checked as Linux does: one's own pid and ids unless
/// privileged).
fn read_control(task: &Task, h: &MsgHdr) -> Result<(Option<Rights>, SenderCred), Errno> {
    let mut cred = SenderCred::of_current();
    let mut files = Vec::new();
    super::cmsg::each(task, h, |level, ty, data| {
        if level != SOL_SOCKET {
            return Ok(());
        }
        match ty {
            SCM_RIGHTS => {
                // No descriptors at all is no message (Linux's scm_fp_copy).
                if files.len() + data.len() / 4 > SCM_MAX_FD {
                    return Err(Errno::EINVAL);
                }
                for fd in data.chunks_exact(4) {
                    let fd = i32::from_le_bytes([fd[0], fd[1], fd[2], fd[3]]);
                    files.push(task.thread.fds().get(fd)?);
                }
            }
            SCM_CREDENTIALS => {
                if data.len() != Ucred::SIZE {
                    return Err(Errno::EINVAL);
                }
                let Ucred { pid, uid, gid } = Ucred::decode(data);
                let given = (pid, uid, gid);
                check_cred(task, given)?;
                cred = SenderCred { cred: given, attach: true };
            }
            _ => return Err(Errno::EINVAL),
        }
        Ok(())
    })?;
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
    let pid_ok = pid == task.thread.tgid() || c.capable(caps::CAP_SYS_ADMIN);
    let uid_ok = [c.uid, c.euid, c.suid].contains(&uid) || c.capable(caps::CAP_SETUID);
    let gid_ok = [c.gid, c.egid, c.sgid].contains(&gid) || c.capable(caps::CAP_SETGID);
    if !(pid_ok && uid_ok && gid_ok) {
        return Err(Errno::EPERM);
    }
    if task.kernel.procs().alive(pid) {
        Ok(())
    } else {
        Err(Errno::ESRCH)
    }
}

/// Writes an SCM_CREDENTIALS message at the start of the recvmsg control
/// buffer (Linux puts it first), cut to the room as put_cmsg does, or
/// not at all where it cannot be written; returns (control bytes used,
/// msg_flags).
fn write_cred(task: &Task, h: &MsgHdr, (pid, uid, gid): PeerCred) -> Result<(usize, i32), Errno> {
    let mut e = Encoder::new();
    Ucred { pid, uid, gid }.encode_to(&mut e);
    let msgs = [(SOL_SOCKET, SCM_CREDENTIALS, e.as_bytes().to_vec())];
    // Linux's scm_recv ignores a control buffer it cannot write.
    let (used, flags) = match super::sockopt_ip::write_control(task, h, &msgs) {
        Err(Errno::EFAULT) => (0, 0),
        r => r?,
    };
    Ok((usize::try_from(used).unwrap_or(usize::MAX), flags))
}

/// Installs received descriptors and writes their SCM_RIGHTS message into
/// the recvmsg control buffer at offset `at` (those that find no room are
/// closed: MSG_CTRUNC); returns (control bytes used there, msg_flags).
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
    // A control buffer that cannot be written gets nothing: the
    // descriptors are closed and the call reports MSG_CTRUNC, as Linux's
    // scm_detach_fds (no error).
    if task.thread.mm().copy_out(h.control + at as u64, e.as_bytes()).is_err() {
        for fd in fds {
            let _ = table.remove(fd);
        }
        return Ok((0, MSG_CTRUNC));
    }
    Ok((cmsg_align(cmsg_len).min(room) as u64, flags))
}

fn sendmsg(task: &Task, f: &FileDescription, s: &UnixSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let to = destination(task, s, h.name, u64::from(h.namelen))?;
    let (rights, cred) = read_control(task, &h)?;
    // A message must fit a queue; a stream send takes what fits in one
    // chunk of the sentry's buffer (a short count, as sockets may give).
    let limit = buffer_cap(s);
    let mut data = Vec::new();
    let iov = iovec_list(task, &h)?;
    let total = iov.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add);
    if flags & MSG_OOB != 0 && (s.ty() != SockType::Stream || total == 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    for (base, len) in iov {
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
    let nonblock = nonblocking(f, flags);
    // A send cut to the buffer's chunk is a short one that has not
    // reached its urgent last byte.
    let whole = data.len() == total;
    let r = if flags & MSG_OOB != 0 && whole {
        send_with_urgent(f, s, &data, nonblock, rights, cred)
    } else {
        unix_send(f, s, to.as_ref().into(), &data, nonblock, rights, cred)
    };
    sigpipe(task, s, flags, &r);
    r.map(|n| n as u64)
}

fn recvmsg(task: &Task, f: &FileDescription, s: &UnixSocket, msg: u64, flags: u64) -> SysResult {
    let h = read_msghdr(task, msg)?;
    let iov = iovec_list(task, &h)?;
    if flags & MSG_OOB != 0 {
        // The byte lands in the first buffer with room; no address or
        // control messages come with it.
        let (base, len) = iov.iter().copied().find(|&(_, l)| l > 0).unwrap_or((0, 0));
        let n = recv_urgent(task, s, base, len, flags)?;
        task.thread.mm().copy_out(msg + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?;
        write_msg_results(task, msg, 0, i32::try_from(MSG_OOB).unwrap_or(0))?;
        return Ok(n);
    }
    let total: usize = iov.iter().map(|&(_, l)| l).fold(0usize, usize::saturating_add).min(buffer_cap(s));
    let mut buf = vec![0u8; total];
    let d = unix_recv(f, s, &mut buf, nonblocking(f, flags), flags & MSG_PEEK != 0)?;
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
    let (rights_len, mut out_flags) = write_rights(task, &h, cred_len, d.rights, flags & MSG_CMSG_CLOEXEC != 0)?;
    out_flags |= cred_flags;
    let controllen = cred_len as u64 + rights_len;
    // Linux echoes MSG_CMSG_CLOEXEC back in msg_flags.
    if flags & MSG_CMSG_CLOEXEC != 0 {
        out_flags |= i32::try_from(MSG_CMSG_CLOEXEC).unwrap_or(0);
    }
    if d.len < d.full {
        out_flags |= i32::try_from(MSG_TRUNC).unwrap_or(0);
    }
    match d.from.filter(|_| h.name != 0) {
        Some(name) => write_unix_addr(task, h.name, msg + MsgHdr::NAMELEN_OFFSET, Some(&name))?,
        None => task.thread.mm().copy_out(msg + MsgHdr::NAMELEN_OFFSET, &0u32.to_le_bytes())?,
    }
    write_msg_results(task, msg, controllen, out_flags)?;
    let reported = if flags & MSG_TRUNC != 0 && s.ty().has_messages() { d.full } else { got };
    Ok(reported as u64)
}

fn shutdown(s: &UnixSocket, how: i32) -> SysResult {
    match how {
        SHUT_RD => s.shutdown(true, false)?,
        SHUT_WR => s.shutdown(false, true)?,
        SHUT_RDWR => s.shutdown(true, true)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

fn getsockopt(task: &Task, s: &UnixSocket, opt: OptArg) -> SysResult {
    if opt.level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let len = read_optlen(task, opt)?;
    let mut value = Encoder::new();
    match opt.name {
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
        name => value.bytes(&sockopt::get(&unix_sock(s), name, len)?),
    };
    write_sockopt(task, opt, value.as_bytes())
}

/// A Unix socket as the shared SOL_SOCKET options see it.
fn unix_sock(s: &UnixSocket) -> Sock<'_> {
    Sock { domain: AF_UNIX, ty: s.ty().number(), protocol: 0, opts: &s.opts, timeouts: &s.timeouts }
}

fn setsockopt(task: &Task, s: &UnixSocket, opt: OptArg) -> SysResult {
    if opt.level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    if opt.name == SO_PASSCRED {
        if int(opt.len) < 4 {
            return Err(Errno::EINVAL);
        }
        let mut raw = [0u8; 4];
        task.thread.mm().copy_in(opt.val, &mut raw)?;
        s.set_passcred(i32::from_le_bytes(raw) != 0);
        return Ok(0);
    }
    sockopt::set(task, &unix_sock(s), opt.name, opt.val, opt.len)?;
    if opt.name == SO_SNDBUF || opt.name == SO_SNDBUFFORCE {
        s.sndbuf_changed();
    }
    if opt.name == SO_OOBINLINE {
        s.set_oob_inline(s.opts.get().flags & sockopt::flag_bit(SO_OOBINLINE) != 0);
    }
    Ok(0)
}

/// socket(2) for AF_UNIX.
pub(super) fn socket(task: &Task, domain: i32, ty: i32, protocol: i32) -> SysResult {
    let (kind, nonblock, cloexec) = check_type(domain, ty, protocol)?;
    let s = UnixSocket::new(task.kernel.anon_ino(), super::fd::now(), kind);
    u64::try_from(install(task, s, nonblock, cloexec)?).map_err(|_| Errno::EMFILE)
}

impl SocketOps for Arc<UnixSocket> {
    fn bind(&self, task: &Task, addr: SockAddrArg) -> SysResult {
        bind(task, self, addr)
    }

    fn listen(&self, task: &Task, _backlog: i32) -> SysResult {
        listen(task, self)
    }

    fn accept(&self, task: &Task, f: &FileDescription, peer: SockAddrArg, flags: i32) -> SysResult {
        accept(task, f, self, peer, flags)
    }

    fn connect(&self, task: &Task, _f: &FileDescription, addr: SockAddrArg) -> SysResult {
        connect(task, self, addr)
    }

    fn getsockname(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getsockname(task, self, out)
    }

    fn getpeername(&self, task: &Task, out: SockAddrArg) -> SysResult {
        getpeername(task, self, out)
    }

    fn sendto(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult {
        sendto(task, f, self, buf, flags, to)
    }

    fn recvfrom(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, from: SockAddrArg) -> SysResult {
        recvfrom(task, f, self, buf, flags, from)
    }

    fn sendmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult {
        sendmsg(task, f, self, msg, flags)
    }

    fn recvmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult {
        recvmsg(task, f, self, msg, flags)
    }

    fn write(&self, task: &Task, f: &FileDescription, bufs: &[UserBuf]) -> SysResult {
        send(task, f, self, bufs, 0, None)
    }

    fn shutdown(&self, _task: &Task, how: i32) -> SysResult {
        shutdown(self, how)
    }

    fn getsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        getsockopt(task, self, opt)
    }

    fn setsockopt(&self, task: &Task, opt: OptArg) -> SysResult {
        setsockopt(task, self, opt)
    }
}
