//! Host sockets the egress gateway carries guest connections on, behind
//! safe wrappers. They are opened non-blocking in the sandbox's outer
//! network namespace (`outer`), so every call here returns at once: EAGAIN
//! when the host socket is not ready.

use crate::abi::Errno;
use nix::sys::socket::{self, MsgFlags, SockaddrStorage};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn errno(e: nix::errno::Errno) -> Errno {
    Errno(e as i32)
}

/// Retries `f` while the host call was interrupted.
fn retry<T>(mut f: impl FnMut() -> nix::Result<T>) -> Result<T, Errno> {
    loop {
        match f() {
            Err(nix::errno::Errno::EINTR) => {}
            r => return r.map_err(errno),
        }
    }
}

fn address(s: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = s.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
    }
    s.as_sockaddr_in6().map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
}

/// connect(2): EINPROGRESS while the handshake runs.
pub(crate) fn connect(fd: BorrowedFd<'_>, to: SocketAddr) -> Result<(), Errno> {
    let to = SockaddrStorage::from(to);
    // An interrupted connect goes on in the background, as EINPROGRESS's.
    socket::connect(fd.as_raw_fd(), &to).map_err(|e| match e {
        nix::errno::Errno::EINTR => Errno::EINPROGRESS,
        e => errno(e),
    })
}

/// connect(2) to AF_UNSPEC: dissolves a datagram socket's association
/// with its peer.
pub(crate) fn disconnect(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    let family = libc::sa_family_t::try_from(libc::AF_UNSPEC).map_err(|_| Errno::EINVAL)?;
    let addr = libc::sockaddr { sa_family: family, sa_data: [0; 14] };
    let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr>()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: `addr` is a whole sockaddr of `len` bytes that outlives the
    // call, and `fd` is an open descriptor borrowed for it.
    let r = unsafe { libc::connect(fd.as_raw_fd(), &addr, len) };
    if r == 0 {
        Ok(())
    } else {
        Err(errno(nix::errno::Errno::last()))
    }
}

/// send(2) without waiting and without SIGPIPE (the guest gets its own
/// from the sentry).
pub(crate) fn send(fd: BorrowedFd<'_>, buf: &[u8]) -> Result<usize, Errno> {
    retry(|| socket::send(fd.as_raw_fd(), buf, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL))
}

/// recv(2) without waiting; with `peek` the data stays queued.
pub(crate) fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], peek: bool) -> Result<usize, Errno> {
    let flags = if peek { MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_PEEK } else { MsgFlags::MSG_DONTWAIT };
    retry(|| socket::recv(fd.as_raw_fd(), buf, flags))
}

/// sendto(2) of one datagram to `to`, without waiting.
pub(crate) fn send_to(fd: BorrowedFd<'_>, buf: &[u8], to: SocketAddr) -> Result<usize, Errno> {
    let to = SockaddrStorage::from(to);
    retry(|| socket::sendto(fd.as_raw_fd(), buf, &to, MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL))
}

/// Receives one datagram without waiting: the bytes copied, the
/// datagram's whole length, and its sender.
pub(crate) fn recv_from(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    peek: bool,
) -> Result<(usize, usize, Option<SocketAddr>), Errno> {
    let len = buf.len();
    let mut flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_TRUNC;
    if peek {
        flags |= MsgFlags::MSG_PEEK;
    }
    let mut iov = [std::io::IoSliceMut::new(buf)];
    let (full, from) = retry(|| {
        socket::recvmsg::<SockaddrStorage>(fd.as_raw_fd(), &mut iov, None, flags)
            .map(|m| (m.bytes, m.address.as_ref().and_then(address)))
    })?;
    Ok((full.min(len), full, from))
}

/// What one host recvmsg(2) with a control buffer returned.
pub(crate) struct Received {
    /// Bytes copied into the buffer.
    pub copied: usize,
    /// The datagram's whole length.
    pub full: usize,
    /// Its sender (for the error queue: the original destination).
    pub from: Option<SocketAddr>,
    /// Control bytes the host wrote (at most the buffer's length).
    pub control: usize,
    /// The host's msg_flags (MSG_CTRUNC when control data did not fit).
    pub flags: i32,
}

/// recvmsg(2) of one datagram with its control messages into `control`,
/// non-blocking; `errqueue` reads the socket's error queue instead.
pub(crate) fn recv_msg(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    peek: bool,
    errqueue: bool,
    control: &mut [u8],
) -> Result<Received, Errno> {
    let mut flags = libc::MSG_DONTWAIT | libc::MSG_TRUNC;
    if peek {
        flags |= libc::MSG_PEEK;
    }
    if errqueue {
        flags |= libc::MSG_ERRQUEUE;
    }
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: all-zero is a valid msghdr; its pointers are set below.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_name = std::ptr::from_mut(&mut name).cast();
    h.msg_namelen = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_storage>()).unwrap_or(0);
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    if !control.is_empty() {
        h.msg_control = control.as_mut_ptr().cast();
        h.msg_controllen = control.len();
    }
    let full = loop {
        // SAFETY: `h` points at `name`, `iov` (over `buf`) and `control`,
        // all alive and of the lengths given for the call.
        let r = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut h, flags) };
        if r >= 0 {
            break usize::try_from(r).unwrap_or(0);
        }
        let e = Errno::last_os_error();
        if e != Errno::EINTR {
            return Err(e);
        }
    };
    // SAFETY: the kernel filled `name` with `msg_namelen` bytes of a sockaddr.
    let from = unsafe {
        <SockaddrStorage as socket::SockaddrLike>::from_raw(std::ptr::from_ref(&name).cast(), Some(h.msg_namelen))
    };
    let control_len = if control.is_empty() { 0 } else { h.msg_controllen.min(control.len()) };
    Ok(Received {
        copied: full.min(buf.len()),
        full,
        from: from.as_ref().and_then(address),
        control: control_len,
        flags: h.msg_flags,
    })
}

/// getsockopt(2) into `value` (its length is the optlen given): the
/// bytes the host wrote.
pub fn get_option(fd: BorrowedFd<'_>, level: i32, name: i32, value: &mut [u8]) -> Result<usize, Errno> {
    let mut len = libc::socklen_t::try_from(value.len()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: the kernel writes at most `len` bytes to `value`, alive for
    // the call, and the length it wrote to `len`.
    let r = unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, value.as_mut_ptr().cast(), &mut len) };
    if r < 0 {
        return Err(Errno::last_os_error());
    }
    Ok(usize::try_from(len).unwrap_or(0).min(value.len()))
}

/// setsockopt(2) with `value`'s bytes, for options that are not an int.
pub(crate) fn set_option(fd: BorrowedFd<'_>, level: i32, name: i32, value: &[u8]) -> Result<(), Errno> {
    let len = libc::socklen_t::try_from(value.len()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: the kernel reads `len` bytes from `value`, alive for the call.
    let r = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.as_ptr().cast(), len) };
    if r < 0 {
        return Err(Errno::last_os_error());
    }
    Ok(())
}

/// shutdown(2) of the reading side, the writing side or both.
pub(crate) fn shutdown(fd: BorrowedFd<'_>, read: bool, write: bool) -> Result<(), Errno> {
    let how = match (read, write) {
        (true, true) => socket::Shutdown::Both,
        (true, false) => socket::Shutdown::Read,
        (false, true) => socket::Shutdown::Write,
        (false, false) => return Ok(()),
    };
    retry(|| socket::shutdown(fd.as_raw_fd(), how))
}

/// The peer's address (ENOTCONN before the handshake completes).
pub(crate) fn peer(fd: BorrowedFd<'_>) -> Result<SocketAddr, Errno> {
    let a: SockaddrStorage = retry(|| socket::getpeername(fd.as_raw_fd()))?;
    address(&a).ok_or(Errno::ENOTCONN)
}

/// The socket's own address in the outer namespace.
pub(crate) fn local(fd: BorrowedFd<'_>) -> Result<SocketAddr, Errno> {
    let a: SockaddrStorage = retry(|| socket::getsockname(fd.as_raw_fd()))?;
    address(&a).ok_or(Errno::EINVAL)
}

/// bind(2) of a host socket of the outer namespace to `to` (a published
/// port).
pub(crate) fn bind(fd: BorrowedFd<'_>, to: SocketAddr) -> Result<(), Errno> {
    retry(|| socket::bind(fd.as_raw_fd(), &SockaddrStorage::from(to)))
}

/// listen(2) with Linux's default backlog bound (net.core.somaxconn).
pub(crate) fn listen(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    retry(|| socket::listen(&fd, socket::Backlog::MAXCONN))
}

/// accept4(2) without waiting: a non-blocking, close-on-exec connection
/// and its peer (EAGAIN when none is queued).
pub(crate) fn accept(fd: BorrowedFd<'_>) -> Result<(OwnedFd, SocketAddr), Errno> {
    let flags = socket::SockFlag::SOCK_NONBLOCK | socket::SockFlag::SOCK_CLOEXEC;
    let raw = retry(|| socket::accept4(fd.as_raw_fd(), flags))?;
    // SAFETY: accept4 returned a new descriptor that nothing else owns.
    let conn = unsafe { OwnedFd::from_raw_fd(raw) };
    let peer = peer(conn.as_fd())?;
    Ok((conn, peer))
}

/// SO_ERROR: the pending error (a refused or timed-out connect), cleared.
pub(crate) fn take_error(fd: BorrowedFd<'_>) -> Result<i32, Errno> {
    retry(|| socket::getsockopt(&fd, socket::sockopt::SocketError))
}

/// setsockopt(2) of an int option (TCP_NODELAY, SO_KEEPALIVE …).
pub(crate) fn set_int_option(fd: BorrowedFd<'_>, level: i32, name: i32, value: i32) -> Result<(), Errno> {
    let len = libc::socklen_t::try_from(std::mem::size_of::<i32>()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: the kernel reads `len` bytes from `value`, an i32 alive for the call.
    let r = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, std::ptr::from_ref(&value).cast(), len) };
    if r < 0 {
        return Err(Errno::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::os::fd::AsFd;

    fn stream_socket() -> std::os::fd::OwnedFd {
        let flags = socket::SockFlag::SOCK_NONBLOCK | socket::SockFlag::SOCK_CLOEXEC;
        socket::socket(socket::AddressFamily::Inet, socket::SockType::Stream, flags, None).unwrap()
    }

    #[test]
    fn a_connection_carries_bytes_both_ways_and_half_closes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let s = stream_socket();
        match connect(s.as_fd(), to) {
            Ok(()) | Err(Errno::EINPROGRESS) => {}
            Err(e) => panic!("connect: {e:?}"),
        }
        let (mut server, _) = l.accept().unwrap();
        assert_eq!(peer(s.as_fd()).unwrap(), to);
        assert_eq!(local(s.as_fd()).unwrap().ip(), to.ip());
        assert_eq!(take_error(s.as_fd()).unwrap(), 0);
        set_int_option(s.as_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(recv(s.as_fd(), &mut buf, false), Err(Errno::EAGAIN), "nothing to read never waits");
        assert_eq!(send(s.as_fd(), b"ping").unwrap(), 4);
        let mut got = [0u8; 4];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        server.write_all(b"pong").unwrap();
        shutdown(s.as_fd(), false, true).unwrap();
        assert_eq!(server.read(&mut got).unwrap(), 0, "the peer sees our FIN");
        drop(server);
        let mut n = 0;
        while n < 4 {
            match recv(s.as_fd(), &mut buf[n..], false) {
                Ok(k) => n += k,
                Err(Errno::EAGAIN) => std::thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(&buf[..4], b"pong");
    }

    #[test]
    fn datagrams_go_to_their_address_and_come_back_with_their_sender() {
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let flags = socket::SockFlag::SOCK_NONBLOCK | socket::SockFlag::SOCK_CLOEXEC;
        let s = socket::socket(socket::AddressFamily::Inet, socket::SockType::Datagram, flags, None).unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(recv_from(s.as_fd(), &mut buf, false), Err(Errno::EAGAIN));
        assert_eq!(send_to(s.as_fd(), b"hello", peer.local_addr().unwrap()).unwrap(), 5);
        let (n, from) = peer.recv_from(&mut [0u8; 16]).unwrap();
        assert_eq!(n, 5);
        peer.send_to(b"a longer reply", from).unwrap();
        while crate::host::fd::poll_now(s.as_fd(), libc::POLLIN).unwrap() == 0 {
            std::thread::yield_now();
        }
        assert_eq!(recv_from(s.as_fd(), &mut buf, true).unwrap(), (4, 14, Some(peer.local_addr().unwrap())));
        assert_eq!(recv_from(s.as_fd(), &mut buf, false).unwrap().1, 14, "a peek leaves it queued");
        assert_eq!(&buf, b"a lo");
    }

    #[test]
    fn a_refused_connection_reports_through_so_error() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let s = stream_socket();
        let r = connect(s.as_fd(), port);
        if r == Err(Errno::EINPROGRESS) {
            while crate::host::fd::poll_now(s.as_fd(), libc::POLLOUT).unwrap() == 0 {
                std::thread::yield_now();
            }
            assert_eq!(take_error(s.as_fd()).unwrap(), libc::ECONNREFUSED);
        } else {
            assert_eq!(r, Err(Errno::ECONNREFUSED));
        }
    }
}
