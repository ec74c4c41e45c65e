//! The chart: per workload, one horizontal bar per runtime on a log scale
//! of that workload's own unit (decade-aligned, so bar lengths compare
//! within a workload, not across), one colour per runtime, each bar
//! labelled with its figure and its ratio to native. Written by hand: an
//! SVG of rectangles and text needs no library.

use crate::report::{num, times, Report};
use std::fmt::Write as _;

const COLOURS: &[&str] =
    &["#7f7f7f", "#1f77b4", "#17becf", "#d62728", "#ff7f0e", "#e377c2", "#bcbd22", "#2ca02c", "#9467bd", "#8c564b"];
const WIDTH: f64 = 980.0;
const LABEL: f64 = 190.0;
const BAR_AREA: f64 = 560.0;
const BAR: f64 = 14.0;
const GAP: f64 = 3.0;

fn colour(i: usize) -> &'static str {
    COLOURS.get(i % COLOURS.len()).copied().unwrap_or("#000")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub fn render(report: &Report) -> String {
    let shown: Vec<usize> =
        (0..report.runtimes.len()).filter(|&i| report.runtimes.get(i).is_some_and(|r| r.ready())).collect();
    let mut body = String::new();
    let m = &report.machine;
    let mut y = 24.0;
    let _ = writeln!(
        body,
        r#"<text x="10" y="{y}" font-size="16" font-weight="bold">husk-bench: isolation overhead ({} run(s) per cell, median; lower is better)</text>"#,
        report.runs
    );
    y += 18.0;
    let _ = writeln!(
        body,
        r#"<text x="10" y="{y}" font-size="11">{} · {} cores · kernel {} · {} · load {} → {}</text>"#,
        escape(&m.cpu),
        m.cores,
        escape(&m.kernel),
        escape(&m.date),
        escape(&m.load_before),
        escape(&m.load_after)
    );
    y += 16.0;
    let mut x = 10.0;
    for &i in &shown {
        let name = report.runtimes.get(i).map(|r| r.name.as_str()).unwrap_or_default();
        let _ = writeln!(body, r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/>"#, y - 10.0, colour(i));
        let _ = writeln!(body, r#"<text x="{}" y="{y}" font-size="12">{}</text>"#, x + 16.0, escape(name));
        x += 24.0 + 7.0 * name.len() as f64;
    }
    let missing: Vec<&str> = report.runtimes.iter().filter(|r| !r.ready()).map(|r| r.name.as_str()).collect();
    if !missing.is_empty() {
        y += 16.0;
        let _ = writeln!(
            body,
            r##"<text x="10" y="{y}" font-size="11" fill="#a00">not measured (missing or failed their smoke test): {}</text>"##,
            escape(&missing.join(", "))
        );
    }
    y += 14.0;
    for row in &report.rows {
        let values: Vec<f64> = shown.iter().filter_map(|&i| row.cells.get(i)?.median()).filter(|v| *v > 0.0).collect();
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = if values.is_empty() { (1.0, 10.0) } else { decades(lo, hi) };
        y += 20.0;
        let _ = writeln!(
            body,
            r#"<text x="10" y="{y}" font-size="13" font-weight="bold">{} <tspan font-weight="normal" font-size="11">({}, log scale {}–{})</tspan></text>"#,
            escape(row.workload.title),
            row.workload.unit(),
            num(lo),
            num(hi)
        );
        y += 6.0;
        for &i in &shown {
            let name = report.runtimes.get(i).map(|r| r.name.as_str()).unwrap_or_default();
            let cell = row.cells.get(i);
            let _ = writeln!(
                body,
                r#"<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>"#,
                LABEL - 6.0,
                y + BAR - 3.0,
                escape(name)
            );
            match cell.and_then(|c| c.median()) {
                Some(v) if v > 0.0 => {
                    let len = ((v.ln() - lo.ln()) / (hi.ln() - lo.ln()) * BAR_AREA).max(2.0);
                    let _ = writeln!(
                        body,
                        r#"<rect x="{LABEL}" y="{y}" width="{len:.1}" height="{BAR}" fill="{}"/>"#,
                        colour(i)
                    );
                    let ratio =
                        report.ratio(row, i, "native").map(|r| format!(" ({} native)", times(r))).unwrap_or_default();
                    let _ = writeln!(
                        body,
                        r#"<text x="{:.1}" y="{}" font-size="11">{} {}{}</text>"#,
                        LABEL + len + 4.0,
                        y + BAR - 3.0,
                        num(v),
                        row.workload.unit(),
                        ratio
                    );
                }
                _ => {
                    let why = cell.and_then(|c| c.error.as_deref()).unwrap_or("no figure");
                    let short: String = why.chars().take(80).collect();
                    let _ = writeln!(
                        body,
                        r##"<text x="{LABEL}" y="{}" font-size="11" fill="#a00">failed: {}</text>"##,
                        y + BAR - 3.0,
                        escape(&short)
                    );
                }
            }
            y += BAR + GAP;
        }
    }
    let height = y + 20.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}

/// The powers of ten around `lo` and `hi` (a decade apart at least).
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = 10f64.powf(lo.log10().floor());
    let hi = 10f64.powf(hi.log10().ceil());
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo * 10.0)
    }
}
