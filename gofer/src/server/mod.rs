//! The file server: one loop per connection over a fid table.
//!
//! Each fid holds an `O_PATH|O_NOFOLLOW` fd. Names are single components
//! looked up with `openat` relative to a directory fid, so nothing the
//! client sends can lead outside the root or through a host symlink. Files
//! are opened for I/O by reopening the `O_PATH` fd through `/proc/self/fd`,
//! after checking its type.

mod dirents;
mod fids;
mod host;
mod names;
mod read;
mod write;

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;

use crate::protocol::{Reply, Request, Response, MAX_FRAME};
use crate::{confine, transport, Result};
use fids::FidTable;

/// A handled request: the reply and the fd to donate with it, or an errno.
type Outcome = std::result::Result<(Reply, Option<OwnedFd>), Errno>;

/// Confines this process to `root` ([`confine::enter_root`]) and serves the
/// client on `sock` until it closes the connection. Returns `Ok` on a clean
/// end of the connection; a malformed frame ends it with an error.
pub fn serve_main(root: &Path, sock: OwnedFd, read_only: bool) -> Result<()> {
    let (root_fd, proc_fd_dir) = confine::enter_root(root, read_only)?;
    crate::seccomp::confine().map_err(|e| crate::Error::Confine(e.to_string()))?;
    log::info!("gofer: serving {} ({})", root.display(), if read_only { "read-only" } else { "read-write" });
    serve(sock, root_fd, proc_fd_dir, read_only)
}

/// Serves the client on `sock` with `root_fd` as the root directory, without
/// confining the process. `proc_fd_dir` is an fd on `/proc/self/fd`, used to
/// reopen `O_PATH` fds. With `read_only`, every operation that would change
/// the file system fails with `EROFS`.
pub fn serve(sock: OwnedFd, root_fd: OwnedFd, proc_fd_dir: OwnedFd, read_only: bool) -> Result<()> {
    let mut server = Server { fids: FidTable::new(), root: root_fd, proc_fds: proc_fd_dir, read_only };
    let mut buf = vec![0u8; MAX_FRAME];
    let result = loop {
        let received = match transport::recv(sock.as_fd(), &mut buf, false) {
            Ok(Some(received)) => received,
            Ok(None) => break Ok(()),
            Err(e) if client_gone(&e) => break Ok(()),
            Err(e) => break Err(e),
        };
        let req = match Request::decode(&buf[..received.len]) {
            Ok(req) => req,
            Err(e) => break Err(e),
        };
        log::trace!("gofer: {req:?}");
        let (response, fd) = match server.handle(req) {
            Ok((reply, fd)) => (Response::Ok(reply), fd),
            Err(errno) => (Response::Err(errno as i32), None),
        };
        let frame = match response.encode() {
            Ok(frame) => frame,
            Err(e) => {
                log::error!("gofer: cannot encode a reply: {e}");
                Response::Err(libc::EIO).encode()?
            }
        };
        match transport::send(sock.as_fd(), &frame, fd.as_ref().map(AsFd::as_fd)) {
            Ok(_) => {}
            Err(e) if client_gone(&e) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    match &result {
        Ok(()) => log::debug!("gofer: the client closed the connection"),
        Err(e) => log::error!("gofer: closing the connection: {e}"),
    }
    result
}

/// The client went away: its process ended with a reply unread (the
/// sentry exiting while its threads still talk to us), which a
/// SOCK_SEQPACKET socket reports as a reset instead of an end of file.
fn client_gone(e: &crate::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
    matches!(e, crate::Error::Io(io) if matches!(io.kind(), ConnectionReset | BrokenPipe))
}

/// The state of one connection.
struct Server {
    fids: FidTable,
    /// The root directory, handed out by `Attach`.
    root: OwnedFd,
    /// `/proc/self/fd`, opened before the process was confined.
    proc_fds: OwnedFd,
    read_only: bool,
}

impl Server {
    fn handle(&mut self, req: Request) -> Outcome {
        let reply = match req {
            Request::Attach => self.attach(),
            Request::Walk { dir, name } => self.walk(dir, &name),
            Request::Stat { fid } => self.stat(fid),
            Request::Open { fid, flags } => return self.open(fid, flags),
            Request::Getdents { fid, cookie } => self.getdents(fid, cookie),
            Request::Readlink { fid } => self.readlink(fid),
            Request::Statfs { fid } => self.statfs(fid),
            Request::Clunk { fid } => self.fids.remove(fid).map(|()| Reply::Empty),
            Request::Create { dir, name, flags, mode, uid, gid } => {
                return self.create(dir, &name, flags, mode, uid, gid)
            }
            Request::Mkdir { dir, name, mode, uid, gid } => self.mkdir(dir, &name, mode, uid, gid),
            Request::Mknod { dir, name, mode, rdev: _, uid, gid } => self.mknod(dir, &name, mode, uid, gid),
            Request::Symlink { dir, name, target, uid, gid } => self.symlink(dir, &name, &target, uid, gid),
            Request::Link { target, dir, name } => self.link(target, dir, &name),
            Request::Unlink { dir, name, flags } => self.unlink(dir, &name, flags),
            Request::Rename { old_dir, old_name, new_dir, new_name, flags } => {
                self.rename(old_dir, &old_name, new_dir, &new_name, flags)
            }
            Request::SetAttr { fid, attr } => self.setattr(fid, &attr),
            Request::Fallocate { fid, mode, offset, len } => self.fallocate(fid, mode, offset, len),
            Request::Tmpfile { dir, flags, mode, uid, gid } => self.tmpfile(dir, flags, mode, uid, gid),
        };
        reply.map(|reply| (reply, None))
    }

    /// `EROFS` if the server is read-only.
    fn writable(&self) -> std::result::Result<(), Errno> {
        if self.read_only {
            Err(Errno::EROFS)
        } else {
            Ok(())
        }
    }
}
