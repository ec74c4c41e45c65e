//! husk-bench: the cost of isolation, measured in one run as ratios of the
//! same workloads run natively and under `husk do` (and under runc when it
//! is installed and a bundle is given).
//!
//! Usage: `husk-bench [--husk PATH] [--runs N]`. Each workload runs N times
//! per mode (after one warm-up); the median wall time is reported.

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
];

const USAGE: &str = "usage: husk-bench [--husk PATH] [--runs N]";

struct Options {
    husk: PathBuf,
    runs: usize,
}

fn parse_args() -> anyhow::Result<Options> {
    let default_husk = std::env::current_exe()?.with_file_name("husk");
    let mut opts = Options { husk: default_husk, runs: 5 };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--husk" => opts.husk = args.next().context("--husk needs a path")?.into(),
            "--runs" => opts.runs = args.next().context("--runs needs a number")?.parse().context("--runs")?,
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

fn main() -> anyhow::Result<()> {
    let opts = parse_args()?;
    let husk = opts.husk.to_string_lossy().into_owned();
    let husk_prefix = [husk.as_str(), "do", "--"];
    // Native runs write to a private temporary directory, not the host's
    // /tmp (the sandbox has its own /tmp).
    println!("husk-bench: median of {} runs each, wall time in ms", opts.runs);
    println!("{:<30} {:>10} {:>10} {:>8}", "workload", "native", "husk", "ratio");
    for w in WORKLOADS {
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
        println!("{:<30} {:>10.2} {:>10.2} {:>7.1}x", w.name, ms(native), ms(sandboxed), ratio);
    }
    if which("runc").is_some() {
        println!("runc is installed; a runc column needs an OCI bundle and arrives with `husk run`.");
    } else {
        println!("runc: not installed, no runc column.");
    }
    Ok(())
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_string_lossy().split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
}
