//! System calls: the address space — mmap, munmap, mprotect, brk, mremap,
//! madvise.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::{page_down, page_up, Errno, SysResult, PAGE_SIZE};
use crate::kernel::Task;
use crate::mm::{Backing, MapRequest, NoExec, RemapRequest, VmaName};
use crate::platform::Perms;
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
        Partial("only MADV_DONTNEED and MADV_FREE change memory; other advice is accepted and has no effect"),
    ),
    (libc::SYS_msync, sys_msync, Full),
    (libc::SYS_mincore, sys_mincore, Full),
    (libc::SYS_mlock, sys_mlock, Partial("memory is never locked; requests are validated and accepted")),
    (libc::SYS_munlock, sys_mlock, Partial("memory is never locked")),
    (libc::SYS_mlockall, sys_mlockall, Partial("memory is never locked")),
    (libc::SYS_mlock2, sys_mlock2, Partial("memory is never locked; flags (MLOCK_ONFAULT) and the range are validated as Linux")),
    (libc::SYS_munlockall, sys_munlockall, Partial("memory is never locked")),
];

const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
const MAP_SHARED_VALIDATE: u64 = 0x03;
const MAP_TYPE: u64 = 0x0f;
const MAP_FIXED: u64 = 0x10;
const MAP_ANONYMOUS: u64 = 0x20;
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
    off.checked_add(len).ok_or(Errno::EOVERFLOW)?;
    let perms = Perms::from_prot(prot);
    let mut shared_file = false;
    let backing = if flags & MAP_ANONYMOUS != 0 {
        Backing::Anon
    } else {
        let f = args::file(task, fd)?;
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
        match (shared, file.shared_pages(task.thread.mm().memory_file())) {
            (true, Some(pages)) => {
                shared_file = true;
                Backing::SharedFile { file, pages, offset: off }
            }
            // Files without shared pages (the image's) may still be mapped
            // shared read-only: a private copy is indistinguishable as long
            // as nobody writes the file.
            (true, None) if perms.write => return Err(Errno::ENODEV),
            _ => Backing::File { file, offset: off },
        }
    };
    let anon_shared = shared && flags & MAP_ANONYMOUS != 0;
    task.thread.mm().mmap(MapRequest {
        addr,
        len,
        perms,
        fixed: flags & MAP_FIXED != 0,
        noreplace: flags & MAP_FIXED_NOREPLACE != 0,
        shared: anon_shared || shared_file,
        backing,
        name: VmaName::None,
    })
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
    task.thread.mm().brk(a[0])
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
    })
}

fn sys_madvise(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MADV_DONTNEED: u64 = 4;
    const MADV_FREE: u64 = 8;
    let (addr, len, advice) = (a[0], a[1], int(a[2]));
    if addr % PAGE_SIZE != 0 {
        return Err(Errno::EINVAL);
    }
    let known = matches!(advice, 0..=4 | 8..=25 | 100..=103);
    if !known {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    let advice = u64::try_from(advice).map_err(|_| Errno::EINVAL)?;
    if advice == MADV_DONTNEED || advice == MADV_FREE {
        task.thread.mm().dontneed(addr, len)?;
    }
    Ok(0)
}

fn sys_msync(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MS_ASYNC: u64 = 1;
    const MS_INVALIDATE: u64 = 2;
    const MS_SYNC: u64 = 4;
    if a[0] % PAGE_SIZE != 0 || a[2] & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0 {
        return Err(Errno::EINVAL);
    }
    if a[2] & MS_ASYNC != 0 && a[2] & MS_SYNC != 0 {
        return Err(Errno::EINVAL);
    }
    // A range with an unmapped page is ENOMEM, as Linux.
    let end = page_up(a[1]).and_then(|len| a[0].checked_add(len)).ok_or(Errno::ENOMEM)?;
    if end > a[0] && !task.thread.mm().is_mapped(a[0], end) {
        return Err(Errno::ENOMEM);
    }
    Ok(0)
}

fn sys_mlock(task: &mut Task, a: [u64; 6]) -> SysResult {
    let start = page_down(a[0]);
    let end = a[0].checked_add(a[1]).and_then(page_up).filter(|&e| e >= start).ok_or(Errno::ENOMEM)?;
    // Every page of the range must be mapped (ENOMEM otherwise), as Linux.
    if !task.thread.mm().is_mapped(start, end) {
        return Err(Errno::ENOMEM);
    }
    Ok(0)
}

/// mlock2(2): mlock(2) with flags; MLOCK_ONFAULT is the only one.
fn sys_mlock2(task: &mut Task, a: [u64; 6]) -> SysResult {
    const MLOCK_ONFAULT: u64 = 1;
    if a[2] & !MLOCK_ONFAULT != 0 {
        return Err(Errno::EINVAL);
    }
    sys_mlock(task, a)
}

fn sys_mlockall(_task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[0] == 0 || a[0] & !7 != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}

fn sys_munlockall(_task: &mut Task, _a: [u64; 6]) -> SysResult {
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
