//! Path resolution: components, "." and "..", mount crossing, symlinks
//! (at most 40 per resolution, as Linux's MAXSYMLINKS), trailing slashes.

use super::dentry::{same, MNT_NOSYMFOLLOW};
use super::perm::{self, MAY_EXEC};
use super::{Dentry, MountNamespace};
use crate::abi::limits::{NAME_MAX, PATH_MAX};
use crate::abi::Errno;
use crate::auth::Credentials;
use std::sync::Arc;

const MAX_SYMLINKS: u32 = 40;

/// Everything resolution needs from the calling task.
pub struct Walker<'a> {
    pub ns: &'a MountNamespace,
    /// The task's root: ".." never climbs above it.
    pub root: Arc<Dentry>,
    pub creds: &'a Credentials,
}

/// The parent directory and final name of a path, for operations that
/// create or remove the final component.
pub(crate) struct ParentAndName {
    pub parent: Arc<Dentry>,
    pub name: Vec<u8>,
    /// The path ended in '/' (the final component must be a directory).
    pub trailing_slash: bool,
}

fn components(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&b| b == b'/').filter(|c| !c.is_empty())
}

impl Walker<'_> {
    /// Resolves `path` from `start` (used when it is relative).
    pub fn resolve(&self, start: &Arc<Dentry>, path: &[u8], follow_last: bool) -> Result<Arc<Dentry>, Errno> {
        let mut links = 0;
        self.resolve_counted(start, path, follow_last, &mut links)
    }

    fn resolve_counted(
        &self,
        start: &Arc<Dentry>,
        path: &[u8],
        follow_last: bool,
        links: &mut u32,
    ) -> Result<Arc<Dentry>, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let trailing_slash = path.ends_with(b"/");
        let mut cur = if path.starts_with(b"/") { self.root.clone() } else { start.clone() };
        let comps: Vec<&[u8]> = components(path).collect();
        for (i, c) in comps.iter().enumerate() {
            let last = i + 1 == comps.len();
            cur = self.step(&cur, c, !last || follow_last || trailing_slash, links)?;
        }
        if trailing_slash && !cur.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        Ok(cur)
    }

    /// Resolves every component but the last.
    pub(crate) fn resolve_parent(&self, start: &Arc<Dentry>, path: &[u8]) -> Result<ParentAndName, Errno> {
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        if path.len() >= PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let trailing_slash = path.ends_with(b"/");
        let comps: Vec<&[u8]> = components(path).collect();
        let mut links = 0;
        let mut cur = if path.starts_with(b"/") { self.root.clone() } else { start.clone() };
        let Some((last, dirs)) = comps.split_last() else {
            // "/" itself: the parent is the root, with no name.
            return Ok(ParentAndName { parent: cur, name: Vec::new(), trailing_slash });
        };
        for c in dirs {
            cur = self.step(&cur, c, true, &mut links)?;
        }
        if !cur.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if last.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        Ok(ParentAndName { parent: cur, name: last.to_vec(), trailing_slash })
    }

    /// Looks up `name` in `dir`, following a symlink if `follow`.
    pub(crate) fn step(
        &self,
        dir: &Arc<Dentry>,
        name: &[u8],
        follow: bool,
        links: &mut u32,
    ) -> Result<Arc<Dentry>, Errno> {
        let st = dir.node.stat()?;
        if st.mode & super::S_IFMT != super::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        perm::check_node(self.creds, dir.node.as_ref(), &st, MAY_EXEC)?;
        match name {
            b"." => return Ok(dir.clone()),
            b".." => return Ok(self.parent_of(dir)),
            _ => {}
        }
        if name.len() > NAME_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        let node = dir.node.lookup(name)?;
        let child = self.ns.crossed(dir.child(name, node));
        if follow && child.is_symlink() {
            // A nosymfollow mount's links are never followed (Linux's
            // pick_link), magic ones included.
            if child.mount.live.has(MNT_NOSYMFOLLOW) {
                return Err(Errno::ELOOP);
            }
            *links += 1;
            if *links > MAX_SYMLINKS {
                return Err(Errno::ELOOP);
            }
            if let Some(target) = child.node.magic_link() {
                return target;
            }
            let target = child.node.readlink()?;
            return self.resolve_counted(dir, &target, true, links);
        }
        Ok(child)
    }

    /// "..": the parent, crossing mounts upwards, never above the root.
    pub(crate) fn parent_of(&self, d: &Arc<Dentry>) -> Arc<Dentry> {
        let mut d = d.clone();
        loop {
            if same(&d, &self.root) {
                return d;
            }
            if let Some(p) = &d.parent {
                return p.clone();
            }
            match &d.mount.mountpoint {
                Some(mp) => d = mp.clone(),
                None => return d,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::NewNode;

    const DIR: NewNode = NewNode { mode: 0o755, uid: 0, gid: 0 };

    /// / with a/b/, a file a/f, links and a tmpfs mounted on /m.
    fn setup() -> MountNamespace {
        let root = Tmpfs::new(0o755, 0, 0);
        root.mkdir(b"a", DIR).unwrap();
        root.mkdir(b"m", DIR).unwrap();
        let a = root.lookup(b"a").unwrap();
        a.mkdir(b"b", DIR).unwrap();
        a.create(b"f", NewNode { mode: 0o644, uid: 0, gid: 0 }).unwrap();
        a.symlink(b"rel", b"b", DIR).unwrap();
        a.symlink(b"abs", b"/a/f", DIR).unwrap();
        a.symlink(b"up", b"../../../../..", DIR).unwrap();
        a.symlink(b"loop", b"loop", DIR).unwrap();
        let ns = MountNamespace::new(root, "tmpfs", "root");
        let other = Tmpfs::new(0o755, 0, 0);
        other.mkdir(b"inner", DIR).unwrap();
        let m = Walker { ns: &ns, root: ns.root(), creds: &ROOT }.resolve(&ns.root(), b"/m", true).unwrap();
        ns.mount(&m, other, "tmpfs", "t").unwrap();
        ns
    }

    static ROOT: std::sync::LazyLock<Credentials> = std::sync::LazyLock::new(|| Credentials::new(0, 0));

    fn path_of(ns: &MountNamespace, p: &[u8], follow: bool) -> Result<Vec<u8>, Errno> {
        let w = Walker { ns, root: ns.root(), creds: &ROOT };
        w.resolve(&ns.root(), p, follow).map(|d| d.path_from(&ns.root()))
    }

    #[test]
    fn dots_and_slashes() {
        let ns = setup();
        assert_eq!(path_of(&ns, b"/a/./b/../f", true).unwrap(), b"/a/f");
        assert_eq!(path_of(&ns, b"/../../a", true).unwrap(), b"/a", "'..' stops at the root");
        assert_eq!(path_of(&ns, b"//a///b//", true).unwrap(), b"/a/b");
        assert_eq!(path_of(&ns, b"/a/f/", true), Err(Errno::ENOTDIR), "trailing slash on a file");
        assert_eq!(path_of(&ns, b"/a/f/x", true), Err(Errno::ENOTDIR));
        assert_eq!(path_of(&ns, b"/a/nope", true), Err(Errno::ENOENT));
        assert_eq!(path_of(&ns, b"", true), Err(Errno::ENOENT));
    }

    #[test]
    fn symlinks() {
        let ns = setup();
        assert_eq!(path_of(&ns, b"/a/rel", true).unwrap(), b"/a/b");
        assert_eq!(path_of(&ns, b"/a/rel", false).unwrap(), b"/a/rel", "the last link is kept");
        assert_eq!(path_of(&ns, b"/a/rel/", false).unwrap(), b"/a/b", "a trailing slash follows it");
        assert_eq!(path_of(&ns, b"/a/abs", true).unwrap(), b"/a/f");
        assert_eq!(path_of(&ns, b"/a/up/a", true).unwrap(), b"/a", "links cannot climb above the root");
        assert_eq!(path_of(&ns, b"/a/loop", true), Err(Errno::ELOOP));
    }

    #[test]
    fn forty_links_resolve_forty_one_do_not() {
        let ns = setup();
        let a = ns.root().node.lookup(b"a").unwrap();
        a.symlink(b"l0", b"f", DIR).unwrap();
        for i in 1..=40 {
            a.symlink(format!("l{i}").as_bytes(), format!("l{}", i - 1).as_bytes(), DIR).unwrap();
        }
        assert_eq!(path_of(&ns, b"/a/l39", true).unwrap(), b"/a/f", "40 links");
        assert_eq!(path_of(&ns, b"/a/l40", true), Err(Errno::ELOOP), "41 links");
    }

    #[test]
    fn mounts_are_crossed_both_ways() {
        let ns = setup();
        assert_eq!(path_of(&ns, b"/m/inner", true).unwrap(), b"/m/inner");
        assert_eq!(path_of(&ns, b"/m/inner/../..", true).unwrap(), b"/");
        assert_eq!(path_of(&ns, b"/m/../a", true).unwrap(), b"/a");
        let w = Walker { ns: &ns, root: ns.root(), creds: &ROOT };
        let m = w.resolve(&ns.root(), b"/m", true).unwrap();
        assert!(m.node.lookup(b"inner").is_ok(), "/m is the mounted filesystem's root");
    }

    #[test]
    fn parent_resolution_and_name_limits() {
        let ns = setup();
        let w = Walker { ns: &ns, root: ns.root(), creds: &ROOT };
        let pn = w.resolve_parent(&ns.root(), b"/a/b/new").unwrap();
        assert_eq!(pn.parent.path_from(&ns.root()), b"/a/b");
        assert_eq!(pn.name, b"new");
        assert!(w.resolve_parent(&ns.root(), b"/a/b/d/").unwrap().trailing_slash);
        let long = vec![b'x'; 256];
        assert_eq!(w.resolve_parent(&ns.root(), &long).err(), Some(Errno::ENAMETOOLONG));
        assert_eq!(w.resolve(&ns.root(), &vec![b'a'; 5000], true).err(), Some(Errno::ENAMETOOLONG));
    }

    #[test]
    fn search_permission_is_checked() {
        let ns = setup();
        let a = ns.root().node.lookup(b"a").unwrap();
        a.setattr(&crate::vfs::SetAttr { mode: Some(0o700), ..Default::default() }).unwrap();
        let user = Credentials::new(1000, 1000);
        let w = Walker { ns: &ns, root: ns.root(), creds: &user };
        assert_eq!(w.resolve(&ns.root(), b"/a/f", true).err(), Some(Errno::EACCES));
    }
}
