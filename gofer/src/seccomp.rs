//! The gofer's seccomp filter: file operations on the descriptors it holds
//! and the socket it serves, nothing else. Anything else kills it.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

const GOFER_SYSCALLS: &[libc::c_long] = &[
    // The connection to the sentry.
    libc::SYS_recvmsg,
    libc::SYS_sendmsg,
    // Resolving and inspecting files beneath the root.
    libc::SYS_openat,
    libc::SYS_close,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_statx,
    libc::SYS_fstatfs,
    libc::SYS_getdents64,
    libc::SYS_lseek,
    libc::SYS_readlinkat,
    libc::SYS_fcntl,
    // Changing them (refused earlier in read-only mode).
    libc::SYS_mkdirat,
    libc::SYS_mknodat,
    libc::SYS_symlinkat,
    libc::SYS_linkat,
    libc::SYS_unlinkat,
    // glibc's renameat2 with no flags is the renameat system call.
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_fchmodat,
    libc::SYS_fchmod,
    libc::SYS_fchownat,
    libc::SYS_fchown,
    libc::SYS_utimensat,
    libc::SYS_ftruncate,
    // Logging and the process itself.
    libc::SYS_write,
    libc::SYS_read,
    libc::SYS_clock_gettime,
    libc::SYS_getrandom,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mremap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_brk,
    libc::SYS_futex,
    libc::SYS_sigaltstack,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_restart_syscall,
    libc::SYS_exit,
    libc::SYS_exit_group,
];

/// Why the filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("building the gofer's seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("installing the gofer's seccomp filter: {0}")]
    Install(#[from] seccompiler::Error),
}

/// The gofer's filter.
pub fn gofer_filter() -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = GOFER_SYSCALLS.iter().map(|&nr| (nr, Vec::new())).collect();
    rules.insert(libc::SYS_fallocate, fallocate_rules()?);
    Ok(SeccompFilter::new(rules, SeccompAction::KillProcess, SeccompAction::Allow, TargetArch::x86_64)?.try_into()?)
}

/// `fallocate` in the modes of the protocol's `Fallocate` request only.
fn fallocate_rules() -> Result<Vec<SeccompRule>, SeccompError> {
    crate::protocol::FALLOCATE_MODES
        .iter()
        .map(|&mode| {
            let mode = u64::try_from(mode).unwrap_or(u64::MAX);
            let cond = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, mode)?;
            Ok(SeccompRule::new(vec![cond])?)
        })
        .collect()
}

/// Confines the calling thread, the one that serves (the gofer process
/// has no other), to the gofer's filter.
pub fn confine() -> Result<(), SeccompError> {
    seccompiler::apply_filter(&gofer_filter()?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_compiles() {
        assert!(gofer_filter().unwrap().len() > GOFER_SYSCALLS.len());
    }
}
