//! Linux error numbers as the guest sees them.

use std::fmt;

/// A Linux errno value returned to the guest (positive, e.g. `ENOENT` = 2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident),* $(,)?) => {
        impl Errno {
            $(pub const $name: Errno = Errno(libc::$name);)*

            /// The symbolic name, for logs and `--strace`.
            pub fn name(self) -> &'static str {
                match self.0 {
                    $(libc::$name => stringify!($name),)*
                    _ => "E?",
                }
            }
        }
    };
}

errnos!(
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    EIO,
    ENXIO,
    E2BIG,
    ENOEXEC,
    EBADF,
    ECHILD,
    EAGAIN,
    ENOMEM,
    EACCES,
    EFAULT,
    EBUSY,
    EEXIST,
    EXDEV,
    ENODEV,
    ENOTDIR,
    EISDIR,
    EINVAL,
    ENFILE,
    EMFILE,
    ENOTTY,
    ETXTBSY,
    EFBIG,
    ENOSPC,
    ESPIPE,
    EROFS,
    EMLINK,
    EPIPE,
    ESHUTDOWN,
    ERANGE,
    ENAMETOOLONG,
    ENOSYS,
    ENOTEMPTY,
    ELOOP,
    ENODATA,
    EOVERFLOW,
    ENOTSOCK,
    EAFNOSUPPORT,
    ETIMEDOUT,
    ESTALE,
    ECHRNG,
    ELIBBAD,
    EISCONN,
    ENOTCONN,
    ECONNREFUSED,
    EADDRINUSE,
    EPROTOTYPE,
    EPROTO,
    ETOOMANYREFS,
    ENOBUFS,
    ENOPROTOOPT,
    EMSGSIZE,
    EPROTONOSUPPORT,
    ESOCKTNOSUPPORT,
    EDEADLK,
    ENOLCK,
    EOPNOTSUPP,
    EBADFD,
    ENETUNREACH,
    EINPROGRESS,
    EALREADY,
    EADDRNOTAVAIL,
    EDESTADDRREQ,
    ECONNRESET,
    ECONNABORTED,
    EDOM,
    ENOMSG,
    EIDRM,
);

impl Errno {
    /// Kernel-internal: the system call was interrupted and restarts unless
    /// a handler without SA_RESTART runs (then EINTR). Never seen by the
    /// guest.
    pub const ERESTARTSYS: Errno = Errno(512);
    /// Kernel-internal: restarts unless any handler runs (then EINTR).
    pub const ERESTARTNOHAND: Errno = Errno(514);

    /// Whether this is a kernel-internal restart request.
    pub fn is_restart(self) -> bool {
        self == Errno::ERESTARTSYS || self == Errno::ERESTARTNOHAND
    }

    /// Errors raised by the host kernel on the sentry's or gofer's own calls.
    pub fn last_os_error() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl From<husk_gofer::Error> for Errno {
    fn from(e: husk_gofer::Error) -> Errno {
        Errno(e.errno())
    }
}

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// The result of a system call handler: the value for `rax`, or an errno.
pub(crate) type SysResult = Result<u64, Errno>;
