//! A sandbox's workspace: the disk limit its writable filesystems share,
//! host directories bound in with `--volume`, its working directory and
//! the environment it gets.

use crate::util::{husk_do, run, TempDir};
use serde_json::Value;
use std::path::Path;

fn records(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn a_disk_limit_stops_writes_with_enospc_and_the_sandbox_runs_on() {
    let dir = TempDir::new("disk-limit");
    let log = dir.path().join("audit.log");
    let script = "dd if=/dev/zero of=/tmp/f bs=1M count=200; echo dd=$?; df -k /tmp / /dev/shm | tail -n +2; \
                  rm /tmp/f; dd if=/dev/zero of=/tmp/g bs=1M count=8 2>/dev/null && echo after=ok";
    let flags = ["--disk-limit", "64M", "--audit-log", log.to_str().unwrap()];
    let r = run(husk_do(&flags, &["/bin/sh", "-c", script]), None);
    r.assert_code(0);
    let (out, err) = (r.stdout_str(), r.stderr_str());
    assert!(err.contains("No space left on device"), "{}", r.describe());
    // dd reports the bytes it copied: about the limit, never past it.
    let copied: u64 = err
        .lines()
        .find_map(|l| l.split_once(" bytes").and_then(|(n, _)| n.parse().ok()))
        .unwrap_or_else(|| panic!("no byte count from dd\n{}", r.describe()));
    assert!((60 << 20..=64 << 20).contains(&copied), "{copied} bytes\n{}", r.describe());
    assert!(out.contains("dd=1\n") && out.ends_with("after=ok\n"), "{}", r.describe());
    // /tmp, the root overlay and /dev/shm show the limit they share.
    let sizes: Vec<&str> = out.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
    assert_eq!(sizes, ["65536"; 3], "{}", r.describe());
    let breaches: Vec<Value> = records(&log).into_iter().filter(|r| r["type"] == "limit.disk").collect();
    assert_eq!(breaches.len(), 1, "{breaches:?}");
    assert_eq!((&breaches[0]["limit"], &breaches[0]["comm"]), (&Value::from(64u64 << 20), &Value::from("dd")));
    assert_eq!(records(&log)[0]["config"]["disk_limit"], 64u64 << 20);
}

/// Stores through a MAP_SHARED mapping into the holes of a /dev/shm file
/// count against the disk limit: past it the store faults with SIGBUS, as
/// on a full Linux tmpfs, and the file holds no more than the limit.
#[test]
fn shared_mapping_stores_into_holes_stop_at_the_disk_limit_with_sigbus() {
    let dir = TempDir::new("disk-mmap");
    let log = dir.path().join("audit.log");
    let py = "import mmap, os\n\
              fd = os.open('/dev/shm/big', os.O_RDWR | os.O_CREAT, 0o600)\n\
              os.ftruncate(fd, 64 << 20)\n\
              m = mmap.mmap(fd, 64 << 20)\n\
              for i in range(0, 64 << 20, 4096): m[i] = 1\n\
              print('all stored')\n";
    let script = format!(
        "python3 -c \"{py}\"; echo py=$?; du -k /dev/shm/big | cut -f1; rm /dev/shm/big; \
         dd if=/dev/zero of=/tmp/g bs=1M count=8 2>/dev/null && echo after=ok"
    );
    let flags = ["--disk-limit", "16M", "--audit-log", log.to_str().unwrap()];
    let r = run(husk_do(&flags, &["/bin/sh", "-c", &script]), None);
    r.assert_code(0);
    let out = r.stdout_str();
    assert!(out.starts_with("py=135\n") && out.ends_with("after=ok\n"), "SIGBUS, then room again\n{}", r.describe());
    let held: u64 = out.lines().nth(1).and_then(|l| l.parse().ok()).unwrap_or(u64::MAX);
    assert!((15 << 10..=16 << 10).contains(&held), "{held} KiB held\n{}", r.describe());
    let breaches = records(&log).into_iter().filter(|r| r["type"] == "limit.disk").count();
    assert_eq!(breaches, 1, "{}", r.describe());
}

#[test]
fn volume_writes_land_on_the_host_and_nothing_else_does() {
    let dir = TempDir::new("volume");
    let (ws, other) = (dir.path().join("ws"), dir.path().join("other"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("keep"), "original").unwrap();
    let volume = format!("{}:/ws", ws.display());
    let o = other.display();
    let script = format!("echo hi > /ws/out && mkdir /ws/d && echo deep > /ws/d/f && stat -c %s /ws/d/f && pwd && echo changed > {o}/keep && touch {o}/new && cat {o}/keep");
    let mut cmd = husk_do(&["-v", &volume], &["/bin/sh", "-c", &script]);
    cmd.current_dir(&ws);
    let r = run(cmd, None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "5\n/ws\nchanged\n", "{}", r.describe());
    assert_eq!(std::fs::read_to_string(ws.join("out")).unwrap(), "hi\n");
    assert_eq!(std::fs::read_to_string(ws.join("d/f")).unwrap(), "deep\n");
    assert_eq!(std::fs::read_to_string(other.join("keep")).unwrap(), "original", "a write outside the volumes");
    assert!(!other.join("new").exists());
    // --cwd names the guest's working directory; a volume may be in the
    // sandbox's own /tmp.
    let tmp_volume = format!("{}:/tmp/ws", ws.display());
    let r = run(husk_do(&["-v", &tmp_volume, "--cwd", "/tmp/ws/d"], &["/bin/sh", "-c", "pwd; cat f"]), None);
    assert_eq!(r.stdout_str(), "/tmp/ws/d\ndeep\n", "{}", r.describe());
}

#[test]
fn a_read_only_volume_refuses_writes_with_erofs() {
    let dir = TempDir::new("volume-ro");
    std::fs::write(dir.path().join("in"), "data").unwrap();
    let volume = format!("{}:/ws:ro", dir.path().display());
    let prog = "import errno, os\nprint(open('/ws/in').read())\n\
                for f in (lambda: open('/ws/out', 'w'), lambda: os.mkdir('/ws/d'), lambda: os.unlink('/ws/in')):\n\
                \x20   try:\n\x20       f(); print('allowed')\n\
                \x20   except OSError as e:\n\x20       print(errno.errorcode[e.errno])\n";
    let r = run(husk_do(&["-v", &volume], &["/usr/bin/python3", "-c", prog]), None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "data\nEROFS\nEROFS\nEROFS\n", "{}", r.describe());
    assert!(!dir.path().join("out").exists() && dir.path().join("in").exists());
}

#[test]
fn bad_volumes_are_one_clear_error() {
    let dir = TempDir::new("volume-bad");
    let missing = format!("{}/missing:/ws", dir.path().display());
    let relative = format!("{}:ws", dir.path().display());
    for (v, why) in [(missing.as_str(), "is not a directory"), (relative.as_str(), "is not absolute")] {
        let r = run(husk_do(&["-v", v], &["true"]), None);
        r.assert_code(125);
        let err = r.stderr_str();
        assert!(err.contains(why) && err.lines().count() == 1, "{}", r.describe());
    }
}

#[test]
fn the_callers_environment_stays_out_unless_kept() {
    let script = "env | sort";
    let mut cmd = husk_do(&["--env", "A=B"], &["/bin/sh", "-c", script]);
    cmd.env("HUSK_CALLER_SECRET", "s3cret").env("HUSK_CALLER_KEPT", "kept");
    let r = run(cmd, None);
    r.assert_code(0);
    let out = r.stdout_str();
    assert!(!out.contains("HUSK_CALLER") && !out.contains("s3cret"), "{}", r.describe());
    for want in ["A=B\n", "HOME=", "HOSTNAME=", "LANG="] {
        assert!(out.contains(want), "{want}\n{}", r.describe());
    }
    let mut cmd = husk_do(&["--env-keep", "HUSK_CALLER_KEPT"], &["/bin/sh", "-c", script]);
    cmd.env("HUSK_CALLER_SECRET", "s3cret").env("HUSK_CALLER_KEPT", "kept");
    let out = run(cmd, None).stdout_str();
    assert!(out.contains("HUSK_CALLER_KEPT=kept\n") && !out.contains("s3cret"), "{out}");
    let mut cmd = husk_do(&["--env-keep", "*"], &["/bin/sh", "-c", script]);
    cmd.env("HUSK_CALLER_SECRET", "s3cret");
    assert!(run(cmd, None).stdout_str().contains("HUSK_CALLER_SECRET=s3cret\n"));
}
