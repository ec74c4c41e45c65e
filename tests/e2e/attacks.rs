//! Attack tests: one program or script per attack in `tests/attacks/`, each
//! with the outcome it must see (tests/attacks/README.md lists them).
//!
//! * `NAME.c` is compiled statically (like the guest programs, with
//!   `tests/guest/check.h` on the include path) and run under `husk do`;
//!   it exits 0 when the attack was held. A line `// husk-do: FLAGS` adds
//!   flags to `husk do`; unless a line `// native: skip` says otherwise it
//!   must also pass natively (it asserts what Linux does), so an attack
//!   program cannot pass by being wrong.
//! * `NAME.sh` runs on the host under bash with `HUSK` (the husk binary),
//!   `ATTACK_SRC` (this folder), `GUEST_INCLUDE` (tests/guest) and
//!   `ATTACK_TMP` (a fresh scratch directory, removed afterwards) in its
//!   environment; it exits 0 when the attack was held.
//!
//! Every run is bounded by the harness's timeout and killed by process
//! group after it: a hung sandbox is a failed attack.

use crate::util::{guest_src_dir, husk_do, native, run, unique, TempDir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn attack_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/attacks")
}

/// The values of `// KEY: …` header lines of a source file.
fn directive(src: &str, key: &str) -> Option<String> {
    let tag = format!("// {key}:");
    src.lines().find_map(|l| l.trim().strip_prefix(&tag).map(|v| v.trim().to_owned()))
}

/// Compiles `tests/attacks/NAME.c` into the test's temporary directory.
fn compile(name: &str) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("attack-bin");
    std::fs::create_dir_all(&out).unwrap();
    let bin = out.join(name);
    let tmp = out.join(unique(&format!(".{name}")));
    let src = attack_dir().join(format!("{name}.c"));
    let res = Command::new("cc")
        .args(["-static", "-O1", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&tmp)
        .arg("-I")
        .arg(guest_src_dir())
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running cc for {}: {e}", src.display()));
    assert!(res.status.success(), "compiling {} failed:\n{}", src.display(), String::from_utf8_lossy(&res.stderr));
    std::fs::rename(&tmp, &bin).unwrap();
    bin
}

fn attack(name: &str) {
    let dir = attack_dir();
    let c = dir.join(format!("{name}.c"));
    if c.exists() {
        let src = std::fs::read_to_string(&c).unwrap();
        let bin = compile(name);
        let argv = [bin.to_string_lossy().into_owned()];
        if directive(&src, "native").as_deref() != Some("skip") {
            let nat = run(native(&argv), None);
            assert_eq!(nat.code, 0, "attack {name} FAILS NATIVELY: the test is wrong\n{}", nat.describe());
        }
        let flags = directive(&src, "husk-do").unwrap_or_default();
        let flags: Vec<&str> = flags.split_whitespace().collect();
        let sbx = run(husk_do(&flags, &argv), None);
        assert_eq!(sbx.code, 0, "attack {name} was not held under husk do\n{}", sbx.describe());
        return;
    }
    let sh = dir.join(format!("{name}.sh"));
    assert!(sh.exists(), "no tests/attacks/{name}.c or .sh");
    let scratch = TempDir::new(&format!("attack-{name}"));
    let mut cmd = Command::new("bash");
    cmd.arg(&sh)
        .env("HUSK", crate::util::husk_bin())
        .env("ATTACK_SRC", &dir)
        .env("GUEST_INCLUDE", guest_src_dir())
        .env("ATTACK_TMP", scratch.path())
        .current_dir(scratch.path());
    let r = run(cmd, None);
    assert_eq!(r.code, 0, "attack {name} was not held\n{}", r.describe());
}

macro_rules! attacks {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                attack(stringify!($name));
            }
        )*
    };
}

attacks!(
    // one line per attack, in the order of tests/attacks/README.md
    stub_page_hidden,
    vsyscall_call,
    compat_syscall,
    bad_register_state,
    mremap_moves,
    wedged_sandbox_stops,
    owner_sigkill_leaves_nothing,
    supervisor_sigint,
    stdout_unread_interruptible,
    unknown_flag_refused,
    sentry_quiet_on_guest_stderr,
    init_unkillable_inside,
    host_fd_names,
    deep_cwd,
    syscall_fuzz,
    kernel_surface,
    ptrace_anything,
    proc_mem_write,
    host_loopback,
    two_sandboxes,
    host_files_race,
    host_state_untouched,
    host_processes_safe,
    host_fds_not_inherited,
    proc_hides_host_paths,
    raw_and_foreign_sockets,
    devices_and_mounts,
    seccomp_tricks,
    malformed_exec,
    path_bombs,
    futex_and_clone_garbage,
    timer_storm,
    memory_bomb,
    tmpfs_bomb,
    overlay_bomb,
    shm_bomb,
    memfd_bomb,
    disk_bomb,
    pipe_bomb,
    socket_bomb,
    fd_bomb,
    vfork_parent_killed,
    exe_write,
    secret_stubs_sealed,
    fd_passing,
    host_unix_sockets,
    host_writes,
    proc_host_pids,
    rootfs_proc_links,
    namespaces,
    mount_escape,
    oom_kills_largest,
    fork_bomb,
    thread_bomb,
    pids_race,
);
