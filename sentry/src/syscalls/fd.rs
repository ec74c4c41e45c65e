//! System calls: the descriptor table — dup, fcntl, ioctl, pipes.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::fcntl::{
    CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE, EFD_SEMAPHORE, FD_CLOEXEC, F_ADD_SEALS, F_DUPFD, F_DUPFD_CLOEXEC,
    F_GETFD, F_GETFL, F_GETLK, F_GETOWN, F_GETOWN_EX, F_GETPIPE_SZ, F_GETSIG, F_GET_SEALS, F_NOTIFY, F_OFD_GETLK,
    F_OFD_SETLK, F_OFD_SETLKW, F_RDLCK, F_SETFD, F_SETFL, F_SETLK, F_SETLKW, F_SETOWN, F_SETOWN_EX, F_SETPIPE_SZ,
    F_SETSIG, F_UNLCK, F_WRLCK, LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN, O_ASYNC, O_NONBLOCK, O_RDWR, O_WRONLY, SEEK_CUR,
    SEEK_END, SEEK_SET,
};
use crate::abi::ioctl::{FIOASYNC, FIOCLEX, FIONBIO, FIONCLEX};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::fs::pipe::Pipe;
use crate::kernel::caller::Caller;
use crate::kernel::record_lock::{file_id, Kind, Lock, Owner};
use crate::kernel::Task;
use crate::vfs::{FileDescription, TimeSpec};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_dup, sys_dup, Full),
    (libc::SYS_dup2, sys_dup2, Full),
    (libc::SYS_dup3, sys_dup3, Full),
    (
        libc::SYS_fcntl,
        sys_fcntl,
        Partial("no leases; SIGURG for a TCP or Unix stream socket's urgent data; O_ASYNC signals (SIGIO or the F_SETSIG signal, with si_fd and si_band) from pipes, FIFOs, sockets, terminals and inotify, but: a socket's or terminal end's owner gets POLL_OUT whenever room is made (Linux: only after a write found it full), a Unix datagram socket's POLL_IN when its peer closes (Linux: nothing), a TCP or UDP socket's at every change of its endpoint, a hang-up comes as POLL_IN (Linux: POLL_HUP for a Unix stream peer's close), a FIFO end's also when a partner opens, and a realtime signal the queue has no room for is lost instead of replaced by SIGIO; record locks are the sandbox's own, not shared with the host; F_SETPIPE_SZ does not apply the per-user pipe page limits; F_NOTIFY (dnotify) signals as Linux for changes made inside the sandbox (those of a gofer-served directory made on the host are not seen, as inotify's), and a registration belongs to the process, not to its descriptor table (Linux's files_struct: processes sharing a table by CLONE_FILES share registrations there)"),
    ),
    (
        libc::SYS_ioctl,
        sys_ioctl,
        Partial("generic descriptor ioctls (FIOASYNC as fcntl's O_ASYNC), FIONREAD of pipes, sockets and inotify, SIOCATMARK of TCP sockets (0 for a stream carried outside) and Unix stream sockets (EOPNOTSUPP on other Unix sockets, as Linux), SIOCGSTAMP and SIOCGSTAMPNS of IP sockets (the last datagram received without a timestamp message; ENOENT before one, and always on TCP), the sentry's terminals (no packet mode), terminal queries of the host's stdio"),
    ),
    (libc::SYS_close_range, sys_close_range, Full),
    (libc::SYS_eventfd, sys_eventfd, Full),
    (libc::SYS_eventfd2, sys_eventfd2, Full),
    (libc::SYS_flock, sys_flock, Partial("locks are shared by the sandbox's processes only, not with the host")),
    (libc::SYS_pipe, sys_pipe, Full),
    (libc::SYS_pipe2, sys_pipe2, Partial("O_DIRECT (packet mode) is not supported")),
];

fn fd_result(fd: i32) -> SysResult {
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}

fn sys_dup(task: &mut Task, a: [u64; 6]) -> SysResult {
    let fds = task.thread.fds();
    let f = fds.get(int(a[0]))?;
    fd_result(fds.install(f, false, 0, task.thread.nofile())?)
}

fn dup_to(task: &Task, old: i32, new: i32, cloexec: bool) -> SysResult {
    let fds = task.thread.fds();
    let f = fds.get(old)?;
    if new < 0 {
        return Err(Errno::EBADF);
    }
    if let Some(replaced) = fds.install_at(new, f, cloexec, task.thread.nofile())? {
        task.kernel.descriptor_closed(task.thread.tgid(), &replaced);
    }
    fd_result(new)
}

fn sys_dup2(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (old, new) = (int(a[0]), int(a[1]));
    if old == new {
        task.thread.fds().get(old)?;
        return fd_result(new);
    }
    dup_to(task, old, new, false)
}

fn sys_dup3(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (old, new) = (int(a[0]), int(a[1]));
    let flags = int(a[2]);
    if flags & !libc::O_CLOEXEC != 0 || old == new {
        return Err(Errno::EINVAL);
    }
    dup_to(task, old, new, flags & libc::O_CLOEXEC != 0)
}

/// A `struct flock` request: its type and the range it names, resolved
/// against the file (`start..=end`, `end` u64::MAX for "to the end and
/// on"), and its l_pid.
struct FlockRequest {
    kind: Kind,
    start: u64,
    end: u64,
    pid: i32,
}

/// Reads the `struct flock` at `addr` for `f`: l_whence SEEK_SET, SEEK_CUR
/// (from the file position) or SEEK_END (from its size); l_len 0 means to
/// the end and on, a negative one the bytes before l_start.
fn read_flock(task: &Task, f: &FileDescription, addr: u64) -> Result<FlockRequest, Errno> {
    let mut raw = [0u8; 32];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut d = Decoder::new(&raw);
    let kind = match d.i16() {
        F_RDLCK => Kind::Read,
        F_WRLCK => Kind::Write,
        F_UNLCK => Kind::Unlock,
        _ => return Err(Errno::EINVAL),
    };
    let whence = u32::try_from(d.i16());
    d.skip(4);
    let (start, len, pid) = (d.i64(), d.i64(), d.i32());
    let base = match whence {
        Ok(SEEK_SET) => 0,
        Ok(SEEK_CUR) => i64::try_from(f.offset()).map_err(|_| Errno::EOVERFLOW)?,
        Ok(SEEK_END) => i64::try_from(f.stat()?.size).map_err(|_| Errno::EOVERFLOW)?,
        _ => return Err(Errno::EINVAL),
    };
    let start = base.checked_add(start).ok_or(Errno::EOVERFLOW)?;
    let (start, end) = match len {
        0 => (start, None),
        l if l > 0 => (start, Some(start.checked_add(l - 1).ok_or(Errno::EOVERFLOW)?)),
        l => (start.checked_add(l).ok_or(Errno::EINVAL)?, Some(start.checked_sub(1).ok_or(Errno::EINVAL)?)),
    };
    let start = u64::try_from(start).map_err(|_| Errno::EINVAL)?;
    let end = match end {
        None => u64::MAX,
        Some(e) => u64::try_from(e).map_err(|_| Errno::EINVAL)?,
    };
    Ok(FlockRequest { kind, start, end, pid })
}

/// Whose lock a request on `f` is: the calling process's, or with `ofd`
/// the open file description's (whose l_pid must be 0).
fn lock_owner(task: &Task, f: &Arc<FileDescription>, ofd: bool, r: &FlockRequest) -> Result<Owner, Errno> {
    if !ofd {
        return Ok(Owner::Process(task.thread.tgid()));
    }
    if r.pid != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Owner::Description(Arc::as_ptr(f) as usize))
}

/// F_GETLK, F_OFD_GETLK: the first lock that would conflict with the
/// request, or F_UNLCK.
fn getlk(task: &Task, f: &Arc<FileDescription>, addr: u64, ofd: bool) -> SysResult {
    let r = read_flock(task, f, addr)?;
    let owner = lock_owner(task, f, ofd, &r)?;
    if r.kind == Kind::Unlock {
        return Err(Errno::EINVAL);
    }
    let probe = Lock { owner, start: r.start, end: r.end, exclusive: r.kind == Kind::Write };
    let mut e = Encoder::new();
    match task.kernel.record_locks().test(file_id(f)?, &probe) {
        None => {
            e.i16(F_UNLCK);
            task.thread.mm().copy_out(addr, e.as_bytes())?;
        }
        Some(l) => {
            let len = if l.end == u64::MAX { 0 } else { l.end - l.start + 1 };
            let pid = match l.owner {
                Owner::Process(p) => p,
                Owner::Description(_) => -1,
            };
            e.i16(if l.exclusive { 1 } else { 0 }).i16(0).i32(0);
            e.i64(i64::try_from(l.start).unwrap_or(i64::MAX)).i64(i64::try_from(len).unwrap_or(i64::MAX)).i32(pid);
            task.thread.mm().copy_out(addr, e.as_bytes())?;
        }
    }
    Ok(0)
}

/// F_SETLK, F_SETLKW and their OFD forms: takes, changes or releases a
/// lock; a read lock needs the file open for reading, a write lock for
/// writing.
fn setlk(task: &Task, f: &Arc<FileDescription>, addr: u64, ofd: bool, wait: bool) -> SysResult {
    let r = read_flock(task, f, addr)?;
    let owner = lock_owner(task, f, ofd, &r)?;
    if (r.kind == Kind::Read && !f.readable()) || (r.kind == Kind::Write && !f.writable()) {
        return Err(Errno::EBADF);
    }
    let locks = &task.kernel.record_locks();
    locks.set(file_id(f)?, owner, r.start, r.end, r.kind, wait)?;
    if let (Owner::Description(_), true) = (owner, r.kind != Kind::Unlock) {
        let k = task.kernel.clone();
        f.on_release("ofd-lock", Box::new(move || k.record_locks().release(owner, None)));
    }
    Ok(0)
}

fn sys_fcntl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let fd = int(a[0]);
    let fds = task.thread.fds();
    let f = fds.get(fd)?;
    let cmd = args::uint(a[1]);
    match cmd {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            let min = int(a[2]);
            if min < 0 || u64::try_from(min).unwrap_or(u64::MAX) >= task.thread.nofile() {
                return Err(Errno::EINVAL);
            }
            fd_result(fds.install(f, cmd == F_DUPFD_CLOEXEC, min, task.thread.nofile())?)
        }
        F_GETFD => Ok(if fds.cloexec(fd)? { FD_CLOEXEC } else { 0 }),
        F_SETFD => {
            fds.set_cloexec(fd, a[2] & FD_CLOEXEC != 0)?;
            Ok(0)
        }
        F_GETFL => Ok(u64::from(f.flags())),
        F_SETFL => {
            if f.is_path() {
                return Err(Errno::EBADF);
            }
            let flags = args::uint(a[2]);
            let append = flags & (libc::O_APPEND as u32) != 0;
            if append != f.appends() {
                // The file may refuse (an append-only host file, EPERM).
                f.ops.set_append(append)?;
            }
            let enabled = f.set_status_flags_via(fd, flags);
            super::fown::async_enabled(task, &f, enabled);
            Ok(0)
        }
        _ if f.is_path() => Err(Errno::EBADF),
        F_GETLK | F_OFD_GETLK => getlk(task, &f, a[2], cmd == F_OFD_GETLK),
        F_SETLK | F_SETLKW | F_OFD_SETLK | F_OFD_SETLKW => {
            setlk(task, &f, a[2], cmd >= F_OFD_SETLK, cmd == F_SETLKW || cmd == F_OFD_SETLKW)
        }
        F_GETOWN | F_SETOWN | F_GETOWN_EX | F_SETOWN_EX | F_GETSIG | F_SETSIG => {
            super::fown::fcntl(task, &f, cmd, a[2])
        }
        F_GETPIPE_SZ => Ok(u64::try_from(f.ops.pipe_capacity(None)?).unwrap_or(0)),
        F_SETPIPE_SZ => {
            let want = usize::try_from(args::uint(a[2])).map_err(|_| Errno::EINVAL)?;
            let privileged = task.thread.creds().capable(crate::auth::caps::CAP_SYS_RESOURCE);
            Ok(u64::try_from(f.ops.pipe_capacity(Some((want, privileged)))?).unwrap_or(0))
        }
        F_NOTIFY => super::dnotify::fcntl(task, &f, fd, args::uint(a[2])),
        F_GET_SEALS => Ok(u64::from(f.ops.seals()?)),
        F_ADD_SEALS => {
            // Linux's memfd_add_seals, in its order; the argument is an
            // unsigned int (do_fcntl's `argi`).
            let seals = args::uint(a[2]);
            if !f.writable() {
                return Err(Errno::EPERM);
            }
            if seals & !crate::fs::seals::F_ALL_SEALS != 0 {
                return Err(Errno::EINVAL);
            }
            f.ops.add_seals(seals)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn sys_ioctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let fd = int(a[0]);
    let fds = task.thread.fds();
    let f = fds.get(fd)?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    let req = a[1] & 0xffff_ffff;
    match req {
        FIOCLEX | FIONCLEX => {
            fds.set_cloexec(fd, req == FIOCLEX)?;
            Ok(0)
        }
        FIONBIO => {
            let mut raw = [0u8; 4];
            task.thread.mm().copy_in(a[2], &mut raw)?;
            let on = i32::from_le_bytes(raw) != 0;
            let flags = f.flags() & !O_NONBLOCK;
            let nb = if on { O_NONBLOCK } else { 0 };
            f.set_status_flags(flags | nb);
            Ok(0)
        }
        FIOASYNC => {
            let mut raw = [0u8; 4];
            task.thread.mm().copy_in(a[2], &mut raw)?;
            let on = i32::from_le_bytes(raw) != 0;
            // Linux's ioctl_fioasync: a change on a file without ->fasync
            // is ENOTTY.
            if on != (f.flags() & O_ASYNC != 0) && !f.signals_io() {
                return Err(Errno::ENOTTY);
            }
            let flags = f.flags() & !O_ASYNC;
            let enabled = f.set_status_flags_via(fd, flags | if on { O_ASYNC } else { 0 });
            super::fown::async_enabled(task, &f, enabled);
            Ok(0)
        }
        _ => f.ops.ioctl(&Caller::new(task.kernel.clone(), task.thread.clone()), req, a[2]),
    }
}

fn pipe(task: &Task, addr: u64, flags: i32) -> SysResult {
    if flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_DIRECT) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & libc::O_DIRECT != 0 {
        return Err(Errno::EINVAL);
    }
    let ino = task.kernel.anon_ino();
    let now = now();
    let p = Pipe::new(ino, now);
    let name = format!("pipe:[{ino}]");
    let dentry = task.kernel.anon_dentry(name.as_bytes(), p.clone());
    let nb = u32::try_from(flags & libc::O_NONBLOCK).unwrap_or(0);
    let r = FileDescription::new(dentry.clone(), p.reader(), nb);
    let w = FileDescription::new(dentry, p.writer(), O_WRONLY | nb);
    let cloexec = flags & libc::O_CLOEXEC != 0;
    let fds = task.thread.fds();
    let limit = task.thread.nofile();
    let rfd = fds.install(r, cloexec, 0, limit)?;
    let wfd = match fds.install(w, cloexec, 0, limit) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = fds.remove(rfd);
            return Err(e);
        }
    };
    let mut out = Encoder::new();
    out.i32(rfd).i32(wfd);
    if let Err(e) = task.thread.mm().copy_out(addr, out.as_bytes()) {
        let _ = fds.remove(rfd);
        let _ = fds.remove(wfd);
        return Err(e);
    }
    Ok(0)
}

/// The realtime clock as a TimeSpec.
pub(super) fn now() -> TimeSpec {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    TimeSpec { sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX), nsec: i64::from(d.subsec_nanos()) }
}

fn sys_close_range(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (first, last) = (args::uint(a[0]), args::uint(a[1]));
    if a[2] & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
        return Err(Errno::EINVAL);
    }
    let fds = task.thread.fds();
    let in_range = |fd: i32| u32::try_from(fd).is_ok_and(|f| (first..=last).contains(&f));
    for fd in fds.fds().into_iter().filter(|&fd| in_range(fd)) {
        if a[2] & CLOSE_RANGE_CLOEXEC != 0 {
            fds.set_cloexec(fd, true)?;
        } else {
            let f = fds.remove(fd)?;
            task.kernel.descriptor_closed(task.thread.tgid(), &f);
        }
    }
    Ok(0)
}

fn sys_pipe(task: &mut Task, a: [u64; 6]) -> SysResult {
    pipe(task, a[0], 0)
}

fn sys_pipe2(task: &mut Task, a: [u64; 6]) -> SysResult {
    pipe(task, a[0], int(a[1]))
}

fn eventfd(task: &Task, initval: u64, flags: i32) -> SysResult {
    if flags & !(EFD_SEMAPHORE | libc::O_NONBLOCK | libc::O_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let nonblock = flags & libc::O_NONBLOCK != 0;
    let k = &task.kernel;
    let e = crate::fs::eventfd::EventFd::new(
        k.anon_ino(),
        now(),
        u64::from(args::uint(initval)),
        flags & EFD_SEMAPHORE != 0,
    );
    let d = k.anon_dentry(b"anon_inode:[eventfd]", e.clone());
    let status = O_RDWR | if nonblock { O_NONBLOCK } else { 0 };
    let f = FileDescription::new(d, e, status);
    fd_result(task.thread.fds().install(f, flags & libc::O_CLOEXEC != 0, 0, task.thread.nofile())?)
}

fn sys_eventfd(task: &mut Task, a: [u64; 6]) -> SysResult {
    eventfd(task, a[0], 0)
}

fn sys_eventfd2(task: &mut Task, a: [u64; 6]) -> SysResult {
    eventfd(task, a[0], int(a[1]))
}

fn sys_flock(task: &mut Task, a: [u64; 6]) -> SysResult {
    use crate::kernel::flock::FlockOp;
    let f = args::file(task, a[0])?;
    if f.is_path() {
        return Err(Errno::EBADF);
    }
    let how = int(a[1]);
    let op = match how & !LOCK_NB {
        LOCK_SH => FlockOp::Shared,
        LOCK_EX => FlockOp::Exclusive,
        LOCK_UN => FlockOp::Unlock,
        _ => return Err(Errno::EINVAL),
    };
    let st = f.stat()?;
    let owner = Arc::as_ptr(&f) as usize;
    let flocks = task.kernel.flocks().clone();
    flocks.lock((st.dev, st.ino), owner, op, how & LOCK_NB != 0)?;
    if op != FlockOp::Unlock {
        let release = flocks.clone();
        f.on_release("flock", Box::new(move || release.release_all(owner)));
    }
    Ok(0)
}
