//! /run/secrets: the secrets the runtime passed (`--secret NAME=…`), one
//! read-only file each, mode 0400 and owned by the container's user, as
//! Docker and Kubernetes deliver them. The filesystem lives in the
//! sentry's memory alone: nothing of it is written to the host or to the
//! overlay. A secret with a time to live is gone once it passes (lookups
//! fail with ENOENT, directory listings leave it out) and descriptors
//! opened before then read EIO. Opening one is a `file.read` audit
//! record naming the path, never the value, as for every path
//! `--audit-read` names (its default names /run/secrets/**).

use super::synthetic::{dir_entry, Attr, Dir, Entries, FsInfo};
use super::tmpfs::{open_writes, TMPFS_MAGIC};
use crate::abi::Errno;
use crate::vfs::{DirEntry, FileOps, Node, Stat, StatFs, S_IFDIR, S_IFREG};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// Where the filesystem is mounted.
pub const MOUNT_POINT: &[u8] = b"/run/secrets";

/// One secret to deliver.
pub struct Secret {
    /// The file's name: no '/', not "." or "..".
    pub name: String,
    pub value: Vec<u8>,
    /// When it stops being readable, if ever.
    pub expires: Option<Instant>,
}

/// The filesystem's root: a directory of `secrets`, each owned by
/// `uid`:`gid`.
pub fn new_secretfs(secrets: Vec<Secret>, uid: u32, gid: u32) -> Arc<dyn Node> {
    let fs = FsInfo::new(TMPFS_MAGIC, SystemTime::now());
    let files = secrets
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut attr = Attr::new(&fs, u64::try_from(i).unwrap_or(u64::MAX).saturating_add(2), S_IFREG | 0o400);
            (attr.uid, attr.gid) = (uid, gid);
            attr.size = u64::try_from(s.value.len()).unwrap_or(u64::MAX);
            let value = Arc::new(Value { bytes: s.value, expires: s.expires });
            Arc::new(SecretNode { attr, name: s.name.into_bytes(), value })
        })
        .collect();
    Dir::new(Attr::new(&fs, 1, S_IFDIR | 0o755), Live(files))
}

/// A secret's value and deadline, shared by its node and open files.
struct Value {
    bytes: Vec<u8>,
    expires: Option<Instant>,
}

impl Value {
    fn live(&self) -> bool {
        self.expires.is_none_or(|e| Instant::now() < e)
    }
}

/// The directory's entries: the secrets whose time has not run out.
struct Live(Vec<Arc<SecretNode>>);

impl Entries for Live {
    fn lookup(&self, _dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        match self.0.iter().find(|s| s.name == name && s.value.live()) {
            Some(s) => Ok(s.clone()),
            None => Err(Errno::ENOENT),
        }
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.0.iter().filter(|s| s.value.live()).map(|s| dir_entry(&s.name, s.as_ref())).collect()
    }
}

struct SecretNode {
    attr: Attr,
    name: Vec<u8>,
    value: Arc<Value>,
}

impl Node for SecretNode {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        if open_writes(flags) {
            return Err(Errno::EACCES);
        }
        if !self.value.live() {
            return Err(Errno::ENOENT);
        }
        Ok(Arc::new(SecretFile { value: self.value.clone() }))
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.attr.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// An open secret.
struct SecretFile {
    value: Arc<Value>,
}

impl FileOps for SecretFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        if !self.value.live() {
            return Err(Errno::EIO);
        }
        let bytes = &self.value.bytes;
        let start = usize::try_from(off).unwrap_or(usize::MAX).min(bytes.len());
        let n = buf.len().min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fs(ttl: Option<Duration>) -> Arc<dyn Node> {
        let expires = ttl.map(|t| Instant::now() + t);
        let s = Secret { name: "API_KEY".into(), value: b"0123456789abcdef".to_vec(), expires };
        new_secretfs(vec![s], 1000, 1001)
    }

    #[test]
    fn a_secret_is_a_read_only_file_of_the_user() {
        let root = fs(None);
        assert_eq!(root.readdir().unwrap().iter().map(|e| e.name.clone()).collect::<Vec<_>>(), [b"API_KEY"]);
        let node = root.lookup(b"API_KEY").unwrap();
        let st = node.stat().unwrap();
        assert_eq!((st.mode, st.uid, st.gid, st.size), (S_IFREG | 0o400, 1000, 1001, 16));
        assert_eq!(node.open(libc::O_RDWR).err(), Some(Errno::EACCES));
        let f = node.open(libc::O_RDONLY).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(f.read(&mut buf, 10).unwrap(), 6);
        assert_eq!(&buf[..6], b"abcdef");
        assert_eq!(root.lookup(b"OTHER").err(), Some(Errno::ENOENT));
    }

    #[test]
    fn an_expired_secret_is_gone_and_open_files_read_eio() {
        let root = fs(Some(Duration::from_millis(50)));
        let f = root.lookup(b"API_KEY").unwrap().open(libc::O_RDONLY).unwrap();
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(root.lookup(b"API_KEY").err(), Some(Errno::ENOENT));
        assert!(root.readdir().unwrap().is_empty());
        assert_eq!(f.read(&mut [0u8; 8], 0).err(), Some(Errno::EIO));
    }
}
