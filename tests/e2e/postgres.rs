//! PostgreSQL from Debian in a debootstrap root filesystem, as a new user
//! would run it: `initdb`, `pg_ctl start`, queries over the Unix socket and
//! TCP loopback (a parallel query among them: dynamic shared memory, the
//! postmaster's latches and signals), `pg_ctl stop`.
//!
//! The root filesystem is a fixture `.ci/run` builds when it is missing
//! (`debootstrap --variant=minbase --include=postgresql bookworm`, about a
//! minute with a nearby mirror, 630 MB) in `$HUSK_TEST_CACHE` (default
//! /var/cache/husk-tests)/postgres-rootfs; without it the test says so and
//! passes.

use crate::util::{husk_do, run};
use std::path::PathBuf;

/// The fixture's root filesystem, if it was built.
fn postgres_rootfs() -> Option<PathBuf> {
    let cache =
        std::env::var_os("HUSK_TEST_CACHE").map_or_else(|| PathBuf::from("/var/cache/husk-tests"), PathBuf::from);
    let root = cache.join("postgres-rootfs");
    let versions = std::fs::read_dir(root.join("usr/lib/postgresql")).ok()?;
    versions.flatten().any(|v| v.path().join("bin/postgres").is_file()).then_some(root)
}

/// Run as the `postgres` user; the server's log is shown on failure, and
/// its warnings and errors are printed to be asserted absent.
const SCRIPT: &str = r#"
B=$(ls -d /usr/lib/postgresql/*/bin | tail -n 1)
"$B/initdb" -D /tmp/pg -A trust >/tmp/initdb.log 2>&1 || { cat /tmp/initdb.log >&2; exit 2; }
"$B/pg_ctl" -D /tmp/pg -l /tmp/pg.log -o "-k /tmp -c listen_addresses=127.0.0.1" start -w -t 40 >&2 ||
  { cat /tmp/pg.log >&2; exit 3; }
psql -h /tmp -At -c 'select 1' || exit 4
psql -h 127.0.0.1 -At -c 'create table t as select generate_series(1, 100000) x' \
  -c 'set force_parallel_mode = on' -c 'select sum(x) from t' -c 'checkpoint' || exit 5
"$B/pg_ctl" -D /tmp/pg stop -w -m fast >&2 || exit 6
grep -E 'WARNING|ERROR|FATAL|PANIC' /tmp/pg.log
cat /tmp/pg.log >&2
exit 0
"#;

#[test]
fn postgresql_initdb_start_query_stop() {
    let Some(root) = postgres_rootfs() else {
        println!("skipped: no PostgreSQL root filesystem in the test cache (.ci/run builds it with debootstrap)");
        return;
    };
    let root = root.to_string_lossy().into_owned();
    let argv = ["/bin/su", "postgres", "-s", "/bin/sh", "-c", SCRIPT];
    let sbx = run(husk_do(&["--rootfs", &root, "--timeout", "55s"], &argv), None);
    assert_eq!(
        (sbx.code, sbx.stdout_str().as_str()),
        (0, "1\nSELECT 100000\nSET\n5000050000\nCHECKPOINT\n"),
        "PostgreSQL under husk:\n{}",
        sbx.describe()
    );
}
