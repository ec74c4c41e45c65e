//! `--strace`: one log line per guest system call, like `runsc --strace`,
//! taken at the kernel's exit hook.

use crate::abi::SysResult;
use crate::kernel::{SyscallObserver, TaskIdentity};

/// Logs each completed system call with its raw arguments and result.
pub(crate) struct Strace;

impl SyscallObserver for Strace {
    fn exit(&self, who: &TaskIdentity, nr: u64, args: &[u64; 6], result: &SysResult) {
        let res = match result {
            Ok(v) => format!("{v:#x}"),
            Err(e) => format!("-1 {e}"),
        };
        log::info!(
            target: "strace",
            "[{:>4}] {}({:#x}, {:#x}, {:#x}, {:#x}, {:#x}, {:#x}) = {}",
            who.tid,
            super::name(nr),
            args[0],
            args[1],
            args[2],
            args[3],
            args[4],
            args[5],
            res
        );
    }
}
