//! The results: per cell (workload × runtime) the samples and their median
//! and spread; ratios to native, to runsc (the anchor: `do` against
//! `runsc do`, `run` against `runsc run`) and to runc; a verdict per row.
//! Lower is better in every unit used (µs/op, ms, KiB).

use crate::machine::Machine;
use crate::runtimes::{Runtime, Status};
use crate::workloads::Workload;

/// Ratios within 5% either way are called level: closer than the spread
/// of most cells on a busy machine.
const LEVEL: f64 = 1.05;

/// One workload under one runtime.
#[derive(Default)]
pub struct Cell {
    pub samples: Vec<f64>,
    /// Per measured run, the peak RSS in KiB (see `runner::Outcome`).
    pub peak_rss_kib: Vec<f64>,
    /// Of a row with an audit log: per measured run, the same workload
    /// without the log, run just before it.
    pub paired: Vec<f64>,
    /// Of a row with an audit log: per measured run, its CPU time and
    /// that of its paired run, in ms (`runner::Outcome::cpu`).
    pub cpu_ms: Vec<f64>,
    pub paired_cpu_ms: Vec<f64>,
    pub error: Option<String>,
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s
}

/// The median over pairs of `runs[k] / paired[k]`.
fn paired_ratio(runs: &[f64], paired: &[f64]) -> Option<f64> {
    let ratios: Vec<f64> = runs.iter().zip(paired).filter(|(_, b)| **b > 0.0).map(|(v, b)| v / b).collect();
    median_of(&ratios)
}

fn median_of(v: &[f64]) -> Option<f64> {
    let s = sorted(v);
    let mid = s.len() / 2;
    match s.len() {
        0 => None,
        n if n % 2 == 1 => s.get(mid).copied(),
        _ => Some((s.get(mid - 1)? + s.get(mid)?) / 2.0),
    }
}

impl Cell {
    fn sorted(&self) -> Vec<f64> {
        sorted(&self.samples)
    }

    pub fn median(&self) -> Option<f64> {
        if self.error.is_some() {
            return None;
        }
        median_of(&self.samples)
    }

    /// The median peak RSS over the measured runs, in KiB.
    pub fn peak_rss(&self) -> Option<f64> {
        if self.error.is_some() {
            return None;
        }
        median_of(&self.peak_rss_kib)
    }

    pub fn min(&self) -> Option<f64> {
        self.sorted().first().copied()
    }

    pub fn max(&self) -> Option<f64> {
        self.sorted().last().copied()
    }
}

/// One workload under every runtime (cells in the order of the runtimes).
pub struct Row<'a> {
    pub workload: &'a Workload,
    pub cells: Vec<Cell>,
}

/// How a husk runtime fares against runsc over the whole run.
pub struct Summary {
    pub runtime: String,
    pub anchor: &'static str,
    /// Geometric mean of husk/runsc over the rows (below 1: husk ahead).
    pub geomean: f64,
    /// The (ratio, row) pairs with the highest ratios.
    pub furthest_behind: Vec<(f64, &'static str)>,
}

pub struct Report<'a> {
    pub machine: Machine,
    pub runtimes: Vec<Runtime>,
    pub rows: Vec<Row<'a>>,
    pub runs: usize,
    pub quick: bool,
    pub command: String,
}

impl Report<'_> {
    fn index(&self, name: &str) -> Option<usize> {
        self.runtimes.iter().position(|r| r.name == name)
    }

    /// The median of `row` under the runtime called `name`.
    pub fn value(&self, row: &Row, name: &str) -> Option<f64> {
        row.cells.get(self.index(name)?)?.median()
    }

    /// `row`'s median under runtime `i` divided by that under `anchor`.
    pub fn ratio(&self, row: &Row, i: usize, anchor: &str) -> Option<f64> {
        let v = row.cells.get(i)?.median()?;
        let a = self.value(row, anchor)?;
        (a > 0.0).then(|| v / a)
    }

    /// Of a row with an audit log: under runtime `i`, the median over the
    /// measured runs of each run's figure divided by that of its paired
    /// run without the log.
    pub fn audit_ratio(&self, row: &Row, i: usize) -> Option<f64> {
        row.workload.audit.as_ref()?;
        let cell = row.cells.get(i)?;
        cell.error.is_none().then_some(())?;
        paired_ratio(&cell.samples, &cell.paired)
    }

    /// The same of the runs' CPU time: what the log costs the machine,
    /// which a busy machine's scheduling changes far less than the wall
    /// time the figure is. It includes the sandbox's start, the same in
    /// both runs, so it understates the cost per operation a little.
    pub fn audit_cpu_ratio(&self, row: &Row, i: usize) -> Option<f64> {
        row.workload.audit.as_ref()?;
        let cell = row.cells.get(i)?;
        cell.error.is_none().then_some(())?;
        paired_ratio(&cell.cpu_ms, &cell.paired_cpu_ms)
    }

    /// "husk-do-ptrace ahead of runsc-do-ptrace by 2.3×", per husk runtime
    /// with a figure and an anchor; of a row with an audit log, what the
    /// log adds per husk runtime.
    pub fn verdict(&self, row: &Row) -> String {
        if row.workload.audit.is_some() {
            let parts: Vec<String> = (0..self.runtimes.len())
                .filter_map(|i| {
                    let wall = extra(self.audit_ratio(row, i)?);
                    let cpu =
                        self.audit_cpu_ratio(row, i).map_or_else(String::new, |r| format!(", CPU time {}", extra(r)));
                    Some(format!("{}: the log adds {wall}{cpu}", self.runtimes[i].name))
                })
                .collect();
            return if parts.is_empty() { "no row without the log to compare".into() } else { parts.join("; ") };
        }
        let parts: Vec<String> = self
            .runtimes
            .iter()
            .enumerate()
            .filter(|(_, rt)| rt.is_husk())
            .filter_map(|(i, rt)| {
                let r = self.ratio(row, i, rt.runsc_anchor)?;
                Some(if (1.0 / LEVEL..=LEVEL).contains(&r) {
                    format!("{} level with {} ({})", rt.name, rt.runsc_anchor, times(r))
                } else if r < 1.0 {
                    format!("{} ahead of {} by {}", rt.name, rt.runsc_anchor, times(1.0 / r))
                } else {
                    format!("{} behind {} by {}", rt.name, rt.runsc_anchor, times(r))
                })
            })
            .collect();
        if parts.is_empty() {
            "no husk/runsc pair to compare".into()
        } else {
            parts.join("; ")
        }
    }

    /// Per husk runtime against its runsc anchor: the geometric mean of
    /// the ratios over the rows that have both, and the three rows where
    /// husk is furthest behind (highest ratio first).
    pub fn summary(&self) -> Vec<Summary> {
        self.runtimes
            .iter()
            .enumerate()
            .filter(|(_, rt)| rt.is_husk())
            .filter_map(|(i, rt)| {
                let mut ratios: Vec<(f64, &'static str)> = self
                    .rows
                    .iter()
                    .filter_map(|row| Some((self.ratio(row, i, rt.runsc_anchor)?, row.workload.key)))
                    .collect();
                if ratios.is_empty() {
                    return None;
                }
                let geomean = (ratios.iter().map(|(r, _)| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
                ratios.sort_by(|a, b| b.0.total_cmp(&a.0));
                ratios.truncate(3);
                Some(Summary { runtime: rt.name.clone(), anchor: rt.runsc_anchor, geomean, furthest_behind: ratios })
            })
            .collect()
    }

    /// The table for people.
    pub fn print(&self) {
        let m = &self.machine;
        println!(
            "husk-bench: {} run(s) per cell after 1 warm-up, runtimes interleaved; median [min–max]{}",
            self.runs,
            if self.quick { " (--quick: a tenth of the iterations, a subset of rows)" } else { "" }
        );
        println!("command: {}", self.command);
        println!("machine: {} ({} cores), kernel {}, {}", m.cpu, m.cores, m.kernel, m.date);
        println!("load average: before {}, after {}", m.load_before, m.load_after);
        println!("runtimes:");
        for rt in &self.runtimes {
            let state = match &rt.status {
                Status::Ready => "ready".to_string(),
                Status::Missing(why) => format!("MISSING: {why}"),
                Status::Failed(why) => format!("FAILED its smoke test: {why}"),
            };
            println!("  {:<18} {:<58} {state}", rt.name, rt.about);
        }
        for row in &self.rows {
            println!();
            println!("{} ({})", row.workload.title, row.workload.unit());
            for (i, (rt, cell)) in self.runtimes.iter().zip(&row.cells).enumerate() {
                let figure = match (&rt.status, cell.median(), &cell.error) {
                    (Status::Missing(_), ..) => "missing".to_string(),
                    (Status::Failed(_), ..) => "failed its smoke test".to_string(),
                    (_, _, Some(e)) if e.starts_with("not applicable") => e.clone(),
                    (_, _, Some(e)) => format!("failed: {e}"),
                    (_, Some(v), None) => format!(
                        "{:>10} [{}–{}]",
                        num(v),
                        cell.min().map_or_else(String::new, num),
                        cell.max().map_or_else(String::new, num)
                    ),
                    (_, None, None) => "no samples".to_string(),
                };
                let mut ratios = String::new();
                for (label, anchor) in [("native", "native"), ("runsc", rt.runsc_anchor), ("runc", "runc")] {
                    if let Some(r) = self.ratio(row, i, anchor) {
                        ratios.push_str(&format!("  {:>7} {label}", times(r)));
                    }
                }
                if let Some(r) = self.audit_ratio(row, i) {
                    ratios.push_str(&format!("  {:>7} without the log ({})", times(r), extra(r)));
                }
                if let Some(r) = self.audit_cpu_ratio(row, i) {
                    ratios.push_str(&format!(", CPU time {}", extra(r)));
                }
                if let Some(kib) = cell.peak_rss() {
                    ratios.push_str(&format!("  peak RSS {} MiB", num(kib / 1024.0)));
                }
                println!("  {:<18} {figure:<32}{ratios}", rt.name);
            }
            println!("  => {}", self.verdict(row));
        }
        println!();
        for s in self.summary() {
            let worst: Vec<String> = s.furthest_behind.iter().map(|(r, k)| format!("{k} {}", times(*r))).collect();
            println!(
                "summary: {} / {}: geometric mean {}; highest ratios (husk furthest behind): {}",
                s.runtime,
                s.anchor,
                times(s.geomean),
                worst.join(", ")
            );
        }
    }

    /// The same for machines.
    pub fn to_json(&self) -> serde_json::Value {
        let runtimes: Vec<_> = self
            .runtimes
            .iter()
            .map(|rt| {
                let (status, detail) = match &rt.status {
                    Status::Ready => ("ready", ""),
                    Status::Missing(w) => ("missing", w.as_str()),
                    Status::Failed(w) => ("failed", w.as_str()),
                };
                serde_json::json!({
                    "name": rt.name, "about": rt.about, "status": status, "detail": detail,
                    "runsc_anchor": rt.runsc_anchor,
                })
            })
            .collect();
        let rows: Vec<_> = self
            .rows
            .iter()
            .map(|row| {
                let cells: serde_json::Map<String, serde_json::Value> = self
                    .runtimes
                    .iter()
                    .zip(&row.cells)
                    .enumerate()
                    .map(|(i, (rt, c))| {
                        let v = serde_json::json!({
                            "median": c.median(), "min": c.min(), "max": c.max(), "samples": c.samples,
                            "error": c.error, "peak_rss_kib": c.peak_rss(),
                            "vs_native": self.ratio(row, i, "native"),
                            "vs_runsc": self.ratio(row, i, rt.runsc_anchor),
                            "vs_runc": self.ratio(row, i, "runc"),
                            "without_audit_log": c.paired, "vs_without_audit_log": self.audit_ratio(row, i),
                            "cpu_ms": c.cpu_ms, "without_audit_log_cpu_ms": c.paired_cpu_ms,
                            "vs_without_audit_log_cpu": self.audit_cpu_ratio(row, i),
                        });
                        (rt.name.clone(), v)
                    })
                    .collect();
                serde_json::json!({
                    "key": row.workload.key, "title": row.workload.title, "unit": row.workload.unit(),
                    "cells": cells, "verdict": self.verdict(row),
                })
            })
            .collect();
        let summary: Vec<_> = self
            .summary()
            .iter()
            .map(|s| {
                let worst: Vec<_> =
                    s.furthest_behind.iter().map(|(r, k)| serde_json::json!({"key": k, "ratio": r})).collect();
                serde_json::json!({
                    "runtime": s.runtime, "anchor": s.anchor, "geomean_ratio": s.geomean, "furthest_behind": worst,
                })
            })
            .collect();
        serde_json::json!({
            "tool": "husk-bench",
            "command": self.command,
            "runs": self.runs,
            "warmup": 1,
            "quick": self.quick,
            "machine": self.machine.to_json(),
            "runtimes": runtimes,
            "workloads": rows,
            "summary": summary,
        })
    }
}

/// A figure with about three significant digits.
pub fn num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// What a ratio adds, in percent: "+7.5 %", "-1.2 %".
pub fn extra(r: f64) -> String {
    format!("{:+.1} %", (r - 1.0) * 100.0)
}

/// A ratio: "2.3×", "41×", "0.18×", "0.003×".
pub fn times(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else if r >= 1.0 {
        format!("{r:.1}×")
    } else if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}
