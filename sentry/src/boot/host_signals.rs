//! Signals the sandbox receives from the host (Ctrl-C at a terminal, a
//! supervisor's SIGTERM): the sentry does not die of them but passes them
//! to the guest's foreground process group, the init process's group, as
//! a terminal would.

use crate::abi::signal::SI_KERNEL;
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
    // SAFETY: SigSet is a repr(transparent) sigset_t; sigaddset sets one
    // bit (a real-time signal) in this set we own.
    unsafe { libc::sigaddset(std::ptr::from_mut(&mut set).cast(), FORWARD_SIGNAL) };
    if console {
        for s in CONSOLE_STOPS {
            set.add(s);
        }
    }
    set
}

/// Blocks the forwarded signals in the calling thread; every thread the
/// sentry starts afterwards inherits the mask. Call before any thread.
pub(crate) fn block(console: bool) -> nix::Result<()> {
    forwarded_set(console).thread_block()
}

/// The real-time signal by which the runtime passes a host signal on:
/// queued (so none merges with a copy that reached the sentry directly),
/// with the signal's number as its value.
pub const FORWARD_SIGNAL: i32 = 40;

/// Starts the thread that waits for the forwarded signals and sends each
/// to the guest's foreground process group. With a `bridged` console the
/// host's SIGWINCH is the host terminal's resize: the consoles re-read its
/// size and their terminals signal the change (see `console`).
///
/// Under `husk do` (not `container`) the sentry shares the runtime's
/// process group, so a supervisor's signal to that group reaches both and
/// the runtime passes its copy on: here only the terminal's (SI_KERNEL)
/// and the runtime's ([`FORWARD_SIGNAL`]) count, and the guest gets each
/// signal once.
pub(crate) fn start_forwarder(kernel: Weak<Kernel>, container: bool, bridged: bool) -> std::io::Result<()> {
    std::thread::Builder::new().name("host-signals".into()).spawn(move || {
        let set = forwarded_set(container);
        while let Some((sig, code, value)) = wait_info(&set) {
            let sig = if sig == FORWARD_SIGNAL {
                match FORWARDED.iter().find(|&&s| s as i32 == value) {
                    Some(&s) => s as i32,
                    None => continue,
                }
            } else if !container && code != SI_KERNEL {
                continue;
            } else {
                sig
            };
            let Some(k) = kernel.upgrade() else { return };
            if bridged && sig == libc::SIGWINCH {
                k.ext::<crate::boot::console::Consoles>().host_resized();
                continue;
            }
            let pgid = k.procs().pgid(INIT_PID).unwrap_or(INIT_PID);
            log::debug!("host signal {sig}: forwarded to process group {pgid}");
            for pid in k.procs().group_members(pgid) {
                k.signal_from_outside(pid, sig);
            }
        }
    })?;
    Ok(())
}

/// Waits for a signal of `set`: its number, `si_code` and (for a queued
/// one) the integer of its `si_value`.
fn wait_info(set: &SigSet) -> Option<(i32, i32, i32)> {
    loop {
        // SAFETY: an all-zero siginfo_t is a valid value of this plain struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: the set and the siginfo are valid for the call.
        let sig = unsafe { libc::sigwaitinfo(set.as_ref(), &mut info) };
        if sig < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
        // SAFETY: si_value is read as the integer it was queued with (0
        // for other signals, whose union the kernel zero-fills).
        let value = unsafe { info.si_value() }.sival_ptr as usize;
        return Some((sig, info.si_code, i32::try_from(value & 0xffff_ffff).unwrap_or(0)));
    }
}
