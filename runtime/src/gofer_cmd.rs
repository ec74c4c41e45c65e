//! `husk gofer`: the file server of a sandbox.

use crate::cli::GoferArgs;
use anyhow::Context as _;
use std::os::fd::{FromRawFd, OwnedFd};

pub fn run(args: GoferArgs) -> anyhow::Result<i32> {
    // SAFETY: F_GETFD only inspects the descriptor.
    if args.sock_fd < 0 || unsafe { libc::fcntl(args.sock_fd, libc::F_GETFD) } < 0 {
        anyhow::bail!("descriptor {} is not open", args.sock_fd);
    }
    // SAFETY: the runtime handed this descriptor to us for our exclusive use.
    let sock = unsafe { OwnedFd::from_raw_fd(args.sock_fd) };
    husk_gofer::serve_main(&args.rootfs, sock, args.read_only)
        .with_context(|| format!("serving {}", args.rootfs.display()))?;
    Ok(0)
}
