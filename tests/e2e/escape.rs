//! Attack tests: a guest confined to `--rootfs DIR` must not reach a host file
//! outside DIR, whatever path tricks it uses.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::util::{guest_bin, husk_do, run, TempDir};

/// 32 random bytes from the host, hex-encoded.
fn random_hex() -> String {
    let mut b = [0u8; 32];
    let mut f = fs::File::open("/dev/urandom").expect("open /dev/urandom");
    f.read_exact(&mut b).expect("read /dev/urandom");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// path → (is_symlink, symlink target or file contents) for everything under
/// `root`, so the host tree can be compared before and after the run.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, (bool, Vec<u8>)> {
    fn walk(p: &Path, out: &mut BTreeMap<PathBuf, (bool, Vec<u8>)>) {
        let Ok(meta) = fs::symlink_metadata(p) else {
            return;
        };
        if meta.file_type().is_symlink() {
            let t = fs::read_link(p).map(|t| t.into_os_string().into_encoded_bytes());
            out.insert(p.to_path_buf(), (true, t.unwrap_or_default()));
        } else if meta.is_dir() {
            out.insert(p.to_path_buf(), (false, Vec::new()));
            if let Ok(rd) = fs::read_dir(p) {
                for e in rd.flatten() {
                    walk(&e.path(), out);
                }
            }
        } else {
            out.insert(p.to_path_buf(), (false, fs::read(p).unwrap_or_default()));
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// Layout (all on the host, under $CARGO_TARGET_TMPDIR):
/// ```text
/// BASE/secret-<id>                      the target, random contents
/// BASE/rootfs/bin/escape_probe          static probe (tests/guest/escape_probe.c)
/// BASE/rootfs/etc/  BASE/rootfs/tmp/
/// BASE/rootfs/abs      -> /
/// BASE/rootfs/up       -> ../../../../..
/// BASE/rootfs/hostlink -> BASE/secret-<id>   (absolute host path)
/// ```
/// The probe is deliberately NOT run natively: without a sandbox its first
/// attempt (open of the absolute host path) reads the secret. It is the one
/// guest program exempt from the "must pass natively" rule.
#[test]
fn rootfs_escape_attempts_fail() {
    let base = TempDir::new("escape");
    let secret_content = format!("HUSK-SECRET-{}", random_hex());
    let basename = format!("secret-{}", &random_hex()[..16]);
    let secret = base.path().join(&basename);
    fs::write(&secret, &secret_content).expect("write secret");
    let secret = fs::canonicalize(&secret).expect("canonicalize secret");

    let rootfs = base.path().join("rootfs");
    for d in ["bin", "etc", "tmp"] {
        fs::create_dir_all(rootfs.join(d)).expect("mkdir rootfs");
    }
    fs::set_permissions(rootfs.join("tmp"), fs::Permissions::from_mode(0o1777)).expect("chmod tmp");
    fs::copy(guest_bin("escape_probe"), rootfs.join("bin/escape_probe")).expect("copy probe");
    symlink("/", rootfs.join("abs")).expect("symlink abs");
    symlink("../../../../..", rootfs.join("up")).expect("symlink up");
    symlink(&secret, rootfs.join("hostlink")).expect("symlink hostlink");

    let before = snapshot(base.path());
    let secret_arg = secret.to_string_lossy().into_owned();
    let rootfs_arg = rootfs.to_string_lossy().into_owned();
    let sbx = run(husk_do(&["--rootfs", &rootfs_arg], &["/bin/escape_probe", &secret_arg, &basename]), None);
    let after = snapshot(base.path());

    let out = sbx.stdout_str();
    assert!(
        !out.contains(&secret_content) && !sbx.stderr_str().contains(&secret_content),
        "SANDBOX ESCAPE: the guest read the host secret\n{}",
        sbx.describe()
    );
    assert!(
        out.contains("escape_probe: done"),
        "the probe did not run to completion inside the sandbox\n{}",
        sbx.describe()
    );
    assert_eq!(sbx.code, 0, "the probe opened a file it should not reach (see OPENED lines)\n{}", sbx.describe());
    assert_eq!(
        fs::read_to_string(&secret).ok().as_deref(),
        Some(secret_content.as_str()),
        "the host secret was modified"
    );
    if before != after {
        let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
        let removed: Vec<_> = before.keys().filter(|k| !after.contains_key(*k)).collect();
        let changed: Vec<_> =
            before.iter().filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v)).map(|(k, _)| k).collect();
        panic!(
            "guest writes reached the host around the rootfs:\n added {added:?}\n \
             removed {removed:?}\n changed {changed:?}\n{}",
            sbx.describe()
        );
    }
}
