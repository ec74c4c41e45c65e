//! Shared helpers: locating `husk`, building the guest programs, running a
//! command natively or under `husk do` with a hard timeout.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Every command (native or sandboxed) is killed after this long and the
/// test fails: a test never hangs.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// Environment variable set for every run; `auxv.c` and `proc_self.c` look
/// for it in the guest's environment.
pub const TEST_ENV: (&str, &str) = ("HUSK_TEST_ENV", "marker");

/// The guest C programs built by [`guest_bin`] (escape_probe included).
pub const GUEST_PROGRAMS: &[&str] = &[
    "fileio",
    "rlimit_fsize",
    "blocking_io",
    "stat",
    "dirs",
    "fdtable",
    "memory",
    "mremap",
    "mmap_shared_file",
    "mmap_edges",
    "mlock",
    "mempolicy",
    "memfd_seals",
    "identity",
    "efault",
    "proc_self",
    "proc_maps",
    "proc_mem",
    "proc_net",
    "proc_writable",
    "auxv",
    "threads",
    "spawn_many",
    "waiting",
    "idle_epoll",
    "epoll",
    "unix_sockets",
    "unix_dgram",
    "inet_sockets",
    "mmsg",
    "sockopts",
    "siginfo",
    "reaper",
    "wait_clone",
    "clone_vm",
    "wait_autoreap",
    "record_locks",
    "pty",
    "mqueue",
    "caps",
    "extreme_times",
    "job_control",
    "sched",
    "splice",
    "exec_threaded",
    "sigwait_threads",
    "cputime",
    "readiness",
    "fork_state",
    "fifo",
    "pipe_size",
    "robust",
    "rlimit_cpu",
    "itimer_cpu",
    "itimer_exec",
    "inotify",
    "dnotify",
    "xattr",
    "sysv_shm",
    "sysv_sem",
    "sysv_msg",
    "escape_probe",
    "seccomp",
    "seccomp_trace",
    "seccomp_notify",
    "pidfd",
    "fifo_files",
    "sync_file_range",
    "hugetlb",
    "acl",
    "mounts",
    "pivot_root",
    "mount_flags",
    "devpts_mount",
    "tty_pgrp",
    "fionread",
    "rw_vectors",
    "files",
    "proc_load",
    "kill_exiting",
    "tool_calls",
    "ptrace",
    "ptrace_requests",
    "ptrace_seize_stopped",
    "ping_socket",
    "process_vm",
    "membarrier",
    "sched_attr",
    "namespaces",
    "unix_scm",
    "sock_shutdown",
    "mmsg_exact",
    "tcp_exact",
    "tcp_lifecycle",
    "tcp_oob",
    "tcp_data",
    "tcp_cork",
    "udp_lite_header",
    "tcp_ports",
    "udp_errqueue",
    "udp_exact",
    "multicast",
    "unix_oob",
    "unix_edges",
    "unix_sndbuf",
    "unix_late_bind",
    "sgid_create",
    "sock_names",
    "sigio",
];

/// The `husk` binary cargo built for this test.
pub fn husk_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_husk"))
}

/// `tests/guest/` in the source tree.
pub fn guest_src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest")
}

/// A name unique across threads, test processes and runs.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}-{nanos:x}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The result of one command.
#[derive(Debug)]
pub struct Run {
    /// What was run (for messages).
    pub what: String,
    /// Exit code; 128+N when killed by signal N (shell convention).
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Run {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    /// A multi-line description for assertion messages.
    pub fn describe(&self) -> String {
        format!(
            "command: {}\nexit status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}\n--------------",
            self.what,
            self.code,
            tail(&self.stdout_str(), 60),
            tail(&self.stderr_str(), 60),
        )
    }
    /// Panic unless the exit status is `want`.
    pub fn assert_code(&self, want: i32) {
        assert_eq!(self.code, want, "unexpected exit status\n{}", self.describe());
    }
}

/// The last `n` lines of `s`.
pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let skip = lines.len().saturating_sub(n);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("[... {skip} lines omitted ...]\n"));
    }
    out.push_str(&lines[skip..].join("\n"));
    out
}

fn exit_code(st: ExitStatus) -> i32 {
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(sig)) => 128 + sig,
        (None, None) => -1,
    }
}

fn describe_cmd(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
            s.push_str(&format!(" {a:?}"));
        } else {
            s.push(' ');
            s.push_str(&a);
        }
    }
    s
}

fn reader<R: Read + Send + 'static>(mut r: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Run `cmd` to completion with `stdin` as its input (empty input if None),
/// capturing stdout and stderr. The command runs in its own process group;
/// after [`TIMEOUT`] the whole group is SIGKILLed and the test fails.
pub fn run(mut cmd: Command, stdin: Option<&[u8]>) -> Run {
    let what = describe_cmd(&cmd);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => panic!("cannot start `{what}`: {e}"),
    };
    let pgid = child.id();
    let input = stdin.map(<[u8]>::to_vec).unwrap_or_default();
    if let Some(mut w) = child.stdin.take() {
        // A writer thread, so that a child that never reads cannot block us.
        thread::spawn(move || {
            let _ = w.write_all(&input);
        });
    }
    let out_rx = child.stdout.take().map(reader);
    let err_rx = child.stderr.take().map(reader);

    let start = Instant::now();
    let timed_out = loop {
        if exited_unreaped(pgid) {
            break false;
        }
        if start.elapsed() >= TIMEOUT {
            break true;
        }
        thread::sleep(Duration::from_millis(5));
    };
    // The leader is a zombie (or still running, on timeout), so its pid and
    // process group cannot have been reused: kill whatever is left of the
    // group (helpers that outlived the leader, or everything on timeout),
    // then reap.
    kill_group(pgid);
    let status = match child.wait() {
        Ok(st) => Some(st),
        Err(e) => panic!("waiting for `{what}`: {e}"),
    };
    let status = if timed_out { None } else { status };
    // Helpers that escaped the process group may still hold the pipes open:
    // give the readers a bounded time to finish, never forever.
    let collect = |rx: Option<mpsc::Receiver<Vec<u8>>>| -> Vec<u8> {
        rx.and_then(|rx| rx.recv_timeout(Duration::from_secs(10)).ok()).unwrap_or_default()
    };
    let stdout = collect(out_rx);
    let stderr = collect(err_rx);
    let run = Run { what, code: status.map(exit_code).unwrap_or(-1), stdout, stderr };
    if timed_out {
        panic!("timed out after {} s and was killed\n{}", TIMEOUT.as_secs(), run.describe());
    }
    run
}

/// Has the child `pid` exited? Does not reap it (WNOWAIT), so the pid stays
/// reserved until `Child::wait`.
fn exited_unreaped(pid: u32) -> bool {
    let pid: libc::id_t = pid;
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid(2) writes only into `info`, which we own; WNOWAIT leaves
    // the child reapable by std's `Child::wait` later.
    let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    // SAFETY: si_pid is valid to read for the WEXITED result waitid filled
    // in (and 0 when no child has changed state yet).
    r == 0 && unsafe { info.si_pid() } != 0
}

pub fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // SAFETY: kill(2) with a negative pid signals the process group we
    // created for the child (process_group(0) made it the group leader);
    // it touches no memory of ours.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// A command run natively, with the test environment.
pub fn native<S: AsRef<OsStr>>(argv: &[S]) -> Command {
    let (prog, args) = argv.split_first().expect("empty argv");
    let mut cmd = Command::new(prog);
    cmd.args(args).env(TEST_ENV.0, TEST_ENV.1).current_dir("/");
    cmd
}

/// `husk do [extra] [$HUSK_E2E_ARGS] -- argv…`, with the test environment:
/// the guest's environment is clean but for the caller's PATH and the
/// test's marker, passed on so that runs compare with native ones.
///
/// `HUSK_E2E_ARGS` (whitespace-separated) adds flags to every sandboxed run,
/// e.g. `HUSK_E2E_ARGS="--platform ptrace --strace"`.
pub fn husk_do<S: AsRef<OsStr>>(extra: &[&str], argv: &[S]) -> Command {
    let mut cmd = Command::new(husk_bin());
    cmd.arg("do");
    cmd.args(["--env-keep", "PATH", "--env-keep", TEST_ENV.0]);
    cmd.args(extra);
    if let Some(flags) = std::env::var_os("HUSK_E2E_ARGS") {
        let flags = flags.to_string_lossy().into_owned();
        cmd.args(flags.split_whitespace());
    }
    cmd.arg("--");
    cmd.args(argv.iter().map(|a| a.as_ref().to_os_string()).collect::<Vec<OsString>>());
    cmd.env(TEST_ENV.0, TEST_ENV.1).current_dir("/");
    cmd
}

/// Run `argv` natively and under `husk do`; assert both exit statuses and
/// stdouts are identical. Returns (native, sandboxed).
pub fn assert_same_as_native<S: AsRef<OsStr>>(argv: &[S], stdin: Option<&[u8]>) -> (Run, Run) {
    let nat = run(native(argv), stdin);
    let sbx = run(husk_do(&[], argv), stdin);
    if nat.code != sbx.code {
        panic!(
            "exit status differs: native {} vs husk {}\n== native ==\n{}\n== husk ==\n{}",
            nat.code,
            sbx.code,
            nat.describe(),
            sbx.describe()
        );
    }
    if nat.stdout != sbx.stdout {
        let (n, s) = (nat.stdout_str(), sbx.stdout_str());
        let first_diff = n
            .lines()
            .zip(s.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("first difference at line {}:\n  native: {a}\n  husk:   {b}", i + 1))
            .unwrap_or_else(|| {
                format!(
                    "one output is a prefix of the other ({} vs {} lines, {} vs {} bytes)",
                    n.lines().count(),
                    s.lines().count(),
                    nat.stdout.len(),
                    sbx.stdout.len()
                )
            });
        panic!(
            "stdout differs from the native run\n{first_diff}\n== native ==\n{}\n== husk ==\n{}",
            nat.describe(),
            sbx.describe()
        );
    }
    (nat, sbx)
}

/// Path of the statically linked guest program `name` (from
/// `tests/guest/<name>.c`). All programs are compiled on first use, once per
/// test process, into `$CARGO_TARGET_TMPDIR/guest-bin/`.
/// The children of `pid` (from /proc/*/stat).
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else { continue };
        // The ppid is the second field after the parenthesized command.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        if rest.split_whitespace().nth(1).and_then(|s| s.parse::<u32>().ok()) == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// The command line of `pid`, its arguments joined by spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

pub fn guest_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = match BUILT.get_or_init(build_guests) {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    assert!(GUEST_PROGRAMS.contains(&name), "unknown guest program {name}");
    dir.join(name)
}

fn build_guests() -> Result<PathBuf, String> {
    match Command::new("cc").arg("--version").stdout(Stdio::null()).status() {
        Ok(st) if st.success() => {}
        Ok(st) => return Err(format!("`cc --version` failed ({st}); a C compiler is needed")),
        Err(e) => {
            return Err(format!(
                "cannot run the system C compiler `cc` ({e}). The e2e tests compile \
                 the guest programs in tests/guest/ with it: install gcc and the \
                 static C library (Debian: apt-get install gcc libc6-dev)."
            ))
        }
    }
    let src = guest_src_dir();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-bin");
    std::fs::create_dir_all(&out).map_err(|e| format!("mkdir {}: {e}", out.display()))?;
    let results: Vec<Result<(), String>> = thread::scope(|s| {
        let handles: Vec<_> = GUEST_PROGRAMS
            .iter()
            .map(|name| {
                let (src, out) = (&src, &out);
                s.spawn(move || compile_one(src, out, name))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("compiler thread panicked".into()))).collect()
    });
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("\n"))
    }
}

fn compile_one(src: &Path, out: &Path, name: &str) -> Result<(), String> {
    let c = src.join(format!("{name}.c"));
    // Compile to a private name, then rename: concurrent test processes
    // never see a half-written binary.
    let tmp = out.join(format!(".{name}.{}.tmp", std::process::id()));
    let res = Command::new("cc")
        .args(["-static", "-O1", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&tmp)
        .arg("-I")
        .arg(src)
        .arg(&c)
        .output()
        .map_err(|e| format!("running cc for {}: {e}", c.display()))?;
    if !res.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!(
            "compiling {} failed ({}):\n{}",
            c.display(),
            res.status,
            String::from_utf8_lossy(&res.stderr)
        ));
    }
    std::fs::rename(&tmp, out.join(name)).map_err(|e| format!("rename {}: {e}", tmp.display()))
}

/// A temporary directory under `$CARGO_TARGET_TMPDIR`, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(unique(prefix));
        if let Err(e) = std::fs::create_dir_all(&p) {
            panic!("mkdir {}: {e}", p.display());
        }
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
