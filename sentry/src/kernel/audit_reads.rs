//! `--audit-read` by file identity: the globs match paths, so a hard link
//! to a watched file (`ln /etc/shadow /var/tmp/x`), or a rename of it out
//! of the globs, would read it unrecorded through the other name. The
//! sentry remembers the identity (filesystem and inode) of a watched file
//! when a hard link to it is made, when it is renamed, and when it is
//! opened through its watched path while it already has other names
//! (a link made before the sandbox); an open for reading of a remembered
//! identity through any path is then recorded, with the watched path it
//! was known by (`via`).
//!
//! The cost: none while nothing is remembered (the usual case); then one
//! stat and one look-up per open for reading.
//!
//! At most `MAX_KNOWN` identities are kept (each with a path of at most
//! PATH_MAX bytes: 4 MiB at most). Past that the table fails closed:
//! every open for reading of a named file is recorded, with `via`
//! saying the table is full.
//!
//! Not covered: a hard link the image had before the sandbox, read
//! through its other name before the watched path is ever opened (the
//! sentry cannot know the other names without a scan), and a file under
//! a watched folder that is moved with its folder (only the file's own
//! link or rename is seen).

use super::Kernel;
use crate::vfs::{Dentry, Node};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// The most identities remembered.
pub(crate) const MAX_KNOWN: usize = 1024;

/// What `via` says of a read recorded because the table is full.
pub(crate) const TABLE_FULL: &str = "unknown: the --audit-read identity table is full";

/// A file's identity: its filesystem's id and its inode number.
type Identity = (usize, u64);

/// The identities of the watched files the sandbox remembers, and the
/// watched path each was known by.
#[derive(Default)]
pub(crate) struct ReadIdentities {
    known: Mutex<HashMap<Identity, String>>,
    /// Something is remembered (or the table is full): opens need the
    /// look-up.
    any: AtomicBool,
    /// The table overflowed: every read is recorded.
    full: AtomicBool,
}

/// The identity of `node`, and its number of names; None when it cannot
/// be stat'ed.
fn identity(node: &dyn Node) -> Option<(Identity, u64)> {
    let st = node.stat().ok()?;
    Some(((node.fs_id(), st.ino), st.nlink))
}

impl ReadIdentities {
    /// Remembers `id` as the watched file `path`.
    fn remember(&self, id: Identity, path: &[u8]) {
        let mut known = self.known.lock();
        if known.contains_key(&id) {
            return;
        }
        if known.len() >= MAX_KNOWN {
            self.full.store(true, Ordering::Relaxed);
        } else {
            known.insert(id, String::from_utf8_lossy(path).into_owned());
        }
        self.any.store(true, Ordering::Release);
    }
}

impl Kernel {
    /// The watched file `path` (which `--audit-read` names) is opened
    /// through it as `d`: remembered when it has other names.
    pub fn read_watched_opened(&self, d: &Dentry, path: &[u8]) {
        if let Some((id, nlink)) = identity(&*d.node) {
            if nlink > 1 {
                self.ext::<ReadIdentities>().remember(id, path);
            }
        }
    }

    /// The watched file `path` (which `--audit-read` names), `node`, is
    /// about to get another name (a hard link) or lose this one (a
    /// rename): remembered.
    pub fn read_watched_renamed(&self, node: &dyn Node, path: &[u8]) {
        if let Some((id, _)) = identity(node) {
            self.ext::<ReadIdentities>().remember(id, path);
        }
    }

    /// The watched path an open of `d` through a path `--audit-read` does
    /// not name reads, if its identity is remembered (`TABLE_FULL` when
    /// the table is full).
    pub fn read_watched_via(&self, d: &Dentry) -> Option<String> {
        let ids = self.ext::<ReadIdentities>();
        if !ids.any.load(Ordering::Acquire) {
            return None;
        }
        // Regular files only: what the globs name (not folders listed,
        // devices or /proc's files).
        let st = d.node.stat().ok()?;
        if st.mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        if ids.full.load(Ordering::Relaxed) {
            return Some(TABLE_FULL.to_string());
        }
        let via = ids.known.lock().get(&(d.node.fs_id(), st.ino)).cloned();
        via
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_remembered_up_to_the_cap_then_the_table_is_full() {
        let ids = ReadIdentities::default();
        assert!(!ids.any.load(Ordering::Relaxed));
        ids.remember((1, 7), b"/etc/shadow");
        ids.remember((1, 7), b"/other");
        assert_eq!(ids.known.lock().get(&(1, 7)).map(String::as_str), Some("/etc/shadow"), "the first name stays");
        assert!(ids.any.load(Ordering::Relaxed) && !ids.full.load(Ordering::Relaxed));
        for i in 0..MAX_KNOWN as u64 {
            ids.remember((2, i), b"/run/secrets/k");
        }
        assert_eq!(ids.known.lock().len(), MAX_KNOWN);
        assert!(ids.full.load(Ordering::Relaxed), "one more than the cap fails closed");
    }
}
