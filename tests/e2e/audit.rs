//! The audit log through `husk do`: the records of a session in order,
//! with argv and statuses; `husk audit verify` on intact and tampered
//! logs; an exec record that outlives its process's SIGKILL; a log the
//! guest can neither see nor write; an OOM kill's record; a failing log
//! stopping the sandbox, or not with --audit-fail-open; changes to
//! watched paths and to the filesystem view.

use crate::util::{husk_bin, husk_do, kill_group, run, Run, TempDir, TIMEOUT};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// `husk do --audit-log LOG [extra] -- sh -c script`, run in `dir`.
fn audited(dir: &Path, log: &Path, extra: &[&str], script: &str) -> Run {
    let mut flags = vec!["--audit-log", log.to_str().unwrap()];
    flags.extend_from_slice(extra);
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", script]);
    cmd.current_dir(dir);
    run(cmd, None)
}

fn records(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

fn verify(log: &Path) -> Run {
    let mut cmd = Command::new(husk_bin());
    cmd.args(["audit", "verify"]).arg(log);
    run(cmd, None)
}

fn types(recs: &[Value]) -> Vec<&str> {
    recs.iter().map(|r| r["type"].as_str().unwrap()).collect()
}

fn argv(r: &Value) -> Vec<&str> {
    r["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect()
}

#[test]
fn a_session_leaves_its_records_in_order_and_the_log_verifies() {
    let dir = TempDir::new("audit-session");
    let d = dir.path();
    std::fs::write(d.join("p.py"), "import sys\nprint('py', *sys.argv[1:])\n").unwrap();
    std::fs::write(d.join("s.sh"), "#!/bin/sh\necho script \"$@\"\n").unwrap();
    std::fs::set_permissions(d.join("s.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let log = d.join("audit.log");
    let script = "echo hi; /usr/bin/python3 p.py one; ./s.sh a b; exit 3";
    // (Only /etc watched, and no bytecode written: no file.* records.)
    let keep = ["--env-keep", "AUDIT_SECRET", "--env-keep", "PYTHONDONTWRITEBYTECODE"];
    let flags = [&["--audit-log", log.to_str().unwrap(), "--audit-watch", "/etc/**"], &keep[..]].concat();
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", script]);
    cmd.current_dir(d).env("AUDIT_SECRET", "hunter2-value").env("PYTHONDONTWRITEBYTECODE", "1");
    let r = run(cmd, None);
    r.assert_code(3);
    assert_eq!(r.stdout_str(), "hi\npy one\nscript a b\n", "{}", r.describe());

    let recs = records(&log);
    assert_eq!(
        types(&recs),
        [
            "sandbox.create",
            "process.exec",
            "sandbox.start",
            "process.exec",
            "process.exit",
            "process.exec",
            "process.exit",
            "process.exit",
            "sandbox.exit"
        ],
        "{recs:#?}"
    );
    let sandbox = recs[0]["sandbox"].as_str().unwrap();
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r["seq"], i, "{r}");
        assert_eq!(r["sandbox"], sandbox, "{r}");
        assert!(r["ts"].as_str().unwrap().ends_with('Z'), "{r}");
    }
    assert_eq!(recs[0]["config"]["audit_fail_open"], false);
    assert_eq!(recs[0]["config"]["platform"], "ptrace");
    assert_eq!(argv(&recs[1]), ["/bin/sh", "-c", script]);
    assert_eq!((recs[1]["pid"].as_i64(), recs[1]["cwd"].as_str()), (Some(1), d.to_str()));
    let py = &recs[3];
    assert_eq!(argv(py), ["/usr/bin/python3", "p.py", "one"]);
    assert_eq!(py["ppid"], 1);
    assert!(py["exe"].as_str().unwrap().contains("python3"), "{py}");
    assert_eq!((&recs[4]["pid"], &recs[4]["status"]), (&py["pid"], &Value::from(0)));
    // A #! script: the interpreter and the script both.
    let sh = &recs[5];
    assert_eq!(argv(sh), ["/bin/sh", "./s.sh", "a", "b"]);
    assert_eq!(recs[6]["pid"], sh["pid"]);
    assert_eq!((&recs[7]["pid"], &recs[7]["status"]), (&Value::from(1), &Value::from(3)));
    assert_eq!((&recs[8]["reason"], &recs[8]["status"]), (&Value::from("exited"), &Value::from(3)));
    // Environment names, never values.
    let env = py["env"].as_array().unwrap();
    assert!(env.contains(&Value::from("AUDIT_SECRET")), "{py}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("hunter2"));

    let v = verify(&log);
    v.assert_code(0);
    assert!(v.stdout_str().contains("intact: 9 records"), "{}", v.describe());

    // Tampering is named: a line deleted, a byte changed.
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(4);
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let v = verify(&log);
    v.assert_code(1);
    assert!(v.stdout_str().contains("line 5 (seq 5): missing"), "{}", v.describe());
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = lines[3].replace("p.py", "q.py");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let v = verify(&log);
    v.assert_code(1);
    assert!(v.stdout_str().contains("line 4 (seq 3): edited"), "{}", v.describe());
}

#[test]
fn a_process_killed_right_after_exec_leaves_its_exec_record() {
    let dir = TempDir::new("audit-kill");
    let log = dir.path().join("audit.log");
    let r = audited(dir.path(), &log, &[], "/bin/sh -c 'kill -9 $$'; echo after $?");
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "after 137\n", "{}", r.describe());
    let recs = records(&log);
    let exec = recs.iter().find(|r| r["type"] == "process.exec" && r["pid"] != 1).unwrap();
    assert_eq!(argv(exec), ["/bin/sh", "-c", "kill -9 $$"]);
    let exit = recs.iter().find(|r| r["type"] == "process.exit" && r["pid"] == exec["pid"]).unwrap();
    assert_eq!(exit["signal"], 9, "{exit}");
    verify(&log).assert_code(0);
}

/// The paths of the `file.read` records of `log`, in order.
fn reads(log: &Path) -> Vec<String> {
    records(log).iter().filter(|r| r["type"] == "file.read").map(|r| r["path"].as_str().unwrap().to_string()).collect()
}

#[test]
fn opens_for_reading_of_credentials_are_file_read_records() {
    let dir = TempDir::new("audit-read");
    let d = dir.path();
    for sub in [".ssh", ".aws"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    for f in [".ssh/id_rsa", ".aws/credentials", ".netrc", "notes.txt"] {
        std::fs::write(d.join(f), "x\n").unwrap();
    }
    // Reads, an open for writing only, a stat, a directory listing: only
    // the opens for reading of matching paths are records, in order.
    let script = "cat .ssh/id_rsa .netrc notes.txt >/dev/null; echo y >> .ssh/id_rsa; test -e .aws/credentials; \
                  ls .ssh >/dev/null; cat /etc/shadow >/dev/null; cat .aws/credentials >/dev/null";
    let at = |p: &str| d.join(p).to_str().unwrap().to_string();
    let log = d.join("default.log");
    audited(d, &log, &[], script).assert_code(0);
    assert_eq!(reads(&log), [at(".ssh/id_rsa"), at(".netrc"), "/etc/shadow".into(), at(".aws/credentials")]);
    let create = &records(&log)[0];
    assert_eq!(create["config"]["read"][1], "/etc/shadow", "{create}");
    verify(&log).assert_code(0);
    // Globs given replace the defaults.
    let log = d.join("given.log");
    let glob = format!("{}/*.txt", d.display());
    audited(d, &log, &["--audit-read", &glob], script).assert_code(0);
    assert_eq!(reads(&log), [at("notes.txt")]);
    verify(&log).assert_code(0);
}

/// The `file.read`, `file.link` and `file.rename` records of `log`: type,
/// the path (a link's and a rename's source first) and `via`.
fn read_trail(log: &Path) -> Vec<String> {
    let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
    records(log)
        .iter()
        .filter_map(|r| match r["type"].as_str().unwrap() {
            "file.read" => Some(format!("read {} via {}", s(&r["path"]), s(&r["via"]))),
            "file.link" => Some(format!("link {} -> {}", s(&r["target"]), s(&r["path"]))),
            "file.rename" => Some(format!("rename {} -> {}", s(&r["from"]), s(&r["to"]))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_watched_file_read_through_a_hard_link_or_a_new_name_is_still_a_file_read() {
    let dir = TempDir::new("audit-read-alias");
    let d = dir.path();
    for sub in [".ssh", ".aws"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    for f in [".ssh/id_rsa", ".aws/credentials", ".netrc", "notes.txt"] {
        std::fs::write(d.join(f), "x\n").unwrap();
    }
    // A link the image had before the sandbox.
    std::fs::hard_link(d.join(".ssh/id_rsa"), d.join("old-link")).unwrap();
    let at = |p: &str| d.join(p).to_str().unwrap().to_string();
    let script = "ln /etc/shadow /var/tmp/shadow-link && cat /var/tmp/shadow-link >/dev/null; \
                  ln .aws/credentials creds && cat creds >/dev/null; \
                  mv .netrc moved && cat moved >/dev/null; \
                  cat .ssh/id_rsa old-link notes.txt >/dev/null; rm -f /var/tmp/shadow-link";
    let log = d.join("audit.log");
    audited(d, &log, &[], script).assert_code(0);
    let want = [
        "link /etc/shadow -> /var/tmp/shadow-link".to_string(),
        "read /var/tmp/shadow-link via /etc/shadow".to_string(),
        format!("link {} -> {}", at(".aws/credentials"), at("creds")),
        format!("read {} via {}", at("creds"), at(".aws/credentials")),
        format!("rename {} -> {}", at(".netrc"), at("moved")),
        format!("read {} via {}", at("moved"), at(".netrc")),
        format!("read {} via -", at(".ssh/id_rsa")),
        format!("read {} via {}", at("old-link"), at(".ssh/id_rsa")),
    ];
    assert_eq!(read_trail(&log), want);
    verify(&log).assert_code(0);
}

#[test]
fn past_its_cap_of_remembered_files_every_read_is_recorded() {
    let dir = TempDir::new("audit-read-full");
    let d = dir.path();
    std::fs::create_dir_all(d.join("k")).unwrap();
    std::fs::write(d.join("notes.txt"), "x\n").unwrap();
    // 1025 watched files, each given a second name: one more than the
    // sentry remembers.
    let make = "import os\nfor i in range(1025):\n    open('k/s%d.key' % i, 'w').close()\n    os.link('k/s%d.key' % i, 'k/l%d' % i)\n";
    std::fs::write(d.join("mk.py"), make).unwrap();
    let script = "/usr/bin/python3 mk.py && cat notes.txt >/dev/null";
    let glob = format!("{}/k/*.key", d.display());
    let log = d.join("audit.log");
    audited(d, &log, &["--audit-read", &glob], script).assert_code(0);
    let trail = read_trail(&log);
    let notes = trail.iter().find(|l| l.starts_with(&format!("read {}", d.join("notes.txt").display())));
    assert_eq!(
        notes.map(String::as_str),
        Some(
            format!("read {} via unknown: the --audit-read identity table is full", d.join("notes.txt").display())
                .as_str()
        ),
        "{:?}",
        &trail[trail.len().saturating_sub(3)..]
    );
    assert_eq!(trail.iter().filter(|l| l.starts_with("link ")).count(), 1025);
    verify(&log).assert_code(0);
}

#[test]
fn the_guest_can_neither_see_nor_write_the_log() {
    let dir = TempDir::new("audit-hidden");
    let log = dir.path().join("audit.log");
    let path = log.to_str().unwrap();
    let script = format!(
        "wc -c < {path}; echo forged >> {path}; for f in /proc/self/fd/* /proc/1/fd/*; do readlink $f; done; true"
    );
    let r = audited(dir.path(), &log, &[], &script);
    r.assert_code(0);
    let out = r.stdout_str();
    assert!(out.starts_with("0\n"), "the guest read the log: {}", r.describe());
    assert!(!out.contains("audit.log"), "a guest descriptor names the log: {out}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.lines().any(|l| l.contains("forged") && !l.contains("process.exec")), "{text}");
    verify(&log).assert_code(0);
}

#[test]
fn an_oom_kill_leaves_limit_memory() {
    let dir = TempDir::new("audit-oom");
    let log = dir.path().join("audit.log");
    // Five times over: the victim's parent, woken by its death while its
    // memory is still going back, must not be taken as a second victim.
    let r = audited(
        dir.path(),
        &log,
        &["--memory-mb", "64"],
        "for i in 1 2 3 4 5; do cat /etc/hostname >/dev/null; /usr/bin/python3 -c 's = b\"x\" * (256 << 20)'; echo $?; done",
    );
    assert_eq!(r.stdout_str(), "137\n".repeat(5), "{}", r.describe());
    let recs = records(&log);
    let py = recs.iter().find(|r| r["type"] == "process.exec" && argv(r)[0] == "/usr/bin/python3").unwrap();
    let oom = recs.iter().find(|r| r["type"] == "limit.memory").unwrap_or_else(|| panic!("{recs:#?}"));
    assert_eq!(oom["pid"], py["pid"], "{oom}");
    assert_eq!(oom["limit"], 64 << 20, "{oom}");
    assert!(oom["size"].as_u64().unwrap() > 16 << 20, "{oom}");
    let exit = recs.iter().find(|r| r["type"] == "process.exit" && r["pid"] == py["pid"]).unwrap();
    assert_eq!(exit["signal"], 9);
    verify(&log).assert_code(0);

    // The sandbox's first process the victim: the sandbox ends "oom".
    let log = dir.path().join("init.log");
    let mut cmd = husk_do(
        &["--audit-log", log.to_str().unwrap(), "--memory-mb", "64"],
        &["/usr/bin/python3", "-c", "s = b'x' * (256 << 20)"],
    );
    cmd.current_dir(dir.path());
    run(cmd, None).assert_code(137);
    let recs = records(&log);
    let last = recs.last().unwrap();
    assert_eq!((&last["type"], &last["reason"], &last["signal"]), (&"sandbox.exit".into(), &"oom".into(), &9.into()));
    verify(&log).assert_code(0);
}

#[test]
fn a_log_that_cannot_take_its_first_record_stops_the_boot() {
    let dir = TempDir::new("audit-full");
    for extra in [&[][..], &["--audit-fail-open"]] {
        let r = audited(dir.path(), Path::new("/dev/full"), extra, "echo ran");
        assert_ne!(r.code, 0, "{}", r.describe());
        assert!(!r.stdout_str().contains("ran"), "{}", r.describe());
        assert!(r.stderr_str().contains("audit log"), "{}", r.describe());
    }
}

/// Runs `read x; /bin/true; echo ran` with its log on a pipe whose
/// reader goes away after the first three records; the guest then execs.
/// Returns the exit code and stdout.
fn log_reader_goes_away(extra: &[&str]) -> (i32, String) {
    use std::io::{BufRead, Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    // A duplicate without close-on-exec, for husk to inherit.
    let inherited = nix::unistd::dup(w.as_raw_fd()).unwrap();
    drop(w);
    let spec = format!("fd:{inherited}");
    let mut flags = vec!["--audit-log", spec.as_str()];
    flags.extend_from_slice(extra);
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", "read x; /bin/true; echo ran"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.process_group(0).spawn().unwrap();
    nix::unistd::close(inherited).unwrap();
    let pgid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(std::fs::File::from(r)).lines();
        for _ in 0..3 {
            let _ = lines.next();
        }
        // Dropping the reader closes the pipe's only read end.
        let _ = tx.send(());
    });
    let read = rx.recv_timeout(TIMEOUT);
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(b"go\n");
    drop(stdin);
    let status = wait_bounded(&mut child, pgid);
    assert!(read.is_ok(), "the first records never came");
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    (status.code().unwrap_or(-1), out)
}

#[test]
fn a_failing_log_stops_the_sandbox_unless_failing_open() {
    let (code, out) = log_reader_goes_away(&[]);
    assert_eq!((code, out.as_str()), (125, ""), "failing closed: nothing runs unrecorded");
    let (code, out) = log_reader_goes_away(&["--audit-fail-open"]);
    assert_eq!((code, out.as_str()), (0, "ran\n"), "failing open: the sandbox runs on");
}

#[test]
fn changes_to_watched_paths_are_recorded() {
    let dir = TempDir::new("audit-files");
    let log = dir.path().join("audit.log");
    // /etc is watched by default (writes stay in the sandbox's memory);
    // /tmp is not, unless asked for.
    let script = "echo x > /etc/probe; echo y >> /etc/probe; chmod 600 /etc/probe; truncate -s 1 /etc/probe; \
                  mv /etc/probe /etc/probe2; rm /etc/probe2; echo z > /tmp/scratch; rm /tmp/scratch";
    audited(dir.path(), &log, &[], script).assert_code(0);
    let recs = records(&log);
    let files: Vec<(&str, &str)> = recs
        .iter()
        .filter(|r| r["type"].as_str().unwrap().starts_with("file."))
        .map(|r| (r["type"].as_str().unwrap(), r["path"].as_str().or(r["from"].as_str()).unwrap()))
        .collect();
    assert_eq!(
        files,
        [
            ("file.create", "/etc/probe"),
            ("file.write", "/etc/probe"),
            ("file.write", "/etc/probe"),
            ("file.chmod", "/etc/probe"),
            ("file.truncate", "/etc/probe"),
            ("file.rename", "/etc/probe"),
            ("file.unlink", "/etc/probe2"),
        ],
        "{recs:#?}"
    );
    let chmod = recs.iter().find(|r| r["type"] == "file.chmod").unwrap();
    assert_eq!(chmod["mode"], 0o600);
    let rename = recs.iter().find(|r| r["type"] == "file.rename").unwrap();
    assert_eq!(rename["to"], "/etc/probe2");
    verify(&log).assert_code(0);

    let log = dir.path().join("tmp.log");
    audited(dir.path(), &log, &["--audit-watch", "/tmp/**"], script).assert_code(0);
    let recs = records(&log);
    assert!(recs.iter().any(|r| r["type"] == "file.unlink" && r["path"] == "/tmp/scratch"), "{recs:#?}");
    assert!(!recs.iter().any(|r| r["path"] == "/etc/probe2"), "only what --audit-watch names");
    assert_eq!(recs[0]["config"]["watch"], serde_json::json!(["/tmp/**"]));
}

#[test]
fn a_sandbox_killed_after_its_grace_period_has_its_log_closed_by_the_runtime() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let dir = TempDir::new("audit-grace");
    let log = dir.path().join("audit.log");
    let flags = ["--audit-log", log.to_str().unwrap(), "--kill-grace", "0.5"];
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", "trap '' TERM; echo ready; read x"]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0);
    let mut child = cmd.spawn().unwrap();
    let pgid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pgid).unwrap()), nix::sys::signal::SIGTERM)
        .unwrap();
    let status = wait_bounded(&mut child, pgid);
    assert_eq!(status.code(), Some(137));
    let recs = records(&log);
    let last = recs.last().unwrap();
    assert_eq!(
        (&last["type"], &last["reason"], &last["signal"]),
        (&"sandbox.exit".into(), &"timeout".into(), &9.into())
    );
    assert_eq!(last["closed_by"], "runtime");
    verify(&log).assert_code(0);
}

/// Waits (bounded) for `child`, then kills its process group `pgid`
/// whatever happened; panics if it did not end in time.
fn wait_bounded(child: &mut std::process::Child, pgid: u32) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + TIMEOUT;
    let status = loop {
        match child.try_wait().unwrap() {
            Some(st) => break Some(st),
            None if std::time::Instant::now() > deadline => break None,
            None => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    };
    kill_group(pgid);
    status.unwrap_or_else(|| {
        let _ = child.wait();
        panic!("husk did not end")
    })
}

/// A bind mount, an unmount, a chroot and unshare(CLONE_NEWNS) change
/// which paths the watched globs see; each is recorded (file.mount)
/// before it takes effect, whether or not a watched path is involved, and
/// paths are spelled from the mount namespace's root, not a chroot's.
#[test]
fn changes_of_the_filesystem_view_are_recorded_before_they_take_effect() {
    let dir = TempDir::new("audit-mount");
    let log = dir.path().join("audit.log");
    let script = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def ok(r):
    assert r == 0, os.strerror(ctypes.get_errno())
os.makedirs("/tmp/e", exist_ok=True)
ok(libc.mount(b"/usr", b"/tmp/e", None, 4096, None))  # MS_BIND
open("/tmp/e/via_bind", "w").write("x")
ok(libc.umount2(b"/tmp/e", 0))
ok(libc.unshare(0x20000))  # CLONE_NEWNS
os.chroot("/etc")
open("/via_chroot", "w").write("x")
print("chrooted", os.path.exists("/hostname"), flush=True)
"#;
    let mut cmd = husk_do(&["--audit-log", log.to_str().unwrap()], &["python3", "-c", script]);
    cmd.current_dir(dir.path());
    let r = run(cmd, None);
    r.assert_code(0);
    assert_eq!(r.stdout_str().trim(), "chrooted True", "{}", r.describe());
    let recs = records(&log);
    let at = |op: &str, path: Option<&str>| {
        recs.iter()
            .position(|r| r["type"] == "file.mount" && r["operation"] == op && r["path"].as_str() == path)
            .unwrap_or_else(|| panic!("no file.mount {op} {path:?}: {recs:#?}"))
    };
    let bind = at("mount", Some("/tmp/e"));
    assert_eq!(recs[bind]["source"], "/usr");
    assert_ne!(recs[bind]["flags"].as_u64().unwrap() & 4096, 0, "MS_BIND");
    let umount = at("umount2", Some("/tmp/e"));
    let unshare = at("unshare", None);
    assert_ne!(recs[unshare]["flags"].as_u64().unwrap() & 0x20000, 0, "CLONE_NEWNS");
    let chroot = at("chroot", Some("/etc"));
    assert!(bind < umount && umount < unshare && unshare < chroot, "{recs:#?}");
    let via_bind = recs.iter().position(|r| r["type"] == "file.create" && r["path"] == "/usr/via_bind");
    assert!(
        via_bind.is_some_and(|c| bind < c && c < umount),
        "a file made through a bind is named by its source: {recs:#?}"
    );
    let created = recs.iter().position(|r| r["type"] == "file.create" && r["path"] == "/etc/via_chroot");
    assert!(created.is_some_and(|c| c > chroot), "a watched file made after a chroot keeps its path: {recs:#?}");
    verify(&log).assert_code(0);
}

#[test]
fn owners_links_forks_and_policy_refusals_are_recorded() {
    let dir = TempDir::new("audit-more");
    let log = dir.path().join("audit.log");
    // chown, a hard link and a symlink under /etc (watched by default),
    // two mounts of a host filesystem type (refused for policy: one record
    // per process) and, with --audit-fork, the subshell's fork.
    let script = "echo x > /etc/probe; chown 12:34 /etc/probe; ln /etc/probe /etc/hard; ln -s /etc/probe /etc/soft; \
                  ln -s /etc/probe /tmp/unwatched; mount -t debugfs none /mnt; mount -t debugfs none /mnt; \
                  (exit 0); true";
    let r = audited(dir.path(), &log, &["--audit-fork"], script);
    r.assert_code(0);
    let recs = records(&log);
    let find = |t: &str| recs.iter().find(|r| r["type"] == t).unwrap_or_else(|| panic!("no {t}: {recs:#?}"));
    let chown = find("file.chown");
    assert_eq!((&chown["path"], &chown["uid"], &chown["gid"]), (&"/etc/probe".into(), &12.into(), &34.into()));
    let link = find("file.link");
    assert_eq!((&link["target"], &link["path"]), (&"/etc/probe".into(), &"/etc/hard".into()));
    let symlinks: Vec<_> = recs.iter().filter(|r| r["type"] == "file.symlink").collect();
    assert_eq!(symlinks.len(), 1, "only the watched name: {recs:#?}");
    assert_eq!((&symlinks[0]["target"], &symlinks[0]["path"]), (&"/etc/probe".into(), &"/etc/soft".into()));
    let denied: Vec<_> = recs.iter().filter(|r| r["type"] == "policy.denied").collect();
    assert_eq!(denied.len(), 2, "once per process and call: {recs:#?}");
    assert_ne!(denied[0]["pid"], denied[1]["pid"]);
    assert_eq!((&denied[0]["operation"], &denied[0]["comm"]), (&"mount".into(), &"mount".into()));
    assert!(
        r.stderr_str().contains("permission denied") || r.stderr_str().contains("Operation not permitted"),
        "{}",
        r.describe()
    );
    // Every process but the first was forked, and its fork is recorded
    // before anything it did.
    let execs: Vec<_> = recs.iter().filter(|r| r["type"] == "process.exec" && r["pid"] != 1).collect();
    assert!(!execs.is_empty());
    for exec in execs {
        let fork = recs.iter().position(|r| r["type"] == "process.fork" && r["child"] == exec["pid"]);
        let at = recs.iter().position(|r| r == exec).unwrap();
        assert!(fork.is_some_and(|f| f < at), "no fork before {exec}: {recs:#?}");
    }
    assert_eq!(recs[0]["config"]["audit_fork"], true);
    verify(&log).assert_code(0);

    // Without --audit-fork: no fork records.
    let log = dir.path().join("nofork.log");
    audited(dir.path(), &log, &[], "(exit 0); /bin/true").assert_code(0);
    assert!(!records(&log).iter().any(|r| r["type"] == "process.fork"));
}

#[test]
fn every_record_also_reaches_a_syslog_socket_as_rfc5424() {
    let dir = TempDir::new("audit-syslog");
    let log = dir.path().join("audit.log");
    let path = dir.path().join("syslog.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let r = audited(dir.path(), &log, &["--audit-syslog", path.to_str().unwrap()], "/bin/true; exit 4");
    r.assert_code(4);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 5, "{text}");
    let sandbox = records(&log)[0]["sandbox"].as_str().unwrap().to_string();
    let mut buf = vec![0u8; 1 << 16];
    for line in &lines {
        let n = socket.recv(&mut buf).expect("a datagram per record");
        let msg = std::str::from_utf8(&buf[..n]).unwrap();
        let rec: Value = serde_json::from_str(line).unwrap();
        let head =
            format!("<110>1 {} - husk {sandbox} {} - ", rec["ts"].as_str().unwrap(), rec["type"].as_str().unwrap());
        assert_eq!(msg, format!("{head}{line}"));
    }
    verify(&log).assert_code(0);

    // Nobody listening: the sandbox does not start.
    drop(socket);
    let r = audited(dir.path(), &dir.path().join("b.log"), &["--audit-syslog", path.to_str().unwrap()], "echo ran");
    assert_ne!(r.code, 0);
    assert!(!r.stdout_str().contains("ran") && r.stderr_str().contains("--audit-syslog"), "{}", r.describe());
}

#[test]
fn a_record_too_big_for_a_datagram_does_not_stop_the_sandbox() {
    let dir = TempDir::new("audit-syslog-huge");
    let log = dir.path().join("audit.log");
    let path = dir.path().join("syslog.sock");
    let socket = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    // A process.exec of 300 KB of argv (three arguments, each under
    // MAX_ARG_STRLEN): above any datagram's limit.
    let script = "a=$(head -c 100000 /dev/zero | tr '\\0' a); /bin/true $a $a $a; echo went on";
    let r = audited(dir.path(), &log, &["--audit-syslog", path.to_str().unwrap()], script);
    r.assert_code(0);
    assert!(r.stdout_str().contains("went on"), "{}", r.describe());
    let exec = records(&log).into_iter().find(|r| r["type"] == "process.exec" && argv(r)[0] == "/bin/true").unwrap();
    assert_eq!(argv(&exec)[1..].concat().len(), 300_000, "the log keeps the record whole");
    verify(&log).assert_code(0);
    // The socket got its copy, cut.
    let mut buf = vec![0u8; 1 << 20];
    let cut = std::iter::from_fn(|| socket.recv(&mut buf).ok().map(|n| buf[..n].to_vec()))
        .find(|m| m.windows(12).any(|w| w == b"process.exec") && m.len() > 60_000)
        .expect("the exec's message");
    assert!(cut.len() <= 60 * 1024 && cut.ends_with(b" [husk: truncated]"), "{}", cut.len());
}

#[test]
fn ocsf_export_maps_every_record_to_a_class_with_its_required_attributes() {
    let dir = TempDir::new("audit-ocsf");
    let log = dir.path().join("audit.log");
    let script = "echo x > /etc/probe; mv /etc/probe /etc/probe2; /bin/true; exit 2";
    audited(dir.path(), &log, &["--audit-fork"], script).assert_code(2);
    let recs = records(&log);
    let mut cmd = Command::new(husk_bin());
    cmd.args(["audit", "export", "--format", "ocsf"]).arg(&log);
    let r = run(cmd, None);
    r.assert_code(0);
    let events: Vec<Value> = r.stdout_str().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), recs.len());
    let mut classes = std::collections::BTreeSet::new();
    for (e, rec) in events.iter().zip(&recs) {
        let class = e["class_uid"].as_u64().unwrap();
        let activity = e["activity_id"].as_u64().unwrap();
        classes.insert(class);
        assert_eq!(e["category_uid"].as_u64(), Some(class / 1000), "{e}");
        assert_eq!(e["type_uid"].as_u64(), Some(class * 100 + activity), "{e}");
        assert!(e["time"].as_u64().is_some_and(|t| t > 1_600_000_000_000), "{e}");
        assert!(e["severity_id"].is_u64(), "{e}");
        assert!(e["metadata"]["version"].as_str().unwrap().starts_with("1."), "{e}");
        assert_eq!(e["metadata"]["product"]["name"], "husk");
        assert_eq!(&e["unmapped"], rec);
        let required: &[&str] = match (rec["type"].as_str().unwrap().split('.').next().unwrap(), class) {
            ("process", 1007) => &["actor", "device", "process"],
            ("file", 1001) => &["actor", "device", "file"],
            ("sandbox", 6002) => &["app"],
            other => panic!("{other:?}: {e}"),
        };
        for k in required {
            assert!(e[k].is_object(), "{k} missing: {e}");
        }
    }
    assert_eq!(classes.into_iter().collect::<Vec<_>>(), [1001, 1007, 6002]);
    let exec = events.iter().find(|e| e["unmapped"]["type"] == "process.exec").unwrap();
    assert_eq!(exec["process"]["file"]["path"], exec["unmapped"]["exe"]);
    assert_eq!(exec["process"]["cmd_line"], format!("/bin/sh -c {script}"));
    let rename = events.iter().find(|e| e["unmapped"]["type"] == "file.rename").unwrap();
    assert_eq!((&rename["activity_id"], &rename["file_result"]["path"]), (&5.into(), &"/etc/probe2".into()));

    // Garbage is refused, naming the line.
    std::fs::write(&log, "{\"type\":\"sandbox.start\"}\nnot json\n").unwrap();
    let mut cmd = Command::new(husk_bin());
    cmd.args(["audit", "export", "--format", "ocsf"]).arg(&log);
    let r = run(cmd, None);
    assert_ne!(r.code, 0);
    assert!(r.stderr_str().contains("line 2"), "{}", r.describe());
}
