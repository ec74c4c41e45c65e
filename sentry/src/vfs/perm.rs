//! Permission checks of file modes against a task's credentials.

use super::{Stat, S_IFDIR, S_IFMT};
use crate::abi::Errno;
use crate::kernel::Credentials;

pub const MAY_EXEC: u32 = 1;
pub const MAY_WRITE: u32 = 2;
pub const MAY_READ: u32 = 4;

/// Checks `want` (MAY_* bits) against a node's owner and mode, as
/// `generic_permission` does: the owner class, else the group class, else
/// other; `CAP_DAC_OVERRIDE` (fsuid 0) passes everything but executing a
/// file with no execute bit at all.
pub fn check(creds: &Credentials, st: &Stat, want: u32) -> Result<(), Errno> {
    let mode = st.mode;
    if creds.fsuid == 0 {
        let is_dir = mode & S_IFMT == S_IFDIR;
        if want & MAY_EXEC != 0 && !is_dir && mode & 0o111 == 0 {
            return Err(Errno::EACCES);
        }
        return Ok(());
    }
    let class = if creds.fsuid == st.uid {
        (mode >> 6) & 7
    } else if creds.in_group(st.gid) {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    if class & want == want {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(mode: u32, uid: u32, gid: u32) -> Stat {
        Stat { mode, uid, gid, ..Stat::default() }
    }

    #[test]
    fn owner_group_other_classes() {
        let c = Credentials::new(1000, 1000);
        assert!(check(&c, &st(0o100600, 1000, 0), MAY_READ | MAY_WRITE).is_ok());
        assert_eq!(check(&c, &st(0o100060, 1000, 1000), MAY_READ), Err(Errno::EACCES));
        assert!(check(&c, &st(0o100060, 0, 1000), MAY_READ).is_ok());
        assert!(check(&c, &st(0o100004, 0, 0), MAY_READ).is_ok());
        assert_eq!(check(&c, &st(0o100004, 0, 0), MAY_WRITE), Err(Errno::EACCES));
    }

    #[test]
    fn root_overrides_but_needs_an_exec_bit() {
        let c = Credentials::new(0, 0);
        assert!(check(&c, &st(0o100000, 5, 5), MAY_READ | MAY_WRITE).is_ok());
        assert_eq!(check(&c, &st(0o100644, 5, 5), MAY_EXEC), Err(Errno::EACCES));
        assert!(check(&c, &st(0o100744, 5, 5), MAY_EXEC).is_ok());
        assert!(check(&c, &st(0o040000, 5, 5), MAY_EXEC).is_ok());
    }
}
