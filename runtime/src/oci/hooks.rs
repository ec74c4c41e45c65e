//! OCI hooks: host programs run at points of the lifecycle with the
//! container's state JSON on stdin.

use oci_spec::runtime::Hook;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{stage} hook {path}: {err}")]
    Start { stage: &'static str, path: String, err: std::io::Error },
    #[error("{stage} hook {path} failed: {status}")]
    Failed { stage: &'static str, path: String, status: std::process::ExitStatus },
    #[error("{stage} hook {path} timed out after {secs} s")]
    Timeout { stage: &'static str, path: String, secs: u64 },
}

/// How often a hook with a timeout is checked on.
const POLL: Duration = Duration::from_millis(10);

/// Runs `hooks` in order; the first failure ends the run.
pub fn run(stage: &'static str, hooks: Option<&Vec<Hook>>, state_json: &[u8]) -> Result<(), HookError> {
    for hook in hooks.into_iter().flatten() {
        run_one(stage, hook, state_json)?;
    }
    Ok(())
}

fn run_one(stage: &'static str, hook: &Hook, state_json: &[u8]) -> Result<(), HookError> {
    let path = hook.path().display().to_string();
    log::debug!("running {stage} hook {path}");
    let mut cmd = Command::new(hook.path());
    if let Some(args) = hook.args() {
        use std::os::unix::process::CommandExt;
        if let Some((argv0, rest)) = args.split_first() {
            cmd.arg0(argv0).args(rest);
        }
    }
    cmd.env_clear();
    for kv in hook.env().iter().flatten() {
        if let Some((k, v)) = kv.split_once('=') {
            cmd.env(k, v);
        }
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::null());
    let mut child = cmd.spawn().map_err(|err| HookError::Start { stage, path: path.clone(), err })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its stdin is no error.
        let _ = stdin.write_all(state_json);
    }
    let deadline = hook.timeout().and_then(|t| u64::try_from(t).ok()).filter(|&t| t > 0);
    let status = match deadline {
        None => child.wait(),
        Some(secs) => {
            let end = Instant::now() + Duration::from_secs(secs);
            loop {
                if let Some(s) = child.try_wait().map_err(|err| HookError::Start { stage, path: path.clone(), err })? {
                    break Ok(s);
                }
                if Instant::now() >= end {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(HookError::Timeout { stage, path, secs });
                }
                std::thread::sleep(POLL);
            }
        }
    }
    .map_err(|err| HookError::Start { stage, path: path.clone(), err })?;
    if status.success() {
        Ok(())
    } else {
        Err(HookError::Failed { stage, path, status })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(json: &str) -> Hook {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn hooks_get_the_state_and_their_status_counts() {
        let dir = std::env::temp_dir().join(format!("husk-hook-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("state");
        let h = hook(&format!(
            r#"{{"path":"/bin/sh","args":["sh","-c","cat > {}; test \"$X\" = 1"],"env":["X=1"]}}"#,
            out.display()
        ));
        run("prestart", Some(&vec![h]), b"{\"id\":\"c\"}").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"{\"id\":\"c\"}");
        let bad = hook(r#"{"path":"/bin/sh","args":["sh","-c","exit 3"]}"#);
        assert!(matches!(run("poststop", Some(&vec![bad]), b""), Err(HookError::Failed { .. })));
        let slow = hook(r#"{"path":"/bin/sh","args":["sh","-c","sleep 5"],"timeout":1}"#);
        assert!(matches!(run("poststart", Some(&vec![slow]), b""), Err(HookError::Timeout { .. })));
        let missing = hook(r#"{"path":"/nonexistent/hook"}"#);
        assert!(matches!(run("prestart", Some(&vec![missing]), b""), Err(HookError::Start { .. })));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
