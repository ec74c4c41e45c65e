//! Directory change notification (Linux's dnotify, `fcntl(F_NOTIFY)`):
//! a process asks an open directory to signal its owner when entries of
//! the directory are read, written, created, removed, renamed or change
//! their attributes.
//!
//! Each registration is a mark in the sandbox's fsnotify registry (see
//! `notify`), made by one process through one open file description, as
//! Linux's `dnotify_struct` is by one `files_struct` through one `file`.
//! The description holds its marks; the registry holds them weakly and
//! hands them their events, which become the owner's signal.

use super::fasync::Fown;
use super::notify::{
    self, registry, Sink, DIR_RENAME, IN_ACCESS, IN_ATTRIB, IN_CREATE, IN_DELETE, IN_IGNORED, IN_MODIFY, IN_MOVED_FROM,
    IN_MOVED_TO, IN_ONESHOT,
};
use super::Node;
use crate::abi::fcntl::{DN_ACCESS, DN_ATTRIB, DN_CREATE, DN_DELETE, DN_MODIFY, DN_MULTISHOT, DN_RENAME};
use crate::abi::Errno;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

/// Whether an F_NOTIFY argument asks for nothing (and so removes the
/// caller's registration, Linux's `dnotify_flush`).
pub(crate) fn removes(arg: u32) -> bool {
    arg & !DN_MULTISHOT == 0
}

/// The watch mask an F_NOTIFY argument asks for, as Linux's
/// `convert_arg`: a deletion includes a move out of the directory, a
/// creation a move in; unknown bits are ignored.
fn watch_mask(arg: u32) -> u32 {
    [
        (DN_ACCESS, IN_ACCESS),
        (DN_MODIFY, IN_MODIFY),
        (DN_CREATE, IN_CREATE | IN_MOVED_TO),
        (DN_DELETE, IN_DELETE | IN_MOVED_FROM),
        (DN_RENAME, DIR_RENAME),
        (DN_ATTRIB, IN_ATTRIB),
    ]
    .into_iter()
    .filter(|(dn, _)| arg & dn != 0)
    .fold(if arg & DN_MULTISHOT == 0 { IN_ONESHOT } else { 0 }, |m, (_, events)| m | events)
}

/// One registration: the process that made it, its mark's instance in
/// the registry, the descriptor its signals name, and the owner they go
/// to.
struct Mark {
    pid: i32,
    instance: u64,
    fd: AtomicI32,
    fown: Arc<Fown>,
}

impl Sink for Mark {
    fn deliver(&self, _wd: i32, mask: u32, _cookie: u32, _name: &[u8]) {
        // IN_IGNORED: the mark went (its one event came, or the directory
        // did); nothing to tell.
        if mask & IN_IGNORED == 0 {
            self.fown.dir_changed(self.fd.load(Ordering::Relaxed));
        }
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        registry().remove_mark(self.instance);
    }
}

/// The registrations made through one open file description.
#[derive(Default)]
pub(crate) struct DirNotify {
    marks: Mutex<Vec<Arc<Mark>>>,
}

impl DirNotify {
    /// F_NOTIFY with events, by process `pid` through descriptor `fd` of
    /// directory `dir`: adds the events to the process's registration
    /// (which names `fd` from now on), or registers them, signalling
    /// `fown`.
    pub(crate) fn add(&self, pid: i32, fd: i32, arg: u32, dir: &dyn Node, fown: &Arc<Fown>) -> Result<(), Errno> {
        let mask = watch_mask(arg);
        let mut marks = self.marks.lock();
        if let Some(m) = marks.iter().find(|m| m.pid == pid) {
            m.fd.store(fd, Ordering::Relaxed);
            if registry().extend_mark(m.instance, mask) {
                return Ok(());
            }
        }
        marks.retain(|m| m.pid != pid);
        let key = notify::key_of(dir).ok_or(Errno::ENOENT)?;
        let instance = notify::fresh_instance();
        let mark = Arc::new(Mark { pid, instance, fd: AtomicI32::new(fd), fown: fown.clone() });
        registry().add_mark(instance, notify::weak_sink(&mark), key, mask).map_err(|_| Errno::ENOMEM)?;
        marks.push(mark);
        Ok(())
    }

    /// Removes the registration of process `pid` (F_NOTIFY without
    /// events, or the process closed a descriptor of the description).
    pub(crate) fn remove(&self, pid: i32) {
        self.marks.lock().retain(|m| m.pid != pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_becomes_the_events_linux_maps_it_to() {
        assert_eq!(watch_mask(DN_CREATE), IN_CREATE | IN_MOVED_TO | IN_ONESHOT);
        assert_eq!(watch_mask(DN_DELETE | DN_MULTISHOT), IN_DELETE | IN_MOVED_FROM);
        assert_eq!(watch_mask(DN_RENAME | DN_ATTRIB | DN_MULTISHOT | 0x100), DIR_RENAME | IN_ATTRIB);
        assert_eq!(watch_mask(DN_ACCESS | DN_MODIFY | DN_MULTISHOT), IN_ACCESS | IN_MODIFY);
        assert!(removes(0) && removes(DN_MULTISHOT));
        assert!(!removes(0x100));
    }
}
