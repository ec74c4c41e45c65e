//! Extended attributes: setxattr(2)'s flags and Linux's size limits.

/// setxattr(2): fail with EEXIST if the attribute exists.
pub const XATTR_CREATE: u32 = 1;
/// setxattr(2): fail with ENODATA unless the attribute exists.
pub const XATTR_REPLACE: u32 = 2;
/// The longest attribute name Linux accepts.
pub const XATTR_NAME_MAX: usize = 255;
/// The largest value (and the most a get or list copies out).
pub const XATTR_SIZE_MAX: usize = 65536;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_match_linux() {
        assert_eq!(i32::try_from(XATTR_CREATE), Ok(libc::XATTR_CREATE));
        assert_eq!(i32::try_from(XATTR_REPLACE), Ok(libc::XATTR_REPLACE));
    }
}
