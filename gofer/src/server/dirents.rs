//! Reading a directory one page at a time with `getdents64`.
//!
//! A page resumes at a cookie, the kernel's `d_off` of the last entry the
//! previous page held (0 for the start), so the server keeps no per-listing
//! state between requests.

use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd};

use nix::errno::Errno;
use nix::unistd::{lseek, Whence};

use super::host;
use crate::Dirent;

/// Bytes asked of each `getdents64` call.
const READ_CHUNK: usize = 32 * 1024;
/// A page stops growing once its entries take this many bytes on the wire;
/// one more chunk may follow, so a page stays far below the frame limit.
const PAGE_BUDGET: usize = 64 * 1024;
/// Bytes of a `linux_dirent64` before the name: `d_ino`, `d_off`,
/// `d_reclen`, `d_type`.
const RECORD_HEADER: usize = 19;
/// Bytes of an entry on the wire besides its name.
const WIRE_OVERHEAD: usize = 8 + 1 + 4;

/// One page of a directory.
pub(super) struct Page {
    pub entries: Vec<Dirent>,
    /// Where the next page starts; `None` at the end of the directory.
    pub next_cookie: Option<u64>,
}

/// Reads the page of `dir` (an fd open for reading) that starts at `cookie`.
/// `.` and `..` are left out.
pub(super) fn read_page(dir: BorrowedFd<'_>, cookie: u64) -> Result<Page, Errno> {
    if cookie != 0 {
        let offset = i64::try_from(cookie).map_err(|_| Errno::EINVAL)?;
        lseek(dir.as_raw_fd(), offset, Whence::SeekSet)?;
    }
    let mut buf = vec![0u8; READ_CHUNK];
    let mut entries = Vec::new();
    let mut encoded = 0usize;
    let mut position = cookie;
    while encoded < PAGE_BUDGET {
        let len = getdents64(dir, &mut buf)?;
        if len == 0 {
            return Ok(Page { entries, next_cookie: None });
        }
        let mut records = &buf[..len];
        while !records.is_empty() {
            let record = Record::parse(&mut records)?;
            position = record.off;
            if record.name == b"." || record.name == b".." {
                continue;
            }
            encoded += WIRE_OVERHEAD + record.name.len();
            entries.push(Dirent { ino: record.ino, kind: record.kind(dir), name: record.name.to_vec() });
        }
    }
    Ok(Page { entries, next_cookie: Some(position) })
}

fn getdents64(dir: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `dir` is an open fd and `buf` is writable for `buf.len()`
    // bytes; the kernel writes at most that many.
    let rc = unsafe { libc::syscall(libc::SYS_getdents64, dir.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
    usize::try_from(rc).map_err(|_| Errno::last())
}

/// One `linux_dirent64` record.
struct Record<'a> {
    ino: u64,
    off: u64,
    d_type: u8,
    name: &'a [u8],
}

impl<'a> Record<'a> {
    /// Takes the record at the front of `records`. The kernel wrote these,
    /// but every length is still checked.
    fn parse(records: &mut &'a [u8]) -> Result<Record<'a>, Errno> {
        let buf = *records;
        if buf.len() < RECORD_HEADER {
            return Err(Errno::EIO);
        }
        let field = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&buf[at..at + 8]);
            u64::from_ne_bytes(bytes)
        };
        let reclen = usize::from(u16::from_ne_bytes([buf[16], buf[17]]));
        if reclen <= RECORD_HEADER || reclen > buf.len() {
            return Err(Errno::EIO);
        }
        let name_field = &buf[RECORD_HEADER..reclen];
        let name_len = name_field.iter().position(|&b| b == 0).ok_or(Errno::EIO)?;
        *records = &buf[reclen..];
        Ok(Record { ino: field(0), off: field(8), d_type: buf[18], name: &name_field[..name_len] })
    }

    /// The entry's `DT_*` type, asking the file system with `fstatat` when
    /// it does not fill `d_type` in.
    fn kind(&self, dir: BorrowedFd<'_>) -> u8 {
        if self.d_type != libc::DT_UNKNOWN {
            return self.d_type;
        }
        CString::new(self.name).ok().and_then(|name| host::lstat_mode(dir, &name).ok()).map_or(libc::DT_UNKNOWN, dtype)
    }
}

/// The `DT_*` type for a file mode.
fn dtype(mode: u32) -> u8 {
    match mode & libc::S_IFMT {
        libc::S_IFREG => libc::DT_REG,
        libc::S_IFDIR => libc::DT_DIR,
        libc::S_IFLNK => libc::DT_LNK,
        libc::S_IFIFO => libc::DT_FIFO,
        libc::S_IFSOCK => libc::DT_SOCK,
        libc::S_IFCHR => libc::DT_CHR,
        libc::S_IFBLK => libc::DT_BLK,
        _ => libc::DT_UNKNOWN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ino: u64, off: u64, d_type: u8, name: &[u8]) -> Vec<u8> {
        let reclen = (RECORD_HEADER + name.len() + 1).next_multiple_of(8);
        let mut rec = Vec::with_capacity(reclen);
        rec.extend_from_slice(&ino.to_ne_bytes());
        rec.extend_from_slice(&off.to_ne_bytes());
        rec.extend_from_slice(&u16::try_from(reclen).unwrap().to_ne_bytes());
        rec.push(d_type);
        rec.extend_from_slice(name);
        rec.resize(reclen, 0);
        rec
    }

    #[test]
    fn records_parse_and_bad_lengths_are_refused() {
        let mut buf = record(7, 99, libc::DT_REG, b"hello");
        buf.extend(record(8, 100, libc::DT_DIR, b"d"));
        let mut rest = &buf[..];
        let first = Record::parse(&mut rest).unwrap();
        assert_eq!((first.ino, first.off, first.name), (7, 99, &b"hello"[..]));
        let second = Record::parse(&mut rest).unwrap();
        assert_eq!((second.d_type, second.name), (libc::DT_DIR, &b"d"[..]));
        assert!(rest.is_empty());

        let good = record(1, 2, libc::DT_REG, b"x");
        assert_eq!(Record::parse(&mut &good[..10]).err(), Some(Errno::EIO));
        let mut long = good.clone();
        long[16..18].copy_from_slice(&200u16.to_ne_bytes());
        assert_eq!(Record::parse(&mut &long[..]).err(), Some(Errno::EIO));
        let mut unterminated = good.clone();
        unterminated[RECORD_HEADER..].fill(b'x');
        assert_eq!(Record::parse(&mut &unterminated[..]).err(), Some(Errno::EIO));
    }

    #[test]
    fn modes_map_to_dirent_types() {
        assert_eq!(dtype(libc::S_IFREG | 0o644), libc::DT_REG);
        assert_eq!(dtype(libc::S_IFLNK), libc::DT_LNK);
        assert_eq!(dtype(0), libc::DT_UNKNOWN);
    }
}
