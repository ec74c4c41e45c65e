//! The rules of rename(2) and of removing a name, as Linux's `vfs_rename`
//! and `may_delete` apply them, shared by every filesystem: each checks
//! its own nodes with these functions under its own locks (so the check
//! and the move are one step) and then only moves.

use crate::abi::Errno;

/// The renameat2 flags a rename may carry.
pub(crate) use crate::abi::fcntl::{RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT};

/// Checks renameat2 flags as Linux does before any lookup: no unknown
/// bits, `RENAME_EXCHANGE` alone. `RENAME_WHITEOUT` (only overlayfs's
/// own use in Linux) is refused too.
pub(crate) fn check_flags(flags: u32) -> Result<(), Errno> {
    let known = RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT;
    let exclusive = RENAME_NOREPLACE | RENAME_WHITEOUT;
    if flags & !known != 0 || (flags & exclusive != 0 && flags & RENAME_EXCHANGE != 0) {
        return Err(Errno::EINVAL);
    }
    if flags & RENAME_WHITEOUT != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// What the shared checks need to know of a filesystem's nodes.
pub(crate) trait RenameNode {
    fn is_dir(&self) -> bool;
    /// Whether this directory has no entries but "." and "..".
    fn is_empty_dir(&self) -> Result<bool, Errno>;
    /// Whether `self` is `other` or one of its ancestors.
    fn is_ancestor_of(&self, other: &Self) -> bool;
    /// Whether two names are the same file (a rename onto another link of
    /// the source does nothing).
    fn same_file(&self, other: &Self) -> Result<bool, Errno>;
    /// Whether the filesystem can move this node at all (overlayfs cannot
    /// move a directory with lower contents: `EXDEV`, so `mv` copies).
    fn movable(&self) -> bool {
        true
    }
}

/// The nodes of one rename: the source and its directory, the target
/// directory and what the target name holds now.
pub(crate) struct Rename<'a, N> {
    pub src_dir: &'a N,
    pub src: &'a N,
    pub dst_dir: &'a N,
    pub dst: Option<&'a N>,
    pub flags: u32,
}

/// Whether the rename moves anything: `Ok(false)` when source and target
/// are already the same file.
pub(crate) fn check_rename<N: RenameNode>(r: &Rename<'_, N>) -> Result<bool, Errno> {
    let exchange = r.flags & RENAME_EXCHANGE != 0;
    if r.flags & RENAME_NOREPLACE != 0 && r.dst.is_some() {
        return Err(Errno::EEXIST);
    }
    if exchange && r.dst.is_none() {
        return Err(Errno::ENOENT);
    }
    if !std::ptr::eq(r.src_dir, r.dst_dir) {
        if r.src.is_ancestor_of(r.dst_dir) {
            return Err(Errno::EINVAL);
        }
        if r.dst.is_some_and(|d| d.is_ancestor_of(r.src_dir)) {
            return Err(if exchange { Errno::EINVAL } else { Errno::ENOTEMPTY });
        }
    }
    let Some(dst) = r.dst else {
        return movable(r.src).map(|()| true);
    };
    if r.src.same_file(dst)? {
        return Ok(false);
    }
    if !exchange {
        match (r.src.is_dir(), dst.is_dir()) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            _ => {}
        }
    }
    movable(r.src)?;
    if exchange {
        movable(dst)?;
    } else if dst.is_dir() && !dst.is_empty_dir()? {
        return Err(Errno::ENOTEMPTY);
    }
    Ok(true)
}

fn movable<N: RenameNode>(n: &N) -> Result<(), Errno> {
    if n.movable() {
        Ok(())
    } else {
        Err(Errno::EXDEV)
    }
}

/// Whether `child` may be removed by unlink (`dir == false`) or rmdir.
pub(crate) fn check_remove<N: RenameNode>(child: &N, dir: bool) -> Result<(), Errno> {
    match (dir, child.is_dir()) {
        (false, true) => Err(Errno::EISDIR),
        (true, false) => Err(Errno::ENOTDIR),
        (true, true) if !child.is_empty_dir()? => Err(Errno::ENOTEMPTY),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node known by its path.
    struct Fake {
        path: &'static str,
        dir: bool,
        entries: usize,
        movable: bool,
    }

    fn dir(path: &'static str, entries: usize) -> Fake {
        Fake { path, dir: true, entries, movable: true }
    }

    fn file(path: &'static str) -> Fake {
        Fake { path, dir: false, entries: 0, movable: true }
    }

    impl RenameNode for Fake {
        fn is_dir(&self) -> bool {
            self.dir
        }

        fn is_empty_dir(&self) -> Result<bool, Errno> {
            Ok(self.entries == 0)
        }

        fn is_ancestor_of(&self, other: &Fake) -> bool {
            other.path == self.path || other.path.starts_with(&format!("{}/", self.path))
        }

        fn same_file(&self, other: &Fake) -> Result<bool, Errno> {
            Ok(self.path == other.path)
        }

        fn movable(&self) -> bool {
            self.movable
        }
    }

    fn check(src: &Fake, dst_dir: &Fake, dst: Option<&Fake>, flags: u32) -> Result<bool, Errno> {
        let root = dir("", 3);
        check_rename(&Rename { src_dir: &root, src, dst_dir, dst, flags })
    }

    #[test]
    fn flags() {
        assert_eq!(check_flags(0), Ok(()));
        assert_eq!(check_flags(RENAME_NOREPLACE), Ok(()));
        assert_eq!(check_flags(RENAME_EXCHANGE), Ok(()));
        assert_eq!(check_flags(RENAME_EXCHANGE | RENAME_NOREPLACE), Err(Errno::EINVAL));
        assert_eq!(check_flags(RENAME_WHITEOUT), Err(Errno::EINVAL), "not supported");
        assert_eq!(check_flags(8), Err(Errno::EINVAL));
    }

    #[test]
    fn types_and_emptiness() {
        let (root, d, e, full, f, g) =
            (dir("", 3), dir("/d", 0), dir("/e", 0), dir("/full", 1), file("/f"), file("/g"));
        assert_eq!(check(&f, &root, Some(&g), 0), Ok(true));
        assert_eq!(check(&f, &root, None, 0), Ok(true));
        assert_eq!(check(&d, &root, Some(&f), 0), Err(Errno::ENOTDIR));
        assert_eq!(check(&f, &root, Some(&d), 0), Err(Errno::EISDIR));
        assert_eq!(check(&d, &root, Some(&full), 0), Err(Errno::ENOTEMPTY));
        assert_eq!(check(&d, &root, Some(&e), 0), Ok(true));
        assert_eq!(check(&f, &root, Some(&f), 0), Ok(false), "onto itself: nothing to do");
        assert_eq!(check(&f, &root, Some(&g), RENAME_NOREPLACE), Err(Errno::EEXIST));
        assert_eq!(check(&f, &root, Some(&f), RENAME_NOREPLACE), Err(Errno::EEXIST), "before same-file");
        assert_eq!(check(&f, &root, None, RENAME_EXCHANGE), Err(Errno::ENOENT));
        assert_eq!(check(&f, &root, Some(&full), RENAME_EXCHANGE), Ok(true), "exchange ignores types");
    }

    #[test]
    fn subtrees() {
        let (d, sub, z) = (dir("/d", 1), dir("/d/sub", 1), dir("/d/sub/z", 0));
        assert_eq!(check(&d, &sub, None, 0), Err(Errno::EINVAL), "into its own subtree");
        let r = Rename { src_dir: &sub, src: &z, dst_dir: &dir("", 3), dst: Some(&d), flags: 0 };
        assert_eq!(check_rename(&r), Err(Errno::ENOTEMPTY), "over an ancestor of the source");
        let r = Rename { flags: RENAME_EXCHANGE, ..r };
        assert_eq!(check_rename(&r), Err(Errno::EINVAL));
    }

    #[test]
    fn unmovable_nodes_come_after_types_and_before_emptiness() {
        let root = dir("", 3);
        let stuck = Fake { movable: false, ..dir("/stuck", 0) };
        assert_eq!(check(&stuck, &root, None, 0), Err(Errno::EXDEV));
        assert_eq!(check(&stuck, &root, Some(&file("/f")), 0), Err(Errno::ENOTDIR));
        assert_eq!(check(&stuck, &root, Some(&dir("/full", 1)), 0), Err(Errno::EXDEV));
        assert_eq!(check(&file("/f"), &root, Some(&stuck), RENAME_EXCHANGE), Err(Errno::EXDEV));
    }

    #[test]
    fn removal() {
        assert_eq!(check_remove(&file("/f"), false), Ok(()));
        assert_eq!(check_remove(&file("/f"), true), Err(Errno::ENOTDIR));
        assert_eq!(check_remove(&dir("/d", 0), false), Err(Errno::EISDIR));
        assert_eq!(check_remove(&dir("/d", 0), true), Ok(()));
        assert_eq!(check_remove(&dir("/d", 2), true), Err(Errno::ENOTEMPTY));
    }
}
