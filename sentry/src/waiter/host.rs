//! Host descriptors the sentry reads or writes for the guest (its stdio
//! pipes, a host terminal): one service thread waits for all of them in a
//! host epoll, edge-triggered, and notifies each descriptor's queue when
//! its readiness changes, as gVisor's fdnotifier does. A guest thread then
//! waits for a host descriptor the way it waits for any file, so an
//! interruption reaches it and nothing re-checks on a timer.

use super::Queue;
use crate::abi::poll::{EPOLLET, POLLIN, POLLOUT, POLLRDHUP};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, OnceLock, Weak};

struct Notifier {
    epoll: OwnedFd,
    queues: Mutex<HashMap<RawFd, Weak<Queue>>>,
}

static NOTIFIER: OnceLock<Option<Arc<Notifier>>> = OnceLock::new();

fn notifier() -> Option<&'static Arc<Notifier>> {
    NOTIFIER
        .get_or_init(|| {
            // SAFETY: no pointers; the result is checked.
            let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            if fd < 0 {
                log::warn!("cannot create the host-descriptor epoll: {}", std::io::Error::last_os_error());
                return None;
            }
            // SAFETY: `fd` was just created and is owned by nothing else.
            let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
            let n = Arc::new(Notifier { epoll, queues: Mutex::default() });
            let serve = n.clone();
            match std::thread::Builder::new().name("host-fds".into()).spawn(move || service(&serve)) {
                Ok(_) => Some(n),
                Err(e) => {
                    log::warn!("cannot start the host-descriptor thread: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Notifies `queue` whenever host descriptor `fd` becomes readable or
/// writable or hangs up, until `unwatch`. False when the host cannot
/// watch it (a regular file, always ready).
pub(crate) fn watch(fd: RawFd, queue: &Arc<Queue>) -> bool {
    let Some(n) = notifier() else { return false };
    let mut ev = libc::epoll_event {
        // (EPOLLET is the sign bit of libc's i32: converting the sum
        // with try_from gave 0, and only errors and hang-ups woke anyone.)
        events: POLLIN | POLLOUT | POLLRDHUP | EPOLLET,
        u64: u64::try_from(fd).unwrap_or(0),
    };
    let mut q = n.queues.lock();
    // SAFETY: `ev` is a valid epoll_event for the call's duration.
    if unsafe { libc::epoll_ctl(n.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
        return false;
    }
    q.insert(fd, Arc::downgrade(queue));
    true
}

/// Stops watching `fd` (before it is closed).
pub(crate) fn unwatch(fd: RawFd) {
    let Some(n) = notifier() else { return };
    if n.queues.lock().remove(&fd).is_some() {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL.
        unsafe { libc::epoll_ctl(n.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }
}

/// How often the watched descriptors' waiters re-check once the host
/// epoll fails.
const BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

/// The host epoll failed with something other than an interruption (the
/// seccomp filter, a broken epoll): it would fail again at once, so
/// instead of spinning, log it once and wake every watcher after a
/// pause, so waits on host descriptors go on by re-checking.
fn failed(n: &Notifier, e: &std::io::Error, logged: &mut bool) {
    if !std::mem::replace(logged, true) {
        log::warn!("the host-descriptor epoll failed ({e}); re-checking every {BACKOFF:?}");
    }
    std::thread::sleep(BACKOFF);
    let queues: Vec<Arc<Queue>> = n.queues.lock().values().filter_map(Weak::upgrade).collect();
    for q in queues {
        q.notify(super::ALL);
    }
}

fn service(n: &Notifier) {
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 16];
    let mut logged = false;
    loop {
        // SAFETY: `events` holds as many entries as the call is told.
        let got = unsafe { libc::epoll_wait(n.epoll.as_raw_fd(), events.as_mut_ptr(), 16, -1) };
        let Ok(got) = usize::try_from(got) else {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                failed(n, &e, &mut logged);
            }
            continue;
        };
        for ev in &events[..got] {
            let queue = RawFd::try_from(ev.u64).ok().and_then(|fd| n.queues.lock().get(&fd).and_then(Weak::upgrade));
            if let Some(q) = queue {
                // epoll's event bits are poll's; a peer's hang-up reads
                // as POLLHUP to the guest.
                let mut mask = ev.events;
                if mask & u32::try_from(libc::EPOLLRDHUP).unwrap_or(0) != 0 {
                    mask |= u32::try_from(libc::EPOLLHUP | libc::EPOLLIN).unwrap_or(0);
                }
                q.notify(mask);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Count;
    use crate::waiter::Entry;

    #[test]
    fn a_failing_host_epoll_backs_off_and_keeps_waking_its_watchers() {
        // A descriptor that is not an epoll: every epoll_wait fails.
        let not_epoll = std::fs::File::open("/dev/null").unwrap();
        let n = Arc::new(Notifier { epoll: OwnedFd::from(not_epoll), queues: Mutex::default() });
        let q = Arc::new(Queue::default());
        let c = Arc::new(Count::default());
        q.register(&Entry::new(crate::abi::poll::POLLIN, c.clone()));
        n.queues.lock().insert(0, Arc::downgrade(&q));
        let serve = n.clone();
        std::thread::spawn(move || service(&serve));
        std::thread::sleep(BACKOFF * 3 + BACKOFF / 2);
        let woken = c.get();
        assert!((2..=4).contains(&woken), "woken {woken} times");
    }
}
