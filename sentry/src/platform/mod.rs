//! The platform: how guest code is run and how its system calls and faults
//! reach the sentry. The kernel above this trait does not know which
//! platform is in use.

pub(crate) mod ptrace;

use std::sync::Arc;

/// Errors of the platform itself (host failures, never guest behavior).
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("{what}: {err}")]
    Host { what: &'static str, err: std::io::Error },
    #[error("the guest's stub process died unexpectedly ({0})")]
    StubDied(String),
    #[error("{0}")]
    Unsupported(&'static str),
}

impl PlatformError {
    /// Wraps the current host errno with a description of the failed call.
    pub fn last(what: &'static str) -> PlatformError {
        PlatformError::Host { what, err: std::io::Error::last_os_error() }
    }
}

pub(crate) type Result<T> = std::result::Result<T, PlatformError>;

/// One past the highest guest address, on every platform: Linux's 47-bit
/// user space less its top page, where the ptrace platform keeps the code
/// it runs in stub processes (gVisor, likewise, ends the guest's address
/// space below its stub). Everything at or above it is outside the guest's
/// address space, so the guest's memory calls answer for the stub's page
/// exactly as for any address past the end.
pub(crate) const TASK_SIZE: u64 = 0x7fff_ffff_e000;

/// Page protections of a guest mapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Perms {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

impl Perms {
    /// Decodes `PROT_*` bits.
    pub fn from_prot(prot: u64) -> Perms {
        Perms { read: prot & 1 != 0, write: prot & 2 != 0, exec: prot & 4 != 0 }
    }

    /// Encodes as `PROT_*` bits.
    pub fn to_prot(self) -> i32 {
        i32::from(self.read) | (i32::from(self.write) << 1) | (i32::from(self.exec) << 2)
    }

    pub fn any(self) -> bool {
        self.read || self.write || self.exec
    }
}

/// The kind of access that faulted, as far as the platform can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The page was not present.
    NotPresent,
    /// The page was present but the access was not allowed by its mapping.
    Protection,
}

/// Why a switch into the guest returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The guest executed a system call; its number is in `orig_rax`.
    Syscall,
    /// A memory access faulted.
    Fault { addr: u64, access: Access },
    /// A synchronous exception other than a page fault (SIGILL, SIGFPE,
    /// SIGTRAP, SIGBUS, SIGSEGV without a page fault …), with the host
    /// signal number and `si_code`.
    Exception { signo: i32, code: i32, addr: u64 },
    /// `Interrupter::interrupt` was called.
    Interrupted,
    /// The host killed what runs the guest (its OOM killer, an operator's
    /// SIGKILL): the guest process dies as if killed by SIGKILL.
    Killed,
    /// The guest entered the kernel through a 32-bit entry point (`int
    /// 0x80`): its i386 system call numbers are not served (the caller
    /// answers ENOSYS in `rax`, as gVisor does).
    CompatSyscall,
    /// The host refused to load the thread's register state (a state
    /// Linux could never have produced for the thread): the process dies
    /// of SIGSEGV, as Linux's force_sigsegv for a state it cannot restore.
    BadState,
}

/// The full user-visible CPU state of one guest thread.
#[derive(Clone)]
pub struct CpuState {
    pub regs: libc::user_regs_struct,
    /// The extended FPU state in XSAVE layout (as `PTRACE_GETREGSET
    /// NT_X86_XSTATE` and signal frames use it).
    pub fpu: Vec<u8>,
    /// The sentry changed `fpu` and the platform must load it before the
    /// next switch.
    pub fpu_dirty: bool,
}

impl CpuState {
    /// A zeroed register file with the FPU in its reset state.
    pub fn new(fpu_template: &[u8]) -> CpuState {
        CpuState {
            // SAFETY: user_regs_struct is plain integers; all-zero is valid.
            regs: unsafe { std::mem::zeroed() },
            fpu: fpu_template.to_vec(),
            fpu_dirty: true,
        }
    }

    /// The six system call arguments, in ABI order.
    pub fn syscall_args(&self) -> [u64; 6] {
        let r = &self.regs;
        [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9]
    }
}

/// A handle that makes a running `Context::switch` return `Interrupted`.
pub trait Interrupter: Send + Sync {
    fn interrupt(&self);
}

/// One guest address space. The MemoryManager owns the truth (VMAs and
/// pages); an address space only mirrors it.
pub trait AddressSpace: Send + Sync {
    /// Maps `len` bytes of the MemoryFile at `file_off` to guest `addr`.
    fn map(&self, addr: u64, len: u64, file_off: u64, perms: Perms) -> Result<()>;
    /// Removes any mapping of `[addr, addr+len)`.
    fn unmap(&self, addr: u64, len: u64) -> Result<()>;
    /// Called on a host thread that runs guest code in this space: prepares
    /// another thread of guest code for a new task (a guest thread) and
    /// returns a token for it.
    fn spawn_thread(&self) -> Result<ThreadToken>;
    /// Called on the new task's host thread before its first switch.
    fn adopt_thread(&self, token: ThreadToken) -> Result<()>;
    /// Called on a host thread that will not run guest code here again
    /// (its guest thread exited while others go on).
    fn release_thread(&self);
    /// The platform's concrete type, for its own `Context`.
    fn as_any(&self) -> &dyn std::any::Any;
    /// The host CPU time spent running this space's guest code so far (all
    /// its threads), if the platform can tell.
    fn cpu_time(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A thread of guest code prepared by `spawn_thread`.
pub(crate) type ThreadToken = u64;

/// The execution context of one host thread running guest code.
pub trait Context: Send {
    /// Runs guest code in `space` with `state` until something happens.
    fn switch(&mut self, space: &Arc<dyn AddressSpace>, state: &mut CpuState) -> Result<Event>;
    /// A handle other threads use to interrupt this context.
    fn interrupter(&self) -> Arc<dyn Interrupter>;
}

/// A way of running guest code.
pub trait Platform: Send + Sync {
    fn name(&self) -> &'static str;
    /// A new, empty address space.
    fn new_address_space(&self) -> Result<Arc<dyn AddressSpace>>;
    /// A context for the calling host thread.
    fn new_context(&self) -> Result<Box<dyn Context>>;
    /// The reset state of the extended FPU area.
    fn fpu_template(&self) -> &[u8];
}
