//! System calls: user and group ids and the supplementary groups. The
//! rules for changing them (credentials(7), and the capability effects of
//! capabilities(7)) are `auth::creds`'; these decode the arguments, apply
//! the rules to the caller's credentials and copy results out.

use super::args::{int, uint};
use super::common::put_three;
use super::{Entries, Support};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::auth::creds::{setid_rule, setreid_rule, setresid_rule, IdKind, Ids};
use crate::kernel::Task;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_getuid, sys_getuid, Support::Full),
    (libc::SYS_geteuid, sys_geteuid, Support::Full),
    (libc::SYS_getgid, sys_getgid, Support::Full),
    (libc::SYS_getegid, sys_getegid, Support::Full),
    (libc::SYS_getresuid, sys_getresuid, Support::Full),
    (libc::SYS_getresgid, sys_getresgid, Support::Full),
    (libc::SYS_getgroups, sys_getgroups, Support::Full),
    (libc::SYS_setuid, sys_setuid, Support::Full),
    (libc::SYS_setgid, sys_setgid, Support::Full),
    (libc::SYS_setreuid, sys_setreuid, Support::Full),
    (libc::SYS_setregid, sys_setregid, Support::Full),
    (libc::SYS_setresuid, sys_setresuid, Support::Full),
    (libc::SYS_setresgid, sys_setresgid, Support::Full),
    (libc::SYS_setfsuid, sys_setfsuid, Support::Full),
    (libc::SYS_setfsgid, sys_setfsgid, Support::Full),
    (libc::SYS_setgroups, sys_setgroups, Support::Full),
];

/// `NGROUPS_MAX`.
const NGROUPS_MAX: u32 = 65536;

fn sys_getuid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds().uid))
}

fn sys_geteuid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds().euid))
}

fn sys_getgid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds().gid))
}

fn sys_getegid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds().egid))
}

/// Applies `rule` to the caller's ids of kind `k`.
fn change_ids(task: &Task, k: IdKind, rule: impl FnOnce(Ids, bool) -> Result<Ids, Errno>) -> SysResult {
    let keep_caps = task.thread.attrs().lock().keepcaps;
    task.thread.update_creds(|c| c.change_ids(k, keep_caps, rule))?;
    Ok(0)
}

fn sys_setuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::User, |old, p| setid_rule(old, uint(a[0]), p))
}

fn sys_setgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::Group, |old, p| setid_rule(old, uint(a[0]), p))
}

fn sys_setreuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::User, |old, p| setreid_rule(old, uint(a[0]), uint(a[1]), p))
}

fn sys_setregid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::Group, |old, p| setreid_rule(old, uint(a[0]), uint(a[1]), p))
}

fn sys_setresuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::User, |old, p| setresid_rule(old, uint(a[0]), uint(a[1]), uint(a[2]), p))
}

fn sys_setresgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, IdKind::Group, |old, p| setresid_rule(old, uint(a[0]), uint(a[1]), uint(a[2]), p))
}

/// `setfsuid`/`setfsgid` return the previous filesystem id, always.
fn sys_setfsuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.update_creds(|c| c.change_fsid(IdKind::User, uint(a[0])))))
}

fn sys_setfsgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.update_creds(|c| c.change_fsid(IdKind::Group, uint(a[0])))))
}

fn sys_getresuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let [r, e, s, _] = task.thread.creds().ids(IdKind::User);
    put_three(task, [a[0], a[1], a[2]], [r, e, s])
}

fn sys_getresgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let [r, e, s, _] = task.thread.creds().ids(IdKind::Group);
    put_three(task, [a[0], a[1], a[2]], [r, e, s])
}

fn sys_getgroups(task: &mut Task, a: [u64; 6]) -> SysResult {
    let size = usize::try_from(int(a[0])).map_err(|_| Errno::EINVAL)?;
    let groups = task.thread.creds().groups.clone();
    if size != 0 {
        if groups.len() > size {
            return Err(Errno::EINVAL);
        }
        let mut e = Encoder::with_capacity(groups.len() * 4);
        for g in &groups {
            e.u32(*g);
        }
        task.thread.mm().copy_out(a[1], e.as_bytes())?;
    }
    Ok(groups.len() as u64)
}

fn sys_setgroups(task: &mut Task, a: [u64; 6]) -> SysResult {
    if !task.thread.creds().may_set_groups() {
        return Err(Errno::EPERM);
    }
    let n = uint(a[0]);
    if n > NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    let mut buf = vec![0u8; n as usize * 4];
    task.thread.mm().copy_in(a[1], &mut buf)?;
    task.thread.update_creds(|c| c.set_groups(decode_groups(&buf)))?;
    Ok(0)
}

/// The guest's `gid_t` array.
fn decode_groups(buf: &[u8]) -> Vec<u32> {
    let mut d = Decoder::new(buf);
    (0..buf.len() / 4).map(|_| d.u32()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_decode_in_order() {
        let mut e = Encoder::new();
        e.u32(30).u32(10).u32(u32::MAX);
        assert_eq!(decode_groups(e.as_bytes()), vec![30, 10, u32::MAX]);
    }
}
