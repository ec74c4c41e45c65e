//! husk-bench: the cost of isolation, measured in one run as ratios of the
//! same workloads run natively, under husk, under gVisor's runsc and under
//! runc (and any other OCI runtime). Runtimes are interleaved (A B C A B
//! C …) so that a change in the machine's load hits them all alike; the
//! first round is a warm-up and is discarded.

mod docker;
mod egress;
mod machine;
mod oci;
mod report;
mod runner;
mod runtimes;
mod svg;
mod workloads;

use anyhow::{bail, Context as _};
use report::{Cell, Report, Row};
use runtimes::{Kind, Runtime, Status};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use workloads::{Dir, Files, Measure, Workload};

const USAGE: &str = "usage: husk-bench [--runs N] [--quick] [--filter TEXT] [--runtimes A,B,…] \
[--runtime NAME=PATH]… [--husk PATH] [--runsc PATH] [--timeout SECS] [--json FILE] [--svg FILE]";

/// How long a runtime's smoke test may take: runsc's KVM platform on a
/// nested machine never answers.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long an idle sandbox is left to settle before its memory is read.
const SETTLE: Duration = Duration::from_secs(2);

struct Options {
    husk: PathBuf,
    runsc: Option<PathBuf>,
    extra: Vec<(String, PathBuf)>,
    runs: usize,
    quick: bool,
    /// Only the workloads whose key or title contains this (or one of
    /// its comma-separated parts).
    filter: Option<String>,
    runtimes: Option<Vec<String>>,
    timeout: Duration,
    json: Option<PathBuf>,
    svg: Option<PathBuf>,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut opts = Options {
        husk: std::env::current_exe()?.with_file_name("husk"),
        runsc: which("runsc"),
        extra: Vec::new(),
        runs: 5,
        quick: false,
        filter: None,
        runtimes: None,
        timeout: Duration::from_secs(120),
        json: None,
        svg: None,
    };
    let mut runs = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().with_context(|| format!("{a} needs {what} ({USAGE})"));
        match a.as_str() {
            "--husk" => opts.husk = value("a path")?.into(),
            "--runsc" => opts.runsc = Some(value("a path")?.into()),
            "--runs" => runs = Some(value("a number")?.parse::<usize>().context("--runs")?),
            "--quick" => opts.quick = true,
            "--filter" => opts.filter = Some(value("a text")?),
            "--runtimes" => opts.runtimes = Some(value("a list")?.split(',').map(str::to_string).collect()),
            "--runtime" => {
                let v = value("NAME=PATH")?;
                let (name, path) = v.split_once('=').context("--runtime needs NAME=PATH")?;
                opts.extra.push((name.to_string(), path.into()));
            }
            "--timeout" => opts.timeout = Duration::from_secs(value("seconds")?.parse().context("--timeout")?),
            "--json" => opts.json = Some(value("a file")?.into()),
            "--svg" => opts.svg = Some(value("a file")?.into()),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} ({USAGE})"),
        }
    }
    opts.runs = runs.unwrap_or(if opts.quick { 1 } else { 5 });
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    Ok(opts)
}

pub fn is_root() -> bool {
    euid() == 0
}

/// Our effective user id.
fn euid() -> libc::uid_t {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_string_lossy().split(':').map(|d| PathBuf::from(d).join(name)).find(|p| p.is_file())
}

/// The runtimes named by `--runtimes` (all by default), in their order.
fn select(all: Vec<Runtime>, wanted: Option<&[String]>) -> anyhow::Result<Vec<Runtime>> {
    let Some(wanted) = wanted else { return Ok(all) };
    let names: Vec<String> = all.iter().map(|r| r.name.clone()).collect();
    let mut chosen = Vec::new();
    for w in wanted {
        match all.iter().find(|r| &r.name == w) {
            Some(r) => chosen.push(r.clone()),
            None => bail!("unknown runtime {w:?}; known: {}", names.join(", ")),
        }
    }
    Ok(chosen)
}

/// The command line a workload runs, the same under every runtime.
fn workload_argv(w: &Workload, files: &Files, quick: bool) -> Vec<String> {
    match &w.measure {
        Measure::PerOp { op, iters, dir } => {
            let iters = if quick { (iters / 10).max(1) } else { *iters };
            let dir = match dir {
                Dir::Root => files.scratch.to_string_lossy().into_owned(),
                Dir::Tmp | Dir::None => "/tmp".into(),
            };
            vec![files.ops.to_string_lossy().into_owned(), (*op).to_string(), iters.to_string(), dir]
        }
        Measure::Wall(argv) => argv(files),
        Measure::IdlePss => vec!["/bin/sleep".into(), "60".into()],
        Measure::DockerStart => vec!["/bin/true".into()],
        Measure::Egress { op, iters } => {
            let iters = if quick { (iters / 10).max(1) } else { *iters };
            let ops = files.ops.to_string_lossy().into_owned();
            vec![ops, (*op).into(), iters.to_string(), egress::SERVER.into()]
        }
    }
}

/// What one run measured.
struct Measured {
    figure: f64,
    /// The peak RSS in KiB, where the run reports one (not for the
    /// idle-memory row, whose sandbox is killed).
    peak_rss_kib: Option<u64>,
    /// The CPU time of the run's processes in ms (`runner::Outcome::cpu`),
    /// where they are ours (not docker's, whose container runs under
    /// dockerd).
    cpu_ms: Option<f64>,
}

impl Measured {
    fn of(figure: f64, out: &runner::Outcome) -> Measured {
        Measured { figure, peak_rss_kib: Some(out.peak_rss_kib), cpu_ms: Some(out.cpu.as_secs_f64() * 1000.0) }
    }
}

/// One measurement of `argv` under `rt` (with `audit`: under husk,
/// keeping an audit log).
fn measure_once(
    w: &Workload,
    rt: &Runtime,
    argv: &[String],
    ctx: &Context,
    bundle: Option<&Path>,
    timeout: Duration,
    audit: Option<&workloads::Audit>,
) -> Result<Measured, String> {
    // An audited run's log, a fresh one per run.
    let audit_log = audit.map(|_| ctx.work.join(format!("audit-{}.log", rt.name)));
    if let Some(log) = &audit_log {
        let _ = std::fs::remove_file(log);
    }
    let cmd = match w.measure {
        Measure::DockerStart => {
            let docker = ctx.docker.as_ref().map_err(Clone::clone)?;
            docker.command(docker.runtime_for(rt)?)
        }
        Measure::Egress { .. } => ctx.egress.as_ref().map_err(Clone::clone)?.command(rt, argv)?,
        _ => match (audit, &audit_log) {
            (Some(a), Some(log)) => rt.husk_command(argv, ctx.oci.as_ref(), bundle, &a.flags(log))?,
            _ => rt.command(argv, ctx.oci.as_ref(), bundle)?,
        },
    };
    match w.measure {
        Measure::PerOp { .. } if audit_log.is_some() => {
            let log = audit_log.as_deref().unwrap_or(Path::new(""));
            let out = runner::run(&cmd, &ctx.work, timeout);
            // The log must have been kept: a run that wrote none measured
            // nothing of it.
            let records = std::fs::read(log).map(|b| b.iter().filter(|&&c| c == b'\n').count()).unwrap_or(0);
            let _ = std::fs::remove_file(log);
            let out = out?;
            if records < 3 {
                return Err(format!("its audit log has {records} record(s)"));
            }
            let last = out.stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            let figure = last.trim().parse::<f64>().map_err(|_| format!("no figure in its output {last:?}"))?;
            Ok(Measured::of(figure, &out))
        }
        Measure::PerOp { .. } | Measure::Egress { .. } => {
            let out = runner::run(&cmd, &ctx.work, timeout)?;
            let last = out.stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            let figure = last.trim().parse::<f64>().map_err(|_| format!("no figure in its output {last:?}"))?;
            Ok(Measured::of(figure, &out))
        }
        // docker's peak RSS is the CLI's, not the container's: not reported.
        Measure::DockerStart => {
            let out = runner::run(&cmd, &ctx.work, timeout)?;
            Ok(Measured { figure: out.wall.as_secs_f64() * 1000.0, peak_rss_kib: None, cpu_ms: None })
        }
        Measure::Wall(_) => {
            let out = runner::run(&cmd, &ctx.work, timeout)?;
            Ok(Measured::of(out.wall.as_secs_f64() * 1000.0, &out))
        }
        Measure::IdlePss => runner::idle_pss(&cmd, &ctx.work, SETTLE).map(|kib| Measured {
            figure: kib as f64,
            peak_rss_kib: None,
            cpu_ms: None,
        }),
    }
}

/// What every run shares.
struct Context {
    work: PathBuf,
    oci: Option<oci::Oci>,
    files: Files,
    /// dockerd and the image of the `docker_start` row, or why that row
    /// cannot run (only asked for when the row is chosen).
    docker: Result<docker::Docker, String>,
    /// The egress row's network and server, or why that row cannot run.
    egress: Result<egress::Egress, String>,
}

impl Context {
    fn bundle(&self, rt: &Runtime, name: &str, argv: &[String]) -> Result<Option<PathBuf>, String> {
        match (&rt.kind, &self.oci) {
            (Kind::Oci { .. }, Some(oci)) => oci.bundle(name, argv, &self.work, &self.files.scratch).map(Some),
            _ => Ok(None),
        }
    }
}

/// Runs a tiny workload under each ready runtime; one that fails (or does
/// not answer in time) is marked failed, with the reason.
fn smoke_test(runtimes: &mut [Runtime], ctx: &Context, ops_built: bool, virtualized: bool) {
    let argv: Vec<String> = if ops_built {
        vec![ctx.files.ops.to_string_lossy().into_owned(), "getppid".into(), "10".into()]
    } else {
        vec!["/bin/true".into()]
    };
    let mut failed_platforms: Vec<(String, String)> = Vec::new();
    for rt in runtimes.iter_mut().filter(|r| r.ready()) {
        if let Some(rest) = rt.name.strip_prefix("runsc-run-") {
            if let Some((_, why)) = failed_platforms.iter().find(|(p, _)| p == rest) {
                rt.status = Status::Failed(format!("not tried: runsc-do-{rest} failed ({why})"));
                continue;
            }
        }
        eprintln!("husk-bench: smoke test of {}", rt.name);
        let before = runsc_do_dirs();
        let result = ctx
            .bundle(rt, "probe", &argv)
            .and_then(|b| rt.command(&argv, ctx.oci.as_ref(), b.as_deref()))
            .and_then(|cmd| runner::run(&cmd, &ctx.work, PROBE_TIMEOUT));
        if let Err(mut why) = result {
            if rt.name.ends_with("-kvm") && why.starts_with("no exit") && virtualized {
                why.push_str(
                    " (this machine is a VM, so its /dev/kvm is nested KVM: runsc's KVM platform does not start)",
                );
            }
            if let Some(p) = rt.name.strip_prefix("runsc-do-") {
                failed_platforms.push((p.to_string(), why.clone()));
                // A runsc do that never started leaves its bundle behind.
                for dir in runsc_do_dirs().difference(&before) {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            rt.status = Status::Failed(why);
        }
    }
}

/// The bundle directories `runsc do` makes (`$TMPDIR/runsc-do*`), ours
/// only (another user's runsc may be at work too).
fn runsc_do_dirs() -> HashSet<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return HashSet::new() };
    let me = euid();
    dir.flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("runsc-do"))
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == me && m.is_dir()))
        .map(|e| e.path())
        .collect()
}

fn main() -> anyhow::Result<()> {
    let opts = parse_args()?;
    runner::become_subreaper();
    let mut machine = machine::Machine::probe();
    let exe_dir = std::env::current_exe()?.parent().context("no directory")?.to_path_buf();
    // Next to the binary, not in /tmp: `husk do` hides the host's /tmp.
    let work = exe_dir.join(format!("husk-bench-work-{}", std::process::id()));
    std::fs::create_dir_all(&work).with_context(|| work.display().to_string())?;
    let (files, built) = workloads::prepare(&work);
    if let Err(why) = &built {
        eprintln!("husk-bench: the per-operation rows cannot run: {why}");
    }
    let root = is_root();
    let wanted = runtimes::Wanted { husk: &opts.husk, runsc: opts.runsc.as_deref(), extra: &opts.extra, root };
    let mut rts = select(runtimes::discover(&wanted), opts.runtimes.as_deref())?;
    let needs_oci = rts.iter().any(|r| r.ready() && matches!(r.kind, Kind::Oci { .. }));
    let oci = if needs_oci {
        match oci::Oci::new(std::env::temp_dir().join(format!("husk-bench-oci-{}", std::process::id()))) {
            Ok(o) => Some(o),
            Err(why) => {
                for r in rts.iter_mut().filter(|r| matches!(r.kind, Kind::Oci { .. })) {
                    r.status = Status::Failed(why.clone());
                }
                None
            }
        }
    } else {
        None
    };
    let all = workloads::all();
    let chosen: Vec<&Workload> = all
        .iter()
        .filter(|w| !opts.quick || w.quick)
        .filter(|w| opts.filter.as_ref().is_none_or(|f| f.split(',').any(|f| w.key.contains(f) || w.title.contains(f))))
        .collect();
    let docker = if chosen.iter().any(|w| matches!(w.measure, Measure::DockerStart)) {
        docker::Docker::new(&work)
    } else {
        Err("not chosen".into())
    };
    let egress = match (chosen.iter().any(|w| matches!(w.measure, Measure::Egress { .. })), &built) {
        (false, _) => Err("not chosen".into()),
        (true, Err(why)) => Err(why.clone()),
        (true, Ok(())) => egress::Egress::new(&files.ops, &work),
    };
    let ctx = Context { work: work.clone(), oci, files, docker, egress };
    smoke_test(&mut rts, &ctx, built.is_ok(), machine.virtualized);

    let mut rows = Vec::new();
    for (n, w) in chosen.iter().enumerate() {
        eprintln!("husk-bench: [{}/{}] {}", n + 1, chosen.len(), w.title);
        let argv = workload_argv(w, &ctx.files, opts.quick);
        let mut cells: Vec<Cell> = rts.iter().map(|_| Cell::default()).collect();
        let needs_ops = matches!(w.measure, Measure::PerOp { .. } | Measure::Egress { .. });
        let absent = w.needs.iter().find(|p| which(p).is_none());
        for (rt, cell) in rts.iter().zip(cells.iter_mut()) {
            if let (true, Err(why)) = (needs_ops && rt.ready(), &built) {
                cell.error = Some(why.clone());
            }
            if let (true, Some(p)) = (rt.ready(), absent) {
                cell.error = Some(format!("unavailable: {p} is not installed (not on PATH)"));
            }
            if let (true, Some(_), false) = (rt.ready(), &w.audit, rt.is_husk()) {
                cell.error = Some("not applicable: the audit log is husk's".into());
            }
            if let (true, Measure::DockerStart) = (rt.ready(), &w.measure) {
                cell.error = ctx.docker.as_ref().map_err(Clone::clone).and_then(|d| d.runtime_for(rt)).err();
            }
            if let (true, Measure::Egress { .. }) = (rt.ready(), &w.measure) {
                cell.error = egress::applies(rt).and(ctx.egress.as_ref().map(drop).map_err(Clone::clone)).err();
            }
        }
        let bundles: Vec<Option<PathBuf>> =
            rts.iter().map(|rt| if rt.ready() { ctx.bundle(rt, w.key, &argv).unwrap_or(None) } else { None }).collect();
        for round in 0..=opts.runs {
            for ((rt, cell), bundle) in rts.iter().zip(cells.iter_mut()).zip(&bundles) {
                if !rt.ready() || cell.error.is_some() {
                    continue;
                }
                // An audited run is paired with one without the log just
                // before it, so a change in the machine's load lands on both.
                let paired = match &w.audit {
                    Some(_) => match measure_once(w, rt, &argv, &ctx, bundle.as_deref(), opts.timeout, None) {
                        Ok(m) => Some(m),
                        Err(why) => {
                            cell.error = Some(format!("without the log: {why}"));
                            continue;
                        }
                    },
                    None => None,
                };
                match measure_once(w, rt, &argv, &ctx, bundle.as_deref(), opts.timeout, w.audit.as_ref()) {
                    Ok(m) if round > 0 => {
                        cell.samples.push(m.figure);
                        cell.peak_rss_kib.extend(m.peak_rss_kib.map(|kib| kib as f64));
                        if let Some(p) = paired {
                            cell.paired.push(p.figure);
                            // Both or neither: the ratios pair them up.
                            if let (Some(a), Some(b)) = (m.cpu_ms, p.cpu_ms) {
                                cell.cpu_ms.push(a);
                                cell.paired_cpu_ms.push(b);
                            }
                        }
                    }
                    Ok(_) => {}
                    Err(why) => cell.error = Some(why),
                }
            }
        }
        rows.push(Row { workload: w, cells });
    }
    machine.finish();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let report = Report { machine, runtimes: rts, rows, runs: opts.runs, quick: opts.quick, command };
    report.print();
    if let Some(path) = &opts.json {
        let text = serde_json::to_string_pretty(&report.to_json())?;
        std::fs::write(path, text + "\n").with_context(|| path.display().to_string())?;
    }
    if let Some(path) = &opts.svg {
        std::fs::write(path, svg::render(&report)).with_context(|| path.display().to_string())?;
    }
    drop(ctx);
    std::fs::remove_dir_all(&work).with_context(|| format!("removing {}", work.display()))?;
    Ok(())
}
