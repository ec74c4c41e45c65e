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

use crate::abi::poll::{POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::waiter::{self, Queue, Waker};
use parking_lot::{Condvar, Mutex};
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

struct Notification {
    id: u64,
    /// The calling thread's id.
    tid: i32,
    /// Its `struct seccomp_data`.
    data: [u8; 64],
    state: State,
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
    /// Wakes the calling threads when their notification is answered.
    answered: Condvar,
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
        })
    }

    /// Sends a call of thread `tid` (`data`, its `seccomp_data`) to the
    /// supervisor and waits for the answer. ENOSYS once the listener is
    /// closed; ERESTARTSYS when the thread is interrupted first (the
    /// notification is then withdrawn).
    pub(crate) fn notify(self: &Arc<Self>, tid: i32, data: [u8; 64]) -> Result<Answer, Errno> {
        let id = {
            let mut s = self.inner.lock();
            if s.closed {
                return Err(Errno::ENOSYS);
            }
            let id = s.next_id;
            s.next_id = s.next_id.wrapping_add(1);
            s.notifications.push(Notification { id, tid, data, state: State::Init });
            id
        };
        self.queue.notify(POLLIN | POLLRDNORM);
        let mut s = self.inner.lock();
        let answered = |s: &mut Inner| s.find(id).is_none_or(|n| matches!(n.state, State::Answered(_)));
        let waited = waiter::block_on(&mut s, &self.answered, self.waker(), None, answered);
        let pos = s.notifications.iter().position(|n| n.id == id);
        let n = pos.map(|i| s.notifications.remove(i));
        drop(s);
        waited?;
        match n.map(|n| n.state) {
            Some(State::Answered(a)) => Ok(a),
            _ => Err(Errno::ENOSYS),
        }
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

    fn answered_in_thread(l: &Arc<Listener>, answer: Answer) -> std::thread::JoinHandle<Result<Answer, Errno>> {
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.notify(7, [3; 64]));
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
        let t = std::thread::spawn(move || l2.notify(1, [0; 64]));
        while l.poll_events() == 0 {
            std::thread::yield_now();
        }
        l.close();
        assert_eq!(t.join().unwrap(), Ok(Answer::Result { val: 0, error: -Errno::ENOSYS.0 }));
        assert_eq!(l.notify(1, [0; 64]), Err(Errno::ENOSYS));
    }

    #[test]
    fn a_notification_received_into_a_bad_buffer_is_received_again() {
        let l = Listener::new(1);
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.notify(1, [0; 64]));
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
