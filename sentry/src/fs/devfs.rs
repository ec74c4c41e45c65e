//! The sandbox's /dev: a static directory with the memory character
//! devices (null, zero, full, random, urandom), the terminal devices (tty,
//! ptmx, and the `pts` directory: see `devpts`), the standard stream
//! symlinks and the empty `shm` mount point.

use super::devpts::{ControllingTty, Devpts, Ptmx, Pts};
use super::synthetic::{path_ino, Attr, Dir, FsInfo, Link};
use super::tmpfs::TMPFS_MAGIC;
use crate::abi::Errno;
use crate::loader::host_random;
use crate::mm::Mappable;
use crate::vfs::{FileOps, Node, Stat, StatFs, S_IFCHR, S_IFDIR, S_IFLNK};
use std::sync::Arc;
use std::time::SystemTime;

/// A character device of /dev.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Device {
    Null,
    Zero,
    Full,
    Random,
    Urandom,
}

impl Device {
    const ALL: [Device; 5] = [Device::Null, Device::Zero, Device::Full, Device::Random, Device::Urandom];

    fn name(self) -> &'static str {
        match self {
            Device::Null => "null",
            Device::Zero => "zero",
            Device::Full => "full",
            Device::Random => "random",
            Device::Urandom => "urandom",
        }
    }

    /// Linux's major and minor numbers.
    fn numbers(self) -> (u32, u32) {
        match self {
            Device::Null => (1, 3),
            Device::Zero => (1, 5),
            Device::Full => (1, 7),
            Device::Random => (1, 8),
            Device::Urandom => (1, 9),
        }
    }
}

/// Links to the calling process's standard streams and descriptors.
const LINKS: [(&str, &str); 4] = [
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
];

/// Directories other filesystems are mounted on.
const DIRS: [&str; 2] = ["shm", "mqueue"];

/// The /dev root.
pub(crate) fn new_devfs(devpts: Arc<Devpts>) -> Arc<dyn Node> {
    let fs = FsInfo::new(TMPFS_MAGIC, SystemTime::now());
    let mut entries: Vec<(Vec<u8>, Arc<dyn Node>)> = Vec::new();
    for dev in Device::ALL {
        let (major, minor) = dev.numbers();
        let mut attr = Attr::new(&fs, ino_of(dev.name()), S_IFCHR | 0o666);
        attr.rdev = libc::makedev(major, minor);
        entries.push((dev.name().into(), Arc::new(CharDev { attr, dev })));
    }
    let mut tty = Attr::new(&fs, ino_of("tty"), S_IFCHR | 0o666);
    tty.rdev = libc::makedev(5, 0);
    entries.push((b"tty".to_vec(), Arc::new(ControllingTty { attr: tty, devpts: devpts.clone() })));
    let mut ptmx = Attr::new(&fs, ino_of("ptmx"), S_IFCHR | 0o666);
    ptmx.rdev = libc::makedev(5, 2);
    entries.push((b"ptmx".to_vec(), Arc::new(Ptmx { attr: ptmx, devpts: devpts.clone() })));
    for (name, target) in LINKS {
        entries.push((name.into(), Link::fixed(Attr::new(&fs, ino_of(name), S_IFLNK | 0o777), target.as_bytes())));
    }
    for name in DIRS {
        entries.push((name.into(), Dir::fixed(Attr::new(&fs, ino_of(name), S_IFDIR | 0o755), Vec::new())));
    }
    let mut pts_attr = Attr::new(&fs, ino_of("pts"), S_IFDIR | 0o755);
    pts_attr.nlink = 2;
    let pts = Dir::new(pts_attr, Pts { devpts, ptmx: None });
    entries.push((b"pts".to_vec(), pts));
    Dir::fixed(Attr::new(&fs, 1, S_IFDIR | 0o755), entries)
}

fn ino_of(name: &str) -> u64 {
    path_ino(format!("/{name}").as_bytes())
}

/// A character device node.
struct CharDev {
    attr: Attr,
    dev: Device,
}

impl Node for CharDev {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(self.attr.stat())
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(Arc::new(DevFile(self.dev)))
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

/// An open memory device. Offsets are accepted (lseek returns them) and
/// ignored, as Linux does.
struct DevFile(Device);

impl FileOps for DevFile {
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        match self.0 {
            Device::Null => Ok(0),
            Device::Zero | Device::Full => {
                buf.fill(0);
                Ok(buf.len())
            }
            Device::Random | Device::Urandom => {
                host_random(buf);
                Ok(buf.len())
            }
        }
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        match self.0 {
            Device::Full => Err(Errno::ENOSPC),
            _ => Ok(buf.len()),
        }
    }

    fn mappable(&self) -> Option<Arc<dyn Mappable>> {
        match self.0 {
            Device::Zero => Some(Arc::new(ZeroPages)),
            _ => None,
        }
    }
}

/// A private mapping of /dev/zero: anonymous zero-filled memory, shown in
/// /proc/[pid]/maps like any anonymous mapping.
struct ZeroPages;

impl Mappable for ZeroPages {
    fn read_at(&self, _off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        buf.fill(0);
        Ok(buf.len())
    }

    fn map_name(&self) -> String {
        String::new()
    }

    fn map_ids(&self) -> (u64, u64) {
        (0, 0)
    }

    fn anonymous(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::{DirEntry, NewNode, S_IFMT};

    fn open(root: &Arc<dyn Node>, name: &str) -> Arc<dyn FileOps> {
        root.lookup(name.as_bytes()).unwrap().open(libc::O_RDWR).unwrap()
    }

    #[test]
    fn null_reads_eof_and_swallows_writes() {
        let root = new_devfs(Arc::default());
        let f = open(&root, "null");
        assert_eq!(f.read(&mut [1u8; 16], 0).unwrap(), 0);
        assert_eq!(f.write(&[7u8; 100], 5).unwrap(), 100);
        assert!(f.seekable());
        assert!(f.mappable().is_none());
    }

    #[test]
    fn zero_and_full_read_zeros() {
        let root = new_devfs(Arc::default());
        for name in ["zero", "full"] {
            let f = open(&root, name);
            let mut buf = [9u8; 64];
            assert_eq!(f.read(&mut buf, 1 << 40).unwrap(), 64);
            assert!(buf.iter().all(|&b| b == 0));
        }
        assert_eq!(open(&root, "zero").write(b"abc", 0).unwrap(), 3);
        assert_eq!(open(&root, "full").write(b"abc", 0).err(), Some(Errno::ENOSPC));
    }

    #[test]
    fn zero_maps_as_anonymous_memory() {
        let m = open(&new_devfs(Arc::default()), "zero").mappable().unwrap();
        let mut buf = [5u8; 4096];
        assert_eq!(m.read_at(1 << 20, &mut buf).unwrap(), 4096);
        assert!(buf.iter().all(|&b| b == 0));
        assert_eq!(m.map_name(), "");
        assert_eq!(m.map_ids(), (0, 0));
    }

    #[test]
    fn random_devices_fill_the_buffer() {
        let root = new_devfs(Arc::default());
        for name in ["random", "urandom"] {
            let f = open(&root, name);
            let mut a = [0u8; 64];
            let mut b = [0u8; 64];
            assert_eq!(f.read(&mut a, 0).unwrap(), 64);
            assert_eq!(f.read(&mut b, 0).unwrap(), 64);
            assert_ne!(a, b);
            assert_eq!(f.write(b"entropy", 0).unwrap(), 7);
        }
    }

    #[test]
    fn tty_has_no_controlling_terminal() {
        let root = new_devfs(Arc::default());
        assert_eq!(root.lookup(b"tty").unwrap().open(libc::O_RDWR).err(), Some(Errno::ENXIO));
    }

    #[test]
    fn device_modes_and_numbers() {
        let root = new_devfs(Arc::default());
        for (name, major, minor) in [
            ("null", 1, 3),
            ("zero", 1, 5),
            ("full", 1, 7),
            ("random", 1, 8),
            ("urandom", 1, 9),
            ("tty", 5, 0),
            ("ptmx", 5, 2),
        ] {
            let st = root.lookup(name.as_bytes()).unwrap().stat().unwrap();
            assert_eq!(st.mode, S_IFCHR | 0o666, "{name}");
            assert_eq!((libc::major(st.rdev), libc::minor(st.rdev)), (major, minor), "{name}");
            assert_eq!((st.uid, st.gid, st.nlink), (0, 0, 1));
        }
        let st = root.stat().unwrap();
        assert_eq!(st.mode, S_IFDIR | 0o755);
        assert_eq!(st.ino, 1);
        assert_eq!(st.nlink, 5);
    }

    #[test]
    fn listing_links_and_mount_points() {
        let root = new_devfs(Arc::default());
        let names: Vec<String> =
            root.readdir().unwrap().into_iter().map(|e| String::from_utf8(e.name).unwrap()).collect();
        assert_eq!(
            names,
            [
                "null", "zero", "full", "random", "urandom", "tty", "ptmx", "fd", "stdin", "stdout", "stderr", "shm",
                "mqueue", "pts"
            ]
        );
        for (name, target) in LINKS {
            let l = root.lookup(name.as_bytes()).unwrap();
            assert_eq!(l.readlink().unwrap(), target.as_bytes());
            assert_eq!(l.stat().unwrap().mode, S_IFLNK | 0o777);
        }
        for name in DIRS {
            let d = root.lookup(name.as_bytes()).unwrap();
            assert_eq!(d.stat().unwrap().mode & S_IFMT, S_IFDIR);
            assert_eq!(d.readdir().unwrap(), Vec::<DirEntry>::new());
        }
        let inos: std::collections::HashSet<u64> = root.readdir().unwrap().iter().map(|e| e.ino).collect();
        assert_eq!(inos.len(), 14);
    }

    #[test]
    fn pts_shows_the_registered_terminals_as_themselves() {
        let terminals = Arc::new(Devpts::default());
        let root = new_devfs(terminals.clone());
        let pts = root.lookup(b"pts").unwrap();
        assert_eq!(pts.readdir().unwrap(), Vec::<DirEntry>::new());
        let (a, b) = (crate::fs::tmpfs::Tmpfs::new(0o600, 0, 0), crate::fs::tmpfs::Tmpfs::new(0o600, 0, 0));
        terminals.add_host(b"3", &a);
        terminals.add_host(b"3", &b);
        let found = pts.lookup(b"3").unwrap();
        assert!(Arc::ptr_eq(&found, &a), "the oldest open node shows");
        assert_eq!(pts.readdir().unwrap().len(), 1);
        assert_eq!(pts.lookup(b"4").err(), Some(Errno::ENOENT));
        drop((found, a));
        assert!(Arc::ptr_eq(&pts.lookup(b"3").unwrap(), &b), "then the next one");
        drop(b);
        assert_eq!(pts.lookup(b"3").err(), Some(Errno::ENOENT), "a closed terminal is gone");
    }

    #[test]
    fn ptmx_makes_numbered_terminals_that_live_as_long_as_their_master() {
        let devpts = Arc::new(Devpts::default());
        let root = new_devfs(devpts.clone());
        let host = crate::fs::tmpfs::Tmpfs::new(0o600, 0, 0);
        devpts.add_host(b"0", &host);
        let pts = root.lookup(b"pts").unwrap();
        let a = open(&root, "ptmx");
        let b = open(&root, "ptmx");
        let names: Vec<Vec<u8>> = pts.readdir().unwrap().into_iter().map(|e| e.name).collect();
        assert_eq!(names, [b"0".to_vec(), b"1".to_vec(), b"2".to_vec()], "host terminal 0's number is taken");
        let one = pts.lookup(b"1").unwrap();
        assert_eq!(libc::major(one.stat().unwrap().rdev), 136);
        assert_eq!(one.open(libc::O_RDWR | libc::O_NOCTTY).err(), Some(Errno::EIO), "locked until unlockpt");
        drop(a);
        assert_eq!(pts.lookup(b"1").err(), Some(Errno::ENOENT));
        assert!(pts.lookup(b"2").is_ok());
        drop((b, host));
        assert_eq!(pts.readdir().unwrap(), Vec::<DirEntry>::new());
    }

    #[test]
    fn mutations_are_refused() {
        let root = new_devfs(Arc::default());
        let new = NewNode { mode: 0o644, uid: 0, gid: 0 };
        assert_eq!(root.create(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(root.mkdir(b"x", new).err(), Some(Errno::EPERM));
        assert_eq!(root.mknod(b"x", new, 0).err(), Some(Errno::EPERM));
        assert_eq!(root.symlink(b"x", b"y", new).err(), Some(Errno::EPERM));
        assert_eq!(root.unlink(b"null", false).err(), Some(Errno::EPERM));
        assert_eq!(root.rename(b"null", &root, b"x", 0).err(), Some(Errno::EPERM));
        let shm = root.lookup(b"shm").unwrap();
        assert_eq!(shm.create(b"x", new).err(), Some(Errno::EPERM));
    }

    #[test]
    fn filesystems_have_their_own_identity() {
        let (a, b) = (new_devfs(Arc::default()), new_devfs(Arc::default()));
        assert_ne!(a.fs_id(), b.fs_id());
        assert_eq!(a.fs_id(), a.lookup(b"null").unwrap().fs_id());
        assert_eq!(a.stat().unwrap().dev, a.lookup(b"null").unwrap().stat().unwrap().dev);
        assert_eq!(a.lookup(b"null").unwrap().statfs().unwrap().fs_type, TMPFS_MAGIC);
        assert_eq!(a.statfs().unwrap().fs_type, TMPFS_MAGIC);
    }
}
