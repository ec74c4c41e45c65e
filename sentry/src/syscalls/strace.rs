//! `--strace`: one log line per guest system call, like `runsc --strace`.

use crate::abi::SysResult;
use crate::kernel::Task;

/// Logs a completed system call with its raw arguments and result.
pub fn log(task: &Task, nr: u64, args: &[u64; 6], result: &SysResult) {
    let name = super::name(nr);
    let res = match result {
        Ok(v) => format!("{v:#x}"),
        Err(e) => format!("-1 {e}"),
    };
    log::info!(
        target: "strace",
        "[{:>4}] {}({:#x}, {:#x}, {:#x}, {:#x}, {:#x}, {:#x}) = {}",
        task.thread.tid,
        name,
        args[0],
        args[1],
        args[2],
        args[3],
        args[4],
        args[5],
        res
    );
}
