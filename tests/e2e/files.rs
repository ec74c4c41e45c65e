//! File syscalls of issue 16 (`tests/guest/files.c`): fallocate,
//! preadv2/pwritev2, copy_file_range and O_TMPFILE, on each kind of
//! filesystem a guest writes to. Each run is checked natively on the host
//! filesystem Linux would give the same answers on: a tmpfs (/dev/shm)
//! for the sandbox's tmpfs, a disk filesystem for the overlay root and for
//! gofer-served volumes.

use crate::util::{guest_bin, husk_do, native, run, TempDir};

fn files(dir: &str, sections: &[&str]) -> Vec<String> {
    let mut argv = vec![guest_bin("files").to_string_lossy().into_owned(), dir.to_owned()];
    argv.extend(sections.iter().map(|s| (*s).to_owned()));
    argv
}

/// Runs `files DIR SECTIONS…` natively in `native_dir` and under husk in
/// `guest_dir` (with `extra` flags); both must pass.
fn check(native_dir: &str, extra: &[&str], guest_dir: &str, sections: &[&str]) {
    let nat = run(native(&files(native_dir, sections)), None);
    assert_eq!(nat.code, 0, "files FAILS NATIVELY in {native_dir}: the test is wrong, not husk\n{}", nat.describe());
    let sbx = run(husk_do(extra, &files(guest_dir, sections)), None);
    assert_eq!(sbx.code, 0, "files failed under husk in {guest_dir}\n{}", sbx.describe());
}

/// The sandbox's tmpfs (/tmp, /dev/shm) against the host's /dev/shm:
/// punch holes but no ZERO_RANGE, no RWF_NOWAIT on regular files.
#[test]
fn files_on_tmpfs() {
    check("/dev/shm", &[], "/dev/shm", &["fallocate", "nozero", "rw2", "nonowait", "cfr", "tmpfile"]);
    let sbx = run(husk_do(&[], &files("/tmp", &["fallocate", "nozero", "nonowait", "cfr", "tmpfile"])), None);
    assert_eq!(sbx.code, 0, "files failed under husk in /tmp\n{}", sbx.describe());
}

/// The overlay root (tmpfs over the host's files) against a disk
/// filesystem: ZERO_RANGE works there too.
#[test]
fn files_on_the_overlay() {
    check("/var/tmp", &[], "/var/tmp", &["fallocate", "zero", "rw2", "cfr", "tmpfile"]);
}

/// A gofer-served volume: fallocate through the gofer, RWF_NOWAIT reads
/// from the host file, O_TMPFILE files the gofer makes on the host and
/// links through its /proc/self/fd.
#[test]
fn files_on_a_gofer_volume() {
    let dir = TempDir::new("files-volume");
    let host = dir.path().to_string_lossy().into_owned();
    let volume = format!("{host}:/ws");
    check(&host, &["-v", &volume], "/ws", &["fallocate", "zero", "rw2", "nowait", "cfr", "tmpfile"]);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the guest's scratch directory is gone");
}

/// fallocate's growth is charged to the disk limit: past it, ENOSPC and
/// nothing held; within it, the blocks show.
#[test]
fn fallocate_is_charged_to_the_disk_limit() {
    let prog = "import os\n\
        fd = os.open('/tmp/big', os.O_RDWR | os.O_CREAT)\n\
        try:\n    os.posix_fallocate(fd, 0, 64 << 20)\n    print('allocated')\n\
        except OSError as e:\n    print(e.errno == 28, os.fstat(fd).st_size, os.fstat(fd).st_blocks)\n\
        os.posix_fallocate(fd, 0, 4 << 20)\n\
        print(os.fstat(fd).st_size, os.fstat(fd).st_blocks)\n";
    let r = run(husk_do(&["--disk-limit", "16M"], &["/usr/bin/python3", "-c", prog]), None);
    assert_eq!(r.code, 0, "{}", r.describe());
    assert_eq!(r.stdout_str(), "True 0 0\n4194304 8192\n", "{}", r.describe());
}
