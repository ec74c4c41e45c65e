//! System calls: extended attributes. tmpfs (/tmp, /dev/shm, the overlay's
//! upper layer) stores them; the overlay shows the upper layer's, or the
//! lower one's until a change copies the node up. The namespaces' rules
//! are Linux's `xattr_permission` and commoncap's: `user.*` on regular
//! files and directories with read or write permission, `trusted.*` with
//! CAP_SYS_ADMIN, `security.*` written with CAP_SYS_ADMIN
//! (`security.capability` with CAP_SETFCAP). POSIX ACLs
//! (`system.posix_acl_access`, `system.posix_acl_default`) as Linux's
//! `vfs_set_acl`: validated (EINVAL), set by the owner or with CAP_FOWNER,
//! an access ACL sets the mode's bits (and is kept only where the mode
//! cannot say it all), a default ACL only on directories (`vfs::acl`
//! evaluates and inherits them). Files the gofer serves directly
//! (`--overlay=none`) and the synthetic filesystems store none.

use super::args::{self};
use super::{Entries, Support::*};
use crate::abi::fcntl::AT_FDCWD_ARG;
use crate::abi::xattr::{XATTR_CREATE, XATTR_NAME_MAX, XATTR_REPLACE, XATTR_SIZE_MAX};
use crate::abi::{Errno, SysResult};
use crate::auth::caps::{CAP_FOWNER, CAP_FSETID, CAP_SYS_ADMIN};
use crate::kernel::Task;
use crate::vfs::acl::{Acl, ACL_ACCESS, ACL_DEFAULT};
use crate::vfs::notify::{self, IN_ATTRIB};
use crate::vfs::perm::{self, MAY_READ, MAY_WRITE};
use crate::vfs::{Dentry, SetAttr, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use std::sync::Arc;

const NOTE: &str = "stored on tmpfs and the overlay (copied up with the node), user/trusted/security \
    namespaces as Linux; POSIX ACLs (system.posix_acl_access/default) validated, honored in permission \
    checks and inherited as Linux; other system.* names EOPNOTSUPP; gofer-served files (--overlay=none) \
    store none: get finds none (ENODATA, where Linux's host filesystem may have some), set fails with \
    EOPNOTSUPP";

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

/// The capability that writes `security.capability`.
const CAP_SETFCAP: u32 = 31;

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

/// The namespaces of attribute names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Namespace {
    User,
    Trusted,
    Security,
    /// `system.posix_acl_access` or `system.posix_acl_default`.
    Acl,
}

/// The namespace of `name`: EOPNOTSUPP for one no filesystem here has
/// (`system.*` but POSIX ACLs, and unknown prefixes), EINVAL for a prefix
/// with nothing after it (Linux's `xattr_resolve_name`).
fn namespace(name: &[u8]) -> Result<Namespace, Errno> {
    if name == ACL_ACCESS || name == ACL_DEFAULT {
        return Ok(Namespace::Acl);
    }
    for (prefix, ns) in
        [(&b"user."[..], Namespace::User), (b"trusted.", Namespace::Trusted), (b"security.", Namespace::Security)]
    {
        if let Some(rest) = name.strip_prefix(prefix) {
            return if rest.is_empty() { Err(Errno::EINVAL) } else { Ok(ns) };
        }
    }
    Err(Errno::EOPNOTSUPP)
}

/// Linux's `xattr_permission` and commoncap's `cap_inode_setxattr` /
/// `cap_inode_removexattr` for access `want` (MAY_READ or MAY_WRITE).
fn may_access(task: &Task, d: &Dentry, ns: Namespace, name: &[u8], want: u32) -> Result<(), Errno> {
    let write = want & MAY_WRITE != 0;
    if write && (d.mount.read_only() || d.node.read_only()) {
        return Err(Errno::EROFS);
    }
    let creds = task.thread.creds();
    let st = d.node.stat()?;
    match ns {
        // Who may set an ACL is `set_acl`'s question.
        Namespace::Acl => Ok(()),
        Namespace::Trusted => {
            if creds.capable(CAP_SYS_ADMIN) {
                Ok(())
            } else if write {
                Err(Errno::EPERM)
            } else {
                Err(Errno::ENODATA)
            }
        }
        Namespace::Security => {
            if !write {
                return Ok(());
            }
            let cap = if name == b"security.capability" { CAP_SETFCAP } else { CAP_SYS_ADMIN };
            if creds.capable(cap) {
                Ok(())
            } else {
                Err(Errno::EPERM)
            }
        }
        Namespace::User => {
            let kind = st.mode & S_IFMT;
            if kind != S_IFREG && kind != S_IFDIR {
                return Err(if write { Errno::EPERM } else { Errno::ENODATA });
            }
            let sticky = kind == S_IFDIR && st.mode & 0o1000 != 0;
            if write && sticky && creds.fsuid != st.uid && !creds.capable(CAP_FOWNER) {
                return Err(Errno::EPERM);
            }
            perm::check(&creds, &st, want)
        }
    }
}

/// Copies `data` out as getxattr and listxattr do: its length for a size
/// of 0, ERANGE if it does not fit.
fn copy_out(task: &Task, addr: u64, size: u64, data: &[u8]) -> SysResult {
    if size == 0 {
        return Ok(data.len() as u64);
    }
    let size = usize::try_from(size).unwrap_or(usize::MAX).min(XATTR_SIZE_MAX);
    if data.len() > size {
        return Err(Errno::ERANGE);
    }
    task.thread.mm().copy_out(addr, data)?;
    Ok(data.len() as u64)
}

fn get(task: &Task, d: Arc<Dentry>, a: [u64; 6]) -> SysResult {
    let n = name(task, a[1])?;
    let ns = namespace(&n)?;
    may_access(task, &d, ns, &n, MAY_READ)?;
    let mut v = d.node.getxattr(&n)?;
    if n == ACL_ACCESS {
        // The entries the mode mirrors are the mode's (chmod changed it).
        if let Ok(Some(acl)) = Acl::from_xattr(&v) {
            v = acl.with_mode(d.node.stat()?.mode).to_xattr();
        }
    }
    copy_out(task, a[2], a[3], &v)
}

fn list(task: &Task, d: Arc<Dentry>, a: [u64; 6]) -> SysResult {
    let trusted = task.thread.creds().capable(CAP_SYS_ADMIN);
    let mut out = Vec::new();
    for n in d.node.listxattr()? {
        if !trusted && n.starts_with(b"trusted.") {
            continue;
        }
        out.extend_from_slice(&n);
        out.push(0);
    }
    copy_out(task, a[1], a[2], &out)
}

fn set(task: &Task, d: Arc<Dentry>, a: [u64; 6]) -> SysResult {
    let flags = a[4];
    if flags & !u64::from(XATTR_CREATE | XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let n = name(task, a[1])?;
    let size = usize::try_from(a[3]).unwrap_or(usize::MAX);
    if size > XATTR_SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let mut value = vec![0u8; size];
    task.thread.mm().copy_in(a[2], &mut value)?;
    let ns = namespace(&n)?;
    may_access(task, &d, ns, &n, MAY_WRITE)?;
    if ns == Namespace::Acl {
        let acl = Acl::from_xattr(&value)?;
        set_acl(task, &d, &n, acl)?;
    } else {
        d.node.setxattr(&n, &value, u32::try_from(flags).unwrap_or(0))?;
    }
    notify::file_event(&d, IN_ATTRIB);
    Ok(0)
}

/// Linux's `set_posix_acl` (`None` removes the ACL): none on symlinks
/// (EOPNOTSUPP), a default ACL only on a directory (EACCES), only by the
/// owner or with CAP_FOWNER (EPERM). An access ACL sets the mode's
/// permission bits (dropping the set-group-ID bit as chmod would) and is
/// stored only when the mode cannot say it all.
fn set_acl(task: &Task, d: &Dentry, name: &[u8], acl: Option<Acl>) -> Result<(), Errno> {
    let st = d.node.stat()?;
    let kind = st.mode & S_IFMT;
    if kind == S_IFLNK {
        return Err(Errno::EOPNOTSUPP);
    }
    if name == ACL_DEFAULT && kind != S_IFDIR {
        return if acl.is_some() { Err(Errno::EACCES) } else { Ok(()) };
    }
    let creds = task.thread.creds();
    if creds.fsuid != st.uid && !creds.capable(CAP_FOWNER) {
        return Err(Errno::EPERM);
    }
    let (stored, mode) = match acl {
        Some(mut acl) if name == ACL_ACCESS => {
            let (bits, equiv) = acl.mode();
            let mut mode = st.mode & 0o7000 | bits;
            if !creds.in_group(st.gid) && !creds.capable(CAP_FSETID) {
                mode &= !0o2000;
            }
            ((!equiv).then(|| acl.to_xattr()), (mode != st.mode & 0o7777).then_some(mode))
        }
        acl => (acl.map(|a| a.to_xattr()), None),
    };
    // Stored first: a filesystem without extended attributes refuses
    // (EOPNOTSUPP) before the mode changes.
    match stored {
        Some(v) => d.node.setxattr(name, &v, 0)?,
        None => match d.node.removexattr(name) {
            Ok(()) | Err(Errno::ENODATA) => {}
            Err(e) => return Err(e),
        },
    }
    if let Some(mode) = mode {
        d.node.setattr(&SetAttr { mode: Some(mode), ..SetAttr::default() })?;
    }
    Ok(())
}

fn remove(task: &Task, d: Arc<Dentry>, a: [u64; 6]) -> SysResult {
    let n = name(task, a[1])?;
    let ns = namespace(&n)?;
    may_access(task, &d, ns, &n, MAY_WRITE)?;
    if ns == Namespace::Acl {
        set_acl(task, &d, &n, None)?;
    } else {
        d.node.removexattr(&n)?;
    }
    notify::file_event(&d, IN_ATTRIB);
    Ok(0)
}

fn sys_getxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_path(task, a[0], true)?, a)
}

fn sys_lgetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_path(task, a[0], false)?, a)
}

fn sys_fgetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    get(task, by_fd(task, a[0])?, a)
}

fn sys_listxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(task, by_path(task, a[0], true)?, a)
}

fn sys_llistxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(task, by_path(task, a[0], false)?, a)
}

fn sys_flistxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    list(task, by_fd(task, a[0])?, a)
}

fn sys_setxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_path(task, a[0], true)?, a)
}

fn sys_lsetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_path(task, a[0], false)?, a)
}

fn sys_fsetxattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    set(task, by_fd(task, a[0])?, a)
}

fn sys_removexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_path(task, a[0], true)?, a)
}

fn sys_lremovexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_path(task, a[0], false)?, a)
}

fn sys_fremovexattr(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, by_fd(task, a[0])?, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces() {
        assert_eq!(namespace(b"user.x"), Ok(Namespace::User));
        assert_eq!(namespace(b"trusted.x"), Ok(Namespace::Trusted));
        assert_eq!(namespace(b"security.selinux"), Ok(Namespace::Security));
        assert_eq!(namespace(b"user."), Err(Errno::EINVAL));
        assert_eq!(namespace(b"system.posix_acl_access"), Ok(Namespace::Acl));
        assert_eq!(namespace(b"system.posix_acl_default"), Ok(Namespace::Acl));
        assert_eq!(namespace(b"system.other"), Err(Errno::EOPNOTSUPP));
        assert_eq!(namespace(b"other.x"), Err(Errno::EOPNOTSUPP));
        assert_eq!(namespace(b"user"), Err(Errno::EOPNOTSUPP));
    }
}
