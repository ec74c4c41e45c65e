//! O_APPEND on a bind-mounted host file: the guest's appends land at the
//! end the host file has at that moment (a host writer appending meanwhile
//! loses nothing), and an append-only host file (`chattr +a`) behaves as
//! Linux makes it: it opens for writing only with O_APPEND, and pwrite,
//! RWF_NOAPPEND, F_SETFL and ftruncate are answered as natively.

use crate::util::{husk_do, native, run, TempDir};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How many lines the guest appends.
const GUEST_LINES: usize = 3000;

/// The guest appends its lines while a host thread appends its own to the
/// same file, until the guest is done: every line of both is there once,
/// whole.
#[test]
fn guest_and_host_appends_interleave_without_loss() {
    let dir = TempDir::new("volume-append");
    let log = dir.path().join("log");
    std::fs::write(&log, b"").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let host = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                f.write_all(format!("host {n}\n").as_bytes()).unwrap();
                n += 1;
                if n % 64 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
            n
        })
    };
    let prog = format!(
        "import os\n\
         fd = os.open('/ws/log', os.O_WRONLY | os.O_APPEND)\n\
         for i in range({GUEST_LINES}):\n    os.write(fd, b'guest %d\\n' % i)\n"
    );
    let volume = format!("{}:/ws", dir.path().display());
    let r = run(husk_do(&["-v", &volume], &["/usr/bin/python3", "-c", &prog]), None);
    stop.store(true, Ordering::Relaxed);
    let host_lines = host.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.describe());
    let text = std::fs::read_to_string(&log).unwrap();
    let (mut guest, mut host) = (vec![0u32; GUEST_LINES], vec![0u32; host_lines]);
    for line in text.lines() {
        let (who, n) = line.split_once(' ').unwrap_or_else(|| panic!("a torn line {line:?}"));
        let n: usize = n.parse().unwrap_or_else(|_| panic!("a torn line {line:?}"));
        match who {
            "guest" => guest[n] += 1,
            "host" => host[n] += 1,
            _ => panic!("a torn line {line:?}"),
        }
    }
    let lost = |counts: &[u32]| counts.iter().filter(|&&c| c != 1).count();
    assert_eq!(lost(&host), 0, "host lines lost or doubled (of {host_lines}); the guest overwrote them");
    assert_eq!(lost(&guest), 0, "guest lines lost or doubled (of {GUEST_LINES})");
    assert!(host_lines > 0, "the host wrote while the guest did");
}

/// What a program does with the append-only file it is given, printed
/// one answer a line.
const APPEND_ONLY: &str = r#"import errno, fcntl, os, sys
p = sys.argv[1]
def t(what, f):
    try:
        print(what, 'ok', f())
    except OSError as e:
        print(what, errno.errorcode[e.errno])
t('open O_WRONLY', lambda: os.close(os.open(p, os.O_WRONLY)))
t('open O_RDWR', lambda: os.close(os.open(p, os.O_RDWR)))
t('open O_WRONLY|O_APPEND|O_TRUNC', lambda: os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_TRUNC)))
fd = os.open(p, os.O_WRONLY | os.O_APPEND)
t('write', lambda: os.write(fd, b'one\n'))
t('position', lambda: os.lseek(fd, 0, os.SEEK_CUR))
t('pwrite at 0', lambda: os.pwrite(fd, b'two\n', 0))
t('pwritev2 RWF_NOAPPEND', lambda: os.pwritev(fd, [b'no\n'], 0, 0x20))
t('pwritev2 RWF_APPEND', lambda: os.pwritev(fd, [b'three\n'], 1, os.RWF_APPEND))
t('F_SETFL without O_APPEND', lambda: fcntl.fcntl(fd, fcntl.F_SETFL, 0))
t('ftruncate', lambda: os.ftruncate(fd, 0))
t('write', lambda: os.write(fd, b'four\n'))
t('position', lambda: os.lseek(fd, 0, os.SEEK_CUR))
print(repr(open(p).read()))
"#;

/// Makes `file` (holding "start\n") append-only; false where the host
/// cannot (no CAP_LINUX_IMMUTABLE, or a filesystem without the flag).
fn append_only(file: &Path) -> bool {
    std::fs::write(file, b"start\n").unwrap();
    let r = run(native(&["chattr", "+a", &file.to_string_lossy()]), None);
    if r.code != 0 {
        eprintln!("SKIPPED: cannot make {} append-only here: {}", file.display(), r.stderr_str().trim());
    }
    r.code == 0
}

fn clear_append_only(file: &Path) {
    run(native(&["chattr", "-a", &file.to_string_lossy()]), None);
}

#[test]
fn an_append_only_host_file_is_appended_to_as_natively() {
    let dir = TempDir::new("volume-append-only");
    let (nat_file, sbx_file) = (dir.path().join("native"), dir.path().join("guest"));
    if !append_only(&nat_file) {
        return;
    }
    let nat = run(native(&["/usr/bin/python3", "-c", APPEND_ONLY, &nat_file.to_string_lossy()]), None);
    clear_append_only(&nat_file);
    assert!(append_only(&sbx_file));
    let volume = format!("{}:/ws", dir.path().display());
    let sbx = run(husk_do(&["-v", &volume], &["/usr/bin/python3", "-c", APPEND_ONLY, "/ws/guest"]), None);
    clear_append_only(&sbx_file);
    assert_eq!(nat.code, 0, "the program FAILS NATIVELY: the test is wrong\n{}", nat.describe());
    let want = "open O_WRONLY EPERM\n\
        open O_RDWR EPERM\n\
        open O_WRONLY|O_APPEND|O_TRUNC EPERM\n\
        write ok 4\n\
        position ok 10\n\
        pwrite at 0 ok 4\n\
        pwritev2 RWF_NOAPPEND EPERM\n\
        pwritev2 RWF_APPEND ok 6\n\
        F_SETFL without O_APPEND EPERM\n\
        ftruncate EPERM\n\
        write ok 5\n\
        position ok 25\n\
        'start\\none\\ntwo\\nthree\\nfour\\n'\n";
    assert_eq!(nat.stdout_str(), want, "Linux answers otherwise than the test says\n{}", nat.describe());
    assert_eq!(sbx.code, 0, "{}", sbx.describe());
    assert_eq!(sbx.stdout_str(), want, "{}", sbx.describe());
}
