//! The writer: one per sandbox, shared by every task thread. Records are
//! chained and appended to a batch under one lock; the batch goes to the
//! sink in one call (one write(2) for a file) before any record that
//! must be in the host kernel's hands before the action it describes
//! (see [`Record::may_wait`]), at every lifecycle record (also synced to
//! disk), when it grows past [`MAX_BATCH`], at exit, and at the latest
//! [`FLUSH_DELAY`] after its first record (the flusher thread). A record
//! the sink took survives a SIGKILL of the sentry.

use super::line::{push_line, push_str};
use super::record::Record;
use super::time::{rfc3339, Stamper};
use parking_lot::{Condvar, Mutex, MutexGuard};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// How long a record that may wait stays in the batch at most.
pub(super) const FLUSH_DELAY: Duration = Duration::from_millis(5);
/// A batch this large goes to the sink at once.
pub(super) const MAX_BATCH: usize = 64 * 1024;
/// How often an idle flusher looks whether its log is gone.
const IDLE_LOOK: Duration = Duration::from_secs(1);

/// Where lines go.
pub trait Sink: Send {
    /// Appends whole lines (each with its newline), in one call.
    fn append(&mut self, lines: &[u8]) -> std::io::Result<()>;
    /// Makes what was appended durable.
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Sink for std::fs::File {
    fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        self.write_all(lines)
    }

    fn sync(&mut self) -> std::io::Result<()> {
        // fsync, not fdatasync: the sentry's seccomp filter allows only it.
        match self.sync_all() {
            // A pipe or socket (`--audit-log fd:N`) has nothing to sync.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
            other => other,
        }
    }
}

/// The log could not be written: the sandbox must stop (fail closed).
#[derive(Debug, thiserror::Error)]
#[error("audit log: {0}")]
pub struct AuditError(pub String);

/// The chain's state, under one lock with the sink, so lines leave in
/// `seq` order.
struct Chain {
    sink: Box<dyn Sink>,
    seq: u64,
    /// The hex SHA-256 of the last line.
    prev: [u8; 64],
    /// The sink failed; under fail-closed nothing more is written.
    failed: bool,
    /// Chained lines the sink has not taken yet, in `seq` order.
    batch: Vec<u8>,
    /// The `seq` of the first line in `batch`.
    batch_from: u64,
    /// Where a line is serialised (kept to reuse its allocation).
    scratch: Vec<u8>,
    /// The records' time stamps.
    clock: Stamper,
    /// Between `sandbox.pause` and `sandbox.resume`: records other than
    /// lifecycle ones wait, and so do the actions they describe.
    held: bool,
    /// The sentry is about to be killed ([`AuditLog::flush_for_kill`]):
    /// no record waits in a batch any more.
    unbatched: bool,
}

/// What stops the sandbox when its log fails closed.
pub(super) type OnFailure = Box<dyn Fn(&AuditError) + Send + Sync>;

/// The sandbox's audit log.
pub struct AuditLog {
    /// The sandbox's id as a JSON string, as every line carries it.
    sandbox: Vec<u8>,
    fail_open: bool,
    chain: Mutex<Chain>,
    /// Wakes the flusher when a batch starts.
    batch_started: Condvar,
    /// Wakes writers held by a pause.
    released: Condvar,
    /// Called once, when a write fails under fail-closed: stops the
    /// sandbox (set by the boot code).
    on_failure: OnceLock<OnFailure>,
    /// The globs of watched paths.
    watch: super::glob::GlobSet,
    /// The globs of the paths whose opens for reading are recorded.
    read: super::glob::GlobSet,
    /// Whether forks are recorded.
    forks: bool,
}

/// Lowercase hex of SHA-256 of `bytes`.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&sha256_hex_bytes(bytes)).into_owned()
}

/// The same, as bytes.
fn sha256_hex_bytes(bytes: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    hex_into(&Sha256::digest(bytes), &mut out);
    out
}

/// Writes the lowercase hex of `bytes` into the start of `out` (twice
/// as long).
fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}

/// 16 random bytes from the host, in hex.
fn random_nonce() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let mut hex = [0u8; 32];
    hex_into(&bytes, &mut hex);
    Ok(String::from_utf8_lossy(&hex).into_owned())
}

impl AuditLog {
    /// Starts the log of sandbox `sandbox` on `sink` with its
    /// `sandbox.create` record (a fresh nonce and `config`).
    pub fn open(
        sandbox: &str,
        sink: Box<dyn Sink>,
        mut config: super::SecurityConfig,
        fail_open: bool,
    ) -> Result<AuditLog, AuditError> {
        let nonce = random_nonce().map_err(|e| AuditError(format!("a random nonce: {e}")))?;
        let prev = sha256_hex_bytes(nonce.as_bytes());
        config.audit_fail_open = fail_open;
        let watch = super::glob::GlobSet::new(&config.watch);
        let read = super::glob::GlobSet::new(&config.read);
        let chain = Chain {
            sink,
            seq: 0,
            prev,
            failed: false,
            batch: Vec::new(),
            batch_from: 0,
            scratch: Vec::new(),
            clock: Stamper::default(),
            held: false,
            unbatched: false,
        };
        let mut quoted = Vec::new();
        push_str(&mut quoted, sandbox);
        let log = AuditLog {
            watch,
            read,
            forks: config.audit_fork,
            sandbox: quoted,
            fail_open,
            chain: Mutex::new(chain),
            batch_started: Condvar::new(),
            released: Condvar::new(),
            on_failure: OnceLock::new(),
        };
        // The first record cannot be lost quietly, even failing open:
        // without it nothing after it verifies.
        log.write(&Record::SandboxCreate { nonce, config }).and_then(|()| {
            if log.chain.lock().failed {
                Err(AuditError("cannot write sandbox.create".into()))
            } else {
                Ok(())
            }
        })?;
        Ok(log)
    }

    /// Starts the thread that hands a batch to the sink at most
    /// [`FLUSH_DELAY`] after its first record; it ends soon after the log.
    pub fn start_flusher(log: &Arc<AuditLog>) -> std::io::Result<()> {
        let weak = Arc::downgrade(log);
        std::thread::Builder::new().name("audit-flush".into()).spawn(move || {
            // It may start before the sentry blocks the host signals it
            // waits for (SIGWINCH, the forwarded ones): a thread that left
            // them open would take them, and their default action (ignore,
            // or end the process) is not the sentry's.
            let _ = nix::sys::signal::SigSet::all().thread_block();
            while let Some(log) = weak.upgrade() {
                {
                    let mut c = log.chain.lock();
                    if c.batch.is_empty() {
                        log.batch_started.wait_for(&mut c, IDLE_LOOK);
                    }
                }
                std::thread::sleep(FLUSH_DELAY);
                // A failure has stopped the sandbox already (or is let pass).
                let _ = log.flush();
            }
        })?;
        Ok(())
    }

    /// What stops the sandbox when the log fails closed; the first call
    /// wins.
    pub fn set_on_failure(&self, f: OnFailure) {
        let _ = self.on_failure.set(f);
    }

    /// Whether new processes are recorded (`process.fork`).
    pub fn records_forks(&self) -> bool {
        self.forks
    }

    /// Whether changes to `path` (absolute, in the guest) are recorded.
    pub fn watches(&self, path: &[u8]) -> bool {
        self.watch.matches(path)
    }

    /// Whether opens for reading of `path` (absolute, in the guest) are
    /// recorded.
    pub fn records_reads_of(&self, path: &[u8]) -> bool {
        self.read.matches(path)
    }

    /// Whether some path in the folder `dir` (absolute, in the guest, with
    /// its trailing slash) or below it may be watched: when not, its names
    /// need not be spelled out.
    pub fn may_watch_below(&self, dir: &[u8]) -> bool {
        self.watch.may_match_below(dir)
    }

    /// Appends `record`. An error means the record is not in the log and
    /// the log fails closed: the action the record describes must not
    /// happen, and the sandbox is being stopped. Failing open, a lost
    /// record still takes its `seq`, so the log shows the gap. A record
    /// that may wait ([`Record::may_wait`]) is chained now and reaches the
    /// sink with the next batch; any other is in the sink's hands (the
    /// host kernel's, for a file) when this returns.
    pub fn write(&self, record: &Record) -> Result<(), AuditError> {
        let mut c = self.chain.lock();
        while c.held && !record.is_lifecycle() {
            self.released.wait(&mut c);
        }
        if c.failed && !self.fail_open {
            return Err(AuditError("the log failed earlier".into()));
        }
        let seq = c.seq;
        let mut line = std::mem::take(&mut c.scratch);
        line.clear();
        let prev = c.prev;
        let clock = &mut c.clock;
        push_line(&mut line, |out| clock.push_now(out), &self.sandbox, seq, record, &prev)
            .map_err(|e| AuditError(e.to_string()))?;
        // Secret values never reach the log; the chain covers the line
        // as written.
        let redacted = super::redact::redact_bytes(&line);
        c.prev = sha256_hex_bytes(&redacted);
        if c.batch.is_empty() {
            c.batch_from = seq;
            self.batch_started.notify_one();
        }
        c.batch.extend_from_slice(&redacted);
        c.batch.push(b'\n');
        drop(redacted);
        c.scratch = line;
        c.seq += 1;
        if record.may_wait() && !c.unbatched && c.batch.len() < MAX_BATCH {
            return Ok(());
        }
        let written = Self::hand_over(&mut c).and_then(|()| if record.is_lifecycle() { c.sink.sync() } else { Ok(()) });
        // From `sandbox.pause` (under the same lock) every other record
        // waits, with the thread writing it, so the guest does nothing the
        // log would show before the freeze; `sandbox.resume` releases them,
        // after it.
        match record {
            Record::SandboxPause {} => c.held = true,
            Record::SandboxResume {} => {
                c.held = false;
                self.released.notify_all();
            }
            _ => {}
        }
        self.settle(c, written)
    }

    /// Hands the batch to the sink in one call. Its lines are gone either
    /// way: failing open, the lost ones leave a gap in `seq`.
    fn hand_over(c: &mut Chain) -> std::io::Result<()> {
        if c.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut c.batch);
        let result = c.sink.append(&batch);
        c.batch = batch;
        c.batch.clear();
        result
    }

    /// What a hand-over that gave `written` means: on a failure, the log
    /// fails (closed: the sandbox stops; open: it goes on, records lost).
    fn settle(&self, mut c: MutexGuard<'_, Chain>, written: std::io::Result<()>) -> Result<(), AuditError> {
        let Err(e) = written else { return Ok(()) };
        let first = !c.failed;
        c.failed = true;
        let (from, to) = (c.batch_from, c.seq.saturating_sub(1));
        drop(c);
        let which = if from == to { format!("record {from}") } else { format!("records {from}-{to}") };
        let err = AuditError(format!("writing {which}: {e}"));
        if self.fail_open {
            if first {
                log::error!("{err}; the sandbox goes on (--audit-fail-open): records are lost");
            }
            return Ok(());
        }
        log::error!("{err}; stopping the sandbox");
        if let Some(stop) = self.on_failure.get() {
            stop(&err);
        }
        Err(err)
    }

    /// Hands every record chained so far to the sink.
    pub fn flush(&self) -> Result<(), AuditError> {
        let mut c = self.chain.lock();
        if c.batch.is_empty() || (c.failed && !self.fail_open) {
            return Ok(());
        }
        let written = Self::hand_over(&mut c);
        self.settle(c, written)
    }

    /// Hands the batch to the sink and stops batching: the runtime is
    /// about to SIGKILL the sentry (`husk kill ID KILL`, `delete --force`),
    /// so every record, this batch's and any written until the kill, must
    /// be in the host kernel's hands when its write returns.
    pub fn flush_for_kill(&self) -> Result<(), AuditError> {
        self.chain.lock().unbatched = true;
        self.flush()
    }

    /// Makes every record written so far durable (at exit).
    pub fn sync(&self) -> Result<(), AuditError> {
        self.flush()?;
        self.chain.lock().sink.sync().map_err(|e| AuditError(format!("syncing: {e}")))
    }
}

impl Drop for AuditLog {
    /// Records still in a batch reach the sink.
    fn drop(&mut self) {
        let c = self.chain.get_mut();
        if !c.failed || self.fail_open {
            let _ = Self::hand_over(c);
        }
    }
}

/// Closes the log at `path` of a sandbox whose sentry was killed before
/// it could: appends `record` (a `sandbox.exit`) to the chain. Only a log
/// that verifies up to its end and is still open is extended; a closed
/// one is left as it is. Two runtimes closing it at once (`husk run` and
/// `husk kill`) take turns under an exclusive lock.
pub fn close_after_kill(path: &std::path::Path, record: &Record) -> Result<(), AuditError> {
    extend(path, record, |verdict| match verdict {
        Ok(_) => Ok(false),
        Err(d) if d.what.starts_with("open") => Ok(true),
        Err(d) => Err(format!("not extended: {d}")),
    })
}

/// Appends `record` (a `sandbox.delete`) to the log at `path` of a
/// container whose sentry is gone. Only a log that verifies and ends
/// with `sandbox.exit` is extended (a second delete leaves it as it is);
/// the sentry keeps `seq` and `prev` in memory, so the runtime never
/// appends while it lives.
pub fn append_delete(path: &std::path::Path, record: &Record) -> Result<(), AuditError> {
    extend(path, record, |verdict| match verdict {
        Ok(s) => Ok(!s.deleted),
        Err(d) => Err(format!("not extended: {d}")),
    })
}

/// Appends `record` to the chain of the log at `path`, under an exclusive
/// lock, when `wanted` says so of what `verify` makes of the log.
fn extend(
    path: &std::path::Path,
    record: &Record,
    wanted: impl FnOnce(Result<super::verify::Summary, super::verify::Defect>) -> Result<bool, String>,
) -> Result<(), AuditError> {
    let fail = |e: std::io::Error| AuditError(format!("{}: {e}", path.display()));
    let file = std::fs::OpenOptions::new().read(true).append(true).open(path).map_err(fail)?;
    let mut f = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| fail(std::io::Error::from_raw_os_error(e as i32)))?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(fail)?;
    match wanted(super::verify::verify(&data)) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(what) => return Err(AuditError(format!("{}: {what}", path.display()))),
    }
    let last = data[..data.len().saturating_sub(1)].rsplit(|&b| b == b'\n').next().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(last).map_err(|e| AuditError(e.to_string()))?;
    let seq = v.get("seq").and_then(serde_json::Value::as_u64).unwrap_or_default() + 1;
    let sandbox = v.get("sandbox").and_then(serde_json::Value::as_str).unwrap_or_default();
    let prev = sha256_hex(last);
    let mut quoted = Vec::new();
    push_str(&mut quoted, sandbox);
    let ts = rfc3339(SystemTime::now());
    let mut bytes = Vec::new();
    push_line(&mut bytes, |out| out.extend_from_slice(ts.as_bytes()), &quoted, seq, record, prev.as_bytes())
        .map_err(|e| AuditError(e.to_string()))?;
    bytes.push(b'\n');
    f.write_all(&bytes).and_then(|()| f.sync_all()).map_err(fail)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::audit::{ExitReason, Outcome, SecurityConfig};
    use std::sync::Arc;

    /// A sink into shared memory that can be made to fail.
    #[derive(Clone, Default)]
    pub(crate) struct Memory {
        pub bytes: Arc<Mutex<Vec<u8>>>,
        pub broken: Arc<std::sync::atomic::AtomicBool>,
        /// How many times it was handed lines.
        pub appends: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Sink for Memory {
        fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
            if self.broken.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.appends.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.bytes.lock().extend_from_slice(lines);
            Ok(())
        }
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A closed log of a few records.
    pub(crate) fn sample() -> Vec<u8> {
        let sink = Memory::default();
        let log = AuditLog::open("sb1", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        log.write(&Record::SandboxStart {}).unwrap();
        for pid in 1..4 {
            log.write(&Record::ProcessExit { pid, outcome: Outcome::Status(pid) }).unwrap();
        }
        log.write(&Record::SandboxExit {
            reason: ExitReason::Exited,
            outcome: Some(Outcome::Status(0)),
            error: None,
            closed_by: None,
        })
        .unwrap();
        let bytes = sink.bytes.lock().clone();
        bytes
    }

    #[test]
    fn lines_chain_each_to_the_one_before() {
        let bytes = sample();
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 6);
        let first: serde_json::Value = serde_json::from_slice(lines[0]).unwrap();
        assert_eq!(first["type"], "sandbox.create");
        assert_eq!(first["seq"], 0);
        assert_eq!(first["sandbox"], "sb1");
        assert_eq!(first["prev"], sha256_hex(first["nonce"].as_str().unwrap().as_bytes()));
        for (i, pair) in lines.windows(2).enumerate() {
            let next: serde_json::Value = serde_json::from_slice(pair[1]).unwrap();
            assert_eq!(next["seq"], i + 1);
            assert_eq!(next["prev"], sha256_hex(pair[0]));
        }
        let text = String::from_utf8(lines[2].to_vec()).unwrap();
        assert!(
            text.starts_with(r#"{"ts":""#)
                && text.contains(r#","sandbox":"sb1","seq":2,"type":"process.exit","pid":1,"status":1,"prev":""#),
            "{text}"
        );
    }

    #[test]
    fn a_log_left_open_is_closed_by_the_runtime_and_verifies() {
        let full = sample();
        let open: Vec<u8> = {
            let cut = full[..full.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
            full[..cut].to_vec()
        };
        let path = std::env::temp_dir().join(format!("husk-audit-close-{}", std::process::id()));
        std::fs::write(&path, &open).unwrap();
        let exit = Record::SandboxExit {
            reason: ExitReason::Timeout,
            outcome: Some(Outcome::Signal(9)),
            error: None,
            closed_by: Some("runtime".into()),
        };
        close_after_kill(&path, &exit).unwrap();
        let closed = std::fs::read(&path).unwrap();
        let summary = crate::audit::verify::verify(&closed).unwrap();
        assert_eq!((summary.records, summary.exit.as_str()), (6, "timeout, signal 9"));
        // Closed already: left alone; broken: refused.
        close_after_kill(&path, &exit).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), closed);
        let mut broken = open.clone();
        broken[10] ^= 1;
        std::fs::write(&path, &broken).unwrap();
        assert!(close_after_kill(&path, &exit).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), broken);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_deleted_containers_log_ends_with_the_runtimes_delete_record() {
        let closed = sample();
        let path = std::env::temp_dir().join(format!("husk-audit-delete-{}", std::process::id()));
        std::fs::write(&path, &closed).unwrap();
        let delete = Record::SandboxDelete {
            reason: crate::audit::DeleteReason::Deleted,
            force: false,
            closed_by: "runtime".into(),
        };
        append_delete(&path, &delete).unwrap();
        let deleted = std::fs::read(&path).unwrap();
        let summary = crate::audit::verify::verify(&deleted).unwrap();
        assert_eq!((summary.records, summary.deleted), (7, true));
        assert_eq!(summary.exit, "exited, status 0; deleted");
        let last: serde_json::Value = serde_json::from_slice(&deleted[closed.len()..]).unwrap();
        assert_eq!((last["seq"].as_u64(), last["reason"].as_str()), (Some(6), Some("deleted")));
        // Deleted already: left alone.
        append_delete(&path, &delete).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), deleted);
        // Still open (the sentry may be writing): refused, untouched.
        let open = &closed[..closed[..closed.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1];
        std::fs::write(&path, open).unwrap();
        assert!(append_delete(&path, &delete).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), open);
        std::fs::remove_file(&path).unwrap();
    }

    fn lines(sink: &Memory) -> Vec<serde_json::Value> {
        sink.bytes
            .lock()
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn records_that_may_wait_leave_with_the_next_that_may_not_in_one_write() {
        use std::sync::atomic::Ordering::Relaxed;
        let sink = Memory::default();
        let log = AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        let appends = sink.appends.load(Relaxed);
        log.write(&Record::FileCreate { pid: 1, path: "/etc/x".into() }).unwrap();
        log.write(&Record::FileWrite { pid: 1, path: "/etc/x".into() }).unwrap();
        assert_eq!((lines(&sink).len(), sink.appends.load(Relaxed)), (1, appends), "still in the batch");
        // An unlink is in the sink's hands before it happens, and the
        // batch before it, in the same call.
        log.write(&Record::FileUnlink { pid: 1, path: "/etc/x".into() }).unwrap();
        assert_eq!(sink.appends.load(Relaxed), appends + 1);
        let types: Vec<String> = lines(&sink).iter().map(|r| r["type"].as_str().unwrap().to_string()).collect();
        assert_eq!(types, ["sandbox.create", "file.create", "file.write", "file.unlink"]);
        log.write(&Record::ProcessExit { pid: 1, outcome: Outcome::Status(0) }).unwrap();
        log.write(&Record::SandboxExit { reason: ExitReason::Exited, outcome: None, error: None, closed_by: None })
            .unwrap();
        let summary = crate::audit::verify::verify(&sink.bytes.lock()).unwrap();
        assert_eq!(summary.records, 6);
    }

    #[test]
    fn a_flush_before_a_kill_writes_the_batch_and_every_record_after_it_at_once() {
        use std::sync::atomic::Ordering::Relaxed;
        let sink = Memory::default();
        let log = AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        log.write(&Record::FileCreate { pid: 1, path: "/etc/a".into() }).unwrap();
        assert_eq!(lines(&sink).len(), 1, "still in the batch");
        log.flush_for_kill().unwrap();
        assert_eq!(lines(&sink).len(), 2);
        let appends = sink.appends.load(Relaxed);
        log.write(&Record::FileCreate { pid: 1, path: "/etc/b".into() }).unwrap();
        log.write(&Record::ProcessExit { pid: 1, outcome: Outcome::Status(0) }).unwrap();
        assert_eq!(sink.appends.load(Relaxed), appends + 2, "one write each, none waits");
        let paths: Vec<String> = lines(&sink).iter().filter_map(|r| r["path"].as_str().map(str::to_string)).collect();
        assert_eq!(paths, ["/etc/a", "/etc/b"]);
    }

    #[test]
    fn the_flusher_hands_a_waiting_batch_over_soon() {
        let sink = Memory::default();
        let log = Arc::new(AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap());
        AuditLog::start_flusher(&log).unwrap();
        log.write(&Record::FileChmod { pid: 1, path: "/etc/x".into(), mode: 0o600 }).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while lines(&sink).len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the batch never left");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(lines(&sink)[1]["type"], "file.chmod");
    }

    #[test]
    fn a_batch_that_cannot_be_written_fails_closed_naming_its_records() {
        let sink = Memory::default();
        let log = AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        log.write(&Record::FileCreate { pid: 1, path: "/etc/x".into() }).unwrap();
        sink.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        let err = log.write(&Record::FileUnlink { pid: 1, path: "/etc/x".into() }).unwrap_err();
        assert!(err.0.starts_with("writing records 1-2:"), "{err}");
    }

    #[test]
    fn between_pause_and_resume_only_lifecycle_records_are_written() {
        let sink = Memory::default();
        let log = Arc::new(AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap());
        log.write(&Record::SandboxPause {}).unwrap();
        let writer = {
            let log = log.clone();
            std::thread::spawn(move || log.write(&Record::FileUnlink { pid: 1, path: "/etc/x".into() }))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(lines(&sink).len(), 2, "the unlink waits");
        log.write(&Record::SandboxResume {}).unwrap();
        writer.join().unwrap().unwrap();
        let types: Vec<String> = lines(&sink).iter().map(|r| r["type"].as_str().unwrap().to_string()).collect();
        assert_eq!(types, ["sandbox.create", "sandbox.pause", "sandbox.resume", "file.unlink"]);
    }

    #[test]
    fn two_logs_start_from_different_nonces() {
        let a = sample();
        let b = sample();
        assert_ne!(a[..a.iter().position(|&c| c == b'\n').unwrap()], b[..b.iter().position(|&c| c == b'\n').unwrap()]);
    }

    #[test]
    fn a_failing_sink_fails_closed_and_stops_the_sandbox() {
        let sink = Memory::default();
        let log = AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        let stopped = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let s = stopped.clone();
        log.set_on_failure(Box::new(move |_| {
            s.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }));
        sink.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(log.write(&Record::SandboxStart {}).is_err());
        sink.broken.store(false, std::sync::atomic::Ordering::Relaxed);
        assert!(log.write(&Record::SandboxStart {}).is_err(), "nothing is written after a failure");
        assert_eq!(stopped.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(sink.bytes.lock().split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(), 1);
    }

    #[test]
    fn failing_open_goes_on_and_leaves_a_visible_gap() {
        let sink = Memory::default();
        let log = AuditLog::open("sb", Box::new(sink.clone()), SecurityConfig::default(), true).unwrap();
        sink.broken.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(log.write(&Record::SandboxStart {}).is_ok());
        sink.broken.store(false, std::sync::atomic::Ordering::Relaxed);
        log.write(&Record::ProcessExit { pid: 1, outcome: Outcome::Status(0) }).unwrap();
        log.flush().unwrap();
        let bytes = sink.bytes.lock().clone();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains(r#""audit_fail_open":true"#), "{text}");
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["seq"], 2, "seq 1 was lost and shows as missing");
    }
}
