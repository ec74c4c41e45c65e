//! System call: ptrace, for one guest process tracing another of the same
//! sandbox (`kernel::ptrace` holds the relation and its stops). Registers
//! are the tracee's saved `CpuState`; memory is read and written through
//! its MemoryManager as Linux's FOLL_FORCE does. Nothing reaches the host.

use super::args::int;
use super::{Entries, Support::Partial};
use crate::abi::arch::{ARCH_GET_FS, ARCH_GET_GS, ARCH_SET_FS, ARCH_SET_GS, NT_PRFPREG, NT_PRSTATUS, NT_X86_XSTATE};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::seccomp::AUDIT_ARCH_X86_64;
use crate::abi::{Errno, SysResult, TASK_SIZE_MAX};
use crate::kernel::ptrace::{self, Resume, StopKind, Tracee};
use crate::kernel::siginfo::{SigInfo, SIGINFO_SIZE};
use crate::kernel::{Task, Thread};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_ptrace,
    sys_ptrace,
    Partial(
        "guest-on-guest within the sandbox (ptrace_scope 0: same ids and dumpable, or CAP_SYS_PTRACE): TRACEME, \
         ATTACH, SEIZE, INTERRUPT, LISTEN, DETACH, KILL, CONT, SYSCALL, PEEK*/POKE* (FOLL_FORCE), PEEKUSER/POKEUSER, \
         GETREGS/SETREGS, GETFPREGS/SETFPREGS, GETREGSET/SETREGSET (NT_PRSTATUS, NT_PRFPREG, NT_X86_XSTATE), \
         GETSIGINFO/SETSIGINFO, GETSIGMASK/SETSIGMASK, GETEVENTMSG, GET_SYSCALL_INFO (entry, exit, seccomp), \
         ARCH_PRCTL, every PTRACE_O_* but TRACEVFORKDONE (TRACESECCOMP: PTRACE_EVENT_SECCOMP at a seccomp TRACE \
         verdict, the call changed or skipped by the tracer and filtered again), SINGLESTEP (the trap flag); SYSEMU \
         and SINGLEBLOCK return EIO, hardware debug registers read 0 and only 0 may be written, segment selectors \
         cannot be changed (EIO)",
    ),
)];

const TRACEME: u64 = 0;
const PEEKTEXT: u64 = 1;
const PEEKDATA: u64 = 2;
const PEEKUSR: u64 = 3;
const POKETEXT: u64 = 4;
const POKEDATA: u64 = 5;
const POKEUSR: u64 = 6;
const CONT: u64 = 7;
const KILL: u64 = 8;
const SINGLESTEP: u64 = 9;
const GETREGS: u64 = 12;
const SETREGS: u64 = 13;
const GETFPREGS: u64 = 14;
const SETFPREGS: u64 = 15;
const ATTACH: u64 = 16;
const DETACH: u64 = 17;
const SYSCALL: u64 = 24;
const ARCH_PRCTL: u64 = 30;
const SETOPTIONS: u64 = 0x4200;
const GETEVENTMSG: u64 = 0x4201;
const GETSIGINFO: u64 = 0x4202;
const SETSIGINFO: u64 = 0x4203;
const GETREGSET: u64 = 0x4204;
const SETREGSET: u64 = 0x4205;
const SEIZE: u64 = 0x4206;
const INTERRUPT: u64 = 0x4207;
const LISTEN: u64 = 0x4208;
const GETSIGMASK: u64 = 0x420a;
const SETSIGMASK: u64 = 0x420b;
const GET_SYSCALL_INFO: u64 = 0x420e;

/// `struct user_regs_struct`: 27 words.
const REGS_SIZE: usize = 27 * 8;
/// `struct user_fpregs_struct` (the FXSAVE area).
const FPREGS_SIZE: usize = 512;
/// `sizeof(struct user)` and where its `u_debugreg` starts.
const USER_SIZE: u64 = 912;
const DEBUGREG_OFFSET: u64 = 848;
/// Flags ptrace may change in eflags (Linux's FLAG_MASK).
const FLAG_MASK: u64 = 0x0005_4dd5;
const PTRACE_SEIZE_DEVEL: u64 = 0x8000_0000;

fn sys_ptrace(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (req, pid, addr, data) = (a[0], int(a[1]), a[2], a[3]);
    match req {
        TRACEME => traceme(task),
        ATTACH => attach(task, pid, false, 0).map(|()| 0),
        SEIZE => {
            if addr != 0 || data & !(u64::from(ptrace::O_MASK) | PTRACE_SEIZE_DEVEL) != 0 {
                return Err(Errno::EIO);
            }
            attach(task, pid, true, u32::try_from(data & u64::from(ptrace::O_MASK)).unwrap_or(0)).map(|()| 0)
        }
        _ => request(task, req, pid, addr, data),
    }
}

/// The requests on an existing tracee.
fn request(task: &mut Task, req: u64, pid: i32, addr: u64, data: u64) -> SysResult {
    let k = task.kernel.clone();
    let p = ptrace::of(&k);
    let me = task.thread.tgid();
    // The signal a resume delivers.
    let sig = || i32::try_from(data).map_err(|_| Errno::EIO);
    match req {
        CONT => p.resume(me, pid, Resume::Cont, sig()?).map(|()| 0),
        SYSCALL => p.resume(me, pid, Resume::Syscall, sig()?).map(|()| 0),
        SINGLESTEP => p.resume(me, pid, Resume::Step, sig()?).map(|()| 0),
        LISTEN => p.resume(me, pid, Resume::Listen, 0).map(|()| 0),
        DETACH => p.detach(&k, me, pid, sig()?).map(|()| 0),
        INTERRUPT => p.interrupt(&k, me, pid).map(|()| 0),
        KILL => {
            p.with_tracee(me, pid, false, |_| Ok(()))?;
            if let Some(t) = k.thread(pid) {
                k.send_signal(&t, libc::SIGKILL);
            }
            Ok(0)
        }
        SETOPTIONS => {
            let opts = u32::try_from(data).ok().filter(|o| o & !ptrace::O_MASK == 0).ok_or(Errno::EINVAL)?;
            p.with_tracee(me, pid, true, |t| {
                t.options = opts;
                Ok(0)
            })
        }
        PEEKTEXT | PEEKDATA => {
            let target = tracee_thread(task, pid)?;
            let mut word = [0u8; 8];
            target.mm().copy_in_forced(addr, &mut word).map_err(|_| Errno::EIO)?;
            task.thread.mm().copy_out(data, &word)?;
            Ok(0)
        }
        POKETEXT | POKEDATA => {
            let target = tracee_thread(task, pid)?;
            let mm = target.mm();
            mm.copy_out_forced(addr, &data.to_le_bytes()).map_err(|_| Errno::EIO)?;
            // The tracee is stopped, but other threads sharing its memory
            // may run on with the page's old frame mapped.
            task.kernel.flush_stale_mappings(&mm);
            Ok(0)
        }
        _ => stopped_request(task, req, pid, addr, data),
    }
}

/// Requests that read or change a stopped tracee's state.
fn stopped_request(task: &mut Task, req: u64, pid: i32, addr: u64, data: u64) -> SysResult {
    let p = ptrace::of(&task.kernel);
    let mm = task.thread.mm();
    let me = task.thread.tgid();
    let target_mask = || tracee_thread(task, pid).map(|t| t.sigmask());
    match req {
        PEEKUSR => {
            let v = p.with_tracee(me, pid, true, |t| peek_user(t, addr))?;
            mm.copy_out(data, &v.to_le_bytes())?;
            Ok(0)
        }
        POKEUSR => p.with_tracee(me, pid, true, |t| poke_user(t, addr, data)).map(|()| 0),
        GETREGS => {
            let regs = p.with_tracee(me, pid, true, |t| Ok(encode_regs(&stop(t)?.cpu.regs)))?;
            mm.copy_out(data, &regs)?;
            Ok(0)
        }
        SETREGS => {
            let mut raw = [0u8; REGS_SIZE];
            mm.copy_in(data, &mut raw)?;
            p.with_tracee(me, pid, true, |t| set_regs(t, &raw)).map(|()| 0)
        }
        GETFPREGS => {
            let fp = p.with_tracee(me, pid, true, |t| fpregs(t, FPREGS_SIZE))?;
            mm.copy_out(data, &fp)?;
            Ok(0)
        }
        SETFPREGS => {
            let mut raw = [0u8; FPREGS_SIZE];
            mm.copy_in(data, &mut raw)?;
            p.with_tracee(me, pid, true, |t| set_fpregs(t, &raw)).map(|()| 0)
        }
        GETREGSET | SETREGSET => {
            let mut iov = [0u8; 16];
            mm.copy_in(data, &mut iov)?;
            let mut d = Decoder::new(&iov);
            let (base, len) = (d.u64(), usize::try_from(d.u64()).unwrap_or(usize::MAX));
            let done = if req == GETREGSET {
                let bytes = p.with_tracee(me, pid, true, |t| regset(t, addr))?;
                let n = bytes.len().min(len);
                mm.copy_out(base, &bytes[..n])?;
                n
            } else {
                let size = p.with_tracee(me, pid, true, |t| regset(t, addr).map(|b| b.len()))?;
                let n = size.min(len);
                let mut raw = vec![0u8; n];
                mm.copy_in(base, &mut raw)?;
                p.with_tracee(me, pid, true, |t| set_regset(t, addr, &raw))?;
                n
            };
            mm.copy_out(data + 8, &u64::try_from(done).unwrap_or(0).to_le_bytes())?;
            Ok(0)
        }
        GETEVENTMSG => {
            let msg = p.with_tracee(me, pid, true, |t| Ok(t.event_msg))?;
            mm.copy_out(data, &msg.to_le_bytes())?;
            Ok(0)
        }
        GETSIGINFO => {
            let info = p.with_tracee(me, pid, true, |t| stop(t)?.siginfo.clone().ok_or(Errno::EINVAL))?;
            mm.copy_out(data, &info.0)?;
            Ok(0)
        }
        SETSIGINFO => {
            let mut raw = [0u8; SIGINFO_SIZE];
            mm.copy_in(data, &mut raw)?;
            p.with_tracee(me, pid, true, |t| {
                let st = stop(t)?;
                if st.siginfo.is_none() {
                    return Err(Errno::EINVAL);
                }
                st.siginfo = Some(SigInfo(raw));
                Ok(0)
            })
        }
        GETSIGMASK | SETSIGMASK => {
            if addr != 8 {
                return Err(Errno::EINVAL);
            }
            p.with_tracee(me, pid, true, |_| Ok(()))?;
            let target = tracee_thread(task, pid)?;
            if req == GETSIGMASK {
                mm.copy_out(data, &target_mask()?.to_le_bytes())?;
            } else {
                let mut raw = [0u8; 8];
                mm.copy_in(data, &mut raw)?;
                let unblockable =
                    crate::kernel::signal::sigbit(libc::SIGKILL) | crate::kernel::signal::sigbit(libc::SIGSTOP);
                target.set_sigmask(u64::from_le_bytes(raw) & !unblockable);
            }
            Ok(0)
        }
        GET_SYSCALL_INFO => {
            let info = p.with_tracee(me, pid, true, |t| {
                let msg = t.event_msg;
                Ok(syscall_info(stop(t)?, msg))
            })?;
            let n = info.len().min(usize::try_from(addr).unwrap_or(usize::MAX));
            mm.copy_out(data, &info[..n])?;
            u64::try_from(info.len()).map_err(|_| Errno::EIO)
        }
        ARCH_PRCTL => p.with_tracee(me, pid, true, |t| arch_prctl(task, t, addr, data)),
        // SYSEMU and block-stepping are not emulated.
        _ => {
            p.with_tracee(me, pid, false, |_| Ok(()))?;
            Err(Errno::EIO)
        }
    }
}

/// PTRACE_TRACEME: the caller's parent process traces it. ptrace_scope 0
/// lets any parent do so.
fn traceme(task: &mut Task) -> SysResult {
    let parent = task.kernel.procs().ppid(task.thread.tgid());
    if parent == 0 {
        return Err(Errno::EPERM);
    }
    ptrace::of(&task.kernel).link(parent, &task.thread, false, 0).map(|()| 0)
}

/// PTRACE_ATTACH (a SIGSTOP is sent) and PTRACE_SEIZE: the caller's
/// process traces thread `tid` if it may (Linux's ptrace_may_access in
/// mode ATTACH with ptrace_scope 0).
fn attach(task: &mut Task, tid: i32, seize: bool, options: u32) -> Result<(), Errno> {
    let k = task.kernel.clone();
    let target = k.thread(tid).ok_or(Errno::ESRCH)?;
    if target.tgid() == task.thread.tgid() {
        return Err(Errno::EPERM);
    }
    let dumpable = target.group().dumpable() != 0;
    if !task.thread.creds().may_read_process(&target.creds(), dumpable) {
        return Err(Errno::EPERM);
    }
    ptrace::of(&k).link(task.thread.tgid(), &target, seize, options)?;
    // A thread parked by job control turns its stop into a ptrace-stop.
    k.procs().notify();
    if !seize {
        let info = crate::kernel::siginfo::SigInfo::user(
            libc::SIGSTOP,
            crate::kernel::siginfo::SI_USER,
            task.thread.tgid(),
            task.thread.creds().uid,
        );
        target.queue_signal(info);
        k.signal_queued(&target);
    }
    Ok(())
}

/// The live thread `tid` traced by the caller's process.
fn tracee_thread(task: &Task, tid: i32) -> Result<Arc<Thread>, Errno> {
    ptrace::of(&task.kernel).with_tracee(task.thread.tgid(), tid, false, |_| Ok(()))?;
    task.kernel.thread(tid).ok_or(Errno::ESRCH)
}

fn stop(t: &mut Tracee) -> Result<&mut ptrace::Stop, Errno> {
    t.stop.as_mut().ok_or(Errno::ESRCH)
}

/// The selectors every guest thread runs with (64-bit user code and
/// stack; ds, es, fs and gs 0), as Linux reports them for x86-64 tasks.
const USER_CS: u64 = 0x33;
const USER_SS: u64 = 0x2b;

/// The registers in `user_regs_struct` order.
fn reg_words(r: &libc::user_regs_struct) -> [u64; 27] {
    [
        r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx, r.rdx, r.rsi, r.rdi,
        r.orig_rax, r.rip, USER_CS, r.eflags, r.rsp, USER_SS, r.fs_base, r.gs_base, 0, 0, 0, 0,
    ]
}

fn encode_regs(r: &libc::user_regs_struct) -> Vec<u8> {
    let mut e = Encoder::with_capacity(REGS_SIZE);
    for w in reg_words(r) {
        e.u64(w);
    }
    e.as_bytes().to_vec()
}

/// Sets register `idx` (`user_regs_struct` order) as Linux's putreg:
/// eflags only in its user-changeable bits, bases inside user space.
fn set_reg(r: &mut libc::user_regs_struct, idx: usize, v: u64) -> Result<(), Errno> {
    let slot = match idx {
        0 => &mut r.r15,
        1 => &mut r.r14,
        2 => &mut r.r13,
        3 => &mut r.r12,
        4 => &mut r.rbp,
        5 => &mut r.rbx,
        6 => &mut r.r11,
        7 => &mut r.r10,
        8 => &mut r.r9,
        9 => &mut r.r8,
        10 => &mut r.rax,
        11 => &mut r.rcx,
        12 => &mut r.rdx,
        13 => &mut r.rsi,
        14 => &mut r.rdi,
        15 => &mut r.orig_rax,
        16 => &mut r.rip,
        18 => {
            r.eflags = (r.eflags & !FLAG_MASK) | (v & FLAG_MASK);
            return Ok(());
        }
        19 => &mut r.rsp,
        21 | 22 if v >= TASK_SIZE_MAX => return Err(Errno::EIO),
        21 => &mut r.fs_base,
        22 => &mut r.gs_base,
        // Segment selectors: only their current values.
        17 | 20 | 23..=26 => {
            return if reg_words(r)[idx] == v { Ok(()) } else { Err(Errno::EIO) };
        }
        _ => return Err(Errno::EIO),
    };
    *slot = v;
    Ok(())
}

fn set_regs(t: &mut Tracee, raw: &[u8]) -> Result<(), Errno> {
    let st = stop(t)?;
    let mut regs = st.cpu.regs;
    let mut d = Decoder::new(raw);
    for idx in 0..raw.len() / 8 {
        set_reg(&mut regs, idx, d.u64())?;
    }
    st.cpu.regs = regs;
    Ok(())
}

/// PTRACE_PEEKUSER: a word of `struct user` (registers; the rest reads 0,
/// the debug registers too: none is ever set).
fn peek_user(t: &mut Tracee, off: u64) -> Result<u64, Errno> {
    if off % 8 != 0 || off >= USER_SIZE {
        return Err(Errno::EIO);
    }
    let regs = reg_words(&stop(t)?.cpu.regs);
    Ok(usize::try_from(off / 8).ok().and_then(|i| regs.get(i).copied()).unwrap_or(0))
}

/// PTRACE_POKEUSER: registers as SETREGS; a debug register only to 0
/// (hardware breakpoints are not emulated); the rest is ignored as Linux.
fn poke_user(t: &mut Tracee, off: u64, v: u64) -> Result<(), Errno> {
    if off % 8 != 0 || off >= USER_SIZE {
        return Err(Errno::EIO);
    }
    let st = stop(t)?;
    if off < REGS_SIZE as u64 {
        return set_reg(&mut st.cpu.regs, usize::try_from(off / 8).map_err(|_| Errno::EIO)?, v);
    }
    if off >= DEBUGREG_OFFSET && v != 0 {
        return Err(Errno::EIO);
    }
    Ok(())
}

fn fpregs(t: &mut Tracee, n: usize) -> Result<Vec<u8>, Errno> {
    stop(t)?.cpu.fpu.get(..n).map(<[u8]>::to_vec).ok_or(Errno::EIO)
}

/// SETFPREGS: the FXSAVE area; MXCSR's reserved bits refused (EINVAL)
/// as Linux does; x87 and SSE marked present in the XSAVE header.
fn set_fpregs(t: &mut Tracee, raw: &[u8]) -> Result<(), Errno> {
    let mxcsr = u32::from_le_bytes(raw.get(24..28).and_then(|b| b.try_into().ok()).ok_or(Errno::EINVAL)?);
    if mxcsr & !0xffff != 0 {
        return Err(Errno::EINVAL);
    }
    let st = stop(t)?;
    let fpu = st.cpu.fpu.get_mut(..raw.len()).ok_or(Errno::EIO)?;
    fpu.copy_from_slice(raw);
    if let Some(bv) = st.cpu.fpu.get_mut(512..520) {
        let v = u64::from_le_bytes(bv.try_into().unwrap_or([0; 8])) | 3;
        bv.copy_from_slice(&v.to_le_bytes());
    }
    st.cpu.fpu_dirty = true;
    Ok(())
}

/// The XSAVE features the area holds, for the word ptrace reports at
/// byte 464 of NT_X86_XSTATE (Linux puts XCR0 there): x87 and SSE, AVX
/// when the area reaches its component, AVX-512 and PKRU likewise.
fn xcr0(len: usize) -> u64 {
    let mut x = 0x3;
    if len >= 832 {
        x |= 0x4;
    }
    if len >= 2688 {
        x |= 0xe0;
    }
    if len >= 2696 {
        x |= 0x200;
    }
    x
}

fn regset(t: &mut Tracee, kind: u64) -> Result<Vec<u8>, Errno> {
    let st = stop(t)?;
    match kind {
        NT_PRSTATUS => Ok(encode_regs(&st.cpu.regs)),
        NT_PRFPREG => st.cpu.fpu.get(..FPREGS_SIZE).map(<[u8]>::to_vec).ok_or(Errno::EIO),
        NT_X86_XSTATE => {
            let mut x = st.cpu.fpu.clone();
            if let Some(sw) = x.get_mut(464..472) {
                sw.copy_from_slice(&xcr0(st.cpu.fpu.len()).to_le_bytes());
            }
            Ok(x)
        }
        _ => Err(Errno::EINVAL),
    }
}

fn set_regset(t: &mut Tracee, kind: u64, raw: &[u8]) -> Result<(), Errno> {
    match kind {
        NT_PRSTATUS => set_regs(t, raw),
        NT_PRFPREG if raw.len() == FPREGS_SIZE => set_fpregs(t, raw),
        NT_X86_XSTATE if raw.len() >= FPREGS_SIZE => {
            let st = stop(t)?;
            let keep_sw = st.cpu.fpu.get(464..512).map(<[u8]>::to_vec).unwrap_or_default();
            set_fpregs(t, &raw[..FPREGS_SIZE])?;
            let st = stop(t)?;
            let rest = st.cpu.fpu.get_mut(FPREGS_SIZE..raw.len()).ok_or(Errno::EINVAL)?;
            rest.copy_from_slice(&raw[FPREGS_SIZE..]);
            if let Some(sw) = st.cpu.fpu.get_mut(464..512) {
                sw.copy_from_slice(&keep_sw);
            }
            Ok(())
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `struct ptrace_syscall_info` for the stop (op NONE outside system
/// call and seccomp stops; `msg` is the event message, a seccomp stop's
/// RET_DATA).
fn syscall_info(st: &ptrace::Stop, msg: u64) -> Vec<u8> {
    let r = &st.cpu.regs;
    let op: u8 = match st.kind {
        StopKind::SyscallEnter => 1,
        StopKind::SyscallExit => 2,
        StopKind::Event(ptrace::EVENT_SECCOMP) => 3,
        _ => 0,
    };
    let mut e = Encoder::with_capacity(88);
    e.u8(op).zeros(3).u32(AUDIT_ARCH_X86_64).u64(r.rip).u64(r.rsp);
    match op {
        1 | 3 => {
            e.u64(r.orig_rax);
            for v in st.cpu.syscall_args() {
                e.u64(v);
            }
            if op == 3 {
                e.u32(u32::try_from(msg).unwrap_or(0));
            }
        }
        2 => {
            let rval = r.rax;
            let is_error = rval > u64::MAX - 4095;
            e.u64(rval).u8(u8::from(is_error));
        }
        _ => {}
    }
    e.as_bytes().to_vec()
}

/// PTRACE_ARCH_PRCTL: the tracee's fs and gs bases.
fn arch_prctl(task: &Task, t: &mut Tracee, addr: u64, code: u64) -> SysResult {
    // Linux's do_arch_prctl_64 takes the code as an int.
    let code = i32::try_from(code).map_err(|_| Errno::EINVAL)?;
    let regs = &mut stop(t)?.cpu.regs;
    match code {
        ARCH_SET_FS | ARCH_SET_GS if addr >= TASK_SIZE_MAX => Err(Errno::EPERM),
        ARCH_SET_FS => {
            regs.fs_base = addr;
            Ok(0)
        }
        ARCH_SET_GS => {
            regs.gs_base = addr;
            Ok(0)
        }
        ARCH_GET_FS | ARCH_GET_GS => {
            let v = if code == ARCH_GET_FS { regs.fs_base } else { regs.gs_base };
            task.thread.mm().copy_out(addr, &v.to_le_bytes())?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}
