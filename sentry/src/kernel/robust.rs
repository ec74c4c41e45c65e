//! Robust futexes at a thread's death (Linux's `exit_robust_list`): every
//! lock on the thread's robust list that it still holds is marked
//! FUTEX_OWNER_DIED and one waiter is woken, so a robust mutex's next
//! locker gets EOWNERDEAD instead of waiting forever.

use super::futex::{FutexKey, Futexes};
use crate::mm::MemoryManager;
use std::sync::Arc;

const FUTEX_WAITERS: u32 = 0x8000_0000;
const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
const FUTEX_TID_MASK: u32 = 0x3fff_ffff;
/// Entries walked at most (Linux's ROBUST_LIST_LIMIT): a cyclic list ends.
const ROBUST_LIST_LIMIT: usize = 2048;

fn read_u64(mm: &MemoryManager, addr: u64) -> Option<u64> {
    let mut b = [0u8; 8];
    mm.copy_in(addr, &mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// The futex key of the word at `addr`, shared when its memory is.
fn key(mm: &Arc<MemoryManager>, addr: u64) -> FutexKey {
    match mm.shared_location(addr) {
        Ok(Some(at)) => FutexKey::shared(at),
        _ => FutexKey::of(mm, addr),
    }
}

/// One lock word at `addr` of dying thread `tid` (Linux's
/// `handle_futex_death`). `pending` is the lock it was taking or
/// releasing when it died.
fn futex_death(mm: &Arc<MemoryManager>, futexes: &Futexes, addr: u64, tid: u32, pi: bool, pending: bool) {
    if addr % 4 != 0 {
        return;
    }
    let k = key(mm, addr);
    let marked = futexes.wake_op(k, k, 0, 1, || {
        let mut b = [0u8; 4];
        mm.copy_in(addr, &mut b)?;
        let v = u32::from_le_bytes(b);
        // It died between releasing the word and waking a waiter.
        if pending && !pi && v == 0 {
            return Ok(true);
        }
        if v & FUTEX_TID_MASK != tid {
            return Ok(false);
        }
        mm.copy_out(addr, &((v & FUTEX_WAITERS) | FUTEX_OWNER_DIED).to_le_bytes())?;
        Ok(!pi && v & FUTEX_WAITERS != 0)
    });
    if let Err(e) = marked {
        log::debug!("robust futex at {addr:#x} of dead thread {tid}: {e}");
    }
}

/// Walks thread `tid`'s robust list at `head` (a `struct
/// robust_list_head`: the list, the offset of the lock word from each
/// entry, the entry being locked or unlocked) and releases its locks.
pub(crate) fn exit_robust_list(mm: &Arc<MemoryManager>, futexes: &Futexes, tid: i32, head: u64) {
    let Ok(tid) = u32::try_from(tid) else { return };
    if head == 0 {
        return;
    }
    let (Some(first), Some(offset), Some(pending)) =
        (read_u64(mm, head), read_u64(mm, head + 8), read_u64(mm, head + 16))
    else {
        return;
    };
    // An entry's low bit says its lock is a PI futex.
    let word = |entry: u64| entry.wrapping_add(offset);
    let pending_entry = pending & !1;
    let mut entry = first;
    for _ in 0..ROBUST_LIST_LIMIT {
        if entry & !1 == head {
            break;
        }
        let next = read_u64(mm, entry & !1);
        if entry & !1 != pending_entry {
            futex_death(mm, futexes, word(entry & !1), tid, entry & 1 != 0, false);
        }
        match next {
            Some(n) => entry = n,
            None => break,
        }
    }
    if pending_entry != 0 {
        futex_death(mm, futexes, word(pending_entry), tid, pending & 1 != 0, true);
    }
}
