//! Credentials and capabilities: who a task acts as and what it may do.
//! A leaf of the sentry, below the VFS and the kernel, so permission
//! checks anywhere can use it without reaching into the kernel.

pub mod caps;
pub(crate) mod creds;

pub(crate) use creds::Credentials;
