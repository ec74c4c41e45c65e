//! The multiprocess stress harness (`tests/stress/`) at CI size: Python's
//! multiprocessing (fork, spawn, forkserver), managers, process and thread
//! pools, barriers, Pool.terminate, subprocess pipelines and sigwait in a
//! thread, run in a loop next to two busy-looping processes, each run
//! bounded in time. Any run that hangs or fails fails the test, with the
//! /proc state of every guest process the driver dumped at the hang.
//! `tests/stress/stress.py --soak MINUTES` is the long manual run.

use crate::util::{husk_do, native, run};
use std::path::{Path, PathBuf};

fn stress_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/stress")
}

fn driver(args: &[&str]) -> Vec<String> {
    let script = stress_dir().join("driver.py");
    let mut argv = vec!["/usr/bin/python3".to_string(), script.to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|a| (*a).to_string()));
    argv
}

#[test]
fn multiprocess_stress_runs_clean() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: no /usr/bin/python3 on this host");
        return;
    }
    // Every workload once natively, without hogs: the workloads are right.
    let nat = run(native(&driver(&["--iterations", "9", "--hogs", "0", "--timeout", "20"])), None);
    assert_eq!(nat.code, 0, "the stress workloads FAIL NATIVELY\n{}", nat.describe());
    // Under husk: as many runs as fit in 25 s (each at most 20 s), so the
    // whole stays under the 60 s bound of every e2e command.
    let sbx = run(husk_do(&[], &driver(&["--minutes", "0.42", "--timeout", "20", "--hogs", "2"])), None);
    assert_eq!(sbx.code, 0, "a stress run hung or failed under husk\n{}", sbx.describe());
    let out = sbx.stdout_str();
    let summary = out.lines().find(|l| l.starts_with("SUMMARY ")).unwrap_or_else(|| panic!("no summary\n{out}"));
    assert!(!summary.contains("\"iterations\": 0,"), "{summary}");
}
