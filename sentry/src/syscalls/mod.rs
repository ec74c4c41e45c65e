//! The system call table: every x86-64 number with its handler and support
//! level, one file per family. `husk syscalls` prints this table.
//!
//! Handlers are safe Rust: what they need from the host goes through the
//! safe wrappers of `crate::host`.

#![deny(unsafe_code)]

pub mod names;
pub mod strace;

mod arch_prctl;
mod args;
mod block;
mod capability;
mod common;
mod dir;
mod epoll;
mod fd;
mod file;
mod futex;
mod ids;
mod inet;
mod mmap;
mod mqueue;
mod netlink;
mod poll;
mod prctl;
mod process;
mod random;
mod rlimit;
mod sched;
mod session;
mod signal;
mod socket;
mod splice;
mod stat;
mod sysinfo;
mod thread;
mod time;
mod timer;
mod tty;
mod xattr;

use crate::abi::{Errno, SysResult};
use crate::kernel::Task;
use names::{MAX_SYSCALL, NAMES};

use std::sync::OnceLock;

/// A system call handler: the task and the six raw arguments.
pub type Handler = fn(&mut Task, [u64; 6]) -> SysResult;

/// How completely a system call is implemented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Full,
    /// Works for the common cases; the note says what is missing.
    Partial(&'static str),
    /// Returns ENOSYS (or the noted errno); the note says why.
    Unimplemented(&'static str),
}

/// A family's entries: (name, handler, support).
pub(crate) type Entries = &'static [(&'static str, Handler, Support)];

/// One row of the table.
#[derive(Clone, Copy)]
pub struct Syscall {
    pub nr: usize,
    pub name: &'static str,
    pub handler: Option<Handler>,
    pub support: Support,
}

fn families() -> [Entries; 26] {
    [
        epoll::ENTRIES,
        timer::ENTRIES,
        socket::ENTRIES,
        poll::ENTRIES,
        xattr::ENTRIES,
        futex::ENTRIES,
        file::ENTRIES,
        stat::ENTRIES,
        dir::ENTRIES,
        fd::ENTRIES,
        mmap::ENTRIES,
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
        sched::ENTRIES,
        splice::ENTRIES,
        mqueue::ENTRIES,
    ]
}

fn build() -> Vec<Syscall> {
    let mut table: Vec<Syscall> = NAMES
        .iter()
        .enumerate()
        .map(|(nr, &name)| Syscall { nr, name, handler: None, support: Support::Unimplemented("not implemented yet") })
        .collect();
    for (name, handler, support) in families().iter().flat_map(|f| f.iter()) {
        match NAMES.iter().position(|n| n == name) {
            Some(nr) => {
                table[nr].handler = Some(*handler);
                table[nr].support = *support;
            }
            None => log::error!("syscall table: unknown name {name}"),
        }
    }
    table
}

/// The whole table, by number.
pub fn table() -> &'static [Syscall] {
    static TABLE: OnceLock<Vec<Syscall>> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// The name of system call `nr`, for logs.
pub fn name(nr: u64) -> &'static str {
    usize::try_from(nr).ok().and_then(|n| NAMES.get(n)).copied().filter(|n| !n.is_empty()).unwrap_or("?")
}

/// Runs the handler of system call `nr`.
pub fn dispatch(task: &mut Task, nr: u64, args: [u64; 6]) -> SysResult {
    let Some(entry) = usize::try_from(nr).ok().filter(|&n| n <= MAX_SYSCALL).map(|n| table()[n]) else {
        return Err(Errno::ENOSYS);
    };
    match entry.handler {
        Some(h) => h(task, args),
        None => {
            task.kernel.report_unimplemented(entry.nr, entry.name);
            Err(Errno::ENOSYS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_entry_names_a_real_syscall() {
        let mut seen = std::collections::HashSet::new();
        for (name, _, _) in families().iter().flat_map(|f| f.iter()) {
            assert!(NAMES.contains(name), "{name} is not a syscall name");
            assert!(seen.insert(*name), "{name} registered twice");
        }
    }

    #[test]
    fn numbers_match_the_abi() {
        assert_eq!(NAMES[0], "read");
        assert_eq!(NAMES[59], "execve");
        assert_eq!(NAMES[231], "exit_group");
        assert_eq!(NAMES[257], "openat");
        assert_eq!(NAMES[332], "statx");
        assert_eq!(NAMES[439], "faccessat2");
    }
}
