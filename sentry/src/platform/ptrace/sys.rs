//! Thin wrappers over the host's ptrace and wait calls. This is one of the
//! few places where the sentry talks to the host kernel about guest threads.

use crate::abi::signal::SYS_SECCOMP;
use crate::platform::{PlatformError, Result};
use std::mem::MaybeUninit;

use crate::abi::arch::NT_X86_XSTATE;

fn check(ret: libc::c_long, what: &'static str) -> Result<libc::c_long> {
    if ret < 0 {
        Err(PlatformError::last(what))
    } else {
        Ok(ret)
    }
}

/// Resumes `tid` with `request` (`PTRACE_SYSEMU`, `PTRACE_CONT` …), delivering `sig`.
pub(super) fn resume(request: libc::c_uint, tid: libc::pid_t, sig: i32) -> Result<()> {
    let data = usize::try_from(sig).unwrap_or(0);
    // SAFETY: resume requests take no pointers; `data` is a signal number.
    let r = unsafe { libc::ptrace(request, tid, 0usize, data) };
    check(r, "ptrace resume").map(drop)
}

pub(super) fn set_options(tid: libc::pid_t, options: libc::c_int) -> Result<()> {
    let data = usize::try_from(options).unwrap_or(0);
    // SAFETY: PTRACE_SETOPTIONS takes the option bits by value.
    let r = unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, tid, 0usize, data) };
    check(r, "PTRACE_SETOPTIONS").map(drop)
}

/// Attaches to `tid` without stopping it (PTRACE_SEIZE) with `options`.
pub(super) fn seize(tid: libc::pid_t, options: libc::c_int) -> Result<()> {
    let data = usize::try_from(options).unwrap_or(0);
    // SAFETY: PTRACE_SEIZE takes the option bits by value.
    let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0usize, data) };
    check(r, "PTRACE_SEIZE").map(drop)
}

/// Stops a seized thread (PTRACE_INTERRUPT).
pub(super) fn interrupt(tid: libc::pid_t) -> Result<()> {
    // SAFETY: PTRACE_INTERRUPT takes no pointers.
    let r = unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0usize, 0usize) };
    check(r, "PTRACE_INTERRUPT").map(drop)
}

pub(super) fn get_regs(tid: libc::pid_t) -> Result<libc::user_regs_struct> {
    let mut regs = MaybeUninit::<libc::user_regs_struct>::uninit();
    // SAFETY: the kernel writes a whole user_regs_struct to the pointer.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0usize, regs.as_mut_ptr()) };
    check(r, "PTRACE_GETREGS")?;
    // SAFETY: PTRACE_GETREGS succeeded, so every field was written.
    Ok(unsafe { regs.assume_init() })
}

pub(super) fn set_regs(tid: libc::pid_t, regs: &libc::user_regs_struct) -> Result<()> {
    let p: *const libc::user_regs_struct = regs;
    // SAFETY: the kernel only reads a user_regs_struct from the pointer.
    let r = unsafe { libc::ptrace(libc::PTRACE_SETREGS, tid, 0usize, p) };
    check(r, "PTRACE_SETREGS").map(drop)
}

/// Reads the XSAVE area into `buf`, returning how many bytes the kernel wrote.
pub(super) fn get_xstate(tid: libc::pid_t, buf: &mut [u8]) -> Result<usize> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let p: *mut libc::iovec = &mut iov;
    // SAFETY: the iovec describes `buf`, which the kernel fills up to iov_len.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETREGSET, tid, NT_X86_XSTATE, p) };
    check(r, "PTRACE_GETREGSET xstate")?;
    Ok(iov.iov_len)
}

pub(super) fn set_xstate(tid: libc::pid_t, buf: &[u8]) -> Result<()> {
    let mut iov = libc::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() };
    let p: *mut libc::iovec = &mut iov;
    // SAFETY: with SETREGSET the kernel only reads iov_len bytes of `buf`.
    let r = unsafe { libc::ptrace(libc::PTRACE_SETREGSET, tid, NT_X86_XSTATE, p) };
    check(r, "PTRACE_SETREGSET xstate").map(drop)
}

/// The siginfo of the signal that stopped `tid`.
pub(super) fn get_siginfo(tid: libc::pid_t) -> Result<libc::siginfo_t> {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: the kernel writes a siginfo_t to the pointer.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, tid, 0usize, info.as_mut_ptr()) };
    check(r, "PTRACE_GETSIGINFO")?;
    // SAFETY: zero-initialized and then filled by the kernel.
    Ok(unsafe { info.assume_init() })
}

/// How a traced thread changed state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WaitStatus {
    Stopped(i32),
    Exited(i32),
    Signaled(i32),
}

/// Waits for a state change of the traced thread `tid`.
pub(super) fn wait(tid: libc::pid_t) -> Result<WaitStatus> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(tid, &mut status, libc::__WALL) };
        if r < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(PlatformError::last("waitpid on stub thread"));
        }
        return Ok(if libc::WIFSTOPPED(status) {
            WaitStatus::Stopped(status >> 8)
        } else if libc::WIFSIGNALED(status) {
            WaitStatus::Signaled(libc::WTERMSIG(status))
        } else {
            WaitStatus::Exited(libc::WEXITSTATUS(status))
        });
    }
}

/// Sends `sig` to thread `tid` of process `pid`.
pub(super) fn tgkill(pid: libc::pid_t, tid: libc::pid_t, sig: i32) {
    // SAFETY: tgkill takes integers only.
    unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) };
}

/// The calling host thread's id.
pub(super) fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPUs the calling thread may run on.
pub(super) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET only reads the set.
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Restricts `tid` (0: the calling thread) to `cpu`; failures only cost
/// speed, so they are logged.
pub(super) fn pin(tid: libc::pid_t, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: CPU_SET writes one bit inside the set (cpu < CPU_SETSIZE).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads one cpu_set_t.
    if unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        log::debug!("pinning {tid} to CPU {cpu}: {}", std::io::Error::last_os_error());
    }
}

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3).
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;
/// The audit architecture of a 64-bit system call.
pub(super) use crate::abi::seccomp::AUDIT_ARCH_X86_64;

/// The architecture of the system call `tid` is stopped at the entry of:
/// [`AUDIT_ARCH_X86_64`] for `syscall`, the i386 one for `int 0x80`.
pub(super) fn syscall_arch(tid: libc::pid_t) -> Result<u32> {
    // struct ptrace_syscall_info begins { u8 op; u8 pad[3]; u32 arch; … }.
    let mut info = [0u8; 88];
    // SAFETY: the kernel writes at most `info.len()` bytes to the buffer.
    let r = unsafe { libc::ptrace(PTRACE_GET_SYSCALL_INFO, tid, info.len(), info.as_mut_ptr()) };
    check(r, "PTRACE_GET_SYSCALL_INFO")?;
    Ok(u32::from_le_bytes([info[4], info[5], info[6], info[7]]))
}

/// For a SIGSYS raised by a seccomp filter (`SYS_SECCOMP`), the address of
/// the call and its system call number.
pub(super) fn seccomp_call(info: &libc::siginfo_t) -> Option<(u64, u64)> {
    if info.si_signo != libc::SIGSYS || info.si_code != SYS_SECCOMP {
        return None;
    }
    let mut raw = [0u8; std::mem::size_of::<libc::siginfo_t>()];
    // SAFETY: copies the bytes of a whole siginfo_t into a buffer of its size.
    unsafe { std::ptr::copy_nonoverlapping(std::ptr::from_ref(info).cast::<u8>(), raw.as_mut_ptr(), raw.len()) };
    // For SYS_SECCOMP the kernel fills _sigsys { void *_call_addr; int
    // _syscall; unsigned _arch; } at byte 16 (after signo, errno, code and
    // padding).
    let addr = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
    let nr = i32::from_ne_bytes(raw[24..28].try_into().ok()?);
    Some((addr, u64::try_from(nr).ok()?))
}
