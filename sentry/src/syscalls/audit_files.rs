//! `file.*` audit records of watched paths (`--audit-watch`), taken by
//! the handlers before the change they describe is made: an attempt the
//! filesystem then refuses is recorded too. A sandbox without a log pays
//! one load and branch per call.

use super::args;
use crate::abi::Errno;
use crate::audit::Record;
use crate::kernel::Task;
use crate::vfs::{Dentry, FileDescription};
use std::sync::Arc;

/// Whether the sandbox keeps a log at all (the cheap test first).
fn logging(task: &Task) -> bool {
    task.kernel.audit_log().is_some()
}

/// `d`'s path from the root of the task's mount namespace, whatever
/// root the task chrooted to, with binds spelled from their source
/// (`MountNamespace::source_path`): neither a chroot nor a bind mount
/// moves a watched file out of the globs' sight.
fn path_of(task: &Task, d: &Arc<Dentry>) -> Vec<u8> {
    task.thread.fs().mounts().source_path(d)
}

/// The path `(dirfd, path)` names, its directories resolved and its last
/// component not followed (the name an unlink or rename acts on).
fn name_at(task: &Task, dirfd: u64, path: &[u8]) -> Option<Vec<u8>> {
    let pn = args::parent_at(task, dirfd, path).ok()?;
    let mut full = path_of(task, &pn.parent);
    if full != b"/" {
        full.push(b'/');
    }
    full.extend_from_slice(&pn.name);
    Some(full)
}

fn watched(task: &Task, path: &[u8]) -> bool {
    task.kernel.audit_log().is_some_and(|l| l.watches(path))
}

fn text(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// `path` as text, in its own buffer when it is UTF-8 (as paths almost
/// always are): a record of a watched path copies nothing.
fn into_text(path: Vec<u8>) -> String {
    String::from_utf8(path).unwrap_or_else(|e| text(e.as_bytes()))
}

/// Records `make(path)` when `path` is watched.
fn record(task: &Task, path: Option<Vec<u8>>, make: impl FnOnce(String) -> Record) -> Result<(), Errno> {
    match path.filter(|p| watched(task, p)) {
        Some(p) => task.kernel.audit(|| make(into_text(p))),
        None => Ok(()),
    }
}

/// The path of `name` in the folder `dir`, when changes to it may be
/// recorded: a folder no watched path can lie in is turned away before
/// the name is spelled out.
fn name_in(task: &Task, dir: &Arc<Dentry>, name: &[u8]) -> Option<Vec<u8>> {
    let log = task.kernel.audit_log()?;
    let mut full = path_of(task, dir);
    if !full.ends_with(b"/") {
        full.push(b'/');
    }
    if !log.may_watch_below(&full) {
        return None;
    }
    full.extend_from_slice(name);
    Some(full)
}

/// What a `file.mount` record says of a change of the task's view.
pub(super) struct ViewChange<'a> {
    pub operation: &'a str,
    /// The mount point, new root, or none (unshare).
    pub at: Option<&'a Arc<Dentry>>,
    /// A bind or move's source, or pivot_root's put_old.
    pub from: Option<&'a Arc<Dentry>>,
    /// A new mount's device string.
    pub device: Option<&'a [u8]>,
    pub fs_type: Option<&'a [u8]>,
    pub flags: u64,
}

/// A change of the task's view of the filesystem about to be made, which
/// changes the paths later records name (`file.mount`): recorded whether
/// or not a watched path is involved.
pub(super) fn view_change(task: &Task, c: &ViewChange<'_>) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    // As the task sees them: the record says what the guest asked for.
    let root = task.thread.fs().root();
    let path = c.at.map(|d| text(&d.path_from(&root)));
    let source = c.from.map(|d| text(&d.path_from(&root))).or_else(|| c.device.map(text));
    let fs_type = c.fs_type.map(text);
    let (operation, flags) = (c.operation.to_owned(), c.flags);
    task.kernel.audit(|| Record::FileMount { pid, operation, path, source, fs_type, flags })
}

/// An open with O_CREAT about to make `name` in `dir` (told by the VFS,
/// which resolved them for the open itself).
pub(super) fn create(task: &Task, dir: &Arc<Dentry>, name: &[u8]) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, name_in(task, dir, name), |path| Record::FileCreate { pid, path })
}

/// An unlink or rmdir about to remove `name` from `dir` (told by the
/// VFS).
pub(super) fn unlink(task: &Task, dir: &Arc<Dentry>, name: &[u8]) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, name_in(task, dir, name), |path| Record::FileUnlink { pid, path })
}

/// Whether opens for reading of `path` are recorded (`--audit-read`).
fn read_watched(task: &Task, path: &[u8]) -> bool {
    task.kernel.audit_log().is_some_and(|l| l.records_reads_of(path))
}

/// A rename from or onto a watched name, or of a file `--audit-read`
/// names (whose identity is then remembered: reads of it under its new
/// name are recorded).
pub(super) fn rename(task: &Task, old: (u64, &[u8]), new: (u64, &[u8])) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let (Some(from), Some(to)) = (name_at(task, old.0, old.1), name_at(task, new.0, new.1)) else { return Ok(()) };
    let reads = read_watched(task, &from);
    if reads {
        let node = args::parent_at(task, old.0, old.1).ok().and_then(|pn| pn.parent.node.lookup(&pn.name).ok());
        if let Some(node) = node {
            task.kernel.read_watched_renamed(&*node, &from);
        }
    }
    if !reads && !watched(task, &from) && !watched(task, &to) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    task.kernel.audit(|| Record::FileRename { pid, from: text(&from), to: text(&to) })
}

/// A chmod of `d` to `mode`.
pub(super) fn chmod(task: &Task, d: &Arc<Dentry>, mode: u32) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, Some(path_of(task, d)), |path| Record::FileChmod { pid, path, mode })
}

/// A chown of `d` (`None`: that id left as it is).
pub(super) fn chown(task: &Task, d: &Arc<Dentry>, uid: Option<u32>, gid: Option<u32>) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, Some(path_of(task, d)), |path| Record::FileChown { pid, path, uid, gid })
}

/// A hard link to `src` named `(dirfd, path)`: recorded when either is
/// watched, or `src` is a file `--audit-read` names (whose identity is
/// then remembered: reads through the new name are recorded).
pub(super) fn link(task: &Task, src: &Arc<Dentry>, dirfd: u64, path: &[u8]) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let Some(to) = name_at(task, dirfd, path) else { return Ok(()) };
    let from = path_of(task, src);
    let reads = read_watched(task, &from);
    if reads {
        task.kernel.read_watched_renamed(&*src.node, &from);
    }
    if !reads && !watched(task, &from) && !watched(task, &to) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    task.kernel.audit(|| Record::FileLink { pid, target: text(&from), path: text(&to) })
}

/// A symbolic link holding `target` named `(dirfd, path)`.
pub(super) fn symlink(task: &Task, target: &[u8], dirfd: u64, path: &[u8]) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, name_at(task, dirfd, path), |path| Record::FileSymlink { pid, target: text(target), path })
}

/// A truncation of `f` to `length`.
pub(super) fn truncate(task: &Task, f: &FileDescription, length: u64) -> Result<(), Errno> {
    if !logging(task) {
        return Ok(());
    }
    let pid = task.thread.tgid();
    record(task, Some(path_of(task, &f.dentry)), |path| Record::FileTruncate { pid, path, length })
}

/// A write through `f`: recorded the first time per open description.
pub(super) fn write(task: &Task, f: &FileDescription) -> Result<(), Errno> {
    // Named files only (not pipes, sockets and other anonymous ones).
    if !logging(task) || f.dentry.parent.is_none() || !f.first_write() {
        return Ok(());
    }
    task.kernel.package_wrote(task, &f.dentry);
    let pid = task.thread.tgid();
    record(task, Some(path_of(task, &f.dentry)), |path| Record::FileWrite { pid, path })
}

/// An open of `f`, before the guest has its descriptor: an open for
/// reading of a path `--audit-read` names, or of a file known to be one
/// by its identity (kernel/audit_reads.rs), is a `file.read` record (one
/// the log refuses fails the open), and a package manager's run reading
/// an archive has it hashed (kernel/package.rs).
pub(super) fn opened(task: &Task, f: &FileDescription) -> Result<(), Errno> {
    let Some(log) = task.kernel.audit_log() else { return Ok(()) };
    // Named files only: not pipes, sockets or other anonymous ones.
    if f.readable() && f.dentry.parent.is_some() {
        let path = path_of(task, &f.dentry);
        let pid = task.thread.tgid();
        if log.records_reads_of(&path) {
            task.kernel.audit(|| Record::FileRead { pid, path: text(&path), via: None })?;
            task.kernel.read_watched_opened(&f.dentry, &path);
        } else if let Some(via) = task.kernel.read_watched_via(&f.dentry) {
            task.kernel.audit(|| Record::FileRead { pid, path: text(&path), via: Some(via) })?;
        }
    }
    task.kernel.package_opened(task, f);
    Ok(())
}
