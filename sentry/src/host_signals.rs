//! Signals the sandbox receives from the host (Ctrl-C at a terminal, a
//! supervisor's SIGTERM): the sentry does not die of them but passes them
//! to the guest's foreground process group, the init process's group, as
//! a terminal would.

use crate::kernel::process::INIT_PID;
use crate::kernel::Kernel;
use std::sync::Weak;

/// The host signals forwarded to the guest.
const FORWARDED: [i32; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

fn forwarded_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initializes the set; sigaddset adds valid signals.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the forwarded signals in the calling thread; every thread the
/// sentry starts afterwards inherits the mask. Call before any thread.
pub fn block() {
    let set = forwarded_set();
    // SAFETY: `set` is initialized; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Starts the thread that waits for the forwarded signals and sends each
/// to the guest's foreground process group.
pub fn start_forwarder(kernel: Weak<Kernel>) -> std::io::Result<()> {
    std::thread::Builder::new().name("host-signals".into()).spawn(move || {
        let set = forwarded_set();
        loop {
            let mut sig = 0;
            // SAFETY: `set` is initialized and `sig` is a valid out-pointer.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
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
