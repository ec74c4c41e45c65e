//! Permission checks of file modes against a task's credentials.

use super::{acl, Dentry, Node, Stat, S_IFDIR, S_IFMT};
use crate::abi::Errno;
use crate::auth::{caps, Credentials};

pub(crate) const MAY_EXEC: u32 = 1;
pub(crate) const MAY_WRITE: u32 = 2;
pub(crate) const MAY_READ: u32 = 4;

/// Linux's mode_strip_sgid: a non-directory made in a set-group-ID
/// directory `dir` (which gives it the directory's group) loses a
/// requested S_ISGID that is group-executable unless the caller is in
/// that group or has CAP_FSETID, so nobody makes a set-group-ID program
/// of a group they are not in. `mode` may carry the node's type.
pub(crate) fn strip_sgid(creds: &Credentials, dir: &Stat, mode: u32) -> u32 {
    let sgid_exec = libc::S_ISGID | libc::S_IXGRP;
    if mode & sgid_exec != sgid_exec || mode & S_IFMT == S_IFDIR || dir.mode & libc::S_ISGID == 0 {
        return mode;
    }
    if creds.in_group(dir.gid) || creds.capable(caps::CAP_FSETID) {
        return mode;
    }
    mode & !libc::S_ISGID
}

/// EROFS when `d`'s mount is read-only now (a remount since `d` was
/// reached counts): nothing on it may change.
pub(crate) fn mount_writable(d: &Dentry) -> Result<(), Errno> {
    if d.mount.read_only() {
        return Err(Errno::EROFS);
    }
    Ok(())
}

/// Whether a node of type `kind` (S_IFMT bits) stays writable on a
/// read-only mount: a FIFO, socket or device is not the filesystem's
/// data (Linux's `special_file`).
pub(crate) fn special_file(kind: u32) -> bool {
    matches!(kind, super::S_IFIFO | super::S_IFSOCK | super::S_IFCHR | super::S_IFBLK)
}

/// Checks `want` (MAY_* bits) against a node's owner and mode, as
/// `generic_permission` does: the owner class, else the group class, else
/// other; then `CAP_DAC_OVERRIDE` passes everything but executing a file
/// with no execute bit at all, and `CAP_DAC_READ_SEARCH` reading files
/// and reading or searching directories.
pub(crate) fn check(creds: &Credentials, st: &Stat, want: u32) -> Result<(), Errno> {
    check_with(creds, st, want, || None)
}

/// `check` for `node` (whose stat is `st`), honoring its POSIX access ACL
/// as Linux's `acl_permission_check`: for a caller that is not the owner,
/// when the mode's group class has any bit, the ACL decides.
pub(crate) fn check_node(creds: &Credentials, node: &dyn Node, st: &Stat, want: u32) -> Result<(), Errno> {
    check_with(creds, st, want, || acl::access(node, st))
}

fn check_with(creds: &Credentials, st: &Stat, want: u32, acl: impl FnOnce() -> Option<acl::Acl>) -> Result<(), Errno> {
    let mode = st.mode;
    let is_dir = mode & S_IFMT == S_IFDIR;
    let allowed = if creds.fsuid != st.uid && mode & 0o070 != 0 {
        acl().map_or_else(|| class_allows(creds, st, want), |a| a.permits(creds, st, want))
    } else {
        class_allows(creds, st, want)
    };
    if allowed {
        return Ok(());
    }
    if creds.capable(caps::CAP_DAC_OVERRIDE) && (want & MAY_EXEC == 0 || is_dir || mode & 0o111 != 0) {
        return Ok(());
    }
    let read_search = if is_dir { MAY_READ | MAY_EXEC } else { MAY_READ };
    if creds.capable(caps::CAP_DAC_READ_SEARCH) && want & !read_search == 0 {
        return Ok(());
    }
    Err(Errno::EACCES)
}

/// Whether the mode's class for `creds` grants all of `want`.
fn class_allows(creds: &Credentials, st: &Stat, want: u32) -> bool {
    let mode = st.mode;
    let class = if creds.fsuid == st.uid {
        (mode >> 6) & 7
    } else if creds.in_group(st.gid) {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    class & want == want
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(mode: u32, uid: u32, gid: u32) -> Stat {
        Stat { mode, uid, gid, ..Stat::default() }
    }

    #[test]
    fn owner_group_other_classes() {
        let c = Credentials::new(1000, 1000);
        assert!(check(&c, &st(0o100600, 1000, 0), MAY_READ | MAY_WRITE).is_ok());
        assert_eq!(check(&c, &st(0o100060, 1000, 1000), MAY_READ), Err(Errno::EACCES));
        assert!(check(&c, &st(0o100060, 0, 1000), MAY_READ).is_ok());
        assert!(check(&c, &st(0o100004, 0, 0), MAY_READ).is_ok());
        assert_eq!(check(&c, &st(0o100004, 0, 0), MAY_WRITE), Err(Errno::EACCES));
    }

    #[test]
    fn root_overrides_but_needs_an_exec_bit() {
        let c = Credentials::new(0, 0);
        assert!(check(&c, &st(0o100000, 5, 5), MAY_READ | MAY_WRITE).is_ok());
        assert_eq!(check(&c, &st(0o100644, 5, 5), MAY_EXEC), Err(Errno::EACCES));
        assert!(check(&c, &st(0o100744, 5, 5), MAY_EXEC).is_ok());
        assert!(check(&c, &st(0o040000, 5, 5), MAY_EXEC).is_ok());
    }

    #[test]
    fn capabilities_not_the_uid_decide() {
        let mut root = Credentials::new(0, 0);
        root.caps.effective = caps::bit(caps::CAP_DAC_READ_SEARCH);
        let secret = st(0o100600, 5, 5);
        assert!(check(&root, &secret, MAY_READ).is_ok(), "CAP_DAC_READ_SEARCH reads");
        assert_eq!(check(&root, &secret, MAY_WRITE), Err(Errno::EACCES), "but does not write");
        assert!(check(&root, &st(0o040700, 5, 5), MAY_READ | MAY_EXEC).is_ok(), "and searches directories");
        root.caps.effective = 0;
        assert_eq!(check(&root, &secret, MAY_READ), Err(Errno::EACCES), "root without capabilities");
        let mut user = Credentials::new(1000, 1000);
        user.caps.effective = caps::bit(caps::CAP_DAC_OVERRIDE);
        assert!(check(&user, &secret, MAY_READ | MAY_WRITE).is_ok());
    }
}
