//! System calls: futex.

use super::args::{int, uint};
use super::{Entries, Support::*};
use crate::abi::layout::Layout;
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::host::monotonic_now;
use crate::kernel::futex::FutexKey;
use crate::kernel::Task;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_futex,
    sys_futex,
    Partial("PI futexes are unsupported (ENOSYS); WAKE_OP is not atomic against other threads' plain stores"),
)];

const FUTEX_WAIT: u32 = 0;
const FUTEX_WAKE: u32 = 1;
const FUTEX_REQUEUE: u32 = 3;
const FUTEX_CMP_REQUEUE: u32 = 4;
const FUTEX_WAKE_OP: u32 = 5;
const FUTEX_WAIT_BITSET: u32 = 9;
const FUTEX_WAKE_BITSET: u32 = 10;
const FUTEX_PRIVATE_FLAG: u32 = 128;
const FUTEX_CLOCK_REALTIME: u32 = 256;
const FUTEX_BITSET_MATCH_ANY: u32 = u32::MAX;

/// The key of the futex word at `addr`: per address space for private
/// futexes and private memory; for shared futexes in shared memory, its
/// place in the memory file, so processes sharing it meet.
fn key(task: &Task, addr: u64, private: bool) -> Result<FutexKey, Errno> {
    if addr % 4 != 0 {
        return Err(Errno::EINVAL);
    }
    let mm = task.thread.mm();
    if !private {
        if let Some(at) = mm.shared_location(addr)? {
            return Ok(FutexKey::shared(at));
        }
    }
    Ok(FutexKey::of(&mm, addr))
}

fn read_word(task: &Task, addr: u64) -> Result<u32, Errno> {
    let mut b = [0u8; 4];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Reads a timespec; `absolute` ones are deadlines on the given clock. A
/// span past what the clock holds means "never", not an overflow.
pub(super) fn deadline(task: &Task, addr: u64, absolute: bool, realtime: bool) -> Result<Option<Instant>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = [0u8; Timespec::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let ts = Timespec::decode(&raw);
    if !ts.is_valid() {
        return Err(Errno::EINVAL);
    }
    let dur = ts.duration();
    let now = Instant::now();
    if !absolute {
        return Ok(Some(crate::waiter::later(now, dur)));
    }
    let clock_now =
        if realtime { SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() } else { monotonic_now() };
    Ok(Some(crate::waiter::later(now, dur.saturating_sub(clock_now))))
}

/// Evaluates a FUTEX_WAKE_OP operation on the word at `addr`.
fn wake_op(task: &Task, addr: u64, encoded: u32) -> Result<bool, Errno> {
    let op = (encoded >> 28) & 7;
    let cmp = (encoded >> 24) & 15;
    let mut oparg = (encoded >> 12) & 0xfff;
    let cmparg = encoded & 0xfff;
    if encoded & (8 << 28) != 0 {
        if oparg > 31 {
            return Err(Errno::EINVAL);
        }
        oparg = 1 << oparg;
    }
    let old = read_word(task, addr)?;
    let new = match op {
        0 => oparg,
        1 => old.wrapping_add(oparg),
        2 => old | oparg,
        3 => old & !oparg,
        4 => old ^ oparg,
        _ => return Err(Errno::ENOSYS),
    };
    task.thread.mm().copy_out(addr, &new.to_le_bytes())?;
    let (o, c) = (i32::from_ne_bytes(old.to_ne_bytes()), i32::from_ne_bytes(cmparg.to_ne_bytes()));
    Ok(match cmp {
        0 => o == c,
        1 => o != c,
        2 => o < c,
        3 => o <= c,
        4 => o > c,
        5 => o >= c,
        _ => return Err(Errno::ENOSYS),
    })
}

fn count(v: u64) -> usize {
    usize::try_from(int(v)).unwrap_or(0)
}

fn sys_futex(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (addr, op, val) = (a[0], uint(a[1]), uint(a[2]));
    let cmd = op & !(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
    let realtime = op & FUTEX_CLOCK_REALTIME != 0;
    let private = op & FUTEX_PRIVATE_FLAG != 0;
    if realtime && cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET {
        return Err(Errno::ENOSYS);
    }
    let futexes = &task.kernel.futexes();
    match cmd {
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            let bitset = if cmd == FUTEX_WAIT { FUTEX_BITSET_MATCH_ANY } else { uint(a[5]) };
            if bitset == 0 {
                return Err(Errno::EINVAL);
            }
            let k = key(task, addr, private)?;
            let until = deadline(task, a[3], cmd == FUTEX_WAIT_BITSET, realtime)?;
            futexes.wait(k, task.thread.tid(), bitset, until, || Ok(read_word(task, addr)? == val)).map_err(|e| {
                if e == Errno::EINTR {
                    Errno::ERESTARTSYS
                } else {
                    e
                }
            })?;
            Ok(0)
        }
        FUTEX_WAKE | FUTEX_WAKE_BITSET => {
            let bitset = if cmd == FUTEX_WAKE { FUTEX_BITSET_MATCH_ANY } else { uint(a[5]) };
            if bitset == 0 {
                return Err(Errno::EINVAL);
            }
            let k = key(task, addr, private)?;
            Ok(futexes.wake(k, count(a[2]), bitset) as u64)
        }
        FUTEX_REQUEUE | FUTEX_CMP_REQUEUE => {
            let (k1, k2) = (key(task, addr, private)?, key(task, a[4], private)?);
            let expected = uint(a[5]);
            let n = futexes.requeue(k1, k2, count(a[2]), count(a[3]), || {
                Ok(cmd == FUTEX_REQUEUE || read_word(task, addr)? == expected)
            })?;
            Ok(n as u64)
        }
        FUTEX_WAKE_OP => {
            let (k1, k2) = (key(task, addr, private)?, key(task, a[4], private)?);
            let n = futexes.wake_op(k1, k2, count(a[2]), count(a[3]), || wake_op(task, a[4], uint(a[5])))?;
            Ok(n as u64)
        }
        _ => Err(Errno::ENOSYS),
    }
}
