//! `package.install` records through `husk do`: pip installing a local
//! wheel, npm a local tarball, dpkg a local .deb, each built here; the
//! record names the package and version the manager wrote, the archive it
//! read as the source and that archive's SHA-256 as the sentry hashed it,
//! and the evidence. A fake METADATA written outside a manager makes no
//! record, and one written by a program merely named `pip` makes no claim
//! of a source.

use crate::util::{husk_bin, husk_do, run, Run, TempDir};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// `husk do --audit-log LOG -- argv`, run in `dir`, with a new log named
/// after `argv[0]`; the log's records, checked to verify.
fn install(dir: &Path, argv: &[&str]) -> (Run, Vec<Value>) {
    let log = dir.join(format!("{}.log", argv[0].rsplit('/').next().unwrap()));
    let mut cmd = husk_do(&["--audit-log", log.to_str().unwrap(), "--env-keep", "HOME"], argv);
    cmd.current_dir(dir);
    let r = run(cmd, None);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let recs = text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let mut verify = Command::new(husk_bin());
    verify.args(["audit", "verify"]).arg(&log);
    run(verify, None).assert_code(0);
    (r, recs)
}

fn installs(recs: &[Value]) -> Vec<&Value> {
    recs.iter().filter(|r| r["type"] == "package.install").collect()
}

/// The hex SHA-256 of `path`, as coreutils computes it.
fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

fn kinds(r: &Value) -> Vec<&str> {
    r["evidence"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect()
}

/// Whether `argv` runs natively (the tool is there).
fn have(argv: &[&str]) -> bool {
    Command::new(argv[0]).args(&argv[1..]).output().is_ok_and(|o| o.status.success())
}

/// Checks the one `package.install` of `recs`: its manager, package,
/// version, its source the archive at `archive` with that file's hash,
/// and that it comes before the exit of the process that began the run.
fn assert_installed(recs: &[Value], manager: &str, package: &str, version: &str, archive: &Path) {
    let found = installs(recs);
    assert_eq!(found.len(), 1, "{recs:#?}");
    let r = found[0];
    assert_eq!(
        (&r["manager"], &r["package"], &r["version"]),
        (&manager.into(), &package.into(), &version.into()),
        "{r}"
    );
    assert_eq!(r["source"], format!("file://{}", archive.display()), "{r}");
    assert_eq!(r["sha256"], sha256(archive), "{r}");
    let k = kinds(r);
    assert!(k.first() == Some(&"exec") && k.contains(&"wrote") && k.last() == Some(&"read"), "{r}");
    let at = recs.iter().position(|x| x == r).unwrap();
    let exit = recs.iter().position(|x| x["type"] == "process.exit" && x["pid"] == r["pid"]).unwrap();
    assert!(at < exit, "the record comes before its run's exit: {recs:#?}");
}

#[test]
fn pip_installing_a_local_wheel_is_recorded() {
    if !have(&["python3", "-m", "pip", "--version"]) {
        eprintln!("SKIP: no python3 -m pip on this host");
        return;
    }
    let dir = TempDir::new("audit-pip");
    let d = dir.path();
    // A wheel of one module: its METADATA, WHEEL and RECORD.
    let build = r#"
import base64, hashlib, zipfile
di = "tinypkg-1.2.3.dist-info"
files = {"tinypkg/__init__.py": b"X = 1\n",
         di + "/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.2.3\n",
         di + "/WHEEL": b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
rec = "".join("%s,sha256=%s,%d\n" % (p, base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode(), len(b))
              for p, b in files.items()) + di + "/RECORD,,\n"
with zipfile.ZipFile("tinypkg-1.2.3-py3-none-any.whl", "w") as z:
    for p, b in files.items():
        z.writestr(p, b)
    z.writestr(di + "/RECORD", rec)
"#;
    assert!(Command::new("python3").args(["-c", build]).current_dir(d).status().unwrap().success());
    let wheel = d.join("tinypkg-1.2.3-py3-none-any.whl");
    let argv = [
        "python3",
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "./tinypkg-1.2.3-py3-none-any.whl",
    ];
    let (r, recs) = install(d, &argv);
    r.assert_code(0);
    assert_installed(&recs, "pip", "tinypkg", "1.2.3", &wheel);
    let rec = installs(&recs)[0];
    let exec = &rec["evidence"][0];
    assert!(exec["argv"].as_array().unwrap().iter().any(|a| a == "pip"), "{exec}");
    let metadata = rec["evidence"].as_array().unwrap().iter().find(|e| e["kind"] == "wrote").unwrap();
    assert!(metadata["path"].as_str().unwrap().ends_with("/tinypkg-1.2.3.dist-info/METADATA"), "{rec}");
}

#[test]
fn npm_installing_a_local_tarball_is_recorded() {
    if !have(&["npm", "--version"]) {
        eprintln!("SKIP: no npm on this host");
        return;
    }
    let dir = TempDir::new("audit-npm");
    let d = dir.path();
    std::fs::create_dir_all(d.join("package")).unwrap();
    std::fs::write(d.join("package/package.json"), r#"{"name":"tiny-npm","version":"0.3.1","main":"index.js"}"#)
        .unwrap();
    std::fs::write(d.join("package/index.js"), "module.exports = 1;\n").unwrap();
    assert!(Command::new("tar")
        .args(["czf", "tiny-npm-0.3.1.tgz", "package"])
        .current_dir(d)
        .status()
        .unwrap()
        .success());
    std::fs::write(d.join("package.json"), "{}\n").unwrap();
    let tarball = d.join("tiny-npm-0.3.1.tgz");
    let (r, recs) = install(d, &["npm", "install", "--offline", "--no-audit", "--no-fund", "./tiny-npm-0.3.1.tgz"]);
    r.assert_code(0);
    assert_installed(&recs, "npm", "tiny-npm", "0.3.1", &tarball);
    let rec = installs(&recs)[0];
    let wrote: Vec<&str> = rec["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "wrote")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    let at = |p: &str| d.join(p).to_str().unwrap().to_string();
    assert!(wrote.contains(&at("node_modules/tiny-npm/package.json").as_str()), "{rec}");
    assert!(wrote.contains(&at("package-lock.json").as_str()), "{rec}");
}

#[test]
fn dpkg_installing_a_local_deb_is_recorded() {
    if !have(&["dpkg-deb", "--version"]) || !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP: no dpkg-deb, or not root (dpkg -i needs root in the guest)");
        return;
    }
    let dir = TempDir::new("audit-dpkg");
    let d = dir.path();
    std::fs::create_dir_all(d.join("deb/DEBIAN")).unwrap();
    std::fs::create_dir_all(d.join("deb/usr/share/tinydeb")).unwrap();
    let control =
        "Package: tinydeb\nVersion: 1.0-1\nArchitecture: all\nMaintainer: t <t@example.invalid>\nDescription: tiny\n";
    std::fs::write(d.join("deb/DEBIAN/control"), control).unwrap();
    std::fs::write(d.join("deb/usr/share/tinydeb/hello"), "hi\n").unwrap();
    let built = Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b", "deb", "tinydeb_1.0-1_all.deb"])
        .current_dir(d)
        .output();
    assert!(built.unwrap().status.success());
    let deb = d.join("tinydeb_1.0-1_all.deb");
    let (r, recs) = install(d, &["dpkg", "-i", "./tinydeb_1.0-1_all.deb"]);
    r.assert_code(0);
    assert_installed(&recs, "dpkg", "tinydeb", "1.0-1", &deb);
    let rec = installs(&recs)[0];
    let wrote: Vec<&str> = rec["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "wrote")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(wrote.iter().any(|p| p.starts_with("/var/lib/dpkg/info/tinydeb.list")), "{rec}");
    assert!(wrote.iter().any(|p| p.starts_with("/var/lib/dpkg/status")), "{rec}");
    // The host's dpkg database is untouched: the install stayed in the sandbox.
    let host = std::fs::read_to_string("/var/lib/dpkg/status").unwrap_or_default();
    assert!(!host.contains("Package: tinydeb\n"));
}

#[test]
fn a_fake_metadata_claims_no_install_and_no_source() {
    let dir = TempDir::new("audit-fake");
    let d = dir.path();
    let fake = "mkdir -p /usr/lib/python3/dist-packages/evil-6.6.dist-info && \
                printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 6.6\\n' \
                > /usr/lib/python3/dist-packages/evil-6.6.dist-info/METADATA";
    // Outside any package manager's run: no record at all.
    let (r, recs) = install(d, &["/bin/sh", "-c", fake]);
    r.assert_code(0);
    assert!(recs.iter().any(|r| r["type"] == "file.write"), "the write itself is recorded: {recs:#?}");
    assert!(installs(&recs).is_empty(), "{recs:#?}");
    // A program named pip that downloads and reads nothing: the record
    // says what it wrote and claims no source.
    std::fs::write(d.join("pip"), format!("#!/bin/sh\n{fake}\n")).unwrap();
    std::fs::set_permissions(d.join("pip"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (r, recs) = install(d, &["./pip", "install", "evil"]);
    r.assert_code(0);
    let found = installs(&recs);
    assert_eq!(found.len(), 1, "{recs:#?}");
    let rec = found[0];
    assert_eq!((&rec["package"], &rec["source"]), (&"evil".into(), &"unknown".into()), "{rec}");
    assert!(rec.get("sha256").is_none(), "{rec}");
    assert_eq!(kinds(rec), ["exec", "wrote"], "{rec}");
}

/// Connects to 198.18.0.2:8080 and 198.18.0.3:8080 and prints what came
/// of each (`ok` or the errno's name).
const PROBE: &str = r#"
import errno, socket
for host in ("198.18.0.2", "198.18.0.3"):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect((host, 8080))
        print(host, "ok")
    except OSError as e:
        print(host, errno.errorcode.get(e.errno, e.errno))
    s.close()
"#;

#[test]
fn package_registry_allow_refuses_a_managers_other_destinations() {
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: no /usr/bin/python3");
        return;
    }
    let Some(net) = crate::egress::Internet::new() else { return };
    let dir = TempDir::new("audit-registry");
    let d = dir.path();
    // The same probe as a program named pip (its exec chain makes it a
    // manager) and as probe.py.
    std::fs::write(d.join("pip"), format!("#!/usr/bin/python3\n{PROBE}")).unwrap();
    std::fs::set_permissions(d.join("pip"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(d.join("probe.py"), PROBE).unwrap();
    let log = d.join("audit.log");
    let (pip, probe) = (d.join("pip"), d.join("probe.py"));
    let script = format!("{} install x; /usr/bin/python3 {}", pip.display(), probe.display());
    let flags = [
        "--egress-allow",
        "198.18.0.2:8080",
        "--egress-allow",
        "198.18.0.3:8080",
        "--package-registry-allow",
        "198.18.0.3",
        "--audit-log",
        log.to_str().unwrap(),
    ];
    let r = net.husk_do(&flags, &["/bin/sh", "-c", &script]);
    r.assert_code(0);
    // The manager reaches only its registry; anyone else reaches both.
    assert_eq!(r.stdout_str(), "198.18.0.2 EPERM\n198.18.0.3 ok\n198.18.0.2 ok\n198.18.0.3 ok\n", "{}", r.describe());
    let text = std::fs::read_to_string(&log).unwrap();
    let recs: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let denied: Vec<&Value> = recs.iter().filter(|r| r["type"] == "package.denied").collect();
    assert_eq!(denied.len(), 1, "{recs:#?}");
    let rec = denied[0];
    assert_eq!(
        (&rec["manager"], &rec["address"], &rec["port"], &rec["protocol"]),
        (&"pip".into(), &"198.18.0.2".into(), &8080.into(), &"tcp".into()),
        "{rec}"
    );
    let exec = recs.iter().find(|r| r["type"] == "process.exec" && r["pid"] == rec["pid"]).unwrap();
    assert!(exec["argv"].as_array().unwrap().iter().any(|a| a.as_str() == pip.to_str()), "{exec}");
    let mut verify = Command::new(husk_bin());
    verify.args(["audit", "verify"]).arg(&log);
    run(verify, None).assert_code(0);
}

/// The cargo of the host's toolchain (not rustup's proxy), if there is one.
fn host_cargo() -> Option<std::path::PathBuf> {
    let out = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let cargo = Path::new(String::from_utf8(out.stdout).ok()?.trim()).join("bin/cargo");
    cargo.exists().then_some(cargo)
}

/// `tinycrate` 0.4.2, packaged by the host's `cargo` in `d`: its .crate.
fn package_tinycrate(cargo: &Path, d: &Path) -> std::path::PathBuf {
    // The crate, packaged by cargo itself.
    std::fs::create_dir_all(d.join("tinycrate/src")).unwrap();
    std::fs::write(
        d.join("tinycrate/Cargo.toml"),
        "[package]\nname = \"tinycrate\"\nversion = \"0.4.2\"\nedition = \"2021\"\nlicense = \"MIT\"\ndescription = \"t\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(d.join("tinycrate/src/lib.rs"), "pub const X: u32 = 1;\n").unwrap();
    let packaged = Command::new(cargo)
        .args(["package", "--offline", "--no-verify", "--allow-dirty"])
        .current_dir(d.join("tinycrate"))
        .env("CARGO_HOME", d.join("host-cargo-home"))
        .env("CARGO_TARGET_DIR", d.join("tinycrate/target"))
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", String::from_utf8_lossy(&packaged.stderr));
    d.join("tinycrate/target/package/tinycrate-0.4.2.crate")
}

/// The index entry of `tinycrate` 0.4.2 whose .crate is `krate`.
fn tinycrate_entry(krate: &Path) -> String {
    let entry = serde_json::json!({"name": "tinycrate", "vers": "0.4.2", "deps": [], "cksum": sha256(krate),
                                   "features": {}, "yanked": false});
    format!("{entry}\n")
}

/// A project at `d/app` depending on `tinycrate` 0.4.2.
fn tinycrate_app(d: &Path) -> std::path::PathBuf {
    let app = d.join("app");
    std::fs::create_dir_all(app.join("src")).unwrap();
    std::fs::write(
        app.join("Cargo.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntinycrate = \"0.4.2\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(app.join("src/main.rs"), "fn main() {}\n").unwrap();
    app
}

#[test]
fn cargo_fetching_a_crate_from_a_local_registry_is_recorded() {
    let Some(cargo) = host_cargo() else {
        eprintln!("SKIP: no cargo toolchain on this host");
        return;
    };
    let dir = TempDir::new("audit-cargo");
    let d = dir.path();
    let packaged = package_tinycrate(&cargo, d);
    // A local registry serving it: the .crate and its index entry.
    let reg = d.join("reg");
    std::fs::create_dir_all(reg.join("index/ti/ny")).unwrap();
    let krate = reg.join("tinycrate-0.4.2.crate");
    std::fs::copy(packaged, &krate).unwrap();
    std::fs::write(reg.join("index/ti/ny/tinycrate"), tinycrate_entry(&krate)).unwrap();
    // A project depending on it, its crates.io replaced by the registry.
    let app = tinycrate_app(d);
    std::fs::create_dir_all(app.join(".cargo")).unwrap();
    std::fs::write(
        d.join("app/.cargo/config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"local\"\n\n[source.local]\nlocal-registry = \"{}\"\n",
            reg.display()
        ),
    )
    .unwrap();
    let home = d.join("cargo-home");
    let (r, recs) = install(
        &d.join("app"),
        &["/usr/bin/env", &format!("CARGO_HOME={}", home.display()), cargo.to_str().unwrap(), "fetch", "--offline"],
    );
    r.assert_code(0);
    assert_installed(&recs, "cargo", "tinycrate", "0.4.2", &krate);
    let rec = installs(&recs)[0];
    let wrote: Vec<&str> = rec["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "wrote")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    let src = home.join("registry/src");
    let under = |p: &str, name: &str| p.starts_with(src.to_str().unwrap()) && p.ends_with(name);
    assert!(wrote.iter().any(|p| under(p, "/tinycrate-0.4.2/Cargo.toml")), "{rec}");
    assert!(wrote.iter().any(|p| under(p, "/tinycrate-0.4.2/.cargo-ok")), "{rec}");
    // The crate is unpacked inside the sandbox only.
    assert!(!src.exists());
}

/// A static HTTP server of `root` on 198.18.0.2:`port` in the internet
/// namespace of `net`, killed when dropped.
struct Static(std::process::Child);

impl Static {
    fn start(net: &crate::egress::Internet, root: &Path, port: u16) -> Static {
        let port = port.to_string();
        let mut cmd = net.in_internet(&["/usr/bin/python3", "-m", "http.server", &port, "--bind", "198.18.0.2"]);
        cmd.arg("--directory").arg(root).stdout(Stdio::null()).stderr(Stdio::null()).stdin(Stdio::null());
        let server = Static(cmd.spawn().unwrap());
        let probe = format!("import urllib.request; urllib.request.urlopen('http://198.18.0.2:{port}/', timeout=2)");
        let start = std::time::Instant::now();
        while !net
            .in_sandbox(&["/usr/bin/python3", "-c", &probe])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
        {
            assert!(start.elapsed() < std::time::Duration::from_secs(20), "the registry did not start");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        server
    }
}

impl Drop for Static {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn cargo_downloading_a_crate_from_a_sparse_registry_records_the_bytes_it_wrote() {
    let Some(cargo) = host_cargo() else {
        eprintln!("SKIP: no cargo toolchain on this host");
        return;
    };
    if !Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: no /usr/bin/python3 to serve the registry");
        return;
    }
    let Some(net) = crate::egress::Internet::new() else { return };
    let dir = TempDir::new("audit-cargo-sparse");
    let d = dir.path();
    let krate = package_tinycrate(&cargo, d);
    // A sparse registry over plain HTTP: its config, the index entry and
    // the download, all static files.
    let reg = d.join("reg");
    std::fs::create_dir_all(reg.join("ti/ny")).unwrap();
    std::fs::create_dir_all(reg.join("dl")).unwrap();
    std::fs::copy(&krate, reg.join("dl/tinycrate-0.4.2.crate")).unwrap();
    std::fs::write(reg.join("ti/ny/tinycrate"), tinycrate_entry(&krate)).unwrap();
    std::fs::write(reg.join("config.json"), r#"{"dl": "http://198.18.0.2:8002/dl/{crate}-{version}.crate"}"#).unwrap();
    let _server = Static::start(&net, &reg, 8002);
    let app = tinycrate_app(d);
    let home = d.join("cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        "[source.crates-io]\nreplace-with = \"t\"\n\n[source.t]\nregistry = \"sparse+http://198.18.0.2:8002/\"\n",
    )
    .unwrap();
    let log = d.join("audit.log");
    let path = format!("PATH={}:/usr/bin:/bin", cargo.parent().unwrap().display());
    let manifest = app.join("Cargo.toml");
    let r = net.husk_do(
        &["--egress-allow", "198.18.0.2:8002", "--audit-log", log.to_str().unwrap()],
        &[
            "/usr/bin/env",
            &path,
            &format!("HOME={}", d.display()),
            &format!("CARGO_HOME={}", home.display()),
            cargo.to_str().unwrap(),
            "fetch",
            "--manifest-path",
            manifest.to_str().unwrap(),
        ],
    );
    r.assert_code(0);
    let text = std::fs::read_to_string(&log).unwrap();
    let recs: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let found = installs(&recs);
    assert_eq!(found.len(), 1, "{recs:#?}");
    let rec = found[0];
    assert_eq!(
        (&rec["manager"], &rec["package"], &rec["version"]),
        (&"cargo".into(), &"tinycrate".into(), &"0.4.2".into()),
        "{rec}"
    );
    // The hash is of the bytes cargo wrote into its cache, which are the
    // registry's .crate.
    assert_eq!(rec["sha256"], sha256(&krate), "{rec}");
    assert_eq!(rec["source"], "download from 198.18.0.2:8002", "{rec}");
    let ev = rec["evidence"].as_array().unwrap();
    let cache = home.join("registry/cache");
    let download = ev
        .iter()
        .find(|e| e["kind"] == "wrote" && e["path"].as_str().unwrap().ends_with("/tinycrate-0.4.2.crate"))
        .unwrap_or_else(|| panic!("no written .crate in {rec}"));
    assert!(download["path"].as_str().unwrap().starts_with(cache.to_str().unwrap()), "{rec}");
    assert_eq!(download["sha256"], rec["sha256"], "{rec}");
    assert!(ev.iter().any(|e| e["kind"] == "connect" && e["address"] == "198.18.0.2" && e["port"] == 8002), "{rec}");
    assert!(!ev.iter().any(|e| e["kind"] == "read"), "cargo never reopens its download: {rec}");
    let mut verify = Command::new(husk_bin());
    verify.args(["audit", "verify"]).arg(&log);
    run(verify, None).assert_code(0);
}

#[test]
fn a_fake_unpacked_crate_without_its_crate_file_claims_no_source() {
    let dir = TempDir::new("audit-cargo-fake");
    let d = dir.path();
    // A program named cargo that writes what an unpacked crate looks like
    // (its folder, Cargo.toml and .cargo-ok) and no .crate.
    let src = d.join("home/registry/src/index.crates.io-1949cf8c6b5b557f/evil-6.6.6");
    let fake = format!(
        "#!/bin/sh\nmkdir -p {src} && printf '[package]\\nname = \"evil\"\\nversion = \"6.6.6\"\\n' > {src}/Cargo.toml \
         && printf '{{\"v\":1}}' > {src}/.cargo-ok\n",
        src = src.display()
    );
    std::fs::write(d.join("cargo"), fake).unwrap();
    std::fs::set_permissions(d.join("cargo"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (r, recs) = install(d, &["./cargo", "fetch"]);
    r.assert_code(0);
    let found = installs(&recs);
    assert_eq!(found.len(), 1, "{recs:#?}");
    let rec = found[0];
    assert_eq!(
        (&rec["package"], &rec["version"], &rec["source"]),
        (&"evil".into(), &"6.6.6".into(), &"unknown".into())
    );
    assert!(rec.get("sha256").is_none(), "{rec}");
    assert_eq!(kinds(rec), ["exec", "wrote", "wrote"], "{rec}");
    assert!(!rec.to_string().contains("sha256"), "no hash anywhere in its evidence: {rec}");
}
