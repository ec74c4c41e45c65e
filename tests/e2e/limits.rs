//! The sandbox limits through `husk do`: `--timeout` (SIGTERM, SIGKILL
//! after `--timeout-grace`, exit 124), `--cpu-limit` (SIGXCPU, then
//! SIGKILL), `--pids-limit` (EAGAIN, the shell lives on) and `--nofile`
//! (a ceiling root cannot raise), each with its `limit.*` audit record.
//! Times are bounded generously: CI machines are loaded.

use crate::util::{husk_do, run, unique, Run, TempDir};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest any of these sandboxes may take to end.
const ENDS_WITHIN: Duration = Duration::from_secs(20);

/// `husk do --audit-log LOG FLAGS -- ARGV` in `dir`, with `mark` in the
/// environment (sentry and gofer inherit it); the run and how long it took.
fn limited(dir: &Path, flags: &[&str], argv: &[&str], mark: &str) -> (Run, Duration, Vec<Value>) {
    let log = dir.join("audit.log");
    let mut all = vec!["--audit-log", log.to_str().unwrap()];
    all.extend_from_slice(flags);
    let mut cmd = husk_do(&all, argv);
    cmd.current_dir(dir).env("HUSK_LIMITS_MARK", mark);
    let start = Instant::now();
    let r = run(cmd, None);
    let took = start.elapsed();
    let text = std::fs::read_to_string(&log).unwrap();
    let recs = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (r, took, recs)
}

fn of_type<'a>(recs: &'a [Value], t: &str) -> Vec<&'a Value> {
    recs.iter().filter(|r| r["type"] == t).collect()
}

/// Whether a live process holds `mark` in its environment.
fn marked_process_left(mark: &str) -> bool {
    let want = format!("HUSK_LIMITS_MARK={mark}");
    let Ok(procs) = std::fs::read_dir("/proc") else { return false };
    procs.flatten().any(|p| {
        let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|s| s.trim_start().starts_with('Z'));
        let env = std::fs::read(p.path().join("environ")).unwrap_or_default();
        !zombie && env.split(|&b| b == 0).any(|e| e == want.as_bytes())
    })
}

/// Waits (bounded) for every process marked `mark` to be gone.
fn none_left(mark: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while marked_process_left(mark) {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

#[test]
fn a_timeout_ends_the_sandbox_with_124_and_leaves_nothing() {
    let dir = TempDir::new("limits-timeout");
    let mark = unique("timeout");
    let (r, took, recs) = limited(dir.path(), &["--timeout", "2s"], &["sleep", "100"], &mark);
    r.assert_code(124);
    assert!(took >= Duration::from_millis(1900) && took < ENDS_WITHIN, "took {took:?}\n{}", r.describe());
    let t = of_type(&recs, "limit.timeout");
    assert_eq!(t.len(), 1, "{recs:#?}");
    assert_eq!((&t[0]["timeout_ms"], &t[0]["grace_ms"]), (&2000.into(), &5000.into()));
    assert_eq!(of_type(&recs, "sandbox.exit")[0]["reason"], "timeout");
    let config = &recs[0]["config"];
    assert_eq!((&config["timeout_ms"], &config["pids_limit"]), (&2000.into(), &4096.into()), "{config}");
    assert!(none_left(&mark), "a process of the sandbox outlived it");
}

#[test]
fn a_guest_that_ignores_sigterm_is_killed_after_the_grace() {
    let dir = TempDir::new("limits-grace");
    let mark = unique("grace");
    let flags = ["--timeout", "1s", "--timeout-grace", "1500ms"];
    let (r, took, recs) = limited(dir.path(), &flags, &["/bin/sh", "-c", "trap '' TERM; sleep 100; echo woke"], &mark);
    r.assert_code(124);
    assert!(!r.stdout_str().contains("woke"), "{}", r.describe());
    assert!(took >= Duration::from_millis(2400) && took < ENDS_WITHIN, "took {took:?}\n{}", r.describe());
    let init_exit = of_type(&recs, "process.exit").into_iter().find(|e| e["pid"] == 1).unwrap();
    assert_eq!(init_exit["signal"], 9, "{recs:#?}");
    assert_eq!(of_type(&recs, "limit.timeout").len(), 1);
    assert!(none_left(&mark), "a process of the sandbox outlived it");
}

#[test]
fn a_cpu_limit_ends_a_busy_loop() {
    let dir = TempDir::new("limits-cpu");
    let mark = unique("cpu");
    let (r, took, recs) = limited(dir.path(), &["--cpu-limit", "1"], &["/bin/sh", "-c", "while :; do :; done"], &mark);
    // SIGXCPU (128+24), or SIGKILL a second later.
    assert!([152, 137].contains(&r.code), "{}", r.describe());
    assert!(took < ENDS_WITHIN, "took {took:?}");
    let c = of_type(&recs, "limit.cpu");
    assert_eq!(c.len(), 1, "{recs:#?}");
    assert_eq!(c[0]["limit_ms"], 1000);
    assert!(c[0]["usage_ms"].as_u64().unwrap() >= 1000, "{c:?}");
    assert_eq!(of_type(&recs, "sandbox.exit")[0]["reason"], "cpu");
    assert!(none_left(&mark));
}

#[test]
fn forks_past_the_pids_limit_fail_and_the_shell_lives_on() {
    let dir = TempDir::new("limits-pids");
    let mark = unique("pids");
    // The inner shell forks sleeps until refused (dash then gives up);
    // the outer one goes on. Both shells and six sleeps make the eight.
    let script = "sh -c 'for i in 1 2 3 4 5 6 7 8 9; do sleep 30 & done'; echo after $?; cat /sys/fs/cgroup/pids.max";
    let (r, took, recs) = limited(dir.path(), &["--pids-limit", "8"], &["/bin/sh", "-c", script], &mark);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "after 2\n8\n", "{}", r.describe());
    assert!(r.stderr_str().contains("Cannot fork"), "{}", r.describe());
    assert!(took < ENDS_WITHIN, "took {took:?}");
    let p = of_type(&recs, "limit.pids");
    assert_eq!(p.len(), 1, "one record per breach: {recs:#?}");
    assert_eq!((&p[0]["limit"], &p[0]["comm"]), (&8.into(), &"sh".into()));
    assert!(none_left(&mark), "the sleeps outlived the sandbox");
}

#[test]
fn husk_do_has_a_pids_limit_by_default() {
    let r = run(husk_do(&[], &["cat", "/sys/fs/cgroup/pids.max"]), None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "4096\n");
}

#[test]
fn the_nofile_ceiling_holds_for_root_too() {
    let dir = TempDir::new("limits-nofile");
    let mark = unique("nofile");
    let script = r#"
import os, resource
print(resource.getrlimit(resource.RLIMIT_NOFILE))
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 65))
    print("raised")
except (ValueError, OSError):
    print("refused")
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print(e.errno == 24, len(fds) < 64)
"#;
    let (r, _, recs) = limited(dir.path(), &["--nofile", "64"], &["/usr/bin/python3", "-c", script], &mark);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "(64, 64)\nrefused\nTrue True\n", "{}", r.describe());
    let n = of_type(&recs, "limit.nofile");
    assert_eq!(n.len(), 1, "{recs:#?}");
    assert_eq!((&n[0]["limit"], &n[0]["comm"]), (&64.into(), &"python3".into()));
}

/// The pids line of /proc/PID/cgroup: the cgroup's directory.
fn pids_cgroup(pid: &str) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let rel = path.trim_start_matches('/');
        match (id, controllers) {
            ("0", "") => Some(Path::new("/sys/fs/cgroup").join(rel)),
            (_, c) if c.split(',').any(|c| c == "pids") => Some(Path::new("/sys/fs/cgroup/pids").join(rel)),
            _ => None,
        }
    })
}

/// Where the host lets it (root, a writable hierarchy), `husk do` puts
/// its sentry and gofer in a cgroup of their own below its own, capped at
/// two host tasks per guest task plus the sentry's own, and removes it.
#[test]
fn husk_do_runs_in_a_host_cgroup_of_its_own_where_it_may() {
    let mark = unique("cgroup");
    let mut cmd = husk_do(&["--pids-limit", "100"], &["sleep", "3"]);
    cmd.env("HUSK_LIMITS_MARK", &mark);
    let waiter = std::thread::spawn(move || run(cmd, None));
    let want = format!("HUSK_LIMITS_MARK={mark}");
    let mut found = None;
    let end = Instant::now() + Duration::from_secs(10);
    while found.is_none() && Instant::now() < end && !waiter.is_finished() {
        std::thread::sleep(Duration::from_millis(100));
        let procs = std::fs::read_dir("/proc").unwrap();
        found = procs.flatten().find_map(|p| {
            let env = std::fs::read(p.path().join("environ")).unwrap_or_default();
            let ours = env.split(|&b| b == 0).any(|e| e == want.as_bytes());
            let dir = pids_cgroup(&p.file_name().to_string_lossy())?;
            let max = std::fs::read_to_string(dir.join("pids.max")).ok()?;
            (ours && dir.file_name()?.to_string_lossy().starts_with("husk-do-")).then_some((dir, max))
        });
    }
    let r = waiter.join().unwrap();
    r.assert_code(0);
    let Some((dir, max)) = found else {
        eprintln!("no cgroup of husk do's own here (no privilege or no writable hierarchy): nothing to check");
        return;
    };
    assert_eq!(max, "264\n", "2 × 100 guest tasks + 64");
    let end = Instant::now() + Duration::from_secs(10);
    while dir.exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!dir.exists(), "{} left behind", dir.display());

    // One a killed husk do left (its pid gone) is removed by the next.
    let dead = std::process::Command::new("true").spawn().unwrap();
    let pid = dead.id();
    let _ = dead.wait_with_output();
    let stale = dir.with_file_name(format!("husk-do-{pid}"));
    std::fs::create_dir(&stale).unwrap();
    run(husk_do(&[], &["true"]), None).assert_code(0);
    assert!(!stale.exists(), "{} left behind", stale.display());
}
