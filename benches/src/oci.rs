//! OCI bundles over a read-only bind mount of the host's root filesystem
//! (runc cannot pivot into `/` itself), shared by every OCI runtime so
//! that they all run the same files: runc, `husk run`, `runsc run`.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Oci {
    dir: PathBuf,
    rootfs: PathBuf,
    next: Cell<u32>,
}

impl Oci {
    /// Bind-mounts `/` read-only below `dir` (which must not exist yet).
    pub fn new(dir: PathBuf) -> Result<Oci, String> {
        use std::os::unix::fs::DirBuilderExt;
        // Made here, private (a path made before us, a symlink say, would
        // choose where `/` is mounted).
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let rootfs = dir.join("rootfs");
        std::fs::create_dir(&rootfs).map_err(|e| format!("{}: {e}", rootfs.display()))?;
        let status = Command::new("mount").args(["--bind", "-o", "ro", "/"]).arg(&rootfs).status();
        if !status.is_ok_and(|s| s.success()) {
            let _ = std::fs::remove_dir(&rootfs);
            return Err("cannot bind-mount / for the OCI bundles".into());
        }
        Ok(Oci { dir, rootfs, next: Cell::new(0) })
    }

    /// A bundle named `name` that runs `argv` in `cwd`, with a tmpfs /tmp
    /// as runc's default spec, and `scratch` bind-mounted read-write (the
    /// root is read-only) for the file workloads.
    pub fn bundle(&self, name: &str, argv: &[String], cwd: &Path, scratch: &Path) -> Result<PathBuf, String> {
        let bundle = self.dir.join(format!("bundle-{name}"));
        std::fs::create_dir_all(&bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": self.rootfs, "readonly": true },
            "process": {
                "args": argv,
                "cwd": cwd,
                "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "user": { "uid": 0, "gid": 0 },
            },
            "hostname": "bench",
            "mounts": [
                { "destination": "/proc", "type": "proc", "source": "proc" },
                { "destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"] },
                { "destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"] },
                { "destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "ro"] },
                { "destination": scratch, "type": "bind", "source": scratch, "options": ["rbind", "rw"] },
            ],
            "linux": { "namespaces": [
                { "type": "pid" }, { "type": "ipc" }, { "type": "uts" }, { "type": "mount" }, { "type": "network" },
            ] },
        });
        std::fs::write(bundle.join("config.json"), config.to_string()).map_err(|e| format!("config.json: {e}"))?;
        Ok(bundle)
    }

    /// `RUNTIME ARGS --root STATE run --bundle B ID`, a new id each time.
    pub fn command(&self, name: &str, runtime: &Path, args: &[String], bundle: &Path) -> Vec<String> {
        let state = self.dir.join(format!("state-{name}"));
        let id = self.next.get();
        self.next.set(id.wrapping_add(1));
        let mut cmd = vec![runtime.to_string_lossy().into_owned()];
        cmd.extend(args.iter().cloned());
        cmd.extend([
            "--root".into(),
            state.to_string_lossy().into_owned(),
            "run".into(),
            "--bundle".into(),
            bundle.to_string_lossy().into_owned(),
            format!("bench-{}-{id}", std::process::id()),
        ]);
        cmd
    }
}

impl Drop for Oci {
    /// Unmounts the host's / and removes what we made — never recursively
    /// below the mount point, in case it is still mounted.
    fn drop(&mut self) {
        let unmounted = Command::new("umount").arg(&self.rootfs).status().is_ok_and(|s| s.success());
        if !unmounted || std::fs::remove_dir(&self.rootfs).is_err() {
            eprintln!("husk-bench: {} is still mounted; left in place", self.rootfs.display());
            return;
        }
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            // Bundles and the runtimes' state roots (left over by killed runs).
            let _ = std::fs::remove_dir_all(entry.path());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
