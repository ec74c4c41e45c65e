//! The writer: one per sandbox, shared by every task thread. Each record
//! becomes one line written with one call to the sink, so a record the
//! writer returned from is in the host kernel's hands and survives a
//! SIGKILL of the sentry; lifecycle records are also synced to disk.

use super::record::Record;
use super::time::rfc3339;
use parking_lot::Mutex;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::sync::OnceLock;
use std::time::SystemTime;

/// Where lines go.
pub trait Sink: Send {
    /// Appends one whole line (newline included).
    fn append(&mut self, line: &[u8]) -> std::io::Result<()>;
    /// Makes what was appended durable.
    fn sync(&mut self) -> std::io::Result<()>;
}

impl Sink for std::fs::File {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.write_all(line)
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
    prev: String,
    /// The sink failed; under fail-closed nothing more is written.
    failed: bool,
}

/// What stops the sandbox when its log fails closed.
pub type OnFailure = Box<dyn Fn(&AuditError) + Send + Sync>;

/// The sandbox's audit log.
pub struct AuditLog {
    sandbox: String,
    fail_open: bool,
    chain: Mutex<Chain>,
    /// Called once, when a write fails under fail-closed: stops the
    /// sandbox (set by the boot code).
    on_failure: OnceLock<OnFailure>,
    /// The globs of watched paths.
    watch: Vec<Vec<u8>>,
    /// Whether forks are recorded.
    forks: bool,
}

/// A line: the envelope around a record, in the order the fields appear.
#[derive(Serialize)]
struct Line<'a> {
    ts: String,
    sandbox: &'a str,
    seq: u64,
    #[serde(flatten)]
    record: &'a Record,
    prev: &'a str,
}

/// Lowercase hex of SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// 16 random bytes from the host, in hex.
fn random_nonce() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
        let prev = sha256_hex(nonce.as_bytes());
        config.audit_fail_open = fail_open;
        let watch = config.watch.iter().map(|g| g.as_bytes().to_vec()).collect();
        let log = AuditLog {
            watch,
            forks: config.audit_fork,
            sandbox: sandbox.to_string(),
            fail_open,
            chain: Mutex::new(Chain { sink, seq: 0, prev, failed: false }),
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
        self.watch.iter().any(|g| super::glob::matches(g, path))
    }

    /// Appends `record`. An error means the record is not in the log and
    /// the log fails closed: the action the record describes must not
    /// happen, and the sandbox is being stopped. Failing open, a lost
    /// record still takes its `seq`, so the log shows the gap.
    pub fn write(&self, record: &Record) -> Result<(), AuditError> {
        let mut c = self.chain.lock();
        if c.failed && !self.fail_open {
            return Err(AuditError("the log failed earlier".into()));
        }
        let seq = c.seq;
        let line = Line { ts: rfc3339(SystemTime::now()), sandbox: &self.sandbox, seq, record, prev: &c.prev };
        let bytes = serde_json::to_vec(&line).map_err(|e| AuditError(e.to_string()))?;
        // Secret values never reach the log; the chain covers the line
        // as written.
        let mut bytes = super::redact::redact_bytes(&bytes).into_owned();
        let hash = sha256_hex(&bytes);
        bytes.push(b'\n');
        let written = c.sink.append(&bytes).and_then(|()| if record.is_lifecycle() { c.sink.sync() } else { Ok(()) });
        c.seq += 1;
        c.prev = hash;
        let Err(e) = written else { return Ok(()) };
        let first = !c.failed;
        c.failed = true;
        drop(c);
        let err = AuditError(format!("writing record {seq}: {e}"));
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

    /// Makes every record written so far durable (at exit).
    pub fn sync(&self) -> Result<(), AuditError> {
        self.chain.lock().sink.sync().map_err(|e| AuditError(format!("syncing: {e}")))
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
    let line = Line { ts: rfc3339(SystemTime::now()), sandbox, seq, record, prev: &prev };
    let mut bytes = serde_json::to_vec(&line).map_err(|e| AuditError(e.to_string()))?;
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
    }

    impl Sink for Memory {
        fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
            if self.broken.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
            }
            self.bytes.lock().extend_from_slice(line);
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
        let bytes = sink.bytes.lock().clone();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains(r#""audit_fail_open":true"#), "{text}");
        let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        assert_eq!(last["seq"], 2, "seq 1 was lost and shows as missing");
    }
}
