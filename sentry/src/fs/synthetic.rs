//! Building blocks of the sentry's synthetic filesystems (/proc, /dev):
//! per-filesystem identity, fixed attributes, read-only directories (with
//! a fixed list of entries or entries produced on demand), read-only files
//! whose content is generated when they are opened, and symlinks (plain or
//! "magic").

use super::tmpfs::{anon_dev, new_fs_id, open_writes};
use crate::abi::Errno;
use crate::vfs::file::DirFile;
use crate::vfs::{dtype, Dentry, DirEntry, FileOps, Node, Stat, StatFs, TimeSpec, S_IFDIR, S_IFMT};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// One mounted instance of a synthetic filesystem: its identity, device
/// number, `statfs` magic and the timestamps of its static entries.
pub(crate) struct FsInfo {
    id: usize,
    magic: u64,
    time: TimeSpec,
}

impl FsInfo {
    /// A new instance; `magic` is its `f_type` and `time` is reported by
    /// its static entries.
    pub(crate) fn new(magic: u64, time: SystemTime) -> Arc<FsInfo> {
        Arc::new(FsInfo { id: new_fs_id(), magic, time: timespec(time) })
    }

    /// The filesystem's identity for `Node::fs_id`.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// The `st_dev` of every node: an anonymous device.
    pub(crate) fn dev(&self) -> u64 {
        anon_dev(self.id)
    }

    /// The timestamp of static entries.
    pub(crate) fn time(&self) -> TimeSpec {
        self.time
    }

    /// What `statfs` reports for every node.
    pub(crate) fn statfs(&self) -> StatFs {
        StatFs { fs_type: self.magic, bsize: 4096, namelen: 255, frsize: 4096, ..StatFs::default() }
    }
}

/// A `SystemTime` as a `TimeSpec` (times before the epoch become 0).
pub(crate) fn timespec(t: SystemTime) -> TimeSpec {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    TimeSpec { sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), nsec: i64::from(d.subsec_nanos()) }
}

/// A stable inode number for the node at `path` inside a filesystem
/// (FNV-1a); never 0 or 1, which is the root's.
pub(crate) fn path_ino(path: &[u8]) -> u64 {
    let h = path.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    h.max(2)
}

/// The attributes of a synthetic node.
#[derive(Clone)]
pub(crate) struct Attr {
    /// The filesystem the node belongs to.
    pub fs: Arc<FsInfo>,
    pub ino: u64,
    /// File type and permission bits.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Device number of a device node.
    pub rdev: u64,
    pub size: u64,
    pub nlink: u64,
    /// Preferred I/O size (`st_blksize`).
    pub blksize: u64,
    /// Access, modification and change time.
    pub time: TimeSpec,
}

impl Attr {
    /// Root-owned, one link, stamped with the filesystem's time.
    pub(crate) fn new(fs: &Arc<FsInfo>, ino: u64, mode: u32) -> Attr {
        Attr { fs: fs.clone(), ino, mode, uid: 0, gid: 0, rdev: 0, size: 0, nlink: 1, blksize: 4096, time: fs.time() }
    }

    /// The attributes as `stat(2)` reports them.
    pub(crate) fn stat(&self) -> Stat {
        Stat {
            dev: self.fs.dev(),
            ino: self.ino,
            nlink: self.nlink,
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            rdev: self.rdev,
            size: self.size,
            blksize: self.blksize,
            blocks: 0,
            atime: self.time,
            mtime: self.time,
            ctime: self.time,
        }
    }
}

/// The `getdents64` entry of `node` under `name`.
pub(crate) fn dir_entry(name: &[u8], node: &dyn Node) -> Result<DirEntry, Errno> {
    let st = node.stat()?;
    Ok(DirEntry { ino: st.ino, kind: dtype(st.mode), name: name.to_vec() })
}

/// A directory entry: name and node.
pub(crate) type Entry = (Vec<u8>, Arc<dyn Node>);

/// The entries of a read-only directory. `dir` is the directory's own
/// attributes (children usually inherit their owner and time).
pub(crate) trait Entries: Send + Sync + 'static {
    /// Looks up one name (never "." or "..").
    fn lookup(&self, dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno>;

    /// Every entry except "." and "..".
    fn list(&self, dir: &Attr) -> Result<Vec<DirEntry>, Errno>;
}

/// A fixed list of entries, listed in order.
pub(crate) struct Fixed(pub Vec<Entry>);

impl Fixed {
    /// A directory's link count: 2 plus the number of subdirectories.
    pub(crate) fn nlink(&self) -> u64 {
        let is_dir = |n: &Arc<dyn Node>| n.stat().is_ok_and(|s| s.mode & S_IFMT == S_IFDIR);
        2 + self.0.iter().filter(|(_, n)| is_dir(n)).count() as u64
    }
}

impl Entries for Fixed {
    fn lookup(&self, _dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, node)| node.clone()).ok_or(Errno::ENOENT)
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.0.iter().map(|(name, node)| dir_entry(name, node.as_ref())).collect()
    }
}

/// A read-only directory; every change to it fails with `EPERM`.
pub(crate) struct Dir<E> {
    attr: Attr,
    entries: E,
}

impl<E: Entries> Dir<E> {
    pub(crate) fn new(attr: Attr, entries: E) -> Arc<Dir<E>> {
        Arc::new(Dir { attr, entries })
    }

    pub(crate) fn entries(&self) -> &E {
        &self.entries
    }
}

impl Dir<Fixed> {
    /// A directory of `entries`, with its link count set from them.
    pub(crate) fn fixed(mut attr: Attr, entries: Vec<Entry>) -> Arc<Dir<Fixed>> {
        let entries = Fixed(entries);
        attr.nlink = entries.nlink();
        Dir::new(attr, entries)
    }
}

impl<E: Entries> Node for Dir<E> {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn lookup(&self, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.entries.lookup(&self.attr, name)
    }

    fn readdir(&self) -> Result<Vec<DirEntry>, Errno> {
        self.entries.list(&self.attr)
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        if open_writes(flags) {
            return Err(Errno::EISDIR);
        }
        Ok(Arc::new(DirFile))
    }

    fn rename(&self, _: &[u8], _: &Arc<dyn Node>, _: &[u8], _: u32) -> Result<(), Errno> {
        Err(Errno::EPERM)
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.attr.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Produces a generated file's content.
pub(crate) type Generator = Box<dyn Fn() -> Result<Vec<u8>, Errno> + Send + Sync>;

/// Takes what is written to a writable generated file (each write whole,
/// wherever it is written, as Linux's /proc handlers parse them).
pub(crate) type Writer = Box<dyn Fn(&[u8]) -> Result<(), Errno> + Send + Sync>;

/// A file whose content is generated: a read-only one when it is opened
/// and then read from that snapshot (opening it for writing fails with
/// `EACCES`); a writable one at each read, so that a read sees what was
/// written before it.
pub(crate) struct GenFile {
    attr: Attr,
    gen: Arc<Generator>,
    write: Option<Arc<Writer>>,
}

impl GenFile {
    /// A file whose content `gen` produces at each open.
    pub(crate) fn new(attr: Attr, gen: Generator) -> Arc<GenFile> {
        Arc::new(GenFile { attr, gen: Arc::new(gen), write: None })
    }

    /// A file whose content `gen` produces at each read and whose writes
    /// `write` takes.
    pub(crate) fn writable(attr: Attr, gen: Generator, write: Writer) -> Arc<GenFile> {
        Arc::new(GenFile { attr, gen: Arc::new(gen), write: Some(Arc::new(write)) })
    }
}

impl Node for GenFile {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        let seq_file = self.attr.fs.magic == PROC_SUPER_MAGIC;
        match &self.write {
            Some(write) => Ok(Arc::new(Live { gen: self.gen.clone(), write: write.clone(), seq_file })),
            None if open_writes(flags) => Err(Errno::EACCES),
            None => Ok(Arc::new(Snapshot((self.gen)()?, seq_file))),
        }
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.attr.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The `f_type` of /proc (PROC_SUPER_MAGIC), whose generated files are
/// Linux seq_files.
pub(crate) const PROC_SUPER_MAGIC: u64 = 0x9fa0;

/// The content of a generated file, as it was when the file was opened,
/// and whether it is a seq_file (no seeking from its end).
struct Snapshot(Vec<u8>, bool);

impl FileOps for Snapshot {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        Ok(read_at(&self.0, buf, off))
    }

    fn seeks_from_end(&self) -> bool {
        !self.1
    }
}

/// `data` read at `off` into `buf`.
fn read_at(data: &[u8], buf: &mut [u8], off: u64) -> usize {
    let start = usize::try_from(off).unwrap_or(usize::MAX).min(data.len());
    let n = buf.len().min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

/// An open writable generated file.
struct Live {
    gen: Arc<Generator>,
    write: Arc<Writer>,
    seq_file: bool,
}

impl FileOps for Live {
    fn read(&self, buf: &mut [u8], off: u64) -> Result<usize, Errno> {
        Ok(read_at(&(self.gen)()?, buf, off))
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        (self.write)(buf)?;
        Ok(buf.len())
    }

    fn seeks_from_end(&self) -> bool {
        !self.seq_file
    }
}

/// Resolves a magic link to the object itself.
pub(crate) type LinkTarget = Box<dyn Fn() -> Result<Arc<Dentry>, Errno> + Send + Sync>;

/// A symlink whose text is produced on each `readlink`; a magic link also
/// resolves straight to a dentry during path walks.
pub(crate) struct Link {
    attr: Attr,
    text: Generator,
    target: Option<LinkTarget>,
}

impl Link {
    /// A symlink to the fixed `target` (its size is the target's length).
    pub(crate) fn fixed(mut attr: Attr, target: &[u8]) -> Arc<Link> {
        attr.size = target.len() as u64;
        let target = target.to_vec();
        Arc::new(Link { attr, text: Box::new(move || Ok(target.clone())), target: None })
    }

    /// A symlink whose text is computed at each `readlink`.
    pub(crate) fn dynamic(attr: Attr, text: Generator) -> Arc<Link> {
        Arc::new(Link { attr, text, target: None })
    }

    /// A magic link: `text` for `readlink`, `target` for path walks.
    pub(crate) fn magic(attr: Attr, text: Generator, target: LinkTarget) -> Arc<Link> {
        Arc::new(Link { attr, text, target: Some(target) })
    }
}

impl Node for Link {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn readlink(&self) -> Result<Vec<u8>, Errno> {
        (self.text)()
    }

    fn magic_link(&self) -> Option<Result<Arc<Dentry>, Errno>> {
        self.target.as_ref().map(|t| t())
    }

    fn statfs(&self) -> Result<StatFs, Errno> {
        Ok(self.attr.fs.statfs())
    }

    fn fs_id(&self) -> usize {
        self.attr.fs.id()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{S_IFLNK, S_IFREG};
    use std::sync::atomic::{AtomicU32, Ordering};

    fn fs() -> Arc<FsInfo> {
        FsInfo::new(0x1234, UNIX_EPOCH + std::time::Duration::from_secs(1000))
    }

    #[test]
    fn fs_instances_differ() {
        let (a, b) = (fs(), fs());
        assert_ne!(a.id(), b.id());
        assert_ne!(a.dev(), b.dev());
        assert_eq!(libc::major(a.dev()), 0);
        assert_eq!(a.time(), TimeSpec { sec: 1000, nsec: 0 });
    }

    #[test]
    fn path_inos_are_stable_and_distinct() {
        assert_eq!(path_ino(b"/a/b"), path_ino(b"/a/b"));
        assert_ne!(path_ino(b"/a/b"), path_ino(b"/a/c"));
        assert!(path_ino(b"") > 1);
    }

    #[test]
    fn generated_file_snapshots_at_open() {
        let fs = fs();
        let counter = Arc::new(AtomicU32::new(0));
        let c = counter.clone();
        let f = GenFile::new(
            Attr::new(&fs, 5, S_IFREG | 0o444),
            Box::new(move || Ok(format!("n={}\n", c.fetch_add(1, Ordering::Relaxed)).into_bytes())),
        );
        let ops = f.open(libc::O_RDONLY).unwrap();
        let mut buf = [0u8; 2];
        assert_eq!(ops.read(&mut buf, 0).unwrap(), 2);
        assert_eq!(&buf, b"n=");
        assert_eq!(ops.read(&mut buf, 2).unwrap(), 2);
        assert_eq!(&buf, b"0\n");
        assert_eq!(ops.read(&mut buf, 4).unwrap(), 0);
        assert_eq!(ops.read(&mut buf, u64::MAX).unwrap(), 0);
        let again = f.open(libc::O_RDONLY).unwrap();
        assert_eq!(again.read(&mut buf, 2).unwrap(), 2);
        assert_eq!(&buf, b"1\n");
        assert_eq!(f.open(libc::O_WRONLY).err(), Some(Errno::EACCES));
        assert_eq!(f.open(libc::O_RDWR).err(), Some(Errno::EACCES));
        assert_eq!(f.open(libc::O_RDONLY | libc::O_TRUNC).err(), Some(Errno::EACCES));
        assert_eq!(f.stat().unwrap().mode, S_IFREG | 0o444);
    }

    #[test]
    fn writable_file_regenerates_at_each_read() {
        let fs = fs();
        let value = Arc::new(AtomicU32::new(7));
        let (r, w) = (value.clone(), value.clone());
        let f = GenFile::writable(
            Attr::new(&fs, 6, S_IFREG | 0o644),
            Box::new(move || Ok(format!("{}\n", r.load(Ordering::Relaxed)).into_bytes())),
            Box::new(move |data| {
                let n = std::str::from_utf8(data).ok().and_then(|s| s.trim().parse().ok()).ok_or(Errno::EINVAL)?;
                w.store(n, Ordering::Relaxed);
                Ok(())
            }),
        );
        let ops = f.open(libc::O_RDWR | libc::O_TRUNC).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(ops.read(&mut buf, 0).unwrap(), 2);
        assert_eq!(&buf[..2], b"7\n");
        assert_eq!(ops.write(b"42\n", 0).unwrap(), 3);
        assert_eq!(ops.read(&mut buf, 0).unwrap(), 3);
        assert_eq!(&buf[..3], b"42\n");
        assert_eq!(ops.read(&mut buf, 1).unwrap(), 2, "reads at an offset of the current text");
        assert_eq!(ops.write(b"x", 0).err(), Some(Errno::EINVAL));
        assert_eq!(value.load(Ordering::Relaxed), 42);
        assert!(ops.seeks_from_end(), "only /proc's files are seq_files");
    }

    #[test]
    fn static_dir_lists_looks_up_and_refuses_changes() {
        let fs = fs();
        let sub: Arc<dyn Node> = Dir::fixed(Attr::new(&fs, 3, S_IFDIR | 0o755), Vec::new());
        let link: Arc<dyn Node> = Link::fixed(Attr::new(&fs, 4, S_IFLNK | 0o777), b"/proc/self/fd");
        let dir = Dir::fixed(
            Attr::new(&fs, 1, S_IFDIR | 0o755),
            vec![(b"sub".to_vec(), sub.clone()), (b"fd".to_vec(), link.clone())],
        );
        let st = dir.stat().unwrap();
        assert_eq!(st.nlink, 3);
        assert_eq!(st.dev, fs.dev());
        let names: Vec<_> = dir.readdir().unwrap();
        assert_eq!(
            names,
            vec![
                DirEntry { ino: 3, kind: libc::DT_DIR, name: b"sub".to_vec() },
                DirEntry { ino: 4, kind: libc::DT_LNK, name: b"fd".to_vec() },
            ]
        );
        assert!(Arc::ptr_eq(&dir.lookup(b"fd").unwrap(), &link));
        assert_eq!(dir.lookup(b"nope").err(), Some(Errno::ENOENT));
        assert_eq!(link.readlink().unwrap(), b"/proc/self/fd");
        assert_eq!(link.stat().unwrap().size, 13);
        assert!(link.magic_link().is_none());
        let new = crate::vfs::NewNode { mode: 0o644, uid: 0, gid: 0 };
        assert_eq!(dir.create(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(dir.mkdir(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(dir.unlink(b"sub", true).err(), Some(Errno::EPERM));
        assert_eq!(dir.rename(b"fd", &sub, b"x", 0).err(), Some(Errno::EPERM));
        assert_eq!(dir.setattr(&crate::vfs::SetAttr::default()).err(), Some(Errno::EPERM));
        assert_eq!(dir.open(libc::O_WRONLY).err(), Some(Errno::EISDIR));
        assert_eq!(dir.statfs().unwrap().fs_type, 0x1234);
        assert_eq!(link.statfs().unwrap().fs_type, 0x1234);
        let ops = dir.open(libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
        assert_eq!(ops.read(&mut [0u8; 4], 0).err(), Some(Errno::EISDIR));
    }
}
