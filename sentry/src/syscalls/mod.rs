//! The system call table: every x86-64 number with its handler and support
//! level, one file per family. `husk syscalls` prints this table.
//!
//! Handlers are safe Rust: what they need from the host goes through the
//! safe wrappers of `crate::host`.

#![deny(unsafe_code)]

pub mod names;
pub(crate) mod strace;

mod arch_prctl;
mod args;
mod audit_files;
mod block;
mod capability;
mod cmsg;
mod common;
mod copy_range;
mod dir;
mod dnotify;
mod egress;
mod epoll;
mod errqueue;
mod fd;
mod file;
mod fown;
mod fsize;
mod futex;
mod ids;
mod inbound;
mod inet;
mod inet_cmsg;
mod inotify;
mod ioprio;
mod keys;
mod membarrier;
mod mempolicy;
mod mlock;
mod mmap;
mod mmsg;
mod mount;
mod mqueue;
mod namespace;
mod netlink;
mod pidfd;
mod ping;
mod policy;
mod poll;
mod prctl;
mod process;
mod process_vm;
mod ptrace;
mod random;
mod rlimit;
mod rw_flags;
mod sched;
mod sched_policy;
mod seccomp;
mod session;
mod signal;
mod socket;
mod socket_ops;
mod sockopt;
mod sockopt_ip;
mod sockopt_mcast;
mod sockopt_tcp;
mod sockopt_udp;
mod splice;
mod stat;
mod sysinfo;
mod sysv_msg;
mod sysv_sem;
mod sysv_shm;
mod tcp_connect;
mod thread;
mod time;
mod timer;
mod unix;
mod xattr;

use crate::kernel::Kernel;
use names::{MAX_SYSCALL, NAMES};

use crate::kernel::{ControlHandler, ValueHandler};
pub use crate::kernel::{Handler, Support, Syscall};

/// A family's entries: (number, handler, support). The number is a
/// `libc::SYS_*` constant, so an entry names its call once.
pub(crate) type Entries = &'static [(libc::c_long, ValueHandler, Support)];

/// A family's calls whose handlers return a control outcome (an exit, a
/// replaced register file) rather than only a value.
pub(crate) type ControlEntries = &'static [(libc::c_long, ControlHandler, Support)];

const FAMILIES: [Entries; 46] = [
    epoll::ENTRIES,
    timer::ENTRIES,
    socket::ENTRIES,
    mmsg::ENTRIES,
    poll::ENTRIES,
    xattr::ENTRIES,
    futex::ENTRIES,
    file::ENTRIES,
    rw_flags::ENTRIES,
    copy_range::ENTRIES,
    stat::ENTRIES,
    dir::ENTRIES,
    fd::ENTRIES,
    mmap::ENTRIES,
    mlock::ENTRIES,
    mempolicy::ENTRIES,
    ids::ENTRIES,
    thread::ENTRIES,
    session::ENTRIES,
    sysinfo::ENTRIES,
    rlimit::ENTRIES,
    random::ENTRIES,
    prctl::ENTRIES,
    arch_prctl::ENTRIES,
    capability::ENTRIES,
    time::ENTRIES,
    signal::ENTRIES,
    process::ENTRIES,
    ptrace::ENTRIES,
    sched::ENTRIES,
    splice::ENTRIES,
    mqueue::ENTRIES,
    inotify::ENTRIES,
    sysv_shm::ENTRIES,
    sysv_sem::ENTRIES,
    sysv_msg::ENTRIES,
    seccomp::ENTRIES,
    pidfd::ENTRIES,
    policy::ENTRIES,
    mount::ENTRIES,
    namespace::ENTRIES,
    membarrier::ENTRIES,
    process_vm::ENTRIES,
    sched_policy::ENTRIES,
    ioprio::ENTRIES,
    keys::ENTRIES,
];

const CONTROL_FAMILIES: [ControlEntries; 3] = [process::CONTROL, signal::CONTROL, pidfd::CONTROL];

/// A row per number, 0 to MAX_SYSCALL.
const ROWS: usize = MAX_SYSCALL + 1;

/// The whole table, by number, built by the compiler: a number registered
/// twice, or one that is no system call, fails the build.
static TABLE: [Syscall; ROWS] = place(&FAMILIES, &CONTROL_FAMILIES);

/// Places every family's entries at their numbers; the rest are
/// unimplemented.
const fn place(families: &[Entries], control: &[ControlEntries]) -> [Syscall; ROWS] {
    let unset = Syscall { nr: 0, name: "", handler: None, support: Support::Unimplemented("not implemented yet") };
    let mut table = [unset; ROWS];
    let mut nr = 0;
    while nr < ROWS {
        table[nr].nr = nr;
        table[nr].name = NAMES[nr];
        nr += 1;
    }
    let mut f = 0;
    while f < families.len() {
        let mut e = 0;
        while e < families[f].len() {
            let (number, handler, support) = families[f][e];
            fill(&mut table[row_of(number)], Handler::Value(handler), support);
            e += 1;
        }
        f += 1;
    }
    let mut f = 0;
    while f < control.len() {
        let mut e = 0;
        while e < control[f].len() {
            let (number, handler, support) = control[f][e];
            fill(&mut table[row_of(number)], Handler::Control(handler), support);
            e += 1;
        }
        f += 1;
    }
    table
}

/// Gives `row` its handler.
const fn fill(row: &mut Syscall, handler: Handler, support: Support) {
    assert!(row.handler.is_none(), "a system call number is registered twice");
    assert!(!row.name.is_empty(), "a registered number has no system call name");
    row.handler = Some(handler);
    row.support = support;
}

/// The row of system call `number`. Const code has no checked integer
/// conversion; on x86-64 a c_long's bytes make a usize of the same value.
const fn row_of(number: libc::c_long) -> usize {
    let row = usize::from_ne_bytes(number.to_ne_bytes());
    assert!(number >= 0 && row < ROWS, "not an x86-64 system call number");
    row
}

/// The whole table, by number.
pub fn table() -> &'static [Syscall] {
    &TABLE
}

/// Makes `kernel` dispatch through this table: done once at start-up.
pub fn register(kernel: &Kernel) {
    kernel.register_syscall_table(&TABLE);
}

/// The name of system call `nr`, for logs.
pub(crate) fn name(nr: u64) -> &'static str {
    usize::try_from(nr).ok().and_then(|n| NAMES.get(n)).copied().filter(|n| !n.is_empty()).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_holds_its_number_and_name() {
        assert_eq!(table().len(), NAMES.len());
        for (nr, row) in table().iter().enumerate() {
            assert_eq!((row.nr, row.name), (nr, NAMES[nr]));
        }
    }

    #[test]
    fn every_entry_has_a_row_of_its_own() {
        let values = FAMILIES.iter().flat_map(|f| f.iter()).map(|&(n, h, s)| (n, Handler::Value(h), s));
        let controls = CONTROL_FAMILIES.iter().flat_map(|f| f.iter()).map(|&(n, h, s)| (n, Handler::Control(h), s));
        let entries: Vec<_> = values.chain(controls).collect();
        let handled = table().iter().filter(|r| r.handler.is_some()).count();
        assert_eq!(handled, entries.len(), "some number is registered twice");
        for (number, handler, support) in entries {
            let row = &table()[usize::try_from(number).unwrap()];
            let same = match (row.handler, handler) {
                (Some(Handler::Value(a)), Handler::Value(b)) => std::ptr::fn_addr_eq(a, b),
                (Some(Handler::Control(a)), Handler::Control(b)) => std::ptr::fn_addr_eq(a, b),
                _ => false,
            };
            assert!(same, "{}", row.name);
            assert_eq!(row.support, support);
        }
    }

    #[test]
    fn rows_are_found_by_libc_numbers() {
        assert_eq!(table()[usize::try_from(libc::SYS_execve).unwrap()].name, "execve");
        assert_eq!(table()[usize::try_from(libc::SYS_faccessat2).unwrap()].name, "faccessat2");
        assert_eq!(name(u64::try_from(libc::SYS_openat).unwrap()), "openat");
        assert_eq!(name(335), "?");
        assert_eq!(name(u64::MAX), "?");
    }
}
