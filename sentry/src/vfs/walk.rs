//! Path resolution: components, "." and "..", mount crossing, symlinks
//! (at most 40 per resolution, as Linux's MAXSYMLINKS), trailing slashes.

use super::dentry::same;
use super::perm::{self, MAY_EXEC};
use super::{Dentry, MountNamespace};
use crate::abi::Errno;
use crate::kernel::Credentials;
use std::sync::Arc;

/// The longest path accepted (PATH_MAX, including the NUL).
pub const PATH_MAX: usize = 4096;
/// The longest single name.
pub const NAME_MAX: usize = 255;
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
pub struct ParentAndName {
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
    pub fn resolve_parent(&self, start: &Arc<Dentry>, path: &[u8]) -> Result<ParentAndName, Errno> {
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
    pub fn step(&self, dir: &Arc<Dentry>, name: &[u8], follow: bool, links: &mut u32) -> Result<Arc<Dentry>, Errno> {
        let st = dir.node.stat()?;
        if st.mode & super::S_IFMT != super::S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        perm::check(self.creds, &st, MAY_EXEC)?;
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
    pub fn parent_of(&self, d: &Arc<Dentry>) -> Arc<Dentry> {
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
