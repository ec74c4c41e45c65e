//! The ptrace platform: each address space is a stub process; every guest
//! thread runs as a thread of that process traced by exactly one sentry
//! thread, and `PTRACE_SYSEMU` stops it at every system call without
//! executing it. Mappings of the MemoryFile are installed by injecting
//! `mmap` into the stub.

mod stub;
mod stub_filter;
mod sys;

pub(crate) use stub::THREAD_FLAGS;

use crate::platform::{
    Access, AddressSpace, Context, CpuState, Event, Interrupter, Perms, Platform, PlatformError, Result, ThreadToken,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use stub::StubPage;

/// The ptrace platform.
pub(crate) struct PtracePlatform {
    memfd: i32,
    /// The next CPU to pin a new context (and its stub threads) to.
    next_cpu: std::sync::atomic::AtomicUsize,
    fpu_template: Vec<u8>,
    /// The stubs' seccomp filter, built once.
    stub_filter: seccompiler::BpfProgram,
}

impl PtracePlatform {
    /// `memfd` is the MemoryFile's descriptor; it must outlive the platform.
    pub(crate) fn new(memfd: i32) -> Result<PtracePlatform> {
        StubPage::get()?;
        let stub_filter = stub_filter::stub_filter(memfd)
            .map_err(|e| PlatformError::StubDied(format!("cannot build the stub filter: {e}")))?;
        Ok(PtracePlatform {
            memfd,
            next_cpu: std::sync::atomic::AtomicUsize::new(0),
            fpu_template: fpu_reset_state(xsave_size()),
            stub_filter,
        })
    }
}

/// The size of the XSAVE area for the features the host enabled.
fn xsave_size() -> usize {
    // Leaf 0xD exists on every CPU with XSAVE, which PTRACE_GETREGSET
    // NT_X86_XSTATE requires.
    let leaf = std::arch::x86_64::__cpuid_count(0xd, 0);
    usize::try_from(leaf.ebx).unwrap_or(4096).max(576)
}

/// An XSAVE area in the state `execve` leaves it: x87 control word 0x37f,
/// MXCSR 0x1f80, everything else in its initial configuration.
fn fpu_reset_state(len: usize) -> Vec<u8> {
    let mut area = vec![0u8; len];
    area[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
    area[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    area[28..32].copy_from_slice(&0xffffu32.to_le_bytes());
    // XSTATE_BV: x87 and SSE state are present in the legacy area.
    let mut xstate_bv = 3u64;
    // Protection keys: a new Linux process starts with PKRU denying access
    // to every key but 0 (init_pkru_value), which also makes the stub
    // page's execute-only key unreadable to the guest.
    let ospke = std::arch::x86_64::__cpuid_count(7, 0).ecx & (1 << 4) != 0;
    let pkru = std::arch::x86_64::__cpuid_count(0xd, XFEATURE_PKRU);
    let at = usize::try_from(pkru.ebx).unwrap_or(usize::MAX);
    if ospke && pkru.eax >= 4 && at.checked_add(4).is_some_and(|end| end <= len) {
        area[at..at + 4].copy_from_slice(&INIT_PKRU.to_le_bytes());
        xstate_bv |= 1 << XFEATURE_PKRU;
    }
    area[512..520].copy_from_slice(&xstate_bv.to_le_bytes());
    area
}

/// The XSAVE component number of PKRU.
const XFEATURE_PKRU: u32 = 9;
/// Linux's PKRU for a new process: access disabled for keys 1 to 15.
const INIT_PKRU: u32 = 0x5555_5554;

impl Platform for PtracePlatform {
    fn name(&self) -> &'static str {
        "ptrace"
    }

    fn new_address_space(&self) -> Result<Arc<dyn AddressSpace>> {
        let len = u16::try_from(self.stub_filter.len())
            .map_err(|_| PlatformError::Unsupported("stub seccomp filter too long"))?;
        let prog = libc::sock_fprog { len, filter: self.stub_filter.as_ptr().cast_mut().cast() };
        Ok(Arc::new(PtraceAddressSpace::create(self.memfd, &prog)?))
    }

    fn new_context(&self) -> Result<Box<dyn Context>> {
        // A stop of the guest wakes the tracer and the other way round on
        // every system call; on one CPU that hand-off is several times
        // cheaper than across CPUs. Contexts are spread round-robin.
        let cpus = sys::allowed_cpus();
        if !cpus.is_empty() {
            let i = self.next_cpu.fetch_add(1, Ordering::Relaxed) % cpus.len();
            sys::pin(0, cpus[i]);
        }
        Ok(Box::new(PtraceContext { host_tid: sys::gettid(), interrupter: Arc::new(PtraceInterrupter::default()) }))
    }

    fn fpu_template(&self) -> &[u8] {
        &self.fpu_template
    }
}

/// Loads the FPU state. The host decides the exact size of the XSAVE area
/// it accepts; if the template's size differs (CPUID reports features
/// the kernel keeps from user space), the area is resized to the host's.
fn load_fpu(tid: libc::pid_t, state: &mut CpuState) -> Result<()> {
    if sys::set_xstate(tid, &state.fpu).is_err() {
        let mut probe = vec![0u8; 1 << 16];
        let n = sys::get_xstate(tid, &mut probe)?;
        state.fpu.resize(n, 0);
        sys::set_xstate(tid, &state.fpu)?;
    }
    state.fpu_dirty = false;
    Ok(())
}

/// A stub process.
pub(crate) struct PtraceAddressSpace {
    pid: libc::pid_t,
    memfd: i32,
    stub: u64,
    /// Stub thread traced by each sentry host thread (host tid → stub tid).
    threads: Mutex<HashMap<libc::pid_t, libc::pid_t>>,
}

impl PtraceAddressSpace {
    fn create(memfd: i32, filter: &libc::sock_fprog) -> Result<PtraceAddressSpace> {
        let stub = StubPage::get()?.addr;
        // The stub inherits this thread's CPU affinity: it runs where its
        // tracer runs.
        let pid = stub::fork_stub(memfd, filter)?;
        let space = PtraceAddressSpace { pid, memfd, stub, threads: Mutex::new(HashMap::from([(sys::gettid(), pid)])) };
        match sys::wait(pid)? {
            sys::WaitStatus::Stopped(libc::SIGSTOP) => {}
            other => return Err(PlatformError::StubDied(format!("new stub: {other:?}"))),
        }
        sys::set_options(pid, libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACESYSGOOD)?;
        // Everything the stub inherited from the sentry goes; only the stub
        // page, at the top of user space, stays.
        space.syscall(pid, libc::SYS_munmap, [0, stub, 0, 0, 0, 0])?;
        Ok(space)
    }

    /// The stub thread traced by the calling host thread.
    fn current_thread(&self) -> Result<libc::pid_t> {
        self.threads
            .lock()
            .get(&sys::gettid())
            .copied()
            .ok_or(PlatformError::Unsupported("ptrace: this host thread has no stub thread in the address space"))
    }

    /// Runs a host system call inside the stub on thread `tid` (which must be
    /// stopped and traced by the calling thread) and returns its result.
    fn syscall(&self, tid: libc::pid_t, nr: libc::c_long, args: [u64; 6]) -> Result<u64> {
        self.syscall_at(tid, 0, nr, args)
    }

    /// Like `syscall`, starting at `entry` in the stub page.
    fn syscall_at(&self, tid: libc::pid_t, entry: u64, nr: libc::c_long, args: [u64; 6]) -> Result<u64> {
        let mut regs = sys::get_regs(tid)?;
        regs.rax = u64::try_from(nr).unwrap_or(u64::MAX);
        regs.orig_rax = u64::MAX;
        regs.rdi = args[0];
        regs.rsi = args[1];
        regs.rdx = args[2];
        regs.r10 = args[3];
        regs.r8 = args[4];
        regs.r9 = args[5];
        regs.rip = self.stub + entry;
        sys::set_regs(tid, &regs)?;
        sys::resume(libc::PTRACE_CONT, tid, 0)?;
        loop {
            match sys::wait(tid)? {
                sys::WaitStatus::Stopped(libc::SIGTRAP) => break,
                // Interrupts and stray host signals are dropped here; the
                // interrupter's pending flag is still set.
                sys::WaitStatus::Stopped(sig) => {
                    log::debug!("stub {tid}: stop {sig:#x} during an injected syscall");
                    sys::resume(libc::PTRACE_CONT, tid, 0)?
                }
                other => return Err(PlatformError::StubDied(format!("during injected syscall: {other:?}"))),
            }
        }
        let ret = sys::get_regs(tid)?.rax;
        // Host errors come back as -errno in rax.
        if ret > u64::MAX - 4095 {
            let errno = i32::try_from(ret.wrapping_neg()).unwrap_or(libc::EIO);
            return Err(PlatformError::Host {
                what: "injected stub syscall",
                err: std::io::Error::from_raw_os_error(errno),
            });
        }
        Ok(ret)
    }
}

impl AddressSpace for PtraceAddressSpace {
    fn map(&self, addr: u64, len: u64, file_off: u64, perms: Perms) -> Result<()> {
        let tid = self.current_thread()?;
        let flags = libc::MAP_SHARED | libc::MAP_FIXED;
        let fd = u64::try_from(self.memfd).unwrap_or(u64::MAX);
        let prot = u64::try_from(perms.to_prot()).unwrap_or(0);
        let flags = u64::try_from(flags).unwrap_or(0);
        self.syscall(tid, libc::SYS_mmap, [addr, len, prot, flags, fd, file_off]).map(drop)
    }

    fn unmap(&self, addr: u64, len: u64) -> Result<()> {
        let tid = self.current_thread()?;
        self.syscall(tid, libc::SYS_munmap, [addr, len, 0, 0, 0, 0]).map(drop)
    }

    fn spawn_thread(&self) -> Result<ThreadToken> {
        let tid = self.current_thread()?;
        let new = self.syscall_at(tid, stub::CLONE_ENTRY, libc::SYS_clone, [THREAD_FLAGS, 0, 0, 0, 0, 0])?;
        Ok(new)
    }

    fn adopt_thread(&self, token: ThreadToken) -> Result<()> {
        let tid = libc::pid_t::try_from(token).map_err(|_| PlatformError::Unsupported("bad stub thread token"))?;
        sys::seize(tid, libc::PTRACE_O_EXITKILL | libc::PTRACE_O_TRACESYSGOOD)?;
        sys::interrupt(tid)?;
        match sys::wait(tid)? {
            sys::WaitStatus::Stopped(_) => {}
            other => return Err(PlatformError::StubDied(format!("new stub thread: {other:?}"))),
        }
        // Run where this host thread runs, as the stub's first thread does.
        if let [cpu] = sys::allowed_cpus().as_slice() {
            sys::pin(tid, *cpu);
        }
        self.threads.lock().insert(sys::gettid(), tid);
        Ok(())
    }

    fn release_thread(&self) {
        let Ok(tid) = self.current_thread() else { return };
        // The stub thread exits; another thread of the stub goes on.
        let _ = self.syscall(tid, libc::SYS_exit, [0; 6]);
        self.threads.lock().remove(&sys::gettid());
    }

    /// The stub process's CPU time.
    fn cpu_time(&self) -> Option<std::time::Duration> {
        crate::host::cpu_clock_time(crate::host::process_cpu_clock(self.pid))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for PtraceAddressSpace {
    fn drop(&mut self) {
        // SAFETY: kill takes integers; the stub is our own child.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let mut status = 0;
        // SAFETY: reaps our own child; `status` is a valid out-pointer.
        unsafe { libc::waitpid(self.pid, &mut status, libc::__WALL) };
    }
}

/// Interrupts a running `PtraceContext::switch` by stopping its stub thread.
#[derive(Default)]
struct PtraceInterrupter {
    pending: AtomicBool,
    /// The stub thread currently running guest code (pid, tid).
    target: Mutex<Option<(libc::pid_t, libc::pid_t)>>,
}

impl Interrupter for PtraceInterrupter {
    fn interrupt(&self) {
        self.pending.store(true, Ordering::SeqCst);
        if let Some((pid, tid)) = *self.target.lock() {
            sys::tgkill(pid, tid, libc::SIGSTOP);
        }
    }
}

/// The context of one sentry host thread.
pub(crate) struct PtraceContext {
    host_tid: libc::pid_t,
    interrupter: Arc<PtraceInterrupter>,
}

impl PtraceContext {
    fn stopped(&self, tid: libc::pid_t, sig: i32, state: &mut CpuState) -> Result<Option<Event>> {
        let event = match sig {
            s if s == (libc::SIGTRAP | 0x80) => {
                state.regs = sys::get_regs(tid)?;
                // `syscall` leaves its return address in rcx and RFLAGS in
                // r11, so after it the kernel saw rcx equal to rip and r11
                // to the flags; only when either differs is the costlier
                // question asked. (An `int 0x80` after which both match was
                // set up to: it gets the 64-bit call it could have made
                // with `syscall`.)
                let r = &state.regs;
                let native = (r.rcx == r.rip && r.r11 == r.eflags) || sys::syscall_arch(tid)? == sys::AUDIT_ARCH_X86_64;
                let event = if native { Event::Syscall } else { Event::CompatSyscall };
                return save_fpu(tid, state).map(|()| Some(event));
            }
            libc::SIGSYS => {
                let info = sys::get_siginfo(tid)?;
                let call = sys::seccomp_call(&info);
                state.regs = sys::get_regs(tid)?;
                let event = match call {
                    // A call into the vsyscall page: the host emulates it
                    // without a syscall stop, the stub's filter traps it,
                    // and the host has already made it return to its
                    // caller. The sentry serves it as the system call it is.
                    Some((addr, nr)) if VSYSCALL.contains(&addr) => {
                        state.regs.orig_rax = nr;
                        Event::Syscall
                    }
                    // Nothing else reaches the filter: the guest's own calls
                    // stop first. Should one ever, the guest gets the SIGSYS.
                    _ => Event::Exception { signo: sig, code: info.si_code, addr: 0 },
                };
                return save_fpu(tid, state).map(|()| Some(event));
            }
            libc::SIGSTOP => {
                if !self.interrupter.pending.swap(false, Ordering::SeqCst) {
                    return Ok(None);
                }
                Event::Interrupted
            }
            libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP => {
                let info = sys::get_siginfo(tid)?;
                // SAFETY: for these synchronous signals the kernel fills the
                // _sigfault member, whose first field is si_addr.
                let addr = unsafe { info.si_addr() } as u64;
                match (sig, info.si_code) {
                    (libc::SIGSEGV, 1) => Event::Fault { addr, access: Access::NotPresent },
                    (libc::SIGSEGV, 2) => Event::Fault { addr, access: Access::Protection },
                    // A load from the execute-only stub page: to the guest,
                    // an address outside its space like any other.
                    (libc::SIGSEGV, SEGV_PKUERR) if addr >= crate::platform::TASK_SIZE => {
                        Event::Fault { addr, access: Access::NotPresent }
                    }
                    _ => Event::Exception { signo: sig, code: info.si_code, addr },
                }
            }
            // Any other host signal aimed at the stub is not the guest's business.
            _ => return Ok(None),
        };
        self.regs_and(tid, state, event)
    }

    /// Saves the stopped thread's registers into `state` and reports `event`.
    fn regs_and(&self, tid: libc::pid_t, state: &mut CpuState, event: Event) -> Result<Option<Event>> {
        state.regs = sys::get_regs(tid)?;
        save_fpu(tid, state).map(|()| Some(event))
    }
}

/// Saves the stopped thread's extended FPU state into `state`.
fn save_fpu(tid: libc::pid_t, state: &mut CpuState) -> Result<()> {
    let n = sys::get_xstate(tid, &mut state.fpu)?;
    state.fpu.truncate(n);
    Ok(())
}

/// The vsyscall page of x86-64 Linux.
const VSYSCALL: std::ops::Range<u64> = 0xffff_ffff_ff60_0000..0xffff_ffff_ff60_1000;

/// `si_code` of a fault that a protection key refused.
const SEGV_PKUERR: i32 = 4;

/// Whether loading a register state failed because the host refused the
/// state itself (rather than because the stub went away).
fn refused(e: &PlatformError) -> bool {
    matches!(e, PlatformError::Host { err, .. } if matches!(err.raw_os_error(), Some(libc::EIO | libc::EINVAL)))
}

impl Context for PtraceContext {
    fn switch(&mut self, space: &Arc<dyn AddressSpace>, state: &mut CpuState) -> Result<Event> {
        let space = space
            .as_any()
            .downcast_ref::<PtraceAddressSpace>()
            .ok_or(PlatformError::Unsupported("ptrace context given a foreign address space"))?;
        let tid = space.current_thread()?;
        debug_assert_eq!(self.host_tid, sys::gettid());
        *self.interrupter.target.lock() = Some((space.pid, tid));
        if self.interrupter.pending.swap(false, Ordering::SeqCst) {
            *self.interrupter.target.lock() = None;
            return Ok(Event::Interrupted);
        }
        let regs = &mut state.regs;
        regs.cs = 0x33;
        regs.ss = 0x2b;
        // The trap flag passes: a guest debugger single-steps with it.
        regs.eflags = (regs.eflags & 0xdd5) | 0x202;
        // The sentry validates what it loads (sigreturn, arch_prctl,
        // clone's TLS) as Linux does; a state the host still refuses ends
        // the guest process, never the sandbox.
        let loaded =
            sys::set_regs(tid, regs).and_then(|()| if state.fpu_dirty { load_fpu(tid, state) } else { Ok(()) });
        match loaded {
            Ok(()) => {}
            Err(e) if refused(&e) => {
                log::debug!("stub thread {tid}: the host refused the guest's register state: {e}");
                *self.interrupter.target.lock() = None;
                return Ok(Event::BadState);
            }
            Err(e) => {
                *self.interrupter.target.lock() = None;
                return Err(e);
            }
        }
        let result = loop {
            sys::resume(libc::PTRACE_SYSEMU, tid, 0)?;
            match sys::wait(tid)? {
                sys::WaitStatus::Stopped(sig) => {
                    if let Some(event) = self.stopped(tid, sig, state)? {
                        break Ok(event);
                    }
                }
                sys::WaitStatus::Signaled(libc::SIGKILL) => break Ok(Event::Killed),
                other => break Err(PlatformError::StubDied(format!("{other:?}"))),
            }
        };
        *self.interrupter.target.lock() = None;
        result
    }

    fn interrupter(&self) -> Arc<dyn Interrupter> {
        self.interrupter.clone()
    }
}
