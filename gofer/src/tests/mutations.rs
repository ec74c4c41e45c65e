//! Operations that change the file system.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};

use super::{errno, Fixture};
use crate::{SetAttr, SetTime, TimeSpec};

#[test]
fn create_makes_an_exact_new_file() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (fid, stat, fd) = c.create(root, b"new", libc::O_RDWR | libc::O_TRUNC, 0o666, 1234, 5678).unwrap();
    assert_eq!(stat.mode, libc::S_IFREG | 0o666, "the umask does not apply");
    assert_eq!((stat.uid, stat.gid), (1234, 5678));
    let mut file = File::from(fd);
    file.write_all(b"data").unwrap();
    assert_eq!(std::fs::read(f.host("new")).unwrap(), b"data");
    assert_eq!(c.stat(fid).unwrap().size, 4);
    assert_eq!(errno(c.create(root, b"new", libc::O_RDWR, 0o644, 0, 0)), libc::EEXIST);
    assert_eq!(errno(c.create(root, b"bad", libc::O_ACCMODE, 0o644, 0, 0)), libc::EINVAL);

    let (_, _, ro) = c.create(root, b"ro", libc::O_RDONLY, 0o4755, 0, 0).unwrap();
    assert!(File::from(ro).write_all(b"x").is_err());
    let meta = std::fs::metadata(f.host("ro")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o4755);
    f.finish().unwrap();
}

#[test]
fn create_does_not_follow_a_dangling_symlink() {
    let f = Fixture::new();
    let outside = super::TempDir::new();
    let victim = outside.path().join("victim");
    std::os::unix::fs::symlink(&victim, f.host("trap")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    assert_eq!(errno(c.create(root, b"trap", libc::O_WRONLY, 0o644, 0, 0)), libc::EEXIST);
    assert!(!victim.exists());
    f.finish().unwrap();
}

#[test]
fn mkdir_and_unlink() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (dir, stat) = c.mkdir(root, b"d", 0o1777, 42, 43).unwrap();
    assert_eq!(stat.mode, libc::S_IFDIR | 0o1777);
    assert_eq!((stat.uid, stat.gid), (42, 43));
    assert_eq!(errno(c.mkdir(root, b"d", 0o755, 0, 0)), libc::EEXIST);
    let (_, _, _) = c.create(dir, b"f", libc::O_WRONLY, 0o600, 0, 0).unwrap();
    assert_eq!(c.getdents(dir).unwrap().len(), 1);

    assert_eq!(errno(c.unlink(root, b"d", 0)), libc::EISDIR);
    assert_eq!(errno(c.unlink(root, b"d", libc::AT_REMOVEDIR)), libc::ENOTEMPTY);
    assert_eq!(errno(c.unlink(dir, b"f", libc::AT_REMOVEDIR)), libc::ENOTDIR);
    assert_eq!(errno(c.unlink(dir, b"f", 0x4000)), libc::EINVAL);
    c.unlink(dir, b"f", 0).unwrap();
    c.unlink(root, b"d", libc::AT_REMOVEDIR).unwrap();
    assert!(!f.host("d").exists());
    assert_eq!(errno(c.unlink(root, b"d", 0)), libc::ENOENT);
    f.finish().unwrap();
}

#[test]
fn rename_moves_exchanges_and_refuses_whiteouts() {
    let f = Fixture::new();
    std::fs::create_dir(f.host("sub")).unwrap();
    std::fs::write(f.host("a"), b"A").unwrap();
    std::fs::write(f.host("b"), b"B").unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (sub, _) = c.walk(root, b"sub").unwrap();

    assert_eq!(errno(c.rename(root, b"a", root, b"b", libc::RENAME_NOREPLACE)), libc::EEXIST);
    c.rename(root, b"a", root, b"b", libc::RENAME_EXCHANGE).unwrap();
    assert_eq!(std::fs::read(f.host("a")).unwrap(), b"B");
    assert_eq!(std::fs::read(f.host("b")).unwrap(), b"A");
    c.rename(root, b"a", sub, b"moved", 0).unwrap();
    assert_eq!(std::fs::read(f.host("sub/moved")).unwrap(), b"B");
    assert_eq!(errno(c.rename(root, b"b", root, b"c", libc::RENAME_WHITEOUT)), libc::EINVAL);
    assert_eq!(errno(c.rename(root, b"b", root, b"c", 1 << 20)), libc::EINVAL);
    assert_eq!(errno(c.rename(root, b"b", sub, b"..", 0)), libc::EINVAL);
    f.finish().unwrap();
}

#[test]
fn setattr_truncates_chmods_chowns_and_sets_times() {
    let f = Fixture::new();
    std::fs::write(f.host("file"), b"0123456789").unwrap();
    std::fs::create_dir(f.host("dir")).unwrap();
    std::os::unix::fs::symlink("file", f.host("link")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (file, _) = c.walk(root, b"file").unwrap();
    let (dir, _) = c.walk(root, b"dir").unwrap();
    let (link, _) = c.walk(root, b"link").unwrap();

    let stat = c
        .setattr(
            file,
            &SetAttr {
                size: Some(3),
                mode: Some(0o600),
                uid: Some(7),
                gid: Some(8),
                atime: Some(SetTime::At(TimeSpec { sec: 1000, nsec: 5 })),
                mtime: Some(SetTime::At(TimeSpec { sec: 2000, nsec: 6 })),
            },
        )
        .unwrap();
    assert_eq!(stat.size, 3);
    assert_eq!(stat.mode, libc::S_IFREG | 0o600);
    assert_eq!((stat.uid, stat.gid), (7, 8));
    assert_eq!(stat.atime, TimeSpec { sec: 1000, nsec: 5 });
    assert_eq!(stat.mtime, TimeSpec { sec: 2000, nsec: 6 });
    assert_eq!(std::fs::read(f.host("file")).unwrap(), b"012");

    let before = c.stat(file).unwrap();
    let now = c.setattr(file, &SetAttr { mtime: Some(SetTime::Now), ..SetAttr::default() }).unwrap();
    assert!(now.mtime.sec > 2000);
    assert_eq!(now.atime, before.atime, "an unset time is left alone");
    assert_eq!(c.setattr(file, &SetAttr::default()).unwrap(), c.stat(file).unwrap());

    let size = SetAttr { size: Some(0), ..SetAttr::default() };
    assert_eq!(errno(c.setattr(dir, &size)), libc::EISDIR);
    assert_eq!(errno(c.setattr(link, &size)), libc::EINVAL);
    let mode = SetAttr { mode: Some(0o777), ..SetAttr::default() };
    assert_eq!(errno(c.setattr(link, &mode)), libc::EOPNOTSUPP);
    assert_eq!(c.setattr(dir, &mode).unwrap().mode, libc::S_IFDIR | 0o777);

    let owner = SetAttr { uid: Some(99), ..SetAttr::default() };
    let link_stat = c.setattr(link, &owner).unwrap();
    assert_eq!(link_stat.uid, 99);
    assert_eq!(std::fs::symlink_metadata(f.host("link")).unwrap().uid(), 99);
    assert_eq!(std::fs::metadata(f.host("file")).unwrap().uid(), 7, "target untouched");
    f.finish().unwrap();
}

#[test]
fn link_makes_hard_links() {
    let f = Fixture::new();
    std::fs::write(f.host("file"), b"x").unwrap();
    std::fs::create_dir(f.host("dir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", f.host("sym")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (file, before) = c.walk(root, b"file").unwrap();
    let (dir, _) = c.walk(root, b"dir").unwrap();
    let (sym, _) = c.walk(root, b"sym").unwrap();

    let after = c.link(file, dir, b"hard").unwrap();
    assert_eq!(after.nlink, before.nlink + 1);
    assert_eq!(std::fs::metadata(f.host("dir/hard")).unwrap().ino(), before.ino);
    assert_eq!(errno(c.link(file, dir, b"hard")), libc::EEXIST);
    assert_eq!(errno(c.link(dir, root, b"dir2")), libc::EPERM);

    c.link(sym, root, b"sym2").unwrap();
    let meta = std::fs::symlink_metadata(f.host("sym2")).unwrap();
    assert!(meta.file_type().is_symlink(), "links the symlink, not its target");
    assert_eq!(meta.ino(), std::fs::symlink_metadata(f.host("sym")).unwrap().ino());
    f.finish().unwrap();
}

/// An `O_TMPFILE` file: no name until linked, owned and moded as asked;
/// one made with `O_EXCL` can never be linked.
#[test]
fn tmpfile_makes_a_file_without_a_name() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (tmp, stat) = c.tmpfile(root, 0, 0o640, 1234, 5678).unwrap();
    assert_eq!((stat.mode, stat.nlink, stat.uid, stat.gid), (libc::S_IFREG | 0o640, 0, 1234, 5678));
    assert_eq!(c.getdents(root).unwrap().len(), 0, "nothing shows in the directory");
    File::from(c.open(tmp, libc::O_WRONLY).unwrap()).write_all(b"made").unwrap();
    assert_eq!(c.link(tmp, root, b"named").unwrap().nlink, 1);
    assert_eq!(std::fs::read(f.host("named")).unwrap(), b"made");

    let (never, _) = c.tmpfile(root, libc::O_EXCL, 0o600, 0, 0).unwrap();
    assert_eq!(errno(c.link(never, root, b"never")), libc::ENOENT);
    assert!(!f.host("never").exists());
    assert_eq!(errno(c.tmpfile(root, libc::O_APPEND, 0o600, 0, 0)), libc::EINVAL);
    assert_eq!(errno(c.tmpfile(tmp, 0, 0o600, 0, 0)), libc::ENOTDIR);
    f.finish().unwrap();
}

#[test]
fn mknod_makes_fifos_sockets_and_files_but_no_devices() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (fifo, stat) = c.mknod(root, b"fifo", libc::S_IFIFO | 0o620, 0, 3, 4).unwrap();
    assert_eq!(stat.mode, libc::S_IFIFO | 0o620);
    assert_eq!((stat.uid, stat.gid), (3, 4));
    assert!(std::fs::metadata(f.host("fifo")).unwrap().file_type().is_fifo());
    assert_eq!(errno(c.open(fifo, libc::O_RDONLY)), libc::EINVAL);

    let (_, sock) = c.mknod(root, b"sock", libc::S_IFSOCK | 0o600, 0, 0, 0).unwrap();
    assert_eq!(sock.mode & libc::S_IFMT, libc::S_IFSOCK);
    let (reg, plain) = c.mknod(root, b"plain", 0o640, 0, 0, 0).unwrap();
    assert_eq!(plain.mode, libc::S_IFREG | 0o640);
    let mut text = String::new();
    File::from(c.open(reg, libc::O_RDONLY).unwrap()).read_to_string(&mut text).unwrap();
    assert!(text.is_empty());

    let null = nix::sys::stat::makedev(1, 3);
    assert_eq!(errno(c.mknod(root, b"null", libc::S_IFCHR | 0o666, null, 0, 0)), libc::EPERM);
    assert_eq!(errno(c.mknod(root, b"blk", libc::S_IFBLK | 0o666, null, 0, 0)), libc::EPERM);
    assert_eq!(errno(c.mknod(root, b"d", libc::S_IFDIR | 0o755, 0, 0, 0)), libc::EINVAL);
    assert!(!f.host("null").exists());
    f.finish().unwrap();
}

#[test]
fn symlink_stores_the_target_verbatim() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (link, stat) = c.symlink(root, b"l", b"../../etc/shadow", 5, 6).unwrap();
    assert_eq!(stat.mode & libc::S_IFMT, libc::S_IFLNK);
    assert_eq!((stat.uid, stat.gid), (5, 6));
    assert_eq!(c.readlink(link).unwrap(), b"../../etc/shadow");
    assert_eq!(std::fs::read_link(f.host("l")).unwrap().as_os_str(), "../../etc/shadow");
    assert_eq!(errno(c.symlink(root, b"l", b"x", 0, 0)), libc::EEXIST);
    assert_eq!(errno(c.symlink(root, b"e", b"", 0, 0)), libc::ENOENT);
    assert_eq!(errno(c.symlink(root, b"n", b"a\0b", 0, 0)), libc::EINVAL);
    f.finish().unwrap();
}

#[test]
fn fallocate_allocates_punches_and_zeroes_in_the_allowed_modes_only() {
    let f = Fixture::new();
    std::fs::write(f.host("file"), vec![b'x'; 3 * 4096]).unwrap();
    std::fs::create_dir(f.host("dir")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (file, _) = c.walk(root, b"file").unwrap();
    let (dir, _) = c.walk(root, b"dir").unwrap();
    let (keep, punch) = (libc::FALLOC_FL_KEEP_SIZE, libc::FALLOC_FL_PUNCH_HOLE);
    c.fallocate(file, punch | keep, 4096, 4096).unwrap();
    let data = std::fs::read(f.host("file")).unwrap();
    assert_eq!(data.len(), 3 * 4096);
    assert!(data[4096..8192].iter().all(|&b| b == 0) && data[..4096].iter().all(|&b| b == b'x'));
    c.fallocate(file, 0, 0, 5 * 4096).unwrap();
    assert_eq!(std::fs::metadata(f.host("file")).unwrap().len(), 5 * 4096);
    c.fallocate(file, libc::FALLOC_FL_ZERO_RANGE | keep, 0, 10).unwrap();
    assert_eq!(std::fs::read(f.host("file")).unwrap()[..11], *b"\0\0\0\0\0\0\0\0\0\0x");
    // Modes outside the protocol's never reach the host (its seccomp
    // filter would kill the gofer).
    for mode in [punch, libc::FALLOC_FL_COLLAPSE_RANGE, libc::FALLOC_FL_INSERT_RANGE, 0x100, -1] {
        assert_eq!(errno(c.fallocate(file, mode, 0, 4096)), libc::EOPNOTSUPP, "mode {mode:#x}");
    }
    assert_eq!(errno(c.fallocate(dir, 0, 0, 10)), libc::ENODEV);
    assert_eq!(errno(c.fallocate(file, 0, u64::MAX, 10)), libc::EINVAL);
}
