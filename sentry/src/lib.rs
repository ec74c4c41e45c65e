//! The husk sentry: a Linux-compatible kernel in user space. Every system
//! call of a guest program is serviced here; the guest never reaches the
//! host kernel.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

pub(crate) mod abi;
pub mod audit;
pub mod auth;
pub mod boot;
pub mod fs;
pub(crate) mod host;
pub mod kernel;
pub(crate) mod loader;
pub(crate) mod mm;
pub(crate) mod platform;
pub mod syscalls;
/// What unit tests and the micro-benchmarks share (`--features testing`).
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub(crate) mod vfs;
pub(crate) mod waiter;
