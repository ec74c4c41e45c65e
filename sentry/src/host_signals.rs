//! Signals the sandbox receives from the host (Ctrl-C at a terminal, a
//! supervisor's SIGTERM): the sentry does not die of them but passes them
//! to the guest's foreground process group, the init process's group, as
//! a terminal would.

use crate::kernel::process::INIT_PID;
use crate::kernel::Kernel;
use nix::sys::signal::{SigSet, Signal};
use std::sync::Weak;

/// The host signals forwarded to the guest (SIGWINCH: the console's
/// window changed).
const FORWARDED: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGWINCH,
];

/// A container's console stops the guest, not the sentry, on Ctrl-Z (and
/// background terminal I/O). Under `husk do` these stay with the host's
/// job control, which stops and continues the whole sandbox like any
/// program.
const CONSOLE_STOPS: [Signal; 3] = [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU];

fn forwarded_set(console: bool) -> SigSet {
    let mut set = SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    if console {
        for s in CONSOLE_STOPS {
            set.add(s);
        }
    }
    set
}

/// Blocks the forwarded signals in the calling thread; every thread the
/// sentry starts afterwards inherits the mask. Call before any thread.
pub fn block(console: bool) -> nix::Result<()> {
    forwarded_set(console).thread_block()
}

/// Starts the thread that waits for the forwarded signals and sends each
/// to the guest's foreground process group. With a `bridged` console the
/// sentry's own terminal signals window changes (see `console`), so the
/// host's SIGWINCH is dropped.
pub fn start_forwarder(kernel: Weak<Kernel>, console: bool, bridged: bool) -> std::io::Result<()> {
    std::thread::Builder::new().name("host-signals".into()).spawn(move || {
        let set = forwarded_set(console);
        while let Ok(sig) = set.wait() {
            if bridged && sig == Signal::SIGWINCH {
                continue;
            }
            let sig = sig as i32;
            let Some(k) = kernel.upgrade() else { return };
            let pgid = k.procs.pgid(INIT_PID).unwrap_or(INIT_PID);
            log::debug!("host signal {sig}: forwarded to process group {pgid}");
            for pid in k.procs.group_members(pgid) {
                k.signal_from_outside(pid, sig);
            }
        }
    })?;
    Ok(())
}
