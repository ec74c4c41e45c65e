//! System calls husk refuses for policy: they would reach past the
//! sandbox (modules, kexec, reboot, swap, raw I/O ports, BPF,
//! perf, process accounting). Each fails with
//! EPERM, as under a container runtime's default seccomp profile, and is
//! recorded as `policy.denied` once per process and call.

use super::names::NAMES;
use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::audit::Record;
use crate::kernel::Task;
use parking_lot::Mutex;
use std::collections::HashSet;

const WHY: Support = Support::Unimplemented("refused for policy: EPERM, recorded as policy.denied");

/// The (process, call) pairs recorded already.
#[derive(Default)]
struct Recorded(Mutex<HashSet<(i32, usize)>>);

/// Refuses call `nr` to `task`.
pub(super) fn refuse(task: &Task, nr: libc::c_long) -> SysResult {
    let nr = usize::try_from(nr).unwrap_or_default();
    let pid = task.thread.tgid();
    if task.kernel.audit_log().is_some() && task.kernel.ext::<Recorded>().0.lock().insert((pid, nr)) {
        let comm = String::from_utf8_lossy(&task.thread.comm()).into_owned();
        let operation = NAMES.get(nr).copied().unwrap_or_default().to_string();
        let reason = "reaches past the sandbox".to_string();
        task.kernel.audit(|| Record::PolicyDenied { pid, comm, operation, reason })?;
    }
    Err(Errno::EPERM)
}

macro_rules! refused {
    ($($handler:ident: $nr:ident),* $(,)?) => {
        $(fn $handler(task: &mut Task, _a: [u64; 6]) -> SysResult {
            refuse(task, libc::$nr)
        })*
        pub(super) const ENTRIES: Entries = &[$((libc::$nr, $handler, WHY)),*];
    };
}

refused! {
    sys_swapon: SYS_swapon,
    sys_swapoff: SYS_swapoff,
    sys_reboot: SYS_reboot,
    sys_kexec_load: SYS_kexec_load,
    sys_kexec_file_load: SYS_kexec_file_load,
    sys_init_module: SYS_init_module,
    sys_finit_module: SYS_finit_module,
    sys_delete_module: SYS_delete_module,
    sys_bpf: SYS_bpf,
    sys_perf_event_open: SYS_perf_event_open,
    sys_iopl: SYS_iopl,
    sys_ioperm: SYS_ioperm,
    sys_acct: SYS_acct,
}
