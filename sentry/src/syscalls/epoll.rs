//! System calls: epoll.

use super::args::{self, int};
use super::poll::with_sigmask;
use super::{Entries, Support::*};
use crate::abi::fcntl::O_RDWR;
use crate::abi::layout::{Encoder, Layout};
use crate::abi::poll::{EpollEvent, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, POLLIN};
use crate::abi::time::Timespec;
use crate::abi::{Errno, SysResult};
use crate::fs::epoll::Epoll;
use crate::kernel::Task;
use crate::vfs::{FileDescription, S_IFDIR, S_IFMT, S_IFREG};
use crate::waiter::{Entry, Registered, Waiter};
use std::sync::Arc;
use std::time::{Duration, Instant};

const NOTE: &str = "EPOLLEXCLUSIVE has no effect";

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_epoll_create, sys_epoll_create, Full),
    (libc::SYS_epoll_create1, sys_epoll_create1, Full),
    (libc::SYS_epoll_ctl, sys_epoll_ctl, Partial(NOTE)),
    (libc::SYS_epoll_wait, sys_epoll_wait, Partial(NOTE)),
    (libc::SYS_epoll_pwait, sys_epoll_pwait, Partial(NOTE)),
    (libc::SYS_epoll_pwait2, sys_epoll_pwait2, Partial(NOTE)),
];

/// The most events one wait returns (INT_MAX / sizeof(struct epoll_event)).
const EP_MAX_EVENTS: i32 = i32::MAX / 12;

fn create(task: &Task, cloexec: bool) -> SysResult {
    let k = &task.kernel;
    let ep = Epoll::new(k.anon_ino(), super::fd::now());
    let d = k.anon_dentry(b"anon_inode:[eventpoll]", ep.clone());
    let f = FileDescription::new(d, ep, O_RDWR);
    let fd = task.thread.fds().install(f, cloexec, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EMFILE)
}

fn sys_epoll_create(task: &mut Task, a: [u64; 6]) -> SysResult {
    if int(a[0]) <= 0 {
        return Err(Errno::EINVAL);
    }
    create(task, false)
}

fn sys_epoll_create1(task: &mut Task, a: [u64; 6]) -> SysResult {
    let flags = int(a[0]);
    if flags & !libc::EPOLL_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    create(task, flags & libc::EPOLL_CLOEXEC != 0)
}

/// The epoll instance behind `fd` (EINVAL if it is not one).
fn epoll_of(task: &Task, fd: u64) -> Result<(Arc<FileDescription>, Arc<Epoll>), Errno> {
    let f = args::file(task, fd)?;
    let ep = f.ops.clone().into_any().downcast::<Epoll>().map_err(|_| Errno::EINVAL)?;
    Ok((f, ep))
}

fn sys_epoll_ctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (epf, ep) = epoll_of(task, a[0])?;
    let fd = int(a[2]);
    let target = task.thread.fds().get(fd)?;
    if Arc::ptr_eq(&epf, &target) {
        return Err(Errno::EINVAL);
    }
    // Regular files and directories are always ready: Linux refuses them.
    let kind = target.stat()?.mode & S_IFMT;
    if kind == S_IFREG || kind == S_IFDIR {
        return Err(Errno::EPERM);
    }
    let op = int(a[1]);
    let event = || -> Result<(u32, u64), Errno> {
        let mut raw = [0u8; EpollEvent::SIZE];
        task.thread.mm().copy_in(a[3], &mut raw)?;
        let e = EpollEvent::decode(&raw);
        Ok((e.events, e.data))
    };
    match op {
        EPOLL_CTL_ADD => {
            let (events, data) = event()?;
            ep.add(fd, &target, events, data)?;
        }
        EPOLL_CTL_MOD => {
            let (events, data) = event()?;
            ep.modify(fd, &target, events, data)?;
        }
        EPOLL_CTL_DEL => ep.delete(fd, &target)?,
        _ => return Err(Errno::EINVAL),
    }
    Ok(0)
}

fn wait(task: &Task, epfd: u64, events: u64, max: u64, deadline: Option<Instant>) -> SysResult {
    let max = int(max);
    if max <= 0 || max > EP_MAX_EVENTS {
        return Err(Errno::EINVAL);
    }
    let max = usize::try_from(max).map_err(|_| Errno::EINVAL)?;
    args::user_range(events, max * EpollEvent::SIZE)?;
    let (_, ep) = epoll_of(task, epfd)?;
    let got = wait_ready(task, &ep, max, deadline)?;
    let mut out = Encoder::with_capacity(got.len() * EpollEvent::SIZE);
    for &(events, data) in &got {
        EpollEvent { events, data }.encode_to(&mut out);
    }
    task.thread.mm().copy_out(events, out.as_bytes())?;
    Ok(got.len() as u64)
}

/// Waits on the instance's own queue until an interest is ready or
/// `deadline` passes (nothing). A signal ends it with EINTR, never a
/// restart, as on Linux (signal(7)), even with SA_RESTART or for a stop.
fn wait_ready(task: &Task, ep: &Epoll, max: usize, deadline: Option<Instant>) -> Result<Vec<(u32, u64)>, Errno> {
    let got = ep.ready(max);
    if !got.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(got);
    }
    let w = Waiter::new();
    let _registered = Registered::new(Entry::new(POLLIN, w.clone()), |e| ep.register(e), |e| ep.unregister(e));
    loop {
        let got = ep.ready(max);
        if !got.is_empty() {
            return Ok(got);
        }
        match w.wait(deadline) {
            Ok(()) => {}
            Err(Errno::ETIMEDOUT) => return Ok(ep.ready(max)),
            Err(_) => return Err(super::signal::eintr_unless_ignored(task)),
        }
    }
}

fn ms_deadline(ms: i32) -> Option<Instant> {
    u64::try_from(ms).ok().map(|ms| Instant::now() + Duration::from_millis(ms))
}

fn sys_epoll_wait(task: &mut Task, a: [u64; 6]) -> SysResult {
    wait(task, a[0], a[1], a[2], ms_deadline(int(a[3])))
}

fn sys_epoll_pwait(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[4] != 0 && a[5] != 8 {
        return Err(Errno::EINVAL);
    }
    let deadline = ms_deadline(int(a[3]));
    with_sigmask(task, a[4], || wait(task, a[0], a[1], a[2], deadline))
}

fn sys_epoll_pwait2(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[4] != 0 && a[5] != 8 {
        return Err(Errno::EINVAL);
    }
    let deadline = if a[3] == 0 {
        None
    } else {
        let mut raw = [0u8; Timespec::SIZE];
        task.thread.mm().copy_in(a[3], &mut raw)?;
        let ts = Timespec::decode(&raw);
        if !ts.is_valid() {
            return Err(Errno::EINVAL);
        }
        Some(crate::waiter::deadline_in(ts.duration()))
    };
    with_sigmask(task, a[4], || wait(task, a[0], a[1], a[2], deadline))
}
