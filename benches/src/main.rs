//! husk-bench: isolation-overhead benchmarks.

fn main() -> anyhow::Result<()> {
    anyhow::bail!("no benchmarks yet")
}
