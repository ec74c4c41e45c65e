//! The socket-level (SOL_SOCKET) state every socket keeps, whatever its
//! family: the fields of Linux's `struct sock` that sk_setsockopt sets and
//! sk_getsockopt reports. syscalls/sockopt.rs reads and checks the guest's
//! arguments; this is only the state and the sandbox's net.core limits.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// net.core.wmem_max and rmem_max: the most SO_SNDBUF and SO_RCVBUF may
/// ask for (Linux's defaults).
pub(crate) const WMEM_MAX: u32 = 212_992;
pub(crate) const RMEM_MAX: u32 = 212_992;
/// net.core.wmem_default and rmem_default: a new socket's buffer sizes,
/// TCP's aside.
pub(crate) const WMEM_DEFAULT: i32 = 212_992;
pub(crate) const RMEM_DEFAULT: i32 = 212_992;
/// net.ipv4.tcp_rmem's maximum: bounds a TCP socket's SO_RCVLOWAT.
pub(crate) const TCP_RMEM_MAX: i32 = 6_291_456;

/// SO_RCVTIMEO and SO_SNDTIMEO as a socket holds them: (receive, send).
pub(crate) type Timeouts = Mutex<(Option<std::time::Duration>, Option<std::time::Duration>)>;

/// The timeout of a write (`write`) or a read, for `FileOps::io_timeout`.
pub(crate) fn io_timeout(t: &Timeouts, write: bool) -> Option<std::time::Duration> {
    let t = t.lock();
    if write {
        t.1
    } else {
        t.0
    }
}

/// Which form of receive timestamps SO_TIMESTAMP* asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamping {
    /// Nanoseconds (SO_TIMESTAMPNS) rather than microseconds.
    pub ns: bool,
    /// The y2038-safe `_NEW` option and message types.
    pub new: bool,
}

/// The values, with Linux's defaults for a new socket.
#[derive(Clone, Debug)]
pub(crate) struct Values {
    /// Boolean options by option number (bit n for option n < 64).
    pub flags: u64,
    /// SO_SNDBUF and SO_RCVBUF once set (None: the family's default).
    pub sndbuf: Option<i32>,
    pub rcvbuf: Option<i32>,
    /// SO_LINGER: whether close lingers, and for how many seconds.
    pub linger: (bool, i32),
    pub priority: i32,
    pub mark: u32,
    pub rcvlowat: i32,
    pub busy_poll: i32,
    pub incoming_cpu: i32,
    pub zerocopy: bool,
    pub stamping: Option<Stamping>,
    /// SO_TIMESTAMPING's flags.
    pub tsflags: u32,
    /// SO_BINDTODEVICE: the interface's index and name.
    pub device: Option<(u32, &'static str)>,
}

impl Default for Values {
    fn default() -> Values {
        Values {
            flags: 0,
            sndbuf: None,
            rcvbuf: None,
            linger: (false, 0),
            priority: 0,
            mark: 0,
            rcvlowat: 1,
            busy_poll: 0,
            incoming_cpu: -1,
            zerocopy: false,
            stamping: None,
            tsflags: 0,
            device: None,
        }
    }
}

/// A socket's SOL_SOCKET state.
#[derive(Default)]
pub(crate) struct SockOpts {
    values: Mutex<Values>,
    /// SO_COOKIE, given on first use (0: none yet), as sock_gen_cookie.
    cookie: AtomicU64,
}

/// The last cookie given out.
static COOKIES: AtomicU64 = AtomicU64::new(0);

impl SockOpts {
    /// A copy of the current values.
    pub(crate) fn get(&self) -> Values {
        self.values.lock().clone()
    }

    /// Changes the values with `f`, which may refuse (nothing changes).
    pub(crate) fn update<E>(&self, f: impl FnOnce(&mut Values) -> Result<(), E>) -> Result<(), E> {
        let mut v = self.values.lock();
        let mut next = v.clone();
        f(&mut next)?;
        *v = next;
        Ok(())
    }

    /// The socket's cookie: unique in the sandbox, never 0, fixed once read.
    pub(crate) fn cookie(&self) -> u64 {
        let had = self.cookie.load(Ordering::Relaxed);
        if had != 0 {
            return had;
        }
        let fresh = COOKIES.fetch_add(1, Ordering::Relaxed) + 1;
        match self.cookie.compare_exchange(0, fresh, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => fresh,
            Err(had) => had,
        }
    }
}
