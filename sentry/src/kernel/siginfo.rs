//! `siginfo_t`: what a pending signal carries from its sender to the
//! handler, rt_sigtimedwait or a signalfd record. The union's layout
//! follows the code: a sender's pid and uid (SI_USER, SI_TKILL, SI_QUEUE
//! with a value), a child's pid, uid and status (SIGCHLD), a timer's id,
//! overrun and value (SI_TIMER), a fault's address.

use crate::abi::layout::{Decoder, Encoder};
use crate::abi::poll::{
    POLLERR, POLLHUP, POLLIN, POLLMSG, POLLOUT, POLLPRI, POLLRDBAND, POLLRDNORM, POLLWRBAND, POLLWRNORM,
};
use crate::abi::signal::{POLL_ERR, POLL_HUP, POLL_IN, POLL_MSG, POLL_OUT, POLL_PRI, SI_SIGIO, SYS_SECCOMP};

pub(crate) const SIGINFO_SIZE: usize = 128;
pub(crate) use crate::abi::signal::{
    CLD_CONTINUED, CLD_EXITED, CLD_KILLED, CLD_STOPPED, SI_KERNEL, SI_MESGQ, SI_TIMER, SI_USER,
};

/// A signal's `siginfo_t`, encoded.
#[derive(Clone)]
pub struct SigInfo(pub [u8; SIGINFO_SIZE]);

impl SigInfo {
    /// A fault signal (SIGSEGV, SIGBUS …) at `addr`.
    pub fn fault(signo: i32, code: i32, addr: u64) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(code).i32(0).u64(addr);
        SigInfo::from(e)
    }

    /// A seccomp TRAP's SIGSYS (SYS_SECCOMP): the filter's data as
    /// si_errno, the address after the call's instruction, its number
    /// and architecture.
    pub fn seccomp(errno: i32, call_addr: u64, nr: i32, arch: u32) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(libc::SIGSYS).i32(errno).i32(SYS_SECCOMP).i32(0).u64(call_addr).i32(nr).u32(arch);
        SigInfo::from(e)
    }

    /// A signal sent by a process (kill: SI_USER, tgkill: SI_TKILL), with
    /// the sender's process id and real uid.
    pub fn user(signo: i32, code: i32, pid: i32, uid: u32) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(code).i32(0).i32(pid).u32(uid);
        SigInfo::from(e)
    }

    /// A signal the kernel raises itself (SI_KERNEL): an alarm, a signal
    /// from outside the sandbox.
    pub fn kernel(signo: i32) -> SigInfo {
        SigInfo::user(signo, SI_KERNEL, 0, 0)
    }

    /// SIGCHLD for child `pid` (owned by `uid`): it exited, was killed,
    /// stopped or continued (`code`), with `status`.
    pub fn child(signo: i32, code: i32, pid: i32, uid: u32, status: i32) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(code).i32(0).i32(pid).u32(uid).i32(status);
        SigInfo::from(e)
    }

    /// A POSIX timer's expiry (SI_TIMER): its id, overrun and the value
    /// given at timer_create.
    pub fn timer(signo: i32, id: i32, overrun: u32, value: u64) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(SI_TIMER).i32(0).i32(id).u32(overrun).u64(value);
        SigInfo::from(e)
    }

    /// A message arrived at an empty queue (SI_MESGQ): the sender's pid
    /// and uid, and the value given at mq_notify.
    pub fn mesgq(signo: i32, pid: i32, uid: u32, value: u64) -> SigInfo {
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(SI_MESGQ).i32(0).i32(pid).u32(uid).u64(value);
        SigInfo::from(e)
    }

    /// Signal-driven I/O on descriptor `fd` for `reason` (POLL_IN …
    /// POLL_HUP), as Linux's `send_sigio_to_task`: `signo` 0 is plain
    /// SIGIO (SI_KERNEL); another carries the reason as its code (SI_SIGIO
    /// for a signal with codes of its own), the poll events it means
    /// (si_band) and the descriptor (si_fd).
    pub fn sigpoll(signo: i32, reason: i32, fd: i32) -> SigInfo {
        if signo == 0 {
            return SigInfo::kernel(libc::SIGIO);
        }
        let own_codes =
            [libc::SIGILL, libc::SIGFPE, libc::SIGSEGV, libc::SIGBUS, libc::SIGTRAP, libc::SIGCHLD, libc::SIGSYS];
        let code = if own_codes.contains(&signo) { SI_SIGIO } else { reason };
        let band = match reason {
            POLL_IN => POLLIN | POLLRDNORM,
            POLL_OUT => POLLOUT | POLLWRNORM | POLLWRBAND,
            POLL_MSG => POLLIN | POLLRDNORM | POLLMSG,
            POLL_ERR => POLLERR,
            POLL_PRI => POLLPRI | POLLRDBAND,
            POLL_HUP => POLLHUP | POLLERR,
            _ => !0,
        };
        let mut e = Encoder::with_capacity(SIGINFO_SIZE);
        e.i32(signo).i32(0).i32(code).i32(0).u64(u64::from(band)).i32(fd);
        SigInfo::from(e)
    }

    /// A siginfo given by rt_sigqueueinfo, with its signal number set to
    /// `signo`.
    pub fn queued(raw: [u8; SIGINFO_SIZE], signo: i32) -> SigInfo {
        let mut info = SigInfo(raw);
        info.0[..4].copy_from_slice(&signo.to_le_bytes());
        info
    }

    fn from(mut e: Encoder) -> SigInfo {
        e.zeros(SIGINFO_SIZE - e.len());
        let mut out = [0u8; SIGINFO_SIZE];
        out.copy_from_slice(e.as_bytes());
        SigInfo(out)
    }

    pub fn signo(&self) -> i32 {
        Decoder::new(&self.0).i32()
    }

    pub fn code(&self) -> i32 {
        Decoder::new(&self.0[8..]).i32()
    }

    /// The timer a SI_TIMER signal came from.
    pub fn timer_id(&self) -> Option<i32> {
        (self.code() == SI_TIMER).then(|| Decoder::new(&self.0[16..]).i32())
    }

    /// Whether the union holds a band and a descriptor (Linux's
    /// SIL_POLL layout): SI_SIGIO, or a POLL_* code on a signal without
    /// codes of its own below it.
    fn is_poll(&self) -> bool {
        let limit = match self.signo() {
            libc::SIGILL | libc::SIGFPE | libc::SIGSEGV | libc::SIGBUS | libc::SIGTRAP | libc::SIGCHLD => return false,
            libc::SIGSYS => SYS_SECCOMP,
            _ => 0,
        };
        self.code() == SI_SIGIO || (self.code() > limit && self.code() <= POLL_HUP)
    }

    /// The union's first words: (pid or timer id, uid or overrun, the
    /// status or value word).
    fn fields(&self) -> (i32, u32, u64) {
        let mut d = Decoder::new(&self.0[16..]);
        (d.i32(), d.u32(), d.u64())
    }

    /// The `struct signalfd_siginfo` record of this signal.
    pub fn signalfd_record(&self) -> [u8; 128] {
        let (first, second, word) = self.fields();
        // The value's int member: the word's low half.
        let b = word.to_le_bytes();
        let low = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let code = self.code();
        let signo = u32::try_from(self.signo()).unwrap_or(0);
        let mut e = Encoder::with_capacity(128);
        e.u32(signo).i32(0).i32(code);
        let poll = self.is_poll();
        let (band, fd) = if poll { (Decoder::new(&self.0[16..]).u32(), low) } else { (0, 0) };
        let (pid, uid, tid, overrun, status, int, ptr, addr) = match code {
            _ if poll => (0, 0, 0, 0, 0, 0, 0, 0),
            SI_TIMER => (0, 0, u32::try_from(first).unwrap_or(0), second, 0, low, word, 0),
            _ if self.signo() == libc::SIGCHLD && code > 0 => {
                (u32::try_from(first).unwrap_or(0), second, 0, 0, low, 0, 0, 0)
            }
            c if c <= 0 || c == SI_KERNEL => (u32::try_from(first).unwrap_or(0), second, 0, 0, 0, low, word, 0),
            // A fault: its address.
            _ => (0, 0, 0, 0, 0, 0, 0, Decoder::new(&self.0[16..]).u64()),
        };
        e.u32(pid).u32(uid).i32(fd).u32(tid).u32(band).u32(overrun).u32(0).i32(status).i32(int).u64(ptr);
        e.u64(0).u64(0).u64(addr);
        e.zeros(128 - e.len());
        let mut out = [0u8; 128];
        out.copy_from_slice(e.as_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_fields_reach_the_signalfd_record() {
        let r = SigInfo::user(15, SI_USER, 42, 1000).signalfd_record();
        let mut d = Decoder::new(&r);
        assert_eq!((d.u32(), d.i32(), d.i32(), d.u32(), d.u32()), (15, 0, SI_USER, 42, 1000));
        let r = SigInfo::child(libc::SIGCHLD, CLD_EXITED, 7, 0, 3).signalfd_record();
        let mut d = Decoder::new(&r[12..]);
        assert_eq!(d.u32(), 7);
        assert_eq!(Decoder::new(&r[40..]).i32(), 3);
        let r = SigInfo::timer(34, 5, 2, 0xabc).signalfd_record();
        assert_eq!(Decoder::new(&r[24..]).u32(), 5);
        assert_eq!(Decoder::new(&r[32..]).u32(), 2);
        assert_eq!(Decoder::new(&r[48..]).u64(), 0xabc);
    }

    #[test]
    fn signal_driven_io_carries_band_and_descriptor() {
        let i = SigInfo::sigpoll(40, POLL_IN, 9);
        assert_eq!((i.signo(), i.code()), (40, POLL_IN));
        assert_eq!(Decoder::new(&i.0[16..]).u64(), u64::from(POLLIN | POLLRDNORM));
        assert_eq!(Decoder::new(&i.0[24..]).i32(), 9);
        let r = i.signalfd_record();
        assert_eq!((Decoder::new(&r[20..]).i32(), Decoder::new(&r[28..]).u32()), (9, POLLIN | POLLRDNORM));
        assert_eq!(SigInfo::sigpoll(libc::SIGSEGV, POLL_OUT, 3).code(), SI_SIGIO);
        assert_eq!(SigInfo::sigpoll(0, POLL_OUT, 3).code(), SI_KERNEL);
        assert!(!SigInfo::fault(libc::SIGSEGV, 1, 0x1000).is_poll());
    }
}
