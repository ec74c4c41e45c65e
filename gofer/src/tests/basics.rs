//! Looking things up, reading and listing.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{symlink, MetadataExt};

use super::{errno, spawn_server, Fixture, RawPeer, TempDir};
use crate::protocol::{Reply, Request, Response};

#[test]
fn attach_gives_the_root() {
    let f = Fixture::new();
    let (root, stat) = f.client().attach().unwrap();
    let meta = std::fs::metadata(f.dir.path()).unwrap();
    assert_eq!(stat.mode & libc::S_IFMT, libc::S_IFDIR);
    assert_eq!((stat.dev, stat.ino), (meta.dev(), meta.ino()));
    assert_eq!(f.client().stat(root).unwrap(), stat);
    let (again, _) = f.client().attach().unwrap();
    assert_ne!(again, root, "fids are never reused");
    f.finish().unwrap();
}

#[test]
fn walk_stat_and_open_a_file() {
    let f = Fixture::new();
    std::fs::write(f.host("hello.txt"), b"hello").unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (file, stat) = c.walk(root, b"hello.txt").unwrap();
    assert_eq!(stat.mode & libc::S_IFMT, libc::S_IFREG);
    assert_eq!(stat.size, 5);
    assert_eq!(stat.ino, std::fs::metadata(f.host("hello.txt")).unwrap().ino());

    let mut read = File::from(c.open(file, libc::O_RDONLY).unwrap());
    let mut text = String::new();
    read.read_to_string(&mut text).unwrap();
    assert_eq!(text, "hello");
    let flags = nix::fcntl::fcntl(std::os::fd::AsRawFd::as_raw_fd(&read), nix::fcntl::F_GETFD).unwrap();
    assert_ne!(flags & libc::FD_CLOEXEC, 0, "donated fds are close-on-exec");
    assert!(read.write_all(b"x").is_err(), "read-only fd");

    let mut append = File::from(c.open(file, libc::O_WRONLY | libc::O_APPEND).unwrap());
    append.write_all(b" world").unwrap();
    assert_eq!(std::fs::read(f.host("hello.txt")).unwrap(), b"hello world");

    let mut rw = File::from(c.open(file, libc::O_RDWR | libc::O_TRUNC | libc::O_CREAT).unwrap());
    assert_eq!(c.stat(file).unwrap().size, 0);
    rw.write_all(b"abc").unwrap();
    rw.seek(SeekFrom::Start(0)).unwrap();
    let mut back = Vec::new();
    rw.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"abc");

    assert_eq!(errno(c.open(file, libc::O_ACCMODE)), libc::EINVAL);
    assert_eq!(errno(c.open(root, libc::O_RDONLY)), libc::EINVAL);
    assert_eq!(errno(c.walk(file, b"x")), libc::ENOTDIR);
    assert_eq!(errno(c.walk(root, b"missing")), libc::ENOENT);
    assert_eq!(errno(c.readlink(file)), libc::EINVAL);
    assert_eq!(errno(c.getdents(file)), libc::ENOTDIR);
    f.finish().unwrap();
}

#[test]
fn getdents_lists_a_large_directory_in_pages() {
    let f = Fixture::new();
    let big = f.host("big");
    std::fs::create_dir(&big).unwrap();
    let mut expected = BTreeSet::new();
    for i in 0..1000 {
        let name = format!("{i:04}-{}", "n".repeat(200));
        std::fs::write(big.join(&name), b"").unwrap();
        expected.insert(name.into_bytes());
    }
    std::fs::create_dir(big.join("sub")).unwrap();
    expected.insert(b"sub".to_vec());

    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (dir, _) = c.walk(root, b"big").unwrap();
    let entries = c.getdents(dir).unwrap();
    assert_eq!(entries.len(), expected.len(), "no duplicates, no omissions");
    let names: BTreeSet<Vec<u8>> = entries.iter().map(|e| e.name.clone()).collect();
    assert_eq!(names, expected);
    for entry in &entries {
        let want = if entry.name == b"sub" { libc::DT_DIR } else { libc::DT_REG };
        assert_eq!(entry.kind, want);
        assert_ne!(entry.ino, 0);
    }

    let root_entries = c.getdents(root).unwrap();
    assert_eq!(root_entries.len(), 1);
    assert_eq!(root_entries[0].name, b"big");
    f.finish().unwrap();
}

#[test]
fn getdents_pages_end_with_no_cookie() {
    let dir = super::TempDir::new();
    for i in 0..1000 {
        std::fs::write(dir.path().join(format!("{i}-{}", "p".repeat(150))), b"").unwrap();
    }
    let (sock, server) = spawn_server(dir.path(), false);
    let mut peer = RawPeer::new(sock);
    let Response::Ok(Reply::FidStat { fid, .. }) = peer.call(&Request::Attach).0 else {
        panic!("attach failed");
    };
    let mut cookie = 0;
    let mut pages = 0;
    let mut total = 0;
    loop {
        let req = Request::Getdents { fid, cookie };
        let (Response::Ok(Reply::Dirents { entries, next_cookie }), None) = peer.call(&req) else {
            panic!("getdents failed");
        };
        pages += 1;
        total += entries.len();
        match next_cookie {
            Some(next) => cookie = next,
            None => break,
        }
    }
    assert!(pages > 1, "a 160 KB directory takes more than one page");
    assert_eq!(total, 1000);
    drop(peer);
    server.join().unwrap().unwrap();
}

#[test]
fn symlinks_are_never_followed() {
    let f = Fixture::new();
    symlink("/etc", f.host("etc")).unwrap();
    symlink("../../..", f.host("up")).unwrap();
    std::fs::create_dir(f.host("d")).unwrap();
    symlink("d", f.host("to-d")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    for (name, target) in [("etc", "/etc"), ("up", "../../.."), ("to-d", "d")] {
        let (link, stat) = c.walk(root, name.as_bytes()).unwrap();
        let meta = std::fs::symlink_metadata(f.host(name)).unwrap();
        assert_eq!(stat.mode & libc::S_IFMT, libc::S_IFLNK, "{name}");
        assert_eq!(stat.ino, meta.ino());
        assert_eq!(c.readlink(link).unwrap(), target.as_bytes());
        assert_eq!(errno(c.walk(link, b"passwd")), libc::ENOTDIR);
        assert_eq!(errno(c.walk(link, b"x")), libc::ENOTDIR);
        assert_eq!(errno(c.getdents(link)), libc::ENOTDIR);
        assert_eq!(errno(c.open(link, libc::O_RDONLY)), libc::EINVAL);
    }
    f.finish().unwrap();
}

#[test]
fn names_must_be_single_components() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.host("a/b")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (a, _) = c.walk(root, b"a").unwrap();
    assert_eq!(errno(c.walk(root, b"")), libc::ENOENT);
    for bad in [&b"."[..], b"..", b"a/b", b"/etc", b"a/", b"a\0b"] {
        assert_eq!(errno(c.walk(root, bad)), libc::EINVAL, "{bad:?}");
        assert_eq!(errno(c.walk(a, bad)), libc::EINVAL, "{bad:?}");
        assert_eq!(errno(c.mkdir(root, bad, 0o755, 0, 0)), libc::EINVAL);
        assert_eq!(errno(c.unlink(root, bad, 0)), libc::EINVAL);
    }
    assert_eq!(errno(c.walk(root, &[b'n'; 256])), libc::ENAMETOOLONG);
    assert!(c.walk(a, b"b").is_ok());
    f.finish().unwrap();
}

#[test]
fn unknown_fids_are_ebadf() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    assert_eq!(errno(c.stat(999)), libc::EBADF);
    assert_eq!(errno(c.walk(999, b"x")), libc::EBADF);
    assert_eq!(errno(c.open(999, libc::O_RDONLY)), libc::EBADF);
    assert_eq!(errno(c.getdents(999)), libc::EBADF);
    assert_eq!(errno(c.mkdir(999, b"x", 0o755, 0, 0)), libc::EBADF);
    c.clunk(root);
    assert_eq!(errno(c.stat(root)), libc::EBADF);
    c.clunk(root);
    let (again, _) = c.attach().unwrap();
    assert!(again > root);
    f.finish().unwrap();
}

#[test]
fn statfs_describes_the_file_system() {
    let f = Fixture::new();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let statfs = c.statfs(root).unwrap();
    let host = nix::sys::statfs::statfs(f.dir.path()).unwrap();
    assert_eq!(statfs.namelen, u64::try_from(host.maximum_name_length()).unwrap());
    assert!(statfs.bsize > 0);
    assert_ne!(statfs.fs_type, 0);
    f.finish().unwrap();
}

#[test]
fn a_client_gone_with_replies_unread_ends_the_connection_cleanly() {
    let dir = TempDir::new();
    let (sock, server) = spawn_server(dir.path(), false);
    let peer = RawPeer::new(sock);
    for _ in 0..3 {
        peer.send(&Request::Attach.encode().unwrap());
    }
    // As a sentry exiting while its threads still wait for replies.
    drop(peer);
    assert!(server.join().expect("the server thread must not panic").is_ok());
}
