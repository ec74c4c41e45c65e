//! The kernel's side of `package.install` (audit/package.rs derives the
//! records): a run begins at the exec of a package manager and ends when
//! that process exits; the processes it starts belong to it (found by
//! their parent chain). During a run the sentry keeps the package
//! database files it writes, hashes the archives it opens for reading
//! and notes the connections it makes; at its end the records are
//! derived from those, read back from the files as they then are, and
//! the archives it wrote (its downloads: cargo reads its `.crate` back
//! through the descriptor that wrote it, never opening it for reading)
//! are hashed as the run left them.
//!
//! Nothing is kept without an audit log, and nothing at all outside a
//! run: a guest that writes a `METADATA` outside a manager's run makes no
//! record.
//!
//! With `--package-registry-allow`, a connection out of a run (and any
//! connection to a known public registry, whoever makes it) to a host the
//! list does not name is refused and recorded as `package.denied`.
//!
//! What a run keeps is bounded (not charged to the sandbox's accountant;
//! the caps bound it instead): at most `MAX_ENTRIES` execs (argv at most
//! `MAX_ARGV` bytes each), database files, archives, downloads and
//! connections, so at most about 17 MiB of argv and paths (PATH_MAX each)
//! per run (runs are bounded by the sandbox's processes), and at
//! its end at most `MAX_READ_BACK` bytes of files read back. Archives are
//! hashed without the runs' lock held, at most `MAX_ARCHIVE` bytes each
//! and once per file version per run; the archives written, once each at
//! the run's end. A cap reached is named in every
//! record's evidence (`limit`).

use super::{Kernel, Task};
use crate::audit::package::{self, Evidence, FileKind, Manager, Observed};
use crate::audit::Record;
use crate::vfs::{Dentry, FileDescription, FileOps};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// How far up the parent chain a run is looked for.
const MAX_DEPTH: usize = 64;
/// The most bytes of dpkg's `status` read back (it holds every package).
const MAX_STATUS_FILE: u64 = 8 << 20;
/// The most bytes of any other database file read back (`METADATA`,
/// `package.json`, a `.list`); a larger one is left out.
const MAX_DB_FILE: u64 = 1 << 20;
/// The most bytes of all the files of one run read back at its end.
const MAX_READ_BACK: u64 = 32 << 20;
/// The most bytes of an archive hashed; a larger one gets no hash.
const MAX_ARCHIVE: u64 = 256 << 20;
/// The most execs, database files, archives (read or written) and
/// connections one run keeps of each.
const MAX_ENTRIES: usize = 1024;
/// What the archives one run wrote may take to hash in all, when it ends
/// (each also at most `MAX_ARCHIVE`).
const MAX_HASHED_PER_RUN: u64 = 1 << 30;

/// A version of a file: its identity, size and modification time.
type Version = (u64, u64, u64, i64, i64);

/// One run, keyed by the pid whose exec began it.
#[derive(Default)]
struct Run {
    /// The manager whose exec began the run.
    manager: Option<Manager>,
    seen: Observed,
    /// The database files written: path, kind and the dentry written
    /// (read back at the end, after any rename over it).
    written: Vec<(String, FileKind, Arc<Dentry>)>,
    /// The archives written (downloads): path and the dentry written,
    /// hashed at the end.
    downloads: Vec<(String, Arc<Dentry>)>,
    /// The archive versions hashed in this run, and their hash (None:
    /// too large), at most `MAX_ENTRIES`.
    hashed: HashMap<Version, Option<String>>,
}

impl Run {
    /// Whether a list holding `len` entries may take one more; when not,
    /// the limit `what` is noted (once).
    fn room(&mut self, len: usize, what: &str) -> bool {
        if len < MAX_ENTRIES {
            return true;
        }
        if !self.seen.limits.iter().any(|l| l == what) {
            self.seen.limits.push(what.to_string());
        }
        false
    }

    /// Notes `archive` read with `sha` (replacing an earlier read of it).
    fn read_archive(&mut self, path: String, sha: Option<String>) {
        self.seen.archives.retain(|(p, _)| *p != path);
        if self.room(self.seen.archives.len(), "archives") {
            self.seen.archives.push((path, sha));
        }
    }
}

/// The sandbox's runs in progress.
#[derive(Default)]
pub(crate) struct PackageRuns {
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
    let st = d.node.stat().ok()?;
    // Not a FIFO or a device the guest put in a database's place: an
    // open or a read of one could wait for the guest for ever.
    if st.mode & libc::S_IFMT != libc::S_IFREG || st.size > limit {
        return None;
    }
    let ops = d.node.open(libc::O_RDONLY | libc::O_NONBLOCK).ok()?;
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

/// Reads the database files `written` back into `seen.files`: each at
/// most `MAX_DB_FILE` (dpkg's status `MAX_STATUS_FILE`) bytes, a larger
/// one left out; all together at most `MAX_READ_BACK`, past which the
/// rest is left out and the limit noted.
fn read_back(written: Vec<(String, FileKind, Arc<Dentry>)>, seen: &mut Observed) {
    let mut budget = MAX_READ_BACK;
    for (path, kind, d) in written {
        let cap = if kind == FileKind::DpkgStatus { MAX_STATUS_FILE } else { MAX_DB_FILE };
        match contents(&d, cap.min(budget)) {
            Some(bytes) => {
                budget -= bytes.len() as u64;
                seen.files.push((path, kind, bytes));
            }
            None if budget < cap => {
                seen.limits.push("files read back".to_string());
                return;
            }
            None => {}
        }
    }
}

/// The hex SHA-256 of what `ops` reads; None past `MAX_ARCHIVE` bytes or
/// when it cannot be read.
fn sha256_of(ops: &dyn FileOps) -> Option<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut off = 0u64;
    loop {
        let n = ops.read(&mut buf, off).ok()?;
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

/// The hex SHA-256 of what `f` holds; None past `MAX_ARCHIVE` bytes or
/// when it cannot be read.
fn hash_of(f: &FileDescription) -> Option<String> {
    sha256_of(&*f.ops)
}

/// The hex SHA-256 of the archive a run wrote at `d`, read back through
/// the VFS as the run left it (whatever name it has now); why there is
/// none otherwise.
fn hash_written(d: &Dentry, budget: &mut u64) -> Result<String, String> {
    let too_large = || "too large to hash".to_string();
    let st = d.node.stat().map_err(|_| "unreadable".to_string())?;
    // A FIFO or device the guest named like an archive is not read: an
    // open or a read of one could wait for the guest for ever.
    if st.mode & libc::S_IFMT != libc::S_IFREG {
        return Err("not a regular file".to_string());
    }
    if st.size > MAX_ARCHIVE {
        return Err(too_large());
    }
    if st.size > *budget {
        return Err("past what one run's archives may take to hash".to_string());
    }
    *budget -= st.size;
    let ops = d.node.open(libc::O_RDONLY | libc::O_NONBLOCK).map_err(|_| "unreadable".to_string())?;
    sha256_of(&*ops).ok_or_else(|| {
        if d.node.stat().is_ok_and(|s| s.size > MAX_ARCHIVE) {
            too_large()
        } else {
            "unreadable".to_string()
        }
    })
}

/// Hashes the archives a run wrote (`downloads`) into
/// `seen.wrote_archives`; one the run also read is hashed already, as
/// it was read.
fn hash_downloads(downloads: Vec<(String, Arc<Dentry>)>, seen: &mut Observed) {
    let mut budget = MAX_HASHED_PER_RUN;
    for (path, d) in downloads {
        let read = seen.archives.iter().find(|(p, _)| *p == path).map(|(_, sha)| sha.clone());
        let hashed = match read {
            Some(Some(sha)) => Ok(sha),
            Some(None) => Err("too large to hash".to_string()),
            None => hash_written(&d, &mut budget),
        };
        seen.wrote_archives.push((path, hashed));
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
    fn with_run<T>(&self, task: &Task, f: impl FnOnce(&mut Run) -> T) -> Option<T> {
        self.audit_log()?;
        let pr = self.ext::<PackageRuns>();
        let mut runs = pr.runs.lock();
        if runs.is_empty() {
            return None;
        }
        let pid = self.run_of(&runs, task.thread.tgid)?;
        runs.get_mut(&pid).map(f)
    }

    /// Like `with_run`, on the run that began with the exec of `pid`
    /// (still in progress).
    fn with_run_of(&self, pid: i32, f: impl FnOnce(&mut Run)) {
        if let Some(run) = self.ext::<PackageRuns>().runs.lock().get_mut(&pid) {
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
        let exec = Evidence::exec(tgid, argv);
        let mut runs = pr.runs.lock();
        let pid = self.run_of(&runs, tgid).unwrap_or(tgid);
        let run = runs.entry(pid).or_default();
        run.manager.get_or_insert(manager);
        run.seen.pid = pid;
        if run.room(run.seen.execs.len(), "execs") {
            run.seen.execs.push(exec);
        }
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
                if !run.downloads.iter().any(|(p, _)| *p == path) && run.room(run.downloads.len(), "downloads") {
                    run.downloads.push((path, d.clone()));
                }
            } else {
                // A file written again (dpkg's status-new) is read back
                // from its latest version.
                run.written.retain(|(p, ..)| *p != path);
                if run.room(run.written.len(), "files written") {
                    run.written.push((path, kind, d.clone()));
                }
            }
        });
    }

    /// `task` opened `f`: an archive opened for reading is hashed now,
    /// as the run is about to read it: outside the runs' lock (which every
    /// exec, connection and first write in the sandbox takes), once per
    /// version of the file per run.
    pub fn package_opened(&self, task: &Task, f: &FileDescription) {
        if !f.readable() || f.writable() || !package::is_archive(&f.dentry.name) {
            return;
        }
        let Ok(st) = f.stat() else { return };
        if st.mode & libc::S_IFMT != libc::S_IFREG {
            return;
        }
        let version: Version = (st.dev, st.ino, st.size, st.mtime.sec, st.mtime.nsec);
        let path = text(&f.dentry.path_from(&task.thread.fs().root()));
        let known = self.with_run(task, |run| (run.seen.pid, run.hashed.get(&version).cloned()));
        let Some((pid, known)) = known else { return };
        if let Some(sha) = known {
            self.with_run_of(pid, |run| run.read_archive(path, sha));
            return;
        }
        let sha = if st.size > MAX_ARCHIVE { None } else { hash_of(f) };
        // A file that grew past the cap as it was read is too large too;
        // one that could not be read is left out.
        if sha.is_none() && st.size <= MAX_ARCHIVE && f.stat().is_ok_and(|s| s.size <= MAX_ARCHIVE) {
            return;
        }
        self.with_run_of(pid, |run| {
            if run.hashed.len() < MAX_ENTRIES {
                run.hashed.insert(version, sha.clone());
            }
            run.read_archive(path, sha);
        });
    }

    /// `task` connected out through the egress gateway.
    pub fn package_connected(&self, task: &Task, address: &str, port: u16, name: Option<&str>) {
        self.with_run(task, |run| {
            let c = Evidence::Connect { address: address.into(), port, name: name.map(str::to_string) };
            if !run.seen.connects.contains(&c) && run.room(run.seen.connects.len(), "connections") {
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
        read_back(run.written, &mut seen);
        hash_downloads(run.downloads, &mut seen);
        for record in package::derive(&seen) {
            let _ = self.audit(|| record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tmpfs::Tmpfs;
    use crate::vfs::{MountNamespace, NewNode, SetAttr};

    const FILE: NewNode = NewNode { mode: 0o644, uid: 0, gid: 0 };

    /// `n` files of `size` (sparse) bytes each, as a run wrote them.
    fn files(n: usize, size: u64, kind: FileKind) -> Vec<(String, FileKind, Arc<Dentry>)> {
        let root = Tmpfs::new(0o755, 0, 0);
        let ns = MountNamespace::new(root.clone(), "tmpfs", "root");
        (0..n)
            .map(|i| {
                let name = format!("f{i}");
                let node = root.create(name.as_bytes(), FILE).unwrap();
                node.setattr(&SetAttr { size: Some(size), ..SetAttr::default() }).unwrap();
                (name.clone(), kind.clone(), ns.root().child(name.as_bytes(), node))
            })
            .collect()
    }

    #[test]
    fn files_read_back_are_capped_each_and_together() {
        let mut seen = Observed::default();
        let mut written = files(2, MAX_DB_FILE + 1, FileKind::Metadata);
        written.extend(files(1, MAX_DB_FILE, FileKind::Metadata));
        written.extend(files(1, MAX_STATUS_FILE, FileKind::DpkgStatus));
        read_back(written, &mut seen);
        let sizes: Vec<u64> = seen.files.iter().map(|(_, _, b)| b.len() as u64).collect();
        assert_eq!(sizes, [MAX_DB_FILE, MAX_STATUS_FILE], "too large ones are left out");
        assert!(seen.limits.is_empty());

        let mut seen = Observed::default();
        read_back(files(40, MAX_DB_FILE, FileKind::Metadata), &mut seen);
        assert_eq!(seen.files.len() as u64, MAX_READ_BACK / MAX_DB_FILE);
        assert_eq!(seen.limits, ["files read back"]);
    }

    #[test]
    fn a_fifo_in_an_archives_or_a_databases_place_is_not_read() {
        let root = Tmpfs::new(0o755, 0, 0);
        let ns = MountNamespace::new(root.clone(), "tmpfs", "root");
        let fifo = NewNode { mode: libc::S_IFIFO | 0o644, ..FILE };
        root.mknod(b"a-1.0.crate", fifo, 0).unwrap();
        let node = root.lookup(b"a-1.0.crate").unwrap();
        let d = ns.root().child(b"a-1.0.crate", node);
        let mut budget = MAX_HASHED_PER_RUN;
        assert_eq!(hash_written(&d, &mut budget), Err("not a regular file".to_string()));
        assert_eq!(budget, MAX_HASHED_PER_RUN);
        assert!(contents(&d, MAX_DB_FILE).is_none());
    }

    #[test]
    fn the_archives_of_one_run_are_hashed_up_to_a_budget() {
        let mut seen = Observed::default();
        let written = files(5, MAX_ARCHIVE, FileKind::Archive);
        hash_downloads(written.into_iter().map(|(p, _, d)| (p, d)).collect(), &mut seen);
        let hashed = seen.wrote_archives.iter().filter(|(_, h)| h.is_ok()).count() as u64;
        assert_eq!(hashed, MAX_HASHED_PER_RUN / MAX_ARCHIVE);
        assert!(seen.wrote_archives.last().is_some_and(|(_, h)| h.as_ref().is_err_and(|e| e.contains("past"))));
    }

    #[test]
    fn a_run_keeps_at_most_max_entries_of_each_and_says_so() {
        let mut run = Run::default();
        for i in 0..MAX_ENTRIES + 10 {
            run.read_archive(format!("/a/{i}.whl"), Some("00".into()));
        }
        run.read_archive("/a/0.whl".into(), None);
        assert_eq!(run.seen.archives.len(), MAX_ENTRIES);
        assert!(run.room(MAX_ENTRIES - 1, "execs"));
        assert!(!run.room(MAX_ENTRIES, "execs") && !run.room(MAX_ENTRIES, "execs"));
        assert_eq!(run.seen.limits, ["archives", "execs"]);
    }
}
