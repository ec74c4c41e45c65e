//! What a file's ioctl knows of its caller. The VFS sits below the kernel,
//! so it cannot name a task: it owns this interface instead, and the kernel
//! implements it for the calling guest process (`kernel::caller::Caller`),
//! as gVisor's devpts reaches the task and its session through the context
//! an ioctl gets rather than the ioctl dispatch knowing terminals.

use super::FileDescription;
use crate::abi::Errno;
use crate::mm::MemoryManager;
use std::sync::Arc;

/// The guest process making an ioctl (or a call subject to job control).
pub trait IoctlContext {
    /// Its memory, where the ioctl's argument is.
    fn mm(&self) -> &MemoryManager;

    /// Whether its credentials carry capability `cap`.
    fn capable(&self, cap: u32) -> bool;

    /// Its process id.
    fn tgid(&self) -> i32;

    /// Its process group.
    fn pgid(&self) -> i32;

    /// Its session.
    fn sid(&self) -> i32;

    /// Whether its session already has a controlling terminal.
    fn session_has_terminal(&self) -> bool;

    /// The session of process group `pgid`, None when there is no such
    /// group.
    fn session_of_group(&self, pgid: i32) -> Option<i32>;

    /// Whether `sig` sent to it would be ignored or is blocked (job
    /// control then does not stop it).
    fn signal_held(&self, sig: i32) -> bool;

    /// Whether its process group is orphaned (no parent outside the group
    /// but in the session), which job control does not stop.
    fn group_orphaned(&self) -> bool;

    /// Sends `sig` to every process of group `pgid`, from the kernel.
    fn signal_group(&self, pgid: i32, sig: i32);

    /// Installs `f` at its lowest free descriptor.
    fn install(&self, f: Arc<FileDescription>, cloexec: bool) -> Result<i32, Errno>;

    /// The description its descriptor `fd` refers to (EBADF if none).
    fn file(&self, fd: i32) -> Result<Arc<FileDescription>, Errno>;
}
