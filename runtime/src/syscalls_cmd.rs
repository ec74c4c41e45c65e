//! `husk syscalls`: the compatibility table, generated from the sentry's
//! own system call table.

use crate::cli::{LevelFilter, SyscallsArgs};
use husk_sentry::api::syscalls::{table, Support};
use std::io::Write;

pub fn run(args: SyscallsArgs) -> anyhow::Result<i32> {
    match print(&args) {
        // A reader that stopped early (`husk syscalls | head`) is fine.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(0),
        other => other.map(|()| 0).map_err(Into::into),
    }
}

fn print(args: &SyscallsArgs) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:>4}  {:<24} {:<14} NOTE", "NR", "NAME", "LEVEL")?;
    for s in table().iter().filter(|s| !s.name.is_empty()) {
        let (level, note, filter) = match s.support {
            Support::Full => ("Full", "", LevelFilter::Full),
            Support::Partial(n) => ("Partial", n, LevelFilter::Partial),
            Support::Unimplemented(n) => ("Unimplemented", n, LevelFilter::Unimplemented),
        };
        if args.level.is_some_and(|l| l != filter) {
            continue;
        }
        writeln!(out, "{:>4}  {:<24} {:<14} {}", s.nr, s.name, level, note)?;
    }
    Ok(())
}
