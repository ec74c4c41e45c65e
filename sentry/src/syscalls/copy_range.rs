//! copy_file_range(2): copies a range of one regular file into another
//! through the sentry, with Linux 6.x's checks in Linux's order
//! (`generic_copy_file_checks`, `rw_verify_area`).

use super::file::{count, CHUNK};
use super::{args, Entries, Support::*};
use crate::abi::fcntl::SEEK_SET;
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use crate::vfs::{FileDescription, S_IFDIR, S_IFMT, S_IFREG};

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_copy_file_range,
    sys_copy_file_range,
    Partial("within one filesystem (EXDEV across them, as Linux 5.19+ for filesystems without a copy_file_range of their own); the data is copied, never reflinked"),
)];

/// Reads the `loff_t` at `addr`, if given.
fn read_pos(task: &Task, addr: u64) -> Result<Option<i64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = [0u8; 8];
    task.thread.mm().copy_in(addr, &mut raw)?;
    Ok(Some(i64::from_le_bytes(raw)))
}

/// The same 64 bits, unsigned.
fn bits(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

/// The same 64 bits, signed.
fn signed(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

/// The position a copy starts at: given, or the file's own.
fn start(given: Option<i64>, f: &FileDescription) -> i64 {
    given.unwrap_or_else(|| i64::try_from(f.offset()).unwrap_or(i64::MAX))
}

fn sys_copy_file_range(task: &mut Task, a: [u64; 6]) -> SysResult {
    let fin = args::file(task, a[0])?;
    let fout = args::file(task, a[2])?;
    if fin.is_path() || fout.is_path() {
        return Err(Errno::EBADF);
    }
    let (given_in, given_out) = (read_pos(task, a[1])?, read_pos(task, a[3])?);
    if a[5] != 0 {
        return Err(Errno::EINVAL);
    }
    let (sin, sout) = (fin.stat()?, fout.stat()?);
    if sin.mode & S_IFMT == S_IFDIR || sout.mode & S_IFMT == S_IFDIR {
        return Err(Errno::EISDIR);
    }
    if sin.mode & S_IFMT != S_IFREG || sout.mode & S_IFMT != S_IFREG {
        return Err(Errno::EINVAL);
    }
    if !fin.readable() || !fout.writable() || fout.appends() {
        return Err(Errno::EBADF);
    }
    // No sentry filesystem copies across filesystems by itself.
    if fin.dentry.node.fs_id() != fout.dentry.node.fs_id() {
        return Err(Errno::EXDEV);
    }
    let (pos_in, pos_out) = (start(given_in, &fin), start(given_out, &fout));
    let len = count(a[4]) as u64;
    let (uin, uout) = (bits(pos_in), bits(pos_out));
    if uin.checked_add(len).is_none() || uout.checked_add(len).is_none() {
        return Err(Errno::EOVERFLOW);
    }
    let len = if pos_in >= signed(sin.size) { 0 } else { len.min(sin.size.wrapping_sub(uin)) };
    let len = super::fsize::writable_len(task, &fout, || Ok(uout), usize::try_from(len).unwrap_or(usize::MAX))? as u64;
    let same = (sin.dev, sin.ino) == (sout.dev, sout.ino);
    if same && uout.wrapping_add(len) > uin && uout < uin.wrapping_add(len) {
        return Err(Errno::EINVAL);
    }
    if pos_in < 0 || pos_out < 0 || uin.checked_add(len).is_none_or(|e| signed(e) < 0) {
        return Err(Errno::EINVAL);
    }
    if len == 0 {
        return Ok(0);
    }
    super::audit_files::write(task, &fout)?;
    let done = copy(&fin, uin, &fout, uout, len)?;
    let mm = task.thread.mm();
    for (given, addr, f, pos) in [(given_in, a[1], &fin, uin), (given_out, a[3], &fout, uout)] {
        let end = pos + done;
        match given {
            Some(_) => mm.copy_out(addr, &end.to_le_bytes())?,
            None => {
                f.seek(signed(end), SEEK_SET)?;
            }
        }
    }
    Ok(done)
}

/// Copies up to `len` bytes from `fin` at `pos_in` to `fout` at `pos_out`;
/// returns how many. An error after some progress ends the copy short.
fn copy(fin: &FileDescription, pos_in: u64, fout: &FileDescription, pos_out: u64, len: u64) -> SysResult {
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(CHUNK).min(CHUNK)];
    let mut done = 0u64;
    while done < len {
        let want = usize::try_from(len - done).unwrap_or(CHUNK).min(CHUNK);
        let n = match fin.ops.read(&mut buf[..want], pos_in + done) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        let w = match fout.ops.write(&buf[..n], pos_out + done) {
            Ok(w) => w,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += w as u64;
        if w < n {
            break;
        }
    }
    Ok(done)
}
