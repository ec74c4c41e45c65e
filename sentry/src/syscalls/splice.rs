//! splice, tee and vmsplice: moving data to and from pipes without the
//! guest copying it. The sentry copies (Linux moves page references);
//! what the guest observes — counts, offsets, blocking, errors — is
//! Linux's. A pipe source is read by peeking and consuming only what the
//! destination took, so nothing is lost when the destination takes less.

use super::args;
use super::block::{nonblocking, read_unless, wait_io, write_unless};
use super::file::{
    count, iovecs, offset_arg, readable_file, readv_into, sigpipe_on_epipe, writable_file, writev_from, CHUNK,
};
use super::{Entries, Support::*};
use crate::abi::{Errno, SysResult};
use crate::fs::pipe::PipeEnd;
use crate::kernel::Task;
use crate::vfs::{FileDescription, FileOps, WRITE_EVENTS};
use std::sync::Arc;

const SPLICE_F_MOVE: u64 = 1;
const SPLICE_F_NONBLOCK: u64 = 2;
const SPLICE_F_MORE: u64 = 4;
const SPLICE_F_GIFT: u64 = 8;
const SPLICE_FLAGS: u64 = SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT;

const COPIES: &str = "copies the data (at most 1 MiB per call) instead of moving pages";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_splice, sys_splice, Partial(COPIES)),
    (libc::SYS_tee, sys_tee, Partial(COPIES)),
    (libc::SYS_vmsplice, sys_vmsplice, Partial("copies the data; SPLICE_F_GIFT is ignored")),
];

/// The pipe end a description is, if it is one.
fn pipe_end(f: &Arc<FileDescription>) -> Option<Arc<PipeEnd>> {
    f.ops.clone().into_any().downcast::<PipeEnd>().ok()
}

/// The room in pipe `p` (the end `f` opens), waiting for some unless
/// `nonblock` or the description is non-blocking; a pipe without readers
/// raises SIGPIPE (EPIPE).
fn room(task: &Task, f: &FileDescription, p: &PipeEnd, nonblock: bool) -> Result<usize, Errno> {
    let r = wait_io(f, WRITE_EVENTS, nonblock || nonblocking(f), None, || p.room());
    if r == Err(Errno::EPIPE) {
        task.kernel.raise_sigpipe(&task.thread);
    }
    r
}

/// The offset an `loff_t *` argument names (None for a null pointer).
fn read_offset(task: &Task, addr: u64) -> Result<Option<u64>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = [0u8; 8];
    task.thread.mm().copy_in(addr, &mut raw)?;
    offset_arg(u64::from_le_bytes(raw)).map(Some)
}

/// Writes `buf` to `out`: at `*off_addr` (then advanced) when given, else
/// at the file position; a pipe destination does not block with
/// `nonblock`.
fn put(task: &Task, out: &Arc<FileDescription>, off_addr: u64, buf: &[u8], nonblock: bool) -> Result<usize, Errno> {
    if let Some(p) = pipe_end(out) {
        return write_unless(out, nonblock, buf, |b| p.write(b, 0));
    }
    match read_offset(task, off_addr)? {
        Some(off) => {
            let n = out.pwrite(buf, off)?;
            task.thread.mm().copy_out(off_addr, &(off + n as u64).to_le_bytes())?;
            Ok(n)
        }
        None if out.ops.seekable() => {
            let n = out.positioned_write(out.appends(), |c| c.write(buf).map(|n| n as u64))?;
            usize::try_from(n).map_err(|_| Errno::EOVERFLOW)
        }
        // Another file (a socket) waits for room unless non-blocking.
        None => super::block::write(out, buf, |b| out.write(b)),
    }
}

/// splice(fd_in, off_in, fd_out, off_out, len, flags): one end must be a
/// pipe; a pipe takes no offset (ESPIPE).
fn sys_splice(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (off_in, off_out, flags) = (a[1], a[3], a[5]);
    if flags & !SPLICE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let input = readable_file(task, a[0])?;
    let out = writable_file(task, a[2])?;
    let (pin, pout) = (pipe_end(&input), pipe_end(&out));
    if pin.is_none() && pout.is_none() {
        return Err(Errno::EINVAL);
    }
    if (pin.is_some() && off_in != 0) || (pout.is_some() && off_out != 0) {
        return Err(Errno::ESPIPE);
    }
    if let (Some(i), Some(o)) = (&pin, &pout) {
        if i.same_pipe(o) {
            return Err(Errno::EINVAL);
        }
    }
    if out.appends() && pout.is_none() {
        return Err(Errno::EINVAL);
    }
    let len = count(a[4]).min(CHUNK);
    if len == 0 {
        return Ok(0);
    }
    let nonblock = flags & SPLICE_F_NONBLOCK != 0;
    // Into a pipe, only what fits now moves (Linux does not block halfway
    // either); nothing is read that could not be written.
    let len = match &pout {
        Some(p) => len.min(room(task, &out, p, nonblock)?),
        None => len,
    };
    let mut buf = vec![0u8; len];
    let moved = match pin {
        Some(p) => {
            let n = read_unless(&input, nonblock, |_| p.try_read(&mut buf, true))?;
            if n == 0 {
                return Ok(0);
            }
            let w = put(task, &out, off_out, &buf[..n], nonblock);
            let w = sigpipe_on_epipe(task, w.map(|w| w as u64))?;
            let taken = usize::try_from(w).map_err(|_| Errno::EINVAL)?;
            p.try_read(&mut buf[..taken], false)?;
            w
        }
        None => {
            let pout = pout.ok_or(Errno::EINVAL)?;
            let mut copy = |off: u64| -> SysResult {
                // A socket waits for data, unless either says not to.
                let n = read_unless(&input, nonblock, |call| {
                    if input.ops.seekable() {
                        input.ops.read(&mut buf, off)
                    } else {
                        input.ops.read_call(&mut buf, call)
                    }
                })?;
                if n == 0 {
                    return Ok(0);
                }
                let w = write_unless(&out, nonblock, &buf[..n], |b| pout.write(b, 0));
                sigpipe_on_epipe(task, w.map(|w| w as u64))
            };
            match read_offset(task, off_in)? {
                Some(off) => {
                    let w = copy(off)?;
                    task.thread.mm().copy_out(off_in, &(off + w).to_le_bytes())?;
                    w
                }
                None if input.ops.seekable() => input.positioned(copy)?,
                None => copy(0)?,
            }
        }
    };
    Ok(moved)
}

/// tee(fd_in, fd_out, len, flags): copies from one pipe to another
/// without consuming.
fn sys_tee(task: &mut Task, a: [u64; 6]) -> SysResult {
    let flags = a[3];
    if flags & !SPLICE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let input = readable_file(task, a[0])?;
    let out = writable_file(task, a[1])?;
    let (Some(pin), Some(pout)) = (pipe_end(&input), pipe_end(&out)) else { return Err(Errno::EINVAL) };
    if pin.same_pipe(&pout) {
        return Err(Errno::EINVAL);
    }
    let len = count(a[2]).min(CHUNK);
    if len == 0 {
        return Ok(0);
    }
    let nonblock = flags & SPLICE_F_NONBLOCK != 0;
    let mut buf = vec![0u8; len.min(room(task, &out, &pout, nonblock)?)];
    let n = read_unless(&input, nonblock, |_| pin.try_read(&mut buf, true))?;
    if n == 0 {
        return Ok(0);
    }
    sigpipe_on_epipe(task, write_unless(&out, nonblock, &buf[..n], |b| pout.write(b, 0)).map(|w| w as u64))
}

/// vmsplice(fd, iov, nr_segs, flags): guest memory into a pipe's write
/// end, or out of its read end.
fn sys_vmsplice(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] & !SPLICE_FLAGS != 0 {
        return Err(Errno::EINVAL);
    }
    let f = args::file(task, a[0])?;
    let p = pipe_end(&f).ok_or(Errno::EBADF)?;
    let nonblock = a[3] & SPLICE_F_NONBLOCK != 0;
    let iov = iovecs(task, a[1], a[2])?;
    if f.writable() {
        // Only what fits now moves, as with splice.
        let mut left = room(task, &f, &p, nonblock)?;
        sigpipe_on_epipe(
            task,
            writev_from(task, &iov, |buf, _| {
                let n = buf.len().min(left);
                let w = write_unless(&f, nonblock, &buf[..n], |b| p.write(b, 0))?;
                left -= w;
                Ok(w)
            }),
        )
    } else if f.readable() {
        readv_into(task, &iov, true, |buf, _| read_unless(&f, nonblock, |_| p.try_read(buf, false)))
    } else {
        Err(Errno::EBADF)
    }
}
