//! System calls: `capget` and `capset`. These decode the versioned header
//! and the `__user_cap_data_struct` words; what a task may set is
//! `auth::caps`' rule.

use super::common::{find_thread, put_u32, read_array};
use super::{Entries, Support};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::auth::caps::CapSets;
use crate::kernel::Task;

pub(super) const ENTRIES: Entries =
    &[(libc::SYS_capget, sys_capget, Support::Full), (libc::SYS_capset, sys_capset, Support::Full)];

const CAP_VERSION_1: u32 = 0x1998_0330;
const CAP_VERSION_2: u32 = 0x2007_1026;
const CAP_VERSION_3: u32 = 0x2008_0522;

/// The number of `__user_cap_data_struct`s a header version uses, or
/// `None` for an unknown version.
fn cap_words(version: u32) -> Option<usize> {
    match version {
        CAP_VERSION_1 => Some(1),
        CAP_VERSION_2 | CAP_VERSION_3 => Some(2),
        _ => None,
    }
}

fn encode_caps(sets: CapSets, words: usize) -> Vec<u8> {
    let mut e = Encoder::with_capacity(words * 12);
    for w in 0..words {
        for set in sets {
            e.u32(u32::try_from((set >> (32 * w)) & 0xffff_ffff).unwrap_or(0));
        }
    }
    e.finish()
}

fn decode_caps(buf: &[u8], words: usize) -> CapSets {
    let mut d = Decoder::new(buf);
    let mut sets = [0u64; 3];
    for w in 0..words {
        for set in &mut sets {
            *set |= u64::from(d.u32()) << (32 * w);
        }
    }
    sets
}

/// Validates the header's version; an unknown one is replaced by the
/// kernel's and rejected.
fn cap_header(task: &Task, hdr: u64) -> Result<usize, Errno> {
    let version = u32::from_le_bytes(read_array(task, hdr)?);
    match cap_words(version) {
        Some(w) => Ok(w),
        None => {
            put_u32(task, hdr, CAP_VERSION_3)?;
            Err(Errno::EINVAL)
        }
    }
}

fn cap_header_pid(task: &Task, hdr: u64) -> Result<i32, Errno> {
    let pid_addr = hdr.checked_add(4).ok_or(Errno::EFAULT)?;
    Ok(i32::from_le_bytes(read_array(task, pid_addr)?))
}

fn sys_capget(task: &mut Task, a: [u64; 6]) -> SysResult {
    let words = match cap_header(task, a[0]) {
        Err(Errno::EINVAL) if a[1] == 0 => return Ok(0),
        Err(e) => return Err(e),
        Ok(_) if a[1] == 0 => return Ok(0),
        Ok(w) => w,
    };
    let pid = cap_header_pid(task, a[0])?;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let target = find_thread(task, pid)?;
    let sets = target.creds().caps.sets();
    task.thread.mm().copy_out(a[1], &encode_caps(sets, words))?;
    Ok(0)
}

fn sys_capset(task: &mut Task, a: [u64; 6]) -> SysResult {
    let words = cap_header(task, a[0])?;
    let pid = cap_header_pid(task, a[0])?;
    if pid != 0 && pid != task.thread.tid() {
        return Err(Errno::EPERM);
    }
    let mut buf = vec![0u8; words * 12];
    task.thread.mm().copy_in(a[1], &mut buf)?;
    task.thread.update_creds(|c| c.caps.capset(decode_caps(&buf, words)))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::caps::ALL;

    #[test]
    fn capability_data_structs() {
        assert_eq!(cap_words(CAP_VERSION_1), Some(1));
        assert_eq!(cap_words(CAP_VERSION_3), Some(2));
        assert_eq!(cap_words(0), None);
        let root = [ALL, ALL, 0];
        let b = encode_caps(root, 2);
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..4], &[0xff; 4]);
        assert_eq!(u32::from_le_bytes([b[12], b[13], b[14], b[15]]), 0x1ff);
        assert_eq!(decode_caps(&b, 2), root);
        assert_eq!(encode_caps(root, 1).len(), 12, "version 1 carries the low 32 capabilities");
    }
}
