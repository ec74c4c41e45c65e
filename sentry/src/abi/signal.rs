//! Signal numbers, dispositions, `sigaction` and `sigaltstack` flags,
//! `si_code` values and `sigevent` notifications, with Linux's x86-64
//! values (`include/uapi/asm-generic/signal*.h`, `siginfo.h`). Handler
//! values and flags are compared against raw 64-bit words, so they are
//! `u64`; numbers and codes are `int` in the guest's structures.

use super::layout::{Decoder, Encoder, Layout};

/// The number of signals (1..=64).
pub(crate) const NSIG: usize = 64;
pub(crate) const SIGKILL: i32 = libc::SIGKILL;
pub(crate) const SIGSTOP: i32 = libc::SIGSTOP;
/// The first realtime signal, as the kernel numbers it (glibc keeps two
/// for itself, so its SIGRTMIN is 34).
pub(crate) const SIGRTMIN: i32 = 32;

/// The handler values that mean "default action" and "ignore".
pub(crate) const SIG_DFL: u64 = 0;
pub(crate) const SIG_IGN: u64 = 1;

/// `sigprocmask`'s `how`.
pub(crate) const SIG_BLOCK: i32 = libc::SIG_BLOCK;
pub(crate) const SIG_UNBLOCK: i32 = libc::SIG_UNBLOCK;
pub(crate) const SIG_SETMASK: i32 = libc::SIG_SETMASK;

/// `sigaction` flags.
pub(crate) const SA_NOCLDSTOP: u64 = 0x1;
pub(crate) const SA_NOCLDWAIT: u64 = 0x2;
pub(crate) const SA_SIGINFO: u64 = 0x4;
pub(crate) const SA_EXPOSE_TAGBITS: u64 = 0x800;
pub(crate) const SA_RESTORER: u64 = 0x0400_0000;
pub(crate) const SA_ONSTACK: u64 = 0x0800_0000;
pub(crate) const SA_RESTART: u64 = 0x1000_0000;
pub(crate) const SA_NODEFER: u64 = 0x4000_0000;
pub(crate) const SA_RESETHAND: u64 = 0x8000_0000;

/// One `struct sigaction` as the kernel takes it (rt_sigaction(2)): the
/// handler, the flags, the restorer and an 8-byte mask, unlike glibc's
/// own `struct sigaction`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigAction {
    pub handler: u64,
    pub flags: u64,
    pub restorer: u64,
    pub mask: u64,
}

impl Layout for SigAction {
    const SIZE: usize = 32;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.handler).u64(self.flags).u64(self.restorer).u64(self.mask);
    }

    fn decode_from(d: &mut Decoder) -> SigAction {
        SigAction { handler: d.u64(), flags: d.u64(), restorer: d.u64(), mask: d.u64() }
    }
}

/// `sigaltstack` flags.
pub(crate) const SS_ONSTACK: u32 = 1;
pub(crate) const SS_DISABLE: u32 = 2;
pub(crate) const SS_AUTODISARM: u32 = 1 << 31;

/// `si_code` values.
pub(crate) const SI_USER: i32 = libc::SI_USER;
pub(crate) const SI_KERNEL: i32 = 0x80;
pub(crate) const SI_TIMER: i32 = libc::SI_TIMER;
pub(crate) const SI_MESGQ: i32 = libc::SI_MESGQ;
pub(crate) const SI_TKILL: i32 = libc::SI_TKILL;
/// A signal-driven I/O signal that is not SIGIO (SIGPOLL) but has codes
/// of its own (SIGSEGV, SIGCHLD …): its POLL_* reason would be ambiguous.
pub(crate) const SI_SIGIO: i32 = libc::SI_SIGIO;
/// SIGIO's reasons (`si_code`): data to read, room to write, a message,
/// an error, priority data, a hang-up.
pub(crate) const POLL_IN: i32 = 1;
pub(crate) const POLL_OUT: i32 = 2;
pub(crate) const POLL_MSG: i32 = 3;
pub(crate) const POLL_ERR: i32 = 4;
pub(crate) const POLL_PRI: i32 = 5;
pub(crate) const POLL_HUP: i32 = 6;
pub(crate) const CLD_EXITED: i32 = libc::CLD_EXITED;
pub(crate) const CLD_KILLED: i32 = libc::CLD_KILLED;
pub(crate) const CLD_STOPPED: i32 = libc::CLD_STOPPED;
pub(crate) const CLD_CONTINUED: i32 = libc::CLD_CONTINUED;

/// `sigevent`'s `sigev_notify`.
pub(crate) const SIGEV_SIGNAL: i32 = libc::SIGEV_SIGNAL;
pub(crate) const SIGEV_NONE: i32 = libc::SIGEV_NONE;
pub(crate) const SIGEV_THREAD_ID: i32 = libc::SIGEV_THREAD_ID;

/// SIGSYS's si_code for a seccomp filter's SECCOMP_RET_TRAP.
pub(crate) const SYS_SECCOMP: i32 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values_match_linux() {
        let flags = [
            (SA_NOCLDSTOP, libc::SA_NOCLDSTOP),
            (SA_NOCLDWAIT, libc::SA_NOCLDWAIT),
            (SA_SIGINFO, libc::SA_SIGINFO),
            (SA_ONSTACK, libc::SA_ONSTACK),
            (SA_RESTART, libc::SA_RESTART),
            (SA_NODEFER, libc::SA_NODEFER),
            (SA_RESETHAND, libc::SA_RESETHAND),
        ];
        for (ours, linux) in flags {
            assert_eq!(ours, u64::from(u32::from_ne_bytes(linux.to_ne_bytes())));
        }
        assert_eq!(Ok(SS_ONSTACK), u32::try_from(libc::SS_ONSTACK));
        assert_eq!(Ok(SS_DISABLE), u32::try_from(libc::SS_DISABLE));
        assert_eq!(Ok(SIG_IGN), u64::try_from(libc::SIG_IGN));
    }
}
