//! The runtimes a run compares: the host itself, husk (`do`, and `run` of
//! an OCI bundle), gVisor's runsc (`do` and `run`, per platform), runc and
//! any other OCI runtime named with `--runtime NAME=PATH`. Each is probed
//! with a tiny workload first; one that is missing or fails is reported as
//! such and kept in the table.

use crate::oci::Oci;
use std::path::{Path, PathBuf};

/// husk's platforms (`--platform`).
pub const HUSK_PLATFORMS: &[&str] = &["ptrace"];
/// runsc's platforms, in the Debian package's version.
pub const RUNSC_PLATFORMS: &[&str] = &["ptrace", "kvm"];

#[derive(Clone)]
pub enum Kind {
    Native,
    HuskDo {
        husk: PathBuf,
        platform: &'static str,
    },
    RunscDo {
        runsc: PathBuf,
        platform: &'static str,
    },
    /// `PATH [ARGS] run --bundle B ID` of an OCI runtime.
    Oci {
        path: PathBuf,
        args: Vec<String>,
    },
}

/// Whether a runtime takes part.
#[derive(Clone)]
pub enum Status {
    Ready,
    Missing(String),
    Failed(String),
}

#[derive(Clone)]
pub struct Runtime {
    pub name: String,
    pub kind: Kind,
    pub status: Status,
    /// Which runtime this one is compared with as "runsc": `do` with `do`,
    /// `run` with `run`.
    pub runsc_anchor: &'static str,
    /// What it is, for the reader: version and platform.
    pub about: String,
}

impl Runtime {
    pub fn ready(&self) -> bool {
        matches!(self.status, Status::Ready)
    }

    pub fn is_husk(&self) -> bool {
        self.name.starts_with("husk-")
    }

    /// The command line that runs `argv` under this runtime. `bundle` is
    /// the OCI bundle made for `argv` (for OCI runtimes).
    pub fn command(&self, argv: &[String], oci: Option<&Oci>, bundle: Option<&Path>) -> Result<Vec<String>, String> {
        self.command_with(argv, oci, bundle, &[])
    }

    /// `command`, with `husk_flags` (global flags of husk's) given to a
    /// husk runtime; any other runtime has nothing to take them.
    pub fn husk_command(
        &self,
        argv: &[String],
        oci: Option<&Oci>,
        bundle: Option<&Path>,
        husk_flags: &[String],
    ) -> Result<Vec<String>, String> {
        if !self.is_husk() {
            return Err("not applicable: the flags are husk's".into());
        }
        self.command_with(argv, oci, bundle, husk_flags)
    }

    fn command_with(
        &self,
        argv: &[String],
        oci: Option<&Oci>,
        bundle: Option<&Path>,
        husk_flags: &[String],
    ) -> Result<Vec<String>, String> {
        let mut cmd: Vec<String> = Vec::new();
        match &self.kind {
            Kind::Native => {}
            Kind::HuskDo { husk, platform } => {
                cmd.extend([path_str(husk), format!("--platform={platform}")]);
                cmd.extend(husk_flags.iter().cloned());
                cmd.extend(["do".into(), "--".into()]);
            }
            Kind::RunscDo { runsc, platform } => {
                cmd.push(path_str(runsc));
                cmd.extend(runsc_flags(platform));
                cmd.extend(["do".into(), "-quiet".into()]);
            }
            Kind::Oci { path, args } => {
                let oci = oci.ok_or("needs root (its bundle bind-mounts the host's /)")?;
                let bundle = bundle.ok_or("no bundle")?;
                let args: Vec<String> = args.iter().chain(husk_flags).cloned().collect();
                return Ok(oci.command(&self.name, path, &args, bundle));
            }
        }
        cmd.extend(argv.iter().cloned());
        Ok(cmd)
    }
}

/// The flags runsc needs here: no network (the sandbox must reach nothing
/// outside), the platform, and `--rootless` when not root.
fn runsc_flags(platform: &str) -> Vec<String> {
    let mut f = vec!["--network=none".to_string(), format!("--platform={platform}")];
    if !crate::is_root() {
        f.push("--rootless".into());
    }
    f
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// What `husk-bench` was told about runtimes.
pub struct Wanted<'a> {
    pub husk: &'a Path,
    pub runsc: Option<&'a Path>,
    pub extra: &'a [(String, PathBuf)],
    pub root: bool,
}

/// Every runtime this run knows of, missing ones included.
pub fn discover(w: &Wanted) -> Vec<Runtime> {
    let mut all = vec![Runtime {
        name: "native".into(),
        kind: Kind::Native,
        status: Status::Ready,
        runsc_anchor: "runsc-do-ptrace",
        about: "the host, no sandbox".into(),
    }];
    let needs_root =
        |status: Status| if w.root { status } else { Status::Missing("needs root for its OCI bundle".into()) };
    let husk_status = if w.husk.is_file() {
        Status::Ready
    } else {
        Status::Missing(format!("{} not found (cargo build --release, or --husk)", w.husk.display()))
    };
    for &platform in HUSK_PLATFORMS {
        all.push(Runtime {
            name: format!("husk-do-{platform}"),
            kind: Kind::HuskDo { husk: w.husk.into(), platform },
            status: husk_status.clone(),
            runsc_anchor: "runsc-do-ptrace",
            about: format!("husk do --platform={platform}"),
        });
        all.push(Runtime {
            name: format!("husk-run-{platform}"),
            kind: Kind::Oci { path: w.husk.into(), args: vec![format!("--platform={platform}")] },
            status: needs_root(husk_status.clone()),
            runsc_anchor: "runsc-run-ptrace",
            about: format!("husk run --platform={platform} of an OCI bundle"),
        });
    }
    let runsc_status = match w.runsc {
        Some(p) if p.is_file() => Status::Ready,
        Some(p) => Status::Missing(format!("{} not found", p.display())),
        None => Status::Missing("runsc not found on PATH (apt-get install runsc, or --runsc)".into()),
    };
    let runsc = w.runsc.map(Path::to_path_buf).unwrap_or_default();
    let version = version_line(&runsc);
    for &platform in RUNSC_PLATFORMS {
        all.push(Runtime {
            name: format!("runsc-do-{platform}"),
            kind: Kind::RunscDo { runsc: runsc.clone(), platform },
            status: runsc_status.clone(),
            runsc_anchor: "runsc-do-ptrace",
            about: format!("runsc do, {platform} platform ({version})"),
        });
        all.push(Runtime {
            name: format!("runsc-run-{platform}"),
            kind: Kind::Oci { path: runsc.clone(), args: runsc_flags(platform) },
            status: needs_root(runsc_status.clone()),
            runsc_anchor: "runsc-run-ptrace",
            about: format!("runsc run, {platform} platform, of an OCI bundle"),
        });
    }
    let runc = crate::which("runc");
    all.push(Runtime {
        name: "runc".into(),
        status: match &runc {
            Some(_) => needs_root(Status::Ready),
            None => Status::Missing("runc not found on PATH".into()),
        },
        about: format!("runc run of an OCI bundle ({})", runc.as_deref().map(version_line).unwrap_or_default()),
        kind: Kind::Oci { path: runc.unwrap_or_default(), args: Vec::new() },
        runsc_anchor: "runsc-run-ptrace",
    });
    for (name, path) in w.extra {
        all.push(Runtime {
            name: name.clone(),
            kind: Kind::Oci { path: path.clone(), args: Vec::new() },
            status: if path.is_file() {
                needs_root(Status::Ready)
            } else {
                Status::Missing(format!("{} not found", path.display()))
            },
            runsc_anchor: "runsc-run-ptrace",
            about: format!("{} run of an OCI bundle", path.display()),
        });
    }
    all
}

/// The first line of `PROG --version`, or "" when it has none.
fn version_line(prog: &Path) -> String {
    std::process::Command::new(prog)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or_default().to_string())
        .unwrap_or_default()
}
