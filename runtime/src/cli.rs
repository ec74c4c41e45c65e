//! Command-line syntax.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "husk", version, about = "A user-space-kernel sandbox runtime", disable_help_subcommand = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts (runc/runsc place them before the command).
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Where container state lives.
    #[arg(long, global = true, default_value = "/run/husk")]
    pub root: PathBuf,
    /// The platform that runs guest code.
    #[arg(long, global = true, value_enum, default_value_t = PlatformKind::Ptrace)]
    pub platform: PlatformKind,
    /// Write diagnostics (and --strace output) to this file.
    #[arg(long, global = true)]
    pub debug_log: Option<PathBuf>,
    /// More verbose diagnostics.
    #[arg(long, global = true)]
    pub debug: bool,
    /// Log every guest system call.
    #[arg(long, global = true)]
    pub strace: bool,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformKind {
    Ptrace,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command in a fresh sandbox over the host's root filesystem
    /// (read-only below an in-memory overlay).
    Do(DoArgs),
    /// Internal: the sentry process of a sandbox.
    #[command(hide = true)]
    Boot(BootArgs),
    /// Internal: the gofer process of a sandbox.
    #[command(hide = true)]
    Gofer(GoferArgs),
    /// Print the system call table: number, name, support level, note.
    Syscalls(SyscallsArgs),
}

#[derive(Args, Debug)]
pub struct DoArgs {
    /// Use DIR as the root filesystem instead of the host's /.
    #[arg(long, value_name = "DIR")]
    pub rootfs: Option<PathBuf>,
    /// Guest memory limit in MiB.
    #[arg(long, default_value_t = 4096)]
    pub memory_mb: u64,
    /// The command and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct BootArgs {
    /// The descriptor of the gofer connection.
    #[arg(long)]
    pub gofer_fd: i32,
    /// The working directory inside the sandbox.
    #[arg(long, default_value = "/")]
    pub cwd: std::ffi::OsString,
    #[arg(long, default_value_t = 4096)]
    pub memory_mb: u64,
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Args, Debug)]
pub struct GoferArgs {
    /// The root filesystem to serve.
    #[arg(long)]
    pub rootfs: PathBuf,
    /// The descriptor of the sentry connection.
    #[arg(long)]
    pub sock_fd: i32,
    /// Refuse every modification.
    #[arg(long)]
    pub read_only: bool,
}

#[derive(Args, Debug)]
pub struct SyscallsArgs {
    /// Only the rows with this support level.
    #[arg(long, value_enum)]
    pub level: Option<LevelFilter>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelFilter {
    Full,
    Partial,
    Unimplemented,
}
