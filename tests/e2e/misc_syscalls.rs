//! Syscalls agents' tools reach for (issue 16): process_vm_readv/writev,
//! membarrier, sched_setattr/sched_getattr with ioprio_get/ioprio_set,
//! and namespaces made by clone with their /proc/PID/ns links and setns;
//! `husk syscalls` states what each supports (keyctl: ENOSYS).
//! Each guest program must pass natively, then under `husk do`.

use crate::util::{guest_bin, husk_bin, husk_do, native, run};
use std::process::Command;

fn native_then_husk(name: &str) {
    let argv = vec![guest_bin(name).to_string_lossy().into_owned()];
    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 0, "guest program {name} FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());
    let sbx = run(husk_do(&[], &argv), None);
    assert_eq!(sbx.code, 0, "guest program {name} failed under husk do\n{}", sbx.describe());
}

#[test]
fn process_vm_between_processes() {
    native_then_husk("process_vm");
}

#[test]
fn membarrier_commands_and_registration() {
    native_then_husk("membarrier");
}

#[test]
fn sched_attr_policies_and_ioprio() {
    native_then_husk("sched_attr");
}

#[test]
fn namespaces_by_clone_proc_links_and_setns() {
    native_then_husk("namespaces");
}

/// The table `husk syscalls` prints says what these calls do: the key
/// calls are unimplemented (ENOSYS, no keyrings), the rest served.
#[test]
fn syscall_table_states_the_levels() {
    let mut cmd = Command::new(husk_bin());
    cmd.arg("syscalls");
    let out = run(cmd, None);
    out.assert_code(0);
    let text = out.stdout_str();
    let level = |name: &str| {
        let row = text.lines().find(|l| l.split_whitespace().nth(1) == Some(name));
        let row = row.unwrap_or_else(|| panic!("no row for {name}\n{text}"));
        (row.split_whitespace().nth(2).unwrap_or("").to_owned(), row.to_owned())
    };
    for name in ["keyctl", "add_key", "request_key"] {
        let (lvl, row) = level(name);
        assert_eq!(lvl, "Unimplemented", "{row}");
        assert!(row.contains("ENOSYS") && row.contains("keyrings"), "{row}");
    }
    assert_eq!(level("process_vm_readv").0, "Full");
    assert_eq!(level("process_vm_writev").0, "Full");
    for name in ["membarrier", "sched_setattr", "sched_getattr", "ioprio_set", "ioprio_get", "setns"] {
        assert_eq!(level(name).0, "Partial", "{}", level(name).1);
    }
}
