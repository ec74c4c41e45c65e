//! System calls: directories and the namespace — listing, creating,
//! removing, renaming and linking names, working directory, ownership,
//! modes and timestamps.

use super::args::{self};
use super::{Entries, Support::*};
use crate::abi::fcntl::{AT_EMPTY_PATH, AT_FDCWD_ARG, AT_REMOVEDIR, AT_SYMLINK_FOLLOW, AT_SYMLINK_NOFOLLOW};
use crate::abi::layout::Encoder;
use crate::abi::limits::PATH_MAX;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::Task;
use crate::vfs::notify;
use crate::vfs::perm::{self, MAY_EXEC, MAY_WRITE};
use crate::vfs::{
    names, rename, Dentry, NewNode, SetAttr, SetTime, TimeSpec, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG, S_IFSOCK,
};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getdents64, sys_getdents64, Full),
    (libc::SYS_getdents, sys_getdents, Full),
    (libc::SYS_mkdir, sys_mkdir, Full),
    (libc::SYS_mkdirat, sys_mkdirat, Full),
    (libc::SYS_rmdir, sys_rmdir, Full),
    (libc::SYS_unlink, sys_unlink, Full),
    (libc::SYS_unlinkat, sys_unlinkat, Full),
    (libc::SYS_rename, sys_rename, Full),
    (libc::SYS_renameat, sys_renameat, Full),
    (libc::SYS_renameat2, sys_renameat2, Partial("RENAME_WHITEOUT is not supported")),
    (libc::SYS_symlink, sys_symlink, Full),
    (libc::SYS_symlinkat, sys_symlinkat, Full),
    (libc::SYS_link, sys_link, Full),
    (libc::SYS_linkat, sys_linkat, Full),
    (libc::SYS_mknod, sys_mknod, Partial("device nodes cannot be created")),
    (libc::SYS_mknodat, sys_mknodat, Partial("device nodes cannot be created")),
    (libc::SYS_chdir, sys_chdir, Full),
    (libc::SYS_fchdir, sys_fchdir, Full),
    (libc::SYS_getcwd, sys_getcwd, Full),
    (libc::SYS_umask, sys_umask, Full),
    (libc::SYS_chmod, sys_chmod, Full),
    (libc::SYS_fchmod, sys_fchmod, Full),
    (libc::SYS_fchmodat, sys_fchmodat, Full),
    (libc::SYS_fchmodat2, sys_fchmodat2, Full),
    (libc::SYS_chown, sys_chown, Full),
    (libc::SYS_lchown, sys_lchown, Full),
    (libc::SYS_fchown, sys_fchown, Full),
    (libc::SYS_fchownat, sys_fchownat, Full),
    (libc::SYS_utimensat, sys_utimensat, Full),
    (libc::SYS_utimes, sys_utimes, Full),
    (libc::SYS_utime, sys_utime, Full),
];

fn u64_of(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn getdents(task: &Task, fd: u64, addr: u64, size: u64, wide: bool) -> SysResult {
    let f = args::file(task, fd)?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    if !f.dentry.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let cap = usize::try_from(args::uint(size)).map_err(|_| Errno::EINVAL)?;
    let parent = args::with_walker(task, |w| w.parent_of(&f.dentry));
    let parent_ino = parent.node.stat()?.ino;
    let out = std::cell::RefCell::new(Encoder::new());
    let any = std::cell::Cell::new(false);
    let too_small = std::cell::Cell::new(false);
    f.read_dir(
        parent_ino,
        |e, next| {
            let mut out = out.borrow_mut();
            let name_len = e.name.len() + 1;
            let reclen = if wide { (19 + name_len + 7) & !7 } else { (18 + name_len + 1 + 7) & !7 };
            if out.len() + reclen > cap {
                too_small.set(!any.get());
                return false;
            }
            let start = out.len();
            let reclen16 = u16::try_from(reclen).unwrap_or(0);
            if wide {
                out.u64(e.ino).u64(next).u16(reclen16).u8(e.kind).bytes(&e.name).u8(0);
            } else {
                out.u64(e.ino).u64(next).u16(reclen16).bytes(&e.name).u8(0);
                let pad = reclen - (out.len() - start) - 1;
                out.zeros(pad);
                out.u8(e.kind);
            }
            let pad = reclen - (out.len() - start);
            out.zeros(pad);
            any.set(true);
            true
        },
        || {
            if too_small.get() {
                return Err(Errno::EINVAL);
            }
            let out = out.borrow();
            task.thread.mm().copy_out(addr, out.as_bytes())?;
            Ok(u64_of(out.len()))
        },
    )
}

fn sys_getdents64(task: &mut Task, a: [u64; 6]) -> SysResult {
    getdents(task, a[0], a[1], a[2], true)
}

fn sys_getdents(task: &mut Task, a: [u64; 6]) -> SysResult {
    getdents(task, a[0], a[1], a[2], false)
}

/// A new node of `mode`, before the umask (which the directory's default
/// ACL, if any, replaces).
fn new_node(task: &Task, mode: u32) -> NewNode {
    let creds = task.thread.creds();
    NewNode { mode, uid: creds.fsuid, gid: creds.fsgid }
}

fn mkdir(task: &Task, dirfd: u64, path_addr: u64, mode: u64) -> SysResult {
    let path = args::path(task, path_addr)?;
    let new = new_node(task, args::uint(mode) & 0o7777);
    let at = args::dirfd(task, dirfd);
    let umask = task.thread.fs().umask();
    args::with_walker(task, |w| names::mkdir_masked_at(w, at, &path, new, umask))?;
    Ok(0)
}

fn sys_mkdir(task: &mut Task, a: [u64; 6]) -> SysResult {
    mkdir(task, AT_FDCWD_ARG, a[0], a[1])
}

fn sys_mkdirat(task: &mut Task, a: [u64; 6]) -> SysResult {
    mkdir(task, a[0], a[1], a[2])
}

fn mknod(task: &Task, dirfd: u64, path_addr: u64, mode: u64, dev: u64) -> SysResult {
    let mode = args::uint(mode);
    let kind = match mode & S_IFMT {
        0 => S_IFREG,
        k @ (S_IFREG | S_IFIFO | S_IFSOCK) => k,
        S_IFDIR => return Err(Errno::EINVAL),
        _ => return Err(Errno::EPERM),
    };
    let path = args::path(task, path_addr)?;
    let mut new = new_node(task, mode & 0o7777);
    new.mode |= kind;
    let at = args::dirfd(task, dirfd);
    let umask = task.thread.fs().umask();
    args::with_walker(task, |w| names::mknod_masked_at(w, at, &path, new, dev, umask))?;
    Ok(0)
}

fn sys_mknod(task: &mut Task, a: [u64; 6]) -> SysResult {
    mknod(task, AT_FDCWD_ARG, a[0], a[1], a[2])
}

fn sys_mknodat(task: &mut Task, a: [u64; 6]) -> SysResult {
    mknod(task, a[0], a[1], a[2], a[3])
}

fn remove(task: &Task, dirfd: u64, path_addr: u64, dir: bool) -> SysResult {
    let path = args::path(task, path_addr)?;
    let at = args::dirfd(task, dirfd);
    let unlink = |parent: &Arc<Dentry>, name: &[u8]| super::audit_files::unlink(task, parent, name);
    args::with_walker(task, |w| names::remove_at_noting(w, at, &path, dir, &unlink))?;
    Ok(0)
}

fn sys_rmdir(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, AT_FDCWD_ARG, a[0], true)
}

fn sys_unlink(task: &mut Task, a: [u64; 6]) -> SysResult {
    remove(task, AT_FDCWD_ARG, a[0], false)
}

fn sys_unlinkat(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[2] & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    remove(task, a[0], a[1], a[2] & AT_REMOVEDIR != 0)
}

fn rename(task: &Task, olddirfd: u64, old_addr: u64, newdirfd: u64, new_addr: u64, flags: u64) -> SysResult {
    let flags = u32::try_from(flags).map_err(|_| Errno::EINVAL)?;
    rename::check_flags(flags)?;
    let old_path = args::path(task, old_addr)?;
    let new_path = args::path(task, new_addr)?;
    super::audit_files::rename(task, (olddirfd, &old_path), (newdirfd, &new_path))?;
    let old = (args::dirfd(task, olddirfd), old_path.as_slice());
    let new = (args::dirfd(task, newdirfd), new_path.as_slice());
    args::with_walker(task, |w| names::rename_at(w, old, new, flags))?;
    Ok(0)
}

fn sys_rename(task: &mut Task, a: [u64; 6]) -> SysResult {
    rename(task, AT_FDCWD_ARG, a[0], AT_FDCWD_ARG, a[1], 0)
}

fn sys_renameat(task: &mut Task, a: [u64; 6]) -> SysResult {
    rename(task, a[0], a[1], a[2], a[3], 0)
}

fn sys_renameat2(task: &mut Task, a: [u64; 6]) -> SysResult {
    rename(task, a[0], a[1], a[2], a[3], a[4])
}

fn symlink(task: &Task, target_addr: u64, dirfd: u64, path_addr: u64) -> SysResult {
    let target = args::path(task, target_addr)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let path = args::path(task, path_addr)?;
    let creds = task.thread.creds();
    let new = NewNode { mode: 0o777, uid: creds.fsuid, gid: creds.fsgid };
    super::audit_files::symlink(task, &target, dirfd, &path)?;
    let at = args::dirfd(task, dirfd);
    args::with_walker(task, |w| names::symlink_at(w, &target, at, &path, new))?;
    Ok(0)
}

fn sys_symlink(task: &mut Task, a: [u64; 6]) -> SysResult {
    symlink(task, a[0], AT_FDCWD_ARG, a[1])
}

fn sys_symlinkat(task: &mut Task, a: [u64; 6]) -> SysResult {
    symlink(task, a[0], a[1], a[2])
}

fn link(task: &Task, olddirfd: u64, old_addr: u64, newdirfd: u64, new_addr: u64, flags: u64) -> SysResult {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let old_path = args::path(task, old_addr)?;
    // Naming a file by descriptor alone (a "flink") needs
    // CAP_DAC_READ_SEARCH, so that not everyone handed a descriptor can
    // give its file a name: ENOENT without, as linkat(2).
    if flags & AT_EMPTY_PATH != 0 && old_path.is_empty() && !task.thread.creds().capable(caps::CAP_DAC_READ_SEARCH) {
        return Err(Errno::ENOENT);
    }
    let follow = flags & AT_SYMLINK_FOLLOW != 0;
    let src = args::resolve_at(task, olddirfd, &old_path, follow, flags & AT_EMPTY_PATH != 0)?;
    let new_path = args::path(task, new_addr)?;
    super::audit_files::link(task, &src, newdirfd, &new_path)?;
    let at = args::dirfd(task, newdirfd);
    args::with_walker(task, |w| names::link_at(w, &src, at, &new_path))?;
    Ok(0)
}

fn sys_link(task: &mut Task, a: [u64; 6]) -> SysResult {
    link(task, AT_FDCWD_ARG, a[0], AT_FDCWD_ARG, a[1], 0)
}

fn sys_linkat(task: &mut Task, a: [u64; 6]) -> SysResult {
    link(task, a[0], a[1], a[2], a[3], a[4])
}

fn set_cwd(task: &Task, d: Arc<Dentry>) -> SysResult {
    let st = d.node.stat()?;
    if st.mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    perm::check(&task.thread.creds(), &st, MAY_EXEC)?;
    task.thread.fs().set_cwd(d);
    Ok(0)
}

fn sys_chdir(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    set_cwd(task, d)
}

fn sys_fchdir(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    set_cwd(task, f.dentry.clone())
}

fn sys_getcwd(task: &mut Task, a: [u64; 6]) -> SysResult {
    let fs = task.thread.fs();
    let (cwd, root) = (fs.cwd(), fs.root());
    // A working directory outside the root (left there by chroot) is
    // spelled from the namespace's root after "(unreachable)", as Linux
    // does.
    let mut path = if cwd.is_under(&root) { Vec::new() } else { b"(unreachable)".to_vec() };
    path.extend_from_slice(&cwd.path_from(&root));
    path.push(0);
    // Linux builds the path in one page: a longer one is ENAMETOOLONG
    // whatever the buffer's size.
    if path.len() > PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let size = usize::try_from(a[1]).unwrap_or(usize::MAX);
    if path.len() > size {
        return Err(Errno::ERANGE);
    }
    task.thread.mm().copy_out(a[0], &path)?;
    Ok(u64_of(path.len()))
}

fn sys_umask(task: &mut Task, a: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.fs().swap_umask(args::uint(a[0]))))
}

/// Only the owner (or a holder of CAP_FOWNER) may change a node's mode or
/// times.
fn must_own(task: &Task, d: &Dentry) -> Result<(), Errno> {
    let creds = task.thread.creds();
    if creds.capable(caps::CAP_FOWNER) || creds.fsuid == d.node.stat()?.uid {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

fn chmod(task: &Task, d: &Arc<Dentry>, mode: u64) -> SysResult {
    perm::mount_writable(d)?;
    must_own(task, d)?;
    let mut mode = args::uint(mode) & 0o7777;
    let creds = task.thread.creds();
    // Non-members lose the set-group-id bit unless CAP_FSETID, as Linux.
    if !creds.capable(caps::CAP_FSETID) && !creds.in_group(d.node.stat()?.gid) {
        mode &= !0o2000;
    }
    super::audit_files::chmod(task, d, mode)?;
    d.node.setattr(&SetAttr { mode: Some(mode), ..SetAttr::default() })?;
    notify::file_event(d, notify::IN_ATTRIB);
    Ok(0)
}

fn sys_chmod(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    chmod(task, &d, a[1])
}

fn sys_fchmod(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    chmod(task, &f.dentry, a[1])
}

fn sys_fchmodat(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[1])?;
    let d = args::resolve_at(task, a[0], &path, true, false)?;
    chmod(task, &d, a[2])
}

fn sys_fchmodat2(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = if a[3] & AT_EMPTY_PATH != 0 && a[1] == 0 { Vec::new() } else { args::path(task, a[1])? };
    let d = args::resolve_at_flags(task, a[0], &path, a[3])?;
    if a[3] & AT_SYMLINK_NOFOLLOW != 0 && d.is_symlink() {
        return Err(Errno::EOPNOTSUPP);
    }
    chmod(task, &d, a[2])
}

fn chown(task: &Task, d: &Arc<Dentry>, uid: u64, gid: u64) -> SysResult {
    perm::mount_writable(d)?;
    let uid = args::uint(uid);
    let gid = args::uint(gid);
    let st = d.node.stat()?;
    let creds = task.thread.creds();
    let new_uid = (uid != u32::MAX).then_some(uid);
    let new_gid = (gid != u32::MAX).then_some(gid);
    if !creds.capable(caps::CAP_CHOWN) {
        let uid_ok = new_uid.is_none_or(|u| u == st.uid);
        let gid_ok = new_gid.is_none_or(|g| creds.fsuid == st.uid && creds.in_group(g));
        if !uid_ok || !gid_ok {
            return Err(Errno::EPERM);
        }
    }
    super::audit_files::chown(task, d, new_uid, new_gid)?;
    d.node.setattr(&SetAttr { uid: new_uid, gid: new_gid, ..SetAttr::default() })?;
    if new_uid.is_some() || new_gid.is_some() {
        notify::file_event(d, notify::IN_ATTRIB);
    }
    Ok(0)
}

fn sys_chown(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    chown(task, &d, a[1], a[2])
}

fn sys_lchown(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, false, false)?;
    chown(task, &d, a[1], a[2])
}

fn sys_fchown(task: &mut Task, a: [u64; 6]) -> SysResult {
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    chown(task, &f.dentry, a[1], a[2])
}

fn sys_fchownat(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[4] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = args::path(task, a[1])?;
    let d = args::resolve_at_flags(task, a[0], &path, a[4])?;
    chown(task, &d, a[2], a[3])
}

const UTIME_NOW: i64 = (1 << 30) - 1;
const UTIME_OMIT: i64 = (1 << 30) - 2;

/// Applies new access and modification times. Setting explicit times needs
/// ownership; setting both to "now" needs ownership or write permission.
fn set_times(task: &Task, d: &Arc<Dentry>, atime: Option<SetTime>, mtime: Option<SetTime>) -> SysResult {
    perm::mount_writable(d)?;
    if atime.is_none() && mtime.is_none() {
        return Ok(0);
    }
    let explicit = matches!(atime, Some(SetTime::At(_))) || matches!(mtime, Some(SetTime::At(_)));
    if explicit {
        must_own(task, d)?;
    } else if must_own(task, d).is_err() {
        perm::check(&task.thread.creds(), &d.node.stat()?, MAY_WRITE).map_err(|_| Errno::EACCES)?;
    }
    let event = match (atime.is_some(), mtime.is_some()) {
        (true, true) => notify::IN_ATTRIB,
        (true, false) => notify::IN_ACCESS,
        _ => notify::IN_MODIFY,
    };
    d.node.setattr(&SetAttr { atime, mtime, ..SetAttr::default() })?;
    notify::file_event(d, event);
    Ok(0)
}

fn timespec_arg(sec: i64, nsec: i64) -> Result<Option<SetTime>, Errno> {
    match nsec {
        UTIME_NOW => Ok(Some(SetTime::Now)),
        UTIME_OMIT => Ok(None),
        0..=999_999_999 => Ok(Some(SetTime::At(TimeSpec { sec, nsec }))),
        _ => Err(Errno::EINVAL),
    }
}

fn read_i64s<const N: usize>(task: &Task, addr: u64) -> Result<[i64; N], Errno> {
    let mut raw = vec![0u8; N * 8];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut out = [0i64; N];
    for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
        *o = i64::from_le_bytes(c.try_into().map_err(|_| Errno::EFAULT)?);
    }
    Ok(out)
}

fn sys_utimensat(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let (atime, mtime) = if a[2] == 0 {
        (Some(SetTime::Now), Some(SetTime::Now))
    } else {
        let t = read_i64s::<4>(task, a[2])?;
        (timespec_arg(t[0], t[1])?, timespec_arg(t[2], t[3])?)
    };
    let d = if a[1] == 0 {
        // A null path names dirfd itself.
        args::file(task, a[0])?.dentry.clone()
    } else {
        let path = args::path(task, a[1])?;
        args::resolve_at_flags(task, a[0], &path, a[3])?
    };
    set_times(task, &d, atime, mtime)
}

fn sys_utimes(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    let (atime, mtime) = if a[1] == 0 {
        (Some(SetTime::Now), Some(SetTime::Now))
    } else {
        let t = read_i64s::<4>(task, a[1])?;
        if !(0..1_000_000).contains(&t[1]) || !(0..1_000_000).contains(&t[3]) {
            return Err(Errno::EINVAL);
        }
        (
            Some(SetTime::At(TimeSpec { sec: t[0], nsec: t[1] * 1000 })),
            Some(SetTime::At(TimeSpec { sec: t[2], nsec: t[3] * 1000 })),
        )
    };
    set_times(task, &d, atime, mtime)
}

fn sys_utime(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    let (atime, mtime) = if a[1] == 0 {
        (Some(SetTime::Now), Some(SetTime::Now))
    } else {
        let t = read_i64s::<2>(task, a[1])?;
        (Some(SetTime::At(TimeSpec { sec: t[0], nsec: 0 })), Some(SetTime::At(TimeSpec { sec: t[1], nsec: 0 })))
    };
    set_times(task, &d, atime, mtime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utime_special_values() {
        assert_eq!(timespec_arg(5, UTIME_NOW), Ok(Some(SetTime::Now)));
        assert_eq!(timespec_arg(5, UTIME_OMIT), Ok(None));
        assert_eq!(timespec_arg(5, 7), Ok(Some(SetTime::At(TimeSpec { sec: 5, nsec: 7 }))));
        assert_eq!(timespec_arg(5, 1_000_000_000), Err(Errno::EINVAL));
        assert_eq!(timespec_arg(5, -1), Err(Errno::EINVAL));
    }
}
