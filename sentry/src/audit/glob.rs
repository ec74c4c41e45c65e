//! The globs of `--audit-watch`: `**` matches any run of characters,
//! slashes included; `*` and `?` any run, and any one character, within a
//! path component; everything else itself.

/// Whether `path` matches `pattern`.
pub fn matches(pattern: &[u8], path: &[u8]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((b'*', rest)) if rest.first() == Some(&b'*') => {
            let rest = &rest[1..];
            (0..=path.len()).any(|i| matches(rest, &path[i..]))
        }
        Some((b'*', rest)) => {
            let end = path.iter().position(|&c| c == b'/').unwrap_or(path.len());
            (0..=end).any(|i| matches(rest, &path[i..]))
        }
        Some((b'?', rest)) => path.first().is_some_and(|&c| c != b'/') && matches(rest, &path[1..]),
        Some((c, rest)) => path.first() == Some(c) && matches(rest, &path[1..]),
    }
}

/// The paths watched when no `--audit-watch` is given (the list).
pub const DEFAULT_WATCH: &[&str] = &[
    "/etc/**",
    "/root/**",
    "/home/*/.ssh/**",
    "/home/*/.*rc",
    "/usr/**",
    "/bin/**",
    "/sbin/**",
    "/lib*/**",
    "/run/secrets/**",
];

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_match_within_or_across_components() {
        let yes = [
            ("/etc/**", "/etc/passwd"),
            ("/etc/**", "/etc/ssh/sshd_config"),
            ("/home/*/.ssh/**", "/home/ann/.ssh/authorized_keys"),
            ("/home/*/.*rc", "/home/ann/.bashrc"),
            ("/lib*/**", "/lib64/ld.so"),
            ("**/.ssh/id_*", "/root/.ssh/id_ed25519"),
            ("/tmp/?.txt", "/tmp/a.txt"),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
        let no = [
            ("/etc/**", "/etcetera/x"),
            ("/home/*/.ssh/**", "/home/ann/b/.ssh/k"),
            ("/home/*/.*rc", "/home/ann/.config/x/rc"),
            ("/tmp/?.txt", "/tmp/ab.txt"),
            ("/usr/**", "/tmp/usr/x"),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
    }
}
