//! `husk kill`: sends a signal to a container's process, or to all its
//! processes.

use crate::cli::{GlobalArgs, KillArgs};
use crate::oci::control::{self, ControlError};
use crate::oci::state::{Container, StateRoot, Status};
use anyhow::{bail, Context as _};
use husk_sentry::api::boot::control::protocol::Request;
use nix::sys::signal::Signal;
use std::str::FromStr as _;

/// A signal by number (`9`) or name (`KILL`, `SIGKILL`).
pub fn parse_signal(s: &str) -> anyhow::Result<Signal> {
    let sig = match s.parse::<i32>() {
        Ok(n) => Signal::try_from(n).ok(),
        Err(_) => {
            let upper = s.to_ascii_uppercase();
            let name = if upper.starts_with("SIG") { upper } else { format!("SIG{upper}") };
            Signal::from_str(&name).ok()
        }
    };
    sig.with_context(|| format!("unknown signal {s:?}"))
}

pub fn run(g: &GlobalArgs, args: KillArgs) -> anyhow::Result<i32> {
    let sig = parse_signal(args.signal.as_deref().unwrap_or("SIGTERM"))?;
    let c = StateRoot::new(&g.root).open(&args.id)?;
    match c.status() {
        Status::Stopped => bail!("container not running"),
        // A frozen sentry cannot take the request; SIGKILL still works.
        Status::Paused if sig != Signal::SIGKILL => bail!("container is paused: resume it first, or send SIGKILL"),
        _ => {}
    }
    if sig == Signal::SIGKILL {
        // The sandbox ends with its init; killing the sentry is the one
        // way that cannot be delayed by anything inside it.
        return end_sandbox(&c).map(|()| 0);
    }
    let req = Request::Signal { sig: sig as i32, all: args.all };
    let grace = g.kill_grace().max(std::time::Duration::from_millis(1));
    match control::call_within(&c.control_path(), req, Some(grace)) {
        Ok(_) => Ok(0),
        // A sentry that does not take a SIGTERM within the grace period
        // (stopped, wedged) is ended by force: the sandbox was asked to end.
        Err(e @ (ControlError::Io(_) | ControlError::Connect(..)))
            if sig == Signal::SIGTERM && c.record.sentry.alive() =>
        {
            eprintln!("husk: the sandbox did not take SIGTERM within {} s ({e}): killing it", g.kill_grace);
            end_sandbox(&c).map(|()| 0)
        }
        Err(e) => Err(e.into()),
    }
}

/// How long a sentry about to be killed may take to write out its audit
/// log's batch.
const FLUSH_WAIT: std::time::Duration = std::time::Duration::from_millis(250);

/// Asks the sentry of `c`, about to be SIGKILLed, to write out the audit
/// records it holds in a batch (and to hold none from now on), so that the
/// kill loses none. Best effort and bounded: a frozen sentry cannot answer
/// and is not asked; a wedged one is killed all the same.
pub(super) fn flush_before_kill(c: &Container) {
    if !matches!(c.status(), Status::Running | Status::Created) {
        return;
    }
    if let Err(e) = control::call_within(&c.control_path(), Request::Flush, Some(FLUSH_WAIT)) {
        log::warn!("the sandbox did not write out its audit records before the kill: {e}");
    }
}

/// Kills the sentry (its stubs die with it: it is their pid namespace's
/// init) and the gofers, and waits (bounded) until they are gone.
fn end_sandbox(c: &Container) -> anyhow::Result<()> {
    flush_before_kill(c);
    c.record.sentry.signal(Signal::SIGKILL).context("killing the sandbox")?;
    for p in std::iter::once(&c.record.sentry).chain(&c.record.gofers) {
        super::delete::end(p);
    }
    if let Some(log) = &c.record.audit_log {
        crate::audit_cmd::close_killed(log, husk_sentry::api::audit::ExitReason::Killed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_number_and_name() {
        assert_eq!(parse_signal("9").unwrap(), Signal::SIGKILL);
        assert_eq!(parse_signal("TERM").unwrap(), Signal::SIGTERM);
        assert_eq!(parse_signal("sigusr1").unwrap(), Signal::SIGUSR1);
        assert!(parse_signal("0").is_err());
        assert!(parse_signal("99").is_err());
        assert!(parse_signal("NOPE").is_err());
    }
}
