//! The husk gofer: the process that owns a sandbox's root filesystem and
//! serves file operations to the sentry over a `SOCK_SEQPACKET` socket.
//!
//! * [`protocol`] is the wire format shared by both ends.
//! * [`server`] is the file server (`husk gofer` runs [`serve_main`]).
//! * [`client`] is what the sentry uses to talk to it.
//! * [`confine`] shuts the gofer process into the sandbox root.
//!
//! Every path component is resolved beneath the root without following host
//! symlinks; the sentry does its own path walking (`..`, symlinks) on top of
//! single-component [`Client::walk`].
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

pub mod client;
pub mod confine;
pub mod protocol;
pub mod seccomp;
pub mod server;
mod transport;

#[cfg(test)]
mod tests;

pub use client::Client;
pub use protocol::{Dirent, Fid, SetAttr, SetTime, Stat, StatFs, TimeSpec};
pub use server::serve_main;

/// An error from a gofer operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operation failed on the host with this errno.
    #[error("errno {0}")]
    Errno(i32),
    /// A peer sent a malformed frame; the connection is no longer usable.
    #[error("gofer protocol: {0}")]
    Protocol(String),
    /// The process could not be confined (its seccomp filter).
    #[error("confining the gofer: {0}")]
    Confine(String),
    /// The transport or a setup step failed.
    #[error("gofer i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The errno to report to a guest: the host errno for [`Error::Errno`],
    /// `EIO` for everything else.
    pub fn errno(&self) -> i32 {
        match self {
            Error::Errno(e) => *e,
            Error::Protocol(_) | Error::Confine(_) | Error::Io(_) => libc::EIO,
        }
    }
}

/// The result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
