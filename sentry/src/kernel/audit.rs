//! The kernel's side of the audit log: the sandbox's log, and the records
//! the kernel itself takes (exec, process exit, OOM kills). Any layer
//! with the kernel writes through `Kernel::audit`, which costs a load
//! and a branch when the sandbox keeps no log.

use super::{ExitStatus, Kernel, Task, Thread};
use crate::abi::Errno;
use crate::audit::{AuditLog, Outcome, Record};
use std::sync::Arc;

impl Kernel {
    /// Connects the sandbox's audit log; the first call wins.
    pub fn set_audit_log(&self, log: Arc<AuditLog>) {
        let _ = self.audit_log.set(log);
    }

    /// The sandbox's audit log, if it keeps one.
    pub fn audit_log(&self) -> Option<&Arc<AuditLog>> {
        self.audit_log.get()
    }

    /// Writes the record `make` builds, if the sandbox keeps a log. EIO
    /// when the record could not be written and the log fails closed: the
    /// action it describes must then not happen (the sandbox is being
    /// stopped).
    pub fn audit(&self, make: impl FnOnce() -> Record) -> Result<(), Errno> {
        match self.audit_log.get() {
            Some(log) => log.write(&make()).map_err(|_| Errno::EIO),
            None => Ok(()),
        }
    }

    /// Records that the OOM killer ends process `victim` (of `thread`,
    /// holding `size` bytes).
    pub(super) fn oom_killing(&self, victim: &Thread, size: u64) {
        self.oom_killed.lock().insert(victim.tgid);
        let _ = self.audit(|| Record::LimitMemory {
            pid: victim.tgid,
            comm: String::from_utf8_lossy(&victim.comm.lock()).into_owned(),
            size,
            limit: self.memory.limit(),
            usage: self.memory.used(),
        });
    }

    /// Whether the OOM killer ended process `tgid`.
    pub fn was_oom_killed(&self, tgid: i32) -> bool {
        self.oom_killed.lock().contains(&tgid)
    }
}

impl From<ExitStatus> for Outcome {
    fn from(s: ExitStatus) -> Outcome {
        match s {
            ExitStatus::Code(c) => Outcome::Status(c),
            ExitStatus::Signal(s) => Outcome::Signal(s),
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `process.exec` record of `task` about to run `exe` with `argv`
/// (as the new image sees it) and environment `envp`.
pub(super) fn exec_record(task: &Task, exe: &Arc<crate::vfs::Dentry>, argv: &[Vec<u8>], envp: &[Vec<u8>]) -> Record {
    let t = &task.thread;
    let creds = t.creds();
    let fs = t.fs();
    let root = fs.root();
    Record::ProcessExec {
        pid: t.tgid,
        ppid: task.kernel.procs.ppid(t.tgid),
        uid: creds.uid,
        gid: creds.gid,
        cwd: text(&fs.cwd().path_from(&root)),
        exe: text(&exe.path_from(&root)),
        argv: argv.iter().map(|a| text(a)).collect(),
        env: envp.iter().map(|e| text(e.split(|&b| b == b'=').next().unwrap_or_default())).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::writer_tests::Memory;
    use crate::audit::SecurityConfig;
    use crate::auth::Credentials;
    use crate::kernel::FsContext;
    use crate::mm::{MemoryFile, MemoryManager};
    use crate::testing::{self, Idle};

    /// A kernel keeping its log in memory, and its first thread.
    fn kernel() -> (Arc<Kernel>, Arc<Thread>, Memory) {
        let memory = Arc::new(MemoryFile::new(1 << 20).unwrap());
        let kernel = testing::kernel(memory.clone());
        let sink = Memory::default();
        let log = AuditLog::open("k", Box::new(sink.clone()), SecurityConfig::default(), false).unwrap();
        kernel.set_audit_log(Arc::new(log));
        let mm = Arc::new(MemoryManager::new(memory, Arc::new(Idle), 1 << 30));
        let fs = Arc::new(FsContext::new(kernel.mounts.clone(), kernel.mounts.root(), kernel.mounts.root()));
        let thread = Arc::new(Thread::new_init(7, Credentials::new(1000, 100), mm, fs));
        *thread.comm.lock() = b"prog".to_vec();
        (kernel, thread, sink)
    }

    fn lines(sink: &Memory) -> Vec<serde_json::Value> {
        let bytes = sink.bytes.lock().clone();
        bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect()
    }

    #[test]
    fn an_unimplemented_call_is_recorded_once_per_number() {
        let (kernel, thread, sink) = kernel();
        kernel.report_unimplemented(153, "vhangup", &thread);
        kernel.report_unimplemented(153, "vhangup", &thread);
        let recs = lines(&sink);
        assert_eq!(recs.len(), 2, "{recs:?}");
        let r = &recs[1];
        assert_eq!(
            (&r["type"], &r["nr"], &r["name"]),
            (&"syscall.unimplemented".into(), &153.into(), &"vhangup".into())
        );
        assert_eq!((&r["pid"], &r["comm"]), (&7.into(), &"prog".into()));
    }

    #[test]
    fn an_oom_kill_is_recorded_with_the_limit_and_remembered() {
        let (kernel, thread, sink) = kernel();
        kernel.oom_killing(&thread, 4096);
        let r = &lines(&sink)[1];
        assert_eq!((&r["type"], &r["pid"], &r["size"]), (&"limit.memory".into(), &7.into(), &4096.into()));
        assert_eq!(r["limit"], 1 << 20);
        assert!(kernel.was_oom_killed(7) && !kernel.was_oom_killed(8));
    }
}
