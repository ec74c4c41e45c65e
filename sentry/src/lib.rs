//! The husk sentry: a Linux-compatible kernel in user space. Every system
//! call of a guest program is serviced here; the guest never reaches the
//! host kernel.
//!
//! Every module is internal to the crate; [`api`] names the few items the
//! runtime (`husk`), the benchmarks and the tests use, so the compiler sees
//! (and reports) everything else that nothing uses.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

pub(crate) mod abi;
pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod boot;
pub(crate) mod fs;
pub(crate) mod host;
pub(crate) mod kernel;
pub(crate) mod loader;
pub(crate) mod mm;
pub(crate) mod platform;
pub(crate) mod syscalls;
/// What unit tests and the micro-benchmarks share (`--features testing`).
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub(crate) mod vfs;
pub(crate) mod waiter;

/// The sentry's public surface, laid out as the modules it comes from.
pub mod api {
    /// The audit log: its records, verification and redaction.
    pub mod audit {
        pub use crate::audit::{append_delete, close_after_kill, DeleteReason, ExitReason, Outcome, Record};
        /// What `--audit-watch` and `--audit-read` watch by default.
        pub mod glob {
            pub use crate::audit::glob::{DEFAULT_READ, DEFAULT_WATCH};
        }
        /// Records as OCSF events.
        pub mod ocsf {
            pub use crate::audit::ocsf::event;
        }
        /// Secret values kept out of logs and output.
        pub mod redact {
            pub use crate::audit::redact::{install, redact_text, Redactor};
        }
        /// The log's hash chain.
        pub mod verify {
            pub use crate::audit::verify::verify;
        }
    }

    /// Capabilities as the runtime's bundle and flags name them.
    pub mod auth {
        /// Capability sets.
        pub mod caps {
            pub use crate::auth::caps::{all_names, parse_set, Capabilities};
        }
    }

    /// Starting a sandbox and talking to it.
    pub mod boot {
        pub use crate::boot::{boot, BindMount, BootConfig, BootError, ContainerSeccomp, EgressConfig, Network};
        /// The audit log's configuration.
        pub mod audit {
            pub use crate::boot::audit::AuditConfig;
        }
        /// The control socket.
        pub mod control {
            pub use crate::boot::control::ControlConfig;
            /// Its requests and replies.
            pub mod protocol {
                pub use crate::boot::control::protocol::{decode_reply, ExecSpec, ExitLine, ProcessRow, Request};
            }
        }
        /// Signals the runtime forwards to the sandbox.
        pub mod host_signals {
            pub use crate::boot::host_signals::FORWARD_SIGNAL;
        }
        /// The first process.
        pub mod launch {
            pub use crate::boot::launch::{LaunchError, ProcessSpec};
        }
        /// Secrets handed to the sentry.
        pub mod secrets {
            pub use crate::boot::secrets::{check, decode, encode, redacted, valid_name, SecretSpec};
        }
    }

    /// The egress gateway's and the inbound ports' configuration.
    pub mod fs {
        /// The egress gateway.
        pub mod egress {
            pub use crate::fs::egress::{Limits, HOST_SOCKETS};
        }
        /// Published ports.
        pub mod inbound {
            pub use crate::fs::inbound::Publish;
        }
    }

    /// What the kernel reports and takes as limits.
    pub mod kernel {
        pub use crate::kernel::{ExitStatus, Handler};
        /// Resource limits.
        pub mod limits {
            pub use crate::kernel::limits::{CgroupLimits, Rlimit, RLIMIT_NLIMITS};
        }
        /// Seccomp filters a container installs.
        pub mod seccomp {
            pub use crate::kernel::seccomp::{
                AUDIT_ARCH_X86_64, RET_ALLOW, RET_DATA, RET_ERRNO, RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRACE,
            };
            /// Classic BPF programs.
            pub mod bpf {
                pub use crate::kernel::seccomp::bpf::{op, Insn, Program, MAX_INSNS};
            }
        }
        /// CPU and wall-clock limits.
        pub mod watchdog {
            pub use crate::kernel::watchdog::Limits;
        }
    }

    /// The syscall table.
    pub mod syscalls {
        pub use crate::syscalls::{register, table, Support};
        /// Syscall names by number.
        pub mod names {
            pub use crate::syscalls::names::NAMES;
        }
    }
}
