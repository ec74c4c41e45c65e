//! Validation of names and symlink targets from the client.

use std::ffi::CString;

use nix::errno::Errno;

/// Longest name of a single component, as Linux's `NAME_MAX`.
const NAME_MAX: usize = 255;
/// Longest path, terminator included, as Linux's `PATH_MAX`.
const PATH_MAX: usize = 4096;

/// Checks that `name` is one path component and returns it NUL-terminated.
/// Empty names are `ENOENT`; `.`, `..` and names containing `/` or NUL are
/// `EINVAL`: the client walks one real entry at a time.
pub(super) fn component(name: &[u8]) -> Result<CString, Errno> {
    match name {
        [] => Err(Errno::ENOENT),
        b"." | b".." => Err(Errno::EINVAL),
        _ if name.contains(&b'/') => Err(Errno::EINVAL),
        _ if name.len() > NAME_MAX => Err(Errno::ENAMETOOLONG),
        _ => CString::new(name).map_err(|_| Errno::EINVAL),
    }
}

/// Checks a symlink target: any path, but not empty, without NUL and within
/// `PATH_MAX`. The target is only stored; the gofer never follows it.
pub(super) fn link_target(target: &[u8]) -> Result<CString, Errno> {
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    if target.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    CString::new(target).map_err(|_| Errno::EINVAL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_single_real_components_pass() {
        assert_eq!(component(b"").unwrap_err(), Errno::ENOENT);
        for bad in [&b"."[..], b"..", b"a/b", b"/", b"a\0b", b"a/"] {
            assert_eq!(component(bad).unwrap_err(), Errno::EINVAL, "{bad:?}");
        }
        assert_eq!(component(&[b'x'; 256]).unwrap_err(), Errno::ENAMETOOLONG);
        assert!(component(&[b'x'; 255]).is_ok());
        for good in [&b"a"[..], b"...", b".hidden", b"a b", b"\xff"] {
            assert_eq!(component(good).unwrap().as_bytes(), good);
        }
    }

    #[test]
    fn link_targets_are_checked() {
        assert_eq!(link_target(b"").unwrap_err(), Errno::ENOENT);
        assert_eq!(link_target(b"a\0").unwrap_err(), Errno::EINVAL);
        assert_eq!(link_target(&[b'a'; 4096]).unwrap_err(), Errno::ENAMETOOLONG);
        assert!(link_target(b"../../../etc/passwd").is_ok());
    }
}
