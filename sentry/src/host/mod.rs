//! The host calls the sentry's system call handlers need (clocks, CPU
//! times, the host's name, memory and CPUs), behind safe wrappers, so that
//! the handlers themselves are safe Rust. A leaf of the sentry: it uses
//! only `abi`, std, libc and nix.

mod clock;
mod info;

pub use clock::{clock_resolution, clock_time, cpu_times, monotonic_now};
pub use info::{cpus, current_cpu, prime_info, total_ram, uts};
