//! System calls: `add_key`, `request_key`, `keyctl` — the kernel key
//! retention service. The sandbox has no keyrings (as gVisor): each call
//! is ENOSYS, which the key utilities and libraries (keyutils, Kerberos'
//! KEYRING ccache) treat as a kernel built without CONFIG_KEYS, and is
//! reported once as unimplemented in the debug and audit logs.

use super::{Entries, Support};
use crate::abi::{Errno, SysResult};
use crate::kernel::Task;

const NO_KEYRINGS: Support =
    Support::Unimplemented("no per-sandbox keyrings: ENOSYS, as a kernel without CONFIG_KEYS (and gVisor)");

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_add_key, sys_add_key, NO_KEYRINGS),
    (libc::SYS_request_key, sys_request_key, NO_KEYRINGS),
    (libc::SYS_keyctl, sys_keyctl, NO_KEYRINGS),
];

/// ENOSYS, reported once per number like any unimplemented call.
fn unimplemented(task: &Task, nr: libc::c_long, name: &str) -> SysResult {
    task.kernel.report_unimplemented(usize::try_from(nr).unwrap_or(0), name, &task.thread);
    Err(Errno::ENOSYS)
}

fn sys_add_key(task: &mut Task, _: [u64; 6]) -> SysResult {
    unimplemented(task, libc::SYS_add_key, "add_key")
}

fn sys_request_key(task: &mut Task, _: [u64; 6]) -> SysResult {
    unimplemented(task, libc::SYS_request_key, "request_key")
}

fn sys_keyctl(task: &mut Task, _: [u64; 6]) -> SysResult {
    unimplemented(task, libc::SYS_keyctl, "keyctl")
}
