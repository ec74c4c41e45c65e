//! The OCI lifecycle commands (runc's contract): create, start, state,
//! kill, delete, run, exec, list, ps, pause, resume, update, events,
//! spec, features, and runsc's wait.

pub mod create;
pub mod delete;
pub mod events;
pub mod exec;
pub mod features;
pub mod kill;
pub mod list;
pub mod pause;
pub mod ps;
pub mod run;
pub mod spec;
pub mod start;
pub mod state;
pub mod update;
pub mod wait;

use crate::oci::bundle::Bundle;
use crate::oci::hooks;
use crate::oci::state::Container;

/// Which hooks of the spec run at a point of the lifecycle.
#[derive(Clone, Copy, Debug)]
pub enum HookStage {
    /// After the sandbox exists, before `create` returns: createRuntime,
    /// prestart (deprecated, same moment), createContainer.
    Created,
    Poststart,
    Poststop,
}

/// Runs the bundle's hooks for `stage` with the container's state on
/// stdin.
pub fn run_hooks(c: &Container, bundle: &Bundle, stage: HookStage) -> Result<(), hooks::HookError> {
    let Some(h) = bundle.spec.hooks() else { return Ok(()) };
    let state = serde_json::to_vec(&c.oci_state()).unwrap_or_default();
    match stage {
        HookStage::Created => {
            hooks::run("createRuntime", h.create_runtime().as_ref(), &state)?;
            hooks::run("prestart", h.prestart().as_ref(), &state)?;
            hooks::run("createContainer", h.create_container().as_ref(), &state)
        }
        HookStage::Poststart => hooks::run("poststart", h.poststart().as_ref(), &state),
        HookStage::Poststop => hooks::run("poststop", h.poststop().as_ref(), &state),
    }
}
