//! fcntl's F_NOTIFY (dnotify): a directory signals its owner when its
//! entries change (the registrations themselves are the VFS's, see
//! `vfs::dnotify`).

use super::fown;
use crate::abi::fcntl::F_OWNER_PID;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::{dnotify, FileDescription};

/// F_NOTIFY on `f`, reached through descriptor `fd`, with argument `arg`
/// (Linux's `fcntl_dirnotify`): without events the caller's registration
/// goes, on any file; otherwise the file must be a directory, the caller
/// becomes its owner unless it has one, and its registration gains the
/// events.
pub(super) fn fcntl(task: &Task, f: &FileDescription, fd: i32, arg: u32) -> SysResult {
    let pid = task.thread.tgid();
    if dnotify::removes(arg) {
        f.closed_by(pid);
        return Ok(0);
    }
    if !f.dentry.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    if f.owner().1 == 0 {
        fown::set(task, f, (F_OWNER_PID, pid))?;
    }
    f.notify_dir(pid, fd, arg)?;
    Ok(0)
}
