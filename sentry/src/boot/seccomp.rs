//! The sentry's own seccomp filters (defense in depth): guest system calls
//! never reach the host, and this filter makes sure the sentry itself can
//! make only the host calls it needs. Anything else traps and ends the
//! sandbox. (The stub processes' filter belongs to the ptrace platform.)

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Why a filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("building the seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
    #[error("installing the seccomp filter: {0}")]
    Install(#[from] seccompiler::Error),
    #[error("installing the SIGSYS handler: {0}")]
    Handler(std::io::Error),
}

/// Every host call the sentry makes, with no argument restrictions.
const SENTRY_SYSCALLS: &[libc::c_long] = &[
    // I/O on descriptors it holds: guest memory, the gofer connection,
    // donated files, the sandbox's standard streams, the debug log.
    libc::SYS_read,
    libc::SYS_write,
    libc::SYS_pread64,
    libc::SYS_pwrite64,
    libc::SYS_readv,
    libc::SYS_writev,
    libc::SYS_close,
    libc::SYS_fstat,
    libc::SYS_newfstatat,
    libc::SYS_lseek,
    libc::SYS_fcntl,
    libc::SYS_poll,
    libc::SYS_ftruncate,
    libc::SYS_fsync,
    libc::SYS_fallocate,
    libc::SYS_sendmsg,
    libc::SYS_recvmsg,
    // The control socket (OCI lifecycle): the listener was bound by the
    // runtime.
    libc::SYS_accept4,
    // Memory.
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_mremap,
    libc::SYS_brk,
    // Threads (one per guest thread) and their housekeeping.
    libc::SYS_clone,
    libc::SYS_clone3,
    libc::SYS_exit,
    libc::SYS_exit_group,
    libc::SYS_futex,
    libc::SYS_set_robust_list,
    libc::SYS_rseq,
    libc::SYS_sigaltstack,
    libc::SYS_rt_sigaction,
    libc::SYS_rt_sigprocmask,
    libc::SYS_rt_sigreturn,
    libc::SYS_rt_sigtimedwait,
    libc::SYS_sched_yield,
    libc::SYS_sched_getaffinity,
    libc::SYS_sched_setaffinity,
    libc::SYS_getpid,
    libc::SYS_gettid,
    libc::SYS_prlimit64,
    // The ptrace platform: stub processes, their control and reaping.
    libc::SYS_ptrace,
    libc::SYS_wait4,
    libc::SYS_kill,
    libc::SYS_tgkill,
    libc::SYS_setpgid,
    libc::SYS_close_range,
    libc::SYS_arch_prctl,
    // A new stub empties its capability sets (the sentry keeps
    // CAP_SYS_PTRACE when it holds secrets). Its arguments are pointers,
    // beyond a filter's reach; but without CAP_SETPCAP, and with empty
    // bounding and inheritable sets, capset can only lower a thread's own
    // sets.
    libc::SYS_capset,
    // Stub threads park in pause() until their tracer seizes them.
    libc::SYS_pause,
    // Time and host facts the guest is shown.
    libc::SYS_clock_gettime,
    libc::SYS_clock_getres,
    libc::SYS_clock_nanosleep,
    libc::SYS_nanosleep,
    libc::SYS_restart_syscall,
    libc::SYS_gettimeofday,
    libc::SYS_getrandom,
    libc::SYS_uname,
    libc::SYS_sysinfo,
    libc::SYS_getrusage,
    libc::SYS_getcpu,
    // Refused by `open_filter` (glibc's malloc probes a /proc file when it
    // trims a heap and copes with the failure).
    libc::SYS_openat,
];

/// The terminal ioctls the sentry forwards to the host's stdio.
const TTY_IOCTLS: &[u64] = {
    use crate::abi::ioctl::{FIONREAD, TCGETS, TCSETS, TCSETSF, TCSETSW, TIOCGWINSZ, TIOCSWINSZ};
    &[TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ, FIONREAD]
};

/// pwritev2 on a donated file: an append at the host file's end, or a
/// positional write on a descriptor opened O_APPEND.
const PWRITEV2_FLAGS: &[u64] = &[libc::RWF_APPEND as u64, libc::RWF_NOAPPEND as u64];

/// prctl options the sentry uses (thread names, no_new_privs for the stub
/// filter).
const PRCTLS: &[u64] = &[libc::PR_SET_NAME as u64, libc::PR_SET_PDEATHSIG as u64, libc::PR_SET_NO_NEW_PRIVS as u64];

fn arg_in(arg: u8, values: &[u64]) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    values
        .iter()
        .map(|&v| SeccompRule::new(vec![SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, v)?]))
        .collect()
}

/// One rule per combination: argument `a` is one of `xs` and argument `b`
/// one of `ys`.
fn args_in(a: u8, xs: &[u64], b: u8, ys: &[u64]) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let eq = |arg, v| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, v);
    let mut rules = Vec::new();
    for &x in xs {
        for &y in ys {
            rules.push(SeccompRule::new(vec![eq(a, x)?, eq(b, y)?])?);
        }
    }
    Ok(rules)
}

/// The egress gateway's host calls: it opens non-blocking IPv4/IPv6
/// stream and datagram sockets only (protocol 0: TCP or UDP, or the ICMP
/// echo sockets of the family's ICMP), connects
/// and carries them, reads their pending error and sets the int options
/// it forwards; binds (an ICMP echo socket's id, a published port) and,
/// only with `inbound` (`--publish`, a container), listens.
fn egress_rules(rules: &mut BTreeMap<i64, Vec<SeccompRule>>, inbound: bool) -> Result<(), seccompiler::BackendError> {
    let u = |v: i32| u64::try_from(v).unwrap_or(u64::MAX);
    let families = [u(libc::AF_INET), u(libc::AF_INET6)];
    let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    let types = [u(libc::SOCK_STREAM | flags), u(libc::SOCK_DGRAM | flags)];
    let eq = |arg, v| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, v);
    let mut sockets = Vec::new();
    for &family in &families {
        for &ty in &types {
            sockets.push(SeccompRule::new(vec![eq(0, family)?, eq(1, ty)?, eq(2, 0)?])?);
        }
    }
    // ICMP echo sockets (fs/ping.rs): SOCK_DGRAM with the family's ICMP.
    for (family, protocol) in [(libc::AF_INET, libc::IPPROTO_ICMP), (libc::AF_INET6, libc::IPPROTO_ICMPV6)] {
        let ty = u(libc::SOCK_DGRAM | flags);
        sockets.push(SeccompRule::new(vec![eq(0, u(family))?, eq(1, ty)?, eq(2, u(protocol))?])?);
    }
    rules.insert(libc::SYS_socket, sockets);
    for nr in [libc::SYS_connect, libc::SYS_sendto, libc::SYS_recvfrom, libc::SYS_shutdown] {
        rules.insert(nr, Vec::new());
    }
    for nr in [libc::SYS_getpeername, libc::SYS_getsockname] {
        rules.insert(nr, Vec::new());
    }
    // bind: a guest ping socket's bind sets its host socket's ICMP id
    // (fs/ping.rs). Connections in (fs/inbound.rs), in a sandbox with
    // inbound only: host listeners bound to the published ports (with
    // SO_REUSEADDR), listening while a guest listener is there; their
    // connections are taken with accept4, which the control socket
    // already needs. Without inbound the sentry cannot listen at all.
    rules.insert(libc::SYS_bind, Vec::new());
    if inbound {
        rules.insert(libc::SYS_listen, Vec::new());
    }
    // getsockopt: SO_ERROR, and the ping sockets' options read back.
    let mut get = args_in(1, &[u(libc::SOL_SOCKET)], 2, &[u(libc::SO_ERROR)])?;
    for &(level, name) in crate::fs::ping::HOST_OPTIONS {
        get.extend(args_in(1, &[u(level)], 2, &[u(name)])?);
    }
    rules.insert(libc::SYS_getsockopt, get);
    let mut set = Vec::new();
    let options = crate::fs::egress::FORWARDED_OPTIONS.iter().chain(crate::fs::egress::BUFFER_OPTIONS);
    let options = options.chain(crate::fs::ping::HOST_OPTIONS);
    let reuse: &[(i32, i32)] = if inbound { &[(libc::SOL_SOCKET, libc::SO_REUSEADDR)] } else { &[] };
    for &(level, name) in options.chain(reuse) {
        set.extend(args_in(1, &[u(level)], 2, &[u(name)])?);
    }
    rules.insert(libc::SYS_setsockopt, set);
    Ok(())
}

/// The guest's membarrier(2) (syscalls/membarrier.rs): the host's
/// `MEMBARRIER_CMD_GLOBAL` with no flags and no CPU, nothing else (the
/// boot-time QUERY runs before confinement).
fn membarrier_rule() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let global = u64::try_from(crate::host::membarrier::CMD_GLOBAL).unwrap_or(u64::MAX);
    let eq = |arg, v| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, v);
    Ok(vec![SeccompRule::new(vec![eq(0, global)?, eq(1, 0)?, eq(2, 0)?])?])
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    mismatch: SeccompAction,
) -> Result<BpfProgram, seccompiler::BackendError> {
    SeccompFilter::new(rules, mismatch, SeccompAction::Allow, TargetArch::x86_64)?.try_into()
}

/// What of the network the sentry serves, for its filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Net {
    /// `--network none`: no host sockets.
    None,
    /// The egress gateway (`--network sandbox`): connections out.
    Egress,
    /// The gateway with connections in too (`--publish`, a container).
    Inbound,
}

/// The sentry's filter: its allow list, with the egress gateway's calls
/// only when it has a gateway (`--network sandbox`) and listen only with
/// inbound; anything else traps.
pub(crate) fn sentry_filter(net: Net) -> Result<BpfProgram, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = SENTRY_SYSCALLS.iter().map(|&nr| (nr, Vec::new())).collect();
    rules.insert(libc::SYS_ioctl, arg_in(1, TTY_IOCTLS)?);
    rules.insert(libc::SYS_prctl, arg_in(0, PRCTLS)?);
    rules.insert(libc::SYS_seccomp, arg_in(0, &[libc::SECCOMP_SET_MODE_FILTER.into()])?);
    // The host-descriptor notifier (waiter::host): one epoll it adds the
    // sandbox's stdio to and waits on.
    let epoll_ops = [libc::EPOLL_CTL_ADD, libc::EPOLL_CTL_DEL].map(|op| u64::try_from(op).unwrap_or(0));
    rules.insert(libc::SYS_epoll_create1, arg_in(0, &[u64::try_from(libc::EPOLL_CLOEXEC).unwrap_or(0)])?);
    rules.insert(libc::SYS_epoll_ctl, arg_in(1, &epoll_ops)?);
    rules.insert(libc::SYS_epoll_wait, Vec::new());
    rules.insert(libc::SYS_membarrier, membarrier_rule()?);
    rules.insert(libc::SYS_pwritev2, arg_in(5, PWRITEV2_FLAGS)?);
    if net != Net::None {
        egress_rules(&mut rules, net == Net::Inbound)?;
    }
    Ok(compile(rules, SeccompAction::Trap)?)
}

/// Stacked on the sentry's filter: opening files fails with EACCES. The
/// sentry has everything it needs from the host by the time it is
/// confined.
pub(crate) fn open_filter() -> Result<BpfProgram, SeccompError> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [(libc::SYS_openat, Vec::new()), (libc::SYS_open, Vec::new())].into();
    let eacces = u32::try_from(libc::EACCES).unwrap_or(13);
    Ok(SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(eacces), TargetArch::x86_64)?.try_into()?)
}

/// Reports a forbidden host call and ends the sentry. Only
/// async-signal-safe calls: it formats into a stack buffer.
extern "C" fn on_sigsys(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let mut msg = *b"husk: the sentry made a forbidden host system call 000\n";
    // The kernel passes a valid siginfo; for SIGSYS the system call number
    // is the int at byte offset 24 (after si_call_addr).
    let field = info.cast::<u8>().wrapping_add(24).cast::<i32>();
    // SAFETY: `field` lies inside the kernel-provided siginfo.
    let nr = unsafe { field.read_unaligned() };
    let digits = msg.len() - 4;
    let mut n = nr.clamp(0, 999);
    for i in (0..3).rev() {
        msg[digits + i] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
    }
    // SAFETY: writes a stack buffer to stderr (async-signal-safe).
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    // SAFETY: ends the process at once (async-signal-safe).
    unsafe { libc::_exit(128 + libc::SIGSYS) }
}

/// Confines the calling process (every thread) to the sentry filter
/// (with the gateway's calls as `net` needs).
pub(crate) fn confine_sentry(net: Net) -> Result<(), SeccompError> {
    let filter = sentry_filter(net)?;
    let no_open = open_filter()?;
    // SAFETY: a zeroed sigaction is valid; the handler only makes
    // async-signal-safe calls.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_sigsys as *const () as libc::sighandler_t;
    sa.sa_flags = libc::SA_SIGINFO;
    // SAFETY: installs a handler for SIGSYS; `sa` is fully initialized.
    if unsafe { libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut()) } != 0 {
        return Err(SeccompError::Handler(std::io::Error::last_os_error()));
    }
    seccompiler::apply_filter_all_threads(&filter)?;
    seccompiler::apply_filter_all_threads(&no_open)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile() {
        assert!(sentry_filter(Net::None).unwrap().len() > SENTRY_SYSCALLS.len());
        assert!(sentry_filter(Net::Egress).unwrap().len() > sentry_filter(Net::None).unwrap().len());
        assert!(sentry_filter(Net::Inbound).unwrap().len() > sentry_filter(Net::Egress).unwrap().len());
        assert!(!open_filter().unwrap().is_empty());
    }

    /// Whether `filter` lets system call `nr` (all arguments zero) through,
    /// run on the sentry's own classic-BPF interpreter.
    fn allows(filter: &BpfProgram, nr: i64) -> bool {
        allows_args(filter, nr, [0; 6])
    }

    /// Whether `filter` lets system call `nr` with `args` through.
    fn allows_args(filter: &BpfProgram, nr: i64, args: [u64; 6]) -> bool {
        use crate::kernel::seccomp::{bpf, AUDIT_ARCH_X86_64, RET_ALLOW};
        let insns = filter.iter().map(|f| bpf::Insn { code: f.code, jt: f.jt, jf: f.jf, k: f.k }).collect();
        let prog = bpf::Program::new(insns).unwrap();
        let mut data = [0u8; bpf::DATA_LEN as usize];
        data[..4].copy_from_slice(&u32::try_from(nr).unwrap().to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH_X86_64.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        prog.run(&data) == RET_ALLOW
    }

    /// pwritev2 only appending (RWF_APPEND) or explicitly not
    /// (RWF_NOAPPEND): no other flag (RWF_NOWAIT, none at all) passes.
    #[test]
    fn pwritev2_only_with_its_append_flags() {
        let filter = sentry_filter(Net::None).unwrap();
        let with =
            |flags: i32| allows_args(&filter, libc::SYS_pwritev2, [3, 0, 1, 0, 0, u64::try_from(flags).unwrap()]);
        assert!(with(libc::RWF_APPEND) && with(libc::RWF_NOAPPEND));
        assert!(!with(0) && !with(libc::RWF_NOWAIT) && !with(libc::RWF_APPEND | libc::RWF_NOWAIT));
    }

    /// Only a sandbox with inbound (--publish, a container) may listen;
    /// bind (a ping socket's id) comes with any gateway.
    #[test]
    fn listen_only_with_inbound() {
        let [none, egress, inbound] = [Net::None, Net::Egress, Net::Inbound].map(|n| sentry_filter(n).unwrap());
        assert!(!allows(&none, libc::SYS_bind) && !allows(&none, libc::SYS_listen));
        assert!(allows(&egress, libc::SYS_bind) && !allows(&egress, libc::SYS_listen));
        assert!(allows(&inbound, libc::SYS_bind) && allows(&inbound, libc::SYS_listen));
        assert!(allows(&none, libc::SYS_accept4), "the control socket's");
    }

    /// membarrier only as MEMBARRIER_CMD_GLOBAL: QUERY (all zero) traps.
    #[test]
    fn membarrier_only_global() {
        let filter = sentry_filter(Net::None).unwrap();
        assert!(!allows(&filter, libc::SYS_membarrier));
    }
}
