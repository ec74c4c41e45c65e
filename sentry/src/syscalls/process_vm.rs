//! System calls: `process_vm_readv`, `process_vm_writev` — copies between
//! the caller's memory and another guest process's, within the sandbox
//! (both sides are guest address spaces the sentry owns; no host
//! `process_vm_*` is involved). As Linux: flags must be 0; the local
//! iovecs are checked first (count, lengths, user range) and an empty
//! local side returns 0 before the target is looked up; access is
//! ptrace's attach check with real credentials (same ids and a dumpable
//! target, or CAP_SYS_PTRACE; the caller's own process always); the copy
//! goes remote iovec by remote iovec, page by page, and stops at the
//! first page it cannot read or write, returning the bytes copied so far
//! (EFAULT if none).

use super::args::{int, user_range};
use super::{Entries, Support};
use crate::abi::fcntl::MAX_RW_COUNT;
use crate::abi::layout::Layout;
use crate::abi::uio::{Iovec, IOV_MAX};
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::kernel::Task;
use crate::mm::manager::MemoryManager;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_process_vm_readv, sys_process_vm_readv, Support::Full),
    (libc::SYS_process_vm_writev, sys_process_vm_writev, Support::Full),
];

/// Reads `cnt` iovecs at `addr`: EINVAL past `UIO_MAXIOV` or for a length
/// that is negative as an ssize_t, EFAULT for an unreadable array.
fn read_iovecs(task: &Task, addr: u64, cnt: u64) -> Result<Vec<Iovec>, Errno> {
    let n = usize::try_from(cnt).ok().filter(|&n| n <= IOV_MAX).ok_or(Errno::EINVAL)?;
    let mut raw = vec![0u8; n * Iovec::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let iovs: Vec<Iovec> = Iovec::decode_all(&raw).collect();
    if iovs.iter().any(|v| i64::try_from(v.len).is_err()) {
        return Err(Errno::EINVAL);
    }
    Ok(iovs)
}

/// The local iovecs as Linux's `import_iovec` takes them: each in user
/// space (EFAULT), the total cut to `MAX_RW_COUNT`.
fn local_iovecs(task: &Task, addr: u64, cnt: u64) -> Result<Vec<Iovec>, Errno> {
    let mut total = 0u64;
    let mut out = Vec::new();
    for mut v in read_iovecs(task, addr, cnt)? {
        user_range(v.base, usize::try_from(v.len).map_err(|_| Errno::EFAULT)?)?;
        v.len = v.len.min(u64::try_from(MAX_RW_COUNT).unwrap_or(u64::MAX) - total);
        total += v.len;
        out.push(v);
    }
    Ok(out)
}

/// Which way the bytes go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Remote to local (`process_vm_readv`).
    Read,
    /// Local to remote (`process_vm_writev`).
    Write,
}

fn sys_process_vm_readv(task: &mut Task, a: [u64; 6]) -> SysResult {
    process_vm(task, a, Dir::Read)
}

fn sys_process_vm_writev(task: &mut Task, a: [u64; 6]) -> SysResult {
    process_vm(task, a, Dir::Write)
}

fn process_vm(task: &Task, a: [u64; 6], dir: Dir) -> SysResult {
    if a[5] != 0 {
        return Err(Errno::EINVAL);
    }
    let local = local_iovecs(task, a[1], a[2])?;
    if local.iter().all(|v| v.len == 0) {
        return Ok(0);
    }
    let remote = read_iovecs(task, a[3], a[4])?;
    let target = task.kernel.thread(int(a[0])).ok_or(Errno::ESRCH)?;
    if target.tgid() != task.thread.tgid() {
        let dumpable = target.group().dumpable() != 0;
        if !task.thread.creds().may_read_process(&target.creds(), dumpable) {
            return Err(Errno::EPERM);
        }
    }
    let (mine, theirs) = (task.thread.mm(), target.mm());
    let foreign = !std::sync::Arc::ptr_eq(&mine, &theirs);
    let mut local = Cursor { iovs: &local, idx: 0, off: 0 };
    let mut done = 0u64;
    let end = transfer(&mine, &theirs, foreign, &mut local, &remote, dir, &mut done);
    if foreign {
        // Its running threads may still read frames our write replaced.
        task.kernel.flush_stale_mappings(&theirs);
    }
    match end {
        Err(e) if done == 0 => Err(e),
        _ => Ok(done),
    }
}

/// A position in the local iovecs.
struct Cursor<'a> {
    iovs: &'a [Iovec],
    idx: usize,
    off: u64,
}

impl Cursor<'_> {
    /// The address and length left of the current local iovec, skipping
    /// empty ones; None when all are used.
    fn current(&mut self) -> Option<(u64, u64)> {
        while let Some(v) = self.iovs.get(self.idx) {
            if self.off < v.len {
                return Some((v.base + self.off, v.len - self.off));
            }
            self.idx += 1;
            self.off = 0;
        }
        None
    }
}

/// Copies remote iovec by remote iovec, one page piece at a time, adding
/// the bytes copied to `done`; stops at the first fault (EFAULT) or when
/// the local side is full. `foreign`: the remote space is not the
/// caller's.
fn transfer(
    mine: &MemoryManager,
    theirs: &MemoryManager,
    foreign: bool,
    local: &mut Cursor,
    remote: &[Iovec],
    dir: Dir,
    done: &mut u64,
) -> Result<(), Errno> {
    let mut buf = vec![0u8; usize::try_from(PAGE_SIZE).unwrap_or(4096)];
    for r in remote {
        let mut roff = 0u64;
        while roff < r.len {
            let Some((laddr, lleft)) = local.current() else { return Ok(()) };
            let raddr = r.base.checked_add(roff).ok_or(Errno::EFAULT)?;
            let n = (r.len - roff).min(PAGE_SIZE - raddr % PAGE_SIZE).min(lleft);
            let chunk = &mut buf[..usize::try_from(n).map_err(|_| Errno::EFAULT)?];
            let moved = match dir {
                Dir::Read => {
                    theirs.copy_in(raddr, chunk)?;
                    mine.copy_out_partial(laddr, chunk)
                }
                Dir::Write => {
                    let got = mine.copy_in_partial(laddr, chunk);
                    if foreign {
                        theirs.copy_out_foreign(raddr, &chunk[..got])?;
                    } else {
                        mine.copy_out(raddr, &chunk[..got])?;
                    }
                    got
                }
            };
            let moved = u64::try_from(moved).unwrap_or(0);
            *done += moved;
            local.off += moved;
            if moved < n {
                return Err(Errno::EFAULT);
            }
            roff += n;
        }
    }
    Ok(())
}
