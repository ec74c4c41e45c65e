//! Diagnostics: warnings and errors to stderr, everything (with --debug)
//! to --debug-log, and --strace lines to the debug log or stderr; every
//! line with the secret values redacted (`--secret`).

use crate::cli::{GlobalArgs, LogFormat};
use anyhow::Context as _;
use husk_sentry::api::audit::redact::redact_text;
use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

/// The target of the error that ends a command: logged to files only, as
/// `main` prints it to stderr itself.
pub const EXIT_TARGET: &str = "husk::exit";

struct Logger {
    file: Option<Mutex<File>>,
    level: log::LevelFilter,
    strace: bool,
    /// Warnings may go to stderr (not in the sentry and the gofer, whose
    /// stderr is the guest's).
    stderr_diagnostics: bool,
    /// runc's --log: warnings and errors (everything with --debug), as
    /// text or JSON lines.
    log: Option<(Mutex<File>, LogFormat, log::LevelFilter)>,
}

impl log::Log for Logger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        (m.target() == "strace" && self.strace) || m.level() <= self.level
    }

    fn log(&self, r: &log::Record<'_>) {
        if let Some((f, format, level)) = &self.log {
            if r.level() <= *level && r.target() != "strace" {
                let line = match format {
                    LogFormat::Json => format!(
                        "{}\n",
                        serde_json::json!({
                            "level": r.level().as_str().to_ascii_lowercase(),
                            "msg": r.args().to_string(),
                            "time": crate::oci::state::rfc3339_now(),
                        })
                    ),
                    LogFormat::Text => format!("{} {:<5} {}\n", timestamp(), r.level(), r.args()),
                };
                let line = redact_text(&line);
                let _ = f.lock().map(|mut f| f.write_all(line.as_bytes()));
            }
        }
        if !self.enabled(r.metadata()) {
            return;
        }
        let line = format!("{} {:<5} {}: {}\n", timestamp(), r.level(), r.target(), r.args());
        let line = redact_text(&line);
        match &self.file {
            Some(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = f.write_all(line.as_bytes());
                }
            }
            None => {
                // With --log, stderr is often the container's own (a shim's
                // pipe): diagnostics go to the log only.
                let diagnostic = self.stderr_diagnostics
                    && r.level() <= log::Level::Warn
                    && r.target() != EXIT_TARGET
                    && self.log.is_none();
                if r.target() == "strace" || diagnostic {
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

/// Installs the logger for this process. In a process of the sandbox
/// itself (`sandbox_side`: the sentry, the gofer) stderr belongs to the
/// guest, so diagnostics go only to --debug-log or --log.
pub fn init(g: &GlobalArgs, sandbox_side: bool) -> anyhow::Result<()> {
    let open = |p: &std::path::Path| -> anyhow::Result<Mutex<File>> {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(p);
        Ok(Mutex::new(f.with_context(|| format!("{}", p.display()))?))
    };
    let file = g.debug_log.as_deref().map(open).transpose()?;
    let log_level = if g.debug { log::LevelFilter::Debug } else { log::LevelFilter::Warn };
    let log = match g.log.as_deref() {
        Some(p) => Some((open(p)?, g.log_format, log_level)),
        None => None,
    };
    let level = if g.debug {
        log::LevelFilter::Debug
    } else if file.is_some() {
        log::LevelFilter::Info
    } else {
        log::LevelFilter::Warn
    };
    let max = if g.strace { log::LevelFilter::Info.max(level) } else { level }.max(log_level);
    log::set_boxed_logger(Box::new(Logger { file, level, strace: g.strace, stderr_diagnostics: !sandbox_side, log }))
        .map(|()| log::set_max_level(max))
        .context("logger already set")
}
