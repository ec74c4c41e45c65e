//! Confinement of the sentry process itself (ARCHITECTURE.md §7): once
//! booted, it leaves the host's mount, IPC, UTS and network namespaces,
//! pivots into an empty read-only root and drops every capability. Its
//! seccomp filter (`seccomp.rs`) comes last. Failing any step is fatal.

use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::CloneFlags;
use std::os::fd::OwnedFd;

/// Where the empty root is mounted before pivot_root, inside the sentry's
/// private mount namespace (the host never sees it).
const STAGING: &str = "/tmp";
/// The highest capability number to drop (the kernel refuses higher ones
/// with EINVAL, which ends the loop).
const CAP_LAST: u64 = 63;

#[derive(Debug, thiserror::Error)]
#[error("confining the sentry: {step}: {err}")]
pub struct ConfineError {
    step: &'static str,
    err: std::io::Error,
}

fn fail(step: &'static str) -> impl FnOnce(nix::errno::Errno) -> ConfineError {
    move |e| ConfineError { step, err: std::io::Error::from_raw_os_error(e as i32) }
}

/// Joins the network namespace `netns` names (a container engine may
/// have wired it already). Only the calling thread moves.
pub(crate) fn join_network(netns: OwnedFd) -> Result<(), ConfineError> {
    nix::sched::setns(netns, CloneFlags::CLONE_NEWNET).map_err(fail("joining the network namespace"))
}

/// New namespaces (the network's too unless `new_netns` is false: the
/// sentry joined one), an empty root, no capabilities.
pub(crate) fn isolate(new_netns: bool) -> Result<(), ConfineError> {
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    if new_netns {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    nix::sched::unshare(flags).map_err(fail("unshare"))?;
    empty_root()?;
    drop_capabilities()
}

/// Confines the calling thread alone: the egress gateway's, which stays
/// in the outer network namespace, gets mount, IPC and UTS namespaces of
/// its own (each is per thread: unshare refuses only what a thread
/// shares with its group, such as the address space or a user
/// namespace), the same empty root and no capabilities, so it keeps
/// nothing of the host but that network namespace.
pub(crate) fn confine_thread() -> Result<(), ConfineError> {
    let flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    nix::sched::unshare(flags).map_err(fail("unshare"))?;
    empty_root()?;
    drop_capabilities()
}

/// In a fresh mount namespace: an empty, read-only root instead of the
/// host's.
fn empty_root() -> Result<(), ConfineError> {
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(fail("making mounts private"))?;
    let fs_flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(Some("tmpfs"), STAGING, Some("tmpfs"), fs_flags, Some("size=4k,mode=0555"))
        .map_err(fail("mounting the empty root"))?;
    nix::unistd::chdir(STAGING).map_err(fail("entering the empty root"))?;
    nix::unistd::pivot_root(".", ".").map_err(fail("pivot_root"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(fail("detaching the host's root"))?;
    nix::unistd::chdir("/").map_err(fail("chdir /"))?;
    let ro = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | fs_flags;
    mount(None::<&str>, "/", None::<&str>, ro, None::<&str>).map_err(fail("making the root read-only"))
}

/// Empties the calling thread's bounding, ambient, effective, permitted
/// and inheritable capability sets.
pub(crate) fn drop_capabilities() -> Result<(), ConfineError> {
    for cap in 0..=CAP_LAST {
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(ConfineError { step: "dropping the bounding set", err: std::io::Error::last_os_error() });
        }
    }
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) } != 0 {
        return Err(ConfineError { step: "clearing ambient capabilities", err: std::io::Error::last_os_error() });
    }
    let header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads a header and two data structs of the v3 layout.
    if unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) } != 0 {
        return Err(ConfineError { step: "capset", err: std::io::Error::last_os_error() });
    }
    Ok(())
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn ns(task: &str, kind: &str) -> std::path::PathBuf {
        std::fs::read_link(format!("/proc/self/{task}ns/{kind}")).unwrap()
    }

    #[test]
    fn a_confined_thread_leaves_the_mount_ipc_and_uts_namespaces_alone() {
        if !nix::unistd::geteuid().is_root() {
            println!("skipped: confining a thread needs root");
            return;
        }
        let (tid_tx, tid_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let r = confine_thread().map_err(|e| e.to_string());
            let _ = tid_tx.send((nix::unistd::gettid(), r));
            let _ = done_rx.recv();
        });
        let (tid, r) = tid_rx.recv().unwrap();
        r.unwrap();
        for kind in ["mnt", "ipc", "uts"] {
            assert_ne!(ns(&format!("task/{tid}/"), kind), ns("", kind), "{kind}");
        }
        assert_eq!(ns(&format!("task/{tid}/"), "net"), ns("", "net"), "the network namespace stays");
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }
}
