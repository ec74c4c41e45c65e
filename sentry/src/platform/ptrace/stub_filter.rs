//! The stub processes' seccomp filter (defense in depth): guest system
//! calls never reach the host (PTRACE_SYSEMU stops them first), and this
//! filter makes sure that even code of the guest's choosing running in a
//! stub could make only the few host calls a stub needs.

use super::THREAD_FLAGS;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Why the stub filter could not be built.
#[derive(Debug, thiserror::Error)]
pub(super) enum FilterError {
    #[error("building the stub's seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("the MemoryFile descriptor {0} is not a descriptor")]
    BadDescriptor(i32),
}

/// The stubs' filter: a stub only ever maps and unmaps guest memory
/// (injected by its tracer), makes threads and stops itself. Guest system
/// calls never get this far (PTRACE_SYSEMU stops them first); every other
/// call traps, which the tracer sees as a SIGSYS stop before it could
/// take effect (a guest's call into the vsyscall page, which the host
/// emulates without a syscall stop, arrives that way and is served).
/// Arguments are narrowed so that even code of the guest's choosing in a
/// stub could map only the MemoryFile and signal only the stub itself.
pub(super) fn stub_filter(memfd: i32) -> Result<BpfProgram, FilterError> {
    let nrs = [libc::SYS_munmap, libc::SYS_pause, libc::SYS_exit, libc::SYS_exit_group];
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = nrs.iter().map(|&nr| (nr, Vec::new())).collect();
    // Guest memory: MAP_SHARED|MAP_FIXED views of the MemoryFile, nothing else.
    let map_flags = u64::try_from(libc::MAP_SHARED | libc::MAP_FIXED).unwrap_or(0);
    let fd = u64::try_from(memfd).map_err(|_| FilterError::BadDescriptor(memfd))?;
    rules.insert(
        libc::SYS_mmap,
        vec![SeccompRule::new(vec![
            SeccompCondition::new(3, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, map_flags)?,
            SeccompCondition::new(4, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, fd)?,
        ])?],
    );
    // kill(0, SIGSTOP): the stub stopping its own process group (itself).
    let sigstop = u64::try_from(libc::SIGSTOP).unwrap_or(19);
    rules.insert(
        libc::SYS_kill,
        vec![SeccompRule::new(vec![
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, 0)?,
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, sigstop)?,
        ])?],
    );
    // New stub threads, for new guest threads, and nothing else.
    rules.insert(
        libc::SYS_clone,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            THREAD_FLAGS,
        )?])?],
    );
    Ok(SeccompFilter::new(rules, SeccompAction::Trap, SeccompAction::Allow, TargetArch::x86_64)?.try_into()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn filter_compiles() {
        assert!(!super::stub_filter(3).unwrap().is_empty());
    }
}
