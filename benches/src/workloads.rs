//! The workloads, in gVisor's benchmark categories. Per-operation rows run
//! `progs/ops.c` (built static, so every runtime runs the same code) and
//! take the figure it prints, timed inside the program; whole-process rows
//! are the wall time of a command, start-up included.

use std::path::{Path, PathBuf};

/// What a row measures.
pub enum Measure {
    /// `ops OP ITERATIONS DIR`: microseconds per operation.
    PerOp { op: &'static str, iters: u32, dir: Dir },
    /// Wall time of a command, in milliseconds.
    Wall(fn(&Files) -> Vec<String>),
    /// Proportional set size of an idle `sleep` and everything the runtime
    /// runs for it, in KiB.
    IdlePss,
    /// Wall time of `docker run --rm --runtime=X … /bin/true`, in
    /// milliseconds, for the docker runtime standing for each column.
    DockerStart,
    /// `ops OP ITERATIONS 198.18.0.2` in the bench's own client
    /// namespace, natively and under `husk do` through its egress
    /// gateway: microseconds per 64 KiB (tcp_egress), per connection
    /// (tcp_egress_connect) or per query (dns_lookup).
    Egress { op: &'static str, iters: u32 },
}

/// Where the file workloads write.
#[derive(Clone, Copy)]
pub enum Dir {
    /// `/tmp`: the runtime's own (tmpfs in the OCI bundles, the sandbox's
    /// in-memory /tmp under `do`; the host's /tmp natively).
    Tmp,
    /// A directory of the host's root filesystem: written through the
    /// overlay under `do`, a read-write bind mount in the OCI bundles.
    Root,
    /// Not a file workload.
    None,
}

pub struct Workload {
    /// Short name, used by `--filter` and in the JSON.
    pub key: &'static str,
    pub title: &'static str,
    pub measure: Measure,
    /// Part of `--quick`.
    pub quick: bool,
    /// Programs the row runs that the host may lack (looked up on `PATH`):
    /// without one, the row is reported as unavailable, with the reason.
    pub needs: &'static [&'static str],
    /// A row of husk with an audit log: husk's runtimes only, each run
    /// paired with one without the log just before it, and reported also
    /// as the ratio of the two, of the figure and of the CPU time.
    pub audit: Option<Audit>,
}

/// How a row's husk runs keep an audit log.
pub struct Audit {
    /// `--audit-watch` globs (none: husk's defaults).
    pub watch: &'static [&'static str],
}

impl Audit {
    /// The global flags that make husk keep the log in `log`.
    pub fn flags(&self, log: &Path) -> Vec<String> {
        let mut f = vec!["--audit-log".to_string(), log.to_string_lossy().into_owned()];
        for g in self.watch {
            f.extend(["--audit-watch".to_string(), (*g).to_string()]);
        }
        f
    }
}

impl Workload {
    pub fn unit(&self) -> &'static str {
        match self.measure {
            Measure::PerOp { .. } | Measure::Egress { .. } => "µs/op",
            Measure::Wall(_) | Measure::DockerStart => "ms",
            Measure::IdlePss => "KiB",
        }
    }
}

/// The files workloads use, made at run time in the work directory.
pub struct Files {
    pub ops: PathBuf,
    pub pywork: PathBuf,
    pub mkproj: PathBuf,
    /// A small git repository, the source of the `git` row's clone.
    pub gitrepo: PathBuf,
    /// The local wheels the `pip` row installs (`progs/mkwheels.py`).
    pub wheels: PathBuf,
    /// `node`, as found on `PATH` (the row is unavailable without it).
    pub node: PathBuf,
    /// A read-write directory of the host's root filesystem.
    pub scratch: PathBuf,
}

const OPS_C: &str = include_str!("../progs/ops.c");
const PYWORK: &str = include_str!("../progs/pywork.py");
const MKWHEELS: &str = include_str!("../progs/mkwheels.py");
const MK_MAKEFILE: &str = include_str!("../progs/mkproj/Makefile");
const MK_SOURCES: &[(&str, &str)] = &[
    ("main.c", include_str!("../progs/mkproj/main.c")),
    ("a.c", include_str!("../progs/mkproj/a.c")),
    ("b.c", include_str!("../progs/mkproj/b.c")),
    ("c.c", include_str!("../progs/mkproj/c.c")),
    ("lib.h", include_str!("../progs/mkproj/lib.h")),
];

/// Writes the workloads' files into `work` and builds `ops` with the
/// host's C compiler. The error says why the per-op rows cannot run.
pub fn prepare(work: &Path) -> (Files, Result<(), String>) {
    let files = Files {
        ops: work.join("ops"),
        pywork: work.join("pywork.py"),
        mkproj: work.join("mkproj"),
        gitrepo: work.join("gitrepo"),
        wheels: work.join("wheels"),
        node: crate::which("node").unwrap_or_else(|| "node".into()),
        scratch: work.join("scratch"),
    };
    let written = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(&files.mkproj)?;
        std::fs::create_dir_all(&files.scratch)?;
        std::fs::write(work.join("ops.c"), OPS_C)?;
        std::fs::write(&files.pywork, PYWORK)?;
        std::fs::write(files.mkproj.join("Makefile"), MK_MAKEFILE)?;
        for (name, text) in MK_SOURCES {
            std::fs::write(files.mkproj.join(name), text)?;
        }
        std::fs::write(work.join("mkwheels.py"), MKWHEELS)?;
        Ok(())
    })();
    if written.is_ok() {
        if let Err(why) = git_repo(&files.gitrepo) {
            eprintln!("husk-bench: the git row will fail: {why}");
        }
        if let Err(why) = wheels(work, &files.wheels) {
            eprintln!("husk-bench: the pip row will fail: {why}");
        }
    }
    let built = written.map_err(|e| format!("writing the workloads: {e}")).and_then(|()| {
        let out = std::process::Command::new("cc")
            .args(["-static", "-O2", "-pthread", "-o"])
            .arg(&files.ops)
            .arg(work.join("ops.c"))
            .output()
            .map_err(|e| format!("cc: {e} (gcc and libc6-dev are needed)"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("cc -static failed: {}", String::from_utf8_lossy(&out.stderr).trim()))
        }
    });
    (files, built)
}

/// The `git` row's source repository: a copy of `progs/mkproj` and a
/// hundred small files, in three commits. Like the wheels, it lives in the
/// work directory, which every runtime sees (the OCI bundles read-only,
/// which a clone and `--find-links` only read).
fn git_repo(repo: &Path) -> Result<(), String> {
    let write = |path: PathBuf, text: String| {
        std::fs::create_dir_all(path.parent().unwrap_or(repo)).and_then(|()| std::fs::write(&path, text))
    };
    for (name, text) in MK_SOURCES {
        write(repo.join(name), (*text).to_string()).map_err(|e| format!("gitrepo: {e}"))?;
    }
    let git = |args: &[&str]| -> Result<(), String> {
        let out = std::process::Command::new("git")
            .args(GIT_CONFIG)
            .arg("-C")
            .arg(repo)
            .args(args)
            .output()
            .map_err(|e| format!("git: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
        }
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["add", "."])?;
    git(&["commit", "-q", "-m", "the C project"])?;
    for round in 0..2 {
        for i in 0..50 {
            let text = format!("file {i}, round {round}\n").repeat(20);
            write(repo.join(format!("d{}/f{i}.txt", i % 10)), text).map_err(|e| format!("gitrepo: {e}"))?;
        }
        git(&["add", "."])?;
        git(&["commit", "-q", "-m", "fifty small files"])?;
    }
    Ok(())
}

/// The `pip` row's wheels, written by `progs/mkwheels.py` into `dir`.
fn wheels(work: &Path, dir: &Path) -> Result<(), String> {
    let out = std::process::Command::new(PYTHON)
        .arg(work.join("mkwheels.py"))
        .arg(dir)
        .output()
        .map_err(|e| format!("{PYTHON}: {e}"))?;
    if !out.status.success() {
        return Err(format!("mkwheels.py: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

const PYTHON: &str = "/usr/bin/python3";

/// git's settings for the `git` row and its source repository: an
/// identity to commit with, and every directory trusted (the guest's uid
/// need not own the source repository).
const GIT_CONFIG: &[&str] =
    &["-c", "user.name=husk-bench", "-c", "user.email=bench@localhost", "-c", "safe.directory=*"];

/// The iterations of the audited create+write+unlink rows: enough that
/// the sandbox's start (some 30 ms of CPU time on the 2-core machine) is
/// a small part of a run's CPU time, which their CPU ratio compares.
const AUDITED_CREATES: u32 = 10_000;

fn per_op(key: &'static str, title: &'static str, iters: u32, dir: Dir, quick: bool) -> Workload {
    Workload { key, title, measure: Measure::PerOp { op: key, iters, dir }, quick, needs: &[], audit: None }
}

/// `base`'s workload again, under husk with an audit log (`watch`: its
/// `--audit-watch` globs), keyed `key`.
fn audited(key: &'static str, title: &'static str, base: Workload, watch: &'static [&'static str]) -> Workload {
    let audit = Some(Audit { watch });
    Workload { key, title, audit, ..base }
}

/// A per-operation row of program operation `op` on one file system,
/// keyed apart from the same operation's row on the other.
fn file_op(key: &'static str, op: &'static str, title: &'static str, iters: u32, dir: Dir) -> Workload {
    Workload { key, ..per_op(op, title, iters, dir, false) }
}

/// Every workload, in table order. Iteration counts keep a sandboxed run
/// near a second on a 2-core machine; `--quick` divides them by ten.
pub fn all() -> Vec<Workload> {
    use Dir::{None as N, Root, Tmp};
    vec![
        per_op("getppid", "getppid round trip", 20_000, N, true),
        per_op("clock_gettime", "clock_gettime (vDSO path)", 20_000, N, false),
        per_op("open_close", "open+close /etc/passwd", 5_000, N, true),
        per_op("stat", "stat /etc/passwd", 5_000, N, false),
        per_op("create_unlink", "create+write+unlink, /tmp", 2_000, Tmp, false),
        audited(
            "create_unlink_audit",
            "create+write+unlink, /tmp, with --audit-log (default watch list: /tmp not watched)",
            per_op("create_unlink", "", AUDITED_CREATES, Tmp, false),
            &[],
        ),
        audited(
            "create_unlink_watched",
            "create+write+unlink, /tmp, with --audit-log --audit-watch '/tmp/**' (3 records per loop)",
            per_op("create_unlink", "", AUDITED_CREATES, Tmp, false),
            &["/tmp/**"],
        ),
        file_op("seq_write_tmp", "seq_write", "sequential write 64 KiB, /tmp", 1_000, Tmp),
        file_op("seq_read_tmp", "seq_read", "sequential read 64 KiB, /tmp", 1_000, Tmp),
        file_op("seq_write_root", "seq_write", "sequential write 64 KiB, root fs (overlay/bind)", 1_000, Root),
        file_op("seq_read_root", "seq_read", "sequential read 64 KiB, root fs (overlay/bind)", 1_000, Root),
        file_op("rand_read_tmp", "rand_read", "random read 4 KiB of 16 MiB, /tmp", 5_000, Tmp),
        file_op("rand_write_tmp", "rand_write", "random write 4 KiB of 16 MiB, /tmp", 5_000, Tmp),
        file_op("rand_read_root", "rand_read", "random read 4 KiB of 16 MiB, root fs (overlay/bind)", 5_000, Root),
        file_op("rand_write_root", "rand_write", "random write 4 KiB of 16 MiB, root fs (overlay/bind)", 5_000, Root),
        per_op("pipe_pingpong", "pipe ping-pong (round trip)", 5_000, N, true),
        per_op("unix_pingpong", "unix socket ping-pong (round trip)", 5_000, N, false),
        per_op("select_pingpong", "pipe ping-pong, select before each read (round trip)", 5_000, N, false),
        per_op("pollers_100", "100 pollers on their own pipes, one written at a time (round trip)", 5_000, N, false),
        per_op("fork_wait", "fork+wait", 300, N, false),
        per_op("fork_exec_wait", "fork+exec+wait /bin/true", 50, N, true),
        audited(
            "fork_exec_wait_audit",
            "fork+exec+wait /bin/true, with --audit-log (process.exec and process.exit records)",
            per_op("fork_exec_wait", "", 50, N, true),
            &[],
        ),
        per_op("page_fault", "page fault (mmap+touch, per page)", 50_000, N, false),
        per_op("thread_create_join", "thread create+join", 1_000, N, false),
        per_op("futex_pingpong", "futex ping-pong (round trip)", 5_000, N, false),
        per_op("epoll_idle", "epoll wake with 400 idle fds", 5_000, N, false),
        per_op("tcp_loopback", "loopback TCP, per 64 KiB", 1_000, N, false),
        per_op("tcp_connect", "loopback TCP connect+accept+close", 1_000, N, false),
        Workload {
            key: "tcp_egress",
            title: "egress TCP through the gateway, per 64 KiB",
            measure: Measure::Egress { op: "tcp_egress", iters: 1_000 },
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "tcp_egress_connect",
            title: "egress TCP connect+close through the gateway",
            measure: Measure::Egress { op: "tcp_egress_connect", iters: 500 },
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "dns_lookup",
            title: "DNS lookup of an allowed name (the sandbox's resolver vs dnsmasq directly)",
            measure: Measure::Egress { op: "dns_lookup", iters: 500 },
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "start_true",
            title: "start /bin/true",
            measure: Measure::Wall(|_| argv(&["/bin/true"])),
            quick: true,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "docker_start",
            title: "docker run --rm /bin/true (container start through dockerd)",
            measure: Measure::DockerStart,
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "python_pass",
            title: "python3 -c pass",
            measure: Measure::Wall(|_| argv(&[PYTHON, "-c", "pass"])),
            quick: true,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "python_work",
            title: "python3 json+re+sqlite3+hashlib",
            measure: Measure::Wall(|f| vec![PYTHON.into(), f.pywork.to_string_lossy().into_owned()]),
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "node_start",
            title: "node -e 0",
            measure: Measure::Wall(|f| vec![f.node.to_string_lossy().into_owned(), "-e".into(), "0".into()]),
            quick: false,
            needs: &["node"],
            audit: None,
        },
        Workload {
            key: "make_j2",
            title: "make -j2 of a 4-file C project",
            measure: Measure::Wall(|f| {
                let script = format!(
                    "d=/tmp/husk-bench-mk.$$ && cp -r {} $d && make -s -j2 -C $d && rm -rf $d",
                    f.mkproj.display()
                );
                argv(&["/bin/sh", "-c", &script])
            }),
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "git",
            title: "git clone+status+commit of a small local repo",
            measure: Measure::Wall(|f| {
                let script = format!(
                    "set -e; g() {{ git {} \"$@\"; }}; d=/tmp/husk-bench-git.$$; g clone -q --no-local {} $d; cd $d; \
                     g status --short >/dev/null; echo change >> main.c; g commit -q -a -m change; cd /; rm -rf $d",
                    GIT_CONFIG.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" "),
                    f.gitrepo.display()
                );
                argv(&["/bin/sh", "-c", &script])
            }),
            quick: false,
            needs: &["git"],
            audit: None,
        },
        Workload {
            key: "pip_install",
            title: "pip install of 3 local wheels (--target)",
            measure: Measure::Wall(|f| {
                let script = format!(
                    "set -e; d=/tmp/husk-bench-pip.$$; {PYTHON} -m pip install -q --no-index --no-cache-dir \
                     --disable-pip-version-check --root-user-action=ignore --find-links {} --target $d benchpkg_a; \
                     rm -rf $d",
                    f.wheels.display()
                );
                argv(&["/bin/sh", "-c", &script])
            }),
            quick: false,
            needs: &[],
            audit: None,
        },
        Workload {
            key: "idle_pss",
            title: "idle sandbox memory (PSS)",
            measure: Measure::IdlePss,
            quick: false,
            needs: &[],
            audit: None,
        },
    ]
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_string()).collect()
}
