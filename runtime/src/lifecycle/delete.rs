//! `husk delete`: removes a container — after killing it with --force —
//! and everything it left: processes, state, the control socket. Its
//! audit log, when it is a file, outlives it and ends with
//! `sandbox.delete`, appended once the sentry is gone (`husk run`
//! appends it the same way when it removes its container).

use super::{run_hooks, HookStage};
use crate::cli::{DeleteArgs, GlobalArgs};
use crate::oci::bundle::Bundle;
use crate::oci::state::{Container, HostProcess, StateError, StateRoot, Status};
use anyhow::bail;
use nix::sys::signal::Signal;
use std::time::{Duration, Instant};

/// How long a killed sandbox may take to disappear.
const KILL_WAIT: Duration = Duration::from_secs(10);

pub fn run(g: &GlobalArgs, args: DeleteArgs) -> anyhow::Result<i32> {
    let c = match StateRoot::new(&g.root).open(&args.id) {
        Err(StateError::NotFound(_)) if args.force => return Ok(0),
        r => r?,
    };
    match c.status() {
        Status::Stopped | Status::Created => {}
        s if args.force => {
            log::debug!("deleting a {s} container");
            super::kill::flush_before_kill(&c);
        }
        s => bail!("cannot delete container {} that is not stopped: {s}", args.id),
    }
    let log = c.record.audit_log.clone();
    delete(c);
    if let Some(log) = log {
        crate::audit_cmd::record_delete(&log, args.force);
    }
    Ok(0)
}

/// Kills what is left of the sandbox, runs the poststop hooks and removes
/// the container's state.
pub fn delete(c: Container) {
    let cgroup = c.cgroup();
    // A frozen process cannot die; thaw first.
    if let Some(cg) = cgroup.as_ref().filter(|cg| cg.frozen()) {
        if let Err(e) = cg.freeze(false) {
            log::warn!("{e}");
        }
    }
    if end(&c.record.sentry) {
        if let Some(log) = &c.record.audit_log {
            crate::audit_cmd::close_killed(log, husk_sentry::api::audit::ExitReason::Killed);
        }
    }
    for gofer in &c.record.gofers {
        end(gofer);
    }
    if let Some(cg) = &cgroup {
        cg.destroy();
    }
    match Bundle::load(&c.record.bundle) {
        Ok(bundle) => {
            if let Err(e) = run_hooks(&c, &bundle, HookStage::Poststop) {
                log::warn!("{e}");
            }
        }
        Err(e) => log::warn!("poststop hooks not run: {e}"),
    }
    if let Err(e) = c.remove() {
        log::warn!("{e}");
    }
}

/// SIGKILLs `p` if it still runs and waits (bounded) until it is gone;
/// whether it was running.
pub(super) fn end(p: &HostProcess) -> bool {
    if p.signal(Signal::SIGKILL).is_err() {
        return false;
    }
    let deadline = Instant::now() + KILL_WAIT;
    while p.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    if p.alive() {
        log::warn!("process {} survived SIGKILL for {} s", p.pid, KILL_WAIT.as_secs());
    }
    true
}
