//! User notification (`SECCOMP_RET_USER_NOTIF`): a filter attached with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER` hands the calls it sends here to a
//! supervisor holding its listener descriptor. The calling thread waits
//! (interruptibly) until the supervisor answers with a result, or asks
//! for the call to run (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`).
//!
//! As in Linux, a notification is first waiting to be received (INIT),
//! then received (SENT: the supervisor may answer it), then answered; a
//! notification whose thread was interrupted is gone (the supervisor's
//! answer finds no such id: ENOENT). Closing the listener answers every
//! notification with ENOSYS and makes the filter's later USER_NOTIF
//! verdicts fail so; once no thread uses the filter any more the
//! listener reports POLLHUP.
//!
//! The supervisor may also add one of its descriptors to a received
//! notification's thread (`SECCOMP_IOCTL_NOTIF_ADDFD`): the request is
//! queued on the notification, the waiting thread wakes, installs the
//! description in its own table and hands the number back, and the
//! supervisor waits for that. With `SEND` the install also answers the
//! call with the new number, at once.

use crate::abi::poll::{POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::vfs::FileDescription;
use crate::waiter::{self, Queue, Waker};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;

/// `sizeof(struct seccomp_notif)`.
pub(crate) const NOTIF_SIZE: usize = 80;
/// `SECCOMP_USER_NOTIF_FLAG_CONTINUE`.
pub(crate) const FLAG_CONTINUE: u32 = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for the supervisor's RECV.
    Init,
    /// Received: the supervisor may answer.
    Sent,
    Answered(Answer),
}

/// The supervisor's answer (`struct seccomp_notif_resp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The call's result: `error` (a negated errno) if non-zero, else
    /// `val`.
    Result { val: i64, error: i32 },
    /// Run the call.
    Continue,
}

/// A descriptor the supervisor adds to a waiting thread
/// (`struct seccomp_notif_addfd`, resolved).
pub(crate) struct AddFd {
    pub(crate) file: Arc<FileDescription>,
    /// SETFD: exactly this number (replacing what is there); else the
    /// lowest free one.
    pub(crate) at: Option<i32>,
    pub(crate) cloexec: bool,
    /// SEND: the install answers the call with the new number.
    pub(crate) send: bool,
}

/// The waiting thread's side of an ADDFD: its descriptor table.
pub(crate) trait Installer {
    /// Installs `add.file` as `add` says: its number, and the
    /// description it replaced at that number, if any. Called with the
    /// listener's lock held, so it must not release a description.
    fn install(&self, add: &AddFd) -> Result<(i32, Option<Arc<FileDescription>>), Errno>;

    /// `replaced` left the table (as close does), after the lock.
    fn closed(&self, replaced: Arc<FileDescription>);
}

struct Notification {
    id: u64,
    /// The calling thread's id.
    tid: i32,
    /// Its `struct seccomp_data`.
    data: [u8; 64],
    state: State,
    /// ADDFD requests for the thread to install, by request number.
    adds: VecDeque<(u64, AddFd)>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    /// In order of arrival.
    notifications: Vec<Notification>,
    /// The listener descriptor is closed.
    closed: bool,
    /// No thread uses the filter any more.
    orphaned: bool,
    next_add: u64,
    /// Outcomes of ADDFD requests, by request number, until their
    /// supervisor takes them.
    added: Vec<(u64, Result<i32, Errno>)>,
    /// The request whose install is being finished outside the lock (the
    /// description it replaced being released): its outcome comes next.
    installing: Option<u64>,
}

/// An ADDFD request just installed, for its outcome to be recorded once
/// the lock is dropped and the description it replaced (if any) released.
struct Installed {
    /// The request's number.
    add: u64,
    outcome: Result<i32, Errno>,
    req: AddFd,
    replaced: Option<Arc<FileDescription>>,
}

impl Inner {
    fn find(&mut self, id: u64) -> Option<&mut Notification> {
        self.notifications.iter_mut().find(|n| n.id == id)
    }
}

/// A filter's listener.
#[derive(Default)]
pub(crate) struct Listener {
    inner: Mutex<Inner>,
    /// Wakes the calling threads when their notification is answered
    /// or given a descriptor to install.
    answered: Condvar,
    /// Wakes supervisors waiting for an ADDFD's outcome.
    added: Condvar,
    /// The listener descriptor's readiness (and RECV's wait).
    queue: Queue,
}

impl Listener {
    /// A listener whose notification ids start at `first_id` (Linux
    /// starts them at a random number).
    pub(crate) fn new(first_id: u64) -> Arc<Listener> {
        let l = Listener::default();
        l.inner.lock().next_id = first_id;
        Arc::new(l)
    }

    /// The queue announcing the descriptor's readiness.
    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }

    fn waker(self: &Arc<Self>) -> Waker {
        let me = self.clone();
        Arc::new(move || {
            let _g = me.inner.lock();
            me.answered.notify_all();
            me.added.notify_all();
        })
    }

    /// Sends a call of thread `tid` (`data`, its `seccomp_data`) to the
    /// supervisor and waits for the answer, installing through `fds` the
    /// descriptors the supervisor adds meanwhile. ENOSYS once the listener
    /// is closed; ERESTARTSYS when the thread is interrupted first (the
    /// notification is then withdrawn, and its pending ADDFDs fail with
    /// ESRCH, as Linux's).
    pub(crate) fn notify(self: &Arc<Self>, tid: i32, data: [u8; 64], fds: &dyn Installer) -> Result<Answer, Errno> {
        let id = {
            let mut s = self.inner.lock();
            if s.closed {
                return Err(Errno::ENOSYS);
            }
            let id = s.next_id;
            s.next_id = s.next_id.wrapping_add(1);
            let state = State::Init;
            s.notifications.push(Notification { id, tid, data, state, adds: VecDeque::new() });
            id
        };
        self.queue.notify(POLLIN | POLLRDNORM);
        let mut s = self.inner.lock();
        let waited = loop {
            let ready =
                |s: &mut Inner| s.find(id).is_none_or(|n| !n.adds.is_empty() || matches!(n.state, State::Answered(_)));
            if let Err(e) = waiter::block_on(&mut s, &self.answered, self.waker(), None, ready) {
                break Err(e);
            }
            let Some(Installed { add, outcome, req, replaced }) = Self::install_one(&mut s, id, fds) else {
                break Ok(());
            };
            // Descriptions are released outside the lock (a release may
            // signal a thread, whose wake-up hook takes it), and before
            // the supervisor learns the outcome, as Linux closes the
            // replaced file first: its record locks are gone by then.
            s.installing = Some(add);
            drop(s);
            if let Some(r) = replaced {
                fds.closed(r);
            }
            drop(req);
            s = self.inner.lock();
            s.installing = None;
            s.added.push((add, outcome));
            self.added.notify_all();
        };
        let pos = s.notifications.iter().position(|n| n.id == id);
        let n = pos.map(|i| s.notifications.remove(i));
        if let Some(n) = &n {
            for (add, _) in &n.adds {
                s.added.push((*add, Err(Errno::ESRCH)));
            }
            self.added.notify_all();
        }
        drop(s);
        waited?;
        match n.map(|n| n.state) {
            Some(State::Answered(a)) => Ok(a),
            _ => Err(Errno::ENOSYS),
        }
    }

    /// Installs notification `id`'s oldest ADDFD request, if it has one
    /// (Linux's `seccomp_handle_addfd`): with SEND, the new number
    /// answers the call, and a failure lets the supervisor answer it
    /// again. None when there was no request.
    fn install_one(s: &mut Inner, id: u64, fds: &dyn Installer) -> Option<Installed> {
        let n = s.find(id)?;
        let (add, req) = n.adds.pop_front()?;
        let (outcome, replaced) = match fds.install(&req) {
            Ok((fd, replaced)) => (Ok(fd), replaced),
            Err(e) => (Err(e), None),
        };
        if req.send {
            n.state = match outcome {
                Ok(fd) => State::Answered(Answer::Result { val: i64::from(fd), error: 0 }),
                Err(_) => State::Sent,
            };
        }
        Some(Installed { add, outcome, req, replaced })
    }

    /// SECCOMP_IOCTL_NOTIF_ADDFD: has notification `id`'s thread install
    /// `add`, and waits (interruptibly) for the outcome: the new number.
    /// ENOENT when there is no such notification, EINPROGRESS when it is
    /// not received yet or answered already, EBUSY for a SEND while other
    /// requests wait, ESRCH when the call is interrupted before its
    /// thread installs it. Interrupted itself, a request not installed yet
    /// is withdrawn (and a SEND's notification may be answered again).
    pub(crate) fn add_fd(self: &Arc<Self>, id: u64, add: AddFd) -> Result<i32, Errno> {
        let mut s = self.inner.lock();
        let req = s.next_add;
        let n = s.find(id).ok_or(Errno::ENOENT)?;
        if n.state != State::Sent {
            return Err(Errno::EINPROGRESS);
        }
        if add.send {
            if !n.adds.is_empty() {
                return Err(Errno::EBUSY);
            }
            // Answered now: no other answer may race the install.
            n.state = State::Answered(Answer::Result { val: 0, error: 0 });
        }
        n.adds.push_back((req, add));
        s.next_add = s.next_add.wrapping_add(1);
        self.answered.notify_all();
        let done = |s: &mut Inner| s.added.iter().any(|(r, _)| *r == req);
        let waited = waiter::block_on(&mut s, &self.added, self.waker(), None, done);
        // Interrupted while its thread finishes the install: the outcome
        // is moments away and stands.
        while s.installing == Some(req) {
            self.added.wait(&mut s);
        }
        if let Some(i) = s.added.iter().position(|(r, _)| *r == req) {
            return s.added.remove(i).1;
        }
        // Interrupted before the thread took it: withdraw it (and release
        // its description after the lock).
        let n = s.find(id);
        let withdrawn = n.as_ref().and_then(|n| n.adds.iter().position(|(r, _)| *r == req));
        let withdrawn = n.zip(withdrawn).and_then(|(n, i)| {
            let add = n.adds.remove(i)?.1;
            if add.send {
                n.state = State::Sent;
            }
            Some(add)
        });
        drop(s);
        drop(withdrawn);
        waited?;
        Err(Errno::ESRCH)
    }

    /// SECCOMP_IOCTL_NOTIF_RECV, one attempt: the oldest notification not
    /// yet received, now received, as (its id, `struct seccomp_notif`);
    /// EAGAIN when there is none.
    pub(crate) fn recv(&self) -> Result<(u64, [u8; NOTIF_SIZE]), Errno> {
        let out = {
            let mut s = self.inner.lock();
            let n = s.notifications.iter_mut().find(|n| n.state == State::Init).ok_or(Errno::EAGAIN)?;
            n.state = State::Sent;
            let mut b = [0u8; NOTIF_SIZE];
            b[..8].copy_from_slice(&n.id.to_le_bytes());
            b[8..12].copy_from_slice(&n.tid.to_le_bytes());
            b[16..].copy_from_slice(&n.data);
            (n.id, b)
        };
        self.queue.notify(POLLOUT | POLLWRNORM);
        Ok(out)
    }

    /// A received notification the supervisor could not be given (its
    /// buffer faulted) waits to be received again, if it is still there.
    pub(crate) fn unrecv(&self, id: u64) {
        let found = {
            let mut s = self.inner.lock();
            s.find(id).filter(|n| n.state == State::Sent).map(|n| n.state = State::Init).is_some()
        };
        if found {
            self.queue.notify(POLLIN | POLLRDNORM);
        }
    }

    /// SECCOMP_IOCTL_NOTIF_SEND: answers notification `id`. ENOENT when
    /// there is none (its thread was interrupted), EINPROGRESS when it is
    /// not received yet or answered already.
    pub(crate) fn answer(&self, id: u64, answer: Answer) -> Result<(), Errno> {
        let mut s = self.inner.lock();
        let n = s.find(id).ok_or(Errno::ENOENT)?;
        if n.state != State::Sent {
            return Err(Errno::EINPROGRESS);
        }
        n.state = State::Answered(answer);
        self.answered.notify_all();
        Ok(())
    }

    /// SECCOMP_IOCTL_NOTIF_ID_VALID: whether `id` is received and waits
    /// for its answer (ENOENT otherwise).
    pub(crate) fn id_valid(&self, id: u64) -> Result<(), Errno> {
        match self.inner.lock().find(id) {
            Some(n) if n.state == State::Sent => Ok(()),
            _ => Err(Errno::ENOENT),
        }
    }

    /// The descriptor's poll events: POLLIN while a notification waits to
    /// be received, POLLOUT while one waits for its answer, POLLHUP once
    /// no thread uses the filter.
    pub(crate) fn poll_events(&self) -> u32 {
        let s = self.inner.lock();
        let mut ev = 0;
        for n in &s.notifications {
            match n.state {
                State::Init => ev |= POLLIN | POLLRDNORM,
                State::Sent => ev |= POLLOUT | POLLWRNORM,
                State::Answered(_) => {}
            }
        }
        if s.orphaned {
            ev |= POLLHUP;
        }
        ev
    }

    /// The descriptor is closed: every waiting call fails with ENOSYS, and
    /// so do later ones.
    pub(crate) fn close(&self) {
        let mut s = self.inner.lock();
        s.closed = true;
        for n in &mut s.notifications {
            n.state = State::Answered(Answer::Result { val: 0, error: -Errno::ENOSYS.0 });
        }
        self.answered.notify_all();
    }

    /// The filter is no thread's any more.
    pub(crate) fn orphan(&self) {
        self.inner.lock().orphaned = true;
        self.queue.notify(POLLHUP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread no descriptor is added to.
    struct NoFds;

    impl Installer for NoFds {
        fn install(&self, _: &AddFd) -> Result<(i32, Option<Arc<FileDescription>>), Errno> {
            Err(Errno::EMFILE)
        }

        fn closed(&self, _: Arc<FileDescription>) {}
    }

    fn answered_in_thread(l: &Arc<Listener>, answer: Answer) -> std::thread::JoinHandle<Result<Answer, Errno>> {
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.notify(7, [3; 64], &NoFds));
        let id = loop {
            match l.recv() {
                Ok((id, b)) => {
                    assert_eq!(i32::from_le_bytes(b[8..12].try_into().unwrap()), 7);
                    assert_eq!(b[16..], [3; 64]);
                    break id;
                }
                Err(e) => {
                    assert_eq!(e, Errno::EAGAIN);
                    std::thread::yield_now();
                }
            }
        };
        assert_eq!(l.poll_events(), POLLOUT | POLLWRNORM);
        assert_eq!(l.id_valid(id), Ok(()));
        assert_eq!(l.answer(id + 1, answer), Err(Errno::ENOENT));
        l.answer(id, answer).unwrap();
        // A second answer: EINPROGRESS while the call has not taken the
        // first, ENOENT once it has (it may already have woken).
        let again = l.answer(id, answer);
        assert!(matches!(again, Err(Errno::EINPROGRESS | Errno::ENOENT)), "{again:?}");
        t
    }

    #[test]
    fn a_call_waits_for_the_supervisor_s_answer() {
        let l = Listener::new(100);
        assert_eq!(l.recv().err(), Some(Errno::EAGAIN));
        let a = Answer::Result { val: 5, error: 0 };
        assert_eq!(answered_in_thread(&l, a).join().unwrap(), Ok(a));
        assert_eq!(answered_in_thread(&l, Answer::Continue).join().unwrap(), Ok(Answer::Continue));
        assert_eq!(l.poll_events(), 0);
        l.orphan();
        assert_eq!(l.poll_events(), POLLHUP);
    }

    #[test]
    fn closing_the_listener_fails_waiting_and_later_calls_with_enosys() {
        let l = Listener::new(1);
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.notify(1, [0; 64], &NoFds));
        while l.poll_events() == 0 {
            std::thread::yield_now();
        }
        l.close();
        assert_eq!(t.join().unwrap(), Ok(Answer::Result { val: 0, error: -Errno::ENOSYS.0 }));
        assert_eq!(l.notify(1, [0; 64], &NoFds), Err(Errno::ENOSYS));
    }

    #[test]
    fn a_notification_received_into_a_bad_buffer_is_received_again() {
        let l = Listener::new(1);
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.notify(1, [0; 64], &NoFds));
        let id = loop {
            if let Ok((id, _)) = l.recv() {
                break id;
            }
            std::thread::yield_now();
        };
        l.unrecv(id);
        assert_eq!(l.poll_events(), POLLIN | POLLRDNORM);
        assert_eq!(l.recv().map(|r| r.0), Ok(id));
        l.answer(id, Answer::Continue).unwrap();
        assert_eq!(t.join().unwrap(), Ok(Answer::Continue));
    }
}
