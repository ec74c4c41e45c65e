//! System calls: `prctl`, the process and thread attributes Linux keeps
//! outside any other call: the thread's name, the parent-death signal,
//! dumpability, keep-caps, no-new-privs, the bounding and ambient
//! capability sets (their rules are `auth::caps`') and child subreapers;
//! and `personality`, the thread's execution domain.

use super::args::int;
use super::common::put_i32;
use super::{Entries, Support};
use crate::abi::layout::Encoder;
use crate::abi::{Errno, SysResult};
use crate::auth::caps::valid_bit;
use crate::kernel::Task;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_prctl,
        sys_prctl,
        Support::Partial(
            "supports SET/GET_NAME, SET/GET_PDEATHSIG (sent when the parent process exits, not its forking \
             thread), SET/GET_DUMPABLE, SET/GET_KEEPCAPS, SET/GET_NO_NEW_PRIVS, CAPBSET_READ/DROP, CAP_AMBIENT, \
             SET/GET_CHILD_SUBREAPER and SET/GET_SECCOMP; \
             other options return EINVAL",
        ),
    ),
    (
        libc::SYS_personality,
        sys_personality,
        Support::Partial(
            "the persona is kept per thread, inherited and kept across exec (less READ_IMPLIES_EXEC); its flags \
             change nothing else (the sandbox's layout is not randomized anyway)",
        ),
    ),
];

/// personality(persona): sets the calling thread's persona (unless it is
/// 0xffffffff, a query) and returns the previous one. Linux takes any
/// value.
fn sys_personality(task: &mut Task, a: [u64; 6]) -> SysResult {
    let persona = super::args::uint(a[0]);
    let mut attrs = task.thread.attrs().lock();
    let old = attrs.personality;
    if persona != u32::MAX {
        attrs.personality = persona;
    }
    Ok(u64::from(old))
}

const PR_SET_PDEATHSIG: i32 = 1;
const PR_GET_PDEATHSIG: i32 = 2;
const PR_GET_DUMPABLE: i32 = 3;
const PR_SET_DUMPABLE: i32 = 4;
const PR_GET_KEEPCAPS: i32 = 7;
const PR_SET_KEEPCAPS: i32 = 8;
const PR_SET_NAME: i32 = 15;
const PR_GET_NAME: i32 = 16;
const PR_GET_SECCOMP: i32 = 21;
const PR_SET_SECCOMP: i32 = 22;
const PR_CAPBSET_READ: i32 = 23;
const PR_CAPBSET_DROP: i32 = 24;
const PR_CAP_AMBIENT: i32 = 47;
const PR_CAP_AMBIENT_IS_SET: u64 = 1;
const PR_CAP_AMBIENT_RAISE: u64 = 2;
const PR_CAP_AMBIENT_LOWER: u64 = 3;
const PR_CAP_AMBIENT_CLEAR_ALL: u64 = 4;
const PR_SET_CHILD_SUBREAPER: i32 = 36;
const PR_GET_CHILD_SUBREAPER: i32 = 37;
const PR_SET_NO_NEW_PRIVS: i32 = 38;
const PR_GET_NO_NEW_PRIVS: i32 = 39;
/// `TASK_COMM_LEN`.
const COMM_LEN: usize = 16;

/// Reads a thread name as `PR_SET_NAME` does: up to 15 bytes or a NUL.
fn read_comm(task: &Task, addr: u64) -> Result<Vec<u8>, Errno> {
    let mm = task.thread.mm();
    let mut name = Vec::with_capacity(COMM_LEN - 1);
    let mut at = addr;
    while name.len() < COMM_LEN - 1 {
        let mut b = [0u8];
        mm.copy_in(at, &mut b)?;
        if b[0] == 0 {
            break;
        }
        name.push(b[0]);
        at = at.checked_add(1).ok_or(Errno::EFAULT)?;
    }
    Ok(name)
}

fn sys_prctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (arg2, rest) = (a[1], [a[2], a[3], a[4]]);
    match int(a[0]) {
        PR_SET_PDEATHSIG => {
            let sig = i32::try_from(arg2).ok().filter(|s| *s <= 64).ok_or(Errno::EINVAL)?;
            task.thread.attrs().lock().pdeathsig = sig;
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let sig = task.thread.attrs().lock().pdeathsig;
            put_i32(task, arg2, sig)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(u64::from(task.thread.group().dumpable())),
        PR_SET_DUMPABLE => {
            let d = u8::try_from(arg2).ok().filter(|d| *d <= 1).ok_or(Errno::EINVAL)?;
            task.thread.group().set_dumpable(d);
            Ok(0)
        }
        PR_GET_KEEPCAPS => Ok(u64::from(task.thread.attrs().lock().keepcaps)),
        PR_SET_KEEPCAPS => {
            if arg2 > 1 {
                return Err(Errno::EINVAL);
            }
            task.thread.attrs().lock().keepcaps = arg2 == 1;
            Ok(0)
        }
        PR_SET_NAME => {
            let name = read_comm(task, arg2)?;
            task.thread.set_comm(name);
            Ok(0)
        }
        PR_GET_NAME => {
            let mut e = Encoder::with_capacity(COMM_LEN);
            e.cstr_array(&task.thread.comm(), COMM_LEN);
            task.thread.mm().copy_out(arg2, e.as_bytes())?;
            Ok(0)
        }
        PR_GET_SECCOMP => Ok(u64::from(task.thread.seccomp().mode())),
        PR_SET_SECCOMP => super::seccomp::prctl_set(task, arg2, rest[0]),
        PR_CAPBSET_READ => Ok(u64::from(task.thread.creds().caps.bounding & valid_bit(arg2)? != 0)),
        PR_CAPBSET_DROP => {
            let bit = valid_bit(arg2)?;
            task.thread.update_creds(|c| c.caps.drop_bounding(bit))?;
            Ok(0)
        }
        PR_CAP_AMBIENT => ambient(task, arg2, rest),
        PR_SET_CHILD_SUBREAPER => {
            task.thread.group().set_subreaper(arg2 != 0);
            Ok(0)
        }
        PR_GET_CHILD_SUBREAPER => {
            let v = task.thread.group().process().subreaper;
            put_i32(task, arg2, i32::from(v))?;
            Ok(0)
        }
        PR_SET_NO_NEW_PRIVS => {
            if arg2 != 1 || rest != [0; 3] {
                return Err(Errno::EINVAL);
            }
            task.thread.attrs().lock().no_new_privs = true;
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS => {
            if arg2 != 0 || rest != [0; 3] {
                return Err(Errno::EINVAL);
            }
            Ok(u64::from(task.thread.attrs().lock().no_new_privs))
        }
        option => {
            log::debug!("prctl: unsupported option {option:#x}");
            Err(Errno::EINVAL)
        }
    }
}

/// PR_CAP_AMBIENT: decodes the sub-operation and its capability.
fn ambient(task: &Task, op: u64, [cap, a4, a5]: [u64; 3]) -> SysResult {
    if a4 != 0 || a5 != 0 || (op == PR_CAP_AMBIENT_CLEAR_ALL && cap != 0) {
        return Err(Errno::EINVAL);
    }
    task.thread.update_creds(|c| match op {
        PR_CAP_AMBIENT_CLEAR_ALL => {
            c.caps.ambient = 0;
            Ok(0)
        }
        PR_CAP_AMBIENT_IS_SET => Ok(u64::from(c.caps.ambient & valid_bit(cap)? != 0)),
        PR_CAP_AMBIENT_RAISE => {
            c.caps.raise_ambient(valid_bit(cap)?)?;
            Ok(0)
        }
        PR_CAP_AMBIENT_LOWER => {
            c.caps.ambient &= !valid_bit(cap)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    })
}
