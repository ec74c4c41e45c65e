//! Changes to names that every filesystem shares the rules of: renaming,
//! removing and linking. The checks that need only paths, mounts and
//! permissions are made here, once; the filesystems check their own nodes
//! with `vfs::rename` under their locks and make the change.

use super::at::DirFd;
use super::perm::{self, MAY_EXEC, MAY_WRITE};
use super::walk::{ParentAndName, Walker};
use super::{Dentry, NewNode, S_IFDIR, S_IFMT};
use crate::abi::Errno;
use std::sync::Arc;

/// Checks that the walker's credentials may add or remove names in `dir`.
pub fn may_modify_dir(w: &Walker<'_>, dir: &Dentry) -> Result<(), Errno> {
    let st = dir.node.stat()?;
    perm::check(w.creds, &st, MAY_WRITE | MAY_EXEC)
}

/// Fails with EEXIST if `pn.name` exists in its directory.
pub fn must_not_exist(pn: &ParentAndName) -> Result<(), Errno> {
    match pn.parent.node.lookup(&pn.name) {
        Ok(_) => Err(Errno::EEXIST),
        Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether two dentries are on one mount of one filesystem (else a link or
/// rename between them fails with `EXDEV`).
fn same_mount(a: &Dentry, b: &Dentry) -> bool {
    a.node.fs_id() == b.node.fs_id() && a.mount.id == b.mount.id
}

/// renameat2(2) with checked `flags` (`rename::check_flags`): neither name
/// may be "." or "..", a trailing slash needs a directory, both ends on one
/// mount, write permission on both parents, no mount on the source.
pub fn rename_at(
    w: &Walker<'_>,
    (old_at, old_path): (DirFd, &[u8]),
    (new_at, new_path): (DirFd, &[u8]),
    flags: u32,
) -> Result<(), Errno> {
    let old = w.parent_at(old_at, old_path)?;
    let new = w.parent_at(new_at, new_path)?;
    let dots = |n: &[u8]| n.is_empty() || n == b"." || n == b"..";
    if dots(&old.name) || dots(&new.name) {
        return Err(Errno::EBUSY);
    }
    let src = old.parent.child(&old.name, old.parent.node.lookup(&old.name)?);
    if (old.trailing_slash || new.trailing_slash) && !src.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    if !same_mount(&old.parent, &new.parent) {
        return Err(Errno::EXDEV);
    }
    may_modify_dir(w, &old.parent)?;
    may_modify_dir(w, &new.parent)?;
    if w.ns.is_mountpoint(&src) {
        return Err(Errno::EBUSY);
    }
    old.parent.node.rename(&old.name, &new.parent.node, &new.name, flags)
}

/// unlinkat(2): removes a non-directory, or with `dir` (rmdir,
/// `AT_REMOVEDIR`) an empty directory that no mount sits on.
pub fn remove_at(w: &Walker<'_>, at: DirFd, path: &[u8], dir: bool) -> Result<(), Errno> {
    let pn = w.parent_at(at, path)?;
    match pn.name.as_slice() {
        b"" => return Err(Errno::EBUSY),
        b"." if dir => return Err(Errno::EINVAL),
        b".." if dir => return Err(Errno::ENOTEMPTY),
        b"." | b".." => return Err(Errno::EISDIR),
        _ => {}
    }
    let node = pn.parent.node.lookup(&pn.name)?;
    let victim = pn.parent.child(&pn.name, node);
    let is_dir = victim.node.stat()?.mode & S_IFMT == S_IFDIR;
    if dir && !is_dir {
        return Err(Errno::ENOTDIR);
    }
    if !dir && is_dir {
        return Err(Errno::EISDIR);
    }
    if !dir && pn.trailing_slash {
        return Err(Errno::ENOTDIR);
    }
    may_modify_dir(w, &pn.parent)?;
    if w.ns.is_mountpoint(&victim) {
        return Err(Errno::EBUSY);
    }
    pn.parent.node.unlink(&pn.name, dir)
}

/// linkat(2) once the source is resolved: a new name, on the same mount,
/// for a non-directory.
pub fn link_at(w: &Walker<'_>, src: &Arc<Dentry>, at: DirFd, path: &[u8]) -> Result<(), Errno> {
    let pn = w.parent_at(at, path)?;
    if pn.name.is_empty() {
        return Err(Errno::EEXIST);
    }
    if src.is_dir() {
        return Err(Errno::EPERM);
    }
    if pn.trailing_slash {
        return Err(Errno::ENOENT);
    }
    must_not_exist(&pn)?;
    if !same_mount(src, &pn.parent) {
        return Err(Errno::EXDEV);
    }
    may_modify_dir(w, &pn.parent)?;
    pn.parent.node.link(&pn.name, &src.node)
}

/// The parent of a name about to be made: the name must not exist ("."
/// and ".." always do; so does "/", whose name is empty) and the parent
/// must be writable.
fn new_name_at(w: &Walker<'_>, at: DirFd, path: &[u8], dots: bool) -> Result<ParentAndName, Errno> {
    let pn = w.parent_at(at, path)?;
    if pn.name.is_empty() || (dots && (pn.name == b"." || pn.name == b"..")) {
        return Err(Errno::EEXIST);
    }
    must_not_exist(&pn)?;
    may_modify_dir(w, &pn.parent)?;
    Ok(pn)
}

/// mkdirat(2).
pub fn mkdir_at(w: &Walker<'_>, at: DirFd, path: &[u8], new: NewNode) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, true)?;
    pn.parent.node.mkdir(&pn.name, new)
}

/// mknodat(2) of the node type in `new.mode`.
pub fn mknod_at(w: &Walker<'_>, at: DirFd, path: &[u8], new: NewNode, rdev: u64) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, false)?;
    pn.parent.node.mknod(&pn.name, new, rdev)
}

/// symlinkat(2).
pub fn symlink_at(w: &Walker<'_>, target: &[u8], at: DirFd, path: &[u8], new: NewNode) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, false)?;
    pn.parent.node.symlink(&pn.name, target, new)
}
