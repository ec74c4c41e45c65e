//! epoll instances: an interest list of descriptions, each with the events
//! it waits for. Readiness is taken from the files' `poll_events` when the
//! guest waits (level-triggered; edge-triggered reports only newly
//! appearing events).

use crate::abi::Errno;
use crate::vfs::{FileDescription, FileOps, Node, Stat, TimeSpec, POLLIN, POLLRDNORM};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

pub const EPOLLERR: u32 = 0x008;
pub const EPOLLHUP: u32 = 0x010;
pub const EPOLLET: u32 = 1 << 31;
pub const EPOLLONESHOT: u32 = 1 << 30;

struct Interest {
    file: Weak<FileDescription>,
    events: u32,
    data: u64,
    /// Events reported last time (for EPOLLET).
    last: u32,
    /// EPOLLONESHOT fired; nothing is reported until EPOLL_CTL_MOD.
    disarmed: bool,
}

/// An epoll instance.
pub struct Epoll {
    ino: u64,
    created: TimeSpec,
    /// Keyed by (fd, description address), as Linux keys by (fd, file).
    interest: Mutex<BTreeMap<(i32, usize), Interest>>,
}

fn key(fd: i32, file: &Arc<FileDescription>) -> (i32, usize) {
    (fd, Arc::as_ptr(file) as usize)
}

impl Epoll {
    pub fn new(ino: u64, created: TimeSpec) -> Arc<Epoll> {
        Arc::new(Epoll { ino, created, interest: Mutex::new(BTreeMap::new()) })
    }

    /// EPOLL_CTL_ADD.
    pub fn add(&self, fd: i32, file: &Arc<FileDescription>, events: u32, data: u64) -> Result<(), Errno> {
        let mut m = self.interest.lock();
        let k = key(fd, file);
        if m.contains_key(&k) {
            return Err(Errno::EEXIST);
        }
        m.insert(k, Interest { file: Arc::downgrade(file), events, data, last: 0, disarmed: false });
        Ok(())
    }

    /// EPOLL_CTL_MOD.
    pub fn modify(&self, fd: i32, file: &Arc<FileDescription>, events: u32, data: u64) -> Result<(), Errno> {
        let mut m = self.interest.lock();
        let i = m.get_mut(&key(fd, file)).ok_or(Errno::ENOENT)?;
        i.events = events;
        i.data = data;
        i.last = 0;
        i.disarmed = false;
        Ok(())
    }

    /// EPOLL_CTL_DEL.
    pub fn delete(&self, fd: i32, file: &Arc<FileDescription>) -> Result<(), Errno> {
        self.interest.lock().remove(&key(fd, file)).map(drop).ok_or(Errno::ENOENT)
    }

    /// Collects up to `max` ready (events, data) pairs.
    pub fn ready(&self, max: usize) -> Vec<(u32, u64)> {
        let mut m = self.interest.lock();
        // Descriptions closed everywhere leave the set, as on Linux.
        m.retain(|_, i| i.file.strong_count() > 0);
        let mut out = Vec::new();
        for i in m.values_mut() {
            if out.len() >= max {
                break;
            }
            let Some(f) = i.file.upgrade() else { continue };
            if i.disarmed {
                continue;
            }
            let now = f.ops.poll_events() & (i.events | EPOLLERR | EPOLLHUP);
            let report = if i.events & EPOLLET != 0 { now & !i.last } else { now };
            i.last = now;
            if report != 0 {
                out.push((report, i.data));
                if i.events & EPOLLONESHOT != 0 {
                    i.disarmed = true;
                }
            }
        }
        out
    }
}

impl Node for Epoll {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(0x0e, self.ino, 0o600, self.created))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 3
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl FileOps for Epoll {
    fn seekable(&self) -> bool {
        false
    }

    /// An epoll instance is readable when one of its files is ready (it
    /// can itself be watched).
    fn poll_events(&self) -> u32 {
        if self.ready_without_consuming() {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }
}

impl Epoll {
    fn ready_without_consuming(&self) -> bool {
        let m = self.interest.lock();
        m.values().any(|i| {
            !i.disarmed && i.file.upgrade().is_some_and(|f| f.ops.poll_events() & (i.events | EPOLLERR | EPOLLHUP) != 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::pipe::Pipe;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::{Dentry, Mount, POLLOUT};

    fn desc(ops: Arc<dyn FileOps>) -> Arc<FileDescription> {
        let m = Arc::new(Mount {
            id: 0,
            root: Tmpfs::new(0o755, 0, 0),
            mountpoint: None,
            fs_type: "t".into(),
            source: "t".into(),
            read_only: false,
        });
        FileDescription::new(Dentry::mount_root(&m), ops, 2)
    }

    #[test]
    fn level_edge_and_oneshot() {
        let p = Pipe::new(1, TimeSpec::default());
        let r = desc(p.reader(true));
        let w = desc(p.writer(true));
        let ep = Epoll::new(9, TimeSpec::default());
        ep.add(3, &r, POLLIN, 33).unwrap();
        ep.add(4, &w, POLLOUT | EPOLLET, 44).unwrap();
        assert_eq!(ep.add(3, &r, POLLIN, 0), Err(Errno::EEXIST));
        assert_eq!(ep.ready(8), vec![(POLLOUT, 44)], "writable once (edge)");
        assert!(ep.ready(8).is_empty(), "no new edge, nothing to read");
        w.ops.write(b"x", 0).unwrap();
        assert_eq!(ep.ready(8), vec![(POLLIN, 33)]);
        assert_eq!(ep.ready(8), vec![(POLLIN, 33)], "level-triggered repeats");
        ep.modify(3, &r, POLLIN | EPOLLONESHOT, 5).unwrap();
        assert_eq!(ep.ready(8), vec![(POLLIN, 5)]);
        assert!(ep.ready(8).is_empty(), "one shot");
        ep.delete(3, &r).unwrap();
        assert_eq!(ep.delete(3, &r), Err(Errno::ENOENT));
        drop(w);
        assert!(ep.ready(8).is_empty(), "the closed writer left the set");
    }
}
