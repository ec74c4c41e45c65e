//! Changes to names that every filesystem shares the rules of: renaming,
//! removing and linking. The checks that need only paths, mounts and
//! permissions are made here, once; the filesystems check their own nodes
//! with `vfs::rename` under their locks and make the change.

use super::at::DirFd;
use super::notify;
use super::perm::{self, MAY_EXEC, MAY_WRITE};
use super::walk::{ParentAndName, Walker};
use super::{acl, Dentry, NewNode, S_IFDIR, S_IFMT};
use crate::abi::fcntl::RENAME_EXCHANGE;
use crate::abi::Errno;
use crate::auth::caps::CAP_FOWNER;
use std::sync::Arc;

/// Checks that the walker's credentials may add or remove names in `dir`.
fn may_modify_dir(w: &Walker<'_>, dir: &Dentry) -> Result<(), Errno> {
    perm::mount_writable(dir)?;
    let st = dir.node.stat()?;
    perm::check_node(w.creds, dir.node.as_ref(), &st, MAY_WRITE | MAY_EXEC)
}

/// The sticky bit of a directory's mode.
const S_ISVTX: u32 = 0o1000;

/// In a sticky directory (/tmp) only the owner of a name's node, the
/// directory's owner or a holder of CAP_FOWNER may remove or replace it
/// (Linux's `check_sticky`): EPERM otherwise.
fn check_sticky(w: &Walker<'_>, dir: &Dentry, victim: &Dentry) -> Result<(), Errno> {
    let dst = dir.node.stat()?;
    if dst.mode & S_ISVTX == 0 {
        return Ok(());
    }
    let fsuid = w.creds.fsuid;
    if fsuid == dst.uid || fsuid == victim.node.stat()?.uid || w.creds.capable(CAP_FOWNER) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// Fails with EEXIST if `pn.name` exists in its directory.
fn must_not_exist(pn: &ParentAndName) -> Result<(), Errno> {
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

/// renameat2(2) with checked `flags` (`rename::check_flags`), in Linux's
/// order: both ends on one mount, neither name "." or "..", a trailing
/// slash needs a directory, write permission on both parents, the sticky
/// rule for the source and a replaced target, no mount on the source.
pub(crate) fn rename_at(
    w: &Walker<'_>,
    (old_at, old_path): (DirFd, &[u8]),
    (new_at, new_path): (DirFd, &[u8]),
    flags: u32,
) -> Result<(), Errno> {
    let old = w.parent_at(old_at, old_path)?;
    let new = w.parent_at(new_at, new_path)?;
    if !same_mount(&old.parent, &new.parent) {
        return Err(Errno::EXDEV);
    }
    let dots = |n: &[u8]| n.is_empty() || n == b"." || n == b"..";
    if dots(&old.name) || dots(&new.name) {
        return Err(Errno::EBUSY);
    }
    let src = old.parent.child(&old.name, old.parent.node.lookup(&old.name)?);
    if (old.trailing_slash || new.trailing_slash) && !src.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    may_modify_dir(w, &old.parent)?;
    may_modify_dir(w, &new.parent)?;
    check_sticky(w, &old.parent, &src)?;
    if let Ok(target) = new.parent.node.lookup(&new.name) {
        check_sticky(w, &new.parent, &new.parent.child(&new.name, target))?;
    }
    if w.ns.is_mountpoint(&src) {
        return Err(Errno::EBUSY);
    }
    let subjects = notify::active().then(|| rename_subjects(&src, &new, flags));
    old.parent.node.rename(&old.name, &new.parent.node, &new.name, flags)?;
    if let Some(mut s) = subjects {
        let exchanged = if flags & RENAME_EXCHANGE != 0 { s.target.take() } else { None };
        notify::renamed(old.parent.node.as_ref(), &old.name, new.parent.node.as_ref(), &new.name, &s);
        // An exchange moved the other entry the other way (Linux's second
        // fsnotify_move), replacing nothing.
        if let Some(other) = exchanged {
            let back = notify::RenameSubjects { source: Some(other.key), source_isdir: other.isdir, target: None };
            notify::renamed(new.parent.node.as_ref(), &new.name, old.parent.node.as_ref(), &old.name, &back);
        }
    }
    Ok(())
}

/// The inodes a rename of `src` onto `new` touches, for its events.
fn rename_subjects(src: &Dentry, new: &ParentAndName, flags: u32) -> notify::RenameSubjects {
    let target =
        new.parent.node.lookup(&new.name).ok().and_then(|t| notify::Victim::of(&t, flags & RENAME_EXCHANGE == 0));
    notify::RenameSubjects { source: notify::key_of(src.node.as_ref()), source_isdir: src.is_dir(), target }
}

/// unlinkat(2): removes a non-directory, or with `dir` (rmdir,
/// `AT_REMOVEDIR`) an empty directory that no mount sits on. Linux's
/// order: the name's form, then permission and the sticky rule, then the
/// node's type.
#[cfg(test)]
pub(crate) fn remove_at(w: &Walker<'_>, at: DirFd, path: &[u8], dir: bool) -> Result<(), Errno> {
    remove_at_noting(w, at, path, dir, &|_, _| Ok(()))
}

/// `remove_at`, telling `before_remove` of the name it is about to look
/// up and remove (an attempt the checks then refuse is told too).
pub(crate) fn remove_at_noting(
    w: &Walker<'_>,
    at: DirFd,
    path: &[u8],
    dir: bool,
    before_remove: super::open::BeforeChange<'_>,
) -> Result<(), Errno> {
    let pn = w.parent_at(at, path)?;
    match pn.name.as_slice() {
        b"" => return Err(Errno::EBUSY),
        b"." if dir => return Err(Errno::EINVAL),
        b".." if dir => return Err(Errno::ENOTEMPTY),
        b"." | b".." => return Err(Errno::EISDIR),
        _ => {}
    }
    before_remove(&pn.parent, &pn.name)?;
    let node = pn.parent.node.lookup(&pn.name)?;
    let victim = pn.parent.child(&pn.name, node);
    let is_dir = victim.node.stat()?.mode & S_IFMT == S_IFDIR;
    if !dir && pn.trailing_slash {
        return Err(if is_dir { Errno::EISDIR } else { Errno::ENOTDIR });
    }
    may_modify_dir(w, &pn.parent)?;
    check_sticky(w, &pn.parent, &victim)?;
    if dir && !is_dir {
        return Err(Errno::ENOTDIR);
    }
    if !dir && is_dir {
        return Err(Errno::EISDIR);
    }
    if w.ns.is_mountpoint(&victim) {
        return Err(Errno::EBUSY);
    }
    let watched = notify::active().then(|| notify::Victim::of(&victim.node, true));
    pn.parent.node.unlink(&pn.name, dir)?;
    // Its end is told when nothing holds it: this call lets go first.
    drop(victim);
    if let Some(v) = watched {
        notify::removed(pn.parent.node.as_ref(), &pn.name, v.as_ref(), is_dir);
    }
    Ok(())
}

/// linkat(2) once the source is resolved: a new name, on the same mount,
/// for a non-directory.
pub(crate) fn link_at(w: &Walker<'_>, src: &Arc<Dentry>, at: DirFd, path: &[u8]) -> Result<(), Errno> {
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
    pn.parent.node.link(&pn.name, &src.node)?;
    notify::linked(pn.parent.node.as_ref(), &pn.name, src.node.as_ref());
    Ok(())
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
#[cfg(test)]
pub(crate) fn mkdir_at(w: &Walker<'_>, at: DirFd, path: &[u8], new: NewNode) -> Result<(), Errno> {
    mkdir_masked_at(w, at, path, new, 0)
}

/// mkdirat(2): `new.mode` less `umask`, or what the directory's default
/// ACL gives (`acl::inherit`).
pub(crate) fn mkdir_masked_at(w: &Walker<'_>, at: DirFd, path: &[u8], new: NewNode, umask: u32) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, true)?;
    let inherited = acl::inherit(pn.parent.node.as_ref(), new, umask, true);
    pn.parent.node.mkdir(&pn.name, inherited.new)?;
    inherited.apply(pn.parent.node.lookup(&pn.name)?.as_ref())?;
    notify::created(pn.parent.node.as_ref(), &pn.name, true);
    Ok(())
}

/// mknodat(2) of the node type in `new.mode`.
#[cfg(test)]
pub(crate) fn mknod_at(w: &Walker<'_>, at: DirFd, path: &[u8], new: NewNode, rdev: u64) -> Result<(), Errno> {
    mknod_masked_at(w, at, path, new, rdev, 0)
}

/// mknodat(2): `new.mode` less `umask`, or what the directory's default
/// ACL gives (`acl::inherit`).
pub(crate) fn mknod_masked_at(
    w: &Walker<'_>,
    at: DirFd,
    path: &[u8],
    new: NewNode,
    rdev: u64,
    umask: u32,
) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, false)?;
    let mode = super::perm::strip_sgid(w.creds, &pn.parent.node.stat()?, new.mode);
    let inherited = acl::inherit(pn.parent.node.as_ref(), NewNode { mode, ..new }, umask, false);
    pn.parent.node.mknod(&pn.name, inherited.new, rdev)?;
    inherited.apply(pn.parent.node.lookup(&pn.name)?.as_ref())?;
    notify::created(pn.parent.node.as_ref(), &pn.name, false);
    Ok(())
}

/// symlinkat(2).
pub(crate) fn symlink_at(w: &Walker<'_>, target: &[u8], at: DirFd, path: &[u8], new: NewNode) -> Result<(), Errno> {
    let pn = new_name_at(w, at, path, false)?;
    pn.parent.node.symlink(&pn.name, target, new)?;
    notify::created(pn.parent.node.as_ref(), &pn.name, false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::MountNamespace;

    const DIR: NewNode = NewNode { mode: 0o755, uid: 0, gid: 0 };
    const FILE: NewNode = NewNode { mode: 0o644, uid: 0, gid: 0 };

    /// / with d/ (holding f), a file g, a world-writable w/ and a tmpfs
    /// mounted on m/.
    fn setup() -> MountNamespace {
        let root = Tmpfs::new(0o755, 0, 0);
        root.mkdir(b"d", DIR).unwrap();
        root.lookup(b"d").unwrap().create(b"f", FILE).unwrap();
        root.create(b"g", FILE).unwrap();
        root.mkdir(b"w", NewNode { mode: 0o777, ..DIR }).unwrap();
        root.mkdir(b"m", DIR).unwrap();
        let ns = MountNamespace::new(root, "tmpfs", "root");
        let m = ns.root().node.lookup(b"m").unwrap();
        ns.mount(&ns.root().child(b"m", m), Tmpfs::new(0o755, 0, 0), "tmpfs", "t").unwrap();
        ns
    }

    fn rename(ns: &MountNamespace, creds: &Credentials, old: &str, new: &str) -> Result<(), Errno> {
        let w = Walker { ns, root: ns.root(), creds };
        rename_at(&w, (DirFd::Cwd(ns.root()), old.as_bytes()), (DirFd::Cwd(ns.root()), new.as_bytes()), 0)
    }

    fn remove(ns: &MountNamespace, path: &str, dir: bool) -> Result<(), Errno> {
        let root = Credentials::new(0, 0);
        let w = Walker { ns, root: ns.root(), creds: &root };
        remove_at(&w, DirFd::Cwd(ns.root()), path.as_bytes(), dir)
    }

    #[test]
    fn rename_path_rules() {
        let ns = setup();
        let root = Credentials::new(0, 0);
        assert_eq!(rename(&ns, &root, "/d/.", "/x"), Err(Errno::EBUSY));
        assert_eq!(rename(&ns, &root, "/d", "/w/.."), Err(Errno::EBUSY));
        assert_eq!(rename(&ns, &root, "/g", "/x/"), Err(Errno::ENOTDIR), "a trailing slash needs a directory");
        assert_eq!(rename(&ns, &root, "/g", "/m/g"), Err(Errno::EXDEV), "across mounts");
        assert_eq!(rename(&ns, &root, "/m", "/n"), Err(Errno::EBUSY), "a mount point stays");
        assert_eq!(rename(&ns, &root, "/d", "/g"), Err(Errno::ENOTDIR), "the filesystem's shared check");
        let user = Credentials::new(1000, 1000);
        assert_eq!(rename(&ns, &user, "/g", "/w/g"), Err(Errno::EACCES), "the source's parent is not writable");
        assert_eq!(rename(&ns, &user, "/w", "/d/w"), Err(Errno::EACCES));
        rename(&ns, &root, "/d/", "/e/").unwrap();
        assert!(ns.root().node.lookup(b"e").unwrap().lookup(b"f").is_ok());
    }

    #[test]
    fn remove_rules() {
        let ns = setup();
        assert_eq!(remove(&ns, "/", true), Err(Errno::EBUSY));
        assert_eq!(remove(&ns, "/d/.", true), Err(Errno::EINVAL));
        assert_eq!(remove(&ns, "/d/..", true), Err(Errno::ENOTEMPTY));
        assert_eq!(remove(&ns, "/d/.", false), Err(Errno::EISDIR));
        assert_eq!(remove(&ns, "/g", true), Err(Errno::ENOTDIR));
        assert_eq!(remove(&ns, "/d", false), Err(Errno::EISDIR));
        assert_eq!(remove(&ns, "/g/", false), Err(Errno::ENOTDIR));
        assert_eq!(remove(&ns, "/d", true), Err(Errno::ENOTEMPTY));
        assert_eq!(remove(&ns, "/m", true), Err(Errno::EBUSY), "a mount point stays");
        remove(&ns, "/d/f", false).unwrap();
        remove(&ns, "/d/", true).unwrap();
        assert_eq!(ns.root().node.lookup(b"d").err(), Some(Errno::ENOENT));
    }

    /// /t is sticky and world-writable (as /tmp): a user may remove or
    /// replace only what it owns there, or anything in a directory it owns;
    /// root (CAP_FOWNER) anything.
    #[test]
    fn sticky_directories() {
        let ns = setup();
        let t = ns.root().node.clone();
        t.mkdir(b"t", NewNode { mode: 0o1777, ..DIR }).unwrap();
        let tmp = t.lookup(b"t").unwrap();
        tmp.create(b"roots", FILE).unwrap();
        tmp.create(b"mine", NewNode { uid: 1000, gid: 1000, ..FILE }).unwrap();
        tmp.create(b"other", NewNode { uid: 1001, gid: 1001, ..FILE }).unwrap();
        let user = Credentials::new(1000, 1000);
        let w = Walker { ns: &ns, root: ns.root(), creds: &user };
        let cwd = || DirFd::Cwd(ns.root());
        assert_eq!(remove_at(&w, cwd(), b"/t/roots", false), Err(Errno::EPERM));
        assert_eq!(rename(&ns, &user, "/t/roots", "/t/x"), Err(Errno::EPERM), "moving another's file");
        assert_eq!(rename(&ns, &user, "/t/mine", "/t/other"), Err(Errno::EPERM), "replacing another's file");
        rename(&ns, &user, "/t/mine", "/t/mine2").unwrap();
        remove_at(&w, cwd(), b"/t/mine2", false).unwrap();
        let owner = Credentials::new(1001, 1001);
        let ow = Walker { ns: &ns, root: ns.root(), creds: &owner };
        remove_at(&ow, cwd(), b"/t/other", false).unwrap();
        remove(&ns, "/t/roots", false).unwrap();
    }

    #[test]
    fn link_and_make_rules() {
        let ns = setup();
        let root = Credentials::new(0, 0);
        let w = Walker { ns: &ns, root: ns.root(), creds: &root };
        let cwd = || DirFd::Cwd(ns.root());
        let g = w.resolve(&ns.root(), b"/g", true).unwrap();
        let d = w.resolve(&ns.root(), b"/d", true).unwrap();
        assert_eq!(link_at(&w, &d, cwd(), b"/x"), Err(Errno::EPERM), "no links to directories");
        assert_eq!(link_at(&w, &g, cwd(), b"/x/"), Err(Errno::ENOENT));
        assert_eq!(link_at(&w, &g, cwd(), b"/d/f"), Err(Errno::EEXIST));
        assert_eq!(link_at(&w, &g, cwd(), b"/m/g"), Err(Errno::EXDEV));
        link_at(&w, &g, cwd(), b"/d/g").unwrap();
        assert_eq!(ns.root().node.lookup(b"g").unwrap().stat().unwrap().nlink, 2);
        assert_eq!(mkdir_at(&w, cwd(), b"/d/..", DIR), Err(Errno::EEXIST));
        assert_eq!(mkdir_at(&w, cwd(), b"/g", DIR), Err(Errno::EEXIST));
        assert_eq!(symlink_at(&w, b"g", cwd(), b"/", FILE), Err(Errno::EEXIST));
        let user = Credentials::new(1000, 1000);
        let uw = Walker { ns: &ns, root: ns.root(), creds: &user };
        assert_eq!(mkdir_at(&uw, cwd(), b"/d/x", DIR), Err(Errno::EACCES));
        mkdir_at(&uw, cwd(), b"/w/x", DIR).unwrap();
        symlink_at(&uw, b"x", cwd(), b"/w/l", FILE).unwrap();
        assert!(ns.root().node.lookup(b"w").unwrap().lookup(b"l").is_ok());
    }
}
