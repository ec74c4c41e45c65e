//! `husk`: the command-line front end. It speaks runc's and runsc's
//! command-line contract and starts the gofer and sentry processes of a
//! sandbox.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

mod audit_cmd;
mod boot_cmd;
mod cli;
mod do_cgroup;
mod do_cmd;
mod egress;
mod gofer_cmd;
mod guest_env;
mod install_cmd;
mod lifecycle;
mod limits;
mod logging;
mod oci;
mod sandbox;
mod secrets;
mod syscalls_cmd;
mod volume;

use clap::Parser;
use cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    let sandbox_side = matches!(cli.command, Command::Boot(_) | Command::Gofer(_));
    if let Err(e) = logging::init(&cli.global, sandbox_side) {
        eprintln!("husk: cannot open the debug log: {e:#}");
        std::process::exit(1);
    }
    // `husk do` fails like `docker run` (125); the OCI commands like runc (1).
    let failure = if matches!(cli.command, Command::Do(_) | Command::Boot(_) | Command::Gofer(_)) { 125 } else { 1 };
    let g = &cli.global;
    // A sandbox's network flags are checked before anything starts.
    let starts_sandbox = matches!(cli.command, Command::Do(_) | Command::Run(_) | Command::Create(_));
    if let Err(e) = starts_sandbox.then(|| egress::network(g)).transpose() {
        log::error!(target: logging::EXIT_TARGET, "{e:#}");
        eprintln!("husk: {e:#}");
        std::process::exit(failure);
    }
    let result = match cli.command {
        Command::Do(args) => do_cmd::run(g, args),
        Command::Boot(args) => boot_cmd::run(g, *args),
        Command::Gofer(args) => gofer_cmd::run(args),
        Command::Syscalls(args) => syscalls_cmd::run(args),
        Command::Create(args) => lifecycle::create::run(g, args),
        Command::Start(args) => lifecycle::start::run(g, args),
        Command::State(args) => lifecycle::state::run(g, args),
        Command::Kill(args) => lifecycle::kill::run(g, args),
        Command::Delete(args) => lifecycle::delete::run(g, args),
        Command::Run(args) => lifecycle::run::run(g, args),
        Command::List(args) => lifecycle::list::run(g, args),
        Command::Ps(args) => lifecycle::ps::run(g, args),
        Command::Spec(args) => lifecycle::spec::run(g, args),
        Command::Exec(args) => lifecycle::exec::run(g, args),
        Command::ExecWait(args) => lifecycle::exec::wait(args),
        Command::Pause(args) => lifecycle::pause::pause(g, args),
        Command::Resume(args) => lifecycle::pause::resume(g, args),
        Command::Update(args) => lifecycle::update::run(g, args),
        Command::Events(args) => lifecycle::events::run(g, args),
        Command::Wait(args) => lifecycle::wait::run(g, args),
        Command::Features => lifecycle::features::run(g),
        Command::Install(args) => install_cmd::install(args),
        Command::Uninstall(args) => install_cmd::uninstall(args),
        Command::Audit(args) => audit_cmd::run(g, args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            log::error!(target: logging::EXIT_TARGET, "{e:#}");
            // (In the sentry, stderr is the guest's: no secret value.)
            eprintln!("husk: {}", husk_sentry::api::audit::redact::redact_text(&format!("{e:#}")));
            std::process::exit(failure);
        }
    }
}
