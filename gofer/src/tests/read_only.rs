//! A read-only server refuses every change with `EROFS`.

use std::collections::BTreeSet;
use std::io::Read;

use super::{errno, Fixture};
use crate::SetAttr;

#[test]
fn every_mutation_is_erofs() {
    let f = Fixture::with_mode(true);
    std::fs::write(f.host("file"), b"keep").unwrap();
    std::fs::create_dir(f.host("dir")).unwrap();
    let c = f.client();
    let (root, _) = c.attach().unwrap();
    let (file, before) = c.walk(root, b"file").unwrap();
    let (dir, _) = c.walk(root, b"dir").unwrap();

    let erofs = libc::EROFS;
    assert_eq!(errno(c.create(root, b"n", libc::O_RDWR, 0o644, 0, 0)), erofs);
    assert_eq!(errno(c.mkdir(root, b"n", 0o755, 0, 0)), erofs);
    assert_eq!(errno(c.mknod(root, b"n", libc::S_IFIFO | 0o644, 0, 0, 0)), erofs);
    assert_eq!(errno(c.symlink(root, b"n", b"file", 0, 0)), erofs);
    assert_eq!(errno(c.link(file, root, b"n")), erofs);
    assert_eq!(errno(c.tmpfile(root, 0, 0o600, 0, 0)), erofs);
    assert_eq!(errno(c.unlink(root, b"file", 0)), erofs);
    assert_eq!(errno(c.unlink(root, b"dir", libc::AT_REMOVEDIR)), erofs);
    assert_eq!(errno(c.rename(root, b"file", dir, b"n", 0)), erofs);
    assert_eq!(errno(c.fallocate(file, 0, 0, 4096)), erofs);
    for attr in [
        SetAttr { size: Some(0), ..SetAttr::default() },
        SetAttr { mode: Some(0o777), ..SetAttr::default() },
        SetAttr { uid: Some(1), ..SetAttr::default() },
        SetAttr { mtime: Some(crate::SetTime::Now), ..SetAttr::default() },
    ] {
        assert_eq!(errno(c.setattr(file, &attr)), erofs, "{attr:?}");
    }
    for flags in [libc::O_WRONLY, libc::O_RDWR, libc::O_RDONLY | libc::O_TRUNC, libc::O_WRONLY | libc::O_APPEND] {
        assert_eq!(errno(c.open(file, flags)), erofs, "flags {flags:#x}");
    }

    let mut text = String::new();
    std::fs::File::from(c.open(file, libc::O_RDONLY).unwrap()).read_to_string(&mut text).unwrap();
    assert_eq!(text, "keep");
    assert_eq!(c.setattr(file, &SetAttr::default()).unwrap(), c.stat(file).unwrap());
    let after = c.stat(file).unwrap();
    assert_eq!((after.size, after.mode, after.uid), (before.size, before.mode, before.uid));
    let names: BTreeSet<Vec<u8>> = c.getdents(root).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, BTreeSet::from([b"dir".to_vec(), b"file".to_vec()]));
    assert_eq!(std::fs::metadata(f.host("file")).unwrap().len(), 4);
    f.finish().unwrap();
}
