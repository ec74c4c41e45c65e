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
            "capabilities": husk_sentry::api::auth::caps::all_names(),
            "cgroup": { "v1": true, "v2": true, "systemd": false, "systemdUser": false },
            // Compiled by the runtime, run by the sentry on guest calls.
            "seccomp": {
                "enabled": true,
                "actions": ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
                            "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP"],
                "operators": ["SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
                              "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE"],
                "archs": ["SCMP_ARCH_X86_64"],
                "knownFlags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC"],
                "supportedFlags": ["SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC"],
            },
            "apparmor": { "enabled": false },
            "selinux": { "enabled": false },
        },
        "annotations": { "dev.husk.version": env!("CARGO_PKG_VERSION") },
    });
    println!("{}", serde_json::to_string_pretty(&features)?);
    Ok(0)
}
