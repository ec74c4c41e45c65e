//! The kernel's side of `package.install` (audit/package.rs derives the
//! records): a run begins at the exec of a package manager and ends when
//! that process exits; the processes it starts belong to it (found by
//! their parent chain). During a run the sentry keeps the package
//! database files it writes, hashes the archives it opens for reading
//! and notes the connections it makes; at its end the records are
//! derived from those, read back from the files as they then are.
//!
//! Nothing is kept without an audit log, and nothing at all outside a
//! run: a guest that writes a `METADATA` outside a manager's run makes no
//! record.
//!
//! With `--package-registry-allow`, a connection out of a run (and any
//! connection to a known public registry, whoever makes it) to a host the
//! list does not name is refused and recorded as `package.denied`.

use super::{Kernel, Task};
use crate::audit::package::{self, Evidence, FileKind, Manager, Observed};
use crate::audit::Record;
use crate::vfs::{Dentry, FileDescription};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// How far up the parent chain a run is looked for.
const MAX_DEPTH: usize = 64;
/// The most bytes of a database file read back.
const MAX_DB_FILE: u64 = 16 << 20;
/// The most bytes of an archive hashed; a larger one gets no hash.
const MAX_ARCHIVE: u64 = 1 << 30;

/// One run, keyed by the pid whose exec began it.
#[derive(Default)]
struct Run {
    /// The manager whose exec began the run.
    manager: Option<Manager>,
    seen: Observed,
    /// The database files written: path, kind and the dentry written
    /// (read back at the end, after any rename over it).
    written: Vec<(String, FileKind, Arc<Dentry>)>,
}

/// The sandbox's runs in progress.
#[derive(Default)]
pub struct PackageRuns {
    runs: Mutex<HashMap<i32, Run>>,
    /// The hosts package managers may reach (`--package-registry-allow`);
    /// unset or empty, no such limit.
    allow: OnceLock<Vec<String>>,
}

impl PackageRuns {
    fn allow(&self) -> &[String] {
        self.allow.get().map_or(&[], Vec::as_slice)
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bytes of the node behind `d` (at most `limit`); None when it
/// cannot be read.
fn contents(d: &Dentry, limit: u64) -> Option<Vec<u8>> {
    let ops = d.node.open(libc::O_RDONLY).ok()?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = ops.read(&mut buf, out.len() as u64).ok()?;
        if n == 0 {
            return Some(out);
        }
        out.extend_from_slice(&buf[..n]);
        if out.len() as u64 > limit {
            return None;
        }
    }
}

/// The hex SHA-256 of what `f` holds (at most `MAX_ARCHIVE` bytes).
fn hash_of(f: &FileDescription) -> Option<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut off = 0u64;
    loop {
        let n = f.ops.read(&mut buf, off).ok()?;
        if n == 0 {
            return Some(h.finalize().iter().map(|b| format!("{b:02x}")).collect());
        }
        h.update(&buf[..n]);
        off += n as u64;
        if off > MAX_ARCHIVE {
            return None;
        }
    }
}

impl Kernel {
    /// The pid that began the run process `tgid` belongs to, if any.
    fn run_of(&self, runs: &HashMap<i32, Run>, tgid: i32) -> Option<i32> {
        let mut pid = tgid;
        for _ in 0..MAX_DEPTH {
            if runs.contains_key(&pid) {
                return Some(pid);
            }
            pid = self.procs.ppid(pid);
            if pid <= 0 {
                return None;
            }
        }
        None
    }

    /// Runs `f` on the run `task` belongs to, if the sandbox keeps a log
    /// and there is one.
    fn with_run(&self, task: &Task, f: impl FnOnce(&mut Run)) {
        if self.audit_log().is_none() {
            return;
        }
        let pr = self.ext::<PackageRuns>();
        let mut runs = pr.runs.lock();
        if runs.is_empty() {
            return;
        }
        if let Some(run) = self.run_of(&runs, task.thread.tgid).and_then(|pid| runs.get_mut(&pid)) {
            f(run);
        }
    }

    /// An exec of `argv` (after `#!` resolution) by `task`: a package
    /// manager's begins a run, or joins the run it is part of.
    pub(super) fn package_exec(&self, task: &Task, argv: &[Vec<u8>]) {
        let Some(manager) = package::manager_of(argv) else { return };
        let pr = self.ext::<PackageRuns>();
        if self.audit_log().is_none() && pr.allow().is_empty() {
            return;
        }
        let tgid = task.thread.tgid;
        let exec = Evidence::Exec { pid: tgid, argv: argv.iter().map(|a| text(a)).collect() };
        let mut runs = pr.runs.lock();
        let pid = self.run_of(&runs, tgid).unwrap_or(tgid);
        let run = runs.entry(pid).or_default();
        run.manager.get_or_insert(manager);
        run.seen.pid = pid;
        run.seen.execs.push(exec);
    }

    /// Limits package managers to the registries `allow` names; the first
    /// call wins.
    pub fn set_package_registry_allow(&self, allow: Vec<String>) {
        let _ = self.ext::<PackageRuns>().allow.set(allow);
    }

    /// Whether `--package-registry-allow` refuses `task` a connection to
    /// `address` (resolved from `name`): when the task is part of a
    /// manager's run, or the destination is a known public registry, and
    /// the list does not name it. A refusal is recorded
    /// (`package.denied`, with the manager); EIO when the log cannot take
    /// it.
    pub fn package_registry_refuses(
        &self,
        task: &Task,
        protocol: &str,
        address: &str,
        port: u16,
        name: Option<&str>,
    ) -> Result<bool, crate::abi::Errno> {
        let pr = self.ext::<PackageRuns>();
        let allow = pr.allow();
        if allow.is_empty() || package::registry_allowed(allow, address, name) {
            return Ok(false);
        }
        let manager = {
            let runs = pr.runs.lock();
            self.run_of(&runs, task.thread.tgid).and_then(|pid| runs.get(&pid)).and_then(|r| r.manager)
        };
        let manager = match manager {
            Some(m) => m.name().to_string(),
            None if name.is_some_and(package::is_known_registry) => "unknown".to_string(),
            None => return Ok(false),
        };
        let (pid, protocol, address, name) =
            (task.thread.tgid, protocol.to_string(), address.to_string(), name.map(str::to_string));
        self.audit(|| Record::PackageDenied { pid, manager, protocol, address, port, name })?;
        Ok(true)
    }

    /// `task` wrote (for the first time through a description) the file
    /// `d`: kept when it is a package database's.
    pub fn package_wrote(&self, task: &Task, d: &Arc<Dentry>) {
        self.with_run(task, |run| {
            let path = d.path_from(&task.thread.fs().root());
            let Some(kind) = package::kind_of(&path) else { return };
            let path = text(&path);
            if kind == FileKind::Archive {
                run.seen.wrote_archives.push(path);
            } else {
                // A file written again (dpkg's status-new) is read back
                // from its latest version.
                run.written.retain(|(p, ..)| *p != path);
                run.written.push((path, kind, d.clone()));
            }
        });
    }

    /// `task` opened `f`: an archive opened for reading is hashed now,
    /// as the run is about to read it.
    pub fn package_opened(&self, task: &Task, f: &FileDescription) {
        if !f.readable() || f.writable() || !package::is_archive(&f.dentry.name) {
            return;
        }
        self.with_run(task, |run| {
            let path = text(&f.dentry.path_from(&task.thread.fs().root()));
            let Some(sha) = hash_of(f) else { return };
            run.seen.archives.retain(|(p, _)| *p != path);
            run.seen.archives.push((path, sha));
        });
    }

    /// `task` connected out through the egress gateway.
    pub fn package_connected(&self, task: &Task, address: &str, port: u16, name: Option<&str>) {
        self.with_run(task, |run| {
            let c = Evidence::Connect { address: address.into(), port, name: name.map(str::to_string) };
            if !run.seen.connects.contains(&c) {
                run.seen.connects.push(c);
            }
        });
    }

    /// Process `tgid` exits: if it began a run, the run's records are
    /// written (before its `process.exit`).
    pub(super) fn package_exit(&self, tgid: i32) {
        let Some(run) = self.ext::<PackageRuns>().runs.lock().remove(&tgid) else { return };
        if self.audit_log().is_none() {
            return;
        }
        let mut seen = run.seen;
        seen.files = run
            .written
            .into_iter()
            .filter_map(|(path, kind, d)| contents(&d, MAX_DB_FILE).map(|bytes| (path, kind, bytes)))
            .collect();
        for record in package::derive(&seen) {
            let _ = self.audit(|| record);
        }
    }
}
