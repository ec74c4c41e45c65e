//! `husk wait` (runsc's): blocks until a container's process ends and
//! prints its status as JSON; exits with it too.

use crate::cli::{GlobalArgs, IdArgs};
use crate::oci::control;
use crate::oci::state::{StateRoot, Status};
use anyhow::bail;

pub fn run(g: &GlobalArgs, args: IdArgs) -> anyhow::Result<i32> {
    let c = StateRoot::new(&g.root).open(&args.id)?;
    if c.status() == Status::Stopped {
        bail!("container not running");
    }
    let path = c.control_path();
    // Other commands (kill, delete) must not wait for our lock.
    drop(c);
    let code = control::wait(&path)?.code();
    println!("{}", serde_json::json!({ "id": args.id, "exitStatus": code }));
    Ok(code)
}
