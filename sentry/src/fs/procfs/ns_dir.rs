//! /proc/[pid]/ns: one magic link per namespace type, whose text names
//! the namespace ("uts:[4026531838]") and which leads to its nsfs file
//! (for `setns`, or `stat` to compare namespaces). As Linux, following or
//! reading another process's links needs ptrace read access (EACCES).

use super::task::{child_attr, TaskRef};
use crate::abi::Errno;
use crate::fs::nsfs::{Kind, NsFile, KINDS};
use crate::fs::synthetic::{path_ino, Attr, Entries, Link};
use crate::kernel::{thread, Thread};
use crate::vfs::{Dentry, DirEntry, Node, S_IFLNK};
use std::sync::Arc;

/// The entries of /proc/[pid]/ns.
pub(super) struct NsEntries {
    pub(super) task: TaskRef,
    pub(super) path: String,
}

/// `t`'s namespace file of `kind`, if the reader may see it.
fn ns_file(t: &Thread, kind: Kind) -> Result<NsFile, Errno> {
    if let Some(reader) = thread::current() {
        let dumpable = t.group().dumpable() != 0;
        if reader.tgid() != t.tgid() && !reader.creds().may_read_process(&t.creds(), dumpable) {
            return Err(Errno::EACCES);
        }
    }
    Ok(NsFile::of(t, kind))
}

impl NsEntries {
    fn link(&self, dir: &Attr, kind: Kind) -> Arc<dyn Node> {
        let attr = child_attr(dir, &format!("{}/{}", self.path, kind.name()), S_IFLNK | 0o777);
        let (task, target) = (self.task.clone(), self.task.clone());
        Link::magic(
            attr,
            Box::new(move || Ok(ns_file(&task.get()?.1, kind)?.text())),
            Box::new(move || {
                let (k, t) = target.get()?;
                let f = ns_file(&t, kind)?;
                let d: Arc<Dentry> = k.anon_dentry(&f.text(), Arc::new(f));
                Ok(d)
            }),
        )
    }
}

impl Entries for NsEntries {
    fn lookup(&self, dir: &Attr, name: &[u8]) -> Result<Arc<dyn Node>, Errno> {
        self.task.get_for_lookup()?;
        let kind = KINDS.into_iter().find(|k| k.name().as_bytes() == name).ok_or(Errno::ENOENT)?;
        Ok(self.link(dir, kind))
    }

    fn list(&self, _dir: &Attr) -> Result<Vec<DirEntry>, Errno> {
        self.task.get_for_lookup()?;
        Ok(KINDS
            .iter()
            .map(|k| DirEntry {
                ino: path_ino(format!("{}/{}", self.path, k.name()).as_bytes()),
                kind: libc::DT_LNK,
                name: k.name().as_bytes().to_vec(),
            })
            .collect())
    }
}
