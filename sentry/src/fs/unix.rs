//! Unix domain stream sockets made by socketpair(2): two connected ends,
//! each a pair of pipe buffers (one per direction). Named sockets (bind,
//! listen, connect) and datagram sockets are not available yet.

use super::pipe::{Pipe, PipeEnd};
use crate::abi::Errno;
use crate::vfs::{FileOps, Node, Stat, TimeSpec, S_IFSOCK};
use parking_lot::Mutex;
use std::sync::Arc;

/// One end of a connected Unix stream socket pair.
pub struct UnixStream {
    ino: u64,
    created: TimeSpec,
    rx: Mutex<Option<Arc<PipeEnd>>>,
    tx: Mutex<Option<Arc<PipeEnd>>>,
    /// The credentials of the process that made the pair (SO_PEERCRED).
    pub peer_cred: (i32, u32, u32),
}

impl UnixStream {
    /// A connected pair.
    pub fn pair(
        inos: (u64, u64),
        now: TimeSpec,
        nonblock: bool,
        cred: (i32, u32, u32),
    ) -> (Arc<UnixStream>, Arc<UnixStream>) {
        let a_to_b = Pipe::new(inos.0, now);
        let b_to_a = Pipe::new(inos.1, now);
        let end = |ino, rx: &Arc<Pipe>, tx: &Arc<Pipe>| {
            Arc::new(UnixStream {
                ino,
                created: now,
                rx: Mutex::new(Some(rx.reader(nonblock))),
                tx: Mutex::new(Some(tx.writer(nonblock))),
                peer_cred: cred,
            })
        };
        (end(inos.0, &b_to_a, &a_to_b), end(inos.1, &a_to_b, &b_to_a))
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

    /// Reads like recv(2) with MSG_DONTWAIT when `dontwait`.
    pub fn recv(&self, buf: &mut [u8], dontwait: bool) -> Result<usize, Errno> {
        match self.rx() {
            Some(rx) => rx.read_with(buf, dontwait),
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

impl Node for UnixStream {
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

impl FileOps for UnixStream {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.recv(buf, false)
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        self.send(buf, false)
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        let rx = self.rx().map_or(crate::vfs::POLLIN | crate::vfs::POLLRDNORM, |r| r.poll_events());
        let tx = self.tx().map_or(crate::vfs::POLLHUP, |t| t.poll_events());
        // A peer that closed its end reads as EOF (POLLIN|POLLHUP), as a
        // socket reports it.
        let hup = rx & crate::vfs::POLLHUP != 0;
        let tx = tx & !crate::vfs::POLLERR;
        rx | tx | if hup { crate::vfs::POLLIN | crate::vfs::POLLRDNORM } else { 0 }
    }

    fn status_flags_changed(&self, flags: u32) {
        if let Some(r) = self.rx() {
            r.status_flags_changed(flags);
        }
        if let Some(t) = self.tx() {
            t.status_flags_changed(flags);
        }
    }
}
