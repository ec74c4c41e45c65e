//! Signal dispositions. Delivery arrives with the processes-and-signals
//! work; for now the kernel records actions and masks so programs that
//! install handlers run, and fatal signals end the sandbox.

use parking_lot::Mutex;

pub(crate) use crate::abi::signal::{
    NSIG, SA_NOCLDSTOP, SA_NODEFER, SA_ONSTACK, SA_RESETHAND, SA_RESTART, SA_RESTORER, SA_SIGINFO, SIGKILL, SIG_DFL,
    SIG_IGN, SS_AUTODISARM, SS_DISABLE, SS_ONSTACK,
};

/// What a signal does when its handler is SIG_DFL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DefaultAction {
    Terminate,
    /// Terminate and dump core.
    CoreDump,
    Ignore,
    Stop,
}

/// The default action of signal `sig` (1..=64).
pub(crate) fn default_action(sig: i32) -> DefaultAction {
    match sig {
        // SIGCHLD, SIGCONT, SIGURG, SIGWINCH
        17 | 18 | 23 | 28 => DefaultAction::Ignore,
        // SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
        19..=22 => DefaultAction::Stop,
        // SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV,
        // SIGXCPU, SIGXFSZ, SIGSYS
        3..=8 | 11 | 24 | 25 | 31 => DefaultAction::CoreDump,
        _ => DefaultAction::Terminate,
    }
}

/// Whether thread `t` drops `sig` when it is sent, as Linux's
/// `sig_ignored`: it does not block it, and its disposition ignores it
/// (SIG_IGN, or SIG_DFL for a signal whose default is to be ignored). Such
/// a signal is never queued and wakes nobody. A traced thread's tracer
/// sees every signal, so a tracee ignores none at sending.
pub(crate) fn ignored_by(t: &super::Thread, sig: i32) -> bool {
    let Some(idx) = usize::try_from(sig).ok().filter(|i| (1..=NSIG).contains(i)) else { return false };
    if sig == SIGKILL || t.sigmask() & sigbit(sig) != 0 || t.ptraced.load(std::sync::atomic::Ordering::SeqCst) {
        return false;
    }
    let handler = t.sigactions().swap(idx, None).handler;
    handler == SIG_IGN || (handler == SIG_DFL && default_action(sig) == DefaultAction::Ignore)
}

/// Whether `t`'s process has its children reaped as they die: its
/// SIGCHLD is ignored (SIG_IGN) or set with SA_NOCLDWAIT, as Linux's
/// `do_notify_parent` decides for a child whose exit signal is SIGCHLD.
pub(crate) fn reaps_children(t: &super::Thread) -> bool {
    let Ok(idx) = usize::try_from(libc::SIGCHLD) else { return false };
    let a = t.sigactions().swap(idx, None);
    a.handler == SIG_IGN || a.flags & crate::abi::signal::SA_NOCLDWAIT != 0
}

/// SIGSTOP, SIGTSTP, SIGTTIN and SIGTTOU as a signal set.
pub(crate) const STOP_SIGNALS: u64 = 0xf << 18;

/// The bit of signal `sig` in a signal set (0 for an invalid signal).
pub(crate) fn sigbit(sig: i32) -> u64 {
    u32::try_from(sig - 1).ok().and_then(|s| 1u64.checked_shl(s)).unwrap_or(0)
}

/// The alternate signal stack of a thread (`sigaltstack`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    /// The flags as the guest set them (SS_DISABLE, SS_ONSTACK,
    /// SS_AUTODISARM).
    pub flags: u32,
}

pub use crate::abi::signal::SigAction;

/// The dispositions of a thread group.
pub struct SigActions {
    actions: Mutex<[SigAction; NSIG]>,
}

impl Default for SigActions {
    fn default() -> Self {
        SigActions { actions: Mutex::new([SigAction::default(); NSIG]) }
    }
}

impl SigActions {
    /// Reads and optionally replaces the action of `sig` (1-based).
    pub fn swap(&self, sig: usize, new: Option<SigAction>) -> SigAction {
        let mut a = self.actions.lock();
        let old = a[sig - 1];
        if let Some(n) = new {
            a[sig - 1] = n;
        }
        old
    }

    /// A copy, for a process that stops sharing its handlers.
    pub fn copy(&self) -> SigActions {
        SigActions { actions: Mutex::new(*self.actions.lock()) }
    }

    /// Resets handled signals to their default at exec (ignored stay ignored).
    pub fn reset_for_exec(&self) {
        for a in self.actions.lock().iter_mut() {
            if a.handler != 1 {
                *a = SigAction::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::signal::SIGSTOP;

    #[test]
    fn stop_signals() {
        for s in [SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU] {
            assert_ne!(STOP_SIGNALS & sigbit(s), 0, "{s}");
        }
        assert_eq!(STOP_SIGNALS.count_ones(), 4);
    }

    #[test]
    fn default_actions() {
        assert_eq!(default_action(SIGKILL), DefaultAction::Terminate);
        assert_eq!(default_action(libc::SIGTERM), DefaultAction::Terminate);
        assert_eq!(default_action(libc::SIGPIPE), DefaultAction::Terminate);
        assert_eq!(default_action(libc::SIGABRT), DefaultAction::CoreDump);
        assert_eq!(default_action(libc::SIGSEGV), DefaultAction::CoreDump);
        assert_eq!(default_action(libc::SIGSYS), DefaultAction::CoreDump);
        assert_eq!(default_action(libc::SIGCHLD), DefaultAction::Ignore);
        assert_eq!(default_action(libc::SIGCONT), DefaultAction::Ignore);
        assert_eq!(default_action(libc::SIGURG), DefaultAction::Ignore);
        assert_eq!(default_action(libc::SIGWINCH), DefaultAction::Ignore);
        assert_eq!(default_action(SIGSTOP), DefaultAction::Stop);
        assert_eq!(default_action(libc::SIGTSTP), DefaultAction::Stop);
        assert_eq!(default_action(libc::SIGTTOU), DefaultAction::Stop);
        assert_eq!(default_action(libc::SIGPWR), DefaultAction::Terminate);
        assert_eq!(default_action(34), DefaultAction::Terminate, "real-time signals terminate");
        assert_eq!(default_action(64), DefaultAction::Terminate);
    }

    #[test]
    fn signal_bits() {
        assert_eq!(sigbit(1), 1);
        assert_eq!(sigbit(SIGKILL), 1 << 8);
        assert_eq!(sigbit(64), 1 << 63);
        assert_eq!(sigbit(0), 0);
        assert_eq!(sigbit(65), 0);
    }
}
