//! The one place a system call waits for a file. Files never block: one
//! that is not ready fails with EAGAIN, and the call waits here on the
//! file's queue for the events it needs, with the deadline and
//! interruption, unless the description is non-blocking (O_NONBLOCK) or
//! the call says so (MSG_DONTWAIT). As gVisor's `read` in
//! `sys_read_write.go`.

use crate::abi::Errno;
use crate::vfs::{FileDescription, ReadCall, READ_EVENTS, WRITE_EVENTS};
use crate::waiter::{Entry, Queue, Registered, Waiter};
use std::time::Instant;

/// Whether the description's I/O must not wait.
pub(super) fn nonblocking(f: &FileDescription) -> bool {
    crate::fs::anon::nonblocking(f.flags())
}

/// Runs `attempt` until it does not fail with EAGAIN, waiting on `f`'s
/// queue for an event in `mask` between attempts, unless `dontwait`. A
/// passed `deadline` ends the wait with EAGAIN (SO_RCVTIMEO's
/// behavior). An interruption ends it with ERESTARTSYS, or EINTR when it
/// has a deadline: restarting would start the timeout afresh, so Linux
/// (`sock_intr_errno`) does not restart a wait with a timeout.
pub(super) fn wait_io<T>(
    f: &FileDescription,
    mask: u32,
    dontwait: bool,
    deadline: Option<Instant>,
    attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match wait_until(f, mask, dontwait, deadline, attempt) {
        Err(Errno::ETIMEDOUT) => Err(Errno::EAGAIN),
        Err(Errno::ERESTARTSYS) if deadline.is_some() => Err(Errno::EINTR),
        r => r,
    }
}

/// Runs `attempt` until it does not fail with EAGAIN, waiting on `f`'s
/// queue for an event in `mask` between attempts, unless `dontwait`;
/// ETIMEDOUT at `deadline`, ERESTARTSYS when interrupted (the calls with
/// an absolute deadline of their own, such as mq_timedreceive, which
/// Linux restarts).
pub(super) fn wait_until<T>(
    f: &FileDescription,
    mask: u32,
    dontwait: bool,
    deadline: Option<Instant>,
    attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    let register = |e: &Entry| f.ops.event_register(e);
    wait_on(register, |e| f.ops.event_unregister(e), mask, dontwait, deadline, attempt)
}

/// `wait_io` on `queue` rather than a file's: for a send whose room
/// comes from another object (a datagram's destination).
pub(super) fn wait_io_on<T>(
    queue: &Queue,
    mask: u32,
    dontwait: bool,
    deadline: Option<Instant>,
    attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match wait_on(|e| queue.register(e), |e| queue.unregister(e), mask, dontwait, deadline, attempt) {
        Err(Errno::ETIMEDOUT) => Err(Errno::EAGAIN),
        Err(Errno::ERESTARTSYS) if deadline.is_some() => Err(Errno::EINTR),
        r => r,
    }
}

/// The wait itself: `register` and `unregister` put an entry for `mask`
/// on the queue to wait on and take it off.
fn wait_on<T>(
    register: impl FnOnce(&Entry),
    unregister: impl FnMut(&Entry),
    mask: u32,
    dontwait: bool,
    deadline: Option<Instant>,
    mut attempt: impl FnMut() -> Result<T, Errno>,
) -> Result<T, Errno> {
    match attempt() {
        Err(Errno::EAGAIN) if !dontwait => {}
        r => return r,
    }
    let w = Waiter::new();
    let _registered = Registered::new(Entry::new(mask, w.clone()), register, unregister);
    loop {
        match attempt() {
            Err(Errno::EAGAIN) => w.wait(deadline)?,
            r => return r,
        }
    }
}

/// A read of `f` that waits for data unless the description is
/// non-blocking or `dontwait` (SPLICE_F_NONBLOCK, RWF_NOWAIT), until the
/// file's read timeout if it has one. An
/// attempt may ask to be made again at a time of its own (a terminal's
/// VTIME: `ReadCall::retry_at`) as well as at an event.
pub(super) fn read_unless(
    f: &FileDescription,
    dontwait: bool,
    mut attempt: impl FnMut(&mut ReadCall) -> Result<usize, Errno>,
) -> Result<usize, Errno> {
    let dontwait = dontwait || nonblocking(f);
    let timeout = f.ops.io_timeout(false).map(crate::waiter::deadline_in);
    let mut call = ReadCall::new(dontwait);
    match attempt(&mut call) {
        Err(Errno::EAGAIN) if !dontwait => {}
        r => return r,
    }
    let w = Waiter::new();
    let register = |e: &Entry| f.ops.event_register(e);
    let _registered = Registered::new(Entry::new(READ_EVENTS, w.clone()), register, |e| f.ops.event_unregister(e));
    loop {
        match attempt(&mut call) {
            Err(Errno::EAGAIN) => {}
            r => return r,
        }
        let at = match (timeout, call.retry_at) {
            (Some(t), Some(r)) => Some(t.min(r)),
            (t, r) => t.or(r),
        };
        match w.wait(at) {
            Ok(()) => {}
            // SO_RCVTIMEO passed: EAGAIN; the file's own time: attempt.
            Err(Errno::ETIMEDOUT) if timeout.is_some_and(|t| Instant::now() >= t) => return Err(Errno::EAGAIN),
            Err(Errno::ETIMEDOUT) => {}
            Err(Errno::ERESTARTSYS) if timeout.is_some() => return Err(Errno::EINTR),
            Err(e) => return Err(e),
        }
    }
}

/// A write of all of `buf` to `f`, waiting for room as often as needed
/// unless the description is non-blocking (then what fits is written).
/// An error after some bytes (an interruption, the reader gone) returns
/// their count, as Linux's pipe_write does.
pub(super) fn write(
    f: &FileDescription,
    buf: &[u8],
    attempt: impl FnMut(&[u8]) -> Result<usize, Errno>,
) -> Result<usize, Errno> {
    write_unless(f, false, buf, attempt)
}

/// `write`, not waiting either when `dontwait` (SPLICE_F_NONBLOCK).
pub(super) fn write_unless(
    f: &FileDescription,
    dontwait: bool,
    buf: &[u8],
    attempt: impl FnMut(&[u8]) -> Result<usize, Errno>,
) -> Result<usize, Errno> {
    match write_until_error(f, dontwait, buf, attempt) {
        (0, Some(e)) => Err(e),
        (done, _) => Ok(done),
    }
}

/// `write_unless`, telling the bytes written and the error that stopped
/// it, if one did (after some bytes went, the write still counts them).
pub(super) fn write_until_error(
    f: &FileDescription,
    dontwait: bool,
    buf: &[u8],
    mut attempt: impl FnMut(&[u8]) -> Result<usize, Errno>,
) -> (usize, Option<Errno>) {
    let dontwait = dontwait || nonblocking(f);
    let deadline = f.ops.io_timeout(true).map(crate::waiter::deadline_in);
    let mut done = 0;
    while done < buf.len() {
        match wait_io(f, WRITE_EVENTS, dontwait, deadline, || attempt(&buf[done..])) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) => return (done, Some(e)),
        }
        if dontwait {
            break;
        }
    }
    (done, None)
}
