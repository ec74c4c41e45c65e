//! What `mount(2)`, `umount2(2)` and `unshare(CLONE_NEWNS)` do to a mount
//! namespace. A mount never changes in place: a remount or a move puts a
//! new `Mount` with the same id where the old one was, so a copied
//! namespace (which has mounts of its own) is never changed through
//! another.

use super::dentry::{Mount, MountFlags, MountNamespace, MountOpts, MountTable};
use super::{Dentry, Node, S_IFDIR, S_IFMT};
use crate::abi::Errno;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What may change about a mount without unmounting it.
pub struct Change {
    pub root: Arc<dyn Node>,
    /// Its `MNT_*` flags from now on (`opts.flags` too).
    pub opts: MountOpts,
}

/// `d` in mount `m` instead of its own (the same path in the same
/// filesystem): the dentries of a copied namespace's mounts.
fn rebased(d: &Arc<Dentry>, m: &Arc<Mount>) -> Arc<Dentry> {
    match &d.parent {
        None => Dentry::mount_root(m),
        Some(p) => Dentry::new(m.clone(), Some(rebased(p, m)), d.name.clone(), d.node.clone()),
    }
}

impl MountNamespace {
    /// The mount with id `id` in this namespace.
    pub fn by_id(&self, id: u64) -> Option<Arc<Mount>> {
        let root = self.root.read().clone();
        if root.id == id {
            return Some(root);
        }
        self.mounts.read().values().find(|m| m.id == id).cloned()
    }

    /// Whether `d` is the root of one of this namespace's mounts.
    pub fn is_mount_root(&self, d: &Dentry) -> bool {
        d.parent.is_none() && self.by_id(d.mount.id).is_some()
    }

    /// A new peer group id (for MS_SHARED).
    pub fn new_peer_group(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A copy for a process that leaves the namespace
    /// (`unshare(CLONE_NEWNS)`): the same mounts at the same places, as
    /// mounts of its own.
    pub fn copy(&self) -> MountNamespace {
        let old: Vec<Arc<Mount>> = self.all();
        let by_id: HashMap<u64, Arc<Mount>> = old.iter().map(|m| (m.id, m.clone())).collect();
        let mut new: HashMap<u64, Arc<Mount>> = HashMap::new();
        for m in &old {
            copy_mount(m, &by_id, &mut new);
        }
        let root = new.get(&self.root.read().id).cloned().unwrap_or_else(|| self.root.read().clone());
        let mut table = HashMap::new();
        for m in new.values() {
            if let Some(mp) = &m.mountpoint {
                table.insert((mp.mount.id, mp.path_in_mount()), m.clone());
            }
        }
        MountNamespace {
            root: RwLock::new(root),
            mounts: RwLock::new(table),
            next_id: self.next_id.clone(),
            ino: super::nsid::alloc(),
        }
    }

    /// `d` as a dentry of this namespace's mount of the same id (a working
    /// directory or root carried into a copied namespace); `d` itself if
    /// the namespace has no such mount.
    pub fn rebase(&self, d: &Arc<Dentry>) -> Arc<Dentry> {
        match self.by_id(d.mount.id) {
            Some(m) if !Arc::ptr_eq(&m, &d.mount) => rebased(d, &m),
            _ => d.clone(),
        }
    }

    /// The mounts below mount `id` (its children, theirs …), parents first.
    pub fn descendants(&self, id: u64) -> Vec<Arc<Mount>> {
        let all = self.all();
        let mut out: Vec<Arc<Mount>> = Vec::new();
        let mut parents = vec![id];
        while let Some(p) = parents.pop() {
            for m in &all {
                if m.mountpoint.as_ref().is_some_and(|mp| mp.mount.id == p) {
                    parents.push(m.id);
                    out.push(m.clone());
                }
            }
        }
        out
    }

    /// Replaces mount `old` by one with the same id and place and what
    /// `change` says; its flags change at once for every dentry of it.
    pub fn change(&self, old: &Arc<Mount>, change: Change) {
        old.live.set(change.opts.flags);
        let new = Arc::new(Mount {
            id: old.id,
            root: change.root,
            mountpoint: old.mountpoint.clone(),
            fs_type: old.fs_type.clone(),
            source: old.source.clone(),
            live: old.live.clone(),
            opts: change.opts,
        });
        let mut table = self.mounts.write();
        match &old.mountpoint {
            None => *self.root.write() = new.clone(),
            Some(mp) => {
                table.insert((mp.mount.id, mp.path_in_mount()), new.clone());
            }
        }
        refresh_below(&mut table, &new);
    }

    /// Unmounts the mount whose root is `d`; with `detach` (MNT_DETACH)
    /// every mount below it goes too and use does not matter, else a
    /// mount in use (a working directory, an open file, a mount on it)
    /// is busy.
    pub fn umount(&self, d: &Arc<Dentry>, detach: bool) -> Result<(), Errno> {
        if !self.is_mount_root(d) {
            return Err(Errno::EINVAL);
        }
        let m = self.by_id(d.mount.id).ok_or(Errno::EINVAL)?;
        let Some(mp) = &m.mountpoint else {
            return Err(Errno::EBUSY);
        };
        if m.opts.locked {
            return Err(Errno::EINVAL);
        }
        let below = self.descendants(m.id);
        // The table's reference, `m` and `d`'s (when `d` is not a dentry
        // of an older mount object with the same id).
        let refs = if Arc::ptr_eq(&d.mount, &m) { 3 } else { 2 };
        if !detach && (!below.is_empty() || Arc::strong_count(&m) > refs) {
            return Err(Errno::EBUSY);
        }
        // Locked mounts below go along with the whole tree (as Linux's
        // umount_tree): none of them is taken off what it covers while
        // that stays reachable.
        let mut table = self.mounts.write();
        table.remove(&(mp.mount.id, mp.path_in_mount()));
        for b in below {
            if let Some(bmp) = &b.mountpoint {
                table.remove(&(bmp.mount.id, bmp.path_in_mount()));
            }
        }
        Ok(())
    }

    /// Moves the mount whose root is `d` (and the mounts below it) onto
    /// `to` (MS_MOVE).
    pub fn move_mount(&self, d: &Arc<Dentry>, to: &Arc<Dentry>) -> Result<(), Errno> {
        if !self.is_mount_root(d) {
            return Err(Errno::EINVAL);
        }
        let m = self.by_id(d.mount.id).ok_or(Errno::EINVAL)?;
        let Some(mp) = &m.mountpoint else {
            return Err(Errno::EINVAL);
        };
        if m.opts.locked || matches!(m.opts.propagation, super::Propagation::Unbindable) {
            return Err(Errno::EINVAL);
        }
        // Nor one whose parent is shared (Linux's do_move_mount).
        if self.by_id(mp.mount.id).is_some_and(|p| matches!(p.opts.propagation, super::Propagation::Shared(_))) {
            return Err(Errno::EINVAL);
        }
        let to = self.crossed(to.clone());
        // Not into itself: no mount on the way up from `to` may be `m`.
        let mut cur = Some(to.clone());
        while let Some(c) = cur {
            if c.mount.id == m.id {
                return Err(Errno::ELOOP);
            }
            cur = c.mount.mountpoint.clone();
        }
        let is_dir = m.root.stat()?.mode & S_IFMT == S_IFDIR;
        if to.is_dir() != is_dir {
            return Err(if is_dir { Errno::ENOTDIR } else { Errno::EISDIR });
        }
        let moved = Arc::new(Mount {
            id: m.id,
            root: m.root.clone(),
            mountpoint: Some(to.clone()),
            fs_type: m.fs_type.clone(),
            source: m.source.clone(),
            live: m.live.clone(),
            opts: m.opts.clone(),
        });
        let mut table = self.mounts.write();
        table.remove(&(mp.mount.id, mp.path_in_mount()));
        table.insert((to.mount.id, to.path_in_mount()), moved.clone());
        refresh_below(&mut table, &moved);
        Ok(())
    }

    /// pivot_root(2): the mount whose root is `new_root` takes the place
    /// of the caller's root mount (`root`, a mount's root: the
    /// namespace's, or one chroot(2) reached), which moves to `put_old`
    /// (at or below `new_root`). Returns the new root. Linux's checks and
    /// order: shared mounts around (EINVAL), the root's own mount (EBUSY),
    /// a locked new root (EINVAL: the runtime's mounts stay, and the
    /// sandbox's root is one), then where the three are. As Linux
    /// does, the old root's lock moves to the new root: the old one, now
    /// on a place inside the new root, may be detached (with the
    /// runtime's mounts below it), and the new root is the one the guest
    /// cannot take away. A read-only old root stays read-only: it has no
    /// writable root to go back to.
    pub fn pivot(
        &self,
        new_root: &Arc<Dentry>,
        put_old: &Arc<Dentry>,
        root: &Arc<Dentry>,
    ) -> Result<Arc<Dentry>, Errno> {
        if !new_root.is_dir() || !put_old.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let put_old = self.crossed(put_old.clone());
        let r = self.by_id(root.mount.id).ok_or(Errno::EINVAL)?;
        let n = self.by_id(new_root.mount.id).ok_or(Errno::EINVAL)?;
        let o = self.by_id(put_old.mount.id).ok_or(Errno::EINVAL)?;
        let shared = |m: &Mount| matches!(m.opts.propagation, super::Propagation::Shared(_));
        let parent_shared =
            |m: &Mount| m.mountpoint.as_ref().and_then(|mp| self.by_id(mp.mount.id)).is_some_and(|p| shared(&p));
        if shared(&o) || parent_shared(&n) || parent_shared(&r) {
            return Err(Errno::EINVAL);
        }
        if n.id == r.id || o.id == r.id {
            return Err(Errno::EBUSY);
        }
        if n.opts.locked {
            // Taking a runtime mount off its place would uncover what it
            // covers.
            return Err(Errno::EINVAL);
        }
        if root.parent.is_some() || new_root.parent.is_some() {
            return Err(Errno::EINVAL);
        }
        let nmp = n.mountpoint.clone().ok_or(Errno::EINVAL)?;
        if !put_old.is_under(new_root) || !new_root.is_under(root) {
            return Err(Errno::EINVAL);
        }
        let new = Arc::new(Mount {
            id: n.id,
            root: n.root.clone(),
            mountpoint: r.mountpoint.clone(),
            fs_type: n.fs_type.clone(),
            source: n.source.clone(),
            live: n.live.clone(),
            opts: MountOpts { locked: n.opts.locked || r.opts.locked, ..n.opts.clone() },
        });
        let put_old = if put_old.mount.id == n.id { rebased(&put_old, &new) } else { put_old };
        let moved = Arc::new(Mount {
            id: r.id,
            root: r.root.clone(),
            mountpoint: Some(put_old.clone()),
            fs_type: r.fs_type.clone(),
            source: r.source.clone(),
            live: r.live.clone(),
            opts: MountOpts { locked: false, ..r.opts.clone() },
        });
        let mut table = self.mounts.write();
        table.remove(&(nmp.mount.id, nmp.path_in_mount()));
        match &r.mountpoint {
            None => *self.root.write() = new.clone(),
            Some(rmp) => {
                table.insert((rmp.mount.id, rmp.path_in_mount()), new.clone());
            }
        }
        table.insert((put_old.mount.id, put_old.path_in_mount()), moved.clone());
        refresh_below(&mut table, &new);
        refresh_below(&mut table, &moved);
        Ok(Dentry::mount_root(&new))
    }
}

/// Puts the mounts below `top` (replaced by a new object: remounted,
/// moved) on dentries of the new object, so that "..", paths and flags
/// seen from them are `top`'s as it is now.
fn refresh_below(table: &mut MountTable, top: &Arc<Mount>) {
    let children: Vec<Arc<Mount>> = table.iter().filter(|(k, _)| k.0 == top.id).map(|(_, m)| m.clone()).collect();
    for c in children {
        let Some(mp) = &c.mountpoint else { continue };
        if Arc::ptr_eq(&mp.mount, top) || c.id == top.id {
            continue;
        }
        let key = (mp.mount.id, mp.path_in_mount());
        let new = Arc::new(Mount {
            id: c.id,
            root: c.root.clone(),
            mountpoint: Some(rebased(mp, top)),
            fs_type: c.fs_type.clone(),
            source: c.source.clone(),
            live: c.live.clone(),
            opts: c.opts.clone(),
        });
        table.insert(key, new.clone());
        refresh_below(table, &new);
    }
}

/// Copies mount `m` (its parents first) into `new`, its mount point a
/// dentry of its parent's copy.
fn copy_mount(m: &Arc<Mount>, old: &HashMap<u64, Arc<Mount>>, new: &mut HashMap<u64, Arc<Mount>>) -> Arc<Mount> {
    if let Some(c) = new.get(&m.id) {
        return c.clone();
    }
    let mountpoint = m.mountpoint.as_ref().map(|mp| match old.get(&mp.mount.id) {
        Some(parent) if parent.id != m.id => rebased(mp, &copy_mount(parent, old, new)),
        _ => mp.clone(),
    });
    let c = Arc::new(Mount {
        id: m.id,
        root: m.root.clone(),
        mountpoint,
        fs_type: m.fs_type.clone(),
        source: m.source.clone(),
        live: MountFlags::new(m.live.get()),
        opts: m.opts.clone(),
    });
    new.insert(m.id, c.clone());
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Credentials;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::walk::Walker;
    use crate::vfs::NewNode;

    const DIR: NewNode = NewNode { mode: 0o755, uid: 0, gid: 0 };

    fn resolve(ns: &MountNamespace, p: &[u8]) -> Arc<Dentry> {
        let creds = Credentials::new(0, 0);
        Walker { ns, root: ns.root(), creds: &creds }.resolve(&ns.root(), p, true).unwrap()
    }

    fn guest_mount(ns: &MountNamespace, at: &[u8]) -> Arc<Dentry> {
        let fs = Tmpfs::new(0o755, 0, 0);
        fs.mkdir(b"sub", DIR).unwrap();
        ns.mount_with(&resolve(ns, at), fs, "tmpfs", "none", MountOpts::default()).unwrap();
        resolve(ns, at)
    }

    fn setup() -> MountNamespace {
        let root = Tmpfs::new(0o755, 0, 0);
        root.mkdir(b"a", DIR).unwrap();
        root.mkdir(b"b", DIR).unwrap();
        MountNamespace::new(root, "tmpfs", "root")
    }

    /// The audit log's spelling: a bind is named from its source, a whole
    /// mount from its place.
    #[test]
    fn source_paths_name_binds_by_their_source() {
        let ns = setup();
        guest_mount(&ns, b"/a");
        let sub = resolve(&ns, b"/a/sub");
        let opts = MountOpts { fs_root: b"/sub".to_vec(), ..MountOpts::default() };
        ns.mount_with(&resolve(&ns, b"/b"), sub.node.clone(), "tmpfs", "none", opts).unwrap();
        let b = resolve(&ns, b"/b");
        assert_eq!(b.path_from(&ns.root()), b"/b");
        assert_eq!(ns.source_path(&b), b"/a/sub");
        assert_eq!(ns.source_path(&b.child(b"f", sub.node.clone())), b"/a/sub/f");
        assert_eq!(ns.source_path(&resolve(&ns, b"/a")), b"/a");
        assert_eq!(ns.source_path(&ns.root()), b"/");
    }

    #[test]
    fn a_copy_does_not_see_later_mounts_of_the_original_nor_the_reverse() {
        let ns = setup();
        guest_mount(&ns, b"/a");
        let copy = ns.copy();
        assert!(resolve(&copy, b"/a/sub").is_dir(), "the copy has the mounts made before it");
        guest_mount(&copy, b"/b");
        assert!(resolve(&copy, b"/b/sub").is_dir());
        assert!(resolve(&ns, b"/b").node.lookup(b"sub").is_err(), "the original does not see it");
        let a = resolve(&copy, b"/a");
        copy.umount(&a, false).unwrap();
        assert!(resolve(&ns, b"/a/sub").is_dir(), "unmounting in the copy leaves the original's");
    }

    #[test]
    fn umount_of_a_busy_mount_fails_unless_detached() {
        let ns = setup();
        guest_mount(&ns, b"/a");
        let cwd = resolve(&ns, b"/a/sub");
        let a = resolve(&ns, b"/a");
        assert_eq!(ns.umount(&a, false), Err(Errno::EBUSY), "a dentry inside keeps it busy");
        drop(cwd);
        guest_mount(&ns, b"/a/sub");
        let a = resolve(&ns, b"/a");
        assert_eq!(ns.umount(&a, false), Err(Errno::EBUSY), "a mount on it keeps it busy");
        ns.umount(&a, true).unwrap();
        assert!(resolve(&ns, b"/a").node.lookup(b"sub").is_err());
        assert_eq!(ns.all().len(), 1, "the mount below went with it");
        assert_eq!(ns.umount(&resolve(&ns, b"/a"), false), Err(Errno::EINVAL), "not a mount point");
        assert_eq!(ns.umount(&ns.root(), false), Err(Errno::EBUSY), "the root");
    }

    /// A remount changes the flags a dentry reached before it sees, in
    /// this namespace only.
    #[test]
    fn flags_change_in_place_for_old_dentries() {
        use crate::vfs::dentry::{MNT_NOEXEC, MNT_READONLY};
        let ns = setup();
        let old = guest_mount(&ns, b"/a").child(b"sub", resolve(&ns, b"/a/sub").node.clone());
        let copy = ns.copy();
        let m = ns.by_id(old.mount.id).unwrap();
        let opts = MountOpts { flags: MNT_READONLY | MNT_NOEXEC, ..m.opts.clone() };
        ns.change(&m, Change { root: m.root.clone(), opts });
        assert!(old.mount.read_only() && old.mount.noexec());
        assert!(resolve(&ns, b"/a/sub").mount.read_only());
        assert!(!resolve(&copy, b"/a/sub").mount.read_only(), "a copied namespace's mount is its own");
    }

    #[test]
    fn mounts_stop_at_the_limit() {
        let ns = setup();
        let a = resolve(&ns, b"/a");
        let fs = Tmpfs::new(0o755, 0, 0);
        let mut places = Vec::new();
        for i in 0..crate::vfs::dentry::MAX_MOUNTS {
            let name = format!("d{i}");
            a.node.mkdir(name.as_bytes(), DIR).unwrap();
            places.push(a.child(name.as_bytes(), a.node.lookup(name.as_bytes()).unwrap()));
        }
        let (last, first) = places.split_last().unwrap();
        for p in first {
            ns.mount_with(p, fs.clone(), "tmpfs", "t", MountOpts::default()).unwrap();
        }
        assert_eq!(ns.all().len(), crate::vfs::dentry::MAX_MOUNTS, "the root and the others");
        let err = ns.mount_with(last, fs.clone(), "tmpfs", "t", MountOpts::default()).err();
        assert_eq!(err, Some(Errno::ENOSPC));
    }

    #[test]
    fn runtime_mounts_are_locked() {
        let ns = setup();
        ns.mount(&resolve(&ns, b"/a"), Tmpfs::new(0o755, 0, 0), "tmpfs", "t").unwrap();
        let a = resolve(&ns, b"/a");
        assert_eq!(ns.umount(&a, true), Err(Errno::EINVAL));
        assert_eq!(ns.move_mount(&a, &resolve(&ns, b"/b")), Err(Errno::EINVAL));
    }

    #[test]
    fn pivot_moves_the_lock_to_the_new_root() {
        let ns = setup();
        ns.mount(&resolve(&ns, b"/b"), Tmpfs::new(0o755, 0, 0), "tmpfs", "t").unwrap();
        let old_root = ns.root();
        assert_eq!(
            ns.pivot(&resolve(&ns, b"/b"), &resolve(&ns, b"/b"), &old_root).err(),
            Some(Errno::EINVAL),
            "a runtime mount as new root"
        );
        guest_mount(&ns, b"/a");
        let new = ns.pivot(&resolve(&ns, b"/a"), &resolve(&ns, b"/a/sub"), &old_root).unwrap();
        assert!(Arc::ptr_eq(&new.mount, &ns.root().mount));
        let b = resolve(&ns, b"/sub/b");
        assert_eq!(ns.umount(&b, true), Err(Errno::EINVAL), "the runtime mount below stays locked");
        let old = resolve(&ns, b"/sub");
        assert_eq!(ns.umount(&old, false), Err(Errno::EBUSY), "a mount below it");
        ns.umount(&old, true).unwrap();
        assert_eq!(ns.all().len(), 1, "the old root went with the runtime mount below it");
        assert!(ns.root().mount.opts.locked, "the new root is locked in its place");
    }

    #[test]
    fn a_move_carries_the_mounts_below_and_cannot_go_into_itself() {
        let ns = setup();
        guest_mount(&ns, b"/a");
        guest_mount(&ns, b"/a/sub");
        let a = resolve(&ns, b"/a");
        assert_eq!(ns.move_mount(&a, &resolve(&ns, b"/a/sub")), Err(Errno::ELOOP));
        ns.move_mount(&a, &resolve(&ns, b"/b")).unwrap();
        assert!(resolve(&ns, b"/b/sub/sub").is_dir(), "the mount below moved along");
        assert!(resolve(&ns, b"/a").node.lookup(b"sub").is_err());
    }
}
