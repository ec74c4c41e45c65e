//! The host's `membarrier(MEMBARRIER_CMD_GLOBAL)`: the one host call that
//! makes every thread on every CPU (a guest thread runs as a host thread
//! of a stub process) pass a full memory barrier. Whether the host has it
//! is read once, before the sentry is confined; the sentry's seccomp
//! filter then allows membarrier with exactly these arguments.

use std::sync::OnceLock;

/// `MEMBARRIER_CMD_QUERY`.
const CMD_QUERY: libc::c_long = 0;
/// `MEMBARRIER_CMD_GLOBAL`.
pub const CMD_GLOBAL: libc::c_long = 1;

/// Whether the host serves `MEMBARRIER_CMD_GLOBAL` (not on a kernel
/// without CONFIG_MEMBARRIER, nor with nohz_full).
pub fn have_global_barrier() -> bool {
    static HAVE: OnceLock<bool> = OnceLock::new();
    *HAVE.get_or_init(|| {
        // SAFETY: membarrier(QUERY, 0, 0) reads no memory and only reports
        // the supported commands.
        let mask = unsafe { libc::syscall(libc::SYS_membarrier, CMD_QUERY, 0, 0) };
        mask > 0 && mask & CMD_GLOBAL != 0
    })
}

/// A full memory barrier on every running host thread; the host's errno
/// when it fails.
pub fn global_barrier() -> Result<(), i32> {
    // SAFETY: membarrier(GLOBAL, 0, 0) takes no pointers; it waits for
    // every CPU to pass a barrier.
    let r = unsafe { libc::syscall(libc::SYS_membarrier, CMD_GLOBAL, 0, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL))
    }
}
