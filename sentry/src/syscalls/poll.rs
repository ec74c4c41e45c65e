//! System calls: poll and select.

use super::args::{self, int};
use super::{Entries, Support::*};
use crate::abi::layout::{Decoder, Encoder, Layout};
use crate::abi::poll::PollFd;
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM};
use crate::abi::{Errno, SysResult};
use crate::kernel::signal::sigbit;
use crate::kernel::Task;
use crate::vfs::FileDescription;
use crate::waiter::{Entry, Waiter};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NOTE: &str =
    "a file wakes only the polls waiting on it, at once; only a TCP or Unix stream socket with urgent data waiting reports POLLPRI";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_poll, sys_poll, Partial(NOTE)),
    (libc::SYS_ppoll, sys_ppoll, Partial(NOTE)),
    (libc::SYS_select, sys_select, Partial(NOTE)),
    (libc::SYS_pselect6, sys_pselect6, Partial(NOTE)),
];

/// The events of descriptor `fd` now; POLLNVAL for a closed one.
fn events_of(task: &Task, fd: i32) -> u32 {
    match task.thread.fds().get(fd) {
        Ok(f) if !f.is_path() => f.ops.poll_events(),
        _ => POLLNVAL,
    }
}

/// A poller's registrations: one waiter, an entry on each file's queue.
struct Watch {
    waiter: Arc<Waiter>,
    files: Vec<(Arc<FileDescription>, Entry)>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        for (f, e) in &self.files {
            f.ops.event_unregister(e);
        }
    }
}

/// Runs `check` until it reports something or `deadline` passes (0). In
/// between it waits on the queues of `files`, each for its events: a
/// change of another file does not wake it, and nothing is re-checked on
/// a timer.
pub(super) fn wait_for(
    task: &Task,
    files: impl Fn() -> Vec<(i32, u32)>,
    deadline: Option<Instant>,
    mut check: impl FnMut() -> Result<usize, Errno>,
) -> Result<usize, Errno> {
    let n = check()?;
    if n > 0 || deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(n);
    }
    let waiter = Waiter::new();
    let mut watch = Watch { waiter: waiter.clone(), files: Vec::new() };
    let fds = task.thread.fds();
    for (fd, mask) in files() {
        if let Ok(f) = fds.get(fd) {
            let e = Entry::new(mask | POLLERR | POLLHUP, waiter.clone());
            f.ops.event_register(&e);
            watch.files.push((f, e));
        }
    }
    drop(fds);
    loop {
        let n = check()?;
        if n > 0 {
            return Ok(n);
        }
        match watch.waiter.wait(deadline) {
            Ok(()) => {}
            Err(Errno::ETIMEDOUT) => return check(),
            Err(_) => return Err(Errno::ERESTARTNOHAND),
        }
    }
}

fn poll(task: &Task, addr: u64, nfds: u64, deadline: Option<Instant>) -> SysResult {
    let n = usize::try_from(args::uint(nfds)).map_err(|_| Errno::EINVAL)?;
    if n as u64 > task.thread.nofile() {
        return Err(Errno::EINVAL);
    }
    let mut raw = vec![0u8; n * PollFd::SIZE];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut fds: Vec<(i32, u32)> = raw
        .chunks_exact(PollFd::SIZE)
        .map(|c| {
            let p = PollFd::decode(c);
            (p.fd, u32::from(p.events))
        })
        .collect();
    let mut revents = vec![0u32; n];
    let watched: Vec<(i32, u32)> = fds.iter().filter(|(fd, _)| *fd >= 0).copied().collect();
    let ready = wait_for(
        task,
        || watched.clone(),
        deadline,
        || {
            let mut count = 0;
            for (i, (fd, ev)) in fds.iter_mut().enumerate() {
                revents[i] = if *fd < 0 {
                    0
                } else {
                    let r = events_of(task, *fd);
                    r & (*ev | POLLERR | POLLHUP | POLLNVAL)
                };
                if revents[i] != 0 {
                    count += 1;
                }
            }
            Ok(count)
        },
    )?;
    let mut out = Encoder::with_capacity(n * PollFd::SIZE);
    for ((fd, ev), r) in fds.iter().zip(&revents) {
        let p = PollFd { fd: *fd, events: u16::try_from(*ev).unwrap_or(0), revents: u16::try_from(*r).unwrap_or(0) };
        p.encode_to(&mut out);
    }
    task.thread.mm().copy_out(addr, out.as_bytes())?;
    Ok(ready as u64)
}

/// A relative timeout read as a timespec; None for a null pointer.
fn timespec_deadline(task: &Task, addr: u64, usec: bool) -> Result<Option<Instant>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = [0u8; 16];
    task.thread.mm().copy_in(addr, &mut raw)?;
    let mut d = Decoder::new(&raw);
    let (sec, frac) = (d.i64(), d.i64());
    let limit = if usec { 1_000_000 } else { 1_000_000_000 };
    if sec < 0 || !(0..limit).contains(&frac) {
        return Err(Errno::EINVAL);
    }
    let nanos = if usec { frac * 1000 } else { frac };
    let dur = Duration::new(u64::try_from(sec).unwrap_or(0), u32::try_from(nanos).unwrap_or(0));
    Ok(Some(Instant::now().checked_add(dur).unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32))))
}

fn sys_poll(task: &mut Task, a: [u64; 6]) -> SysResult {
    let ms = int(a[2]);
    let deadline = u64::try_from(ms).ok().map(|ms| Instant::now() + Duration::from_millis(ms));
    poll(task, a[0], a[1], deadline)
}

/// Runs a wait with the signal mask temporarily replaced by the one at
/// `mask_addr` (if any), as ppoll/pselect6/epoll_pwait do. When a signal
/// ends the wait, the original mask is kept for the handler's frame (or a
/// restart) to restore; otherwise it is restored here.
pub(super) fn with_sigmask(task: &Task, mask_addr: u64, wait: impl FnOnce() -> SysResult) -> SysResult {
    if mask_addr == 0 {
        return wait();
    }
    let mut raw = [0u8; 8];
    task.thread.mm().copy_in(mask_addr, &mut raw)?;
    let unblockable = !(sigbit(libc::SIGKILL) | sigbit(libc::SIGSTOP));
    let mask = u64::from_le_bytes(raw) & unblockable;
    let old = task.thread.swap_sigmask(mask);
    *task.thread.saved_sigmask().lock() = Some(old);
    let r = wait();
    if !matches!(r, Err(e) if e.is_restart()) {
        task.thread.saved_sigmask().lock().take();
        task.thread.set_sigmask(old);
    }
    r
}

fn sys_ppoll(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[3] != 0 && a[4] != 8 {
        return Err(Errno::EINVAL);
    }
    let deadline = timespec_deadline(task, a[2], false)?;
    with_sigmask(task, a[3], || poll(task, a[0], a[1], deadline))
}

/// Reads an fd_set of `nfds` bits (null: empty).
fn read_set(task: &Task, addr: u64, words: usize) -> Result<Option<Vec<u64>>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = vec![0u8; words * 8];
    task.thread.mm().copy_in(addr, &mut raw)?;
    Ok(Some(raw.chunks_exact(8).map(|c| Decoder::new(c).u64()).collect()))
}

fn write_set(task: &Task, addr: u64, set: &Option<Vec<u64>>) -> Result<(), Errno> {
    if let Some(words) = set {
        let mut e = Encoder::with_capacity(words.len() * 8);
        for w in words {
            e.u64(*w);
        }
        task.thread.mm().copy_out(addr, e.as_bytes())?;
    }
    Ok(())
}

fn select(task: &Task, nfds: u64, sets: [u64; 3], deadline: Option<Instant>) -> SysResult {
    let nfds = usize::try_from(int(nfds)).map_err(|_| Errno::EINVAL)?;
    if nfds as u64 > task.thread.nofile().max(1024) {
        return Err(Errno::EINVAL);
    }
    let words = nfds.div_ceil(64);
    let want = [read_set(task, sets[0], words)?, read_set(task, sets[1], words)?, read_set(task, sets[2], words)?];
    let masks = [POLLIN | POLLRDNORM | POLLHUP | POLLERR, POLLOUT | POLLWRNORM | POLLERR, POLLPRI];
    // Every named descriptor must be open.
    for fd in 0..nfds {
        let named = want.iter().flatten().any(|w| w[fd / 64] & (1 << (fd % 64)) != 0);
        if named && events_of(task, i32::try_from(fd).unwrap_or(i32::MAX)) == POLLNVAL {
            return Err(Errno::EBADF);
        }
    }
    let mut got: [Option<Vec<u64>>; 3] = [None, None, None];
    let watched = || {
        (0..nfds)
            .filter_map(|fd| {
                let mask = (0..3)
                    .filter(|&k| want[k].as_ref().is_some_and(|w| w[fd / 64] & (1 << (fd % 64)) != 0))
                    .fold(0, |m, k| m | masks[k]);
                Some((i32::try_from(fd).ok()?, mask)).filter(|_| mask != 0)
            })
            .collect()
    };
    let ready = wait_for(task, watched, deadline, || {
        let mut count = 0;
        for (k, set) in want.iter().enumerate() {
            got[k] = set.as_ref().map(|w| {
                let mut out = vec![0u64; w.len()];
                for fd in 0..nfds {
                    if w[fd / 64] & (1 << (fd % 64)) != 0
                        && events_of(task, i32::try_from(fd).unwrap_or(i32::MAX)) & masks[k] != 0
                    {
                        out[fd / 64] |= 1 << (fd % 64);
                        count += 1;
                    }
                }
                out
            });
        }
        Ok(count)
    })?;
    for (k, set) in got.iter().enumerate() {
        write_set(task, sets[k], set)?;
    }
    Ok(ready as u64)
}

fn sys_select(task: &mut Task, a: [u64; 6]) -> SysResult {
    let deadline = timespec_deadline(task, a[4], true)?;
    select(task, a[0], [a[1], a[2], a[3]], deadline)
}

fn sys_pselect6(task: &mut Task, a: [u64; 6]) -> SysResult {
    let deadline = timespec_deadline(task, a[4], false)?;
    // The sixth argument points at { const sigset_t *ss; size_t ss_len; }.
    let mut mask_addr = 0;
    if a[5] != 0 {
        let mut raw = [0u8; 16];
        task.thread.mm().copy_in(a[5], &mut raw)?;
        let mut d = Decoder::new(&raw);
        mask_addr = d.u64();
        if mask_addr != 0 && d.u64() != 8 {
            return Err(Errno::EINVAL);
        }
    }
    with_sigmask(task, mask_addr, || select(task, a[0], [a[1], a[2], a[3]], deadline))
}
