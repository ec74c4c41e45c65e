//! Syscalls agents' tools reach for (issue 16): process_vm_readv/writev,
//! membarrier, sched_setattr/sched_getattr with ioprio_get/ioprio_set,
//! and namespaces made by clone with their /proc/PID/ns links and setns;
//! `husk syscalls` states what each supports (keyctl: ENOSYS).
//! Each guest program must pass natively, then under `husk do`.

use crate::guest::guest_test;
use crate::util::{husk_bin, run};
use std::process::Command;

#[test]
fn process_vm_between_processes() {
    guest_test("process_vm", &[]);
}

#[test]
fn membarrier_commands_and_registration() {
    guest_test("membarrier", &[]);
}

#[test]
fn sched_attr_policies_and_ioprio() {
    guest_test("sched_attr", &[]);
}

#[test]
fn namespaces_by_clone_proc_links_and_setns() {
    guest_test("namespaces", &[]);
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
