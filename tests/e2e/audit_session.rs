//! One scripted agent session, the same through `husk do` and through
//! `husk run` (an OCI bundle over the host's root whose spec names the
//! test's sandbox-side network namespace): writes under /etc and /tmp,
//! `sh -c`, `python3 script.py`, a `#!` script, pip from a local index in
//! the test internet (egress.rs), npm of a local tarball, dpkg of a local
//! .deb, curl to an allowed and a denied host, a secret read, and a
//! process past the memory limit. Both logs hold the same records (types
//! and key fields, in order), verify, and name the record that a flipped
//! byte, a deleted line, two swapped lines or a cut tail broke.

use crate::egress::{Index, Internet};
use crate::util::{husk_bin, run, unique, Run, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The session: the guest's first process runs it with `sh -c`.
const SESSION: &str = "export HOME=/root
echo conf > /etc/agent.conf
echo note > /tmp/agent-note
sh -c 'echo sub'
/usr/bin/python3 script.py
./s.sh a b
/usr/bin/python3 -m pip --no-cache-dir --disable-pip-version-check install --trusted-host 198.18.0.2 --no-deps \
  --index-url http://198.18.0.2:8000/simple --target /tmp/site demo-pkg >/dev/null && echo pip ok
npm install --offline --no-audit --no-fund ./tiny-npm-0.3.1.tgz >/dev/null 2>&1 && echo npm ok
dpkg -i ./tinydeb_1.0-1_all.deb >/dev/null && echo dpkg ok
curl -sS --max-time 10 -o /dev/null http://198.18.0.2:8080/ && echo curl allowed ok
curl -sS --max-time 10 -o /dev/null http://198.18.0.3:8080/ 2>/dev/null; echo curl denied $?
cat /run/secrets/API_KEY >/dev/null && echo secret read
/usr/bin/python3 -c 's = b\"x\" * (1 << 30)'; echo oom $?
";

/// What the session prints, both ways.
const OUTPUT: &str =
    "sub\npy\nscript a b\npip ok\nnpm ok\ndpkg ok\ncurl allowed ok\ncurl denied 7\nsecret read\noom 137\n";

/// The global flags of both runs (`log` added).
const FLAGS: &[&str] = &[
    "--egress-allow",
    "198.18.0.2:8000",
    "--egress-allow",
    "198.18.0.2:8080",
    "--audit-watch",
    "/etc/agent*",
    "--audit-watch",
    "/tmp/agent*",
    "--secret",
    "API_KEY=session-secret-value",
    "--memory-mb",
    "512",
];

/// How a session is started: global flags, the first process's argv,
/// its working directory.
type Launch<'a> = &'a dyn Fn(&[&str], &[&str], &Path) -> Run;

/// The session's files in `d`: the script, the `#!` script, the npm
/// tarball (and an empty project), the .deb.
fn prepare(d: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(d.join("script.py"), "print('py')\n").unwrap();
    std::fs::write(d.join("s.sh"), "#!/bin/sh\necho script \"$@\"\n").unwrap();
    std::fs::set_permissions(d.join("s.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(d.join("package")).unwrap();
    std::fs::write(d.join("package/package.json"), r#"{"name":"tiny-npm","version":"0.3.1","main":"index.js"}"#)
        .unwrap();
    std::fs::write(d.join("package/index.js"), "module.exports = 1;\n").unwrap();
    let tar = Command::new("tar").args(["czf", "tiny-npm-0.3.1.tgz", "package"]).current_dir(d).status().unwrap();
    assert!(tar.success());
    std::fs::write(d.join("package.json"), "{}\n").unwrap();
    std::fs::create_dir_all(d.join("deb/DEBIAN")).unwrap();
    std::fs::create_dir_all(d.join("deb/usr/share/tinydeb")).unwrap();
    let control =
        "Package: tinydeb\nVersion: 1.0-1\nArchitecture: all\nMaintainer: t <t@example.invalid>\nDescription: tiny\n";
    std::fs::write(d.join("deb/DEBIAN/control"), control).unwrap();
    std::fs::write(d.join("deb/usr/share/tinydeb/hello"), "hi\n").unwrap();
    let deb = Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b", "deb", "tinydeb_1.0-1_all.deb"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(deb.status.success(), "{}", String::from_utf8_lossy(&deb.stderr));
}

/// A record reduced to its type and key fields, with the host
/// directory `d` spelled `D`. Records outside the session's steps (the
/// managers' own processes, connections' closes, calls not implemented)
/// are left out.
fn key(r: &Value, d: &Path) -> Option<String> {
    let s = |k: &str| r[k].as_str().unwrap_or("").replace(d.to_str().unwrap(), "D");
    let kind = r["type"].as_str().unwrap();
    let argv = || r["argv"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect::<Vec<_>>().join(" ");
    Some(match kind {
        "sandbox.create" | "sandbox.start" | "sandbox.delete" => kind.to_string(),
        "sandbox.exit" => format!("{kind} {} {}", s("reason"), r["status"]),
        // The session's steps: the first process and its children.
        "process.exec" if r["pid"] == 1 => format!("{kind} init"),
        "process.exec" if r["ppid"] == 1 => format!("{kind} {}", argv().replace(d.to_str().unwrap(), "D")),
        "process.exit" if r["pid"] == 1 => format!("{kind} init {}", r["status"]),
        "file.create" | "file.write" | "file.read" => format!("{kind} {}", s("path")),
        "package.install" => format!("{kind} {} {} {} {}", s("manager"), s("package"), s("version"), s("source")),
        "net.connect" | "net.denied" => format!("{kind} {}:{}", s("address"), r["port"]),
        "limit.memory" => format!("{kind} {}", r["limit"]),
        _ => return None,
    })
}

/// The log's records, parsed.
fn records(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// `husk audit verify` of `lines` (each without its newline).
fn verify(dir: &Path, lines: &[String]) -> Run {
    let path = dir.join(format!("{}.log", unique("tampered")));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut cmd = Command::new(husk_bin());
    cmd.args(["audit", "verify"]).arg(&path);
    run(cmd, None)
}

fn assert_names(r: &Run, want: &str) {
    assert_eq!(r.code, 1, "{}", r.describe());
    assert!(r.stdout_str().contains(want), "want {want:?}: {}", r.describe());
}

/// Tampering with the log of `d` is found and the record named.
fn assert_tampering_is_named(d: &Path, log: &Path) {
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(verify(d, &lines).code, 0);
    let n = lines.len();
    // A byte of record 3 changed (a digit of its timestamp).
    let mut flipped = lines.clone();
    let at = flipped[3].find("\"ts\":\"").unwrap() + 8;
    let digit = if flipped[3].as_bytes()[at] == b'1' { "2" } else { "1" };
    flipped[3].replace_range(at..=at, digit);
    assert_names(&verify(d, &flipped), "line 4 (seq 3): edited");
    // Line 6 (seq 5) deleted: seq 6 follows seq 4.
    let mut deleted = lines.clone();
    deleted.remove(5);
    assert_names(&verify(d, &deleted), "line 6 (seq 6): missing");
    // Lines 7 and 8 swapped.
    let mut swapped = lines.clone();
    swapped.swap(6, 7);
    assert_names(&verify(d, &swapped), "line 7 (seq 7): reordered");
    // The tail cut: the last two records gone, or the last line halved.
    assert_names(&verify(d, &lines[..n - 2]), &format!("line {} (seq {}): open", n - 2, n - 3));
    let mut cut = lines.clone();
    let half = cut[n - 1].len() / 2;
    cut[n - 1].truncate(half);
    let path = d.join("cut.log");
    std::fs::write(&path, cut.join("\n")).unwrap();
    let mut cmd = Command::new(husk_bin());
    cmd.args(["audit", "verify"]).arg(&path);
    assert_names(&run(cmd, None), &format!("line {n}"));
}

/// The session through `launch` in a new directory: its output, its
/// records' keys (and the log checked).
fn session(net: &Internet, launch: Launch<'_>, name: &str) -> Vec<String> {
    let _index = Index::start(net);
    let dir = TempDir::new(name);
    let d = dir.path();
    prepare(d);
    let log = d.join("audit.log");
    let flags = [&["--audit-log", log.to_str().unwrap()][..], FLAGS].concat();
    let r = launch(&flags, &["/bin/sh", "-c", SESSION], d);
    assert_eq!(r.stdout_str(), OUTPUT, "{name}: {}", r.describe());
    assert_eq!(r.code, 0, "{name}: {}", r.describe());
    let recs = records(&log);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(r["seq"], i, "{r}");
    }
    assert!(!std::fs::read_to_string(&log).unwrap().contains("session-secret-value"), "a secret value in the log");
    assert_tampering_is_named(d, &log);
    recs.iter().filter_map(|r| key(r, d)).collect()
}

/// What both logs say, in order (`husk run` adds `sandbox.delete`).
fn expected() -> Vec<String> {
    [
        "sandbox.create",
        "process.exec init",
        "sandbox.start",
        "file.create /etc/agent.conf",
        "file.write /etc/agent.conf",
        "file.create /tmp/agent-note",
        "file.write /tmp/agent-note",
        "process.exec sh -c echo sub",
        "process.exec /usr/bin/python3 script.py",
        "process.exec /bin/sh ./s.sh a b",
        "process.exec /usr/bin/python3 -m pip --no-cache-dir --disable-pip-version-check install --trusted-host \
         198.18.0.2 --no-deps --index-url http://198.18.0.2:8000/simple --target /tmp/site demo-pkg",
        // The index page and the wheel.
        "net.connect 198.18.0.2:8000",
        "net.connect 198.18.0.2:8000",
        "package.install pip demo-pkg 1.0 download from 198.18.0.2:8000",
        // npm's `#!/usr/bin/env node`, then env's exec of node.
        "process.exec /usr/bin/env node /usr/bin/npm install --offline --no-audit --no-fund ./tiny-npm-0.3.1.tgz",
        "process.exec node /usr/bin/npm install --offline --no-audit --no-fund ./tiny-npm-0.3.1.tgz",
        "package.install npm tiny-npm 0.3.1 file://D/tiny-npm-0.3.1.tgz",
        "process.exec dpkg -i ./tinydeb_1.0-1_all.deb",
        "package.install dpkg tinydeb 1.0-1 file://D/tinydeb_1.0-1_all.deb",
        "process.exec curl -sS --max-time 10 -o /dev/null http://198.18.0.2:8080/",
        "net.connect 198.18.0.2:8080",
        "process.exec curl -sS --max-time 10 -o /dev/null http://198.18.0.3:8080/",
        "net.denied 198.18.0.3:8080",
        "process.exec cat /run/secrets/API_KEY",
        "file.read /run/secrets/API_KEY",
        "process.exec /usr/bin/python3 -c s = b\"x\" * (1 << 30)",
        "limit.memory 536870912",
        "process.exit init 0",
        "sandbox.exit exited 0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Whether the host has what the session runs.
fn ready() -> bool {
    let tools = ["/usr/bin/python3", "/usr/bin/npm", "/usr/bin/dpkg-deb", "/usr/bin/curl"];
    if let Some(t) = tools.iter().find(|t| !Path::new(t).exists()) {
        println!("skipped: no {t} on this host");
        return false;
    }
    if !nix::unistd::geteuid().is_root() {
        println!("skipped: dpkg -i in the guest and the test network need root");
        return false;
    }
    true
}

#[test]
fn the_agent_session_through_husk_do_and_husk_run_leaves_the_same_records() {
    if !ready() {
        return;
    }
    let Some(net) = Internet::new() else { return };
    let husk_do = |flags: &[&str], argv: &[&str], cwd: &Path| {
        let mut cmd = net.husk_in_sandbox_ns(flags);
        cmd.args(["do", "--env-keep", "PATH", "--"]).args(argv).current_dir(cwd);
        run(cmd, None)
    };
    let husk_run = |flags: &[&str], argv: &[&str], cwd: &Path| {
        let bundle = cwd.join("bundle");
        std::fs::create_dir_all(&bundle).unwrap();
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": "/" },
            "process": {
                "args": argv,
                "cwd": cwd,
                "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
                "user": { "uid": 0, "gid": 0 },
            },
            "linux": { "namespaces": [{ "type": "network", "path": format!("/var/run/netns/{}", net.sandbox_ns) }] },
        });
        std::fs::write(bundle.join("config.json"), config.to_string()).unwrap();
        let mut cmd = Command::new(husk_bin());
        cmd.arg("--root").arg(cwd.join("state")).args(flags);
        cmd.args(["run", "--bundle", bundle.to_str().unwrap(), &unique("session")]);
        run(cmd, None)
    };
    let by_do = session(&net, &husk_do, "session-do");
    assert_eq!(by_do, expected(), "husk do");
    let mut by_run = session(&net, &husk_run, "session-run");
    assert_eq!(by_run.pop().as_deref(), Some("sandbox.delete"), "husk run ends with the runtime's delete");
    assert_eq!(by_run, by_do, "husk run and husk do");
}
