//! The audit log (ARCHITECTURE.md §8): a tamper-evident record of what a
//! sandbox did, written by the sentry below the guest, where guest code
//! can neither suppress nor forge it.
//!
//! The log is JSON Lines. Every line holds `ts` (RFC 3339, UTC, ns),
//! `sandbox`, `seq` (from 0, without gaps), `type`, the fields of its
//! type and `prev`: the hex SHA-256 of the previous line's bytes (without
//! its newline); the first line's `prev` hashes the text of the random
//! `nonce` it carries, so no two logs share a chain. Editing, dropping,
//! reordering or cutting lines breaks the chain or the sequence, which
//! `verify` finds.
//!
//! A leaf module: it knows nothing of the kernel. The kernel holds the
//! sandbox's `AuditLog` and writes `Record`s at its hook points (exec,
//! exit, the OOM killer, unimplemented calls); anything above it (the
//! syscall layer's sockets, the boot code) writes through the kernel's
//! `audit` the same way. A new kind of record is one more variant of
//! `Record`.

pub mod glob;
mod line;
pub mod ocsf;
pub(crate) mod package;
mod record;
pub mod redact;
pub(crate) mod syslog;
mod time;
pub mod verify;
mod writer;
#[cfg(test)]
pub(crate) use writer::tests as writer_tests;

pub use record::{DeleteReason, ExitReason, Outcome, Record};
pub(crate) use record::{Mount, SecretInfo, SecurityConfig};
pub(crate) use time::epoch_millis;
pub use writer::{append_delete, close_after_kill};
pub(crate) use writer::{AuditError, AuditLog, Sink};
