//! Signal delivery to handlers: the x86-64 `rt_sigframe` built on the guest
//! stack (return address, `ucontext` with the full register file and XSAVE
//! state, `siginfo`), and `rt_sigreturn`, which restores it exactly.

use super::signal::{default_action, sigbit, DefaultAction, SigAction, SIG_DFL, SIG_IGN};
use super::task::{ExitStatus, Task};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::Errno;
use crate::kernel::process::INIT_PID;
use crate::kernel::signal::{
    SA_NODEFER, SA_ONSTACK, SA_RESETHAND, SA_RESTORER, SA_SIGINFO, SS_AUTODISARM, SS_DISABLE, SS_ONSTACK,
};
use std::sync::atomic::Ordering;

const UC_FP_XSTATE: u64 = 1;
const UC_SIGCONTEXT_SS: u64 = 2;
const UC_STRICT_RESTORE_SS: u64 = 4;
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;
/// Bytes below the interrupted stack pointer the ABI reserves.
const RED_ZONE: u64 = 128;
/// pretcode (8) + ucontext (304).
const UCONTEXT_OFFSET: u64 = 8;
const SIGCONTEXT_OFFSET: u64 = UCONTEXT_OFFSET + 40;
const SIGINFO_OFFSET: u64 = 8 + 304;
const FRAME_SIZE: u64 = SIGINFO_OFFSET + SIGINFO_SIZE as u64;

pub(crate) use super::siginfo::SigInfo;
use super::siginfo::SIGINFO_SIZE;
/// Flags user code may change in rt_sigreturn (AC, OF, DF, TF, SF, ZF,
/// AF, PF, CF, RF, NT).
const FIX_EFLAGS: u64 = 0x0005_4dd5;

/// What delivering a signal did.
pub(crate) enum Delivery {
    /// A handler frame was pushed.
    Handler,
    /// The default action ignored it (or it was ignored).
    Ignored,
    /// The process must die of it.
    Fatal,
}

/// Delivers `info` to `task`: runs the handler, or the default action.
/// `forced` signals (synchronous faults) kill the process when blocked or
/// ignored, as Linux's force_sig does.
pub(crate) fn deliver(task: &mut Task, info: &SigInfo, forced: bool) -> Delivery {
    let sig = info.signo();
    let Ok(idx) = usize::try_from(sig) else {
        return Delivery::Ignored;
    };
    let action = task.thread.sigactions().swap(idx, None);
    let blocked = task.thread.sigmask() & sigbit(sig) != 0;
    if forced && (blocked || action.handler == SIG_IGN) {
        return fatal(task, sig);
    }
    match action.handler {
        SIG_IGN => Delivery::Ignored,
        SIG_DFL => match default_action(sig) {
            DefaultAction::Ignore => Delivery::Ignored,
            _ if !forced && task.kernel.opts.protect_init && task.thread.tgid == INIT_PID => Delivery::Ignored,
            DefaultAction::Stop => {
                // Terminal stops to an orphaned process group are discarded:
                // nothing could continue it.
                let k = &task.kernel;
                let pgid = k.procs.pgid(task.thread.tgid).unwrap_or(task.thread.tgid);
                if sig == libc::SIGSTOP || !k.procs.group_orphaned(pgid) {
                    k.stop_process(task.thread.tgid, sig, task.stop_continues);
                }
                Delivery::Ignored
            }
            DefaultAction::Terminate | DefaultAction::CoreDump => fatal(task, sig),
        },
        _ => match push_frame(task, sig, &action, info) {
            Ok(()) => {
                if action.flags & SA_RESETHAND != 0 {
                    task.thread.sigactions().swap(idx, Some(SigAction::default()));
                }
                Delivery::Handler
            }
            Err(e) => {
                log::debug!("task {}: cannot build a frame for signal {sig}: {e}", task.thread.tid);
                fatal(task, libc::SIGSEGV)
            }
        },
    }
}

fn fatal(task: &mut Task, sig: i32) -> Delivery {
    task.exit = Some(ExitStatus::Signal(sig));
    Delivery::Fatal
}

/// Chooses the stack for the handler: the alternate stack if asked for and
/// not already on it.
fn frame_top(task: &Task, action: &SigAction) -> u64 {
    let sp = task.cpu.regs.rsp;
    if action.flags & SA_ONSTACK != 0 {
        let mut alt = task.thread.altstack.lock();
        let on_alt = alt.size > 0 && sp > alt.sp && sp - alt.sp <= alt.size;
        if alt.flags & SS_DISABLE == 0 && alt.size > 0 && !on_alt {
            let top = alt.sp + alt.size;
            if alt.flags & SS_AUTODISARM != 0 {
                *alt = super::signal::AltStack { sp: 0, size: 0, flags: SS_DISABLE };
            }
            return top;
        }
    }
    sp.wrapping_sub(RED_ZONE)
}

fn sigcontext(task: &Task, fpstate: u64, old_mask: u64, info: &SigInfo) -> Encoder {
    let r = &task.cpu.regs;
    let mut e = Encoder::with_capacity(256);
    for v in [
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp,
        r.rip, r.eflags,
    ] {
        e.u64(v);
    }
    let seg = |v: u64| u16::try_from(v).unwrap_or(0);
    e.u16(seg(r.cs)).u16(seg(r.gs)).u16(seg(r.fs)).u16(seg(r.ss));
    let mut d = Decoder::new(&info.0);
    d.skip(16);
    let addr = d.u64();
    let is_fault = matches!(info.signo(), 4 | 5 | 7 | 8 | 11);
    // err, trapno: a user-mode page fault (14) for SIGSEGV, else 0.
    let (err, trapno) = if info.signo() == 11 { (4u64, 14u64) } else { (0, 0) };
    e.u64(err).u64(trapno).u64(old_mask).u64(if is_fault { addr } else { 0 }).u64(fpstate);
    e.zeros(64);
    e
}

fn push_frame(task: &mut Task, sig: i32, action: &SigAction, info: &SigInfo) -> Result<(), Errno> {
    if action.flags & SA_RESTORER == 0 {
        // x86-64 has no kernel-provided trampoline; Linux kills the task.
        return Err(Errno::EFAULT);
    }
    let top = frame_top(task, action);
    let old_mask = task.thread.saved_sigmask.lock().take().unwrap_or_else(|| task.thread.sigmask());
    let xsave = task.cpu.fpu.clone();
    let xlen = u64::try_from(xsave.len()).map_err(|_| Errno::EFAULT)?;
    let fp_addr = top.checked_sub(xlen + 4).ok_or(Errno::EFAULT)? & !63;
    let frame = (fp_addr.checked_sub(FRAME_SIZE).ok_or(Errno::EFAULT)? & !15) - 8;

    let mut fp = xsave;
    let xlen32 = u32::try_from(xlen).map_err(|_| Errno::EFAULT)?;
    let xfeatures = fp.get(512..520).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])));
    let mut sw = Encoder::with_capacity(48);
    sw.u32(FP_XSTATE_MAGIC1).u32(xlen32 + 4).u64(xfeatures).u32(xlen32).zeros(28);
    if fp.len() >= 512 {
        fp[464..512].copy_from_slice(sw.as_bytes());
    }
    fp.extend_from_slice(&FP_XSTATE_MAGIC2.to_le_bytes());

    let alt = *task.thread.altstack.lock();
    let mut e = Encoder::with_capacity(usize::try_from(FRAME_SIZE).unwrap_or(0));
    e.u64(action.restorer);
    e.u64(UC_FP_XSTATE | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS).u64(0);
    let on_alt = alt.size > 0 && task.cpu.regs.rsp > alt.sp && task.cpu.regs.rsp - alt.sp <= alt.size;
    let ss_flags = if alt.flags & SS_DISABLE != 0 {
        SS_DISABLE
    } else if on_alt {
        SS_ONSTACK
    } else {
        0
    };
    e.u64(alt.sp).u32(ss_flags).u32(0).u64(alt.size);
    e.bytes(sigcontext(task, fp_addr, old_mask, info).as_bytes());
    e.u64(old_mask);
    e.bytes(&info.0);

    let mm = task.thread.mm();
    mm.copy_out(fp_addr, &fp)?;
    mm.copy_out(frame, e.as_bytes())?;

    let mut new_mask = old_mask | action.mask;
    if action.flags & SA_NODEFER == 0 {
        new_mask |= sigbit(sig);
    }
    new_mask &= !(sigbit(libc::SIGKILL) | sigbit(libc::SIGSTOP));
    task.thread.sigmask.store(new_mask, Ordering::Relaxed);

    let r = &mut task.cpu.regs;
    r.rdi = u64::try_from(sig).unwrap_or(0);
    r.rsi = frame + SIGINFO_OFFSET;
    r.rdx = frame + UCONTEXT_OFFSET;
    r.rax = 0;
    r.rsp = frame;
    r.rip = action.handler;
    // Clear DF and TF, as the kernel does for handlers.
    r.eflags &= !(0x400 | 0x100);
    if action.flags & SA_SIGINFO == 0 {
        r.rsi = 0;
        r.rdx = 0;
    }
    Ok(())
}

/// Whether the FPU area at `addr` (read into `fp`) carries the extended
/// state, as Linux's check_xstate_in_sigframe decides: both magic numbers
/// in place and a size no larger than the thread's XSAVE area.
fn has_xstate(mm: &crate::mm::MemoryManager, addr: u64, fp: &[u8]) -> bool {
    let u32_at = |b: &[u8], at: usize| b.get(at..at + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
    let (Some(magic1), Some(size), Some(extended)) = (u32_at(fp, 464), u32_at(fp, 480), u32_at(fp, 468)) else {
        return false;
    };
    let Ok(len) = usize::try_from(size) else { return false };
    if magic1 != FP_XSTATE_MAGIC1 || len < 576 || len > fp.len() || size > extended {
        return false;
    }
    let mut magic2 = [0u8; 4];
    mm.copy_in(addr + u64::from(size), &mut magic2).is_ok() && u32::from_le_bytes(magic2) == FP_XSTATE_MAGIC2
}

/// The FPU state a signal frame's area restores. Without the extended
/// state (`full` false: a frame built by hand, say) only the legacy x87/SSE
/// part is taken and every other component returns to its initial state;
/// with it, the whole area, whose header the host checks as XRSTOR does
/// (a state it refuses ends the process with SIGSEGV). A reserved MXCSR
/// bit is a bad frame, as XRSTOR's #GP makes it in Linux.
fn restored_fpu(mut fp: Vec<u8>, full: bool, template: &[u8]) -> Result<Vec<u8>, Errno> {
    let mxcsr = u32::from_le_bytes([fp[24], fp[25], fp[26], fp[27]]);
    let mask = template.get(28..32).map_or(0xffff, |m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    if mxcsr & !mask != 0 {
        return Err(Errno::EFAULT);
    }
    if !full {
        let mut legacy = template.to_vec();
        legacy.resize(fp.len(), 0);
        legacy[..464].copy_from_slice(&fp[..464]);
        // XSTATE_BV: x87 and SSE, from the legacy area.
        legacy[512..520].copy_from_slice(&3u64.to_le_bytes());
        fp = legacy;
    }
    // Bytes 464..512 are software's (the frame's magic), never state.
    fp[464..512].fill(0);
    Ok(fp)
}

/// `rt_sigreturn`: restores the context saved by `push_frame`. The
/// handler's `ret` popped the return address, so the ucontext is at rsp.
/// The restored rax is the system call's result (its handler reports the
/// register file replaced).
pub(crate) fn sigreturn(task: &mut Task) -> Result<(), Errno> {
    let frame = task.cpu.regs.rsp.checked_sub(8).ok_or(Errno::EFAULT)?;
    let mm = task.thread.mm();
    let mut sc = [0u8; 256];
    mm.copy_in(frame + SIGCONTEXT_OFFSET, &mut sc)?;
    let mut mask = [0u8; 8];
    mm.copy_in(frame + SIGCONTEXT_OFFSET + 256, &mut mask)?;
    let mut d = Decoder::new(&sc);
    let mut v = [0u64; 18];
    for x in v.iter_mut() {
        *x = d.u64();
    }
    let (_cs, _gs, _fs, _ss) = (d.u16(), d.u16(), d.u16(), d.u16());
    let (_err, _trapno, _oldmask, _cr2, fpstate) = (d.u64(), d.u64(), d.u64(), d.u64(), d.u64());
    if fpstate != 0 {
        let mut fp = vec![0u8; task.cpu.fpu.len()];
        mm.copy_in(fpstate, &mut fp)?;
        let full = has_xstate(&mm, fpstate, &fp);
        task.cpu.fpu = restored_fpu(fp, full, task.kernel.platform.fpu_template())?;
        task.cpu.fpu_dirty = true;
    }
    let r = &mut task.cpu.regs;
    [r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15] = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
    [r.rdi, r.rsi, r.rbp, r.rbx, r.rdx, r.rax, r.rcx, r.rsp, r.rip] =
        [v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[16]];
    r.eflags = (r.eflags & !FIX_EFLAGS) | (v[17] & FIX_EFLAGS);
    r.orig_rax = u64::MAX;
    let mask = u64::from_le_bytes(mask) & !(sigbit(libc::SIGKILL) | sigbit(libc::SIGSTOP));
    task.thread.sigmask.store(mask, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siginfo_layouts() {
        let f = SigInfo::fault(11, 2, 0xdead_b000);
        assert_eq!(f.signo(), 11);
        let mut d = Decoder::new(&f.0);
        assert_eq!((d.i32(), d.i32(), d.i32()), (11, 0, 2));
        d.skip(4);
        assert_eq!(d.u64(), 0xdead_b000);
        let u = SigInfo::user(15, 0, 42, 1000);
        let mut d = Decoder::new(&u.0);
        d.skip(16);
        assert_eq!((d.i32(), d.u32()), (42, 1000));
    }

    #[test]
    fn frame_offsets_match_the_abi() {
        assert_eq!(SIGCONTEXT_OFFSET, 48);
        assert_eq!(SIGINFO_OFFSET, 312);
        assert_eq!(FRAME_SIZE, 440);
    }
}
