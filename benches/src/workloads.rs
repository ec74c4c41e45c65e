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
}

impl Workload {
    pub fn unit(&self) -> &'static str {
        match self.measure {
            Measure::PerOp { .. } => "µs/op",
            Measure::Wall(_) => "ms",
            Measure::IdlePss => "KiB",
        }
    }
}

/// The files workloads use, made at run time in the work directory.
pub struct Files {
    pub ops: PathBuf,
    pub pywork: PathBuf,
    pub mkproj: PathBuf,
    /// A read-write directory of the host's root filesystem.
    pub scratch: PathBuf,
}

const OPS_C: &str = include_str!("../progs/ops.c");
const PYWORK: &str = include_str!("../progs/pywork.py");
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
        Ok(())
    })();
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

const PYTHON: &str = "/usr/bin/python3";

fn per_op(key: &'static str, title: &'static str, iters: u32, dir: Dir, quick: bool) -> Workload {
    Workload { key, title, measure: Measure::PerOp { op: key, iters, dir }, quick }
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
        Workload { key: "seq_write_tmp", ..per_op("seq_write", "sequential write 64 KiB, /tmp", 1_000, Tmp, false) },
        Workload { key: "seq_read_tmp", ..per_op("seq_read", "sequential read 64 KiB, /tmp", 1_000, Tmp, false) },
        Workload {
            key: "seq_write_root",
            ..per_op("seq_write", "sequential write 64 KiB, root fs (overlay/bind)", 1_000, Root, false)
        },
        Workload {
            key: "seq_read_root",
            ..per_op("seq_read", "sequential read 64 KiB, root fs (overlay/bind)", 1_000, Root, false)
        },
        per_op("pipe_pingpong", "pipe ping-pong (round trip)", 5_000, N, true),
        per_op("unix_pingpong", "unix socket ping-pong (round trip)", 5_000, N, false),
        per_op("fork_wait", "fork+wait", 300, N, false),
        per_op("fork_exec_wait", "fork+exec+wait /bin/true", 50, N, true),
        per_op("page_fault", "page fault (mmap+touch, per page)", 50_000, N, false),
        per_op("thread_create_join", "thread create+join", 1_000, N, false),
        per_op("futex_pingpong", "futex ping-pong (round trip)", 5_000, N, false),
        per_op("epoll_idle", "epoll wake with 400 idle fds", 5_000, N, false),
        per_op("tcp_loopback", "loopback TCP, per 64 KiB", 1_000, N, false),
        Workload {
            key: "start_true",
            title: "start /bin/true",
            measure: Measure::Wall(|_| argv(&["/bin/true"])),
            quick: true,
        },
        Workload {
            key: "python_pass",
            title: "python3 -c pass",
            measure: Measure::Wall(|_| argv(&[PYTHON, "-c", "pass"])),
            quick: true,
        },
        Workload {
            key: "python_work",
            title: "python3 json+re+sqlite3+hashlib",
            measure: Measure::Wall(|f| vec![PYTHON.into(), f.pywork.to_string_lossy().into_owned()]),
            quick: false,
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
        },
        Workload { key: "idle_pss", title: "idle sandbox memory (PSS)", measure: Measure::IdlePss, quick: false },
    ]
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_string()).collect()
}
