//! A read-only view of a filesystem: every change fails with `EROFS`, as
//! on a read-only mount. An OCI root with `root.readonly` is one; the
//! overlay's tests use it as a lower layer that must never be written.

use super::tmpfs::open_writes;
use crate::abi::Errno;
use crate::mm::Mappable;
use crate::vfs::perm::special_file;
use crate::vfs::{Dentry, DirEntry, FileOps, IoctlContext, NewNode, Node, SetAttr, Stat, StatFs, S_IFMT};
use std::any::Any;
use std::sync::Arc;

/// `node` and everything below it, read-only.
pub(crate) struct ReadOnly(Arc<dyn Node>);

impl ReadOnly {
    pub(crate) fn wrap(node: Arc<dyn Node>) -> Arc<dyn Node> {
        Arc::new(ReadOnly(node))
    }
}

impl Node for ReadOnly {
    fn stat(&self) -> Result<Stat, Errno> {
        self.0.stat()
    }
    fn read_only(&self) -> bool {
        true
    }
    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        Ok(ReadOnly::wrap(self.0.lookup(name)?))
    }
    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        self.0.readdir()
    }
    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        self.0.readlink()
    }
    fn magic_link(&self) -> Option<Result<Arc<Dentry>, Errno>> {
        self.0.magic_link()
    }
    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        if special_file(self.0.stat()?.mode & S_IFMT) {
            // A FIFO, socket or device is no data of the filesystem: it
            // stays writable on a read-only mount, as in Linux.
            return self.0.open(flags);
        }
        if open_writes(flags) {
            return Err(Errno::EROFS);
        }
        Ok(Arc::new(ReadOnlyFile(self.0.open(flags)?)))
    }
    fn create(&self, _: &[u8], _: NewNode) -> Result<Arc<dyn Node>, Errno> {
        Err(Errno::EROFS)
    }
    fn mkdir(&self, _: &[u8], _: NewNode) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn mknod(&self, _: &[u8], _: NewNode, _: u64) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn symlink(&self, _: &[u8], _: &[u8], _: NewNode) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn link(&self, _: &[u8], _: &Arc<dyn Node>) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn unlink(&self, _: &[u8], _: bool) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn rename(&self, _: &[u8], _: &Arc<dyn Node>, _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn setattr(&self, _: &SetAttr) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn getxattr(&self, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.0.getxattr(name)
    }
    fn setxattr(&self, _: &[u8], _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn listxattr(&self) -> Result<Vec<Vec<u8>>, Errno> {
        self.0.listxattr()
    }
    fn removexattr(&self, _: &[u8]) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn statfs(&self) -> Result<StatFs, Errno> {
        self.0.statfs()
    }
    fn fs_id(&self) -> usize {
        self.0.fs_id()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// An open file of a read-only filesystem: reads pass, changes fail.
struct ReadOnlyFile(Arc<dyn FileOps>);

impl FileOps for ReadOnlyFile {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        self.0.read(buf, off)
    }
    fn write(&self, _: &[u8], _: u64) -> Result<usize, Errno> {
        Err(Errno::EROFS)
    }
    fn append(&self, _: &[u8]) -> Option<Result<(usize, u64), Errno>> {
        Some(Err(Errno::EROFS))
    }
    fn set_append(&self, append: bool) -> Result<(), Errno> {
        self.0.set_append(append)
    }
    fn seekable(&self) -> bool {
        self.0.seekable()
    }
    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        self.0.ioctl(ctx, req, arg)
    }
    fn truncate(&self, _: u64) -> Result<(), Errno> {
        Err(Errno::EROFS)
    }
    fn fsync(&self) -> Result<(), Errno> {
        self.0.fsync()
    }
    fn poll_events(&self) -> u32 {
        self.0.poll_events()
    }
    fn event_register(&self, e: &crate::waiter::Entry) {
        self.0.event_register(e)
    }
    fn event_unregister(&self, e: &crate::waiter::Entry) {
        self.0.event_unregister(e)
    }
    fn fasync(&self) -> Option<crate::vfs::Fasync> {
        self.0.fasync()
    }
    fn io_timeout(&self, write: bool) -> Option<std::time::Duration> {
        self.0.io_timeout(write)
    }
    fn pipe_capacity(&self, set: Option<(usize, bool)>) -> Result<usize, Errno> {
        self.0.pipe_capacity(set)
    }
    fn read_call(&self, buf: &mut [u8], call: &mut crate::vfs::ReadCall) -> Result<usize, Errno> {
        self.0.read_call(buf, call)
    }
    fn open_ready(&self) -> Result<(), Errno> {
        self.0.open_ready()
    }
    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        self.0.mappable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tmpfs::Tmpfs;

    #[test]
    fn a_read_only_filesystem_mounts_read_only() {
        let ns = crate::vfs::MountNamespace::new(ReadOnly::wrap(Tmpfs::new(0o755, 0, 0)), "overlay", "root");
        assert!(ns.root().mount.read_only(), "/proc/mounts says ro");
        let plain = Tmpfs::new(0o755, 0, 0);
        plain.mkdir(b"m", NewNode { mode: 0o755, uid: 0, gid: 0 }).unwrap();
        let ns = crate::vfs::MountNamespace::new(plain.clone(), "overlay", "root");
        assert!(!ns.root().mount.read_only());
        let at = ns.root().child(b"m", plain.lookup(b"m").unwrap());
        ns.mount(&at, ReadOnly::wrap(Tmpfs::new(0o755, 0, 0)), "tmpfs", "t").unwrap();
        assert!(ns.crossed(at).mount.read_only());
    }

    #[test]
    fn reads_pass_and_changes_fail_with_erofs() {
        let fs = Tmpfs::new(0o755, 0, 0);
        let nn = NewNode { mode: 0o644, uid: 0, gid: 0 };
        fs.mkdir(b"d", nn).unwrap();
        let f = fs.create(b"f", nn).unwrap();
        f.open(libc::O_WRONLY).unwrap().write(b"data", 0).unwrap();
        let ro = ReadOnly::wrap(fs);
        let f = ro.lookup(b"f").unwrap();
        let mut buf = [0u8; 4];
        let file = f.open(libc::O_RDONLY).unwrap();
        assert_eq!(file.read(&mut buf, 0), Ok(4));
        assert_eq!(&buf, b"data");
        assert_eq!(file.write(b"x", 0).err(), Some(Errno::EROFS));
        assert_eq!(file.truncate(0).err(), Some(Errno::EROFS));
        for flags in [libc::O_WRONLY, libc::O_RDWR, libc::O_RDONLY | libc::O_TRUNC] {
            assert_eq!(f.open(flags).err(), Some(Errno::EROFS), "{flags:#x}");
        }
        let d = ro.lookup(b"d").unwrap();
        assert_eq!(d.create(b"x", nn).err(), Some(Errno::EROFS), "below the root too");
        assert_eq!(ro.mkdir(b"x", nn).err(), Some(Errno::EROFS));
        assert_eq!(ro.unlink(b"f", false).err(), Some(Errno::EROFS));
        assert_eq!(ro.rename(b"f", &ro, b"g", 0).err(), Some(Errno::EROFS));
        assert_eq!(f.setattr(&SetAttr::default()).err(), Some(Errno::EROFS));
        assert_eq!(ro.symlink(b"l", b"f", nn).err(), Some(Errno::EROFS));
        assert_eq!(ro.readdir().unwrap().len(), 2);
    }
}
