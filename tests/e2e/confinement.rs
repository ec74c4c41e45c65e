//! The processes of a sandbox confine themselves: the sentry, every stub
//! process holding guest memory, and the gofer run with no_new_privs under
//! a seccomp filter; the sentry also leaves the host's namespaces, sees an
//! empty root and holds no capabilities, in every thread (its egress
//! thread keeps the outer network namespace only).

use crate::util::{children, cmdline, husk_bin};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn status_field(pid: u32, key: &str) -> Option<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(|v| v.trim().to_string()))
}

#[test]
fn sentry_stubs_and_gofer_run_under_seccomp() {
    // The guest says it runs (so every process and thread of the sandbox
    // has finished confining itself: a stub is seen by the test as soon as
    // it is forked, before it installs its own filter), then blocks
    // reading stdin until the test has looked around. With an audit log,
    // so that its flusher thread is looked at too.
    let log = std::env::temp_dir().join(format!("husk-confinement-{}.log", std::process::id()));
    let mut child = Command::new(husk_bin())
        .arg("--audit-log")
        .arg(&log)
        .args(["do", "--", "/bin/sh", "-c", "echo ready; read x; echo done"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n", "the guest did not start");
    let deadline = Instant::now() + Duration::from_secs(20);
    let (sentry, gofer, stubs) = loop {
        let kids = children(child.id());
        let sentry = kids.iter().copied().find(|&p| cmdline(p).contains(" boot "));
        let gofer = kids.iter().copied().find(|&p| cmdline(p).contains(" gofer "));
        if let (Some(s), Some(g)) = (sentry, gofer) {
            let stubs = children(s);
            if !stubs.is_empty() {
                break (s, g, stubs);
            }
        }
        assert!(Instant::now() < deadline, "the sandbox's processes did not appear");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut checked = vec![("sentry", sentry), ("gofer", gofer)];
    checked.extend(stubs.iter().map(|&p| ("stub", p)));
    let mut failures = Vec::new();
    for (what, pid) in &checked {
        let seccomp = status_field(*pid, "Seccomp");
        let nnp = status_field(*pid, "NoNewPrivs");
        if seccomp.as_deref() != Some("2") || nnp.as_deref() != Some("1") {
            failures.push(format!("{what} {pid}: Seccomp {seccomp:?}, NoNewPrivs {nnp:?}"));
        }
    }
    // Stubs carry their own filter on top of the sentry's.
    for &pid in &stubs {
        let n: u32 = status_field(pid, "Seccomp_filters").and_then(|v| v.parse().ok()).unwrap_or(0);
        if n < 3 {
            failures.push(format!("stub {pid}: only {n} seccomp filters"));
        }
    }
    // The sentry keeps no capabilities, sees an empty root and has left
    // the host's namespaces.
    if status_field(sentry, "CapEff").as_deref() != Some("0000000000000000") {
        failures.push(format!("sentry has capabilities: {:?}", status_field(sentry, "CapEff")));
    }
    match std::fs::read_dir(format!("/proc/{sentry}/root")) {
        Ok(entries) => {
            let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
            if !names.is_empty() {
                failures.push(format!("the sentry's root is not empty: {names:?}"));
            }
        }
        Err(e) => failures.push(format!("cannot list the sentry's root: {e}")),
    }
    for ns in ["mnt", "net", "ipc", "uts"] {
        let mine = std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
        let its = std::fs::read_link(format!("/proc/{sentry}/ns/{ns}")).unwrap();
        if mine == its {
            failures.push(format!("the sentry shares the host's {ns} namespace"));
        }
    }
    failures.extend(thread_failures(sentry));
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(failures.is_empty(), "unconfined processes: {failures:?}");
    assert_eq!(rest, "done\n");
    assert!(status.success());
}

/// Every thread of the sentry is confined as the sentry is (capabilities
/// and the mount namespace are per thread); the egress gateway's thread
/// stays in the outer network namespace (here the host's), and only it.
fn thread_failures(sentry: u32) -> Vec<String> {
    let mut failures = Vec::new();
    let host = |ns: &str| std::fs::read_link(format!("/proc/self/ns/{ns}")).unwrap();
    let mut saw_gateway = false;
    for t in std::fs::read_dir(format!("/proc/{sentry}/task")).unwrap().flatten() {
        let base = t.path();
        let comm = std::fs::read_to_string(base.join("comm")).unwrap_or_default().trim().to_string();
        let status = std::fs::read_to_string(base.join("status")).unwrap_or_default();
        if !status.lines().any(|l| l == "CapEff:\t0000000000000000") {
            failures.push(format!("sentry thread {comm} has capabilities"));
        }
        let empty = std::fs::read_dir(base.join("root")).is_ok_and(|mut entries| entries.next().is_none());
        if !empty {
            failures.push(format!("sentry thread {comm} sees a root that is not empty"));
        }
        if std::fs::read_link(base.join("ns/mnt")).ok() == Some(host("mnt")) {
            failures.push(format!("sentry thread {comm} shares the host's mount namespace"));
        }
        let in_host_net = std::fs::read_link(base.join("ns/net")).ok() == Some(host("net"));
        if comm == "egress-outer" {
            saw_gateway = true;
            if !in_host_net {
                failures.push("the egress thread left the outer network namespace".into());
            }
        } else if in_host_net {
            failures.push(format!("sentry thread {comm} shares the host's network namespace"));
        }
    }
    if !saw_gateway {
        failures.push("the sentry has no egress thread".into());
    }
    failures
}

/// Starts `husk do -- argv` in a process group of its own, waits for
/// `ready` on its stdout, then sends `sig` to the whole group, as a
/// terminal's Ctrl-C does. Returns the exit status and the rest of stdout.
fn signal_group_after_ready(argv: &[&str], sig: i32) -> (Option<i32>, Option<i32>, String) {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut child = Command::new(husk_bin())
        .arg("do")
        .arg("--")
        .args(argv)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    // Give the guest time to block (in sleep), as a person pressing Ctrl-C
    // would: Python checks for a signal that came earlier only at its next
    // bytecode boundary.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pgid = i32::try_from(child.id()).unwrap();
    // SAFETY: sending a signal to the test's own child process group.
    assert_eq!(unsafe { libc::kill(-pgid, sig) }, 0);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    (status.code(), status.signal(), rest)
}

#[test]
fn ctrl_c_reaches_the_guests_handler() {
    let script = "import signal, sys, time\n\
                  def h(*a):\n    print('got INT', flush=True)\n    sys.exit(3)\n\
                  signal.signal(signal.SIGINT, h)\n\
                  print('ready', flush=True)\n\
                  time.sleep(20)\n";
    let (code, _, rest) = signal_group_after_ready(&["/usr/bin/python3", "-c", script], libc::SIGINT);
    assert_eq!(rest, "got INT\n");
    assert_eq!(code, Some(3));
}

#[test]
fn ctrl_c_kills_a_guest_without_a_handler_with_130() {
    let (code, _, _) = signal_group_after_ready(&["/bin/sh", "-c", "echo ready; exec sleep 20"], libc::SIGINT);
    assert_eq!(code, Some(130));
}
