//! The client the sentry uses to talk to its gofer.

use std::os::fd::{AsFd, OwnedFd};

use parking_lot::Mutex;

use crate::protocol::{Reply, Request, Response, MAX_FRAME};
use crate::{transport, Dirent, Error, Fid, Result, SetAttr, Stat, StatFs};

/// A connection to a gofer. Thread-safe: requests from different threads
/// are serialized on the socket, each waiting for its own response.
pub struct Client {
    conn: Mutex<Conn>,
}

struct Conn {
    sock: OwnedFd,
    buf: Vec<u8>,
    /// Set after a transport or protocol failure; the connection is then
    /// unusable and every later call fails fast.
    broken: bool,
}

impl Conn {
    fn exchange(&mut self, frame: &[u8], req: &Request) -> Result<(Response, Option<OwnedFd>)> {
        transport::send(self.sock.as_fd(), frame, None)?;
        let received = transport::recv(self.sock.as_fd(), &mut self.buf, true)?
            .ok_or_else(|| Error::Protocol("the gofer closed the connection".into()))?;
        let response = Response::decode(&self.buf[..received.len], req.reply_kind())?;
        Ok((response, received.fd))
    }
}

impl Client {
    /// A client on `sock`, one end of the gofer's `SOCK_SEQPACKET` socketpair.
    pub fn new(sock: OwnedFd) -> Client {
        Client { conn: Mutex::new(Conn { sock, buf: vec![0; MAX_FRAME], broken: false }) }
    }

    /// Sends `req` and waits for its reply (and donated fd, if any).
    fn call(&self, req: &Request) -> Result<(Reply, Option<OwnedFd>)> {
        let frame = req.encode()?;
        let mut conn = self.conn.lock();
        if conn.broken {
            return Err(Error::Protocol("the connection to the gofer is broken".into()));
        }
        match conn.exchange(&frame, req) {
            Ok((Response::Ok(reply), fd)) => Ok((reply, fd)),
            Ok((Response::Err(errno), _)) => Err(Error::Errno(errno)),
            Err(e) => {
                log::error!("gofer client: {e}; dropping the connection");
                conn.broken = true;
                Err(e)
            }
        }
    }

    /// A reply of the wrong shape: the gofer is broken or not a gofer, so the
    /// connection is dropped. A donated fd is closed on return.
    fn unexpected(&self, req: &Request, reply: &Reply, fd: Option<&OwnedFd>) -> Error {
        let e = Error::Protocol(format!(
            "unexpected reply to {:?}: {:?} reply {} a donated fd",
            req.opcode(),
            reply.kind(),
            if fd.is_some() { "with" } else { "without" }
        ));
        log::error!("gofer client: {e}; dropping the connection");
        self.conn.lock().broken = true;
        e
    }

    /// Calls `req`, whose reply is a new fid and its attributes.
    fn call_fid_stat(&self, req: &Request) -> Result<(Fid, Stat)> {
        match self.call(req)? {
            (Reply::FidStat { fid, stat }, None) => Ok((fid, stat)),
            (reply, fd) => Err(self.unexpected(req, &reply, fd.as_ref())),
        }
    }

    /// Calls `req`, whose reply is attributes.
    fn call_stat(&self, req: &Request) -> Result<Stat> {
        match self.call(req)? {
            (Reply::Stat(stat), None) => Ok(stat),
            (reply, fd) => Err(self.unexpected(req, &reply, fd.as_ref())),
        }
    }

    /// Calls `req`, whose reply is empty.
    fn call_empty(&self, req: &Request) -> Result<()> {
        match self.call(req)? {
            (Reply::Empty, None) => Ok(()),
            (reply, fd) => Err(self.unexpected(req, &reply, fd.as_ref())),
        }
    }

    /// A fid for the root directory.
    pub fn attach(&self) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Attach)
    }

    /// Looks up the single component `name` in `dir`. A symlink is not
    /// followed: the new fid is the symlink itself.
    pub fn walk(&self, dir: Fid, name: &[u8]) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Walk { dir, name: name.to_vec() })
    }

    /// Attributes of `fid`.
    pub fn stat(&self, fid: Fid) -> Result<Stat> {
        self.call_stat(&Request::Stat { fid })
    }

    /// Opens the regular file `fid` and returns a host fd for it. `flags`:
    /// the access mode, `O_TRUNC` and `O_APPEND` are honored, the rest is
    /// ignored. Anything but a regular file is `EINVAL`.
    pub fn open(&self, fid: Fid, flags: i32) -> Result<OwnedFd> {
        let req = Request::Open { fid, flags };
        match self.call(&req)? {
            (Reply::Empty, Some(fd)) => Ok(fd),
            (reply, fd) => Err(self.unexpected(&req, &reply, fd.as_ref())),
        }
    }

    /// Every entry of directory `dir` except `.` and `..`, fetched page by
    /// page.
    pub fn getdents(&self, dir: Fid) -> Result<Vec<Dirent>> {
        let mut all = Vec::new();
        let mut cookie = 0;
        loop {
            let req = Request::Getdents { fid: dir, cookie };
            match self.call(&req)? {
                (Reply::Dirents { entries, next_cookie }, None) => {
                    all.extend(entries);
                    match next_cookie {
                        Some(next) => cookie = next,
                        None => return Ok(all),
                    }
                }
                (reply, fd) => return Err(self.unexpected(&req, &reply, fd.as_ref())),
            }
        }
    }

    /// The target of symlink `fid`.
    pub fn readlink(&self, fid: Fid) -> Result<Vec<u8>> {
        let req = Request::Readlink { fid };
        match self.call(&req)? {
            (Reply::Bytes(target), None) => Ok(target),
            (reply, fd) => Err(self.unexpected(&req, &reply, fd.as_ref())),
        }
    }

    /// Statistics of the file system holding `fid`.
    pub fn statfs(&self, fid: Fid) -> Result<StatFs> {
        let req = Request::Statfs { fid };
        match self.call(&req)? {
            (Reply::StatFs(statfs), None) => Ok(statfs),
            (reply, fd) => Err(self.unexpected(&req, &reply, fd.as_ref())),
        }
    }

    /// Creates the regular file `name` in `dir` (it must not exist), owned
    /// by `uid`:`gid` with permission bits `mode`, and opens it with the
    /// access mode (and `O_APPEND`) of `flags`.
    pub fn create(
        &self,
        dir: Fid,
        name: &[u8],
        flags: i32,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> Result<(Fid, Stat, OwnedFd)> {
        let req = Request::Create { dir, name: name.to_vec(), flags, mode, uid, gid };
        match self.call(&req)? {
            (Reply::FidStat { fid, stat }, Some(fd)) => Ok((fid, stat, fd)),
            (reply, fd) => Err(self.unexpected(&req, &reply, fd.as_ref())),
        }
    }

    /// Makes the directory `name` in `dir`.
    pub fn mkdir(&self, dir: Fid, name: &[u8], mode: u32, uid: u32, gid: u32) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Mkdir { dir, name: name.to_vec(), mode, uid, gid })
    }

    /// Makes the node `name` in `dir`: a regular file, FIFO or socket
    /// (`mode` carries the type). Device nodes are refused with `EPERM`.
    pub fn mknod(&self, dir: Fid, name: &[u8], mode: u32, rdev: u64, uid: u32, gid: u32) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Mknod { dir, name: name.to_vec(), mode, rdev, uid, gid })
    }

    /// Makes the symlink `name` in `dir` pointing to `target`.
    pub fn symlink(&self, dir: Fid, name: &[u8], target: &[u8], uid: u32, gid: u32) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Symlink { dir, name: name.to_vec(), target: target.to_vec(), uid, gid })
    }

    /// Makes a regular file with no name in `dir` (`O_TMPFILE`), owned by
    /// `uid`:`gid` with permission bits `mode`; `Link` may name it later
    /// unless `flags` is `O_EXCL`. Open it with [`Client::open`].
    pub fn tmpfile(&self, dir: Fid, flags: i32, mode: u32, uid: u32, gid: u32) -> Result<(Fid, Stat)> {
        self.call_fid_stat(&Request::Tmpfile { dir, flags, mode, uid, gid })
    }

    /// Makes `name` in `dir` a hard link to `target`; returns the target's
    /// new attributes.
    pub fn link(&self, target: Fid, dir: Fid, name: &[u8]) -> Result<Stat> {
        self.call_stat(&Request::Link { target, dir, name: name.to_vec() })
    }

    /// Removes `name` from `dir`; `flags` is 0 or `AT_REMOVEDIR`.
    pub fn unlink(&self, dir: Fid, name: &[u8], flags: i32) -> Result<()> {
        self.call_empty(&Request::Unlink { dir, name: name.to_vec(), flags })
    }

    /// Renames `old_dir`/`old_name` to `new_dir`/`new_name`; `flags` are
    /// `renameat2` flags (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    pub fn rename(&self, old_dir: Fid, old_name: &[u8], new_dir: Fid, new_name: &[u8], flags: u32) -> Result<()> {
        self.call_empty(&Request::Rename {
            old_dir,
            old_name: old_name.to_vec(),
            new_dir,
            new_name: new_name.to_vec(),
            flags,
        })
    }

    /// Changes the attributes of `fid`; returns the new attributes.
    pub fn setattr(&self, fid: Fid, attr: &SetAttr) -> Result<Stat> {
        self.call_stat(&Request::SetAttr { fid, attr: *attr })
    }

    /// `fallocate(2)` on the regular file `fid` (a mode of
    /// [`crate::protocol::FALLOCATE_MODES`]).
    pub fn fallocate(&self, fid: Fid, mode: i32, offset: u64, len: u64) -> Result<()> {
        self.call_empty(&Request::Fallocate { fid, mode, offset, len })
    }

    /// Releases `fid`. Failures are only logged: there is nothing a caller
    /// could do about them.
    pub fn clunk(&self, fid: Fid) {
        if let Err(e) = self.call_empty(&Request::Clunk { fid }) {
            log::warn!("gofer client: clunk of fid {fid} failed: {e}");
        }
    }
}
