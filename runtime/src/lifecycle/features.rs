//! `husk features`: what this runtime honors of the OCI spec, in runc's
//! features JSON (runtime-spec features.md).

use crate::cli::GlobalArgs;
use crate::oci::state::OCI_VERSION;

pub fn run(_: &GlobalArgs) -> anyhow::Result<i32> {
    let features = serde_json::json!({
        "ociVersionMin": "1.0.0",
        "ociVersionMax": OCI_VERSION,
        // startContainer hooks would have to run inside the sandbox.
        "hooks": ["prestart", "createRuntime", "createContainer", "poststart", "poststop"],
        "mountOptions": ["bind", "rbind", "ro", "rw"],
        "linux": {
            // The sentry is the sandbox's kernel: every namespace is its own.
            "namespaces": ["mount", "pid", "ipc", "uts", "network"],
            // Emulated by the sentry, every one of them.
            "capabilities": husk_sentry::auth::caps::all_names(),
            "cgroup": { "v1": true, "v2": true, "systemd": false, "systemdUser": false },
            // Guest system calls never reach the host: there is nothing for
            // a spec's seccomp filter to filter.
            "seccomp": { "enabled": false },
            "apparmor": { "enabled": false },
            "selinux": { "enabled": false },
        },
        "annotations": { "dev.husk.version": env!("CARGO_PKG_VERSION") },
    });
    println!("{}", serde_json::to_string_pretty(&features)?);
    Ok(0)
}
