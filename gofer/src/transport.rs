//! One frame per `SOCK_SEQPACKET` message, with an optional donated fd.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};

use crate::{Error, Result};

/// Room for this many fds in one message, so that a peer donating more
/// than the one allowed has them all closed rather than left installed.
const MAX_FDS: usize = 8;

/// A frame read from the socket.
pub(crate) struct Received {
    /// Length of the frame at the front of the receive buffer.
    pub len: usize,
    /// The fd donated with it, if any.
    pub fd: Option<OwnedFd>,
}

/// Sends `frame` as one message, donating `fd` with it if given.
pub(crate) fn send(sock: BorrowedFd<'_>, frame: &[u8], fd: Option<BorrowedFd<'_>>) -> Result<()> {
    let fds = fd.map(|fd| [fd.as_raw_fd()]);
    let cmsg = fds.as_ref().map(|fds| ControlMessage::ScmRights(fds));
    let iov = [IoSlice::new(frame)];
    loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, cmsg.as_slice(), MsgFlags::MSG_NOSIGNAL, None) {
            Ok(sent) if sent == frame.len() => return Ok(()),
            Ok(sent) => return Err(Error::Protocol(format!("short send: {sent} of {} bytes", frame.len()))),
            Err(Errno::EINTR) => {}
            Err(e) => return Err(Error::Io(e.into())),
        }
    }
}

/// Receives one message into `buf`. Returns `None` when the peer has closed
/// the connection. With `accept_fd`, at most one donated fd is accepted;
/// without it, any donated fd is refused (the kernel closes it). Refused
/// fds and a message longer than `buf` are protocol errors.
pub(crate) fn recv(sock: BorrowedFd<'_>, buf: &mut [u8], accept_fd: bool) -> Result<Option<Received>> {
    let mut cmsg_space = nix::cmsg_space!([RawFd; MAX_FDS]);
    loop {
        let mut iov = [IoSliceMut::new(buf)];
        let cmsg = if accept_fd { Some(&mut cmsg_space) } else { None };
        let msg = match recvmsg::<()>(sock.as_raw_fd(), &mut iov, cmsg, MsgFlags::MSG_CMSG_CLOEXEC) {
            Ok(msg) => msg,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(Error::Io(e.into())),
        };
        if msg.flags.contains(MsgFlags::MSG_CTRUNC) {
            // More fds came than fit in the control buffer. Those that did
            // fit cannot be reached through nix once the message is marked
            // truncated, so at most MAX_FDS of them stay open; the caller
            // drops the connection.
            return Err(Error::Protocol("too many donated fds".into()));
        }
        let mut fds = Vec::new();
        for cmsg in msg.cmsgs().map_err(|e| Error::Io(e.into()))? {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                fds.extend(raw.into_iter().map(|raw| {
                    // SAFETY: the kernel just installed `raw` in our fd table
                    // for this message; nothing else refers to it, so this
                    // OwnedFd is its only owner.
                    unsafe { OwnedFd::from_raw_fd(raw) }
                }));
            }
        }
        if msg.flags.contains(MsgFlags::MSG_TRUNC) {
            return Err(Error::Protocol(format!("frame longer than {} bytes", buf.len())));
        }
        if fds.len() > 1 {
            return Err(Error::Protocol("more than one donated fd".into()));
        }
        if msg.bytes == 0 {
            return Ok(None);
        }
        return Ok(Some(Received { len: msg.bytes, fd: fds.pop() }));
    }
}
