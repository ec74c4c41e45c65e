//! `package.install` records: which package managers a process runs
//! (from its argv), which of the files a manager writes are a package
//! database's (pip's `*.dist-info`, npm's `node_modules/*/package.json`,
//! dpkg's `status` and `info/*.list`, cargo's unpacked
//! `registry/src/*/NAME-VERSION/Cargo.toml` and `.cargo-ok`), and the
//! records derived from what
//! the sentry saw of one manager run: the execs, the files written, the
//! archives read (with their hashes) and the connections made.
//!
//! Each record names the evidence it rests on. The name and version come
//! from the files the manager wrote (the guest's bytes: a claim); the
//! source and `sha256` only from what the sentry itself saw: an archive
//! the manager read, hashed by the sentry, an archive it wrote while it
//! talked to a registry (its download, hashed by the sentry as the run
//! left it), or the connections it made. A
//! record without either says `unknown`: writing a fake `METADATA`
//! cannot make a record that claims a download.
//!
//! A leaf like the rest of `audit`: the kernel gathers the observations
//! and the bytes; this module only reads them.

use super::record::Record;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// The most bytes of an exec's argv an `Exec` keeps; past it the argv is
/// cut (at an argument boundary, or inside the argument that crosses it)
/// and marked `truncated`.
pub(crate) const MAX_ARGV: usize = 4 << 10;

/// A package manager, as its exec names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Manager {
    Pip,
    Npm,
    Dpkg,
    Apt,
    Cargo,
}

impl Manager {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Manager::Pip => "pip",
            Manager::Npm => "npm",
            Manager::Dpkg => "dpkg",
            Manager::Apt => "apt",
            Manager::Cargo => "cargo",
        }
    }
}

fn basename(p: &[u8]) -> &[u8] {
    p.rsplit(|&b| b == b'/').next().unwrap_or(p)
}

/// The manager a program named `name` is, if any (`pip3.11` is pip).
fn manager_named(name: &[u8]) -> Option<Manager> {
    let versioned =
        |stem: &[u8]| name.strip_prefix(stem).is_some_and(|rest| rest.iter().all(|&b| b.is_ascii_digit() || b == b'.'));
    match name {
        b"npm" | b"npm-cli.js" => Some(Manager::Npm),
        b"dpkg" => Some(Manager::Dpkg),
        b"apt" | b"apt-get" => Some(Manager::Apt),
        b"cargo" => Some(Manager::Cargo),
        _ if versioned(b"pip") => Some(Manager::Pip),
        _ => None,
    }
}

/// Whether `name` runs the program its arguments name (`env node npm`,
/// `python3 -m pip`, `node npm-cli.js`, the shell of a `#!/bin/sh`
/// script named `pip`).
fn is_launcher(name: &[u8]) -> bool {
    matches!(name, b"env" | b"node" | b"nodejs" | b"sh" | b"bash" | b"dash") || name.starts_with(b"python")
}

/// The manager an exec with `argv` runs: its program's name, or the
/// program a launcher (`env`, `node`, `python -m`) runs.
pub(crate) fn manager_of(argv: &[Vec<u8>]) -> Option<Manager> {
    let first = basename(argv.first()?);
    if let Some(m) = manager_named(first) {
        return Some(m);
    }
    if !is_launcher(first) {
        return None;
    }
    let mut args = argv.iter().skip(1).take(4).map(|a| a.as_slice());
    while let Some(a) = args.next() {
        match a {
            b"-m" => return args.next().and_then(manager_named),
            _ if a.starts_with(b"-") || is_launcher(basename(a)) => continue,
            _ => return manager_named(basename(a)),
        }
    }
    None
}

/// The public registries of the managers husk knows (pip, npm, apt,
/// cargo): a connection to one is a package download whoever makes it,
/// so renaming a manager does not get past `--package-registry-allow`.
pub(crate) const KNOWN_REGISTRIES: &[&str] = &[
    "pypi.org",
    "files.pythonhosted.org",
    "pypi.python.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "security.ubuntu.com",
    "crates.io",
    "static.crates.io",
    "index.crates.io",
];

/// Whether a destination (its address, and the name it was resolved
/// from) is one of the `allow` hosts (names compared without case).
pub(crate) fn registry_allowed(allow: &[String], address: &str, name: Option<&str>) -> bool {
    allow.iter().any(|h| h == address || name.is_some_and(|n| n.trim_end_matches('.').eq_ignore_ascii_case(h)))
}

/// Whether `name` is a known public registry (or a host under one).
pub(crate) fn is_known_registry(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    KNOWN_REGISTRIES.iter().any(|r| name == *r || name.strip_suffix(r).is_some_and(|rest| rest.ends_with('.')))
}

/// What a file a manager writes is to its package database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `NAME-VERSION.dist-info/METADATA` (pip).
    Metadata,
    /// `*.dist-info/RECORD` or `direct_url.json` (pip).
    DistInfo,
    /// `node_modules/[@scope/]NAME/package.json` (npm).
    NodePackage,
    /// `package-lock.json`, `node_modules/.package-lock.json` (npm).
    NpmLock,
    /// dpkg's `status` (or the `status-new` it renames over it).
    DpkgStatus,
    /// dpkg's `info/PACKAGE.list` (or `.list-new`): the package's files.
    DpkgList(String),
    /// `registry/src/INDEX/NAME-VERSION/Cargo.toml`: the manifest of a
    /// crate cargo unpacked from its `.crate`.
    CargoManifest,
    /// `registry/src/INDEX/NAME-VERSION/.cargo-ok`: written last by
    /// cargo, once the crate is unpacked whole.
    CargoOk,
    /// An archive a manager wrote (a download it kept).
    Archive,
}

/// Whether `name` names a package archive.
pub(crate) fn is_archive(name: &[u8]) -> bool {
    [&b".whl"[..], b".tar.gz", b".tgz", b".zip", b".deb", b".crate"].iter().any(|ext| name.ends_with(ext))
}

/// The kind of the file at guest path `path`, if it is one a manager's
/// package database is made of.
pub(crate) fn kind_of(path: &[u8]) -> Option<FileKind> {
    let mut parts = path.rsplit(|&b| b == b'/');
    let name = parts.next()?;
    let parent = parts.next().unwrap_or_default();
    let grand = parts.next().unwrap_or_default();
    let great = parts.next().unwrap_or_default();
    let great2 = parts.next().unwrap_or_default();
    if great == b"src" && great2 == b"registry" && !grand.is_empty() && !parent.is_empty() {
        match name {
            b"Cargo.toml" => return Some(FileKind::CargoManifest),
            b".cargo-ok" => return Some(FileKind::CargoOk),
            _ => {}
        }
    }
    if parent.ends_with(b".dist-info") {
        return match name {
            b"METADATA" => Some(FileKind::Metadata),
            b"RECORD" | b"direct_url.json" => Some(FileKind::DistInfo),
            _ => None,
        };
    }
    if name == b"package.json" && (grand == b"node_modules" || (great == b"node_modules" && grand.starts_with(b"@"))) {
        return Some(FileKind::NodePackage);
    }
    if name == b"package-lock.json" || (name == b".package-lock.json" && parent == b"node_modules") {
        return Some(FileKind::NpmLock);
    }
    if path.starts_with(b"/var/lib/dpkg/") {
        if path == b"/var/lib/dpkg/status" || path == b"/var/lib/dpkg/status-new" {
            return Some(FileKind::DpkgStatus);
        }
        if parent == b"info" && grand == b"dpkg" {
            let stem = name.strip_suffix(b".list-new").or_else(|| name.strip_suffix(b".list"))?;
            let pkg = stem.split(|&b| b == b':').next().unwrap_or(stem);
            return Some(FileKind::DpkgList(String::from_utf8_lossy(pkg).into_owned()));
        }
    }
    is_archive(name).then_some(FileKind::Archive)
}

/// What a record rests on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Evidence {
    /// An exec of the manager run (or of a manager it ran).
    Exec {
        pid: i32,
        argv: Vec<String>,
        /// The argv was longer than `MAX_ARGV` and is cut.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    /// A file the run wrote: one of the package database, or an archive
    /// (a download it kept), which the sentry hashed when the run ended,
    /// as the run left it (no hash when it could not: `note` says why).
    Wrote {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// An archive the run read, hashed by the sentry as it was opened
    /// (no hash when it was too large to hash: `note` says so).
    Read {
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// A connection the run made through the egress gateway.
    Connect {
        address: String,
        port: u16,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// What the sentry kept of the run reached a limit (`what`): the
    /// evidence, and so the records, may be incomplete.
    Limit { what: String },
}

impl Evidence {
    /// The `Exec` of `argv`, cut to `MAX_ARGV` bytes in all.
    pub fn exec(pid: i32, argv: &[Vec<u8>]) -> Evidence {
        let mut left = MAX_ARGV;
        let mut kept = Vec::new();
        let mut truncated = false;
        for a in argv {
            if a.len() > left {
                truncated = true;
                if left > 0 {
                    kept.push(String::from_utf8_lossy(&a[..left]).into_owned());
                }
                break;
            }
            left -= a.len();
            kept.push(String::from_utf8_lossy(a).into_owned());
        }
        Evidence::Exec { pid, argv: kept, truncated }
    }
}

/// What the sentry saw of one manager run: from the exec of a manager to
/// that process's exit, with every process it started.
#[derive(Clone, Debug, Default)]
pub(crate) struct Observed {
    /// The pid of the process whose exec began the run.
    pub pid: i32,
    /// The manager execs, in order (`Evidence::Exec`).
    pub execs: Vec<Evidence>,
    /// The database files written, with their bytes at the run's end.
    pub files: Vec<(String, FileKind, Vec<u8>)>,
    /// The archives read: path and hex SHA-256 (None: too large to hash).
    pub archives: Vec<(String, Option<String>)>,
    /// Archives the run itself wrote (downloads): path and hex SHA-256 of
    /// the bytes the sentry read back at the run's end, or why there is
    /// none.
    pub wrote_archives: Vec<(String, Result<String, String>)>,
    /// The connections (`Evidence::Connect`).
    pub connects: Vec<Evidence>,
    /// The limits the run reached (what was left out), in every record's
    /// evidence.
    pub limits: Vec<String>,
}

/// `Key: value` of an RFC 822-style header block (METADATA, dpkg
/// stanzas): the value of the first line starting `key:`.
fn header<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(key).then(|| v.trim())
    })
}

/// A wheel's or sdist's name part, as PEP 427/625 write it: lowercase,
/// runs of `-_.` as `_`.
fn normalized(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The archive of `package` `version` among `archives` (path first):
/// the one whose file name begins `prefix`, or the only archive with
/// extension `ext` when the run installed just one package.
fn archive_for<'a, T>(archives: &'a [(String, T)], prefix: &str, ext: &[&str], only: bool) -> Option<&'a (String, T)> {
    let file = |p: &str| p.rsplit('/').next().unwrap_or(p).to_lowercase();
    let of_kind: Vec<_> = archives.iter().filter(|(p, _)| ext.iter().any(|e| p.ends_with(e))).collect();
    of_kind
        .iter()
        .find(|(p, _)| file(p).starts_with(prefix))
        .or_else(|| (only && of_kind.len() == 1).then(|| &of_kind[0]))
        .copied()
}

/// One package found in the run's files, before its source is decided.
struct Found {
    manager: Manager,
    package: String,
    version: String,
    /// The database files it rests on.
    wrote: Vec<String>,
    /// Its archive's file name starts with this.
    prefix: String,
    ext: &'static [&'static str],
}

fn pip_packages(seen: &Observed) -> Vec<Found> {
    // The files by their `*.dist-info/` directory, so each package's are
    // found in one look-up.
    let mut by_dir: HashMap<&str, Vec<String>> = HashMap::new();
    for (p, ..) in &seen.files {
        let dir = p.rfind('/').map_or("", |i| &p[..=i]);
        by_dir.entry(dir).or_default().push(p.clone());
    }
    let mut found = Vec::new();
    for (path, kind, bytes) in &seen.files {
        if *kind != FileKind::Metadata {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let (Some(name), Some(version)) = (header(&text, "Name"), header(&text, "Version")) else { continue };
        let dir = &path[..path.len() - "METADATA".len()];
        let wrote = by_dir.get(dir).cloned().unwrap_or_default();
        let prefix = format!("{}-{}", normalized(name), version);
        let ext = &[".whl", ".tar.gz", ".zip"][..];
        found.push(Found { manager: Manager::Pip, package: name.into(), version: version.into(), wrote, prefix, ext });
    }
    found
}

fn npm_packages(seen: &Observed) -> Vec<Found> {
    let locks: Vec<String> =
        seen.files.iter().filter(|(_, k, _)| *k == FileKind::NpmLock).map(|(p, ..)| p.clone()).collect();
    let mut found = Vec::new();
    for (path, kind, bytes) in &seen.files {
        if *kind != FileKind::NodePackage {
            continue;
        }
        let Ok(json) = serde_json::from_slice::<serde_json::Value>(bytes) else { continue };
        let (Some(name), Some(version)) = (json["name"].as_str(), json["version"].as_str()) else { continue };
        let mut wrote = vec![path.clone()];
        wrote.extend(locks.iter().cloned());
        // `npm pack` names a scoped package's tarball `scope-name-V.tgz`.
        let prefix = format!("{}-{}", name.trim_start_matches('@').replace('/', "-"), version);
        let ext = &[".tgz", ".tar.gz"][..];
        found.push(Found { manager: Manager::Npm, package: name.into(), version: version.into(), wrote, prefix, ext });
    }
    found
}

fn dpkg_packages(seen: &Observed) -> Vec<Found> {
    let Some((status_path, _, status)) = seen.files.iter().rev().find(|(_, k, _)| *k == FileKind::DpkgStatus) else {
        return Vec::new();
    };
    let status = String::from_utf8_lossy(status);
    // Each package's stanza, by name (the first one, as a search would).
    let mut stanzas: HashMap<&str, &str> = HashMap::new();
    for s in status.split("\n\n").map(str::trim_start) {
        if let Some(pkg) = header(s, "Package") {
            stanzas.entry(pkg).or_insert(s);
        }
    }
    let mut done = HashSet::new();
    let mut found = Vec::new();
    for (path, kind, _) in &seen.files {
        let FileKind::DpkgList(pkg) = kind else { continue };
        if !done.insert(pkg.as_str()) {
            continue;
        }
        let Some(&stanza) = stanzas.get(pkg.as_str()) else { continue };
        if !header(stanza, "Status").is_some_and(|s| s.ends_with(" installed")) {
            continue;
        }
        let Some(version) = header(stanza, "Version") else { continue };
        let wrote = vec![path.clone(), status_path.clone()];
        let prefix = format!("{pkg}_");
        let ext = &[".deb"][..];
        found.push(Found { manager: Manager::Dpkg, package: pkg.clone(), version: version.into(), wrote, prefix, ext });
    }
    found
}

/// `key = "value"` in the `[package]` table of a Cargo.toml (as `cargo
/// package` normalizes it: one key a line, basic strings).
fn cargo_key<'a>(toml: &'a str, key: &str) -> Option<&'a str> {
    let mut in_package = false;
    for line in toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if !in_package {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if k.trim() == key {
            let v = v.trim().strip_prefix('"')?.strip_suffix('"')?;
            return (!v.contains(['"', '\\'])).then_some(v);
        }
    }
    None
}

/// The crates cargo unpacked into `registry/src`: each a `Cargo.toml`
/// whose folder is named after the name and version it holds, with the
/// `.cargo-ok` cargo writes once the unpack is whole.
fn cargo_packages(seen: &Observed) -> Vec<Found> {
    let folder = |p: &str| p.rfind('/').map_or(String::new(), |i| p[..i].to_string());
    let ok: HashSet<String> =
        seen.files.iter().filter(|(_, k, _)| *k == FileKind::CargoOk).map(|(p, ..)| folder(p)).collect();
    let mut found = Vec::new();
    for (path, kind, bytes) in &seen.files {
        if *kind != FileKind::CargoManifest {
            continue;
        }
        let dir = folder(path);
        if !ok.contains(&dir) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let (Some(name), Some(version)) = (cargo_key(&text, "name"), cargo_key(&text, "version")) else { continue };
        let stem = format!("{name}-{version}");
        if !dir.ends_with(&format!("/{stem}")) {
            continue;
        }
        let wrote = vec![path.clone(), format!("{dir}/.cargo-ok")];
        // `cargo package` and the registries name it `NAME-VERSION.crate`.
        let prefix = format!("{}.", stem.to_lowercase());
        let ext = &[".crate"][..];
        found.push(Found {
            manager: Manager::Cargo,
            package: name.into(),
            version: version.into(),
            wrote,
            prefix,
            ext,
        });
    }
    found
}

/// The `package.install` records of a run the sentry saw.
pub(crate) fn derive(seen: &Observed) -> Vec<Record> {
    let mut found = pip_packages(seen);
    found.extend(npm_packages(seen));
    found.extend(dpkg_packages(seen));
    found.extend(cargo_packages(seen));
    let only = found.len() == 1;
    let hosts: Vec<String> = seen
        .connects
        .iter()
        .filter_map(|c| match c {
            Evidence::Connect { address, port, name } => Some(format!("{}:{port}", name.as_deref().unwrap_or(address))),
            _ => None,
        })
        .collect();
    found
        .into_iter()
        .map(|f| {
            let mut evidence = seen.execs.clone();
            evidence.extend(f.wrote.into_iter().map(|path| Evidence::Wrote { path, sha256: None, note: None }));
            let read = archive_for(&seen.archives, &f.prefix, f.ext, only);
            // Only when the run read no archive of the package: one it
            // wrote and never opened for reading alone (cargo reads its
            // download back through the descriptor that wrote it).
            let written = match read {
                None => archive_for(&seen.wrote_archives, &f.prefix, f.ext, only),
                Some(_) => None,
            };
            let downloaded = |path: &String| seen.wrote_archives.iter().any(|(p, _)| p == path);
            let (source, sha256) = match (read, written) {
                // A file the run downloaded and then read: fetched bytes.
                (Some((path, sha)), _) if downloaded(path) && !hosts.is_empty() => {
                    (format!("download from {}", hosts.join(", ")), sha.clone())
                }
                (Some((path, sha)), _) => (format!("file://{path}"), sha.clone()),
                // A file the run wrote as it talked to a registry: the
                // bytes it kept of the download.
                (None, Some((_, Ok(sha)))) if !hosts.is_empty() => {
                    (format!("download from {}", hosts.join(", ")), Some(sha.clone()))
                }
                (None, _) if !hosts.is_empty() => (format!("network {}", hosts.join(", ")), None),
                (None, _) => ("unknown".to_string(), None),
            };
            if let Some((path, sha256)) = read {
                let note = sha256.is_none().then(|| "too large to hash".to_string());
                evidence.push(Evidence::Read { path: path.clone(), sha256: sha256.clone(), note });
            }
            if let Some((path, hashed)) = written {
                let (sha256, note) = match hashed {
                    Ok(sha) => (Some(sha.clone()), None),
                    Err(why) => (None, Some(why.clone())),
                };
                evidence.push(Evidence::Wrote { path: path.clone(), sha256, note });
            }
            if source.starts_with("download") || source.starts_with("network") {
                evidence.extend(seen.connects.iter().cloned());
            }
            evidence.extend(seen.limits.iter().map(|what| Evidence::Limit { what: what.clone() }));
            Record::PackageInstall {
                pid: seen.pid,
                manager: f.manager.name().to_string(),
                package: f.package,
                version: f.version,
                source,
                sha256,
                evidence,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn managers_are_known_by_their_programs_and_launchers() {
        let m = |w: &[&str]| manager_of(&argv(w));
        assert_eq!(m(&["/usr/bin/pip3.11", "install", "x"]), Some(Manager::Pip));
        assert_eq!(m(&["python3", "-m", "pip", "install", "x"]), Some(Manager::Pip));
        assert_eq!(m(&["/usr/bin/env", "node", "/usr/bin/npm", "i"]), Some(Manager::Npm));
        assert_eq!(m(&["node", "/usr/lib/node_modules/npm/bin/npm-cli.js"]), Some(Manager::Npm));
        assert_eq!(m(&["dpkg", "-i", "a.deb"]), Some(Manager::Dpkg));
        assert_eq!(m(&["apt-get", "install"]), Some(Manager::Apt));
        assert_eq!(m(&["python3", "pip"]), Some(Manager::Pip));
        assert_eq!(m(&["/bin/sh", "./pip", "install"]), Some(Manager::Pip));
        assert_eq!(m(&["/bin/sh", "-c", "pip install x; echo"]), None, "a script, not a program");
        assert_eq!(m(&["echo", "pip"]), None, "an argument of another program");
        assert_eq!(m(&["python3", "script.py"]), None);
        assert_eq!(m(&["pipe"]), None);
        assert_eq!(m(&[]), None);
    }

    #[test]
    fn registries_are_allowed_by_address_or_name() {
        let allow = vec!["pypi.internal".to_string(), "198.18.0.2".to_string()];
        assert!(registry_allowed(&allow, "198.18.0.2", None));
        assert!(registry_allowed(&allow, "10.0.0.1", Some("PyPI.internal.")));
        assert!(!registry_allowed(&allow, "10.0.0.1", Some("evil.internal")));
        assert!(!registry_allowed(&[], "198.18.0.2", None));
        assert!(is_known_registry("files.pythonhosted.org") && is_known_registry("eu.archive.ubuntu.com"));
        assert!(!is_known_registry("notpypi.org") && !is_known_registry("example.com"));
    }

    #[test]
    fn database_files_are_told_apart() {
        let k = |p: &str| kind_of(p.as_bytes());
        assert_eq!(k("/usr/lib/python3/site-packages/a-1.dist-info/METADATA"), Some(FileKind::Metadata));
        assert_eq!(k("/x/a-1.dist-info/RECORD"), Some(FileKind::DistInfo));
        assert_eq!(k("/x/a-1.dist-info/WHEEL"), None);
        assert_eq!(k("/p/node_modules/left-pad/package.json"), Some(FileKind::NodePackage));
        assert_eq!(k("/p/node_modules/@s/n/package.json"), Some(FileKind::NodePackage));
        assert_eq!(k("/p/node_modules/a/lib/package.json"), None);
        assert_eq!(k("/p/package.json"), None);
        assert_eq!(k("/p/package-lock.json"), Some(FileKind::NpmLock));
        assert_eq!(k("/var/lib/dpkg/status-new"), Some(FileKind::DpkgStatus));
        assert_eq!(k("/var/lib/dpkg/info/tiny:amd64.list-new"), Some(FileKind::DpkgList("tiny".into())));
        assert_eq!(k("/var/lib/dpkg/info/tiny.md5sums"), None);
        let src = "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tiny-0.1.0";
        assert_eq!(k(&format!("{src}/Cargo.toml")), Some(FileKind::CargoManifest));
        assert_eq!(k(&format!("{src}/.cargo-ok")), Some(FileKind::CargoOk));
        assert_eq!(k(&format!("{src}/src/Cargo.toml")), None, "a file inside the crate");
        assert_eq!(k("/w/proj/Cargo.toml"), None);
        assert_eq!(k("/root/.cargo/registry/cache/index.crates.io-1/tiny-0.1.0.crate"), Some(FileKind::Archive));
        assert_eq!(k("/tmp/x/a-1-py3-none-any.whl"), Some(FileKind::Archive));
        assert_eq!(k("/etc/passwd"), None);
    }

    fn metadata(name: &str) -> (String, FileKind, Vec<u8>) {
        let path = format!("/sp/{name}-1.0.dist-info/METADATA");
        (path, FileKind::Metadata, format!("Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n\nbody").into_bytes())
    }

    fn json(r: &Record) -> serde_json::Value {
        serde_json::to_value(r).unwrap()
    }

    #[test]
    fn a_wheel_read_by_the_run_is_the_source_and_its_hash_the_sha256() {
        let seen = Observed {
            pid: 5,
            execs: vec![Evidence::exec(5, &argv(&["pip"]))],
            files: vec![metadata("Tiny.Pkg")],
            archives: vec![("/w/tiny_pkg-1.0-py3-none-any.whl".into(), Some("ab".into()))],
            ..Observed::default()
        };
        let recs = derive(&seen);
        assert_eq!(recs.len(), 1);
        let r = json(&recs[0]);
        assert_eq!(
            (&r["type"], &r["manager"], &r["package"], &r["version"]),
            (&"package.install".into(), &"pip".into(), &"Tiny.Pkg".into(), &"1.0".into())
        );
        assert_eq!((&r["source"], &r["sha256"]), (&"file:///w/tiny_pkg-1.0-py3-none-any.whl".into(), &"ab".into()));
        let kinds: Vec<&str> = r["evidence"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["exec", "wrote", "read"]);
    }

    #[test]
    fn without_an_archive_or_a_connection_the_source_is_unknown() {
        let seen = Observed { pid: 5, files: vec![metadata("fake")], ..Observed::default() };
        let r = json(&derive(&seen)[0]);
        assert_eq!((&r["source"], r.get("sha256")), (&"unknown".into(), None));
        // A downloaded archive is a download only with a connection.
        let seen = Observed {
            files: vec![metadata("fake")],
            archives: vec![("/tmp/d/fake-1.0.whl".into(), Some("cd".into()))],
            wrote_archives: vec![("/tmp/d/fake-1.0.whl".into(), Ok("cd".into()))],
            connects: vec![Evidence::Connect { address: "198.18.0.2".into(), port: 80, name: Some("idx".into()) }],
            ..Observed::default()
        };
        let r = json(&derive(&seen)[0]);
        assert_eq!((&r["source"], &r["sha256"]), (&"download from idx:80".into(), &"cd".into()));
    }

    #[test]
    fn dpkg_and_npm_packages_come_from_their_databases() {
        let status = "Package: other\nStatus: install ok installed\nVersion: 9\n\nPackage: tiny\nStatus: install ok installed\nVersion: 1:2.0-1\n";
        let pkg = br#"{"name":"@s/left","version":"0.1.0"}"#.to_vec();
        let seen = Observed {
            files: vec![
                ("/var/lib/dpkg/info/tiny.list-new".into(), FileKind::DpkgList("tiny".into()), Vec::new()),
                ("/var/lib/dpkg/status-new".into(), FileKind::DpkgStatus, status.as_bytes().to_vec()),
                ("/p/node_modules/@s/left/package.json".into(), FileKind::NodePackage, pkg),
            ],
            archives: vec![
                ("/d/tiny_2.0-1_all.deb".into(), Some("11".into())),
                ("/d/s-left-0.1.0.tgz".into(), Some("22".into())),
            ],
            ..Observed::default()
        };
        let recs: Vec<_> = derive(&seen).iter().map(json).collect();
        assert_eq!(recs.len(), 2, "{recs:?}");
        assert_eq!(
            (&recs[0]["package"], &recs[0]["version"], &recs[0]["sha256"]),
            (&"@s/left".into(), &"0.1.0".into(), &"22".into())
        );
        assert_eq!(
            (&recs[1]["manager"], &recs[1]["version"], &recs[1]["sha256"]),
            (&"dpkg".into(), &"1:2.0-1".into(), &"11".into())
        );
    }

    fn cargo_files(dir: &str, toml: &str, ok: bool) -> Vec<(String, FileKind, Vec<u8>)> {
        let src = format!("/h/.cargo/registry/src/local-0123/{dir}");
        let mut files = vec![(format!("{src}/Cargo.toml"), FileKind::CargoManifest, toml.as_bytes().to_vec())];
        if ok {
            files.push((format!("{src}/.cargo-ok"), FileKind::CargoOk, br#"{"v":1}"#.to_vec()));
        }
        files
    }

    #[test]
    fn a_crate_unpacked_whole_is_recorded_with_the_crate_file_it_came_from() {
        let toml = "[package]\nedition = \"2021\"\nname = \"tiny_crate\"\nversion = \"0.2.0-rc.1\"\n\n[dependencies.x]\nversion = \"9\"\n";
        let seen = Observed {
            pid: 7,
            execs: vec![Evidence::exec(7, &argv(&["cargo", "fetch"]))],
            files: cargo_files("tiny_crate-0.2.0-rc.1", toml, true),
            archives: vec![
                ("/reg/tiny_crate-0.2.0-rc.10.crate".into(), Some("00".into())),
                ("/reg/tiny_crate-0.2.0-rc.1.crate".into(), Some("ef".into())),
            ],
            ..Observed::default()
        };
        let recs: Vec<_> = derive(&seen).iter().map(json).collect();
        assert_eq!(recs.len(), 1, "{recs:?}");
        let r = &recs[0];
        assert_eq!(
            (&r["manager"], &r["package"], &r["version"], &r["sha256"]),
            (&"cargo".into(), &"tiny_crate".into(), &"0.2.0-rc.1".into(), &"ef".into())
        );
        assert_eq!(r["source"], "file:///reg/tiny_crate-0.2.0-rc.1.crate");
        let wrote: Vec<&str> = r["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "wrote")
            .map(|e| e["path"].as_str().unwrap())
            .collect();
        assert!(wrote[0].ends_with("/tiny_crate-0.2.0-rc.1/Cargo.toml") && wrote[1].ends_with("/.cargo-ok"), "{r}");
        // Not whole (no .cargo-ok), or a manifest that does not name its
        // folder: no record.
        let half = Observed { files: cargo_files("tiny_crate-0.2.0-rc.1", toml, false), ..seen.clone() };
        assert!(derive(&half).is_empty());
        let other = Observed { files: cargo_files("evil-6.6.6", toml, true), ..seen };
        assert!(derive(&other).is_empty());
    }

    #[test]
    fn a_crate_the_run_downloaded_and_never_reopened_is_hashed_as_written() {
        let toml = "[package]\nname = \"tiny\"\nversion = \"1.0.0\"\n";
        let cache = "/h/.cargo/registry/cache/198.18.0.2-1/tiny-1.0.0.crate";
        let connect = Evidence::Connect { address: "198.18.0.2".into(), port: 8002, name: None };
        let seen = Observed {
            pid: 7,
            execs: vec![Evidence::exec(7, &argv(&["cargo", "fetch"]))],
            files: cargo_files("tiny-1.0.0", toml, true),
            wrote_archives: vec![(cache.into(), Ok("aa".into()))],
            connects: vec![connect],
            ..Observed::default()
        };
        let r = json(&derive(&seen)[0]);
        assert_eq!((&r["source"], &r["sha256"]), (&"download from 198.18.0.2:8002".into(), &"aa".into()), "{r}");
        let ev = r["evidence"].as_array().unwrap();
        assert!(ev.contains(&serde_json::json!({"kind": "wrote", "path": cache, "sha256": "aa"})), "{r}");
        assert_eq!(kinds_of(&r), ["exec", "wrote", "wrote", "wrote", "connect"]);
        // Written without any connection: the guest's own bytes, no claim.
        let offline = Observed { connects: Vec::new(), ..seen.clone() };
        let r = json(&derive(&offline)[0]);
        assert_eq!((&r["source"], r.get("sha256")), (&"unknown".into(), None), "{r}");
        // Too large to hash: a download without a hash.
        let big = Observed { wrote_archives: vec![(cache.into(), Err("too large to hash".into()))], ..seen.clone() };
        let r = json(&derive(&big)[0]);
        assert_eq!(r.get("sha256"), None, "{r}");
        assert!(r["evidence"].as_array().unwrap().iter().any(|e| e["note"] == "too large to hash"), "{r}");
        // An unpacked folder with no .crate written: no hash, whatever the
        // connections.
        let fake = Observed { wrote_archives: Vec::new(), ..seen };
        let r = json(&derive(&fake)[0]);
        assert_eq!((&r["source"], r.get("sha256")), (&"network 198.18.0.2:8002".into(), None), "{r}");
    }

    fn kinds_of(r: &serde_json::Value) -> Vec<&str> {
        r["evidence"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect()
    }

    #[test]
    fn a_long_argv_is_cut_and_marked() {
        let short = json_of(&Evidence::exec(1, &argv(&["pip", "install", "x"])));
        assert_eq!(short["argv"], serde_json::json!(["pip", "install", "x"]));
        assert_eq!(short.get("truncated"), None);
        let long: Vec<Vec<u8>> = std::iter::once(b"pip".to_vec()).chain((0..2000).map(|_| vec![b'a'; 100])).collect();
        let Evidence::Exec { argv, truncated, .. } = Evidence::exec(1, &long) else { unreachable!() };
        assert!(truncated);
        assert_eq!(argv.iter().map(String::len).sum::<usize>(), MAX_ARGV);
        assert_eq!(argv[0], "pip");
        assert_eq!(json_of(&Evidence::exec(1, &long))["truncated"], true);
    }

    fn json_of(e: &Evidence) -> serde_json::Value {
        serde_json::to_value(e).unwrap()
    }

    #[test]
    fn an_archive_too_large_to_hash_and_the_limits_are_in_the_evidence() {
        let seen = Observed {
            files: vec![metadata("big")],
            archives: vec![("/w/big-1.0-py3-none-any.whl".into(), None)],
            limits: vec!["execs".into()],
            ..Observed::default()
        };
        let r = json(&derive(&seen)[0]);
        assert_eq!((&r["source"], r.get("sha256")), (&"file:///w/big-1.0-py3-none-any.whl".into(), None));
        let ev = r["evidence"].as_array().unwrap();
        let read = ev.iter().find(|e| e["kind"] == "read").unwrap();
        assert_eq!((read.get("sha256"), &read["note"]), (None, &"too large to hash".into()));
        assert_eq!(ev.last().unwrap(), &serde_json::json!({"kind": "limit", "what": "execs"}));
    }

    #[test]
    fn each_package_gets_its_own_dist_info_files_and_status_stanza() {
        let mut files: Vec<_> = (0..3).map(|i| metadata(&format!("p{i}"))).collect();
        files.push(("/sp/p1-1.0.dist-info/RECORD".into(), FileKind::DistInfo, Vec::new()));
        files.push(("/sp/p1-1.0.dist-info.bak/RECORD".into(), FileKind::DistInfo, Vec::new()));
        let recs: Vec<_> = derive(&Observed { files, ..Observed::default() }).iter().map(json).collect();
        let wrote = |r: &serde_json::Value| r["evidence"].as_array().unwrap().len();
        assert_eq!(recs.iter().map(wrote).collect::<Vec<_>>(), [1, 2, 1]);
        let status = "Package: a\nStatus: install ok installed\nVersion: 1\n\nPackage: a\nVersion: 2\n\n\nPackage: b\nStatus: deinstall ok config-files\nVersion: 3\n";
        let list = |p: &str| (format!("/var/lib/dpkg/info/{p}.list"), FileKind::DpkgList(p.into()), Vec::new());
        let files = vec![
            list("a"),
            list("b"),
            list("a"),
            ("/var/lib/dpkg/status".into(), FileKind::DpkgStatus, status.as_bytes().to_vec()),
        ];
        let recs: Vec<_> = derive(&Observed { files, ..Observed::default() }).iter().map(json).collect();
        assert_eq!(recs.len(), 1, "{recs:?}");
        assert_eq!((&recs[0]["package"], &recs[0]["version"]), (&"a".into(), &"1".into()));
    }
}
