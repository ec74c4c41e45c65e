//! Limits of names and paths (Linux's `include/uapi/linux/limits.h`).

/// The longest name of one path component.
pub(crate) const NAME_MAX: usize = 255;
/// The longest path accepted, with its terminating NUL.
pub(crate) const PATH_MAX: usize = 4096;

#[cfg(test)]
mod tests {
    #[test]
    fn path_max_matches_linux() {
        assert_eq!(Ok(super::PATH_MAX), usize::try_from(libc::PATH_MAX));
    }
}
