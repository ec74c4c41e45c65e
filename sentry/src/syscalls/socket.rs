//! System calls: sockets. Unix stream socket pairs work (socketpair);
//! creating other sockets fails the way Linux fails for a family it does
//! not have, until named Unix sockets and the netstack arrive.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::fs::unix::UnixStream;
use crate::kernel::Task;
use crate::vfs::FileDescription;
use std::sync::Arc;

const NO_FAMILIES: &str = "only socketpair(AF_UNIX, SOCK_STREAM) sockets exist: socket() fails with EAFNOSUPPORT";
const PAIR_ONLY: &str = "Unix stream socket pairs only; no addresses (ENOTSOCK on other descriptors)";
const NO_ADDRESSES: &str = "socket pairs are already connected and have no names (EOPNOTSUPP/EISCONN)";

pub(super) const ENTRIES: Entries = &[
    ("socket", sys_socket, Unimplemented(NO_FAMILIES)),
    ("socketpair", sys_socketpair, Partial("AF_UNIX SOCK_STREAM only (SOCK_DGRAM/SOCK_SEQPACKET: EPROTONOSUPPORT)")),
    ("bind", sys_no_address, Unimplemented(NO_ADDRESSES)),
    ("listen", sys_no_address, Unimplemented(NO_ADDRESSES)),
    ("accept", sys_no_address, Unimplemented(NO_ADDRESSES)),
    ("accept4", sys_no_address, Unimplemented(NO_ADDRESSES)),
    ("connect", sys_connect, Unimplemented(NO_ADDRESSES)),
    ("getsockname", sys_getsockname, Partial(PAIR_ONLY)),
    ("getpeername", sys_getsockname, Partial(PAIR_ONLY)),
    ("sendto", sys_sendto, Partial(PAIR_ONLY)),
    ("recvfrom", sys_recvfrom, Partial("no MSG_PEEK/MSG_OOB (EOPNOTSUPP)")),
    ("sendmsg", sys_sendmsg, Partial("no control messages (SCM_RIGHTS, SCM_CREDENTIALS: EOPNOTSUPP)")),
    ("recvmsg", sys_recvmsg, Partial("no control messages are received; no MSG_PEEK")),
    ("shutdown", sys_shutdown, Partial(PAIR_ONLY)),
    (
        "getsockopt",
        sys_getsockopt,
        Partial("SO_TYPE, SO_ERROR, SO_DOMAIN, SO_PROTOCOL, SO_RCVBUF, SO_SNDBUF, SO_PEERCRED, SO_ACCEPTCONN"),
    ),
    ("setsockopt", sys_setsockopt, Partial("buffer sizes and flags are accepted without effect")),
];

const AF_UNIX: i32 = 1;
const SOCK_STREAM: i32 = 1;
const SOCK_TYPE_MASK: i32 = 0xf;
const MSG_PEEK: u64 = 0x2;
const MSG_OOB: u64 = 0x1;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_WAITALL: u64 = 0x100;
const MSG_NOSIGNAL: u64 = 0x4000;
const SOL_SOCKET: i32 = 1;

/// The Unix stream socket behind descriptor `fd`.
fn socket_of(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Arc<UnixStream>), Errno> {
    let f = args::file(task, fd)?;
    // The description's operations are the socket itself.
    let s = f.ops.clone().into_any().downcast::<UnixStream>().map_err(|_| Errno::ENOTSOCK)?;
    Ok((f, s))
}

fn sys_socket(_task: &mut Task, _a: [u64; 6]) -> SysResult {
    Err(Errno::EAFNOSUPPORT)
}

fn sys_socketpair(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (domain, ty) = (int(a[0]), int(a[1]));
    if domain != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if ty & !(SOCK_TYPE_MASK | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if ty & SOCK_TYPE_MASK != SOCK_STREAM {
        return Err(Errno::EPROTONOSUPPORT);
    }
    if int(a[2]) != 0 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    let k = &task.kernel;
    let now = super::fd::now();
    let nonblock = ty & libc::SOCK_NONBLOCK != 0;
    let creds = task.thread.creds();
    let cred = (task.thread.tgid, creds.euid, creds.egid);
    let (x, y) = UnixStream::pair((k.anon_ino(), k.anon_ino()), now, nonblock, cred);
    let flags = 2 | if nonblock { u32::try_from(libc::O_NONBLOCK).unwrap_or(0) } else { 0 };
    let file = |s: Arc<UnixStream>| {
        let name = format!("socket:[{}]", crate::vfs::Node::stat(s.as_ref()).map(|st| st.ino).unwrap_or(0));
        let d = k.anon_dentry(name.as_bytes(), s.clone());
        FileDescription::new(d, s, flags)
    };
    let cloexec = ty & libc::SOCK_CLOEXEC != 0;
    let fds = task.thread.fds();
    let limit = task.thread.nofile();
    let fa = fds.install(file(x), cloexec, 0, limit)?;
    let fb = match fds.install(file(y), cloexec, 0, limit) {
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

fn sys_no_address(task: &mut Task, a: [u64; 6]) -> SysResult {
    socket_of(task, a[0])?;
    Err(Errno::EOPNOTSUPP)
}

fn sys_connect(task: &mut Task, a: [u64; 6]) -> SysResult {
    socket_of(task, a[0])?;
    Err(Errno::EISCONN)
}

/// sockaddr_un of an unnamed socket: just the family.
fn sys_getsockname(task: &mut Task, a: [u64; 6]) -> SysResult {
    socket_of(task, a[0])?;
    let mut len = [0u8; 4];
    task.thread.mm().copy_in(a[2], &mut len)?;
    if i32::from_le_bytes(len) < 0 {
        return Err(Errno::EINVAL);
    }
    let room = usize::try_from(u32::from_le_bytes(len)).unwrap_or(0).min(2);
    task.thread.mm().copy_out(a[1], &1u16.to_le_bytes()[..room])?;
    task.thread.mm().copy_out(a[2], &2u32.to_le_bytes())?;
    Ok(0)
}

/// Sends `len` bytes at `addr` (the whole, blocking, unless DONTWAIT).
fn send(task: &Task, fd: u64, addr: u64, len: usize, flags: u64) -> SysResult {
    let (f, s) = socket_of(task, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    args::user_range(addr, len)?;
    let mut buf = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut buf)?;
    let r = s.send(&buf, flags & MSG_DONTWAIT != 0 || f.flags() & u32::try_from(libc::O_NONBLOCK).unwrap_or(0) != 0);
    if r == Err(Errno::EPIPE) && flags & MSG_NOSIGNAL == 0 {
        task.kernel.send_signal(&task.thread, libc::SIGPIPE);
    }
    r.map(|n| n as u64)
}

/// Receives up to `len` bytes into `addr`.
fn recv(task: &Task, fd: u64, addr: u64, len: usize, flags: u64) -> SysResult {
    let (f, s) = socket_of(task, fd)?;
    if flags & (MSG_PEEK | MSG_OOB) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    args::user_range(addr, len)?;
    let dontwait = flags & MSG_DONTWAIT != 0 || f.flags() & u32::try_from(libc::O_NONBLOCK).unwrap_or(0) != 0;
    let mut buf = vec![0u8; len];
    let mut got = s.recv(&mut buf, dontwait)?;
    while flags & MSG_WAITALL != 0 && got < len && !dontwait {
        let n = match s.recv(&mut buf[got..], false) {
            Ok(n) => n,
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        got += n;
    }
    task.thread.mm().copy_out(addr, &buf[..got])?;
    Ok(got as u64)
}

fn sys_sendto(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[4] != 0 {
        socket_of(task, a[0])?;
        return Err(Errno::EISCONN);
    }
    send(task, a[0], a[1], args::size_arg(a[2])?, a[3])
}

fn sys_recvfrom(task: &mut Task, a: [u64; 6]) -> SysResult {
    let n = recv(task, a[0], a[1], args::size_arg(a[2])?, a[3])?;
    if a[4] != 0 && a[5] != 0 {
        // The peer of a socket pair has no name.
        task.thread.mm().copy_out(a[5], &0u32.to_le_bytes())?;
    }
    Ok(n)
}

/// The fields of a `struct msghdr` that matter here.
struct MsgHdr {
    iov: u64,
    iovlen: u64,
    controllen: u64,
}

fn read_msghdr(task: &Task, addr: u64) -> Result<MsgHdr, Errno> {
    let mut raw = [0u8; 56];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut d = Decoder::new(&raw);
    d.skip(16);
    let iov = d.u64();
    let iovlen = d.u64();
    d.skip(8);
    let controllen = d.u64();
    if iovlen > 1024 {
        return Err(Errno::EMSGSIZE);
    }
    Ok(MsgHdr { iov, iovlen, controllen })
}

fn iovec_list(task: &Task, h: &MsgHdr) -> Result<Vec<(u64, usize)>, Errno> {
    let n = usize::try_from(h.iovlen).map_err(|_| Errno::EMSGSIZE)?;
    let mut raw = vec![0u8; n * 16];
    task.thread.mm().copy_in(h.iov, &mut raw)?;
    raw.chunks_exact(16)
        .map(|c| {
            let mut d = Decoder::new(c);
            let base = d.u64();
            let len = usize::try_from(d.u64()).map_err(|_| Errno::EINVAL)?;
            args::user_range(base, len)?;
            Ok((base, len))
        })
        .collect()
}

fn sys_sendmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    socket_of(task, a[0])?;
    let h = read_msghdr(task, a[1])?;
    if h.controllen != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut data = Vec::new();
    for (base, len) in iovec_list(task, &h)? {
        let mut part = vec![0u8; len];
        task.thread.mm().copy_in(base, &mut part)?;
        data.extend_from_slice(&part);
    }
    let (f, s) = socket_of(task, a[0])?;
    let dontwait = a[2] & MSG_DONTWAIT != 0 || f.flags() & u32::try_from(libc::O_NONBLOCK).unwrap_or(0) != 0;
    let r = s.send(&data, dontwait);
    if r == Err(Errno::EPIPE) && a[2] & MSG_NOSIGNAL == 0 {
        task.kernel.send_signal(&task.thread, libc::SIGPIPE);
    }
    r.map(|n| n as u64)
}

fn sys_recvmsg(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (f, s) = socket_of(task, a[0])?;
    if a[2] & (MSG_PEEK | MSG_OOB) != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let h = read_msghdr(task, a[1])?;
    let iov = iovec_list(task, &h)?;
    let total: usize = iov.iter().map(|&(_, l)| l).sum();
    let dontwait = a[2] & MSG_DONTWAIT != 0 || f.flags() & u32::try_from(libc::O_NONBLOCK).unwrap_or(0) != 0;
    let mut buf = vec![0u8; total];
    let got = s.recv(&mut buf, dontwait)?;
    let mut at = 0;
    for (base, len) in iov {
        if at >= got {
            break;
        }
        let n = len.min(got - at);
        task.thread.mm().copy_out(base, &buf[at..at + n])?;
        at += n;
    }
    // No name, no control data, no flags.
    let mm = task.thread.mm();
    mm.copy_out(a[1] + 8, &0u32.to_le_bytes())?;
    mm.copy_out(a[1] + 40, &0u64.to_le_bytes())?;
    mm.copy_out(a[1] + 48, &0i32.to_le_bytes())?;
    Ok(got as u64)
}

fn sys_shutdown(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (_, s) = socket_of(task, a[0])?;
    match int(a[1]) {
        0 => s.shutdown(true, false),
        1 => s.shutdown(false, true),
        2 => s.shutdown(true, true),
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

fn sys_getsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    const SO_TYPE: i32 = 3;
    const SO_ERROR: i32 = 4;
    const SO_SNDBUF: i32 = 7;
    const SO_RCVBUF: i32 = 8;
    const SO_PEERCRED: i32 = 17;
    const SO_ACCEPTCONN: i32 = 30;
    const SO_PROTOCOL: i32 = 38;
    const SO_DOMAIN: i32 = 39;
    let (_, s) = socket_of(task, a[0])?;
    if int(a[1]) != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let mut value = Encoder::new();
    match int(a[2]) {
        SO_TYPE => value.i32(SOCK_STREAM),
        SO_ERROR | SO_ACCEPTCONN | SO_PROTOCOL => value.i32(0),
        SO_DOMAIN => value.i32(AF_UNIX),
        SO_SNDBUF | SO_RCVBUF => value.i32(212_992),
        SO_PEERCRED => value.i32(s.peer_cred.0).u32(s.peer_cred.1).u32(s.peer_cred.2),
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let mm = task.thread.mm();
    let mut len = [0u8; 4];
    mm.copy_in(a[4], &mut len)?;
    let len = usize::try_from(i32::from_le_bytes(len)).map_err(|_| Errno::EINVAL)?;
    let n = len.min(value.len());
    mm.copy_out(a[3], &value.as_bytes()[..n])?;
    mm.copy_out(a[4], &u32::try_from(n).unwrap_or(0).to_le_bytes())?;
    Ok(0)
}

fn sys_setsockopt(task: &mut Task, a: [u64; 6]) -> SysResult {
    socket_of(task, a[0])?;
    if int(a[1]) != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    if int(a[4]) < 4 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}
