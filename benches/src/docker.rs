//! The Docker container-start row: `docker run --rm --runtime=X
//! --network=none IMAGE /bin/true` for each of husk, runsc and runc that
//! dockerd has registered, IMAGE a busybox image imported once per bench
//! run and removed at its end. Nothing is started or installed: without a
//! dockerd that answers, every cell of the row says so.

use crate::runner;
use crate::runtimes::{Kind, Runtime};
use std::path::Path;
use std::time::Duration;

/// Bound on each `docker` call other than the measured runs: `info`,
/// `import`, `rmi`.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// `docker info` answers at once when dockerd is up; a socket nobody
/// serves must not hold the run.
const INFO_TIMEOUT: Duration = Duration::from_secs(10);

/// A reachable dockerd, its runtimes, and the image this run imported.
pub struct Docker {
    docker: String,
    image: String,
    /// The names in `docker info`'s `Runtimes`.
    registered: Vec<String>,
    work: std::path::PathBuf,
}

impl Docker {
    /// Asks dockerd (if `docker info` answers) for its runtimes and
    /// imports the row's image: a tarball of static busybox, as `/bin/true`.
    pub fn new(work: &Path) -> Result<Docker, String> {
        let docker = crate::which("docker").ok_or("unavailable: docker is not installed (not on PATH)")?;
        let docker = docker.to_string_lossy().into_owned();
        let cmd = |args: &[&str]| {
            let mut v = vec![docker.clone()];
            v.extend(args.iter().map(|a| (*a).to_string()));
            v
        };
        let info = runner::run(&cmd(&["info", "--format", "{{json .Runtimes}}"]), work, INFO_TIMEOUT)
            .map_err(|why| format!("unavailable: dockerd is not running (docker info: {why})"))?;
        let runtimes: serde_json::Value = serde_json::from_str(info.stdout.trim())
            .map_err(|e| format!("unavailable: docker info's runtimes do not parse: {e}"))?;
        let registered = runtimes.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        let tar = rootfs_tar(work)?;
        let image = format!("husk-bench-true:{}", std::process::id());
        runner::run(&cmd(&["import", &tar, &image]), work, CALL_TIMEOUT)
            .map_err(|e| format!("unavailable: docker import failed: {e}"))?;
        Ok(Docker { docker, image, registered, work: work.to_path_buf() })
    }

    /// The command that starts `/bin/true` under the docker runtime `name`.
    pub fn command(&self, name: &str) -> Vec<String> {
        [&self.docker, "run", "--rm", &format!("--runtime={name}"), "--network=none", &self.image, "/bin/true"]
            .iter()
            .map(|s| (*s).to_string())
            .collect()
    }

    /// The docker runtime that stands for `rt`'s column, registered.
    pub fn runtime_for(&self, rt: &Runtime) -> Result<&'static str, String> {
        let name = column_runtime(rt)?;
        if self.registered.iter().any(|r| r == name) {
            Ok(name)
        } else {
            Err(format!("unavailable: dockerd has no runtime {name:?} registered"))
        }
    }
}

impl Drop for Docker {
    fn drop(&mut self) {
        let rmi = [self.docker.clone(), "rmi".into(), "-f".into(), self.image.clone()];
        if let Err(why) = runner::run(&rmi, &self.work, CALL_TIMEOUT) {
            eprintln!("husk-bench: image {} not removed: {why}", self.image);
        }
    }
}

/// Which docker runtime a column's figure comes from: husk's `run` on its
/// first platform (`husk install` registers it with its default), runsc's
/// `run` on ptrace (the default of Debian's runsc), and runc.
fn column_runtime(rt: &Runtime) -> Result<&'static str, String> {
    let husk_run = format!("husk-run-{}", crate::runtimes::HUSK_PLATFORMS.first().copied().unwrap_or_default());
    match (&rt.kind, rt.name.as_str()) {
        (_, n) if n == husk_run => Ok("husk"),
        (_, "runsc-run-ptrace") => Ok("runsc"),
        (_, "runc") => Ok("runc"),
        (Kind::Oci { .. }, _) => Err("not applicable: docker's runtimes run with their default settings".into()),
        _ => Err("not applicable: docker runs containers through an OCI runtime (see the `run` columns)".into()),
    }
}

/// A tarball of a root filesystem holding static busybox as `/bin/true`,
/// and the directories a container needs.
fn rootfs_tar(work: &Path) -> Result<String, String> {
    let root = work.join("docker-rootfs");
    let io = |e: std::io::Error| format!("unavailable: the image's rootfs: {e}");
    for d in ["bin", "dev", "etc", "proc", "sys", "tmp"] {
        std::fs::create_dir_all(root.join(d)).map_err(io)?;
    }
    std::fs::copy("/bin/busybox", root.join("bin/busybox"))
        .map_err(|e| format!("unavailable: a static /bin/busybox is needed (busybox-static): {e}"))?;
    std::os::unix::fs::symlink("busybox", root.join("bin/true")).map_err(io)?;
    let tar = work.join("docker-rootfs.tar").to_string_lossy().into_owned();
    let argv =
        ["tar".to_string(), "-C".into(), root.to_string_lossy().into_owned(), "-cf".into(), tar.clone(), ".".into()];
    runner::run(&argv, work, CALL_TIMEOUT).map_err(|e| format!("unavailable: tar: {e}"))?;
    Ok(tar)
}
