//! Unix domain stream sockets. A connection is two ends, each a pair of
//! pipe buffers (one per direction), made by socketpair(2) or by connect(2)
//! to a socket listening on a path or an abstract name (the kernel's
//! registry maps names to listeners). Descriptors sent with SCM_RIGHTS
//! ride on a stream position of their direction. Datagram sockets are not
//! available yet.

use super::pipe::{Pipe, PipeEnd};
use crate::abi::Errno;
use crate::vfs::{FileDescription, FileOps, Node, Stat, TimeSpec, S_IFSOCK};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Descriptors sent with SCM_RIGHTS, counted in the kernel-wide in-flight
/// total until they are received or dropped. The total is what bounds
/// sockets that are sent through themselves and so are never freed.
pub struct Rights {
    files: Vec<Arc<FileDescription>>,
    inflight: Arc<AtomicUsize>,
}

impl Rights {
    /// Takes `files` in flight, or ETOOMANYREFS when that would put more
    /// than `limit` descriptors in flight.
    pub fn new(files: Vec<Arc<FileDescription>>, inflight: &Arc<AtomicUsize>, limit: usize) -> Result<Rights, Errno> {
        let n = files.len();
        inflight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| cur.checked_add(n).filter(|&t| t <= limit))
            .map_err(|_| Errno::ETOOMANYREFS)?;
        Ok(Rights { files, inflight: inflight.clone() })
    }

    /// The descriptions, now out of flight.
    pub fn take(mut self) -> Vec<Arc<FileDescription>> {
        std::mem::take(&mut self.files)
    }
}

impl Drop for Rights {
    fn drop(&mut self) {
        self.inflight.fetch_sub(self.files.len(), Ordering::AcqRel);
    }
}

/// In-flight descriptors of one direction, by the stream position of the
/// first byte they were sent with.
type RightsQueue = Arc<Mutex<VecDeque<(u64, Rights)>>>;

/// One end of a connected Unix stream socket pair.
pub struct UnixStream {
    rx: Mutex<Option<Arc<PipeEnd>>>,
    tx: Mutex<Option<Arc<PipeEnd>>>,
    rx_rights: RightsQueue,
    tx_rights: RightsQueue,
    /// The credentials of the process that made the pair (SO_PEERCRED).
    pub peer_cred: (i32, u32, u32),
}

impl UnixStream {
    /// A connected pair; `inos` and `now` label its two pipe buffers.
    pub fn pair(inos: (u64, u64), now: TimeSpec, cred: (i32, u32, u32)) -> (Arc<UnixStream>, Arc<UnixStream>) {
        let a_to_b = Pipe::new(inos.0, now);
        let b_to_a = Pipe::new(inos.1, now);
        let (a_to_b_rights, b_to_a_rights) = (RightsQueue::default(), RightsQueue::default());
        // The socket's own O_NONBLOCK is passed to every call, so the
        // pipe ends themselves always block.
        let end = |rx: &Arc<Pipe>, tx: &Arc<Pipe>, rx_rights: &RightsQueue, tx_rights: &RightsQueue| {
            Arc::new(UnixStream {
                rx: Mutex::new(Some(rx.reader(false))),
                tx: Mutex::new(Some(tx.writer(false))),
                rx_rights: rx_rights.clone(),
                tx_rights: tx_rights.clone(),
                peer_cred: cred,
            })
        };
        (end(&b_to_a, &a_to_b, &b_to_a_rights, &a_to_b_rights), end(&a_to_b, &b_to_a, &a_to_b_rights, &b_to_a_rights))
    }

    /// shutdown(2): closes the reading and/or writing direction.
    pub fn shutdown(&self, read: bool, write: bool) {
        if read {
            self.rx.lock().take();
        }
        if write {
            self.tx.lock().take();
        }
    }

    fn rx(&self) -> Option<Arc<PipeEnd>> {
        self.rx.lock().clone()
    }

    fn tx(&self) -> Option<Arc<PipeEnd>> {
        self.tx.lock().clone()
    }

    /// Reads like recv(2), with MSG_DONTWAIT when `dontwait` and MSG_PEEK
    /// when `peek`.
    pub fn recv(&self, buf: &mut [u8], dontwait: bool, peek: bool) -> Result<usize, Errno> {
        match self.rx() {
            Some(rx) => rx.read_with(buf, dontwait, peek),
            None => Ok(0),
        }
    }

    /// Writes like send(2) with MSG_DONTWAIT when `dontwait`.
    pub fn send(&self, buf: &[u8], dontwait: bool) -> Result<usize, Errno> {
        match self.tx() {
            Some(tx) => tx.write_with(buf, dontwait),
            None => Err(Errno::EPIPE),
        }
    }
}

impl UnixStream {
    /// sendmsg(2) with SCM_RIGHTS: the descriptors ride on the first byte
    /// of `buf`.
    pub fn send_rights(&self, buf: &[u8], dontwait: bool, rights: Rights) -> Result<usize, Errno> {
        let tx = self.tx().ok_or(Errno::EPIPE)?;
        let at = tx.positions().0;
        self.tx_rights.lock().push_back((at, rights));
        let r = tx.write_with(buf, dontwait);
        if r.is_err() {
            self.tx_rights.lock().retain(|(pos, _)| *pos != at);
        }
        r
    }

    /// recvmsg(2): the bytes read and the descriptors sent with them.
    /// Descriptors whose bytes plain reads consumed are dropped here, as
    /// Linux closes them.
    pub fn recv_rights(&self, buf: &mut [u8], dontwait: bool) -> Result<(usize, Vec<Rights>), Errno> {
        let Some(rx) = self.rx() else { return Ok((0, Vec::new())) };
        let start = rx.positions().1;
        let n = rx.read_with(buf, dontwait, false)?;
        let end = start.wrapping_add(n as u64);
        let mut got = Vec::new();
        let mut q = self.rx_rights.lock();
        while q.front().is_some_and(|(at, _)| *at < end) {
            if let Some((at, r)) = q.pop_front() {
                if at >= start {
                    got.push(r);
                }
            }
        }
        Ok((n, got))
    }
}

impl UnixStream {
    /// Readiness of this end, as a socket reports it: a peer that closed
    /// its end reads as EOF (POLLIN|POLLHUP).
    pub fn poll_events(&self) -> u32 {
        let rx = self.rx().map_or(crate::vfs::POLLIN | crate::vfs::POLLRDNORM, |r| r.poll_events());
        let tx = self.tx().map_or(crate::vfs::POLLHUP, |t| t.poll_events());
        let hup = rx & crate::vfs::POLLHUP != 0;
        let tx = tx & !crate::vfs::POLLERR;
        rx | tx | if hup { crate::vfs::POLLIN | crate::vfs::POLLRDNORM } else { 0 }
    }
}

/// The name a Unix socket is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum UnixName {
    /// In the abstract namespace (no file).
    Abstract(Vec<u8>),
    /// A socket file, by (device, inode); `path` is what getsockname shows.
    File { dev: u64, ino: u64, path: Vec<u8> },
}

impl UnixName {
    /// The registry key (paths compare by file, not by spelling).
    pub fn key(&self) -> UnixName {
        match self {
            UnixName::File { dev, ino, .. } => UnixName::File { dev: *dev, ino: *ino, path: Vec::new() },
            a => a.clone(),
        }
    }

    /// The `sun_path` bytes as getsockname reports them.
    pub fn sun_path(&self) -> Vec<u8> {
        match self {
            UnixName::Abstract(n) => {
                let mut v = vec![0u8];
                v.extend_from_slice(n);
                v
            }
            UnixName::File { path, .. } => {
                let mut v = path.clone();
                v.push(0);
                v
            }
        }
    }
}

enum SockState {
    Unbound,
    Bound(UnixName),
    Listening(UnixName),
    Connected { stream: Arc<UnixStream>, local: Option<UnixName>, peer: Option<UnixName> },
}

/// A Unix stream socket: unbound, bound, listening or connected.
pub struct UnixSocket {
    ino: u64,
    created: TimeSpec,
    state: Mutex<SockState>,
    /// Connections waiting for accept (a listening socket's).
    queue: Arc<(Mutex<std::collections::VecDeque<Arc<UnixSocket>>>, parking_lot::Condvar)>,
    nonblock: std::sync::atomic::AtomicBool,
}

impl UnixSocket {
    fn with_state(ino: u64, created: TimeSpec, state: SockState, nonblock: bool) -> Arc<UnixSocket> {
        Arc::new(UnixSocket {
            ino,
            created,
            state: Mutex::new(state),
            queue: Arc::default(),
            nonblock: std::sync::atomic::AtomicBool::new(nonblock),
        })
    }

    /// A new, unbound socket.
    pub fn new(ino: u64, created: TimeSpec, nonblock: bool) -> Arc<UnixSocket> {
        UnixSocket::with_state(ino, created, SockState::Unbound, nonblock)
    }

    /// One end of a connected pair (socketpair).
    pub fn connected(ino: u64, created: TimeSpec, stream: Arc<UnixStream>, nonblock: bool) -> Arc<UnixSocket> {
        UnixSocket::with_state(ino, created, SockState::Connected { stream, local: None, peer: None }, nonblock)
    }

    pub fn nonblocking(&self) -> bool {
        self.nonblock.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The connected stream (ENOTCONN otherwise).
    pub fn stream(&self) -> Result<Arc<UnixStream>, Errno> {
        match &*self.state.lock() {
            SockState::Connected { stream, .. } => Ok(stream.clone()),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// bind(2): names an unbound socket.
    pub fn bind(&self, name: UnixName) -> Result<(), Errno> {
        let mut s = self.state.lock();
        match *s {
            SockState::Unbound => {
                *s = SockState::Bound(name);
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// listen(2).
    pub fn listen(&self) -> Result<(), Errno> {
        let mut s = self.state.lock();
        match &*s {
            SockState::Bound(n) | SockState::Listening(n) => {
                *s = SockState::Listening(n.clone());
                Ok(())
            }
            SockState::Unbound => Err(Errno::EINVAL),
            SockState::Connected { .. } => Err(Errno::EINVAL),
        }
    }

    pub fn is_listening(&self) -> bool {
        matches!(*self.state.lock(), SockState::Listening(_))
    }

    /// The name bound (getsockname), if any.
    pub fn local_name(&self) -> Option<UnixName> {
        match &*self.state.lock() {
            SockState::Unbound => None,
            SockState::Bound(n) | SockState::Listening(n) => Some(n.clone()),
            SockState::Connected { local, .. } => local.clone(),
        }
    }

    /// The peer's name (getpeername); ENOTCONN unless connected.
    pub fn peer_name(&self) -> Result<Option<UnixName>, Errno> {
        match &*self.state.lock() {
            SockState::Connected { peer, .. } => Ok(peer.clone()),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// connect(2) to `listener`: queues the server's end for accept.
    pub fn connect(&self, listener: &Arc<UnixSocket>, inos: (u64, u64), cred: (i32, u32, u32)) -> Result<(), Errno> {
        let Some(name) = listener.local_name().filter(|_| listener.is_listening()) else {
            return Err(Errno::ECONNREFUSED);
        };
        let mut s = self.state.lock();
        let local = match &*s {
            SockState::Connected { .. } => return Err(Errno::EISCONN),
            SockState::Listening(_) => return Err(Errno::EINVAL),
            SockState::Bound(n) => Some(n.clone()),
            SockState::Unbound => None,
        };
        let (mine, theirs) = UnixStream::pair(inos, self.created, cred);
        let server = UnixSocket::with_state(
            inos.1,
            self.created,
            SockState::Connected { stream: theirs, local: Some(name.clone()), peer: local.clone() },
            false,
        );
        *s = SockState::Connected { stream: mine, local, peer: Some(name) };
        let (q, cond) = (&listener.queue.0, &listener.queue.1);
        q.lock().push_back(server);
        cond.notify_all();
        Ok(())
    }

    /// accept(2): the next queued connection, waiting for one unless
    /// `nonblock`.
    pub fn accept(&self, nonblock: bool) -> Result<Arc<UnixSocket>, Errno> {
        if !self.is_listening() {
            return Err(Errno::EINVAL);
        }
        let (q, cond) = (&self.queue.0, &self.queue.1);
        let mut g = q.lock();
        loop {
            if let Some(c) = g.pop_front() {
                return Ok(c);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let qq = self.queue.clone();
            let wake: crate::kernel::wait::Waker = Arc::new(move || {
                let _g = qq.0.lock();
                qq.1.notify_all();
            });
            crate::kernel::wait::wait_once(&mut g, cond, wake)?;
        }
    }
}

impl Node for UnixSocket {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x08, self.ino, S_IFSOCK | 0o777, self.created))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 2
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl FileOps for UnixSocket {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.stream()?.recv(buf, self.nonblocking(), false)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.stream()?.send(buf, self.nonblocking())
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        if self.is_listening() {
            return if self.queue.0.lock().is_empty() { 0 } else { crate::vfs::POLLIN | crate::vfs::POLLRDNORM };
        }
        match self.stream() {
            Ok(s) => s.poll_events(),
            Err(_) => crate::vfs::POLLOUT | crate::vfs::POLLHUP,
        }
    }

    fn status_flags_changed(&self, flags: u32) {
        self.nonblock.store(super::anon::nonblocking(flags), std::sync::atomic::Ordering::Relaxed);
    }
}
