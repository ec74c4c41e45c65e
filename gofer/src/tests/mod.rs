//! End-to-end tests: a server thread on a temporary directory and a client
//! (or a raw peer) on the other end of the socketpair.

mod basics;
mod confined;
mod malformed;
mod mutations;
mod read_only;

use std::fs::OpenOptions;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

use crate::protocol::{Request, Response, MAX_FRAME};
use crate::{server, transport, Client, Error, Result};

/// A fresh, empty directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "husk-gofer-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).unwrap();
        TempDir(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
    socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC).unwrap()
}

pub(crate) fn open_dir(path: &Path, flags: i32) -> OwnedFd {
    OpenOptions::new().read(true).custom_flags(flags | libc::O_DIRECTORY).open(path).unwrap().into()
}

/// Starts `serve` on `root` in a thread; returns the client's socket end.
pub(crate) fn spawn_server(root: &Path, read_only: bool) -> (OwnedFd, JoinHandle<Result<()>>) {
    let (client_end, server_end) = seqpacket_pair();
    let root_fd = open_dir(root, libc::O_PATH);
    let proc_fds = open_dir(Path::new("/proc/self/fd"), 0);
    let handle = std::thread::spawn(move || server::serve(server_end, root_fd, proc_fds, read_only));
    (client_end, handle)
}

/// A server on a temp dir and a client connected to it.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    client: Option<Client>,
    server: Option<JoinHandle<Result<()>>>,
}

impl Fixture {
    pub(crate) fn new() -> Fixture {
        Fixture::with_mode(false)
    }

    pub(crate) fn with_mode(read_only: bool) -> Fixture {
        let dir = TempDir::new();
        let (sock, server) = spawn_server(dir.path(), read_only);
        Fixture { dir, client: Some(Client::new(sock)), server: Some(server) }
    }

    pub(crate) fn client(&self) -> &Client {
        self.client.as_ref().unwrap()
    }

    /// A path inside the root.
    pub(crate) fn host(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Closes the client and returns how the server loop ended.
    pub(crate) fn finish(mut self) -> Result<()> {
        self.client.take();
        self.server.take().unwrap().join().unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.client.take();
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// The errno of a failed operation.
pub(crate) fn errno<T: std::fmt::Debug>(result: Result<T>) -> i32 {
    match result {
        Err(Error::Errno(e)) => e,
        other => panic!("expected an errno, got {other:?}"),
    }
}

/// A peer speaking raw frames to a server.
pub(crate) struct RawPeer {
    pub(crate) sock: OwnedFd,
    buf: Vec<u8>,
}

impl RawPeer {
    pub(crate) fn new(sock: OwnedFd) -> RawPeer {
        RawPeer { sock, buf: vec![0; MAX_FRAME] }
    }

    pub(crate) fn send(&self, frame: &[u8]) {
        transport::send(self.sock.as_fd(), frame, None).unwrap();
    }

    /// The next response frame, or `None` once the server has closed.
    pub(crate) fn recv(&mut self, req: &Request) -> Option<(Response, Option<OwnedFd>)> {
        let received = transport::recv(self.sock.as_fd(), &mut self.buf, true).unwrap()?;
        let response = Response::decode(&self.buf[..received.len], req.reply_kind()).unwrap();
        Some((response, received.fd))
    }

    pub(crate) fn call(&mut self, req: &Request) -> (Response, Option<OwnedFd>) {
        self.send(&req.encode().unwrap());
        self.recv(req).unwrap()
    }
}
