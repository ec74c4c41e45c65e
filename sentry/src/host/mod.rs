//! The host calls the sentry's system call handlers and files need
//! (clocks, CPU times, the host's name, memory and CPUs, host descriptors),
//! behind safe wrappers, so that handlers and filesystems are safe Rust. A leaf of the sentry: it uses
//! only `abi`, std, libc and nix.

mod clock;
pub(crate) mod fd;
mod info;
pub(crate) mod membarrier;
pub(crate) mod outer;
pub(crate) mod socket;

pub(crate) use clock::{
    clock_resolution, clock_time, cpu_clock_time, monotonic_now, own_thread_cpu_clock, process_cpu_clock,
};
pub(crate) use info::{cpus, current_cpu, prime_info, total_ram, uts};
