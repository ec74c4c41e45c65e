//! System calls: the address space — mmap, munmap, mprotect, brk, mremap,
//! madvise, msync, mincore.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::{page_up, Errno, SysResult, PAGE_SIZE};
use crate::auth::caps::CAP_IPC_LOCK;
use crate::kernel::limits::{RLIMIT_AS, RLIMIT_DATA, RLIMIT_MEMLOCK};
use crate::kernel::Task;
use crate::mm::{Backing, ForkAdvice, MapRequest, NoExec, RemapRequest, VmLimits, VmaName};
use crate::platform::Perms;
use crate::vfs::{S_IFBLK, S_IFMT, S_IFREG, S_IFSOCK};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_mmap,
        sys_mmap,
        Partial(
            "shared writable mappings work for the sandbox's own files (tmpfs: /tmp, /dev/shm, written files); of image files they fail with ENODEV, and read-only ones are private copies",
        ),
    ),
    (libc::SYS_munmap, sys_munmap, Full),
    (libc::SYS_mprotect, sys_mprotect, Partial("PROT_GROWSDOWN/PROT_GROWSUP are ignored")),
    (libc::SYS_brk, sys_brk, Full),
    (
        libc::SYS_mremap,
        sys_mremap,
        Partial(
            "every flag (MREMAP_MAYMOVE, MREMAP_FIXED, MREMAP_DONTUNMAP) and old_size 0 as Linux; a range spanning several mappings as Linux 6.17+ (MREMAP_FIXED at the same size moves each, a shrink unmaps across them, anything else is EFAULT); and duplicating a shared anonymous mapping past its end gives fresh zero pages where Linux raises SIGBUS",
        ),
    ),
    (
        libc::SYS_madvise,
        sys_madvise,
        Partial("MADV_DONTNEED and MADV_FREE drop pages (EINVAL on locked ones), MADV_DONTFORK/DOFORK and MADV_WIPEONFORK/KEEPONFORK act at fork; other advice is checked and has no effect"),
    ),
    (libc::SYS_msync, sys_msync, Full),
    (libc::SYS_mincore, sys_mincore, Full),
];

const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
const MAP_SHARED_VALIDATE: u64 = 0x03;
const MAP_TYPE: u64 = 0x0f;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_32BIT: u64 = 0x40;
const MAP_LOCKED: u64 = 0x2000;
const MAP_HUGETLB: u64 = 0x4_0000;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
/// Flags MAP_SHARED_VALIDATE accepts.
const MAP_KNOWN: u64 = 0x1_ff7f | MAP_FIXED_NOREPLACE | 0x8_0000;
const PROT_MASK: u64 = 0x7;
const PROT_GROWS: u64 = 0x0300_0000;

fn sys_mmap(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2], a[3], a[4], a[5]);
    if len == 0 || off % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    if prot & !(PROT_MASK | PROT_GROWS) != 0 {
        return Err(Errno::EINVAL);
    }
    let shared = match flags & MAP_TYPE {
        MAP_SHARED => true,
        MAP_PRIVATE => false,
        MAP_SHARED_VALIDATE => {
            if flags & !MAP_KNOWN != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            // Anonymous memory knows only MAP_SHARED and MAP_PRIVATE.
            if flags & MAP_ANONYMOUS != 0 {
                return Err(Errno::EINVAL);
            }
            true
        }
        _ => return Err(Errno::EINVAL),
    };
    // Linux's ksys_mmap_pgoff: an anonymous huge-page mapping needs pages
    // from the huge page pool, which the sandbox has none of (its
    // /proc/meminfo: HugePages_Total 0); a file must be on hugetlbfs.
    if flags & MAP_HUGETLB != 0 {
        return Err(if flags & MAP_ANONYMOUS != 0 { Errno::ENOMEM } else { Errno::EINVAL });
    }
    let len = page_up(len).ok_or(Errno::ENOMEM)?;
    let perms = Perms::from_prot(prot);
    let mut shared_file = false;
    let mut anon = flags & MAP_ANONYMOUS != 0;
    let backing = if anon {
        Backing::Anon
    } else {
        let f = args::file(task, fd)?;
        // An O_PATH descriptor is no file to map (Linux's fget fails).
        if f.is_path() {
            return Err(Errno::EBADF);
        }
        // Linux's file_mmap_ok: the mapping's last byte must be an offset
        // the file can have (a regular file's, block device's or socket's
        // is at most MAX_LFS_FILESIZE).
        if off.checked_add(len).is_none_or(|end| end > i64::MAX as u64) {
            let kind = f.stat()?.mode & S_IFMT;
            if kind == S_IFREG || kind == S_IFBLK || kind == S_IFSOCK || off.checked_add(len).is_none() {
                return Err(Errno::EOVERFLOW);
            }
        }
        if !f.readable() {
            return Err(Errno::EACCES);
        }
        if shared && perms.write && !f.writable() {
            return Err(Errno::EACCES);
        }
        let mut file = f.ops.mappable().ok_or(Errno::ENODEV)?;
        // Linux's do_mmap: nothing of a noexec mount is mapped executable
        // (EPERM), nor may it become so later (mprotect: EACCES).
        if f.dentry.mount.noexec() {
            if perms.exec {
                return Err(Errno::EPERM);
            }
            file = Arc::new(NoExec(file));
        }
        // /dev/zero maps anonymous memory, shared anonymous memory when
        // shared (Linux's shmem_zero_setup).
        anon = file.anonymous();
        match (shared, file.shared_pages(task.thread.mm().memory_file())) {
            _ if anon => Backing::Anon,
            (true, Some(pages)) => {
                shared_file = true;
                let may_write = file.map_shared(perms.write, f.writable())?;
                Backing::SharedFile { file, pages, offset: off, may_write }
            }
            // Files without shared pages (the image's) may still be mapped
            // shared read-only: a private copy is indistinguishable as long
            // as nobody writes the file.
            (true, None) if perms.write => return Err(Errno::ENODEV),
            _ => Backing::File { file, offset: off },
        }
    };
    let req = MapRequest {
        addr,
        len,
        perms,
        fixed: flags & MAP_FIXED != 0,
        noreplace: flags & MAP_FIXED_NOREPLACE != 0,
        shared: (shared && anon) || shared_file,
        backing,
        name: VmaName::None,
    };
    let limits = vm_limits(task);
    task.thread.mm().mmap_with(req, flags & MAP_LOCKED != 0, &limits, flags & MAP_32BIT != 0)
}

/// The task's limits on its address space: RLIMIT_AS, RLIMIT_DATA and,
/// without CAP_IPC_LOCK, RLIMIT_MEMLOCK.
pub(super) fn vm_limits(task: &Task) -> VmLimits {
    let t = &task.thread;
    VmLimits {
        address_space: t.rlimit(RLIMIT_AS).cur,
        data: t.rlimit(RLIMIT_DATA).cur,
        memlock: (!super::common::capable(task, CAP_IPC_LOCK)).then(|| t.rlimit(RLIMIT_MEMLOCK).cur),
    }
}

fn sys_munmap(task: &mut Task, a: [u64; 6]) -> SysResult {
    task.thread.mm().munmap(a[0], a[1])?;
    // The last mapping of a removed, watched file may have been here.
    crate::vfs::notify::let_go();
    Ok(0)
}

fn sys_mprotect(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[2] & !(PROT_MASK | PROT_GROWS) != 0 || a[2] & PROT_GROWS == PROT_GROWS {
        return Err(Errno::EINVAL);
    }
    task.thread.mm().mprotect(a[0], a[1], Perms::from_prot(a[2]))?;
    Ok(0)
}

fn sys_brk(task: &mut Task, a: [u64; 6]) -> SysResult {
    let limits = vm_limits(task);
    task.thread.mm().brk(a[0], &limits)
}

fn sys_mremap(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MREMAP_MAYMOVE: u64 = 1;
    const MREMAP_FIXED: u64 = 2;
    const MREMAP_DONTUNMAP: u64 = 4;
    let flags = a[3];
    if flags & !(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP) != 0 {
        return Err(Errno::EINVAL);
    }
    task.thread.mm().mremap(RemapRequest {
        addr: a[0],
        old_len: a[1],
        new_len: a[2],
        may_move: flags & MREMAP_MAYMOVE != 0,
        fixed: (flags & MREMAP_FIXED != 0).then_some(a[4]),
        dont_unmap: flags & MREMAP_DONTUNMAP != 0,
        hint: a[4],
        limits: vm_limits(task),
    })
}

/// madvise(2), checked in Linux's order: the advice, the start's
/// alignment, a length that wraps when rounded (EINVAL), then a range
/// with an unmapped page (ENOMEM).
fn sys_madvise(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MADV_DONTNEED: i32 = 4;
    const MADV_FREE: i32 = 8;
    const MADV_DONTFORK: i32 = 10;
    const MADV_DOFORK: i32 = 11;
    const MADV_WIPEONFORK: i32 = 18;
    const MADV_KEEPONFORK: i32 = 19;
    let (addr, len, advice) = (a[0], a[1], int(a[2]));
    let known = matches!(advice, 0..=4 | 8..=25 | 100..=103);
    if !known || addr % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let end = page_up(len).filter(|&l| l > 0 || len == 0).and_then(|l| addr.checked_add(l)).ok_or(Errno::EINVAL)?;
    if end == addr {
        return Ok(0);
    }
    let mm = task.thread.mm();
    let fork_advice = match advice {
        MADV_DONTNEED | MADV_FREE => return mm.dontneed(addr, len).map(|()| 0),
        MADV_DONTFORK => ForkAdvice::Exclude,
        MADV_DOFORK => ForkAdvice::Include,
        MADV_WIPEONFORK => ForkAdvice::Wipe,
        MADV_KEEPONFORK => ForkAdvice::Keep,
        _ => {
            return if mm.is_mapped(addr, end) { Ok(0) } else { Err(Errno::ENOMEM) };
        }
    };
    mm.fork_advice(addr, end, fork_advice)?;
    Ok(0)
}

/// msync(2): the flags and alignment (EINVAL), a wrapping length
/// (ENOMEM), then the walk of the range (`msync_check`).
fn sys_msync(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MS_ASYNC: u64 = 1;
    const MS_INVALIDATE: u64 = 2;
    const MS_SYNC: u64 = 4;
    let flags = a[2];
    if a[0] % PAGE_SIZE != 0 || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MS_ASYNC != 0 && flags & MS_SYNC != 0 {
        return Err(Errno::EINVAL);
    }
    let end = page_up(a[1]).and_then(|len| a[0].checked_add(len)).ok_or(Errno::ENOMEM)?;
    if end == a[0] {
        return Ok(0);
    }
    task.thread.mm().msync_check(a[0], end, flags == MS_ASYNC, flags & MS_INVALIDATE != 0)?;
    Ok(0)
}

fn sys_mincore(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[0] % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let resident = task.thread.mm().mincore(a[0], a[1])?;
    task.thread.mm().copy_out(a[2], &resident)?;
    Ok(0)
}
