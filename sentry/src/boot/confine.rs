//! Confinement of the sentry process itself (ARCHITECTURE.md §7): once
//! booted, it leaves the host's mount, IPC, UTS and network namespaces,
//! pivots into an empty read-only root and drops every capability, but
//! one when it holds secrets: `CAP_SYS_PTRACE`, effective and permitted
//! only (see [`Keep`]). Its seccomp filter (`seccomp.rs`) comes last.
//! Failing any step is fatal.

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

/// The capabilities the sentry keeps once confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// None at all.
    Nothing,
    /// `CAP_SYS_PTRACE`, in the effective and permitted sets only (the
    /// bounding, ambient and inheritable sets are empty, so no exec could
    /// pass it on): a sentry holding secrets is not dumpable, nor are its
    /// stubs, which inherit that, and the kernel lets a thread seize a
    /// non-dumpable process only with this capability; a guest's second
    /// thread is a new stub thread that another sentry thread seizes.
    /// What it can reach with it is bounded: the sentry is the first
    /// process of a pid namespace of its own (it can name only its stubs;
    /// the gofers and the runtime are outside it), its root is empty (no
    /// /proc), and its seccomp filter allows ptrace and nothing else that
    /// the capability opens. The stubs drop it (`platform::ptrace::stub`).
    Ptrace,
}

/// `CAP_SYS_PTRACE`'s number.
const CAP_SYS_PTRACE: u32 = 19;

/// New namespaces (the network's too unless `new_netns` is false: the
/// sentry joined one), an empty root, no capabilities but `keep`.
pub(crate) fn isolate(new_netns: bool, keep: Keep) -> Result<(), ConfineError> {
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    if new_netns {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    nix::sched::unshare(flags).map_err(fail("unshare"))?;
    empty_root()?;
    drop_capabilities(keep)
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
    drop_capabilities(Keep::Nothing)
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

/// Empties the calling thread's bounding, ambient and inheritable
/// capability sets, and its effective and permitted sets but for `keep`.
pub(crate) fn drop_capabilities(keep: Keep) -> Result<(), ConfineError> {
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
    let mut data = [CapData::default(); 2];
    if keep == Keep::Ptrace {
        data[0].effective = 1 << CAP_SYS_PTRACE;
        data[0].permitted = 1 << CAP_SYS_PTRACE;
    }
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

    fn caps_of(tid: nix::unistd::Pid) -> Vec<String> {
        let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
        ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]
            .iter()
            .map(|k| status.lines().find(|l| l.starts_with(k)).unwrap().to_string())
            .collect()
    }

    /// Keeping ptrace leaves CAP_SYS_PTRACE (bit 19) in the effective and
    /// permitted sets alone; capset can then lower them to nothing (what
    /// a stub does), and cannot raise them again.
    #[test]
    fn keeping_ptrace_keeps_it_alone_and_it_can_only_go() {
        if !nix::unistd::geteuid().is_root() {
            println!("skipped: dropping capabilities needs root's");
            return;
        }
        let t = std::thread::spawn(|| {
            drop_capabilities(Keep::Ptrace).unwrap();
            let kept = caps_of(nix::unistd::gettid());
            let header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
            let mut data = [CapData::default(); 2];
            // SAFETY: capset reads a header and two data structs of the v3 layout.
            let lowered = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
            let after = caps_of(nix::unistd::gettid());
            data[0].permitted = 1 << CAP_SYS_PTRACE;
            // SAFETY: as above.
            let raised = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
            let errno = std::io::Error::last_os_error().raw_os_error();
            (kept, lowered, after, raised, errno)
        });
        let (kept, lowered, after, raised, errno) = t.join().unwrap();
        let want = |p: &str| {
            vec![
                "CapInh:\t0000000000000000".to_string(),
                format!("CapPrm:\t{p}"),
                format!("CapEff:\t{p}"),
                "CapBnd:\t0000000000000000".into(),
                "CapAmb:\t0000000000000000".into(),
            ]
        };
        assert_eq!(kept, want("0000000000080000"));
        assert_eq!(lowered, 0);
        assert_eq!(after, want("0000000000000000"));
        assert_eq!((raised, errno), (-1, Some(libc::EPERM)));
    }
}
