//! Stub processes: the host processes whose address spaces hold guest
//! memory. A stub is forked from the sentry, stops itself for its tracer,
//! and then has everything unmapped except one page of code, the *stub
//! page*, which holds `syscall; int3` for injecting the host calls that
//! install guest mappings.

use crate::platform::{PlatformError, Result};
use std::sync::OnceLock;

/// The stub page's code. At 0, `syscall; int3`: a host call injected on a
/// stopped stub thread, after which the thread traps back to its tracer.
/// At [`CLONE_ENTRY`], the same for an injected `clone` of a new stub
/// thread, except that the new thread (rax 0) parks in `pause()` until its
/// own tracer seizes it.
const STUB_CODE: [u8; 25] = [
    0x0f, 0x05, // 0: syscall
    0xcc, // 2: int3
    0x90, 0x90, 0x90, 0x90, 0x90, // 3: padding
    0x0f, 0x05, // 8: syscall (clone)
    0x48, 0x85, 0xc0, // 10: test rax, rax
    0x75, 0x09, // 13: jnz 24 (the caller, or an error)
    0xb8, 0x22, 0x00, 0x00, 0x00, // 15: mov eax, SYS_pause
    0x0f, 0x05, // 20: syscall
    0xeb, 0xf7, // 22: jmp 15
    0xcc, // 24: int3
];

/// Where an injected `clone` of a stub thread starts.
pub(super) const CLONE_ENTRY: u64 = 8;

/// The flags of a new stub thread: a thread of the stub process.
pub(crate) const THREAD_FLAGS: u64 = (libc::CLONE_VM
    | libc::CLONE_FS
    | libc::CLONE_FILES
    | libc::CLONE_SIGHAND
    | libc::CLONE_THREAD
    | libc::CLONE_SYSVSEM) as u64;

/// Where the stub page lives, in the sentry and in every stub: the host's
/// last user page, just above the guest's address space
/// ([`crate::platform::TASK_SIZE`]), so no guest memory call can name it.
pub(super) const STUB_ADDR: u64 = crate::platform::TASK_SIZE;

pub(super) const STUB_PAGE_LEN: u64 = crate::abi::TASK_SIZE_MAX - STUB_ADDR;

/// The stub page, mapped once in the sentry and inherited by every stub.
pub(super) struct StubPage {
    pub addr: u64,
}

impl StubPage {
    /// The process-wide stub page, created on first use.
    pub(super) fn get() -> Result<&'static StubPage> {
        static PAGE: OnceLock<std::result::Result<StubPage, String>> = OnceLock::new();
        PAGE.get_or_init(|| StubPage::create().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| PlatformError::StubDied(format!("cannot create the stub page: {e}")))
    }

    fn create() -> Result<StubPage> {
        let len = usize::try_from(STUB_PAGE_LEN).unwrap_or(4096);
        let want = STUB_ADDR as *mut libc::c_void;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces a mapping of ours; it
        // fails if the page is taken.
        let p = unsafe {
            libc::mmap(
                want,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // Only the sentry's initial stack can be there (when the
            // kernel's stack randomization drew 0: about one start in four
            // million).
            return Err(PlatformError::last("mmap stub page at the top of the address space"));
        }
        if p != want {
            // A kernel without MAP_FIXED_NOREPLACE treats the address as a hint.
            // SAFETY: unmapping the mapping just created.
            unsafe { libc::munmap(p, len) };
            return Err(PlatformError::Unsupported("the host kernel placed the stub page elsewhere"));
        }
        // SAFETY: `p` is a fresh writable mapping of `len` >= STUB_CODE.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(STUB_CODE.as_ptr(), p.cast::<u8>(), STUB_CODE.len()) };
        // Execute-only: with protection keys (which the host has where the
        // CPU does) a guest load from the page faults like one from any
        // address outside its space.
        // SAFETY: `p`/`len` is the mapping created above.
        if unsafe { libc::mprotect(p, len, libc::PROT_EXEC) } != 0 {
            return Err(PlatformError::last("mprotect stub page"));
        }
        Ok(StubPage { addr: STUB_ADDR })
    }
}

// glibc (2.35 and later) registers an rseq area for every thread. A fork
// child inherits the registration, and once the stub unmaps the memory the
// area lives in, the kernel would kill it with SIGSEGV on its next return
// to user space; so the stub unregisters it first.
extern "C" {
    static __rseq_offset: isize;
    static __rseq_size: u32;
}

const RSEQ_FLAG_UNREGISTER: u64 = 1;
const RSEQ_SIG: u64 = 0x5305_3053;

/// The calling thread's rseq area and its registered length (0 if none).
fn rseq_registration() -> (u64, u32) {
    let mut fs: u64 = 0;
    // SAFETY: ARCH_GET_FS writes the fs base to the pointer.
    unsafe { libc::syscall(libc::SYS_arch_prctl, 0x1003, std::ptr::addr_of_mut!(fs)) };
    // SAFETY: plain reads of glibc's exported constants.
    let (off, size) = unsafe { (__rseq_offset, __rseq_size) };
    (fs.wrapping_add_signed(i64::try_from(off).unwrap_or(0)), size)
}

/// Forks a stub process that keeps only `memfd` open and stops itself under
/// `PTRACE_TRACEME`. Returns its pid; the caller becomes its tracer and must
/// wait for the initial `SIGSTOP`.
pub(super) fn fork_stub(memfd: i32, filter: &libc::sock_fprog) -> Result<libc::pid_t> {
    let rseq = rseq_registration();
    let filter: *const libc::sock_fprog = filter;
    // SAFETY: the child only makes async-signal-safe raw system calls
    // before it stops and is taken over by the tracer; it never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(PlatformError::last("fork stub"));
    }
    if pid == 0 {
        stub_child(memfd, rseq, filter);
    }
    Ok(pid)
}

/// A raw system call with integer arguments, for the stub child, which must
/// not use anything but system calls between fork and its first stop.
fn raw(nr: libc::c_long, a: [u64; 4]) -> libc::c_long {
    // SAFETY: every caller passes integer arguments only (no pointers), so
    // the call cannot touch memory of this process.
    unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], 0u64, 0u64) }
}

/// Installs the stub's seccomp filter (prepared by the parent before the
/// fork, so nothing is allocated here).
fn install_filter(filter: *const libc::sock_fprog) -> libc::c_long {
    let nnp = u64::try_from(libc::PR_SET_NO_NEW_PRIVS).unwrap_or(38);
    if raw(libc::SYS_prctl, [nnp, 1, 0, 0]) != 0 {
        return -1;
    }
    // SAFETY: `filter` points at a sock_fprog (and its instructions) that
    // the parent built before forking; the child has its own copy.
    unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0u32, filter) }
}

/// capset(2)'s header, version 3 (two 32-bit words per set), for the
/// calling thread.
static CAP_HEADER: [u32; 2] = [0x2008_0522, 0];
/// Empty effective, permitted and inheritable sets, both words.
static NO_CAPS: [u32; 6] = [0; 6];

/// Empties the stub's capability sets: it runs guest code, and a sentry
/// holding secrets keeps `CAP_SYS_PTRACE` (`boot::confine::Keep`), which
/// a fork inherits. capset can only lower them (the bounding and
/// inheritable sets are already empty), so the sentry's filter allows it.
fn drop_capabilities() -> libc::c_long {
    // SAFETY: capset reads the header and three pairs of 32-bit sets from
    // statics, which the fork child still has mapped.
    unsafe { libc::syscall(libc::SYS_capset, CAP_HEADER.as_ptr(), NO_CAPS.as_ptr()) }
}

fn stub_child(memfd: i32, rseq: (u64, u32), filter: *const libc::sock_fprog) -> ! {
    let fd = u64::try_from(memfd).unwrap_or(0);
    if drop_capabilities() != 0 {
        raw(libc::SYS_exit_group, [124, 0, 0, 0]);
    }
    if rseq.1 > 0 {
        // glibc registers 32 bytes; newer versions report a smaller
        // feature size in __rseq_size.
        if raw(libc::SYS_rseq, [rseq.0, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG]) != 0 {
            raw(libc::SYS_rseq, [rseq.0, u64::from(rseq.1), RSEQ_FLAG_UNREGISTER, RSEQ_SIG]);
        }
    }
    raw(libc::SYS_setpgid, [0, 0, 0, 0]);
    if fd > 0 {
        raw(libc::SYS_close_range, [0, fd - 1, 0, 0]);
    }
    raw(libc::SYS_close_range, [fd + 1, u64::from(u32::MAX), 0, 0]);
    if raw(libc::SYS_ptrace, [u64::from(libc::PTRACE_TRACEME), 0, 0, 0]) != 0 {
        raw(libc::SYS_exit_group, [126, 0, 0, 0]);
    }
    if install_filter(filter) != 0 {
        raw(libc::SYS_exit_group, [125, 0, 0, 0]);
    }
    // The stub leads a process group of its own (above): kill(0) stops
    // only itself, so its filter can allow kill for nothing else.
    raw(libc::SYS_kill, [0, u64::try_from(libc::SIGSTOP).unwrap_or(19), 0, 0]);
    loop {
        raw(libc::SYS_exit_group, [127, 0, 0, 0]);
    }
}
