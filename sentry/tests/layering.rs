//! The sentry's dependency direction (ARCHITECTURE.md §2), checked by
//! `tools/check_layering.py` on every test run: a module importing
//! against it (the kernel using a filesystem or the syscall layer, say)
//! fails the build's tests.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn checker() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/check_layering.py")
}

fn run(args: &[&Path]) -> Output {
    match Command::new("python3").arg(checker()).args(args).output() {
        Ok(o) => o,
        Err(e) => panic!("running tools/check_layering.py with python3: {e}"),
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn sentry_imports_point_down() {
    let o = run(&[]);
    assert!(o.status.success(), "the sentry's layering is broken:\n{}", text(&o));
}

/// The checker itself finds an upward import, a `super::` one, one in a
/// `{…}` group, and lets test modules and lower imports pass.
#[test]
fn checker_catches_upward_imports() {
    let dir = std::env::temp_dir().join(format!("husk-layering-{}", std::process::id()));
    let write = |rel: &str, body: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or(&dir)).unwrap();
        std::fs::write(p, body).unwrap();
    };
    write("lib.rs", "pub mod kernel;\npub mod vfs;\npub mod fs;\n");
    write("kernel/mod.rs", "use crate::vfs::Dentry;\n#[cfg(test)]\nmod tests {\n    use crate::fs::x;\n}\n");
    write("vfs/mod.rs", "// use crate::kernel::Task; (a comment)\n");
    write("fs/mod.rs", "use crate::kernel::Kernel;\n");
    let clean = run(&[Path::new("--root"), &dir]);
    assert!(clean.status.success(), "{}", text(&clean));

    write("kernel/task.rs", "use super::super::fs::pipe;\nfn f() { crate::fs::y(); }\n");
    write("vfs/walk.rs", "use crate::{abi::Errno, kernel::Task};\n");
    write("vfs/open.rs", "use crate::{\n    abi::Errno,\n    kernel::{Kernel, Task},\n};\n");
    let bad = run(&[Path::new("--root"), &dir]);
    let out = text(&bad);
    assert_eq!(bad.status.code(), Some(1), "{out}");
    assert!(out.contains("kernel/task.rs:1: kernel -> fs"), "{out}");
    assert!(out.contains("kernel/task.rs:2: kernel -> fs"), "{out}");
    assert!(out.contains("vfs/walk.rs:1: vfs -> kernel"), "{out}");
    assert!(out.contains("vfs/open.rs:1: vfs -> kernel"), "a group over several lines: {out}");
    assert!(out.contains("4 import(s)"), "{out}");

    write("mystery/mod.rs", "\n");
    let unknown = run(&[Path::new("--root"), &dir]);
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    std::fs::remove_dir_all(&dir).unwrap();
}
