//! Confinement of the gofer process to the sandbox root.
//!
//! The gofer gets a private mount namespace whose root is a non-recursive
//! bind mount of the sandbox root, so the host's other files, and the host
//! `/proc`, `/sys` and `/dev` mounted below the root, are out of reach (the
//! sentry provides those file systems itself).
//!
//! Not done here yet: dropping capabilities and installing the gofer's
//! seccomp filter of file syscalls come in a later change.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::{mount, umount2, MntFlags, MsFlags};
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;
use nix::sys::statvfs::FsFlags;

use crate::protocol::SINGLE_FILE;
use crate::Result;

/// Where the root is staged before pivot_root (in the gofer's own mount
/// namespace, so the host never sees it).
const STAGING_PARENT: &str = "/tmp";
const STAGING: &str = "/tmp/husk-gofer-root";

/// An error of the confinement step `step`.
fn failed(step: &str, errno: Errno) -> crate::Error {
    let kind = io::Error::from_raw_os_error(errno as i32).kind();
    crate::Error::Io(io::Error::new(kind, format!("confining the gofer: {step}: {}", errno.desc())))
}

fn open(path: &str, flags: OFlag) -> nix::Result<OwnedFd> {
    let raw = nix::fcntl::open(path, flags | OFlag::O_CLOEXEC, Mode::empty())?;
    // SAFETY: open just returned `raw`, a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Mount flags of the mount holding `root` that a remount must keep (the
/// kernel refuses to clear flags locked by a parent user namespace).
fn kept_flags(root: &Path) -> Result<MsFlags> {
    let st = nix::sys::statvfs::statvfs(root).map_err(|e| failed("statvfs of the root", e))?;
    let pairs = [
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    Ok(pairs
        .into_iter()
        .filter(|(st_flag, _)| st.flags().contains(*st_flag))
        .fold(MsFlags::empty(), |acc, (_, ms_flag)| acc | ms_flag))
}

/// Stages a one-file root: an otherwise empty, read-only directory holding
/// the file at `src` (bind-mounted, with the `remount` flags) under the
/// name [`SINGLE_FILE`], so nothing beside the file is served.
fn stage_single_file(src: &str, root: &Path, remount: MsFlags) -> Result<()> {
    // pivot_root needs the new root to be a mount point.
    mount(Some(STAGING), STAGING, None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(|e| failed("bind-mounting the staging directory", e))?;
    let name = String::from_utf8_lossy(SINGLE_FILE);
    let target = format!("{STAGING}/{name}");
    drop(open(&target, OFlag::O_CREAT | OFlag::O_WRONLY).map_err(|e| failed("creating the file's mount point", e))?);
    mount(Some(src), target.as_str(), None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(|e| failed(&format!("bind-mounting {}", root.display()), e))?;
    mount(None::<&str>, target.as_str(), None::<&str>, remount, None::<&str>)
        .map_err(|e| failed(&format!("remounting {}", root.display()), e))?;
    let sealed = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(None::<&str>, STAGING, None::<&str>, sealed, None::<&str>)
        .map_err(|e| failed("sealing the staging directory", e))?;
    Ok(())
}

/// Confines the calling process (or thread) to `root` (a directory, or a
/// single file served as the one entry of a directory), read-only at the
/// mount level if `read_only`, and returns an fd on the new root directory
/// and an fd on `/proc/self/fd` (opened before the host `/proc` went out of
/// reach; the server reopens `O_PATH` fds through it).
///
/// Steps: `PR_SET_NO_NEW_PRIVS`; a new mount namespace with every mount
/// private; a non-recursive bind mount of `root` onto itself, remounted
/// `nosuid,nodev` (and `ro`); `pivot_root` into it and a lazy unmount of the
/// old root.
pub fn enter_root(root: &Path, read_only: bool) -> Result<(OwnedFd, OwnedFd)> {
    nix::sys::prctl::set_no_new_privs().map_err(|e| failed("PR_SET_NO_NEW_PRIVS", e))?;
    nix::sched::unshare(CloneFlags::CLONE_NEWNS).map_err(|e| failed("unshare(CLONE_NEWNS)", e))?;
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| failed("making / private", e))?;
    let proc_fds =
        open("/proc/self/fd", OFlag::O_RDONLY | OFlag::O_DIRECTORY).map_err(|e| failed("opening /proc/self/fd", e))?;
    let kept = kept_flags(root)?;
    // The root is bind-mounted onto a staging directory (on a private
    // tmpfs) rather than onto itself, so that "/" can be served too:
    // pivot_root refuses a new root that is the current one.
    let root_src =
        open(&root.to_string_lossy(), OFlag::O_PATH).map_err(|e| failed(&format!("opening {}", root.display()), e))?;
    let kind = nix::sys::stat::fstat(std::os::fd::AsRawFd::as_raw_fd(&root_src))
        .map_err(|e| failed("stat of the root", e))?
        .st_mode
        & libc::S_IFMT;
    let src = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&root_src));
    mount(
        Some("tmpfs"),
        STAGING_PARENT,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("size=64k,mode=700"),
    )
    .map_err(|e| failed("mounting the staging tmpfs", e))?;
    nix::unistd::mkdir(STAGING, Mode::S_IRWXU).map_err(|e| failed("creating the staging directory", e))?;
    let mut remount = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | kept;
    if read_only {
        remount |= MsFlags::MS_RDONLY;
    }
    match kind {
        libc::S_IFDIR => {
            mount(Some(src.as_str()), STAGING, None::<&str>, MsFlags::MS_BIND, None::<&str>)
                .map_err(|e| failed(&format!("bind-mounting {}", root.display()), e))?;
            mount(None::<&str>, STAGING, None::<&str>, remount, None::<&str>)
                .map_err(|e| failed(&format!("remounting {}", root.display()), e))?;
        }
        libc::S_IFREG => stage_single_file(&src, root, remount)?,
        _ => return Err(failed(&format!("serving {}", root.display()), Errno::EINVAL)),
    }
    drop(root_src);
    nix::unistd::chdir(STAGING).map_err(|e| failed("chdir to the staged root", e))?;
    nix::unistd::pivot_root(".", ".").map_err(|e| failed("pivot_root", e))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(|e| failed("detaching the old root", e))?;
    nix::unistd::chdir("/").map_err(|e| failed("chdir to the new root", e))?;
    let root_fd = open("/", OFlag::O_PATH | OFlag::O_DIRECTORY).map_err(|e| failed("opening the new root", e))?;
    log::debug!("gofer: confined to {}", root.display());
    Ok((root_fd, proc_fds))
}
