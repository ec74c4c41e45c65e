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

fn forwarded_set() -> SigSet {
    let mut set = SigSet::empty();
    for s in FORWARDED {
        set.add(s);
    }
    set
}

/// Blocks the forwarded signals in the calling thread; every thread the
/// sentry starts afterwards inherits the mask. Call before any thread.
pub fn block() -> nix::Result<()> {
    forwarded_set().thread_block()
}

/// Starts the thread that waits for the forwarded signals and sends each
/// to the guest's foreground process group.
pub fn start_forwarder(kernel: Weak<Kernel>) -> std::io::Result<()> {
    std::thread::Builder::new().name("host-signals".into()).spawn(move || {
        let set = forwarded_set();
        while let Ok(sig) = set.wait() {
            let sig = sig as i32;
            let Some(k) = kernel.upgrade() else { return };
            let pgid = k.procs.pgid(INIT_PID).unwrap_or(INIT_PID);
            log::debug!("host signal {sig}: forwarded to process group {pgid}");
            for pid in k.procs.group_members(pgid) {
                k.signal_process(pid, sig);
            }
        }
    })?;
    Ok(())
}
