//! The gofer-backed filesystem: nodes are fids of the gofer process, which
//! alone can see the container's files. Regular files are read and written
//! through host descriptors the gofer donates.

use super::host_file::HostFile;
use super::pipe;
use super::tmpfs::now;
use crate::abi::Errno;
use crate::host;
use crate::mm::Mappable;
use crate::vfs::file::DirFile;
use crate::vfs::{
    Allocate, DirEntry, FileOps, NewNode, Node, SetAttr, Stat, StatFs, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG,
};
use husk_gofer::{Client, Fid};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

static NEXT_FS_ID: AtomicUsize = AtomicUsize::new(1 << 20);

/// One connection to a gofer.
pub(crate) struct GoferFs {
    client: Client,
    id: usize,
    /// Whether files change behind the nodes' backs (a bind mount: written
    /// through donated descriptors, or on the host): `stat` then asks the
    /// gofer each time instead of trusting what the walk returned.
    live: bool,
}

/// A file or directory served by the gofer.
pub(crate) struct GoferNode {
    fs: Arc<GoferFs>,
    fid: Fid,
    /// Absolute path in the container, for /proc/[pid]/maps.
    path: String,
    stat: Mutex<Stat>,
    /// Looked-up children still in use elsewhere (weak, so unused fids are
    /// released).
    children: Mutex<HashMap<Vec<u8>, Weak<GoferNode>>>,
    /// A read-only host fd shared by every read-only open of this file.
    ro_fd: Mutex<Option<Arc<OwnedFd>>>,
}

/// Attaches to the gofer on `sock` and returns the root directory: an
/// image that stays as it is (the root filesystem's lower layer), or, when
/// `live`, files that change (a bind mount).
pub(crate) fn new_gofer_fs(sock: OwnedFd, live: bool) -> Result<Arc<dyn Node>, Errno> {
    let id = NEXT_FS_ID.fetch_add(1, Ordering::Relaxed);
    let fs = Arc::new(GoferFs { client: Client::new(sock), id, live });
    let (fid, stat) = fs.client.attach()?;
    Ok(Arc::new(GoferNode::new(fs, fid, String::new(), stat)))
}

impl GoferNode {
    fn new(fs: Arc<GoferFs>, fid: Fid, path: String, stat: Stat) -> GoferNode {
        GoferNode {
            fs,
            fid,
            path,
            stat: Mutex::new(stat),
            children: Mutex::new(HashMap::new()),
            ro_fd: Mutex::new(None),
        }
    }

    fn child_path(&self, name: &[u8]) -> String {
        format!("{}/{}", self.path, String::from_utf8_lossy(name))
    }

    fn new_child(&self, name: &[u8], fid: Fid, stat: Stat) -> Arc<GoferNode> {
        let node = Arc::new(GoferNode::new(self.fs.clone(), fid, self.child_path(name), stat));
        self.children.lock().insert(name.to_vec(), Arc::downgrade(&node));
        node
    }

    fn forget(&self, name: &[u8]) {
        self.children.lock().remove(name);
    }

    fn refresh(&self) -> Result<(), Errno> {
        let st = self.fs.client.stat(self.fid)?;
        *self.stat.lock() = st;
        Ok(())
    }

    /// The file opened with `flags` (what the gofer was asked for) on `fd`.
    fn file_ops(&self, fd: Arc<OwnedFd>, flags: i32) -> Arc<dyn FileOps> {
        let st = *self.stat.lock();
        let host = HostFile::new(fd, self.path.clone(), st.dev, st.ino, flags & libc::O_APPEND != 0);
        Arc::new(GoferFile { host, fs: self.fs.clone(), fid: self.fid, flags, positional: Mutex::new(None) })
    }

    fn downcast(node: &Arc<dyn Node>) -> Result<&GoferNode, Errno> {
        node.as_any().downcast_ref::<GoferNode>().ok_or(Errno::EXDEV)
    }
}

/// An open regular file of the gofer: read and written through the host
/// descriptor it donated; fallocate(2), which the sentry's seccomp filter
/// does not allow on such descriptors, is a request to the gofer.
struct GoferFile {
    host: HostFile,
    fs: Arc<GoferFs>,
    /// The node's fid (the description keeps the node, so the fid lives).
    fid: Fid,
    /// The flags the host descriptor was opened with.
    flags: i32,
    /// On a host without RWF_NOAPPEND (before Linux 6.9), a descriptor
    /// without O_APPEND for the positional writes of a file opened
    /// O_APPEND, opened when the first one comes.
    positional: Mutex<Option<OwnedFd>>,
}

impl GoferFile {
    /// A positional write through the descriptor without O_APPEND (opening
    /// it fails with EPERM on an append-only file, as Linux refuses to
    /// clear O_APPEND there).
    fn write_positional(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        let mut positional = self.positional.lock();
        if positional.is_none() {
            // (Not O_TRUNC again: the open that made this file truncated it.)
            let flags = self.flags & libc::O_ACCMODE;
            *positional = Some(self.fs.client.open(self.fid, flags)?);
        }
        let fd = positional.as_ref().ok_or(Errno::EBADF)?;
        host::fd::pwrite(fd.as_fd(), buf, off)
    }
}

impl FileOps for GoferFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        self.host.read(buf, off)
    }

    fn write(&self, buf: &[u8], off: u64) -> Result<usize, Errno> {
        match self.host.write(buf, off) {
            Err(Errno::EOPNOTSUPP) if self.host.host_appends() => self.write_positional(buf, off),
            r => r,
        }
    }

    fn append(&self, buf: &[u8]) -> Option<Result<(usize, u64), Errno>> {
        self.host.append(buf)
    }

    /// (A read-only description's host descriptor is shared by every
    /// read-only open of the file: its O_APPEND changes no write.)
    fn set_append(&self, append: bool) -> Result<(), Errno> {
        self.host.set_append(append)
    }

    fn truncate(&self, len: u64) -> Result<(), Errno> {
        self.host.truncate(len)
    }

    fn allocate(&self, off: u64, len: u64, how: Allocate) -> Result<(), Errno> {
        Ok(self.fs.client.fallocate(self.fid, how.mode(), off, len)?)
    }

    fn fsync(&self) -> Result<(), Errno> {
        self.host.fsync()
    }

    fn nowait(&self) -> bool {
        true
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        self.host.mappable()
    }
}

impl Drop for GoferNode {
    fn drop(&mut self) {
        self.fs.client.clunk(self.fid);
    }
}

/// Only regular files are opened through the gofer: a FIFO is a sentry
/// pipe (`pipe::open_host_fifo`), and opening a socket or device found on
/// the host fails with ENXIO.
fn is_regular(mode: u32) -> bool {
    mode & S_IFMT == S_IFREG
}

impl Node for GoferNode {
    fn stat(&self) -> Result<Stat, Errno> {
        if self.fs.live {
            // (A file whose fid can no longer be stat'ed shows what it was.)
            if let Ok(st) = self.fs.client.stat(self.fid) {
                *self.stat.lock() = st;
            }
        }
        Ok(*self.stat.lock())
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        if let Some(n) = self.children.lock().get(name).and_then(Weak::upgrade) {
            return Ok(n);
        }
        let (fid, stat) = self.fs.client.walk(self.fid, name)?;
        Ok(self.new_child(name, fid, stat))
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        let entries = self.fs.client.getdents(self.fid)?;
        Ok(entries.into_iter().map(|d| DirEntry { ino: d.ino, kind: d.kind, name: d.name }).collect())
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        Ok(self.fs.client.readlink(self.fid)?)
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let mode = self.stat.lock().mode;
        if mode & S_IFMT == S_IFDIR {
            return Ok(Arc::new(DirFile));
        }
        if mode & S_IFMT == S_IFIFO {
            let st = *self.stat.lock();
            return pipe::open_host_fifo(st.dev, st.ino, now(), flags);
        }
        if !is_regular(mode) {
            return Err(Errno::ENXIO);
        }
        let access = flags & libc::O_ACCMODE;
        if access == libc::O_RDONLY && flags & libc::O_TRUNC == 0 {
            let mut cached = self.ro_fd.lock();
            if let Some(fd) = cached.as_ref() {
                return Ok(self.file_ops(fd.clone(), libc::O_RDONLY));
            }
            let fd = Arc::new(self.fs.client.open(self.fid, libc::O_RDONLY)?);
            *cached = Some(fd.clone());
            return Ok(self.file_ops(fd, libc::O_RDONLY));
        }
        // O_APPEND as the guest asked, as Linux opens the file: an
        // append-only host file (chattr +a) opens for writing only so.
        // Appends happen on the host (RWF_APPEND), at the end it has then;
        // positional writes say they do not append (RWF_NOAPPEND).
        let flags = flags & (libc::O_ACCMODE | libc::O_TRUNC | libc::O_APPEND);
        let fd = Arc::new(self.fs.client.open(self.fid, flags)?);
        if flags & libc::O_TRUNC != 0 {
            self.refresh()?;
        }
        Ok(self.file_ops(fd, flags))
    }

    fn create(&self, name: &[u8], new: NewNode) -> Result<Arc<dyn Node>, Errno> {
        let (fid, stat, _fd) = self.fs.client.create(self.fid, name, libc::O_RDWR, new.mode, new.uid, new.gid)?;
        self.refresh()?;
        Ok(self.new_child(name, fid, stat))
    }

    /// An `O_TMPFILE` file the gofer made on the host, where the host's
    /// filesystem keeps it linkable or not (`O_EXCL`); in no directory's
    /// cache, so no lookup finds it.
    fn tmpfile(&self, new: NewNode, linkable: bool) -> Result<Arc<dyn Node>, Errno> {
        let flags = if linkable { 0 } else { libc::O_EXCL };
        let (fid, stat) = self.fs.client.tmpfile(self.fid, flags, new.mode & 0o7777, new.uid, new.gid)?;
        let path = self.child_path(format!("#{}", stat.ino).as_bytes());
        Ok(Arc::new(GoferNode::new(self.fs.clone(), fid, path, stat)))
    }

    fn mkdir(&self, name: &[u8], new: NewNode) -> Result<(), Errno> {
        let (fid, stat) = self.fs.client.mkdir(self.fid, name, new.mode, new.uid, new.gid)?;
        self.new_child(name, fid, stat);
        self.refresh()
    }

    fn mknod(&self, name: &[u8], new: NewNode, rdev: u64) -> Result<(), Errno> {
        let (fid, stat) = self.fs.client.mknod(self.fid, name, new.mode, rdev, new.uid, new.gid)?;
        self.new_child(name, fid, stat);
        self.refresh()
    }

    fn symlink(&self, name: &[u8], target: &[u8], new: NewNode) -> Result<(), Errno> {
        let (fid, stat) = self.fs.client.symlink(self.fid, name, target, new.uid, new.gid)?;
        self.new_child(name, fid, stat);
        self.refresh()
    }

    fn link(&self, name: &[u8], target: &Arc<dyn Node>) -> Result<(), Errno> {
        let t = GoferNode::downcast(target)?;
        let st = self.fs.client.link(t.fid, self.fid, name)?;
        *t.stat.lock() = st;
        self.refresh()
    }

    fn unlink(&self, name: &[u8], dir: bool) -> Result<(), Errno> {
        let flags = if dir { libc::AT_REMOVEDIR } else { 0 };
        self.fs.client.unlink(self.fid, name, flags)?;
        self.forget(name);
        self.refresh()
    }

    fn rename(&self, name: &[u8], new_dir: &Arc<dyn Node>, new_name: &[u8], flags: u32) -> Result<(), Errno> {
        let nd = GoferNode::downcast(new_dir)?;
        if !Arc::ptr_eq(&self.fs, &nd.fs) {
            return Err(Errno::EXDEV);
        }
        self.fs.client.rename(self.fid, name, nd.fid, new_name, flags)?;
        self.forget(name);
        nd.forget(new_name);
        self.refresh()?;
        nd.refresh()
    }

    fn setattr(&self, attr: &SetAttr) -> Result<(), Errno> {
        let st = self.fs.client.setattr(self.fid, attr)?;
        *self.stat.lock() = st;
        Ok(())
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.fs.client.statfs(self.fid)?)
    }

    fn fs_id(&self) -> usize {
        self.fs.id
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
