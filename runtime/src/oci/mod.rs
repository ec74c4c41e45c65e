//! The OCI side of the runtime: bundles, the state directory, hooks and
//! the client of a sentry's control socket.

pub mod bundle;
pub mod cgroup;
pub mod control;
pub mod hooks;
pub mod json;
pub mod overrides;
pub mod seccomp;
pub mod state;
