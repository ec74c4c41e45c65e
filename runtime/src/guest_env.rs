//! The environment `husk do` gives its guest. Not husk's own: an agent
//! orchestrator's environment holds its API keys, and everything the
//! guest runs could read them. The guest gets a clean, predictable set —
//! `PATH`, `HOME`, `USER`/`LOGNAME`, `HOSTNAME`, the caller's `TERM` and
//! locale — plus what `--env NAME=VALUE` sets and `--env-keep NAME` passes
//! on; `--env-keep '*'` passes the whole environment on, as before.

use anyhow::bail;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The guest's `PATH`: the standard one of Debian's and Docker's images.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// `LANG` when the caller has none: UTF-8 without a country's rules, what
/// a container image's users expect (and what Python assumes anyway).
const DEFAULT_LANG: &str = "C.UTF-8";

/// What the guest's environment is made of.
pub struct Request<'a> {
    /// The caller's environment.
    pub caller: &'a [(OsString, OsString)],
    /// The root filesystem's /etc/passwd, if readable.
    pub passwd: Option<&'a str>,
    /// The guest's user.
    pub uid: u32,
    pub hostname: &'a str,
    /// `--env-keep` names (`*`: all).
    pub keep: &'a [String],
    /// `--env NAME=VALUE` entries.
    pub set: &'a [String],
}

/// The guest's environment (`NAME=VALUE` entries) and how it was made, in
/// words for the audit log (names only, never values).
pub struct GuestEnv {
    pub entries: Vec<Vec<u8>>,
    pub summary: String,
}

/// Builds the guest's environment; a malformed `--env` or `--env-keep` is
/// an error.
pub fn build(r: &Request<'_>) -> anyhow::Result<GuestEnv> {
    let mut env = Env::default();
    let inherit = r.keep.iter().any(|k| k == "*");
    if inherit {
        for (k, v) in r.caller {
            env.set(k.as_bytes(), v.as_bytes());
        }
    } else {
        let user = r.passwd.and_then(|p| passwd_entry(p, r.uid));
        let home = match (&user, r.uid) {
            (Some((_, home)), _) if !home.is_empty() => home.clone(),
            (_, 0) => "/root".into(),
            _ => "/".into(),
        };
        env.set(b"PATH", DEFAULT_PATH.as_bytes());
        env.set(b"HOME", home.as_bytes());
        let name = user.map(|(n, _)| n).or_else(|| (r.uid == 0).then(|| "root".to_string()));
        if let Some(name) = name {
            env.set(b"USER", name.as_bytes());
            env.set(b"LOGNAME", name.as_bytes());
        }
        env.set(b"HOSTNAME", r.hostname.as_bytes());
        env.set(b"LANG", DEFAULT_LANG.as_bytes());
        for (k, v) in r.caller {
            if is_copied(k.as_bytes()) {
                env.set(k.as_bytes(), v.as_bytes());
            }
        }
    }
    for name in r.keep.iter().filter(|k| *k != "*") {
        if !valid_name(name.as_bytes()) {
            bail!("--env-keep {name:?}: not a variable name");
        }
        if let Some((k, v)) = r.caller.iter().find(|(k, _)| k.as_bytes() == name.as_bytes()) {
            env.set(k.as_bytes(), v.as_bytes());
        }
    }
    let mut set_names = Vec::new();
    for e in r.set {
        let Some((k, v)) = e.split_once('=').filter(|(k, _)| valid_name(k.as_bytes())) else {
            bail!("--env {e:?}: want NAME=VALUE");
        };
        env.set(k.as_bytes(), v.as_bytes());
        set_names.push(k);
    }
    let kept: Vec<&str> = r.keep.iter().filter(|k| *k != "*").map(String::as_str).collect();
    let mut summary = if inherit { "inherited (--env-keep '*')".to_string() } else { "clean".to_string() };
    if !kept.is_empty() {
        summary.push_str(&format!("; kept {}", kept.join(",")));
    }
    if !set_names.is_empty() {
        summary.push_str(&format!("; set {}", set_names.join(",")));
    }
    Ok(GuestEnv { entries: env.0.into_iter().map(|(k, v)| [k, b"=".to_vec(), v].concat()).collect(), summary })
}

/// Variables copied from the caller by default: the terminal's type and
/// the locale, which say how to talk to the user, not secrets.
fn is_copied(name: &[u8]) -> bool {
    matches!(name, b"TERM" | b"LANG" | b"LANGUAGE") || name.starts_with(b"LC_")
}

/// A shell variable name: letters, digits and `_`, not starting with a
/// digit.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && !name[0].is_ascii_digit() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The name and home directory of `uid` in a passwd file's text.
fn passwd_entry(passwd: &str, uid: u32) -> Option<(String, String)> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 7 && f[2].parse() == Ok(uid)).then(|| (f[0].to_string(), f[5].to_string()))
    })
}

/// The root filesystem's /etc/passwd, if it can be read.
pub fn read_passwd(rootfs: &Path) -> Option<String> {
    std::fs::read_to_string(rootfs.join("etc/passwd")).ok()
}

/// Our own environment, as bytes.
pub fn caller_env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

/// Entries in order, each name once (a later value replaces the earlier).
#[derive(Default)]
struct Env(Vec<(Vec<u8>, Vec<u8>)>);

impl Env {
    fn set(&mut self, name: &[u8], value: &[u8]) {
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some(e) => e.1 = value.to_vec(),
            None => self.0.push((name.to_vec(), value.to_vec())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> Vec<(OsString, OsString)> {
        [("PATH", "/opt/x/bin:/usr/bin"), ("API_KEY", "s3cret"), ("TERM", "xterm"), ("LC_ALL", "C"), ("HOME", "/h")]
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn lines(entries: &[Vec<u8>]) -> Vec<String> {
        entries.iter().map(|e| String::from_utf8(e.clone()).unwrap()).collect()
    }

    const PASSWD: &str = "root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000:Me,,,:/home/me:/bin/sh\n";

    fn env(uid: u32, keep: &[&str], set: &[&str]) -> anyhow::Result<GuestEnv> {
        let c = caller();
        let keep: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
        let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        build(&Request { caller: &c, passwd: Some(PASSWD), uid, hostname: "box", keep: &keep, set: &set })
    }

    #[test]
    fn a_clean_environment_by_default() {
        let e = env(1000, &[], &[]).unwrap();
        assert_eq!(
            lines(&e.entries),
            [
                format!("PATH={DEFAULT_PATH}").as_str(),
                "HOME=/home/me",
                "USER=me",
                "LOGNAME=me",
                "HOSTNAME=box",
                "LANG=C.UTF-8",
                "TERM=xterm",
                "LC_ALL=C"
            ]
        );
        assert_eq!(e.summary, "clean");
        let root = env(0, &[], &[]).unwrap();
        assert!(lines(&root.entries).contains(&"HOME=/root".to_string()));
        let c = caller();
        let nobody = build(&Request { caller: &c, passwd: None, uid: 77, hostname: "h", keep: &[], set: &[] }).unwrap();
        let l = lines(&nobody.entries);
        assert!(l.contains(&"HOME=/".to_string()) && !l.iter().any(|e| e.starts_with("USER=")), "{l:?}");
    }

    #[test]
    fn keep_and_set_add_to_it() {
        let e = env(0, &["API_KEY", "NOT_SET"], &["A=B", "PATH=/bin", "X=y=z"]).unwrap();
        let l = lines(&e.entries);
        assert!(l.contains(&"API_KEY=s3cret".to_string()));
        assert!(l.contains(&"PATH=/bin".to_string()) && l.contains(&"A=B".to_string()));
        assert!(l.contains(&"X=y=z".to_string()));
        assert!(!l.iter().any(|e| e.starts_with("NOT_SET")));
        assert_eq!(e.summary, "clean; kept API_KEY,NOT_SET; set A,PATH,X");
    }

    #[test]
    fn a_star_keeps_everything() {
        let e = env(0, &["*"], &["A=B"]).unwrap();
        let l = lines(&e.entries);
        assert_eq!(&l[..5], ["PATH=/opt/x/bin:/usr/bin", "API_KEY=s3cret", "TERM=xterm", "LC_ALL=C", "HOME=/h"]);
        assert_eq!(l[5], "A=B");
        assert_eq!(e.summary, "inherited (--env-keep '*'); set A");
    }

    #[test]
    fn malformed_flags_are_refused() {
        assert!(env(0, &[], &["NOVALUE"]).is_err());
        assert!(env(0, &[], &["=x"]).is_err());
        assert!(env(0, &[], &["1A=x"]).is_err());
        assert!(env(0, &["A-B"], &[]).is_err());
    }
}
