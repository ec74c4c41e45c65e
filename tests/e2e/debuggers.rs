//! Debuggers inside the sandbox, through the sentry's guest ptrace: strace
//! following a Python start-up, gdb running a program to its crash. Each
//! also runs natively first, so a test that cannot pass natively fails as
//! the test's own fault.

use crate::util::{husk_do, native, run, Run, TempDir};
use std::process::Command;

/// A program that dies of SIGSEGV in a function of its own.
const CRASH_C: &str = r#"
#include <stdio.h>
static volatile int *null_ptr;
__attribute__((noinline)) void crash_here(int n) { *null_ptr = n; }
int main(void) { puts("about to crash"); crash_here(42); return 0; }
"#;

fn both(argv: &[&str]) -> (Run, Run) {
    (run(native(argv), None), run(husk_do(&[], argv), None))
}

#[test]
fn strace_follows_python_startup() {
    let argv = ["strace", "-f", "-o", "/dev/stdout", "/usr/bin/python3", "-c", "pass"];
    let (nat, sbx) = both(&argv);
    for r in [nat, sbx] {
        assert_eq!(r.code, 0, "{}", r.describe());
        let out = r.stdout_str();
        assert!(
            out.contains("execve(\"/usr/bin/python3\", [\"/usr/bin/python3\", \"-c\", \"pass\"]"),
            "{}",
            r.describe()
        );
        assert!(out.contains("openat(AT_FDCWD, "), "{}", r.describe());
        assert!(out.contains("+++ exited with 0 +++"), "{}", r.describe());
    }
}

#[test]
fn strace_follows_a_forked_child() {
    let argv = ["strace", "-f", "-o", "/dev/stdout", "sh", "-c", "/bin/echo hi; exit 3"];
    let (nat, sbx) = both(&argv);
    for r in [nat, sbx] {
        assert_eq!(r.code, 3, "{}", r.describe());
        let out = r.stdout_str();
        assert!(out.contains("execve(\"/bin/echo\", [\"/bin/echo\", \"hi\"]"), "the child's exec: {}", r.describe());
        // The traced child's own "hi" lands on the same stdout, mid-line.
        assert!(out.contains("write(1, \"hi\\n\", 3"), "{}", r.describe());
        assert!(out.contains("+++ exited with 3 +++"), "{}", r.describe());
    }
}

/// `strace --seccomp-bpf`: strace puts a RET_TRACE filter in the tracee
/// and stops it only at the calls it traces (PTRACE_EVENT_SECCOMP, then
/// PTRACE_SYSCALL for their exit); it first checks the order of those
/// stops and falls back to plain tracing, with a warning, if they are
/// not Linux's.
#[test]
fn strace_seccomp_bpf_traces_only_the_calls_asked_for() {
    let argv = ["strace", "-f", "--seccomp-bpf", "-e", "trace=write,exit_group", "-o", "/dev/stdout", "sh", "-c"];
    let argv: Vec<&str> = argv.into_iter().chain(["/bin/echo hi; exit 3"]).collect();
    let (nat, sbx) = both(&argv);
    for r in [nat, sbx] {
        assert_eq!(r.code, 3, "{}", r.describe());
        assert!(!r.stderr_str().contains("seccomp filter is requested but unavailable"), "{}", r.describe());
        let out = r.stdout_str();
        assert!(out.contains("write(1, \"hi\\n\", 3"), "{}", r.describe());
        assert!(!out.contains("execve("), "a call not asked for: {}", r.describe());
        // exit_group does not return: strace prints its result as `?`.
        let exit = out.lines().find(|l| l.contains("exit_group(3)")).unwrap_or_default();
        assert!(exit.trim_end().ends_with("= ?"), "{}", r.describe());
        assert!(out.contains("+++ exited with 3 +++"), "{}", r.describe());
    }
}

#[test]
fn gdb_prints_the_backtrace_of_a_crash() {
    let dir = TempDir::new("gdb-crash");
    let src = dir.path().join("crash.c");
    std::fs::write(&src, CRASH_C).unwrap();
    let bin = dir.path().join("crash");
    let cc = Command::new("cc").args(["-g", "-O0", "-o"]).arg(&bin).arg(&src).status().unwrap();
    assert!(cc.success(), "cc failed");
    let bin = bin.to_string_lossy().into_owned();
    let argv = ["gdb", "-nx", "-batch", "-ex", "run", "-ex", "bt", bin.as_str()];
    let (nat, sbx) = both(&argv);
    for r in [nat, sbx] {
        let out = r.stdout_str();
        assert!(out.contains("Program received signal SIGSEGV"), "{}", r.describe());
        assert!(
            out.contains("#0  ") && out.contains(" in crash_here (n=42) at "),
            "the crashing frame: {}",
            r.describe()
        );
        assert!(out.contains("#1  ") && out.contains(" in main () at "), "its caller: {}", r.describe());
    }
}
