//! System calls: `arch_prctl`, the x86-64 thread state a guest sets
//! itself: the FS and GS bases of thread-local storage, and CPUID
//! faulting (which the sentry does not offer).

use super::args::int;
use super::common::put_u64;
use super::{Entries, Support};
use crate::abi::arch::{ARCH_GET_CPUID, ARCH_GET_FS, ARCH_GET_GS, ARCH_SET_CPUID, ARCH_SET_FS, ARCH_SET_GS};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;

pub(super) const ENTRIES: Entries = &[(
    libc::SYS_arch_prctl,
    sys_arch_prctl,
    Support::Partial(
        "ARCH_SET_CPUID returns ENODEV (no CPUID faulting); XSTATE-permission, vDSO-mapping and shadow-stack \
         options return EINVAL",
    ),
)];

fn sys_arch_prctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let addr = a[1];
    match int(a[0]) {
        ARCH_SET_FS | ARCH_SET_GS if addr >= crate::abi::TASK_SIZE_MAX => Err(Errno::EPERM),
        ARCH_SET_FS => {
            task.cpu.regs.fs = 0;
            task.cpu.regs.fs_base = addr;
            Ok(0)
        }
        ARCH_SET_GS => {
            task.cpu.regs.gs = 0;
            task.cpu.regs.gs_base = addr;
            Ok(0)
        }
        ARCH_GET_FS => {
            put_u64(task, addr, task.cpu.regs.fs_base)?;
            Ok(0)
        }
        ARCH_GET_GS => {
            put_u64(task, addr, task.cpu.regs.gs_base)?;
            Ok(0)
        }
        ARCH_GET_CPUID => Ok(1),
        ARCH_SET_CPUID => Err(Errno::ENODEV),
        code => {
            log::debug!("arch_prctl: unsupported code {code:#x}");
            Err(Errno::EINVAL)
        }
    }
}
