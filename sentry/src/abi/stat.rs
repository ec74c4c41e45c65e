//! The file type bits of `st_mode` (Linux's `include/uapi/linux/stat.h`).

pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_linux() {
        let bits = [
            (S_IFMT, libc::S_IFMT),
            (S_IFSOCK, libc::S_IFSOCK),
            (S_IFLNK, libc::S_IFLNK),
            (S_IFREG, libc::S_IFREG),
            (S_IFBLK, libc::S_IFBLK),
            (S_IFDIR, libc::S_IFDIR),
            (S_IFCHR, libc::S_IFCHR),
            (S_IFIFO, libc::S_IFIFO),
        ];
        for (ours, linux) in bits {
            assert_eq!(ours, linux);
        }
    }
}
