//! System calls: inotify (man 7 inotify). The instance is
//! `fs::inotify::Inotify`; its watches and events come from the VFS's
//! hooks (`vfs::notify`), on every filesystem of the sandbox.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::fcntl::{AT_FDCWD_ARG, O_NONBLOCK, O_RDONLY};
use crate::abi::{Errno, SysResult};
use crate::fs::inotify::Inotify;
use crate::kernel::Task;
use crate::vfs::notify::{self, IN_DONT_FOLLOW, IN_MASK_ADD, IN_MASK_CREATE, IN_ONLYDIR};
use crate::vfs::perm::{self, MAY_READ};
use crate::vfs::FileDescription;
use std::sync::Arc;

const NOTE: &str = "events come from changes made inside the sandbox on every sentry filesystem \
    (tmpfs, overlay, gofer root, /proc, /dev); IN_DELETE_SELF of a file or directory removed while open \
    (or a working directory) comes when its last holder lets go, as Linux, except that on gofer-served \
    files a memory mapping alone does not hold it, and on tmpfs a file still open under another, earlier \
    removed name ends at that close (Linux: at the removal of the last name); IN_UNMOUNT never; truncate(2) also reports \
    IN_OPEN/IN_CLOSE_WRITE; /proc/sys/fs/inotify limits are fixed";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_inotify_init, sys_inotify_init, Partial(NOTE)),
    (libc::SYS_inotify_init1, sys_inotify_init1, Partial(NOTE)),
    (libc::SYS_inotify_add_watch, sys_inotify_add_watch, Partial(NOTE)),
    (libc::SYS_inotify_rm_watch, sys_inotify_rm_watch, Partial(NOTE)),
];

/// Every bit a mask may carry (Linux's `ALL_INOTIFY_BITS`): a mask with
/// none of them is EINVAL.
const ALL_INOTIFY_BITS: u32 = notify::IN_ALL_EVENTS
    | notify::IN_UNMOUNT
    | notify::IN_Q_OVERFLOW
    | notify::IN_IGNORED
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | notify::IN_EXCL_UNLINK
    | IN_MASK_ADD
    | IN_MASK_CREATE
    | notify::IN_ISDIR
    | notify::IN_ONESHOT;

fn init(task: &Task, flags: i32) -> SysResult {
    if flags & !(libc::IN_NONBLOCK | libc::IN_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let k = &task.kernel;
    let uid = task.thread.creds().uid;
    let i = Inotify::new(k.anon_ino(), super::fd::now(), uid)?;
    let d = k.anon_dentry(b"anon_inode:inotify", i.clone());
    let status = O_RDONLY | if flags & libc::IN_NONBLOCK != 0 { O_NONBLOCK } else { 0 };
    let f = FileDescription::new(d, i, status);
    let fd = task.thread.fds().install(f, flags & libc::IN_CLOEXEC != 0, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}

fn sys_inotify_init(task: &mut Task, _a: [u64; 6]) -> SysResult {
    init(task, 0)
}

fn sys_inotify_init1(task: &mut Task, a: [u64; 6]) -> SysResult {
    init(task, int(a[0]))
}

/// The instance behind `fd`: EBADF for no descriptor, EINVAL for another
/// kind of file.
fn instance(task: &Task, fd: u64) -> Result<Arc<Inotify>, Errno> {
    let f = args::file(task, fd)?;
    f.ops.clone().into_any().downcast::<Inotify>().map_err(|_| Errno::EINVAL)
}

fn sys_inotify_add_watch(task: &mut Task, a: [u64; 6]) -> SysResult {
    let mask = args::uint(a[2]);
    if mask & ALL_INOTIFY_BITS == 0 || (mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0) {
        return Err(Errno::EINVAL);
    }
    let i = instance(task, a[0])?;
    let path = args::path(task, a[1])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, mask & IN_DONT_FOLLOW == 0, false)?;
    if mask & IN_ONLYDIR != 0 && !d.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    perm::check(&task.thread.creds(), &d.node.stat()?, MAY_READ)?;
    let key = notify::key_of(d.node.as_ref()).ok_or(Errno::ENOENT)?;
    let wd = i.add_watch(key, mask)?;
    u64::try_from(wd).map_err(|_| Errno::EINVAL)
}

fn sys_inotify_rm_watch(task: &mut Task, a: [u64; 6]) -> SysResult {
    let i = instance(task, a[0])?;
    i.rm_watch(int(a[1]))?;
    Ok(0)
}
