//! `husk gofer`: the file server of a sandbox.

use crate::cli::GoferArgs;
use crate::sandbox::inherited_fd;
use anyhow::Context as _;

pub fn run(args: GoferArgs) -> anyhow::Result<i32> {
    let sock = inherited_fd(args.sock_fd)?;
    husk_gofer::serve_main(&args.rootfs, sock, args.read_only)
        .with_context(|| format!("serving {}", args.rootfs.display()))?;
    Ok(0)
}
