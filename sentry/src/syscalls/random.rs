//! System calls: `getrandom`, served from the host's random source.

use super::args::uint;
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::loader::host_random;

pub(super) const ENTRIES: Entries = &[(libc::SYS_getrandom, sys_getrandom, Support::Full)];

const GRND_NONBLOCK: u32 = 1;
const GRND_RANDOM: u32 = 2;
const GRND_INSECURE: u32 = 4;
/// The most bytes one getrandom call returns (`INT_MAX >> 6`).
const GETRANDOM_MAX: u64 = 33_554_431;

fn check_getrandom_flags(flags: u32) -> Result<(), Errno> {
    if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & (GRND_RANDOM | GRND_INSECURE) == GRND_RANDOM | GRND_INSECURE {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn sys_getrandom(task: &mut Task, a: [u64; 6]) -> SysResult {
    check_getrandom_flags(uint(a[2]))?;
    let n = usize::try_from(a[1].min(GETRANDOM_MAX)).map_err(|_| Errno::EINVAL)?;
    let got = task.thread.mm().fill_with(a[0], n, |s| {
        host_random(s);
        Ok(s.len())
    })?;
    Ok(got as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getrandom_flags() {
        assert_eq!(check_getrandom_flags(0), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_NONBLOCK | GRND_RANDOM), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_NONBLOCK | GRND_INSECURE), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_RANDOM | GRND_INSECURE), Err(Errno::EINVAL));
        assert_eq!(check_getrandom_flags(8), Err(Errno::EINVAL));
    }
}
