//! The OCI lifecycle without a daemon, as runc's users drive it: bundles
//! whose root is the host's own `/`, run through `husk run` and through
//! `create`/`start`/`state`/`exec`/`ps`/`kill`/`delete`, hooks, and the
//! errors a runtime must give. Nothing may be left behind: no state, no
//! process, no cgroup.

use crate::util::{husk_bin, run, unique, Run, TempDir};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A state root and a bundle directory.
struct Oci {
    dir: TempDir,
    root: PathBuf,
    bundle: PathBuf,
}

impl Oci {
    /// A bundle that runs `args` over the host's root filesystem; the keys
    /// of `extra` replace or add to the config's.
    fn new(args: &[&str], extra: serde_json::Value) -> Oci {
        let dir = TempDir::new("oci");
        let root = dir.path().join("state");
        let bundle = dir.path().join("bundle");
        std::fs::create_dir_all(&bundle).unwrap();
        let mut config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": "/" },
            "process": {
                "args": args,
                "cwd": "/",
                "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "MARK=oci"],
                "user": { "uid": 0, "gid": 0 },
            },
            "hostname": "oci-test",
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        std::fs::write(bundle.join("config.json"), config.to_string()).unwrap();
        Oci { dir, root, bundle }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(husk_bin());
        c.arg("--root").arg(&self.root).args(args);
        c
    }

    /// A command that ends by itself (not one that leaves a sandbox behind
    /// holding its output pipes).
    fn husk(&self, args: &[&str]) -> Run {
        run(self.cmd(args), None)
    }

    /// `create`, with the container's stdout and stderr going to a file.
    fn create(&self, id: &str) -> PathBuf {
        self.create_with(&[], id)
    }

    /// `create` with the global `flags`.
    fn create_with(&self, flags: &[&str], id: &str) -> PathBuf {
        let out = self.dir.path().join(format!("{id}.out"));
        let f = std::fs::File::create(&out).unwrap();
        let pid_file = self.dir.path().join(format!("{id}.pid"));
        let bundle = self.bundle.to_str().unwrap();
        let create = ["create", "--bundle", bundle, "--pid-file", pid_file.to_str().unwrap(), id];
        let status = self
            .cmd(&[flags, &create[..]].concat())
            .stdin(Stdio::null())
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .status()
            .unwrap();
        assert!(status.success(), "create failed: {}", std::fs::read_to_string(&out).unwrap_or_default());
        out
    }

    fn state(&self, id: &str) -> serde_json::Value {
        let r = self.husk(&["state", id]);
        r.assert_code(0);
        serde_json::from_slice(&r.stdout).unwrap()
    }

    /// Waits (bounded) for `id` to reach `status`.
    fn wait_for(&self, id: &str, status: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.state(id);
            if s["status"] == status {
                return;
            }
            assert!(Instant::now() < deadline, "{id} never became {status}: {s}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn assert_gone(&self, id: &str, pid: i64) {
        assert!(!self.root.join(id).exists(), "state of {id} left behind");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next().unwrap_or("");
        assert!(stat.is_empty() || state == "Z", "sentry {pid} still runs: {stat}");
        for cg in ["memory", "pids", "freezer", "unified", ""] {
            let p = Path::new("/sys/fs/cgroup").join(cg).join("husk").join(id);
            assert!(!p.exists(), "{} left behind", p.display());
        }
    }
}

impl Drop for Oci {
    /// A failed test must not leave sandboxes running.
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.root) else { return };
        for e in entries.flatten() {
            let _ = self.cmd(&["delete", "--force"]).arg(e.file_name()).output();
        }
    }
}

/// Polls `path` until it contains `want` (bounded).
fn wait_output(path: &Path, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(want) {
            return text;
        }
        assert!(Instant::now() < deadline, "{want:?} never appeared in {}: {text}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn run_exits_with_the_container_status_and_leaves_nothing() {
    let oci = Oci::new(&["sh", "-c", "echo hi from $(hostname) $MARK; exit 3"], serde_json::json!({}));
    let id = unique("run");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(3);
    assert_eq!(r.stdout_str(), "hi from oci-test oci\n", "{}", r.describe());
    oci.assert_gone(&id, 0);
}

/// A process `husk exec` adds counts against the container's pids limit
/// as a forked one does: past it the exec fails, saying why.
#[test]
fn execd_processes_count_against_the_pids_limit() {
    let extra = serde_json::json!({ "linux": { "resources": { "pids": { "limit": 2 } } } });
    let oci = Oci::new(&["sleep", "30"], extra);
    let id = unique("exec-pids");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    oci.husk(&["exec", &id, "true"]).assert_code(0);
    let mut sleeper = oci.cmd(&["exec", &id, "sleep", "20"]);
    sleeper.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    let mut held = sleeper.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while oci.husk(&["ps", &id]).stdout_str().lines().count() < 3 {
        assert!(Instant::now() < deadline, "the exec'd sleep never showed in ps");
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = oci.husk(&["exec", &id, "true"]);
    crate::util::kill_group(held.id());
    let _ = held.wait();
    assert_eq!(refused.code, 1, "{}", refused.describe());
    assert!(refused.stderr_str().contains("pids limit (2) is reached"), "{}", refused.describe());
    oci.husk(&["delete", "--force", &id]).assert_code(0);
}

/// `--secret-env` gives a process `husk exec` starts the secret's
/// variable too, in place of the one its process.json names.
#[test]
fn execd_processes_get_the_secrets_env() {
    let value = "exec-secret-0123456789";
    let oci = Oci::new(&["sleep", "30"], serde_json::json!({}));
    let id = unique("exec-secret");
    oci.create_with(&[&format!("--secret=TOKEN={value}"), "--secret-env=TOKEN"], &id);
    oci.husk(&["start", &id]).assert_code(0);
    let check = format!("[ \"$TOKEN\" = {value} ] && echo same; echo \"<$TOKEN>\"");
    let exec = oci.husk(&["exec", "--env", "TOKEN=spec", &id, "sh", "-c", &check]);
    oci.husk(&["delete", "--force", &id]).assert_code(0);
    exec.assert_code(0);
    assert!(exec.stdout_str().starts_with("same\n"), "{}", exec.describe());
    assert!(!exec.stdout_str().contains(value), "{}", exec.describe());
}

#[test]
fn create_start_exec_kill_delete() {
    let script = "trap 'echo got TERM; exit 7' TERM; echo started; while :; do sleep 0.05; done";
    let oci = Oci::new(&["sh", "-c", script], serde_json::json!({}));
    let id = unique("life");
    let out = oci.create(&id);
    let s = oci.state(&id);
    assert_eq!(s["status"], "created", "{s}");
    let pid = s["pid"].as_i64().unwrap();
    let pid_file = std::fs::read_to_string(oci.dir.path().join(format!("{id}.pid"))).unwrap();
    assert_eq!(pid_file, pid.to_string(), "the pid file holds the sentry's pid");
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(s["bundle"], oci.bundle.canonicalize().unwrap().to_str().unwrap());
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(std::fs::read_to_string(&out).unwrap_or_default(), "", "the process must wait for start");

    let list = oci.husk(&["list", "--quiet"]);
    assert_eq!(list.stdout_str(), format!("{id}\n"));
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "started");
    assert_eq!(oci.state(&id)["status"], "running");
    let again = oci.husk(&["start", &id]);
    assert_eq!(again.code, 1, "{}", again.describe());
    assert!(again.stderr_str().contains("running"), "{}", again.describe());

    let exec = oci.husk(&["exec", &id, "sh", "-c", "echo exec $MARK $(hostname); exit 4"]);
    exec.assert_code(4);
    assert_eq!(exec.stdout_str(), "exec oci oci-test\n", "{}", exec.describe());
    // An exec'd process.json's groups and limits apply to it.
    let process = oci.dir.path().join("process.json");
    let spec = serde_json::json!({
        "args": ["sh", "-c", "ulimit -n; id -G"], "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
        "user": { "uid": 0, "gid": 0, "additionalGids": [7] },
        "rlimits": [{ "type": "RLIMIT_NOFILE", "soft": 77, "hard": 88 }],
    });
    std::fs::write(&process, spec.to_string()).unwrap();
    let exec = oci.husk(&["exec", "--process", process.to_str().unwrap(), &id]);
    exec.assert_code(0);
    assert_eq!(exec.stdout_str(), "77\n0 7\n", "{}", exec.describe());
    let missing = oci.husk(&["exec", &id, "no-such-program"]);
    assert_eq!(missing.code, 1, "{}", missing.describe());
    assert!(missing.stderr_str().contains("executable file not found"), "{}", missing.describe());
    let ps = oci.husk(&["ps", &id]);
    ps.assert_code(0);
    assert!(
        ps.stdout_str().lines().any(|l| l.trim_start().starts_with("1 ") && l.ends_with(" sh")),
        "{}",
        ps.describe()
    );
    let json: Vec<i64> = serde_json::from_slice(&oci.husk(&["ps", "--format", "json", &id]).stdout).unwrap();
    assert_eq!(json, [pid]);

    let busy = oci.husk(&["delete", &id]);
    assert_eq!(busy.code, 1, "{}", busy.describe());
    assert!(busy.stderr_str().contains("not stopped"), "{}", busy.describe());
    oci.husk(&["kill", &id, "TERM"]).assert_code(0);
    oci.wait_for(&id, "stopped");
    assert!(wait_output(&out, "got TERM").ends_with("started\ngot TERM\n"));
    let late = oci.husk(&["kill", &id, "KILL"]);
    assert_eq!(late.code, 1, "{}", late.describe());
    oci.husk(&["delete", &id]).assert_code(0);
    oci.assert_gone(&id, pid);
    assert_eq!(oci.husk(&["list", "--quiet"]).stdout_str(), "");
}

#[test]
fn delete_force_kills_a_running_container() {
    let oci = Oci::new(&["sleep", "60"], serde_json::json!({}));
    let id = unique("force");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    let pid = oci.state(&id)["pid"].as_i64().unwrap();
    // The sentry is the first process of a pid namespace of its own (its
    // stubs die with it, and it sees no host process).
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let nspid = status.lines().find(|l| l.starts_with("NSpid:")).unwrap();
    assert_eq!(nspid.split_whitespace().collect::<Vec<_>>(), ["NSpid:", &pid.to_string(), "1"], "{nspid}");
    oci.husk(&["delete", "--force", &id]).assert_code(0);
    oci.assert_gone(&id, pid);
    oci.husk(&["delete", "--force", &id]).assert_code(0);
}

/// A sentry that cannot take a SIGTERM (here stopped with SIGSTOP, as
/// wedged as a process can be) is killed by `husk kill ID TERM` once the
/// grace period passes, with a word on stderr; its gofer goes too.
#[test]
fn kill_term_ends_a_wedged_sandbox() {
    let oci = Oci::new(&["sleep", "60"], serde_json::json!({}));
    let id = unique("wedged");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    let pid = oci.state(&id)["pid"].as_i64().unwrap();
    let sentry = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: stopping the sentry process this test created.
    assert_eq!(unsafe { libc::kill(sentry, libc::SIGSTOP) }, 0);
    let started = Instant::now();
    let r = oci.husk(&["--kill-grace", "1", "kill", &id, "TERM"]);
    r.assert_code(0);
    assert!(r.stderr_str().contains("killing it"), "{}", r.describe());
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    oci.wait_for(&id, "stopped");
    oci.husk(&["delete", &id]).assert_code(0);
    oci.assert_gone(&id, pid);
}

#[test]
fn hooks_see_the_state() {
    let dir = TempDir::new("hooks");
    let record = |name: &str| {
        let file = dir.path().join(name);
        serde_json::json!([{ "path": "/bin/sh", "args": ["sh", "-c", format!("cat > {}", file.display())] }])
    };
    let hooks = serde_json::json!({
        "prestart": record("prestart.json"),
        "poststart": record("poststart.json"),
        "poststop": record("poststop.json"),
    });
    let oci = Oci::new(&["true"], serde_json::json!({ "hooks": hooks }));
    let id = unique("hooks");
    oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]).assert_code(0);
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(name)).unwrap()).unwrap()
    };
    let pre = read("prestart.json");
    assert_eq!((pre["id"].as_str(), pre["status"].as_str()), (Some(id.as_str()), Some("created")), "{pre}");
    assert!(pre["pid"].as_i64().unwrap() > 0, "{pre}");
    assert_eq!(read("poststart.json")["id"], id.as_str());
    assert_eq!(read("poststop.json")["status"], "stopped");
}

#[test]
fn bad_input_gets_clear_errors() {
    let oci = Oci::new(&["true"], serde_json::json!({}));
    let bundle = oci.bundle.to_str().unwrap();
    let check = |r: Run, want: &str| {
        assert_eq!(r.code, 1, "{}", r.describe());
        assert!(r.stderr_str().contains(want), "wanted {want:?}\n{}", r.describe());
    };
    check(oci.husk(&["state", "nope"]), "does not exist");
    check(oci.husk(&["kill", "nope"]), "does not exist");
    check(oci.husk(&["create", "--bundle", bundle, "a/b"]), "invalid container id");
    check(oci.husk(&["kill", "nope", "NOSIG"]), "unknown signal");
    let empty = TempDir::new("nobundle");
    check(oci.husk(&["create", "--bundle", empty.path().to_str().unwrap(), "x"]), "config.json");
    std::fs::write(empty.path().join("config.json"), "{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {,\n}").unwrap();
    check(oci.husk(&["create", "--bundle", empty.path().to_str().unwrap(), "x"]), "line 3");
    std::fs::write(empty.path().join("config.json"), r#"{"ociVersion":"1.0.2","root":{"path":"/"}}"#).unwrap();
    check(oci.husk(&["create", "--bundle", empty.path().to_str().unwrap(), "x"]), "no process");
    let missing = serde_json::json!({"ociVersion":"1.0.2","root":{"path":"/"},
        "process":{"args":["true"],"cwd":"/","user":{"uid":0,"gid":0}},
        "mounts":[{"destination":"/data","type":"bind","source":"/nonexistent/husk","options":["rbind"]}]});
    std::fs::write(empty.path().join("config.json"), missing.to_string()).unwrap();
    check(oci.husk(&["create", "--bundle", empty.path().to_str().unwrap(), "x"]), "/nonexistent/husk does not exist");
    assert!(!oci.root.join("x").exists(), "a failed create leaves no state");

    let id = unique("dup");
    oci.create(&id);
    check(oci.husk(&["create", "--bundle", bundle, &id]), "already exists");
    oci.husk(&["delete", &id]).assert_code(0);
}

#[test]
fn bind_mounts_and_a_read_only_root() {
    let host = TempDir::new("binds");
    let (rw, ro) = (host.path().join("rw"), host.path().join("ro"));
    std::fs::create_dir_all(&rw).unwrap();
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::write(ro.join("in.txt"), "from the host\n").unwrap();
    let script = "cat /ro/in.txt; echo from the guest > /new/deep/rw/out.txt; \
                  echo x > /ro/new 2>/dev/null || echo ro refused; \
                  echo x > /etc/husk-probe 2>/dev/null || echo root refused; \
                  echo y > /tmp/scratch && echo tmp writable; \
                  echo z > /run-husk/z && stat -c %a /run-husk";
    let mount = |dir: &Path, dest: &str, opts: &[&str]| serde_json::json!({ "destination": dest, "type": "bind", "source": dir, "options": opts });
    let extra = serde_json::json!({
        "root": { "path": "/", "readonly": true },
        "mounts": [
            mount(&rw, "/new/deep/rw", &["rbind"]),
            mount(&ro, "/ro", &["rbind", "ro"]),
            { "destination": "/run-husk", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=750"] },
        ],
    });
    let oci = Oci::new(&["sh", "-c", script], extra);
    let id = unique("binds");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "from the host\nro refused\nroot refused\ntmp writable\n750\n", "{}", r.describe());
    assert_eq!(std::fs::read_to_string(rw.join("out.txt")).unwrap(), "from the guest\n");
    assert!(!ro.join("new").exists());
    assert!(!Path::new("/etc/husk-probe").exists());
    oci.assert_gone(&id, 0);
}

#[test]
fn single_files_bind_over_files_and_new_paths() {
    // Docker binds /etc/hosts, /etc/hostname and /etc/resolv.conf like
    // this: the file replaces the image's; a path the image lacks is made.
    let host = TempDir::new("filebinds");
    let (hosts, conf, log) = (host.path().join("hosts"), host.path().join("app.conf"), host.path().join("log"));
    std::fs::write(&hosts, "127.0.0.1 localhost husk-test\n").unwrap();
    std::fs::write(&conf, "setting=1\n").unwrap();
    std::fs::write(&log, "").unwrap();
    let script = "cat /etc/hosts; cat /new/dir/app.conf; echo appended >> /var/log/husk.log; \
                  echo x > /new/dir/app.conf 2>/dev/null || echo ro refused; \
                  ls /new/dir; getent hosts husk-test";
    let mount = |f: &Path, dest: &str, opts: &[&str]| serde_json::json!({ "destination": dest, "type": "bind", "source": f, "options": opts });
    let extra = serde_json::json!({
        "mounts": [
            mount(&hosts, "/etc/hosts", &["rbind", "ro"]),
            mount(&conf, "/new/dir/app.conf", &["rbind", "ro"]),
            mount(&log, "/var/log/husk.log", &["rbind"]),
        ],
    });
    let oci = Oci::new(&["sh", "-c", script], extra);
    let id = unique("filebinds");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(0);
    assert_eq!(
        r.stdout_str(),
        "127.0.0.1 localhost husk-test\nsetting=1\nro refused\napp.conf\n127.0.0.1       localhost husk-test\n",
        "{}",
        r.describe()
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "appended\n");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "setting=1\n");
    oci.assert_gone(&id, 0);
}

#[test]
fn masked_and_read_only_paths() {
    // Docker hides /proc/kcore and friends and makes /proc/sys read-only;
    // here a directory and a file are masked and /tmp is made read-only.
    let script = "ls /usr/share/doc | wc -l; wc -c < /etc/os-release; \
                  echo x > /etc/os-release && echo masked file writable; \
                  echo x > /tmp/f 2>/dev/null || echo tmp read-only; \
                  ls /usr/share | grep -c '^doc$'";
    let extra = serde_json::json!({
        "linux": {
            "maskedPaths": ["/usr/share/doc", "/etc/os-release", "/no/such/path"],
            "readonlyPaths": ["/tmp"],
        },
    });
    let oci = Oci::new(&["sh", "-c", script], extra);
    let id = unique("masked");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "0\n0\nmasked file writable\ntmp read-only\n1\n", "{}", r.describe());
    assert!(std::fs::metadata("/etc/os-release").unwrap().len() > 0);
    oci.assert_gone(&id, 0);
}

#[test]
fn kill_all_reaches_every_process() {
    let script = "trap 'echo init got USR1' USR1; \
                  sh -c 'trap \"echo child got USR1; exit 0\" USR1; echo child ready; while :; do sleep 0.05; done' & \
                  while :; do sleep 0.05; done";
    let oci = Oci::new(&["sh", "-c", script], serde_json::json!({}));
    let id = unique("killall");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "child ready");
    oci.husk(&["kill", "--all", &id, "USR1"]).assert_code(0);
    let text = wait_output(&out, "child got USR1");
    wait_output(&out, "init got USR1");
    assert!(text.starts_with("child ready\n"), "{text}");
    oci.husk(&["kill", &id, "KILL"]).assert_code(0);
    oci.wait_for(&id, "stopped");
    oci.husk(&["delete", &id]).assert_code(0);
}

#[test]
fn wait_reports_how_the_container_ended() {
    let oci = Oci::new(&["sh", "-c", "sleep 0.3; exit 9"], serde_json::json!({}));
    let id = unique("wait");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    let r = oci.husk(&["wait", &id]);
    r.assert_code(9);
    let status: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(status, serde_json::json!({ "id": id, "exitStatus": 9 }));
    oci.wait_for(&id, "stopped");
    oci.husk(&["delete", &id]).assert_code(0);
}

#[test]
fn a_given_network_namespace_is_joined() {
    let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].into_iter().find(|p| Path::new(p).exists());
    let Some(ip) = ip else {
        eprintln!("SKIPPED a_given_network_namespace_is_joined: iproute2's ip is not installed");
        return;
    };
    let name = unique("husk-netns");
    let added = Command::new(ip).args(["netns", "add", &name]).status().unwrap();
    assert!(added.success(), "ip netns add {name}");
    let path = format!("/var/run/netns/{name}");
    let extra = serde_json::json!({ "linux": { "namespaces": [{ "type": "network", "path": path }] } });
    let oci = Oci::new(&["sleep", "60"], extra);
    let id = unique("netns");
    oci.create(&id);
    let pid = oci.state(&id)["pid"].as_i64().unwrap();
    let joined = std::fs::read_link(format!("/proc/{pid}/ns/net")).unwrap();
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&path).unwrap());
    oci.husk(&["delete", "--force", &id]).assert_code(0);
    let _ = Command::new(ip).args(["netns", "delete", &name]).status();
    assert_eq!(joined.to_string_lossy(), format!("net:[{ino}]"));
}

#[test]
fn a_containers_init_gets_only_the_signals_it_handles() {
    // As the init of a pid namespace: SIGTERM without a handler is
    // ignored (docker stop then escalates to SIGKILL); a handler runs.
    let oci = Oci::new(&["sleep", "60"], serde_json::json!({}));
    let id = unique("init");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    oci.husk(&["kill", &id, "TERM"]).assert_code(0);
    oci.husk(&["kill", &id, "INT"]).assert_code(0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(oci.state(&id)["status"], "running");
    oci.husk(&["exec", &id, "kill", "-TERM", "1"]).assert_code(0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(oci.state(&id)["status"], "running", "nor from inside");
    oci.husk(&["kill", &id, "KILL"]).assert_code(0);
    oci.wait_for(&id, "stopped");
    oci.husk(&["delete", &id]).assert_code(0);
}

#[test]
fn husk_run_lets_other_commands_in_while_it_waits() {
    let oci = Oci::new(&["sleep", "2"], serde_json::json!({}));
    let id = unique("runlock");
    let mut run = oci
        .cmd(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !oci.root.join(&id).join("state.json").exists() {
        assert!(Instant::now() < deadline, "husk run never created {id}");
        std::thread::sleep(Duration::from_millis(10));
    }
    oci.wait_for(&id, "running");
    let exec = oci.husk(&["exec", &id, "true"]);
    exec.assert_code(0);
    assert!(run.wait().unwrap().success());
    oci.assert_gone(&id, 0);
}

#[test]
fn process_rlimits_and_additional_groups_apply() {
    let extra = serde_json::json!({ "process": {
        "args": ["sh", "-c", "ulimit -n; ulimit -Hn; id -G"],
        "cwd": "/",
        "env": ["PATH=/usr/bin:/bin"],
        "user": { "uid": 0, "gid": 0, "additionalGids": [5, 6] },
        "rlimits": [{ "type": "RLIMIT_NOFILE", "soft": 123, "hard": 456 }],
    }});
    let oci = Oci::new(&[], extra);
    let id = unique("limits");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "123\n456\n0 5 6\n", "{}", r.describe());
}

/// process.capabilities are the container's privileges, whatever its
/// uid: root with just CAP_CHOWN may chown but not set the hostname or
/// bind a privileged port; noNewPrivileges shows. An unknown capability
/// is refused.
#[test]
fn process_capabilities_bound_roots_privileges() {
    let script = "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; \
                  chown 1 /tmp && echo chown ok; hostname other 2>/dev/null || echo hostname refused";
    let process = |caps: serde_json::Value| {
        serde_json::json!({ "process": {
            "args": ["sh", "-c", script],
            "cwd": "/",
            "env": ["PATH=/usr/bin:/bin"],
            "user": { "uid": 0, "gid": 0 },
            "noNewPrivileges": true,
            "capabilities": caps,
        }})
    };
    let only_chown = serde_json::json!({
        "bounding": ["CAP_CHOWN"], "effective": ["CAP_CHOWN"], "permitted": ["CAP_CHOWN"],
    });
    let oci = Oci::new(&[], process(only_chown));
    let id = unique("caps");
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    r.assert_code(0);
    assert_eq!(
        r.stdout_str(),
        "CapEff:\t0000000000000001\nCapBnd:\t0000000000000001\nNoNewPrivs:\t1\nchown ok\nhostname refused\n",
        "{}",
        r.describe()
    );
    let oci = Oci::new(&[], process(serde_json::json!({ "bounding": ["CAP_FLY"] })));
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &unique("caps")]);
    assert_ne!(r.code, 0);
    assert!(r.stderr_str().contains("CAP_FLY"), "{}", r.describe());
}

/// linux.sysctl reaches the sandbox's view: Docker's default
/// ip_unprivileged_port_start=0 lets a non-root process bind port 80;
/// a sysctl the sandbox has no view of is left aside, not fatal.
#[test]
fn sysctls_reach_the_sandbox() {
    let script = "cat /proc/sys/net/ipv4/ip_unprivileged_port_start; \
                  python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 80)); print('bound', s.getsockname()[1])\"";
    let extra = serde_json::json!({
        "process": {
            "args": ["sh", "-c", script],
            "cwd": "/",
            "env": ["PATH=/usr/bin:/bin"],
            "user": { "uid": 1000, "gid": 1000 },
        },
        "linux": { "sysctl": { "net.ipv4.ip_unprivileged_port_start": "0", "vm.swappiness": "1" } },
    });
    let oci = Oci::new(&[], extra);
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &unique("sysctl")]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "0\nbound 80\n", "{}", r.describe());
}

/// /sys/fs/cgroup is a read-only cgroup v2 view of the container's
/// limits, as runtimes (the JVM, Node, Go) read them to size themselves.
#[test]
fn the_cgroup_view_shows_the_containers_limits() {
    let script = "cd /sys/fs/cgroup && cat cpu.max pids.max memory.max cgroup.procs; \
                  echo 5 > pids.max 2>/dev/null || echo read-only";
    let extra = serde_json::json!({
        "process": { "args": ["sh", "-c", script], "cwd": "/", "env": ["PATH=/usr/bin:/bin"], "user": { "uid": 0, "gid": 0 } },
        "linux": { "resources": {
            "cpu": { "quota": 50000, "period": 100000 },
            "pids": { "limit": 64 },
            "memory": { "limit": 268_435_456 },
        }},
    });
    let oci = Oci::new(&[], extra);
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &unique("cgview")]);
    r.assert_code(0);
    // cgroup.procs: the shell and cat.
    assert_eq!(r.stdout_str(), "50000 100000\n64\n268435456\n1\n2\nread-only\n", "{}", r.describe());
}

/// A container's writable filesystems share the disk limit given by the
/// runtime's flag or, where the operator allows, by its annotation.
#[test]
fn a_containers_disk_limit_comes_from_the_flag_or_its_annotation() {
    let script = "df -k /tmp /scratch | tail -n +2 | while read fs size rest; do echo $size; done; \
                  dd if=/dev/zero of=/scratch/f bs=1M count=40 2>/dev/null || echo enospc";
    let extra = |annotations: serde_json::Value| {
        serde_json::json!({
            "mounts": [{ "destination": "/scratch", "type": "tmpfs", "source": "tmpfs", "options": ["mode=1777"] }],
            "annotations": annotations,
        })
    };
    let oci = Oci::new(&["sh", "-c", script], extra(serde_json::json!({})));
    let r = oci.husk(&["--disk-limit", "8M", "run", "--bundle", oci.bundle.to_str().unwrap(), &unique("disk")]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "8192\n8192\nenospc\n", "{}", r.describe());
    let oci = Oci::new(&["sh", "-c", script], extra(serde_json::json!({ "dev.husk.flag.disk-limit": "16M" })));
    let r = oci.husk(&["--allow-flag-override", "run", "--bundle", oci.bundle.to_str().unwrap(), &unique("disk")]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "16384\n16384\nenospc\n", "{}", r.describe());
}

/// `update` reaches the sandbox's cgroup view as well as the host cgroup.
#[test]
fn update_changes_the_cgroup_view() {
    let extra = serde_json::json!({ "linux": { "resources": { "pids": { "limit": 64 } } } });
    let oci = Oci::new(&["sleep", "60"], extra);
    let id = unique("update");
    oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    let view = || oci.husk(&["exec", &id, "sh", "-c", "echo $(cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/pids.max)"]);
    assert_eq!(view().stdout_str(), "max 100000 64\n");
    let resources = oci.dir.path().join("resources.json");
    std::fs::write(&resources, r#"{"cpu": {"quota": 25000, "period": 100000}, "pids": {"limit": 32}}"#).unwrap();
    oci.husk(&["update", "--resources", resources.to_str().unwrap(), &id]).assert_code(0);
    let r = view();
    assert_eq!(r.stdout_str(), "25000 100000 32\n", "{}", r.describe());
    oci.husk(&["delete", "--force", &id]).assert_code(0);
}

/// Receives the console master `husk create` sends over `listener`.
fn receive_console(listener: &std::os::unix::net::UnixListener) -> std::fs::File {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    use std::os::fd::{AsRawFd, FromRawFd};
    let (conn, _) = listener.accept().unwrap();
    let mut name = [0u8; 256];
    let mut iov = [std::io::IoSliceMut::new(&mut name)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let msg = recvmsg::<()>(conn.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::empty()).unwrap();
    let fd = msg
        .cmsgs()
        .unwrap()
        .find_map(|c| match c {
            ControlMessageOwned::ScmRights(fds) => fds.first().copied(),
            _ => None,
        })
        .expect("a descriptor on the console socket");
    // SAFETY: the descriptor just arrived and is owned by nobody else.
    unsafe { std::fs::File::from_raw_fd(fd) }
}

/// A created container with `terminal: true` and its console: what the
/// terminal shows is gathered as it comes.
struct ConsoleSession {
    oci: Oci,
    id: String,
    pid: i64,
    master: std::fs::File,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl ConsoleSession {
    /// Creates and starts a container running `args` on a 30x100 console.
    fn start(args: &[&str]) -> ConsoleSession {
        ConsoleSession::start_with(args, &[])
    }

    /// `start`, with husk's global `flags` at create.
    fn start_with(args: &[&str], flags: &[&str]) -> ConsoleSession {
        use std::io::Read;
        let oci = Oci::new(
            &[],
            serde_json::json!({ "process": {
                "terminal": true,
                "consoleSize": { "height": 30, "width": 100 },
                "args": args,
                "cwd": "/",
                "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "PS1=$ ", "TERM=dumb"],
                "user": { "uid": 0, "gid": 0 },
            }}),
        );
        let id = unique("console");
        let sock = oci.dir.path().join("console.sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let mut create = oci
            .cmd(flags)
            .args(["create", "--bundle", oci.bundle.to_str().unwrap(), "--console-socket", sock.to_str().unwrap()])
            .arg(&id)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let master = receive_console(&listener);
        assert!(create.wait().unwrap().success(), "create failed");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        oci.husk(&["start", &id]).assert_code(0);
        let pid = oci.state(&id)["pid"].as_i64().unwrap();
        ConsoleSession { oci, id, pid, master, seen }
    }

    /// Types `keys` (repeating them every 100 ms when `again`, for keys
    /// that may arrive before the guest is ready for them) until `want`
    /// shows on the terminal.
    fn type_until(&mut self, keys: &[u8], again: bool, want: &str) {
        use std::io::Write;
        let deadline = Instant::now() + Duration::from_secs(20);
        self.master.write_all(keys).unwrap();
        while !self.seen.lock().unwrap().contains(want) {
            assert!(Instant::now() < deadline, "{want:?} never appeared: {:?}", self.seen.lock().unwrap());
            std::thread::sleep(Duration::from_millis(100));
            if again {
                self.master.write_all(keys).unwrap();
            }
        }
    }

    /// Waits for the container to end, deletes it and checks it is gone.
    fn finish(self) {
        self.oci.wait_for(&self.id, "stopped");
        self.oci.husk(&["delete", &self.id]).assert_code(0);
        self.oci.assert_gone(&self.id, self.pid);
    }
}

/// A container with `terminal: true`: its console's master arrives on the
/// console socket, and behind it is a terminal of the sentry's, with the
/// spec's size, a /dev/pts name, line editing and echo, and ^C sent to the
/// foreground job (not the protected init).
#[test]
fn a_console_is_a_terminal_with_line_editing_and_job_control() {
    // The shell traps SIGINT so that it lives on to report how its job
    // ended (without a handler, dash exits 130 itself after its child).
    let script = "trap 'echo trapped' INT; stty size; tty; read line; echo \"got:$line\"; sleep 30; echo \"after:$?\"";
    let mut c = ConsoleSession::start(&["sh", "-c", script]);
    c.type_until(b"", false, "30 100\r\n/dev/pts/");
    c.type_until(b"ab\x7fc\r", false, "ab\x08 \x08c\r\ngot:ac\r\n");
    c.type_until(b"\x03", true, "^Ctrapped\r\nafter:130\r\n");
    c.finish();
}

/// An interactive shell on a container's console has job control: ^Z
/// stops the foreground job, `jobs` and `fg` find it, ^C ends it.
#[test]
fn an_interactive_shell_on_the_console_has_job_control() {
    let mut c = ConsoleSession::start(&["bash", "--norc", "--noprofile", "-i"]);
    c.type_until(b"", false, "$ ");
    c.type_until(b"sleep 30\r", false, "sleep 30\r\n");
    c.type_until(b"\x1a", true, "Stopped");
    c.type_until(b"jobs\r", false, "jobs\r\n[1]+  Stopped");
    c.type_until(b"fg\r", false, "fg\r\nsleep 30\r\n");
    c.type_until(b"\x03", true, "^C\r\n$ ");
    // Readline flushes input typed while it sets the terminal up again.
    std::thread::sleep(Duration::from_millis(300));
    c.type_until(b"echo status $?\r", false, "status 130");
    c.type_until(b"exit\r", false, "exit");
    c.finish();
}

/// What a container writes to its console leaves with secret values
/// redacted, while the guest reads the real one.
#[test]
fn a_console_shows_secrets_redacted() {
    let value = "console-secret-0123456789";
    let flag = format!("--secret=TOKEN={value}");
    let script = format!("v=$(cat /run/secrets/TOKEN); echo \"<$v>\"; [ \"$v\" = {value} ] && echo same");
    let mut c = ConsoleSession::start_with(&["sh", "-c", &script], &[&flag]);
    c.type_until(b"", false, "<[REDACTED:TOKEN]>\r\nsame\r\n");
    assert!(!c.seen.lock().unwrap().contains("console-secret"));
    c.finish();
}

/// `dev.husk.secret.NAME=@FILE` delivers the file's contents as a secret
/// (and `dev.husk.flag.secret-env` puts it in the environment), but only
/// when the operator allows annotations to set flags.
#[test]
fn secret_annotations_need_the_operators_consent() {
    let script = "cat /run/secrets/TOKEN 2>/dev/null || echo none; echo; echo \"env:$TOKEN\"";
    let oci = Oci::new(&["sh", "-c", script], serde_json::json!({}));
    let file = oci.dir.path().join("token");
    std::fs::write(&file, "annotated-secret-value").unwrap();
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(oci.bundle.join("config.json")).unwrap()).unwrap();
    config["annotations"] = serde_json::json!({
        "dev.husk.secret.TOKEN": format!("@{}", file.display()),
        "dev.husk.flag.secret-env": "TOKEN",
    });
    std::fs::write(oci.bundle.join("config.json"), config.to_string()).unwrap();
    let bundle = oci.bundle.to_str().unwrap();
    let r = oci.husk(&["run", "--bundle", bundle, &unique("secret-no")]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "none\n\nenv:\n", "{}", r.describe());
    let r = oci.husk(&["--allow-flag-override", "run", "--bundle", bundle, &unique("secret-yes")]);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "[REDACTED:TOKEN]\nenv:[REDACTED:TOKEN]\n", "{}", r.describe());
}

#[test]
fn a_container_keeps_an_audit_log_that_outlives_it() {
    let oci = Oci::new(&["sh", "-c", "echo hi; exit 4"], serde_json::json!({}));
    let id = unique("audit");
    oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &id]).assert_code(4);
    oci.assert_gone(&id, 0);
    let show = oci.husk(&["audit", "show", &id]);
    show.assert_code(0);
    let recs: Vec<serde_json::Value> = show.stdout_str().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let types: Vec<&str> = recs.iter().map(|r| r["type"].as_str().unwrap()).collect();
    // `husk run` deletes its container as `husk delete` does: the log
    // ends with the runtime's `sandbox.delete`.
    assert_eq!(
        types,
        ["sandbox.create", "process.exec", "sandbox.start", "process.exit", "sandbox.exit", "sandbox.delete"]
    );
    assert!(recs.iter().all(|r| r["sandbox"] == id.as_str()));
    assert_eq!(recs[1]["argv"], serde_json::json!(["sh", "-c", "echo hi; exit 4"]));
    assert_eq!((&recs[4]["reason"], &recs[4]["status"]), (&"exited".into(), &4.into()));
    assert_eq!(
        (&recs[5]["reason"], &recs[5]["force"], &recs[5]["closed_by"]),
        (&"deleted".into(), &false.into(), &"runtime".into())
    );
    let copy = oci.dir.path().join("shown.log");
    std::fs::write(&copy, show.stdout).unwrap();
    oci.husk(&["audit", "verify", copy.to_str().unwrap()]).assert_code(0);

    // Or where --audit-log says.
    let log = oci.dir.path().join("run.log");
    let id = unique("audit");
    oci.husk(&["--audit-log", log.to_str().unwrap(), "run", "--bundle", oci.bundle.to_str().unwrap(), &id])
        .assert_code(4);
    let v = oci.husk(&["audit", "verify", log.to_str().unwrap()]);
    v.assert_code(0);
    assert!(v.stdout_str().contains(&format!("6 records of sandbox {id}")), "{}", v.describe());
}

#[test]
fn a_container_killed_with_sigkill_has_its_audit_log_closed() {
    let oci = Oci::new(&["sh", "-c", "echo started; while :; do sleep 0.05; done"], serde_json::json!({}));
    let id = unique("auditkill");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "started");
    oci.husk(&["kill", &id, "KILL"]).assert_code(0);
    oci.husk(&["delete", &id]).assert_code(0);
    let show = oci.husk(&["audit", "show", &id]);
    // The exit the runtime wrote for the killed sentry, then the delete.
    let text = show.stdout_str();
    let exit: serde_json::Value = serde_json::from_str(text.lines().rev().nth(1).unwrap()).unwrap();
    assert_eq!(
        (&exit["type"], &exit["reason"], &exit["signal"]),
        (&"sandbox.exit".into(), &"killed".into(), &9.into())
    );
    assert_eq!(exit["closed_by"], "runtime");
    let copy = oci.dir.path().join("killed.log");
    std::fs::write(&copy, show.stdout).unwrap();
    oci.husk(&["audit", "verify", copy.to_str().unwrap()]).assert_code(0);
}

#[test]
fn sigkill_and_forced_delete_lose_no_batched_audit_record() {
    // file.create records wait in a batch for up to 5 ms; a guest making
    // files as fast as it can always has some waiting. Each is chained
    // before its file exists, so every file the kill left on the host has
    // its record in the log.
    for forced_delete in [false, true] {
        let host = TempDir::new("flushkill");
        let data = host.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let script = "i=0; while :; do i=$((i+1)); : > /data/f$i; [ $i = 50 ] && echo made 50; done";
        let extra = serde_json::json!({
            "root": { "path": "/", "readonly": true },
            "mounts": [{ "destination": "/data", "type": "bind", "source": &data, "options": ["rbind"] }],
        });
        let oci = Oci::new(&["sh", "-c", script], extra);
        let id = unique("flushkill");
        let out = oci.create_with(&["--audit-watch", "/data/**"], &id);
        oci.husk(&["start", &id]).assert_code(0);
        wait_output(&out, "made 50");
        if forced_delete {
            oci.husk(&["delete", "--force", &id]).assert_code(0);
        } else {
            oci.husk(&["kill", &id, "KILL"]).assert_code(0);
            oci.husk(&["delete", &id]).assert_code(0);
        }
        let (bytes, recs) = audit_records(&oci, &id);
        let (code, text) = verify_log(&oci, "flushkill.log", &bytes);
        assert_eq!(code, 0, "{text}");
        let created: std::collections::HashSet<&str> =
            recs.iter().filter(|r| r["type"] == "file.create").filter_map(|r| r["path"].as_str()).collect();
        let mut files: Vec<String> = std::fs::read_dir(&data)
            .unwrap()
            .map(|e| format!("/data/{}", e.unwrap().file_name().to_string_lossy()))
            .collect();
        files.sort_by_key(|f| f[7..].parse::<u64>().unwrap());
        assert!(files.len() >= 50, "{files:?}");
        assert!(created.contains("/data/f50"), "the known create is not in the log");
        let missing: Vec<&String> = files.iter().filter(|f| !created.contains(f.as_str())).collect();
        assert!(missing.is_empty(), "files made without their record in the log: {missing:?} (of {})", files.len());
        let exit = &recs[recs.len() - 2];
        assert_eq!((&exit["type"], &exit["reason"]), (&"sandbox.exit".into(), &"killed".into()));
    }
}

/// The records of a container's log, parsed.
fn audit_records(oci: &Oci, id: &str) -> (Vec<u8>, Vec<serde_json::Value>) {
    let show = oci.husk(&["audit", "show", id]);
    show.assert_code(0);
    let recs = show.stdout_str().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (show.stdout, recs)
}

/// Runs `husk audit verify` on `bytes`; its exit code and output.
fn verify_log(oci: &Oci, name: &str, bytes: &[u8]) -> (i32, String) {
    let path = oci.dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let v = oci.husk(&["audit", "verify", path.to_str().unwrap()]);
    (v.code, v.stdout_str())
}

#[test]
fn pause_resume_and_delete_are_in_the_containers_audit_log() {
    let oci = Oci::new(&["sh", "-c", "echo started; while :; do sleep 0.05; done"], serde_json::json!({}));
    let id = unique("auditpause");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "started");
    oci.husk(&["pause", &id]).assert_code(0);
    assert_eq!(oci.state(&id)["status"], "paused");
    // Frozen: the loop execs no more sleeps, so nothing is recorded.
    let log = oci.root.join("@audit").join(format!("{id}.log"));
    let paused = std::fs::read(&log).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read(&log).unwrap(), paused, "records were written while paused");
    assert!(paused.ends_with(b"\n"));
    let last = paused[..paused.len() - 1].rsplit(|&b| b == b'\n').next().unwrap();
    let last: serde_json::Value = serde_json::from_slice(last).unwrap();
    assert_eq!(last["type"], "sandbox.pause", "the pause record is the last before the freeze");
    oci.husk(&["resume", &id]).assert_code(0);
    assert_eq!(oci.state(&id)["status"], "running");
    oci.husk(&["kill", &id, "KILL"]).assert_code(0);
    oci.husk(&["delete", &id]).assert_code(0);

    let (bytes, recs) = audit_records(&oci, &id);
    let lifecycle: Vec<&str> =
        recs.iter().map(|r| r["type"].as_str().unwrap()).filter(|t| t.starts_with("sandbox.")).collect();
    assert_eq!(
        lifecycle,
        ["sandbox.create", "sandbox.start", "sandbox.pause", "sandbox.resume", "sandbox.exit", "sandbox.delete"]
    );
    let n = recs.len();
    assert_eq!(recs[n - 2]["type"], "sandbox.exit");
    let delete = &recs[n - 1];
    assert_eq!(
        (&delete["reason"], &delete["force"], &delete["closed_by"], &delete["sandbox"]),
        (&"deleted".into(), &false.into(), &"runtime".into(), &id.as_str().into())
    );
    assert_eq!(delete["seq"], n - 1);
    let (code, text) = verify_log(&oci, "deleted.log", &bytes);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains(&format!("{n} records")) && text.contains("(killed, signal 9; deleted)"), "{text}");

    // Without its delete line the log is that of a sandbox that exited
    // and was not deleted; without its exit too, it is open.
    let cut = |lines: usize| -> Vec<u8> {
        let text = std::str::from_utf8(&bytes).unwrap();
        text.lines().take(n - lines).flat_map(|l| format!("{l}\n").into_bytes()).collect()
    };
    let (code, text) = verify_log(&oci, "no-delete.log", &cut(1));
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("(killed, signal 9)") && !text.contains("deleted"), "{text}");
    let (code, text) = verify_log(&oci, "no-exit.log", &cut(2));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("seq {}): open", n - 3)), "{text}");

    // A paused container deleted by force: thawed, killed, closed, deleted.
    let id = unique("auditforce");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "started");
    oci.husk(&["pause", &id]).assert_code(0);
    oci.husk(&["delete", "--force", &id]).assert_code(0);
    let (bytes, recs) = audit_records(&oci, &id);
    let tail: Vec<(&str, &str)> = recs[recs.len() - 3..]
        .iter()
        .map(|r| (r["type"].as_str().unwrap(), r["reason"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(tail, [("sandbox.pause", ""), ("sandbox.exit", "killed"), ("sandbox.delete", "deleted")], "{recs:#?}");
    assert_eq!(recs[recs.len() - 1]["force"], true);
    let (code, text) = verify_log(&oci, "forced.log", &bytes);
    assert_eq!(code, 0, "{text}");
}

/// With its audit log on a descriptor (`--audit-log fd:N`) the runtime
/// cannot read a container's records back: the limits hold and are
/// recorded there, and `husk state` and `husk events --stats` answer as
/// usual, without `limits` (documented).
#[test]
fn limits_of_a_container_logging_to_a_descriptor_are_in_its_log_not_its_state() {
    use std::os::fd::AsRawFd;
    let script = "sh -c 'for i in 1 2 3 4 5; do sleep 60 & done'; echo after $?; sleep 60";
    let extra = serde_json::json!({ "linux": { "resources": { "pids": { "limit": 4 } } } });
    let oci = Oci::new(&["sh", "-c", script], extra);
    let log = oci.dir.path().join("fd-audit.log");
    let file = std::fs::File::create(&log).unwrap();
    // A duplicate without close-on-exec, for husk to inherit.
    let inherited = nix::unistd::dup(file.as_raw_fd()).unwrap();
    drop(file);
    let id = unique("fd-limits");
    let out = oci.create_with(&["--audit-log", &format!("fd:{inherited}")], &id);
    nix::unistd::close(inherited).unwrap();
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "after 2");
    let s = oci.state(&id);
    assert_eq!((&s["status"], s.get("limits")), (&"running".into(), None), "{s}");
    let ev = oci.husk(&["events", "--stats", &id]);
    assert!(ev.code == 0 || ev.stderr_str().contains("no cgroup"), "{}", ev.describe());
    assert!(!ev.stdout_str().contains("\"limits\""), "{}", ev.describe());
    oci.husk(&["delete", "--force", &id]).assert_code(0);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("\"type\":\"limit.pids\""), "{text}");
}

/// A container's pids limit is the sandbox's own (EAGAIN past it), and
/// `husk state` and `husk events --stats` name the limits it met; a
/// --timeout ends a container with 124, its state saying so.
#[test]
fn limits_hold_in_containers_and_their_state_names_them() {
    let script = "sh -c 'for i in 1 2 3 4 5 6 7 8 9; do sleep 60 & done'; echo after $?; sleep 60";
    let extra = serde_json::json!({ "linux": { "resources": { "pids": { "limit": 8 } } } });
    let oci = Oci::new(&["sh", "-c", script], extra);
    let id = unique("pids");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    let text = wait_output(&out, "after 2");
    assert!(text.contains("Cannot fork"), "{text}");
    let s = oci.state(&id);
    assert_eq!(s["status"], "running");
    assert_eq!(s["limits"][0]["type"], "limit.pids", "{s}");
    assert_eq!(s["limits"][0]["limit"], 8, "{s}");
    let ev = oci.husk(&["events", "--stats", &id]);
    if ev.code == 0 {
        let ev: serde_json::Value = serde_json::from_slice(&ev.stdout).unwrap();
        assert_eq!(ev["limits"][0]["type"], "limit.pids", "{ev}");
    } else {
        // (Without a host cgroup there are no stats.)
        assert!(ev.stderr_str().contains("no cgroup"), "{}", ev.describe());
    }
    oci.husk(&["delete", "--force", &id]).assert_code(0);

    let oci = Oci::new(&["sleep", "100"], serde_json::json!({}));
    let id = unique("timeout");
    let r =
        oci.husk(&["--timeout", "1s", "--timeout-grace", "1s", "run", "--bundle", oci.bundle.to_str().unwrap(), &id]);
    // (A container's init ignores SIGTERM without a handler: the grace's
    // SIGKILL ends it.)
    r.assert_code(124);
    oci.assert_gone(&id, 0);
    let show = oci.husk(&["audit", "show", &id]);
    assert!(show.stdout_str().contains("\"type\":\"limit.timeout\""), "{}", show.describe());
    assert!(show.stdout_str().contains("\"reason\":\"timeout\""), "{}", show.describe());

    // The limits are the sentry's, given at create.
    let id = unique("timeout");
    let created = oci
        .cmd(&["--timeout", "1s", "--timeout-grace", "1s", "create", "--bundle", oci.bundle.to_str().unwrap(), &id])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(created.success());
    oci.husk(&["start", &id]).assert_code(0);
    oci.wait_for(&id, "stopped");
    let s = oci.state(&id);
    assert_eq!(s["exitReason"], "timeout", "{s}");
    assert_eq!(s["limits"][0]["type"], "limit.timeout", "{s}");
    oci.husk(&["delete", &id]).assert_code(0);
}

/// `husk state` names a container's network (and that `host` is
/// unfiltered); `husk events --stats` counts its egress from the audit
/// log's net.* records.
#[test]
fn state_names_the_network_and_events_count_egress() {
    // A connect no rule allows: refused at once, and counted. (198.18.0.0/15
    // only, and it never leaves: there is no allow rule.)
    let probe = "import socket, time\n\
        try: socket.create_connection(('198.18.0.9', 80), timeout=5)\n\
        except PermissionError: print('eperm', flush=True)\n\
        time.sleep(60)\n";
    let oci = Oci::new(&["python3", "-c", probe], serde_json::json!({}));
    let id = unique("net-state");
    let out = oci.create(&id);
    oci.husk(&["start", &id]).assert_code(0);
    wait_output(&out, "eperm");
    let s = oci.state(&id);
    assert_eq!((&s["network"], s.get("egress")), (&"sandbox".into(), None), "{s}");
    let ev = oci.husk(&["events", "--stats", &id]);
    if ev.code == 0 {
        let ev: serde_json::Value = serde_json::from_slice(&ev.stdout).unwrap();
        assert_eq!((&ev["network"]["denied"], &ev["network"]["connections"]), (&1.into(), &0.into()), "{ev}");
    } else {
        assert!(ev.stderr_str().contains("no cgroup"), "{}", ev.describe());
    }
    oci.husk(&["delete", "--force", &id]).assert_code(0);

    let oci = Oci::new(&["sleep", "60"], serde_json::json!({}));
    let id = unique("net-host");
    oci.create_with(&["--network", "host"], &id);
    let s = oci.state(&id);
    assert_eq!((&s["network"], &s["egress"]), (&"host".into(), &"unfiltered".into()), "{s}");
    oci.husk(&["delete", "--force", &id]).assert_code(0);
}

/// linux.seccomp filters the container's calls as runc's libseccomp
/// filter would: mkdir fails with the profile's errno, unshare kills the
/// process that calls it (the shell sees SIGSYS, 128 + 31), the rest runs,
/// and the filter shows in /proc/self/status. A malformed profile is a
/// clear error before anything runs.
#[test]
fn the_seccomp_profile_filters_the_containers_calls() {
    let script = "mkdir /tmp/x 2>/dev/null; echo mkdir $?; grep -E '^Seccomp' /proc/self/status; \
                  unshare -U true; echo unshare $?; echo still here";
    let profile = serde_json::json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            { "names": ["mkdir", "mkdirat", "no_such_call"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1 },
            { "names": ["unshare"], "action": "SCMP_ACT_KILL_PROCESS" },
        ],
    });
    let oci = Oci::new(&["sh", "-c", script], serde_json::json!({ "linux": { "seccomp": profile } }));
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &unique("seccomp")]);
    r.assert_code(0);
    assert_eq!(
        r.stdout_str(),
        "mkdir 1\nSeccomp:\t2\nSeccomp_filters:\t1\nunshare 159\nstill here\n",
        "{}",
        r.describe()
    );

    let bad = serde_json::json!({ "defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
        { "names": ["read"], "action": "SCMP_ACT_ALLOW", "args": [{ "index": 9, "value": 0, "op": "SCMP_CMP_EQ" }] },
    ]});
    let oci = Oci::new(&["true"], serde_json::json!({ "linux": { "seccomp": bad } }));
    let r = oci.husk(&["run", "--bundle", oci.bundle.to_str().unwrap(), &unique("seccomp-bad")]);
    assert_ne!(r.code, 0, "{}", r.describe());
    assert!(r.stderr_str().contains("linux.seccomp: syscalls[0] has an argument index 9"), "{}", r.describe());
}
