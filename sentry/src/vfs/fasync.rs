//! A file's owner and signal-driven I/O (Linux's `fown_struct` and
//! `fasync_struct`): F_SETOWN(_EX) names the thread, process or group a
//! file signals; SIGURG tells it of a socket's urgent data, and with
//! O_ASYNC the file's readiness changes send it SIGIO (or the F_SETSIG
//! signal, with the descriptor and the reason in its siginfo).
//!
//! O_ASYNC registers an entry on the file's own wait queue, so every
//! change the file announces to its pollers reaches the owner too; which
//! changes signal, and with which reason, is the file's [`Fasync`]
//! policy, fixed when O_ASYNC is set so a notification never calls back
//! into the notifying file. A directory's dnotify registrations signal
//! the same owner (`dir_changed`).

use crate::abi::fcntl::O_ASYNC;
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLPRI, POLLRDNORM, POLLWRNORM};
use crate::abi::signal::{POLL_ERR, POLL_HUP, POLL_IN, POLL_MSG, POLL_OUT, POLL_PRI};
use crate::waiter::{Entry, Notify, ALL};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

/// What a file tells its owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerSignal {
    /// Urgent data arrived (SIGURG).
    Urgent,
    /// With O_ASYNC, the file became ready: `signo` is the F_SETSIG
    /// signal (0 for plain SIGIO), `reason` POLL_IN … POLL_HUP, `fd` the
    /// descriptor O_ASYNC was set through.
    Io { signo: i32, reason: i32, fd: i32 },
}

/// Sends a signal to a file's owner, with the credentials of whoever set
/// the owner (the permission check is the sender's).
pub(crate) type SignalOwner = Arc<dyn Fn(OwnerSignal) + Send + Sync>;

/// Tells a file's owner that urgent data arrived (see `Fown::urgent`).
pub(crate) type UrgentSignal = Arc<dyn Fn() + Send + Sync>;

/// Which of a file's readiness changes signal its O_ASYNC owner, as the
/// places where Linux calls `kill_fasync` for that kind of file. Files
/// without Linux's `->fasync` have none: O_ASYNC shows in F_GETFL but
/// sends nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fasync {
    /// A pipe or FIFO end (`pipe_fasync`): an end that reads is told of
    /// data (POLL_IN), one that writes of room (POLL_OUT), and both of
    /// the other side coming or going.
    Pipe { read: bool, write: bool },
    /// A socket or inotify instance: data or a connection to take is
    /// POLL_IN, room POLL_OUT; any other change (a hang-up, a shutdown)
    /// POLL_IN, what Linux sends for a peer's shutdown.
    Stream,
    /// A terminal end: as a stream, and O_ASYNC gives a description
    /// without an owner one (Linux's `tty_fasync`): the terminal's
    /// `foreground` process group, or the caller's process.
    Terminal { foreground: Option<i32> },
}

impl Fasync {
    /// The queue events the O_ASYNC entry waits for.
    fn mask(self) -> u32 {
        match self {
            Fasync::Pipe { read, write } => {
                (if read { POLLIN | POLLRDNORM } else { 0 }) | (if write { POLLOUT | POLLWRNORM } else { 0 })
            }
            Fasync::Stream | Fasync::Terminal { .. } => ALL,
        }
    }

    /// The reasons a notification of `mask` signals with, in order.
    fn reasons(self, mask: u32) -> impl Iterator<Item = i32> {
        let (data, room) = (mask & (POLLIN | POLLRDNORM) != 0, mask & (POLLOUT | POLLWRNORM) != 0);
        let (first, second) = match self {
            Fasync::Pipe { read, write } => ((read && data).then_some(POLL_IN), (write && room).then_some(POLL_OUT)),
            _ if data => (Some(POLL_IN), None),
            _ if room => (Some(POLL_OUT), None),
            _ if mask & POLLPRI != 0 => (Some(POLL_PRI), None),
            _ if mask & POLLHUP != 0 => (Some(POLL_HUP), None),
            _ if mask & POLLERR != 0 => (Some(POLL_ERR), None),
            _ => (None, None),
        };
        first.into_iter().chain(second)
    }
}

/// The owner part of an open file description.
#[derive(Default)]
pub(crate) struct Fown {
    owner: Mutex<Owner>,
    /// While O_ASYNC is set on a file with a policy: its entry on the
    /// file's queue.
    registered: Mutex<Option<Entry>>,
}

#[derive(Default)]
struct Owner {
    /// (F_OWNER_TID, _PID or _PGRP; its id), id 0 for nobody.
    who: (i32, i32),
    send: Option<SignalOwner>,
    /// F_SETSIG's signal; 0 for SIGIO without siginfo.
    signo: i32,
    /// The descriptor O_ASYNC was last set through (si_fd).
    fd: i32,
}

impl Fown {
    /// F_GETOWN_EX: (kind, id).
    pub(crate) fn who(&self) -> (i32, i32) {
        self.owner.lock().who
    }

    /// F_SETOWN_EX: `who` becomes the owner, signalled through `send`.
    pub(crate) fn set_owner(&self, who: (i32, i32), send: Option<SignalOwner>) {
        let mut o = self.owner.lock();
        o.who = who;
        o.send = send;
    }

    /// F_GETSIG.
    pub(crate) fn signo(&self) -> i32 {
        self.owner.lock().signo
    }

    /// F_SETSIG (the caller checked `signo` is a signal or 0).
    pub(crate) fn set_signo(&self, signo: i32) {
        self.owner.lock().signo = signo;
    }

    /// Urgent data arrived: SIGURG to the owner and, as Linux's
    /// `sk_send_sigurg`, the F_SETSIG signal with POLL_PRI when O_ASYNC
    /// is set and F_SETSIG chose one.
    pub(crate) fn urgent(&self) {
        let (send, signo, fd) = {
            let o = self.owner.lock();
            (o.send.clone(), o.signo, o.fd)
        };
        let Some(send) = send else { return };
        send(OwnerSignal::Urgent);
        if signo != 0 && self.registered.lock().is_some() {
            send(OwnerSignal::Io { signo, reason: POLL_PRI, fd });
        }
    }

    /// A change dnotify reports, registered through descriptor `fd`: the
    /// owner gets the F_SETSIG signal with POLL_MSG (or plain SIGIO), as
    /// Linux's `dnotify_handle_event`.
    pub(crate) fn dir_changed(&self, fd: i32) {
        let (send, signo) = {
            let o = self.owner.lock();
            (o.send.clone(), o.signo)
        };
        if let Some(send) = send {
            send(OwnerSignal::Io { signo, reason: POLL_MSG, fd });
        }
    }

    /// Sends the owner the O_ASYNC signal for `reason`.
    fn io(&self, reason: i32) {
        let (send, signo, fd) = {
            let o = self.owner.lock();
            (o.send.clone(), o.signo, o.fd)
        };
        if let Some(send) = send {
            send(OwnerSignal::Io { signo, reason, fd });
        }
    }

    /// O_ASYNC turned on through descriptor `fd` (`on` Some) or off, on
    /// a description whose status flags are `flags` and whose file has
    /// `policy` (None for a file that does not signal, which does not
    /// take the flag). Only a change of the flag does anything, as Linux's
    /// `setfl`: the entry is registered with `register` or taken away with
    /// `unregister`. The flag is tested and changed with the entry under
    /// one lock, so that concurrent changes leave them agreeing. Returns
    /// the policy when this turned it on.
    pub(crate) fn set_async(
        self: &Arc<Fown>,
        flags: &AtomicU32,
        on: Option<i32>,
        policy: Option<Fasync>,
        register: impl FnOnce(&Entry),
        unregister: impl FnOnce(&Entry),
    ) -> Option<Fasync> {
        let mut registered = self.registered.lock();
        let has = flags.load(Ordering::Relaxed) & O_ASYNC != 0;
        match on {
            Some(_) if has => None,
            Some(fd) => {
                let policy = policy?;
                self.owner.lock().fd = fd;
                if registered.is_none() {
                    let target = Arc::new(Target { fown: Arc::downgrade(self), policy });
                    let e = Entry::new(policy.mask(), target);
                    register(&e);
                    *registered = Some(e);
                }
                flags.fetch_or(O_ASYNC, Ordering::Relaxed);
                Some(policy)
            }
            None => {
                if let Some(e) = registered.take() {
                    unregister(&e);
                }
                flags.fetch_and(!O_ASYNC, Ordering::Relaxed);
                None
            }
        }
    }

    /// Takes the O_ASYNC entry away, when the description goes.
    pub(crate) fn take_entry(&self) -> Option<Entry> {
        self.registered.lock().take()
    }
}

/// The O_ASYNC entry on a file's queue.
struct Target {
    fown: Weak<Fown>,
    policy: Fasync,
}

impl Notify for Target {
    fn notify(&self, mask: u32) {
        if let Some(fown) = self.fown.upgrade() {
            for reason in self.policy.reasons(mask) {
                fown.io(reason);
            }
        }
    }

    fn stale(&self) -> bool {
        self.fown.strong_count() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::waiter::Queue;

    fn reasons(policy: Fasync, mask: u32) -> Vec<i32> {
        policy.reasons(mask).collect()
    }

    #[test]
    fn a_pipe_reader_hears_of_data_a_writer_of_room_and_both_of_a_close() {
        let (r, w, rw) = (
            Fasync::Pipe { read: true, write: false },
            Fasync::Pipe { read: false, write: true },
            Fasync::Pipe { read: true, write: true },
        );
        assert_eq!(reasons(r, POLLIN | POLLRDNORM), [POLL_IN]);
        assert_eq!(reasons(r, POLLOUT | POLLWRNORM), Vec::<i32>::new());
        assert_eq!(reasons(w, POLLOUT | POLLWRNORM), [POLL_OUT]);
        assert_eq!(reasons(rw, ALL), [POLL_IN, POLL_OUT]);
        assert_eq!(reasons(Fasync::Stream, ALL), [POLL_IN]);
        assert_eq!(reasons(Fasync::Stream, POLLOUT), [POLL_OUT]);
        assert_eq!(reasons(Fasync::Terminal { foreground: None }, ALL), [POLL_IN]);
    }

    #[test]
    fn the_owner_is_signalled_while_o_async_is_set_with_the_last_descriptor() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let fown = Arc::new(Fown::default());
        let g = got.clone();
        fown.set_owner((1, 7), Some(Arc::new(move |s| g.lock().push(s))));
        fown.set_signo(40);
        let q = Queue::default();
        q.notify(ALL);
        let flags = AtomicU32::new(0);
        let set = |on| fown.set_async(&flags, on, Some(Fasync::Stream), |e| q.register(e), |e| q.unregister(e));
        assert_eq!(set(Some(3)), Some(Fasync::Stream));
        // Set again: no change, the descriptor reported stays.
        assert_eq!(set(Some(5)), None);
        q.notify(POLLIN);
        assert_eq!(set(None), None);
        assert_eq!(flags.load(Ordering::Relaxed), 0);
        q.notify(POLLIN);
        assert_eq!(*got.lock(), [OwnerSignal::Io { signo: 40, reason: POLL_IN, fd: 3 }]);
        assert_eq!(q.entry_count(), 0);
    }

    #[test]
    fn a_file_that_does_not_signal_does_not_take_the_flag() {
        let fown = Arc::new(Fown::default());
        let flags = AtomicU32::new(0);
        assert_eq!(fown.set_async(&flags, Some(3), None, |_| panic!("registered"), |_| ()), None);
        assert_eq!(flags.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn concurrent_changes_leave_the_flag_and_the_entry_agreeing() {
        let fown = Arc::new(Fown::default());
        let flags = Arc::new(AtomicU32::new(0));
        let q = Arc::new(Queue::default());
        let togglers: Vec<_> = [true, false]
            .into_iter()
            .map(|on| {
                let (fown, flags, q) = (fown.clone(), flags.clone(), q.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let on = on.then_some(3);
                        fown.set_async(&flags, on, Some(Fasync::Stream), |e| q.register(e), |e| q.unregister(e));
                    }
                })
            })
            .collect();
        for t in togglers {
            t.join().unwrap();
        }
        let set = flags.load(Ordering::Relaxed) & O_ASYNC != 0;
        assert_eq!(q.entry_count(), usize::from(set));
        assert_eq!(fown.registered.lock().is_some(), set);
    }
}
