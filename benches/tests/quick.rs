//! CI smoke test of husk-bench: `--quick` completes and writes a JSON
//! report that parses and an SVG chart that is well-formed. No timing is
//! asserted (the machine's load decides those); runtimes that are not
//! installed, or need root, must show up as missing, not break the run.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `--quick` takes under two minutes; anything past this is a hang.
const TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn quick_run_writes_json_and_svg() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("husk-bench-quick-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let (json, svg) = (dir.join("quick.json"), dir.join("quick.svg"));
    // husk itself sits next to husk-bench when the workspace is built; the
    // run must also complete when it does not (husk is then "missing").
    let child = Command::new(env!("CARGO_BIN_EXE_husk-bench"))
        .arg("--quick")
        .arg("--json")
        .arg(&json)
        .arg("--svg")
        .arg(&svg)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("husk-bench starts");
    let pid = i32::try_from(child.id()).expect("pid");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(TIMEOUT) else {
        // SAFETY: kill only sends a signal, to the group husk-bench leads.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
        panic!("husk-bench --quick did not finish within {} s", TIMEOUT.as_secs());
    };
    let out = out.expect("husk-bench output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "husk-bench failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("load average: before"), "the machine's load is in the table:\n{stdout}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written")).expect("JSON parses");
    let runtimes = report["runtimes"].as_array().expect("runtimes listed");
    let names: Vec<&str> = runtimes.iter().filter_map(|r| r["name"].as_str()).collect();
    for expected in ["native", "husk-do-ptrace", "runsc-do-ptrace", "runsc-do-kvm", "runc"] {
        assert!(names.contains(&expected), "{expected} is reported, ready or not: {names:?}");
    }
    for r in runtimes {
        let status = r["status"].as_str().unwrap_or_default();
        assert!(["ready", "missing", "failed"].contains(&status), "status of {r}");
    }
    let rows = report["workloads"].as_array().expect("workloads listed");
    assert!(!rows.is_empty(), "the quick subset has rows");
    for row in rows {
        let native = &row["cells"]["native"];
        // Rows of husk's own features (the audit log) have no native run:
        // their figure is husk's, with the ratio to husk without the feature.
        let husk_only = native["error"].as_str().is_some_and(|e| e.starts_with("not applicable"));
        let cell = if husk_only { &row["cells"]["husk-do-ptrace"] } else { native };
        assert!(cell["median"].as_f64().is_some_and(|v| v > 0.0), "a figure for the row: {row}");
        if husk_only {
            assert!(cell["vs_without_audit_log"].as_f64().is_some_and(|v| v > 0.0), "a ratio: {row}");
        }
    }
    assert!(report["machine"]["load_after"].as_str().is_some_and(|s| !s.is_empty()));

    let chart = std::fs::read_to_string(&svg).expect("SVG written");
    assert!(chart.starts_with("<svg ") && chart.trim_end().ends_with("</svg>"), "an SVG document");
    check_well_formed(&chart);
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// Every element is closed, in order, and text holds no bare `<` or `&`
/// (the only markup husk-bench writes: elements, attributes in double
/// quotes, escaped text).
fn check_well_formed(doc: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find('<') {
        check_text(&rest[..start]);
        let end = rest[start..].find('>').expect("every tag ends") + start;
        let tag = &rest[start + 1..end];
        assert_eq!(tag.matches('"').count() % 2, 0, "quoted attributes in <{tag}>");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name.trim()), "</{name}> closes the element open");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().expect("a tag name"));
        }
        rest = &rest[end + 1..];
    }
    check_text(rest);
    assert!(open.is_empty(), "unclosed elements: {open:?}");
}

fn check_text(text: &str) {
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..];
        assert!(["&amp;", "&lt;", "&gt;", "&quot;"].iter().any(|e| entity.starts_with(e)), "a bare & in text: {text}");
    }
}
