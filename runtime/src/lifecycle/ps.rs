//! `husk ps`: a container's processes. `--format json` prints the host
//! pids that make up the sandbox, as runc does (Docker's `top` filters the
//! host's process table by them); the table lists the guest's processes
//! with their guest pids.

use crate::cli::{GlobalArgs, ListFormat, PsArgs};
use crate::oci::control;
use crate::oci::state::{StateRoot, Status};
use anyhow::bail;
use husk_sentry::api::boot::control::protocol::{ProcessRow, Request};

pub fn run(g: &GlobalArgs, args: PsArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    let status = c.status();
    match args.format {
        ListFormat::Json => {
            let pids: Vec<i32> = if status == Status::Stopped { Vec::new() } else { vec![c.record.sentry.pid] };
            println!("{}", serde_json::to_string(&pids)?);
        }
        ListFormat::Table => {
            if status == Status::Stopped {
                bail!("container not running");
            }
            println!("{:>7} {:>7} {:>7} CMD", "PID", "PPID", "UID");
            for line in control::call(&c.control_path(), Request::Processes)? {
                if let Some(p) = ProcessRow::decode(&line) {
                    println!("{:>7} {:>7} {:>7} {}", p.pid, p.ppid, p.uid, p.comm);
                }
            }
        }
    }
    Ok(0)
}
