//! The globs of `--audit-watch`: `**` matches any run of characters,
//! slashes included; `*` and `?` any run, and any one character, within a
//! path component; everything else itself.

/// Whether `path` matches `pattern`.
pub(crate) fn matches(pattern: &[u8], path: &[u8]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((b'*', rest)) if rest.first() == Some(&b'*') => {
            let rest = &rest[1..];
            // A trailing `**` (most globs end so) takes whatever is left.
            rest.is_empty() || (0..=path.len()).any(|i| matches(rest, &path[i..]))
        }
        Some((b'*', rest)) => {
            let end = path.iter().position(|&c| c == b'/').unwrap_or(path.len());
            (0..=end).any(|i| matches(rest, &path[i..]))
        }
        Some((b'?', rest)) => path.first().is_some_and(|&c| c != b'/') && matches(rest, &path[1..]),
        Some((c, rest)) => path.first() == Some(c) && matches(rest, &path[1..]),
    }
}

/// Whether some path that starts with `prefix` matches `pattern`: the
/// same walk as [`matches`], with a prefix that ends early matching.
fn may_match_from(pattern: &[u8], prefix: &[u8]) -> bool {
    if prefix.is_empty() {
        return true;
    }
    match pattern.split_first() {
        None => false,
        Some((b'*', rest)) if rest.first() == Some(&b'*') => {
            let rest = &rest[1..];
            (0..=prefix.len()).any(|i| may_match_from(rest, &prefix[i..]))
        }
        Some((b'*', rest)) => {
            let end = prefix.iter().position(|&c| c == b'/').unwrap_or(prefix.len());
            (0..=end).any(|i| may_match_from(rest, &prefix[i..]))
        }
        Some((b'?', rest)) => prefix[0] != b'/' && may_match_from(rest, &prefix[1..]),
        Some((c, rest)) => prefix[0] == *c && may_match_from(rest, &prefix[1..]),
    }
}

/// A sandbox's globs, compiled once: each with its literal head (the
/// bytes before its first wildcard), which a path must start with, so
/// most paths are turned away by one comparison per glob.
pub(crate) struct GlobSet {
    globs: Vec<(Vec<u8>, usize)>,
}

impl GlobSet {
    pub(crate) fn new(globs: &[String]) -> GlobSet {
        let globs = globs
            .iter()
            .map(|g| {
                let g = g.as_bytes().to_vec();
                let head = g.iter().position(|c| matches!(c, b'*' | b'?')).unwrap_or(g.len());
                (g, head)
            })
            .collect();
        GlobSet { globs }
    }

    /// Whether `path` matches one of the globs.
    pub(crate) fn matches(&self, path: &[u8]) -> bool {
        self.globs.iter().any(|(g, head)| path.starts_with(&g[..*head]) && matches(g, path))
    }

    /// Whether a path below a folder may match one of the globs; `dir` is
    /// the folder's path with its trailing slash (`/`, `/etc/`), as the
    /// caller spells it anyway before appending a name, so nothing is
    /// copied.
    pub(crate) fn may_match_below(&self, dir: &[u8]) -> bool {
        debug_assert!(dir.ends_with(b"/"), "a folder's path ends in a slash here");
        self.globs.iter().any(|(g, head)| {
            let n = dir.len().min(*head);
            dir[..n] == g[..n] && may_match_from(g, dir)
        })
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

/// The paths whose opens for reading are recorded when no
/// `--audit-read` is given (the list).
pub const DEFAULT_READ: &[&str] =
    &["/run/secrets/**", "/etc/shadow", "**/.ssh/id_*", "**/.aws/credentials", "**/.netrc"];

#[cfg(test)]
mod tests {
    use super::{matches, GlobSet, DEFAULT_READ, DEFAULT_WATCH};

    #[test]
    fn a_set_matches_as_its_globs_and_knows_which_folders_to_skip() {
        let set = GlobSet::new(&DEFAULT_WATCH.iter().map(|g| (*g).to_string()).collect::<Vec<_>>());
        for p in ["/etc/passwd", "/home/ann/.bashrc", "/lib64/ld.so", "/run/secrets/k"] {
            assert!(set.matches(p.as_bytes()), "{p}");
        }
        for p in ["/tmp/x", "/etcetera", "/home/ann/x", "/"] {
            assert!(!set.matches(p.as_bytes()), "{p}");
        }
        for d in ["/", "/etc/", "/etc/ssh/", "/home/", "/home/ann/", "/home/ann/.ssh/", "/lib/", "/lib64/", "/run/"] {
            assert!(set.may_match_below(d.as_bytes()), "{d}");
        }
        for d in ["/tmp/", "/tmp/etc/", "/home/ann/src/", "/var/lib/", "/run/user/", "/proc/", "/etcetera/"] {
            assert!(!set.may_match_below(d.as_bytes()), "{d}");
        }
        let anywhere = GlobSet::new(&["**/.ssh/id_*".to_string()]);
        assert!(anywhere.may_match_below(b"/tmp/") && anywhere.matches(b"/tmp/.ssh/id_rsa"));
        assert!(!GlobSet::new(&[]).may_match_below(b"/"));
    }

    #[test]
    fn the_default_reads_are_secrets_and_credentials_anywhere() {
        let set = GlobSet::new(&DEFAULT_READ.iter().map(|g| (*g).to_string()).collect::<Vec<_>>());
        for p in ["/run/secrets/API_KEY", "/etc/shadow", "/root/.ssh/id_ed25519", "/w/a/.aws/credentials", "/x/.netrc"]
        {
            assert!(set.matches(p.as_bytes()), "{p}");
        }
        for p in ["/etc/passwd", "/etc/shadow-", "/root/.ssh/known_hosts", "/x/.aws/config", "/x/netrc", "/run/x"] {
            assert!(!set.matches(p.as_bytes()), "{p}");
        }
    }

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
            ("/etc/**", "/etc/"),
            ("**", "/any/path"),
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
            ("/etc/**", "/etc"),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes()), "{p} {s}");
        }
    }
}
