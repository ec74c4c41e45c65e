//! One test per self-checking guest program in `tests/guest/`: it must pass
//! natively (otherwise the test itself is wrong) and then under `husk do`.

use crate::util::{guest_bin, husk_do, native, run};

/// Runs guest program `name` with `args` natively, then under `husk do`;
/// both must exit 0.
pub(crate) fn guest_test(name: &str, args: &[&str]) {
    let bin = guest_bin(name);
    let mut argv: Vec<String> = vec![bin.to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|s| (*s).to_owned()));

    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 0, "guest program {name} FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());

    let sbx = run(husk_do(&[], &argv), None);
    assert_eq!(sbx.code, 0, "guest program {name} failed under husk do\n{}", sbx.describe());
}

#[test]
fn guest_fileio() {
    guest_test("fileio", &[]);
}

#[test]
fn guest_rlimit_fsize() {
    guest_test("rlimit_fsize", &[]);
}

#[test]
fn guest_stat() {
    guest_test("stat", &[]);
}

#[test]
fn guest_dirs() {
    guest_test("dirs", &[]);
}

#[test]
fn guest_fdtable() {
    guest_test("fdtable", &[]);
}

#[test]
fn guest_memory() {
    guest_test("memory", &[]);
}

#[test]
fn guest_mremap() {
    guest_test("mremap", &[]);
}

#[test]
fn guest_mmap_shared_file() {
    guest_test("mmap_shared_file", &[]);
}

#[test]
fn guest_mmap_edges() {
    guest_test("mmap_edges", &[]);
}

#[test]
fn guest_mlock() {
    guest_test("mlock", &[]);
}

#[test]
fn guest_mempolicy() {
    guest_test("mempolicy", &[]);
}

#[test]
fn guest_memfd_seals() {
    guest_test("memfd_seals", &[]);
}

#[test]
fn guest_threads() {
    guest_test("threads", &[]);
}

#[test]
fn guest_spawn_many() {
    guest_test("spawn_many", &[]);
}

#[test]
fn guest_unix_sockets() {
    guest_test("unix_sockets", &[]);
}

#[test]
fn guest_unix_dgram() {
    guest_test("unix_dgram", &[]);
}

#[test]
fn guest_inet_sockets() {
    guest_test("inet_sockets", &[]);
}

#[test]
fn guest_udp_lite_header() {
    guest_test("udp_lite_header", &[]);
}

#[test]
fn guest_mmsg() {
    guest_test("mmsg", &[]);
}

#[test]
fn guest_sockopts() {
    guest_test("sockopts", &[]);
}

#[test]
fn guest_siginfo() {
    guest_test("siginfo", &[]);
}

#[test]
fn guest_reaper() {
    guest_test("reaper", &[]);
}

/// Processes sharing their parent's memory (CLONE_VM with a stack of the
/// caller's, vfork), descriptors, directory and handlers.
#[test]
fn guest_clone_vm() {
    guest_test("clone_vm", &[]);
}

/// Children of a parent that ignores SIGCHLD (or sets SA_NOCLDWAIT) are
/// reaped as they die: wait ends in ECHILD, no RUSAGE_CHILDREN.
#[test]
fn guest_wait_autoreap() {
    guest_test("wait_autoreap", &[]);
}

#[test]
fn guest_wait_clone() {
    guest_test("wait_clone", &[]);
}

#[test]
fn guest_record_locks() {
    guest_test("record_locks", &[]);
}

#[test]
fn guest_caps() {
    guest_test("caps", &[]);
}

#[test]
fn guest_mqueue() {
    guest_test("mqueue", &[]);
}

#[test]
fn guest_pty() {
    guest_test("pty", &[]);
}

#[test]
fn guest_extreme_times() {
    guest_test("extreme_times", &[]);
}

#[test]
fn guest_blocking_io() {
    guest_test("blocking_io", &[]);
}

#[test]
fn guest_splice() {
    guest_test("splice", &[]);
}

#[test]
fn guest_sched() {
    guest_test("sched", &[]);
}

#[test]
fn guest_job_control() {
    guest_test("job_control", &[]);
}

#[test]
fn guest_epoll() {
    guest_test("epoll", &[]);
}

#[test]
fn guest_waiting() {
    guest_test("waiting", &[]);
}

#[test]
fn guest_sigwait_threads() {
    guest_test("sigwait_threads", &[]);
}

#[test]
fn guest_cputime() {
    guest_test("cputime", &[]);
}

#[test]
fn guest_readiness() {
    guest_test("readiness", &[]);
}

#[test]
fn guest_fork_state() {
    guest_test("fork_state", &[]);
}

#[test]
fn guest_fifo() {
    guest_test("fifo", &[]);
}

#[test]
fn guest_pipe_size() {
    guest_test("pipe_size", &[]);
}

#[test]
fn guest_robust() {
    guest_test("robust", &[]);
}

#[test]
fn guest_rlimit_cpu() {
    guest_test("rlimit_cpu", &[]);
}

#[test]
fn guest_itimer_cpu() {
    guest_test("itimer_cpu", &[]);
}

#[test]
fn guest_itimer_exec() {
    guest_test("itimer_exec", &[]);
}

#[test]
fn guest_exec_threaded() {
    // The program execs a shell that exits 7 when it is alone in its
    // process; natively and under husk alike.
    let bin = guest_bin("exec_threaded");
    let argv = [bin.to_string_lossy().into_owned()];
    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 7, "natively: {}", nat.describe());
    let sbx = run(husk_do(&[], &argv), None);
    assert_eq!(sbx.code, 7, "under husk do: {}", sbx.describe());
}

#[test]
fn guest_identity() {
    guest_test("identity", &[]);
}

#[test]
fn guest_efault() {
    guest_test("efault", &[]);
}

#[test]
fn guest_proc_self() {
    // Odd arguments exercise /proc/self/cmdline's NUL-joined format.
    guest_test("proc_self", &["first arg", "", "x=y", "--last"]);
}

#[test]
fn guest_auxv() {
    guest_test("auxv", &["one", "two words"]);
}

#[test]
fn guest_inotify() {
    guest_test("inotify", &[]);
}

#[test]
fn guest_dnotify() {
    guest_test("dnotify", &[]);
}

#[test]
fn guest_dnotify_on_the_root_overlay() {
    guest_test("dnotify", &["/var/tmp"]);
}

#[test]
fn guest_inotify_on_the_root_overlay() {
    guest_test("inotify", &["/var/tmp"]);
}

/// inotify on files a gofer serves: a volume shown at the same path in
/// the guest, so native and sandboxed runs take the same argument. Its
/// rename(2) is also the plain rename a gofer-served directory gets.
#[test]
fn guest_inotify_on_a_gofer_volume() {
    let vol = crate::util::TempDir::new("inotify-vol");
    let dir = vol.path().to_string_lossy().into_owned();
    let argv = [guest_bin("inotify").to_string_lossy().into_owned(), dir.clone()];
    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 0, "inotify FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());
    let volume = format!("{dir}:{dir}");
    let sbx = run(husk_do(&["-v", &volume], &argv), None);
    assert_eq!(sbx.code, 0, "inotify on a gofer volume failed under husk do\n{}", sbx.describe());
}

#[test]
fn guest_xattr() {
    guest_test("xattr", &[]);
}

#[test]
fn guest_sysv_shm() {
    guest_test("sysv_shm", &[]);
}

#[test]
fn guest_sysv_sem() {
    guest_test("sysv_sem", &[]);
}

#[test]
fn guest_sysv_msg() {
    guest_test("sysv_msg", &[]);
}

#[test]
fn guest_seccomp() {
    guest_test("seccomp", &[]);
}

/// SECCOMP_RET_TRACE under a tracer with PTRACE_O_TRACESECCOMP: the
/// PTRACE_EVENT_SECCOMP stop, the call changed, skipped or filtered again.
#[test]
fn guest_seccomp_trace() {
    guest_test("seccomp_trace", &[]);
}

/// SECCOMP_RET_USER_NOTIF with a listener: NOTIF_RECV, NOTIF_SEND (a
/// value, an error, FLAG_CONTINUE), NOTIF_ID_VALID, poll, a signal ending
/// the wait, the listener's close, POLLHUP once the filter is unused.
#[test]
fn guest_seccomp_notify() {
    guest_test("seccomp_notify", &[]);
}

#[test]
fn guest_pidfd() {
    guest_test("pidfd", &[]);
}

#[test]
fn guest_ptrace() {
    guest_test("ptrace", &[]);
}

/// SINGLESTEP along a nop sled, GETFPREGS/GETREGSET NT_PRFPREG/SETFPREGS
/// on xmm registers, the TRACECLONE and TRACEEXEC events.
#[test]
fn guest_ptrace_requests() {
    guest_test("ptrace_requests", &[]);
}

/// A tracer taking hold of a process stopped by job control, as strace
/// starts a program: the seized process re-traps into a group-stop, a
/// SIGCONT after PTRACE_LISTEN traps again and stops for its delivery
/// (ignored signals too), and the following execve stops at its entry.
#[test]
fn guest_ptrace_seize_stopped() {
    guest_test("ptrace_seize_stopped", &[]);
}

/// Python's `os.pidfd_open` and `select`, as asyncio's pidfd child
/// watcher uses them: not readable while the child runs, readable once it
/// exited, then reaped with `waitid(P_PIDFD)`.
#[test]
fn python_waits_for_a_child_through_a_pidfd() {
    let script = "import os, select, subprocess\n\
                  p = subprocess.Popen(['sleep', '0.3'])\n\
                  fd = os.pidfd_open(p.pid)\n\
                  assert select.select([fd], [], [], 0)[0] == []\n\
                  assert select.select([fd], [], [], 20)[0] == [fd]\n\
                  r = os.waitid(os.P_PIDFD, fd, os.WEXITED)\n\
                  print(r.si_pid == p.pid, r.si_status)\n";
    let argv = ["/usr/bin/python3", "-c", script];
    let nat = run(native(&argv), None);
    assert_eq!((nat.code, nat.stdout_str().as_str()), (0, "True 0\n"), "natively: {}", nat.describe());
    let sbx = run(husk_do(&[], &argv), None);
    assert_eq!((sbx.code, sbx.stdout_str().as_str()), (0, "True 0\n"), "under husk: {}", sbx.describe());
}

#[test]
fn guest_sync_file_range() {
    guest_test("sync_file_range", &[]);
}

#[test]
fn guest_tool_calls() {
    guest_test("tool_calls", &[]);
}

#[test]
fn guest_acl() {
    guest_test("acl", &[]);
}

/// ACLs on the overlay (the image's /var/tmp, copied up).
#[test]
fn guest_acl_overlay() {
    guest_test("acl", &["/var/tmp"]);
}

#[test]
fn guest_sgid_create() {
    guest_test("sgid_create", &[]);
}

/// The set-group-ID rule on the overlay (the image's /var/tmp).
#[test]
fn guest_sgid_create_overlay() {
    guest_test("sgid_create", &["/var/tmp"]);
}

#[test]
fn guest_hugetlb() {
    guest_test("hugetlb", &[]);
}

/// FIFOs that are files a gofer serves: one made in a volume (and a hard
/// link to it), and one the host made in the root filesystem's image
/// (seen through the overlay). The volume shows at the same path in the
/// guest, so native and sandboxed runs take the same arguments.
#[test]
fn guest_fifo_files() {
    let vol = crate::util::TempDir::new("fifo-vol");
    let img = crate::util::TempDir::new("fifo-img");
    let fifo = img.path().join("fifo");
    let made = run(native(&[std::ffi::OsStr::new("mkfifo"), fifo.as_os_str()]), None);
    assert_eq!(made.code, 0, "mkfifo: {}", made.describe());
    let (vol_s, fifo_s) = (vol.path().to_string_lossy().into_owned(), fifo.to_string_lossy().into_owned());
    let argv = [guest_bin("fifo_files").to_string_lossy().into_owned(), vol_s.clone(), fifo_s];
    let nat = run(native(&argv), None);
    assert_eq!(nat.code, 0, "fifo_files FAILS NATIVELY: the test is wrong, not husk\n{}", nat.describe());
    let volume = format!("{vol_s}:{vol_s}");
    let sbx = run(husk_do(&["-v", &volume], &argv), None);
    assert_eq!(sbx.code, 0, "fifo_files failed under husk do\n{}", sbx.describe());
    // A FIFO in the overlay's upper layer, linked there too.
    let sbx = run(husk_do(&[], &[argv[0].as_str(), "/var/tmp"]), None);
    assert_eq!(sbx.code, 0, "fifo_files in the overlay failed under husk do\n{}", sbx.describe());
}

#[test]
fn guest_mounts() {
    guest_test("mounts", &[]);
}

/// pivot_root onto a tmpfs in a new mount namespace, the old root
/// detached, and the refusals; pivot_root, getcwd and mountinfo inside a
/// chroot whose root is a mount.
#[test]
fn guest_mounts_pivot_root() {
    guest_test("pivot_root", &[]);
}

/// What read-only, noexec, nosuid, nodev and the atime flags of a mount
/// enforce and show (statfs, mountinfo), also through a working
/// directory reached before a remount; tmpfs size= and nr_inodes=.
#[test]
fn guest_mount_flags() {
    guest_test("mount_flags", &[]);
}

/// devpts mounted by the guest, and shared/slave/private propagation in
/// mountinfo.
#[test]
fn guest_mounts_devpts_and_propagation() {
    guest_test("devpts_mount", &[]);
}

#[test]
fn guest_tty_pgrp() {
    guest_test("tty_pgrp", &[]);
}

#[test]
fn guest_fionread() {
    guest_test("fionread", &[]);
}

#[test]
fn guest_rw_vectors() {
    guest_test("rw_vectors", &[]);
}

#[test]
fn guest_proc_load() {
    guest_test("proc_load", &[]);
}

#[test]
fn guest_proc_net() {
    guest_test("proc_net", &[]);
}

#[test]
fn guest_proc_maps() {
    guest_test("proc_maps", &[]);
}

#[test]
fn guest_proc_mem() {
    guest_test("proc_mem", &[]);
}

#[test]
fn guest_proc_writable() {
    guest_test("proc_writable", &[]);
}

#[test]
fn guest_kill_exiting() {
    guest_test("kill_exiting", &[]);
}

#[test]
fn guest_sigio() {
    guest_test("sigio", &[]);
}
