//! The control buffer of a sendmsg(2): read once and walked message by
//! message, as Linux's `__scm_send` and `ip_cmsg_send` walk it.

use crate::abi::layout::Layout;
use crate::abi::socket::{cmsg_align, CmsgHdr, MsgHdr, CMSG_HDR};
use crate::abi::Errno;
use crate::kernel::Task;

/// sysctl net.core.optmem_max (Linux 6.9 and later): a control buffer
/// must stay below it (sock_kmalloc's strict test), else ENOBUFS.
const OPTMEM_MAX: usize = 131_072;

/// Hands each control message of `h` to `f` as (level, type, payload).
/// A buffer shorter than one header holds none; a message whose length is
/// below a header or past the buffer's end is EINVAL.
pub(super) fn each(
    task: &Task,
    h: &MsgHdr,
    mut f: impl FnMut(i32, i32, &[u8]) -> Result<(), Errno>,
) -> Result<(), Errno> {
    let len = usize::try_from(h.controllen).map_err(|_| Errno::ENOBUFS)?;
    if len < CMSG_HDR {
        return Ok(());
    }
    if len >= OPTMEM_MAX {
        return Err(Errno::ENOBUFS);
    }
    let mut raw = vec![0u8; len];
    task.thread.mm().copy_in(h.control, &mut raw)?;
    let mut off = 0;
    while len - off >= CMSG_HDR {
        let CmsgHdr { len: cmsg_len, level, ty } = CmsgHdr::decode(&raw[off..off + CMSG_HDR]);
        let cmsg_len = usize::try_from(cmsg_len).map_err(|_| Errno::EINVAL)?;
        if cmsg_len < CMSG_HDR || cmsg_len > len - off {
            return Err(Errno::EINVAL);
        }
        f(level, ty, &raw[off + CMSG_HDR..off + cmsg_len])?;
        off = off.saturating_add(cmsg_align(cmsg_len)).min(len);
    }
    Ok(())
}
