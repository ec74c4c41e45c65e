//! Running one command with a hard time bound. Every command runs in a
//! process group of its own, and husk-bench is a child subreaper, so that
//! a run that overstays its bound (runsc's KVM platform on a nested
//! machine never starts) is killed entirely — group, sandbox processes in
//! sessions of their own, and whatever they left behind.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// A finished run: its wall time, what it printed, and its peak memory.
pub struct Outcome {
    pub wall: Duration,
    pub stdout: String,
    /// `ru_maxrss` of `wait4` on the runtime's process, in KiB: the largest
    /// peak resident set of any one process of its tree that was reaped
    /// by its own parent (Linux gives the maximum, not the sum).
    pub peak_rss_kib: u64,
    /// User and system CPU time of the same processes (`ru_utime` +
    /// `ru_stime`: every process of the tree reaped by its parent, the
    /// sandbox's included): what the run cost the machine, which a busy
    /// machine changes far less than the wall time.
    pub cpu: Duration,
}

/// Processes of the run's own that outlive single runs (the egress row's
/// server): not leftovers, whatever their parent.
static SPARED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A long-lived helper in a process group of its own, spared by
/// [`kill_leftovers`] and killed (group and all) when dropped.
pub struct Server {
    child: std::process::Child,
    pid: i32,
}

impl Server {
    pub fn start(argv: &[String], cwd: &std::path::Path) -> Result<Server, String> {
        let (child, pid) = spawn(argv, cwd)?;
        if let Ok(mut spared) = SPARED.lock() {
            spared.push(pid);
        }
        Ok(Server { child, pid })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        signal_tree(self.pid, libc::SIGKILL);
        let _ = self.child.wait();
        if let Ok(mut spared) = SPARED.lock() {
            spared.retain(|p| *p != self.pid);
        }
    }
}

/// Makes orphans of our children's descendants ours, so that
/// [`kill_leftovers`] finds them.
pub fn become_subreaper() {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer flag and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Runs `argv` in `cwd` and waits for it at most `timeout`. Fails with the
/// tail of its stderr when it exits unsuccessfully.
pub fn run(argv: &[String], cwd: &std::path::Path, timeout: Duration) -> Result<Outcome, String> {
    // Before spawning: spawn returns once the program is exec'd, by when
    // a short one may have finished.
    let start = Instant::now();
    let (mut child, pid) = spawn(argv, cwd)?;
    let stdout = child.stdout.take().map(reader);
    let stderr = child.stderr.take().map(reader);
    // The child was spawned by us and is reaped here, by wait4, for its
    // resource usage; `child` is only dropped (which does not wait).
    drop(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let status = wait4(pid);
        let _ = tx.send((status, Instant::now()));
    });
    let result = rx.recv_timeout(timeout);
    if result.is_err() {
        stop(pid, || rx.recv_timeout(GRACE).is_ok());
    }
    kill_leftovers();
    let out = stdout.and_then(|h| h.join().ok()).unwrap_or_default();
    let err = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let Ok((status, end)) = result else {
        return Err(format!("no exit within {} s; killed", timeout.as_secs()));
    };
    let (status, peak_rss_kib, cpu) = status.map_err(|e| format!("wait: {e}"))?;
    if !status.success() {
        return Err(format!("{status}: {}", tail(&err)));
    }
    Ok(Outcome { wall: end.duration_since(start), stdout: out, peak_rss_kib, cpu })
}

/// A `timeval` of `rusage` as a duration.
fn duration_of(t: libc::timeval) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u32::try_from(t.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
}

/// Waits for our child `pid`: its exit status, `ru_maxrss` in KiB, and
/// its user and system CPU time.
fn wait4(pid: i32) -> std::io::Result<(std::process::ExitStatus, u64, Duration)> {
    use std::os::unix::process::ExitStatusExt as _;
    let mut status = 0;
    // SAFETY: rusage is plain old data, for which all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes only the status and rusage we pass, both
        // live locals of the right types.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            let kib = u64::try_from(usage.ru_maxrss).unwrap_or(0);
            let cpu = duration_of(usage.ru_utime) + duration_of(usage.ru_stime);
            return Ok((std::process::ExitStatus::from_raw(status), kib, cpu));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Starts `argv` (a long-lived command), waits `settle`, and returns the
/// proportional set size in KiB of it and all its descendants: what the
/// idle sandbox costs the host. The command is then killed.
pub fn idle_pss(argv: &[String], cwd: &std::path::Path, settle: Duration) -> Result<u64, String> {
    let (mut child, pid) = spawn(argv, cwd)?;
    std::thread::sleep(settle);
    let exited = child.try_wait().map_err(|e| format!("wait: {e}"))?;
    let pss = descendants(pid).iter().map(|p| pss_kib(*p)).sum();
    stop(pid, || {
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            if child.try_wait().is_ok_and(|s| s.is_some()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    });
    let _ = child.wait();
    kill_leftovers();
    match exited {
        Some(status) => Err(format!("exited before it was measured: {status}")),
        None => Ok(pss),
    }
}

fn spawn(argv: &[String], cwd: &std::path::Path) -> Result<(std::process::Child, i32), String> {
    let (prog, args) = argv.split_first().ok_or("empty command")?;
    let child = Command::new(prog)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {prog}: {e}"))?;
    let pid = i32::try_from(child.id()).map_err(|_| "pid out of range")?;
    Ok((child, pid))
}

fn reader<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(2)..].join(" / ")
}

/// How long a run asked to stop has before it is killed: time for runsc
/// to remove its state directory.
const GRACE: Duration = Duration::from_secs(2);

/// Asks `pid`'s tree to terminate, gives it until `exited` says so (or
/// gives up), then kills what is left.
fn stop(pid: i32, exited: impl FnOnce() -> bool) {
    signal_tree(pid, libc::SIGTERM);
    if !exited() {
        signal_tree(pid, libc::SIGKILL);
    }
}

/// Signals the process group `pid` leads and every descendant of `pid`
/// (sandbox processes may have sessions of their own).
fn signal_tree(pid: i32, signal: i32) {
    let all = descendants(pid);
    // SAFETY: kill only sends signals; a stale pid is harmless here (ESRCH).
    unsafe { libc::kill(-pid, signal) };
    for p in all {
        // SAFETY: as above.
        unsafe { libc::kill(p, signal) };
    }
}

/// Kills and reaps the processes orphaned onto us (we are a subreaper),
/// until none are left.
fn kill_leftovers() {
    let me = std::process::id();
    let spared = SPARED.lock().map(|s| s.clone()).unwrap_or_default();
    for _ in 0..50 {
        let orphans: Vec<i32> =
            parents().into_iter().filter(|(p, pp)| *pp == me && !spared.contains(p)).map(|(p, _)| p).collect();
        if orphans.is_empty() {
            return;
        }
        for p in orphans {
            // SAFETY: kill only sends a signal to our own child.
            unsafe { libc::kill(p, libc::SIGKILL) };
            // SAFETY: waitpid with a null status pointer writes no memory.
            unsafe { libc::waitpid(p, std::ptr::null_mut(), 0) };
        }
    }
}

/// `pid` and all processes below it.
fn descendants(pid: i32) -> Vec<i32> {
    let mut children: HashMap<u32, Vec<i32>> = HashMap::new();
    for (p, pp) in parents() {
        children.entry(pp).or_default().push(p);
    }
    let mut all = vec![pid];
    let mut i = 0;
    while let Some(&p) = all.get(i) {
        if let Some(c) = u32::try_from(p).ok().and_then(|p| children.get(&p)) {
            all.extend(c);
        }
        i += 1;
    }
    all
}

/// Every process and its parent.
fn parents() -> Vec<(i32, u32)> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            // The command name may hold spaces and parentheses: the fields
            // after it start behind the last ')'.
            let rest = stat.get(stat.rfind(')')? + 1..)?;
            Some((p, rest.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect()
}

fn pss_kib(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Pss:")?.split_whitespace().next()?.parse().ok()))
        .unwrap_or(0)
}
