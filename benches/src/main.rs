//! husk-bench: the cost of isolation, measured in one run as ratios of the
//! same workloads run natively, under `husk do`, and — when runc is
//! installed and we are root — as OCI containers under runc and under
//! `husk run`, both over a bind mount of the host's root filesystem.
//!
//! Usage: `husk-bench [--husk PATH] [--runs N] [--only TEXT]`. Each
//! workload (or each whose name contains TEXT) runs N times per mode
//! (after one warm-up); the median wall time is reported.

use anyhow::{bail, Context as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A workload: a name and a command line.
struct Workload {
    name: &'static str,
    argv: &'static [&'static str],
}

const WORKLOADS: &[Workload] = &[
    Workload { name: "start /bin/true", argv: &["/bin/true"] },
    Workload {
        name: "20k getppid (python loop)",
        argv: &["/usr/bin/python3", "-c", "import os\nfor _ in range(20000): os.getppid()"],
    },
    Workload { name: "python3 import json,hashlib", argv: &["/usr/bin/python3", "-c", "import json, hashlib"] },
    Workload { name: "sha256sum python3.11", argv: &["/usr/bin/sha256sum", "/usr/bin/python3.11"] },
    Workload { name: "50 fork+exec (sh loop)", argv: &["/bin/sh", "-c", "for i in $(seq 50); do /bin/true; done"] },
    Workload {
        name: "find | wc (stat-heavy)",
        argv: &["/bin/sh", "-c", "find /usr/lib/python3.11 -name '*.py' | wc -l"],
    },
    Workload {
        name: "write+read 64 MiB in /tmp",
        argv: &["/bin/sh", "-c", "head -c 67108864 /dev/zero > /tmp/f && cat /tmp/f > /dev/null"],
    },
    Workload {
        name: "select ping-pong x1000",
        argv: &[
            "/usr/bin/python3",
            "-c",
            "import os, select, socket\n\
             a, b = socket.socketpair()\n\
             if os.fork() == 0:\n    a.close()\n    while d := (select.select([b], [], []) and b.recv(64)): b.send(d)\n    os._exit(0)\n\
             b.close()\n\
             for _ in range(1000):\n    a.send(b'x'); select.select([a], [], []); a.recv(64)\n\
             a.close(); os.wait()",
        ],
    },
    // Each write wakes the one thread polling that pipe; a sandbox that
    // woke every poller on every change would pay for all 100 each time.
    Workload {
        name: "100 pollers, 2000 single wakes",
        argv: &[
            "/usr/bin/python3",
            "-c",
            "import os, select, threading\n\
             N, R = 100, 20\n\
             pipes = [os.pipe() for _ in range(N)]; ans_r, ans_w = os.pipe()\n\
             def poller(fd):\n    p = select.poll(); p.register(fd, select.POLLIN)\n    \
             while p.poll() and os.read(fd, 1) == b'x': os.write(ans_w, b'.')\n\
             ts = [threading.Thread(target=poller, args=(r,)) for r, _ in pipes]\n\
             for t in ts: t.start()\n\
             for _ in range(R):\n    for _, w in pipes: os.write(w, b'x'); os.read(ans_r, 1)\n\
             for _, w in pipes: os.write(w, b'q')\n\
             for t in ts: t.join()",
        ],
    },
    Workload {
        name: "TCP loopback 32 MiB",
        argv: &[
            "/usr/bin/python3",
            "-c",
            "import os, socket\n\
             l = socket.create_server(('127.0.0.1', 0))\n\
             if os.fork() == 0:\n    c = socket.create_connection(l.getsockname()); c.sendall(bytes(32 << 20)); os._exit(0)\n\
             s, _ = l.accept(); n = 0\n\
             while d := s.recv(1 << 20): n += len(d)\n\
             os.wait(); assert n == 32 << 20",
        ],
    },
];

const USAGE: &str = "usage: husk-bench [--husk PATH] [--runs N] [--only TEXT]";

struct Options {
    husk: PathBuf,
    runs: usize,
    /// Only the workloads whose name contains this.
    only: Option<String>,
}

fn parse_args() -> anyhow::Result<Options> {
    let default_husk = std::env::current_exe()?.with_file_name("husk");
    let mut opts = Options { husk: default_husk, runs: 5, only: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--husk" => opts.husk = args.next().context("--husk needs a path")?.into(),
            "--runs" => opts.runs = args.next().context("--runs needs a number")?.parse().context("--runs")?,
            "--only" => opts.only = Some(args.next().context("--only needs a text")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} ({USAGE})"),
        }
    }
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    if !opts.husk.exists() {
        bail!("{} not found: build it with `cargo build --release` or pass --husk", opts.husk.display());
    }
    Ok(opts)
}

/// Runs `argv` (optionally prefixed) once and returns its wall time.
fn time_once(prefix: &[&str], argv: &[&str]) -> anyhow::Result<Duration> {
    let mut full: Vec<&str> = prefix.to_vec();
    full.extend_from_slice(argv);
    let start = Instant::now();
    let status = Command::new(full[0])
        .args(&full[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {full:?}"))?;
    let took = start.elapsed();
    if !status.success() {
        bail!("{full:?} failed: {status}");
    }
    Ok(took)
}

fn median(prefix: &[&str], argv: &[&str], runs: usize) -> anyhow::Result<Duration> {
    time_once(prefix, argv)?;
    let mut times = (0..runs).map(|_| time_once(prefix, argv)).collect::<anyhow::Result<Vec<_>>>()?;
    times.sort();
    Ok(times[runs / 2])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// OCI bundles over a read-only bind mount of the host's root filesystem
/// (runc cannot pivot into `/` itself), for runc and `husk run`.
struct Oci {
    dir: PathBuf,
    rootfs: PathBuf,
    runc: PathBuf,
    next: std::cell::Cell<u32>,
}

impl Oci {
    fn new(runc: PathBuf) -> anyhow::Result<Oci> {
        let dir = std::env::temp_dir().join(format!("husk-bench-oci-{}", std::process::id()));
        let rootfs = dir.join("rootfs");
        std::fs::create_dir_all(&rootfs)?;
        let status = Command::new("mount").args(["--bind", "-o", "ro", "/"]).arg(&rootfs).status()?;
        if !status.success() {
            bail!("cannot bind-mount / for the OCI bundles");
        }
        Ok(Oci { dir, rootfs, runc, next: std::cell::Cell::new(0) })
    }

    /// A bundle that runs `argv` with a tmpfs /tmp, as runc's default spec.
    fn bundle(&self, argv: &[&str]) -> anyhow::Result<PathBuf> {
        let bundle = self.dir.join("bundle");
        std::fs::create_dir_all(&bundle)?;
        let config = serde_json::json!({
            "ociVersion": "1.0.2",
            "root": { "path": self.rootfs, "readonly": true },
            "process": {
                "args": argv,
                "cwd": "/",
                "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                "user": { "uid": 0, "gid": 0 },
            },
            "hostname": "bench",
            "mounts": [
                { "destination": "/proc", "type": "proc", "source": "proc" },
                { "destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"] },
                { "destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"] },
                { "destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "ro"] },
            ],
            "linux": { "namespaces": [
                { "type": "pid" }, { "type": "ipc" }, { "type": "uts" }, { "type": "mount" }, { "type": "network" },
            ] },
        });
        std::fs::write(bundle.join("config.json"), config.to_string())?;
        Ok(bundle)
    }

    /// `RUNTIME --root STATE run --bundle B ID`, as a command prefix.
    fn prefix(&self, runtime: &std::path::Path, bundle: &std::path::Path) -> Vec<String> {
        let state = self.dir.join(format!("state-{}", runtime.file_name().unwrap_or_default().to_string_lossy()));
        let id = self.next.get();
        self.next.set(id + 1);
        [runtime.as_os_str(), "--root".as_ref(), state.as_os_str(), "run".as_ref(), "--bundle".as_ref()]
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .chain([bundle.to_string_lossy().into_owned(), format!("bench-{id}")])
            .collect()
    }

    /// Median wall time of the bundle under `runtime` (a new id each run).
    fn median(&self, runtime: &std::path::Path, argv: &[&str], runs: usize) -> anyhow::Result<Duration> {
        let bundle = self.bundle(argv)?;
        let mut times = Vec::new();
        for _ in 0..=runs {
            let cmd = self.prefix(runtime, &bundle);
            let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
            times.push(time_once(&cmd, &[])?);
        }
        times.remove(0);
        times.sort();
        Ok(times[runs / 2])
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
        let bundle = self.dir.join("bundle");
        let _ = std::fs::remove_file(bundle.join("config.json"));
        let _ = std::fs::remove_dir(bundle);
        for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            // The runtimes' state roots: empty once every run was deleted.
            let _ = std::fs::remove_dir_all(entry.path());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn main() -> anyhow::Result<()> {
    let opts = parse_args()?;
    let husk = opts.husk.to_string_lossy().into_owned();
    let husk_prefix = [husk.as_str(), "do", "--"];
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let oci = match which("runc") {
        Some(runc) if root => Some(Oci::new(runc)?),
        Some(_) => {
            println!("runc: needs root for its column; skipped.");
            None
        }
        None => {
            println!("runc: not installed, no runc column.");
            None
        }
    };
    println!("husk-bench: median of {} runs each, wall time in ms", opts.runs);
    print!("{:<30} {:>9} {:>9} {:>7}", "workload", "native", "husk do", "ratio");
    if oci.is_some() {
        print!(" {:>9} {:>9} {:>9}", "runc", "husk run", "vs runc");
    }
    println!();
    for w in WORKLOADS.iter().filter(|w| opts.only.as_ref().is_none_or(|o| w.name.contains(o.as_str()))) {
        let native = if w.name.contains("/tmp") {
            let dir = std::env::temp_dir().join(format!("husk-bench-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let script = w.argv[2].replace("/tmp/f", &dir.join("f").to_string_lossy());
            let d = median(&[], &["/bin/sh", "-c", &script], opts.runs)?;
            std::fs::remove_dir_all(&dir)?;
            d
        } else {
            median(&[], w.argv, opts.runs)?
        };
        let sandboxed = median(&husk_prefix, w.argv, opts.runs)?;
        let ratio = sandboxed.as_secs_f64() / native.as_secs_f64().max(1e-9);
        print!("{:<30} {:>9.2} {:>9.2} {:>6.1}x", w.name, ms(native), ms(sandboxed), ratio);
        if let Some(oci) = &oci {
            let runc = oci.median(&oci.runc, w.argv, opts.runs)?;
            let husk_run = oci.median(&opts.husk, w.argv, opts.runs)?;
            let vs = husk_run.as_secs_f64() / runc.as_secs_f64().max(1e-9);
            print!(" {:>9.2} {:>9.2} {:>8.1}x", ms(runc), ms(husk_run), vs);
        }
        println!();
    }
    Ok(())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_string_lossy().split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
}
