//! System calls: NUMA memory policies — set_mempolicy, get_mempolicy,
//! mbind — for a machine with one node (node 0, the only one online and
//! allowed), checked and reported as Linux does there. Pages are always
//! on node 0, so a policy changes nothing but what is reported.

use super::common::{capable, put_i32};
use super::{Entries, Support::*};
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::auth::caps::CAP_SYS_NICE;
use crate::kernel::Task;
use crate::mm::MemPolicy;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_set_mempolicy, sys_set_mempolicy, Full),
    (libc::SYS_get_mempolicy, sys_get_mempolicy, Full),
    (
        libc::SYS_mbind,
        sys_mbind,
        Partial("a policy is kept per mapping; Linux keeps that of a shared memory mapping with the shared object"),
    ),
];

const MPOL_PREFERRED: u32 = 1;
const MPOL_BIND: u32 = 2;
const MPOL_INTERLEAVE: u32 = 3;
const MPOL_LOCAL: u32 = 4;
const MPOL_PREFERRED_MANY: u32 = 5;
const MPOL_WEIGHTED_INTERLEAVE: u32 = 6;
const MPOL_MAX: u32 = 7;
const MPOL_F_STATIC_NODES: u32 = 1 << 15;
const MPOL_F_RELATIVE_NODES: u32 = 1 << 14;
const MPOL_F_NUMA_BALANCING: u32 = 1 << 13;
const MPOL_MODE_FLAGS: u32 = MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES | MPOL_F_NUMA_BALANCING;
const MPOL_F_NODE: u64 = 1;
const MPOL_F_ADDR: u64 = 2;
const MPOL_F_MEMS_ALLOWED: u64 = 4;
const MPOL_MF_VALID: u64 = 7;
const MPOL_MF_MOVE_ALL: u64 = 4;
/// The node mask's width (the host's CONFIG_NODES_SHIFT of 10).
const MAX_NUMNODES: u64 = 1024;
/// The nodes online and allowed: node 0.
const ONLINE: u64 = 1;

/// A nodemask argument: its first 64 nodes, and whether any node at all
/// is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Nodes {
    low: u64,
    any: bool,
}

/// Linux's `sanitize_mpol_flags`: the mode (an `int`) split into the mode
/// and its flags.
fn sanitize(arg: u64) -> Result<(u32, u32), Errno> {
    let raw = super::args::uint(arg);
    let (mode, flags) = (raw & !MPOL_MODE_FLAGS, raw & MPOL_MODE_FLAGS);
    if mode >= MPOL_MAX {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_F_STATIC_NODES != 0 && flags & MPOL_F_RELATIVE_NODES != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_F_NUMA_BALANCING != 0 && mode != MPOL_BIND && mode != MPOL_PREFERRED_MANY {
        return Err(Errno::EINVAL);
    }
    Ok((mode, flags))
}

/// Linux's `get_nodes`: `maxnode - 1` bits at `addr`; bits past
/// MAX_NUMNODES must be clear.
fn get_nodes(task: &Task, addr: u64, maxnode: u64) -> Result<Nodes, Errno> {
    let mut maxnode = maxnode.wrapping_sub(1);
    if maxnode == 0 || addr == 0 {
        return Ok(Nodes { low: 0, any: false });
    }
    if maxnode > PAGE_SIZE * 8 {
        return Err(Errno::EINVAL);
    }
    let mm = task.thread.mm();
    let word = |index: u64, bits: u64| -> Result<u64, Errno> {
        let mut b = [0u8; 8];
        mm.copy_in(addr + index * 8, &mut b)?;
        let w = u64::from_le_bytes(b);
        Ok(if bits % 64 != 0 { w & ((1 << (bits % 64)) - 1) } else { w })
    };
    while maxnode > MAX_NUMNODES {
        let bits = maxnode.min(64);
        let t = word((maxnode - 1) / 64, bits)?;
        maxnode = if maxnode - bits >= MAX_NUMNODES { maxnode - bits } else { MAX_NUMNODES };
        if t != 0 {
            return Err(Errno::EINVAL);
        }
    }
    let words = maxnode.div_ceil(64);
    let mut nodes = Nodes { low: 0, any: false };
    for i in 0..words {
        let bits = if i + 1 == words { maxnode - i * 64 } else { 64 };
        let w = word(i, bits)?;
        if i == 0 {
            nodes.low = w;
        }
        nodes.any |= w != 0;
    }
    Ok(nodes)
}

/// Linux's `mpol_new` and `mpol_set_nodemask` on a one-node machine: the
/// policy as get_mempolicy reports it.
fn new_policy(mode: u32, flags: u32, nodes: Nodes) -> Result<MemPolicy, Errno> {
    if mode == 0 {
        return if nodes.any { Err(Errno::EINVAL) } else { Ok(MemPolicy::default()) };
    }
    let user_mask = flags & (MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES) != 0;
    let mode = match mode {
        MPOL_PREFERRED if !nodes.any => {
            if user_mask {
                return Err(Errno::EINVAL);
            }
            MPOL_LOCAL
        }
        MPOL_LOCAL if nodes.any || user_mask => return Err(Errno::EINVAL),
        MPOL_LOCAL => MPOL_LOCAL,
        _ if !nodes.any => return Err(Errno::EINVAL),
        m => m,
    };
    if mode == MPOL_LOCAL {
        return Ok(MemPolicy { mode: mode | flags, nodes: 0 });
    }
    // The nodes the policy may use: those asked for that are online, or
    // with MPOL_F_RELATIVE_NODES the asked ones folded onto those online.
    let usable = if flags & MPOL_F_RELATIVE_NODES != 0 { ONLINE } else { nodes.low & ONLINE };
    if usable == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(MemPolicy { mode: mode | flags, nodes: if user_mask { nodes.low } else { usable } })
}

fn sys_set_mempolicy(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (mode, flags) = sanitize(a[0])?;
    let nodes = get_nodes(task, a[1], a[2])?;
    let policy = new_policy(mode, flags, nodes)?;
    task.thread.attrs().lock().mempolicy = policy;
    Ok(0)
}

/// get_mempolicy(2), in Linux's order; `nr_node_ids` is 1.
fn sys_get_mempolicy(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (mode_ptr, nmask, maxnode, addr, flags) = (a[0], a[1], a[2], a[3], a[4]);
    if nmask != 0 && maxnode < 1 {
        return Err(Errno::EINVAL);
    }
    if flags & !(MPOL_F_NODE | MPOL_F_ADDR | MPOL_F_MEMS_ALLOWED) != 0 {
        return Err(Errno::EINVAL);
    }
    let own = task.thread.attrs().lock().mempolicy;
    let (value, nodes) = if flags & MPOL_F_MEMS_ALLOWED != 0 {
        if flags & (MPOL_F_NODE | MPOL_F_ADDR) != 0 {
            return Err(Errno::EINVAL);
        }
        (0, ONLINE)
    } else {
        let policy = if flags & MPOL_F_ADDR != 0 {
            task.thread.mm().policy_at(addr)?
        } else if addr != 0 {
            return Err(Errno::EINVAL);
        } else {
            own
        };
        let value = if flags & MPOL_F_NODE != 0 {
            if flags & MPOL_F_ADDR != 0 {
                // The node of the page at `addr`, faulted in to find it.
                let mut b = [0u8; 1];
                task.thread.mm().copy_in(addr, &mut b)?;
                0
            } else if matches!(own.mode & !MPOL_MODE_FLAGS, MPOL_INTERLEAVE | MPOL_WEIGHTED_INTERLEAVE) {
                // The next node interleaving allocates from.
                0
            } else {
                return Err(Errno::EINVAL);
            }
        } else {
            i32::try_from(policy.mode).map_err(|_| Errno::EINVAL)?
        };
        (value, policy.nodes)
    };
    if mode_ptr != 0 {
        put_i32(task, mode_ptr, value)?;
    }
    if nmask != 0 {
        copy_nodes_out(task, nmask, maxnode, nodes)?;
    }
    Ok(0)
}

/// Linux's `copy_nodes_to_user` with one node id: one word of mask, the
/// rest of a longer one (up to a page) cleared.
fn copy_nodes_out(task: &Task, addr: u64, maxnode: u64, nodes: u64) -> Result<(), Errno> {
    const NBYTES: u64 = 8;
    let mut copy = (maxnode - 1).div_ceil(64) * 8;
    let mm = task.thread.mm();
    if copy > NBYTES {
        if copy > PAGE_SIZE {
            return Err(Errno::EINVAL);
        }
        let zeros = vec![0u8; usize::try_from(copy - NBYTES).map_err(|_| Errno::EINVAL)?];
        mm.copy_out(addr + NBYTES, &zeros)?;
        copy = NBYTES;
    }
    let bytes = nodes.to_le_bytes();
    mm.copy_out(addr, &bytes[..usize::try_from(copy).map_err(|_| Errno::EINVAL)?])
}

/// mbind(2), in Linux's order (`kernel_mbind`, `do_mbind`).
fn sys_mbind(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (start, len, flags) = (a[0], a[1], a[5] & 0xffff_ffff);
    let (mode, mode_flags) = sanitize(a[2])?;
    let nodes = get_nodes(task, a[3], a[4])?;
    if flags & !MPOL_MF_VALID != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MPOL_MF_MOVE_ALL != 0 && !capable(task, CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    if start % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let len = len.wrapping_add(PAGE_SIZE - 1) & !(PAGE_SIZE - 1);
    let end = start.wrapping_add(len);
    if end < start {
        return Err(Errno::EINVAL);
    }
    if end == start {
        return Ok(0);
    }
    let policy = new_policy(mode, mode_flags, nodes)?;
    task.thread.mm().set_policy(start, end, policy)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: Nodes = Nodes { low: 1, any: true };
    const NONE: Nodes = Nodes { low: 0, any: false };

    #[test]
    fn modes_and_flags_are_checked_as_linux() {
        assert_eq!(sanitize(7439), Err(Errno::EINVAL));
        assert_eq!(sanitize(u64::from(MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES)), Err(Errno::EINVAL));
        assert_eq!(sanitize(u64::from(MPOL_INTERLEAVE | MPOL_F_NUMA_BALANCING)), Err(Errno::EINVAL));
        assert_eq!(sanitize(u64::from(MPOL_BIND | MPOL_F_NUMA_BALANCING)), Ok((MPOL_BIND, MPOL_F_NUMA_BALANCING)));
        assert_eq!(sanitize(u64::MAX), Err(Errno::EINVAL));
    }

    #[test]
    fn policies_on_one_node() {
        assert_eq!(new_policy(0, 0, NONE), Ok(MemPolicy::default()));
        assert_eq!(new_policy(0, 0, ONE), Err(Errno::EINVAL));
        assert_eq!(new_policy(MPOL_BIND, 0, NONE), Err(Errno::EINVAL));
        assert_eq!(new_policy(MPOL_BIND, 0, ONE), Ok(MemPolicy { mode: MPOL_BIND, nodes: 1 }));
        assert_eq!(new_policy(MPOL_BIND, 0, Nodes { low: 2, any: true }), Err(Errno::EINVAL), "node 1 is offline");
        assert_eq!(new_policy(MPOL_PREFERRED, 0, NONE), Ok(MemPolicy { mode: MPOL_LOCAL, nodes: 0 }));
        assert_eq!(new_policy(MPOL_PREFERRED, MPOL_F_STATIC_NODES, NONE), Err(Errno::EINVAL));
        let rel = new_policy(MPOL_INTERLEAVE, MPOL_F_RELATIVE_NODES, Nodes { low: 6, any: true });
        assert_eq!(rel, Ok(MemPolicy { mode: MPOL_INTERLEAVE | MPOL_F_RELATIVE_NODES, nodes: 6 }), "the user's mask");
        assert_eq!(new_policy(MPOL_LOCAL, 0, ONE), Err(Errno::EINVAL));
    }
}
