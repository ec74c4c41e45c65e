//! The one interface every socket family implements (Unix stream,
//! datagram and seqpacket; IP TCP and UDP, including sockets carried by
//! the egress gateway or accepted from outside; ICMP echo; netlink), and
//! the one lookup that finds it behind a descriptor. The socket calls of
//! socket.rs, mmsg.rs and write/writev decode their arguments, look the
//! socket up once and call it; each family's module implements the calls
//! on its own socket type.
//!
//! The interface lives in the syscall layer (as gVisor's socket package
//! sits above its kernel): its calls take the calling task, to read and
//! write guest memory and to check credentials, and `vfs` sits below
//! `kernel`, so it cannot name a task.

use super::args;
use crate::abi::{Errno, SysResult};
use crate::fs::inet::InetSocket;
use crate::fs::netlink::NetlinkSocket;
use crate::fs::ping::PingSocket;
use crate::fs::unix::UnixSocket;
use crate::kernel::Task;
use crate::vfs::FileDescription;
use std::sync::Arc;

/// A guest buffer: its address and length.
pub(super) type UserBuf = (u64, usize);

/// A guest sockaddr argument: where it is, and its length (bind, connect,
/// sendto) or where its length is (the calls that write an address back;
/// a zero `addr` asks for none).
#[derive(Clone, Copy)]
pub(super) struct SockAddrArg {
    pub addr: u64,
    pub len: u64,
}

/// getsockopt(2)/setsockopt(2)'s arguments: the option (level, name),
/// where its value is, and its length (setsockopt) or where its length is
/// (getsockopt).
#[derive(Clone, Copy)]
pub(super) struct OptArg {
    pub level: i32,
    pub name: i32,
    pub val: u64,
    pub len: u64,
}

/// The socket calls, on one socket of one family. `f` is the open
/// description (its O_NONBLOCK flag and wait queue); `flags` are the
/// call's MSG_* flags. A family without a call keeps the default, the
/// errno Linux returns for it.
pub(super) trait SocketOps {
    fn bind(&self, task: &Task, addr: SockAddrArg) -> SysResult;

    fn listen(&self, _task: &Task, _backlog: i32) -> SysResult {
        Err(Errno::EOPNOTSUPP)
    }

    /// accept4(2) with checked `flags` (SOCK_NONBLOCK, SOCK_CLOEXEC): the
    /// new descriptor, the peer's address written to `peer`.
    fn accept(&self, _task: &Task, _f: &FileDescription, _peer: SockAddrArg, _flags: i32) -> SysResult {
        Err(Errno::EOPNOTSUPP)
    }

    fn connect(&self, task: &Task, f: &FileDescription, addr: SockAddrArg) -> SysResult;

    fn getsockname(&self, task: &Task, out: SockAddrArg) -> SysResult;

    fn getpeername(&self, task: &Task, out: SockAddrArg) -> SysResult;

    /// sendto(2) (send(2) with no address).
    fn sendto(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, to: SockAddrArg) -> SysResult;

    /// recvfrom(2): the sender written to `from` unless its address is 0.
    fn recvfrom(&self, task: &Task, f: &FileDescription, buf: UserBuf, flags: u64, from: SockAddrArg) -> SysResult;

    /// sendmsg(2) of the msghdr at `msg`.
    fn sendmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult;

    /// recvmsg(2) into the msghdr at `msg`.
    fn recvmsg(&self, task: &Task, f: &FileDescription, msg: u64, flags: u64) -> SysResult;

    /// write(2) and writev(2): a send of `bufs` without flags or address,
    /// as Linux's sock_write_iter.
    fn write(&self, task: &Task, f: &FileDescription, bufs: &[UserBuf]) -> SysResult;

    fn shutdown(&self, task: &Task, how: i32) -> SysResult;

    fn getsockopt(&self, task: &Task, opt: OptArg) -> SysResult;

    fn setsockopt(&self, task: &Task, opt: OptArg) -> SysResult;
}

/// The socket open file `f` is, if it is one.
pub(super) fn of(f: &FileDescription) -> Option<Box<dyn SocketOps>> {
    let ops = f.ops.clone().into_any();
    let ops = match ops.downcast::<UnixSocket>() {
        Ok(s) => return Some(Box::new(s)),
        Err(other) => other,
    };
    let ops = match ops.downcast::<InetSocket>() {
        Ok(s) => return Some(Box::new(s)),
        Err(other) => other,
    };
    let ops = match ops.downcast::<PingSocket>() {
        Ok(s) => return Some(Box::new(s)),
        Err(other) => other,
    };
    ops.downcast::<NetlinkSocket>().ok().map(|s| Box::new(s) as Box<dyn SocketOps>)
}

/// The open description behind `fd` and the socket it is: EBADF when
/// there is no such descriptor, ENOTSOCK when it is not a socket.
pub(super) fn of_fd(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Box<dyn SocketOps>), Errno> {
    let f = args::file(task, fd)?;
    let s = of(&f).ok_or(Errno::ENOTSOCK)?;
    Ok((f, s))
}
