//! The secrets the runtime hands the sentry: on an inherited descriptor
//! (a memfd the sentry reads and closes at once), never on its command
//! line or in its environment, where the host's `ps` and
//! /proc/PID/{cmdline,environ} would show them. Each becomes a file of
//! /run/secrets (and, asked for, a variable of the environment of each
//! process started from outside: the first and those `husk exec` adds),
//! and its value is redacted from everything leaving the sandbox.
//!
//! The descriptor holds one record per secret: the name's length (u32,
//! little-endian) and bytes, the time to live in milliseconds (u64,
//! `u64::MAX` for none), 1 when it also goes in the environment else 0,
//! the value's length (u32) and bytes.

use crate::audit::redact::{Redactor, Secret as Redacted};
use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// One secret as the runtime passes it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretSpec {
    pub name: String,
    pub value: Vec<u8>,
    pub ttl: Option<Duration>,
    /// Also NAME=VALUE in the environment of the processes started from
    /// outside the guest.
    pub env: bool,
}

/// The secrets `--secret-env` names, for the environment of every process
/// started from outside the guest: the first, and each `husk exec` adds,
/// as Docker gives an exec'd process the container's environment. A
/// secret whose time to live has passed is left out, as its file is gone.
/// A kernel extension, filled at boot.
#[derive(Default)]
pub(crate) struct SecretEnv(Mutex<Vec<EnvSecret>>);

/// A secret of [`SecretEnv`]: its variable's name and value, and when it
/// stops being given.
struct EnvSecret {
    name: String,
    value: Vec<u8>,
    expires: Option<Instant>,
}

impl SecretEnv {
    /// Adds `name`'s `value`, set in environments until `expires`.
    pub(crate) fn add(&self, name: &str, value: &[u8], expires: Option<Instant>) {
        self.0.lock().push(EnvSecret { name: name.into(), value: value.to_vec(), expires });
    }

    /// Sets each live secret's variable in `env`, in place of a variable
    /// of the same name the process's spec gives (the runtime's secret
    /// wins, for the first process as for an exec'd one).
    pub(crate) fn apply(&self, env: &mut Vec<Vec<u8>>) {
        let now = Instant::now();
        for s in self.0.lock().iter() {
            let prefix = [s.name.as_bytes(), b"="].concat();
            env.retain(|e| !e.starts_with(&prefix));
            if s.expires.is_none_or(|e| now < e) {
                env.push([&prefix[..], &s.value].concat());
            }
        }
    }
}

impl std::fmt::Debug for SecretSpec {
    /// Everything but the value.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretSpec").field("name", &self.name).field("ttl", &self.ttl).field("env", &self.env).finish()
    }
}

/// Whether `name` may name a secret: a file name of letters, digits,
/// `_`, `.` and `-`, not `.` or `..`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Checks a set of secrets: valid, distinct names and values long enough
/// to redact.
pub fn check(secrets: &[SecretSpec]) -> Result<(), String> {
    for (i, s) in secrets.iter().enumerate() {
        if !valid_name(&s.name) {
            return Err(format!("secret name {:?}: use letters, digits, '_', '.' and '-'", s.name));
        }
        if secrets[..i].iter().any(|o| o.name == s.name) {
            return Err(format!("secret {} given twice", s.name));
        }
    }
    Redactor::new(&redacted(secrets)).map(drop)
}

/// The secrets as the redactor knows them.
pub fn redacted(secrets: &[SecretSpec]) -> Vec<Redacted> {
    secrets.iter().map(|s| Redacted { name: s.name.clone(), value: s.value.clone() }).collect()
}

/// Keeps the sentry's memory, which holds the values, out of core dumps
/// and from other host processes of its user (ptrace, /proc/PID/mem):
/// the process is made non-dumpable, and so are the stubs it forks, which
/// hold guest memory (the sentry keeps `CAP_SYS_PTRACE` to seize their
/// threads: `confine::Keep::Ptrace`).
pub(crate) fn protect_memory() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments changes only a process flag.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The descriptor's contents for `secrets`.
pub fn encode(secrets: &[SecretSpec]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in secrets {
        put_bytes(&mut out, s.name.as_bytes());
        let ttl = s.ttl.map_or(u64::MAX, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX - 1));
        out.extend_from_slice(&ttl.to_le_bytes());
        out.push(u8::from(s.env));
        put_bytes(&mut out, &s.value);
    }
    out
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&u32::try_from(b.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(b);
}

/// The secrets in a descriptor's contents.
pub fn decode(mut data: &[u8]) -> Result<Vec<SecretSpec>, String> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let name = String::from_utf8(take_bytes(&mut data)?.to_vec()).map_err(|_| "a secret name is not UTF-8")?;
        let ttl = u64::from_le_bytes(take(&mut data, 8)?.try_into().map_err(|_| "truncated")?);
        let env = take(&mut data, 1)? == [1];
        let value = take_bytes(&mut data)?.to_vec();
        let ttl = (ttl != u64::MAX).then(|| Duration::from_millis(ttl));
        out.push(SecretSpec { name, value, ttl, env });
    }
    check(&out)?;
    Ok(out)
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if data.len() < n {
        return Err("the secrets descriptor is truncated".into());
    }
    let (head, rest) = data.split_at(n);
    *data = rest;
    Ok(head)
}

fn take_bytes<'a>(data: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = u32::from_le_bytes(take(data, 4)?.try_into().map_err(|_| "truncated")?);
    take(data, usize::try_from(len).map_err(|_| "too long")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, value: &[u8]) -> SecretSpec {
        SecretSpec { name: name.into(), value: value.to_vec(), ttl: None, env: false }
    }

    #[test]
    fn secrets_survive_the_descriptor() {
        let mut a = spec("API_KEY", b"0123456789\0\xff binary");
        a.ttl = Some(Duration::from_millis(2500));
        let mut b = spec("db.pass-2", b"hunter2hunter2");
        b.env = true;
        let both = vec![a, b];
        assert_eq!(decode(&encode(&both)).unwrap(), both);
        assert!(decode(&encode(&both)[..10]).is_err());
    }

    #[test]
    fn names_must_be_plain_file_names() {
        for bad in ["", ".", "..", "a/b", "a b", "x=y", "ü"] {
            assert!(check(&[spec(bad, b"long enough value")]).is_err(), "{bad:?}");
        }
        assert!(check(&[spec("Ok_1.2-3", b"long enough value")]).is_ok());
        let twice = [spec("A", b"long enough value"), spec("A", b"another long value")];
        assert!(check(&twice).unwrap_err().contains("twice"));
        assert!(check(&[spec("PIN", b"1234")]).unwrap_err().contains("shorter than 8"));
    }

    #[test]
    fn secret_env_replaces_a_given_variable_while_the_secret_lives() {
        let env = SecretEnv::default();
        let past = Instant::now().checked_sub(Duration::from_secs(1));
        env.add("TOKEN", b"live-value", None);
        env.add("OLD", b"expired-value", past);
        let mut vars = vec![b"PATH=/bin".to_vec(), b"TOKEN=spec".to_vec(), b"OLD=spec".to_vec()];
        env.apply(&mut vars);
        assert_eq!(vars, [b"PATH=/bin".to_vec(), b"TOKEN=live-value".to_vec()]);
    }

    #[test]
    fn debug_output_hides_the_value() {
        let shown = format!("{:?}", spec("API_KEY", b"topsecretvalue"));
        assert!(shown.contains("API_KEY") && !shown.contains("topsecret"), "{shown}");
    }
}
