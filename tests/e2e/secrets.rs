//! Secrets through `husk do`: /run/secrets/NAME holds the real value for
//! the guest while every spelling of it leaving the sandbox — stdout,
//! stderr, --strace, the debug log, the audit log — reads
//! `[REDACTED:NAME]`; the environment has no secret unless --secret-env
//! names it; a secret's TTL removes it; the value never reaches a host
//! command line or the sentry's environment.

use crate::util::{husk_do, kill_group, run, Run, TempDir};
use std::path::Path;

/// The value: its base64 holds `+` and `/` at every alignment, and its
/// percent-encoding differs from it.
const VALUE: &str = "sk-live?>>>??~/+%Z9q";

/// `/usr/bin/python3 -c script` under `husk do [flags]` in `dir`.
fn python(dir: &Path, flags: &[&str], script: &str) -> Run {
    let mut cmd = husk_do(flags, &["/usr/bin/python3", "-c", script]);
    cmd.current_dir(dir).env("PYTHONDONTWRITEBYTECODE", "1");
    run(cmd, None)
}

fn secret_flag() -> String {
    format!("API_KEY={VALUE}")
}

/// Whether `text` shows the value in a spelling the guest might print
/// (raw, or the parts of it that are letters).
fn shows_value(text: &str) -> bool {
    text.contains(VALUE) || text.contains("sk-live")
}

#[test]
fn the_guest_reads_the_value_the_host_sees_it_redacted() {
    let dir = TempDir::new("secret-read");
    let script = "import os, sys
v = open('/run/secrets/API_KEY').read()
print(v)
print('match', v == sys.argv[1][::-1])
print(oct(os.stat('/run/secrets/API_KEY').st_mode), os.stat('/run/secrets/API_KEY').st_uid == os.getuid())
print('env', any('API_KEY' in k or v in val for k, val in os.environ.items()))";
    let reversed: String = VALUE.chars().rev().collect();
    let flag = secret_flag();
    let mut cmd = husk_do(&["--secret", &flag], &["/usr/bin/python3", "-c", script, &reversed]);
    cmd.current_dir(dir.path());
    let r = run(cmd, None);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "[REDACTED:API_KEY]\nmatch True\n0o100400 True\nenv False\n", "{}", r.describe());
}

/// A guest with a secret starts threads (the sentry keeps the capability
/// that seizes its non-dumpable stubs' new threads): a second Python
/// thread reads the secret as the first does, and the pthreads program
/// `threads` (16 threads, locks, condition variables, TLS) passes, the
/// secret given as `@FILE`.
#[test]
fn threads_run_and_read_the_secret_with_a_secret() {
    let dir = TempDir::new("secret-threads");
    let file = dir.path().join("api_key");
    std::fs::write(&file, VALUE).unwrap();
    let flag = format!("API_KEY=@{}", file.display());
    let script = "import threading
seen = []
def read():
    seen.append((threading.get_native_id(), open('/run/secrets/API_KEY').read()))
t = threading.Thread(target=read)
t.start()
t.join()
tid, v = seen[0]
print('thread', tid != threading.get_native_id(), v == open('/run/secrets/API_KEY').read(), len(v))";
    let r = python(dir.path(), &["--secret", &flag], script);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), format!("thread True True {}\n", VALUE.len()), "{}", r.describe());
    let bin = crate::util::guest_bin("threads");
    let mut cmd = husk_do(&["--secret", &flag], &[bin]);
    cmd.current_dir(dir.path());
    run(cmd, None).assert_code(0);
}

#[test]
fn every_spelling_and_a_split_value_are_redacted() {
    let dir = TempDir::new("secret-spellings");
    let script = r#"import base64, os, re, sys, time, urllib.parse
v = open('/run/secrets/API_KEY', 'rb').read()
lines = []
for k in range(3):
    for enc in (base64.b64encode, base64.urlsafe_b64encode):
        e = enc(b'xyz'[:k] + v).decode()
        lines += [e, e.rstrip('=')]
lines += [v.hex(), v.hex().upper()]
q = urllib.parse.quote(v, safe='')
lines += [q, re.sub('%[0-9A-F]{2}', lambda m: m.group(0).lower(), q)]
lines += [''.join('%%%02X' % b for b in v), ''.join('%%%02x' % b for b in v)]
for i, l in enumerate(lines):
    print(i, l, flush=True)
for fd in (1, 2):
    os.write(fd, b'split ' + v[:9])
    time.sleep(0.02)
    os.write(fd, v[9:] + b' end\n')
"#;
    let flag = secret_flag();
    let r = python(dir.path(), &["--secret", &flag], script);
    r.assert_code(0);
    let out = r.stdout_str();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 19, "{}", r.describe());
    for l in &lines[..18] {
        assert!(l.contains("[REDACTED:API_KEY]"), "not redacted: {l}\n{}", r.describe());
    }
    assert_eq!(lines[18], "split [REDACTED:API_KEY] end");
    assert_eq!(r.stderr_str(), "split [REDACTED:API_KEY] end\n");
    assert!(!shows_value(&out));
}

#[test]
fn secret_env_puts_it_in_the_environment() {
    let dir = TempDir::new("secret-env");
    let script = "import os; print(os.environ.get('API_KEY') == open('/run/secrets/API_KEY').read()); print(os.environ['API_KEY'])";
    let flag = secret_flag();
    let r = python(dir.path(), &["--secret", &flag, "--secret-env", "API_KEY"], script);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "True\n[REDACTED:API_KEY]\n", "{}", r.describe());
}

#[test]
fn a_secret_is_gone_after_its_ttl() {
    let dir = TempDir::new("secret-ttl");
    let script = "import errno, os, time
f = open('/run/secrets/API_KEY', 'rb')
print('before', os.path.exists('/run/secrets/API_KEY'), os.listdir('/run/secrets'), flush=True)
time.sleep(2.5)
print('after', os.path.exists('/run/secrets/API_KEY'), os.listdir('/run/secrets'))
try:
    open('/run/secrets/API_KEY')
except OSError as e:
    print('open', errno.errorcode[e.errno])
try:
    f.read()
except OSError as e:
    print('read', errno.errorcode[e.errno])";
    let flag = secret_flag();
    let r = python(dir.path(), &["--secret", &flag, "--secret-ttl", "API_KEY=2s"], script);
    r.assert_code(0);
    assert_eq!(r.stdout_str(), "before True ['API_KEY']\nafter False []\nopen ENOENT\nread EIO\n", "{}", r.describe());
}

#[test]
fn no_log_shows_the_value() {
    let dir = TempDir::new("secret-logs");
    let d = dir.path();
    let (audit, debug) = (d.join("audit.log"), d.join("debug.log"));
    let flag = secret_flag();
    let flags = [
        "--secret",
        &flag,
        "--secret-ttl",
        "API_KEY=90s",
        "--audit-log",
        audit.to_str().unwrap(),
        "--debug-log",
        debug.to_str().unwrap(),
        "--debug",
        "--strace",
    ];
    // The value in an argv (process.exec), in output, and a program that
    // does not exist named after it (an error in the debug log).
    let script = r#"v=$(cat /run/secrets/API_KEY); /bin/echo "$v"; /bin/echo "$v" | base64; "/nonexistent/$v" 2>/dev/null; true"#;
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", script]);
    cmd.current_dir(d);
    let r = run(cmd, None);
    r.assert_code(0);
    assert!(r.stdout_str().starts_with("[REDACTED:API_KEY]\n"), "{}", r.describe());
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    let debug_text = std::fs::read_to_string(&debug).unwrap();
    for (what, text) in [("audit", &audit_text), ("debug", &debug_text), ("stdout", &r.stdout_str())] {
        assert!(!shows_value(text), "{what} shows the value");
        assert!(!text.contains(&hex(VALUE)), "{what} shows its hex");
    }
    assert!(debug_text.contains("strace"), "--strace lines are in the debug log");
    let named = r#""secrets":[{"name":"API_KEY","ttl_ms":90000,"env":false}]"#;
    assert!(audit_text.lines().next().is_some_and(|l| l.contains(named)), "sandbox.create names it: {audit_text}");
    assert!(audit_text.contains(r#""type":"file.read","pid":"#), "a file.read record");
    assert!(audit_text.contains(r#""path":"/run/secrets/API_KEY""#));
    assert!(audit_text.contains(r#""argv":["/bin/echo","[REDACTED:API_KEY]"]"#), "{audit_text}");
    let mut verify = std::process::Command::new(crate::util::husk_bin());
    verify.args(["audit", "verify"]).arg(&audit);
    run(verify, None).assert_code(0);
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn bad_secrets_are_refused_with_one_line() {
    let dir = TempDir::new("secret-bad");
    for flags in [
        &["--secret", "../x=long enough value"][..],
        &["--secret", "A=short"],
        &["--secret", "A=long enough value", "--secret-ttl", "A=soon"],
        &["--secret", "A=long enough value", "--secret-env", "B"],
        &["--secret", "A=@/nonexistent/secret/file"],
    ] {
        let r = python(dir.path(), flags, "print('ran')");
        r.assert_code(125);
        assert_eq!(r.stdout_str(), "");
        assert_eq!(r.stderr_str().lines().count(), 1, "{}", r.describe());
        assert!(!r.stderr_str().contains("long enough"), "{}", r.describe());
    }
}

/// The value, given as `env:VAR`, is on no host command line and in no
/// environment but the runtime's own (which had it to begin with), nor
/// in the guest's.
#[test]
fn the_value_is_on_no_host_command_line_or_sentry_environment() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let dir = TempDir::new("secret-ps");
    let unique = format!("{VALUE}-{}", std::process::id());
    // Not even `--env-keep '*'` hands the guest the source variable.
    let flags = ["--secret", "API_KEY=env:HUSK_TEST_SECRET", "--env-keep", "*"];
    let script = "echo ready $(env | grep -c HUSK_TEST_SECRET); read x";
    let mut cmd = husk_do(&flags, &["/bin/sh", "-c", script]);
    cmd.current_dir(dir.path()).env("HUSK_TEST_SECRET", &unique);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0);
    let mut child = cmd.spawn().unwrap();
    let pgid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let read = |f: &str| std::fs::read(entry.path().join(f)).unwrap_or_default();
        let has = |b: Vec<u8>| b.windows(unique.len()).any(|w| w == unique.as_bytes());
        if has(read("cmdline")) || (pid != pgid && has(read("environ"))) {
            seen.push(String::from_utf8_lossy(&read("cmdline")).replace('\0', " "));
        }
    }
    kill_group(pgid);
    let _ = child.wait();
    assert_eq!(line, "ready 0\n");
    assert!(seen.is_empty(), "the value is visible in: {seen:?}");
}

/// Output that may begin a value (a prompt) is held back only a moment,
/// not until more output comes.
#[test]
fn held_output_goes_out_after_a_moment() {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = TempDir::new("secret-idle");
    let flag = secret_flag();
    let mut cmd = husk_do(&["--secret", &flag], &["/bin/sh", "-c", "printf 'prompt> sk-l'; sleep 20"]);
    cmd.current_dir(dir.path()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0);
    let mut child = cmd.spawn().unwrap();
    let pgid = child.id();
    let mut out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while let Ok(n @ 1..) = out.read(&mut buf) {
            let _ = tx.send(buf[..n].to_vec());
        }
    });
    let start = Instant::now();
    let mut seen = Vec::new();
    while !seen.ends_with(b"sk-l") {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(b) => seen.extend(b),
            Err(_) => break,
        }
    }
    kill_group(pgid);
    let _ = child.wait();
    assert_eq!(String::from_utf8_lossy(&seen), "prompt> sk-l");
    // Well before the guest's sleep ends (20 s), even on a loaded machine.
    assert!(start.elapsed() < Duration::from_secs(15), "{:?}", start.elapsed());
}

/// Output the guest wrote before it exited reaches a reader that takes
/// it only later, all of it, redacted.
#[test]
fn a_slow_reader_gets_all_the_output() {
    let dir = TempDir::new("secret-slow");
    let script = format!(
        "{} do --secret API_KEY=slow-reader-secret -- /bin/sh -c 'head -c 300000 /dev/zero; cat /run/secrets/API_KEY' | (sleep 2; wc -c)",
        crate::util::husk_bin().display()
    );
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", &script]).current_dir(dir.path());
    let r = run(cmd, None);
    r.assert_code(0);
    assert_eq!(r.stdout_str().trim(), (300_000 + "[REDACTED:API_KEY]".len()).to_string(), "{}", r.describe());
}

/// husk's own message about a program that does not start, written on
/// the guest's stderr, does not show a value either.
#[test]
fn a_failed_exec_message_is_redacted() {
    let dir = TempDir::new("secret-exec");
    let flag = secret_flag();
    let program = format!("/nonexistent/{VALUE}");
    let mut cmd = husk_do(&["--secret", &flag], &[program.as_str()]);
    cmd.current_dir(dir.path());
    let r = run(cmd, None);
    r.assert_code(127);
    assert!(r.stderr_str().contains("/nonexistent/[REDACTED:API_KEY]"), "{}", r.describe());
    assert!(!shows_value(&r.stderr_str()));
}
