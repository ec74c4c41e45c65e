//! Syscalls agents' tools reach for (issue 16): process_vm_readv/writev,
//! membarrier, sched_setattr/sched_getattr with ioprio_get/ioprio_set,
//! and namespaces made by clone with their /proc/PID/ns links and setns.
//! Each guest program must pass natively, then under `husk do`.

use crate::util::{guest_bin, husk_do, native, run};

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
