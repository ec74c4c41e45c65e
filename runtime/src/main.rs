//! `husk`: the command-line front end. It speaks runc's and runsc's
//! command-line contract and starts the gofer and sentry processes of a
//! sandbox.

mod boot_cmd;
mod cli;
mod do_cmd;
mod gofer_cmd;
mod logging;
mod syscalls_cmd;

use clap::Parser;
use cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    if let Err(e) = logging::init(&cli.global) {
        eprintln!("husk: cannot open the debug log: {e:#}");
        std::process::exit(1);
    }
    let result = match cli.command {
        Command::Do(args) => do_cmd::run(&cli.global, args),
        Command::Boot(args) => boot_cmd::run(&cli.global, args),
        Command::Gofer(args) => gofer_cmd::run(args),
        Command::Syscalls(args) => syscalls_cmd::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            log::error!("{e:#}");
            eprintln!("husk: {e:#}");
            std::process::exit(125);
        }
    }
}
