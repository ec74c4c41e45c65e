//! System calls: extended attributes. No filesystem of the sandbox stores
//! them yet: reads find none, listing is empty, and setting is refused the
//! way Linux refuses it on a filesystem without xattr support.

use super::args::{self};
use super::{Entries, Support::*};
use crate::abi::fcntl::AT_FDCWD_ARG;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::Dentry;
use std::sync::Arc;

const NOTE: &str = "extended attributes are not stored: get finds none, set fails with EOPNOTSUPP";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getxattr, sys_getxattr, Partial(NOTE)),
    (libc::SYS_lgetxattr, sys_lgetxattr, Partial(NOTE)),
    (libc::SYS_fgetxattr, sys_fgetxattr, Partial(NOTE)),
    (libc::SYS_listxattr, sys_listxattr, Partial(NOTE)),
    (libc::SYS_llistxattr, sys_llistxattr, Partial(NOTE)),
    (libc::SYS_flistxattr, sys_flistxattr, Partial(NOTE)),
    (libc::SYS_setxattr, sys_setxattr, Partial(NOTE)),
    (libc::SYS_lsetxattr, sys_lsetxattr, Partial(NOTE)),
    (libc::SYS_fsetxattr, sys_fsetxattr, Partial(NOTE)),
    (libc::SYS_removexattr, sys_removexattr, Partial(NOTE)),
    (libc::SYS_lremovexattr, sys_lremovexattr, Partial(NOTE)),
    (libc::SYS_fremovexattr, sys_fremovexattr, Partial(NOTE)),
];

/// The longest attribute name Linux accepts.
const XATTR_NAME_MAX: usize = 255;

fn by_path(task: &Task, addr: u64, follow: bool) -> Result<Arc<Dentry>, Errno> {
    let path = args::path(task, addr)?;
    args::resolve_at(task, AT_FDCWD_ARG, &path, follow, false)
}

fn by_fd(task: &Task, fd: u64) -> Result<Arc<Dentry>, Errno> {
    let f = args::file(task, fd)?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    Ok(f.dentry.clone())
}

/// Validates an attribute name as Linux does before looking it up.
fn name(task: &Task, addr: u64) -> Result<Vec<u8>, Errno> {
    let n = task.thread.mm().read_cstring(addr, XATTR_NAME_MAX).map_err(|e| {
        if e == Errno::ENAMETOOLONG {
            Errno::ERANGE
        } else {
            e
        }
    })?;
    if n.is_empty() {
        return Err(Errno::ERANGE);
    }
    Ok(n)
}

fn get(task: &Task, _d: Arc<Dentry>, name_addr: u64) -> SysResult {
    name(task, name_addr)?;
    Err(Errno::ENODATA)
}

fn list(_d: Arc<Dentry>) -> SysResult {
    Ok(0)
}

fn set(task: &Task, _d: Arc<Dentry>, name_addr: u64, flags: u64) -> SysResult {
    if flags & !3 != 0 {
        return Err(Errno::EINVAL);
    }
    name(task, name_addr)?;
    Err(Errno::EOPNOTSUPP)
}

fn remove(task: &Task, _d: Arc<Dentry>, name_addr: u64) -> SysResult {
    name(task, name_addr)?;
    Err(Errno::ENODATA)
}

fn sys_getxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_path(task, a[0], true)?, a[1])
}

fn sys_lgetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_path(task, a[0], false)?, a[1])
}

fn sys_fgetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_fd(task, a[0])?, a[1])
}

fn sys_listxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(by_path(task, a[0], true)?)
}

fn sys_llistxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(by_path(task, a[0], false)?)
}

fn sys_flistxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(by_fd(task, a[0])?)
}

fn sys_setxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_path(task, a[0], true)?, a[1], a[4])
}

fn sys_lsetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_path(task, a[0], false)?, a[1], a[4])
}

fn sys_fsetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_fd(task, a[0])?, a[1], a[4])
}

fn sys_removexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_path(task, a[0], true)?, a[1])
}

fn sys_lremovexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_path(task, a[0], false)?, a[1])
}

fn sys_fremovexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_fd(task, a[0])?, a[1])
}
