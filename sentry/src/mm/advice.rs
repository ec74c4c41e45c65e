//! Attributes of areas beyond their protection: locks (mlock(2),
//! mlockall(2)), fork advice (MADV_DONTFORK, MADV_WIPEONFORK), memory
//! policies (mbind(2)), and the checks msync(2) makes of them.
//!
//! Locked memory is accounted as Linux accounts it (RLIMIT_MEMLOCK,
//! VmLck) and its pages are populated, so they count against the
//! sandbox's memory limit; the host is not asked to pin them: guest memory
//! is one memfd that the sentry never pages out itself.

use super::manager::{find, fully_mapped, merge_around, split_at, Layout, MemoryManager, VmLimits};
use super::vma::{Backing, Lock, MemPolicy, Vma};
use crate::abi::{Errno, PAGE_SIZE};

/// mlockall(2)'s flags, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockAll {
    /// MCL_CURRENT: lock every area now.
    pub current: bool,
    /// MCL_FUTURE: lock areas mapped from now on.
    pub future: bool,
    /// MCL_ONFAULT: lock pages as they are faulted in.
    pub on_fault: bool,
}

/// The fork advice of madvise(2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkAdvice {
    /// MADV_DONTFORK: the child does not get the area.
    Exclude,
    /// MADV_DOFORK: it does again.
    Include,
    /// MADV_WIPEONFORK: the child gets it empty.
    Wipe,
    /// MADV_KEEPONFORK: with its pages again.
    Keep,
}

/// Linux's `__mlock_posix_error_return`: a page that cannot be populated
/// (EFAULT) is ENOMEM, memory that ran out (ENOMEM) is EAGAIN.
fn posix_lock_error(e: Errno) -> Errno {
    match e {
        Errno::EFAULT => Errno::ENOMEM,
        Errno::ENOMEM => Errno::EAGAIN,
        e => e,
    }
}

impl MemoryManager {
    /// mlock(2), mlock2(2) and munlock(2) of the `len` bytes (page
    /// rounded, wrapping as Linux's arithmetic does) at `start` (page
    /// aligned): gives the areas there lock state `lock`, in Linux's
    /// order: EPERM without a lock limit, ENOMEM past it (pages locked
    /// already count once), EINVAL for a range that wraps, ENOMEM at the
    /// first unmapped page (the areas before it keep the change), then the
    /// locked pages are populated.
    pub fn mlock(&self, start: u64, len: u64, lock: Lock, limits: &VmLimits) -> Result<(), Errno> {
        let mut l = self.layout.lock();
        let end = start.wrapping_add(len);
        if lock.locked() {
            if !limits.can_lock() {
                return Err(Errno::EPERM);
            }
            let already = if end > start { l.covered(start, end, |v| v.flags.lock.locked()) } else { 0 };
            if !limits.may_lock(l.locked_bytes() - already, len) {
                return Err(Errno::ENOMEM);
            }
        }
        if end < start {
            return Err(Errno::EINVAL);
        }
        if end == start {
            return Ok(());
        }
        let reach = contiguous_end(&l, start, end).ok_or(Errno::ENOMEM)?;
        split_at(&mut l, start);
        split_at(&mut l, reach);
        for v in l.vmas.range_mut(start..reach).map(|(_, v)| v) {
            v.flags.lock = lock;
        }
        merge_around(&mut l, start, reach);
        if reach < end {
            return Err(Errno::ENOMEM);
        }
        if lock == Lock::Locked {
            self.populate_locked(&mut l, start, end, false).map_err(posix_lock_error)?;
        }
        Ok(())
    }

    /// mlockall(2) (flags checked by the caller) and, with every flag
    /// false, munlockall(2).
    pub fn mlockall(&self, how: LockAll, limits: &VmLimits) -> Result<(), Errno> {
        let mut l = self.layout.lock();
        if how.current || how.future {
            if !limits.can_lock() {
                return Err(Errno::EPERM);
            }
            if how.current && !limits.may_lock(0, l.total_bytes()) {
                return Err(Errno::ENOMEM);
            }
        }
        let lock = if how.on_fault { Lock::OnFault } else { Lock::Locked };
        l.def_lock = if how.future { lock } else { Lock::None };
        if how.future && !how.current {
            return Ok(());
        }
        let new = if how.current { lock } else { Lock::None };
        for v in l.vmas.values_mut() {
            v.flags.lock = new;
        }
        if let (Some(&first), Some(last)) = (l.vmas.keys().next(), l.vmas.values().next_back().map(|v| v.end)) {
            merge_around(&mut l, first, last);
        }
        if new == Lock::Locked {
            // Linux's mm_populate over the whole space ignores errors.
            let _ = self.populate_locked(&mut l, 0, u64::MAX, true);
        }
        Ok(())
    }

    /// Gives a frame to every page of the areas of `[start, end)` locked
    /// with `Lock::Locked` (Linux's `__mm_populate`), a private writable
    /// one its own. An area that cannot be populated (one without access:
    /// EFAULT; a page past the end of its file: EFAULT; memory that ran
    /// out: ENOMEM) ends the walk with its error, or with `ignore_errors`
    /// is left for the next.
    pub(super) fn populate_locked(
        &self,
        l: &mut Layout,
        start: u64,
        end: u64,
        ignore_errors: bool,
    ) -> Result<(), Errno> {
        let first = find(l, start).map_or(start, |v| v.start);
        for v in l.vmas.range_mut(first..end).map(|(_, v)| v) {
            if v.flags.lock != Lock::Locked {
                continue;
            }
            let populated = if v.perms.any() { self.populate_area(v, start, end) } else { Err(Errno::EFAULT) };
            if !ignore_errors {
                populated?;
            }
        }
        Ok(())
    }

    /// Gives a frame to every page of `vma` within `[start, end)`.
    fn populate_area(&self, vma: &mut Vma, start: u64, end: u64) -> Result<(), Errno> {
        let write = vma.perms.write && !vma.shared;
        let mut page = vma.start.max(start);
        while page < vma.end.min(end) {
            self.frame_for(vma, page, write, false)?;
            page += PAGE_SIZE;
        }
        Ok(())
    }

    /// Bytes of locked areas (VmLck).
    pub fn locked_bytes(&self) -> u64 {
        self.layout.lock().locked_bytes()
    }

    /// msync(2)'s walk of `[start, end)` (`end > start`), as Linux's: an
    /// unmapped page is ENOMEM (at once for MS_ASYNC alone, `async_only`,
    /// else once the rest was walked), a locked area with
    /// `invalidate` (MS_INVALIDATE) EBUSY. Writing back has nothing to do:
    /// the sandbox's files hold what their shared mappings store.
    pub fn msync_check(&self, start: u64, end: u64, async_only: bool, invalidate: bool) -> Result<(), Errno> {
        let l = self.layout.lock();
        let mut unmapped = false;
        let mut at = start;
        loop {
            let v = match find(&l, at) {
                Some(v) => v,
                None => {
                    let Some((_, v)) = l.vmas.range(at..).next() else { return Err(Errno::ENOMEM) };
                    if async_only || v.start >= end {
                        return Err(Errno::ENOMEM);
                    }
                    unmapped = true;
                    v
                }
            };
            if invalidate && v.flags.lock.locked() {
                return Err(Errno::EBUSY);
            }
            at = v.end;
            if at >= end {
                return if unmapped { Err(Errno::ENOMEM) } else { Ok(()) };
            }
        }
    }

    /// madvise(2)'s fork advice over `[start, end)`: applied area by area
    /// (MADV_WIPEONFORK is EINVAL at a shared or file area, as Linux's);
    /// ENOMEM at the end if part of the range is unmapped.
    pub fn fork_advice(&self, start: u64, end: u64, advice: ForkAdvice) -> Result<(), Errno> {
        let mut l = self.layout.lock();
        let unmapped = !fully_mapped(&l, start, end);
        let pieces: Vec<(u64, u64)> = {
            let first = find(&l, start).map_or(start, |v| v.start);
            l.vmas.range(first..end).map(|(_, v)| (v.start.max(start), v.end.min(end))).collect()
        };
        for (a, b) in pieces {
            let private_anon = find(&l, a).is_some_and(|v| !v.shared && matches!(v.backing, Backing::Anon));
            if advice == ForkAdvice::Wipe && !private_anon {
                return Err(Errno::EINVAL);
            }
            split_at(&mut l, a);
            split_at(&mut l, b);
            if let Some(v) = l.vmas.get_mut(&a) {
                match advice {
                    ForkAdvice::Exclude => v.flags.dontfork = true,
                    ForkAdvice::Include => v.flags.dontfork = false,
                    ForkAdvice::Wipe => v.flags.wipeonfork = true,
                    ForkAdvice::Keep => v.flags.wipeonfork = false,
                }
            }
            merge_around(&mut l, a, b);
        }
        if unmapped {
            return Err(Errno::ENOMEM);
        }
        Ok(())
    }

    /// mbind(2): gives every area of `[start, end)` the memory policy
    /// `policy` (None: MPOL_DEFAULT). EFAULT if part of the range is
    /// unmapped, before anything changes.
    pub fn set_policy(&self, start: u64, end: u64, policy: MemPolicy) -> Result<(), Errno> {
        let mut l = self.layout.lock();
        if !fully_mapped(&l, start, end) {
            return Err(Errno::EFAULT);
        }
        split_at(&mut l, start);
        split_at(&mut l, end);
        for v in l.vmas.range_mut(start..end).map(|(_, v)| v) {
            v.flags.policy = policy;
        }
        merge_around(&mut l, start, end);
        Ok(())
    }

    /// The memory policy of the area at `addr` (get_mempolicy's
    /// MPOL_F_ADDR); EFAULT where nothing is mapped.
    pub fn policy_at(&self, addr: u64) -> Result<MemPolicy, Errno> {
        find(&self.layout.lock(), addr).map(|v| v.flags.policy).ok_or(Errno::EFAULT)
    }
}

/// Where the run of areas without a gap that starts at `start` ends,
/// capped at `end`; None if nothing is mapped at `start`.
fn contiguous_end(l: &Layout, start: u64, end: u64) -> Option<u64> {
    let mut at = find(l, start)?.end;
    while at < end {
        match find(l, at) {
            Some(v) => at = v.end,
            None => break,
        }
    }
    Some(at.min(end))
}
