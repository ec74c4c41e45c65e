//! Diagnostics: warnings and errors to stderr, everything (with --debug)
//! to --debug-log, and --strace lines to the debug log or stderr.

use crate::cli::GlobalArgs;
use anyhow::Context as _;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

struct Logger {
    file: Option<Mutex<File>>,
    level: log::LevelFilter,
    strace: bool,
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        (m.target() == "strace" && self.strace) || m.level() <= self.level
    }

    fn log(&self, r: &log::Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format!("{} {:<5} {}: {}\n", timestamp(), r.level(), r.target(), r.args());
        match &self.file {
            Some(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(line.as_bytes());
                }
            }
            None => {
                if r.target() == "strace" || r.level() <= log::Level::Warn {
                    let _ = std::io::stderr().write_all(line.as_bytes());
                }
            }
        }
    }

    fn flush(&self) {
        if let Some(f) = &self.file {
            if let Ok(mut f) = f.lock() {
                let _ = f.flush();
            }
        }
    }
}

fn timestamp() -> String {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:06}", d.as_secs(), d.subsec_micros())
}

/// Installs the logger for this process.
pub fn init(g: &GlobalArgs) -> anyhow::Result<()> {
    let file = match &g.debug_log {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("{}", p.display()))?,
        )),
        None => None,
    };
    let level = if g.debug {
        log::LevelFilter::Debug
    } else if file.is_some() {
        log::LevelFilter::Info
    } else {
        log::LevelFilter::Warn
    };
    let max = if g.strace { log::LevelFilter::Info.max(level) } else { level };
    log::set_boxed_logger(Box::new(Logger { file, level, strace: g.strace }))
        .map(|()| log::set_max_level(max))
        .context("logger already set")
}
