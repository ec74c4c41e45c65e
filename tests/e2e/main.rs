//! husk end-to-end tests.
//!
//! * `guest`: self-checking C programs from `tests/guest/`, run natively
//!   (must pass) and then under `husk do` (must pass).
//! * `scenarios`: host binaries (coreutils, sh, python3) under `husk do`,
//!   compared byte for byte with the native run.
//! * `escape`: a guest confined with `--rootfs` must not reach host files.
//! * `confinement`: the sentry, its stubs and the gofer run under seccomp.
//! * `idle`: a guest blocked on idle files costs the sentry no CPU time.
//! * `debuggers`: strace and gdb inside the sandbox (guest ptrace).
//! * `audit_session`: one agent session through `husk do` and `husk run`,
//!   the same audit records both ways.
//! * `egress`: the egress gateway, in network namespaces the tests build.
//! * `icmp`: ICMP echo (unprivileged ping) through the gateway, likewise.
//! * `limits`: --timeout, --cpu-limit, --pids-limit and --nofile.
//! * `misc_syscalls`: process_vm_*, membarrier, sched_setattr, ioprio,
//!   namespaces by clone and setns.
//! * `secrets`: /run/secrets, TTLs and the redaction of secret values.
//! * `postgres`: PostgreSQL from Debian in a debootstrap root filesystem.
//! * `stress`: the multiprocess stress harness of `tests/stress/`.
//! * `sockets_exact`: socket corner cases (ancillary data, shutdown, mmsg,
//!   TCP errors and binding rules) against Linux, natively and under husk.
//! * `files`: fallocate, preadv2/pwritev2, copy_file_range and O_TMPFILE
//!   on tmpfs, the overlay and a gofer volume (`tests/guest/files.c`).
//! * `volume_append`: O_APPEND on a bind-mounted host file: appends at
//!   the host's end (a host writer loses nothing), append-only files.
//! * `workspace`: the disk limit, volumes, the working directory and the
//!   guest's environment under `husk do`.
//!
//! Every command runs with a 60 s timeout (then it is killed and the test
//! fails). Set `HUSK_E2E_ARGS="--platform ptrace --strace"` to add flags to
//! every `husk do`. See tests/README.md.

// Tests report failure by panicking, and unwrap-style shortcuts are fine in
// test code; the workspace denies these lints for production code.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod attacks;
mod audit;
mod audit_packages;
mod audit_session;
mod confinement;
mod debuggers;
mod egress;
mod escape;
mod files;
mod guest;
mod icmp;
mod idle;
mod inbound;
mod limits;
mod misc_syscalls;
mod oci;
mod postgres;
mod scenarios;
mod secrets;
mod sockets_exact;
mod stress;
mod util;
mod volume_append;
mod workspace;
