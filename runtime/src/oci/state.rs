//! The state directory (`--root`): one folder per container with its
//! `state.json`, the sentry's control socket and a lock file that
//! serializes commands on one container. Every update of `state.json` is
//! atomic (write, fsync, rename).

use super::cgroup::Cgroup;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

pub const OCI_VERSION: &str = "1.0.2";
const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = "lock";
const CONTROL_SOCKET: &str = "control.sock";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("container \"{0}\" does not exist")]
    NotFound(String),
    #[error("container with id \"{0}\" already exists")]
    Exists(String),
    #[error("invalid container id {0:?}: use letters, digits, '_', '+', '-' and '.'")]
    BadId(String),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    #[error("{0}: corrupt state: {1}")]
    Corrupt(PathBuf, serde_json::Error),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |e| StateError::Io(path.to_path_buf(), e)
}

/// A container's status, as `husk state` reports it.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Created,
    Running,
    Paused,
    Stopped,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Status::Created => "created",
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Stopped => "stopped",
        })
    }
}

/// A host process, named so that a recycled pid is not mistaken for it.
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct HostProcess {
    pub pid: i32,
    /// Its start time in clock ticks since boot (/proc/PID/stat field 22).
    pub start: u64,
}

impl HostProcess {
    pub fn of(pid: i32) -> Option<HostProcess> {
        proc_stat(pid).map(|(_, start)| HostProcess { pid, start })
    }

    /// Still running (not exited, not a zombie) and still the same process.
    pub fn alive(&self) -> bool {
        proc_stat(self.pid).is_some_and(|(state, start)| start == self.start && state != 'Z' && state != 'X')
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) -> nix::Result<()> {
        if !self.alive() {
            return Err(nix::errno::Errno::ESRCH);
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), sig)
    }
}

/// The state letter and start time of a host process.
fn proc_stat(pid: i32) -> Option<(char, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_ascii_whitespace().collect();
    Some((fields.first()?.chars().next()?, fields.get(19)?.parse().ok()?))
}

/// What the state directory records about a container.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Record {
    pub id: String,
    pub bundle: PathBuf,
    pub rootfs: PathBuf,
    /// The sentry: its pid is the container's pid.
    pub sentry: HostProcess,
    /// The file servers: the root's, then one per bind mount.
    #[serde(default)]
    pub gofers: Vec<HostProcess>,
    pub created: String,
    pub started: bool,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// The sandbox's host cgroup, below each hierarchy's root.
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
    /// husk made the cgroup and removes it at delete.
    #[serde(default)]
    pub cgroup_owned: bool,
    /// The audit log's file, which husk closes when it kills the sentry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_log: Option<PathBuf>,
    /// The sandbox's --network (sandbox, none, or host: unfiltered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
}

/// The OCI state of a container (runtime-spec "state"), as `husk state`
/// prints it and hooks receive it.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub struct OciState<'a> {
    pub oci_version: &'static str,
    pub id: &'a str,
    pub status: Status,
    pub pid: i32,
    pub bundle: &'a Path,
    pub rootfs: &'a Path,
    pub created: &'a str,
    pub owner: &'static str,
    pub annotations: &'a BTreeMap<String, String>,
}

/// The root of the state directory.
pub struct StateRoot {
    root: PathBuf,
}

/// A container folder locked for one command.
pub struct Container {
    pub dir: PathBuf,
    pub record: Record,
    _lock: Flock<File>,
}

/// A new container's folder, locked, before its state is written.
pub struct Reservation {
    pub dir: PathBuf,
    lock: Flock<File>,
}

fn check_id(id: &str) -> Result<(), StateError> {
    let ok = !id.is_empty()
        && id != "."
        && id != ".."
        && id.len() <= 1024
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "_+-.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(StateError::BadId(id.to_string()))
    }
}

fn lock(dir: &Path) -> Result<Flock<File>, StateError> {
    let path = dir.join(LOCK_FILE);
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io(&path))?;
    Flock::lock(f, FlockArg::LockExclusive).map_err(|(_, e)| StateError::Io(path, e.into()))
}

impl StateRoot {
    pub fn new(root: &Path) -> StateRoot {
        StateRoot { root: root.to_path_buf() }
    }

    /// Claims `id`: its folder is created (0700) and locked.
    pub fn reserve(&self, id: &str) -> Result<Reservation, StateError> {
        use std::os::unix::fs::DirBuilderExt;
        check_id(id)?;
        std::fs::DirBuilder::new().recursive(true).mode(0o711).create(&self.root).map_err(io(&self.root))?;
        let dir = self.root.join(id);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(StateError::Exists(id.into())),
            Err(e) => return Err(StateError::Io(dir, e)),
        }
        let lock = lock(&dir)?;
        Ok(Reservation { dir, lock })
    }

    /// Opens and locks an existing container.
    pub fn open(&self, id: &str) -> Result<Container, StateError> {
        check_id(id)?;
        let dir = self.root.join(id);
        if !dir.is_dir() {
            return Err(StateError::NotFound(id.into()));
        }
        let lock = lock(&dir).map_err(|_| StateError::NotFound(id.into()))?;
        let path = dir.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StateError::NotFound(id.into())),
            Err(e) => return Err(StateError::Io(path, e)),
        };
        let record = serde_json::from_str(&text).map_err(|e| StateError::Corrupt(path, e))?;
        Ok(Container { dir, record, _lock: lock })
    }

    /// Every container id, sorted.
    pub fn ids(&self) -> Result<Vec<String>, StateError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StateError::Io(self.root.clone(), e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(STATE_FILE).is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        ids.sort();
        Ok(ids)
    }
}

impl Reservation {
    /// The id of the container reserved (its folder's name).
    pub fn id(&self) -> String {
        self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    pub fn control_path(&self) -> PathBuf {
        self.dir.join(CONTROL_SOCKET)
    }

    /// Writes the first state; the container now exists for other commands.
    pub fn commit(self, record: Record) -> Result<Container, StateError> {
        let c = Container { dir: self.dir, record, _lock: self.lock };
        match c.save() {
            Ok(()) => Ok(c),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&c.dir);
                Err(e)
            }
        }
    }

    /// Gives the id back after a failed create.
    pub fn abandon(self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            log::warn!("cannot remove {}: {e}", self.dir.display());
        }
    }
}

impl Container {
    pub fn control_path(&self) -> PathBuf {
        self.dir.join(CONTROL_SOCKET)
    }

    pub fn cgroup(&self) -> Option<Cgroup> {
        self.record.cgroup.as_deref().map(|p| Cgroup::at(p, self.record.cgroup_owned))
    }

    /// The status now: a container whose sentry has ended is stopped, one
    /// whose cgroup is frozen is paused.
    pub fn status(&self) -> Status {
        if !self.record.sentry.alive() {
            Status::Stopped
        } else if self.cgroup().is_some_and(|c| c.frozen()) {
            Status::Paused
        } else if self.record.started {
            Status::Running
        } else {
            Status::Created
        }
    }

    pub fn oci_state(&self) -> OciState<'_> {
        let status = self.status();
        OciState {
            oci_version: OCI_VERSION,
            id: &self.record.id,
            status,
            pid: if status == Status::Stopped { 0 } else { self.record.sentry.pid },
            bundle: &self.record.bundle,
            rootfs: &self.record.rootfs,
            created: &self.record.created,
            owner: "",
            annotations: &self.record.annotations,
        }
    }

    pub fn save(&self) -> Result<(), StateError> {
        let json = serde_json::to_vec_pretty(&self.record).map_err(|e| StateError::Corrupt(self.dir.clone(), e))?;
        write_atomically(&self.dir.join(STATE_FILE), &json)
    }

    /// Removes the container's folder; the id is free again.
    pub fn remove(self) -> Result<(), StateError> {
        std::fs::remove_dir_all(&self.dir).map_err(io(&self.dir))
    }
}

/// Replaces `path` with `data`: a new temporary file in the same folder
/// (never an existing one, nor through a symlink), fsync'ed, then renamed
/// over it. An existing file keeps its permissions.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<(), StateError> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}.{nanos:x}.{n}", std::process::id()));
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(mode)
        .open(&tmp)
        .map_err(io(&tmp))?;
    let written = f
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .and_then(|()| f.write_all(data))
        .and_then(|()| f.sync_all())
        .map_err(io(&tmp))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(io(path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Now, in RFC 3339 (UTC, nanoseconds), as runc writes `created`.
pub fn rfc3339_now() -> String {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, day) = civil_from_days(days);
    format!("{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z", rem / 3600, rem % 3600 / 60, rem % 60, d.subsec_nanos())
}

/// The proleptic Gregorian date of a day count since 1970-01-01
/// (Howard Hinnant's civil_from_days).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_and_keep_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("husk-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("daemon.json");
        write_atomically(&f, b"one").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&f, b"two").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"two");
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file is left");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_422), (2025, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn ids_are_checked() {
        for bad in ["", ".", "..", "a/b", "a b", "x\n"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
        check_id("abc-1.2_3+4").unwrap();
    }

    #[test]
    fn our_own_process_is_alive_and_a_recycled_pid_is_not() {
        let me = HostProcess::of(i32::try_from(std::process::id()).unwrap()).unwrap();
        assert!(me.alive());
        assert!(!HostProcess { start: me.start + 1, ..me }.alive());
    }

    #[test]
    fn reserve_commit_open_remove() {
        let root = std::env::temp_dir().join(format!("husk-state-{}", std::process::id()));
        let sr = StateRoot::new(&root);
        let r = sr.reserve("c1").unwrap();
        assert!(matches!(sr.reserve("c1"), Err(StateError::Exists(_))));
        let me = HostProcess::of(i32::try_from(std::process::id()).unwrap()).unwrap();
        let record = Record {
            id: "c1".into(),
            bundle: "/b".into(),
            rootfs: "/b/rootfs".into(),
            sentry: me,
            gofers: Vec::new(),
            created: rfc3339_now(),
            started: false,
            annotations: BTreeMap::new(),
            cgroup: None,
            cgroup_owned: false,
            audit_log: None,
            network: None,
        };
        let c = r.commit(record).unwrap();
        assert_eq!(c.status(), Status::Created);
        drop(c);
        assert_eq!(sr.ids().unwrap(), ["c1"]);
        let c = sr.open("c1").unwrap();
        assert_eq!(c.oci_state().pid, me.pid);
        c.remove().unwrap();
        assert!(matches!(sr.open("c1"), Err(StateError::NotFound(_))));
        std::fs::remove_dir_all(root).unwrap();
    }
}
