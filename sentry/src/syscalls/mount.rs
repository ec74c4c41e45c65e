//! System calls: `mount`, `umount2`, `pivot_root` and `chroot`, inside the
//! sandbox's mount namespaces (gVisor's `sys_mount.go` serves the same
//! privileged guest). The guest may mount only filesystems the sentry
//! implements itself (tmpfs, proc, sysfs, devpts, mqueue, cgroup2) and
//! bind what it can already reach; a type that would reach the host
//! (ext4, nfs, fuse, overlay …) is refused with EPERM and recorded as
//! `policy.denied`. Mounts the runtime made are locked: the guest cannot
//! unmount them, move them or make them writable, so nothing beneath a
//! runtime mount (say /run/secrets) and nothing outside the root ever
//! becomes reachable.

use super::args;
use super::audit_files::{view_change, ViewChange};
use super::policy;
use super::{Entries, Support};
use crate::abi::fcntl::AT_FDCWD_ARG;
use crate::abi::{Errno, SysResult, PAGE_SIZE};
use crate::auth::caps::{CAP_SYS_ADMIN, CAP_SYS_CHROOT};
use crate::fs::devpts::Devpts;
use crate::fs::disk::SandboxDisk;
use crate::fs::read_only::ReadOnly;
use crate::fs::tmpfs::{Tmpfs, TmpfsLimits};
use crate::kernel::Task;
use crate::vfs::dentry::same;
use crate::vfs::dentry::{
    MNT_NOATIME, MNT_NODEV, MNT_NODIRATIME, MNT_NOEXEC, MNT_NOSUID, MNT_NOSYMFOLLOW, MNT_READONLY, MNT_RELATIME,
};
use crate::vfs::mounts::Change;
use crate::vfs::perm::{self, MAY_EXEC};
use crate::vfs::{Dentry, MountNamespace, MountOpts, Node, Propagation, S_IFDIR, S_IFMT};
use std::sync::Arc;

pub(super) const ENTRIES: Entries = &[
    (
        libc::SYS_mount,
        sys_mount,
        Support::Partial(
            "tmpfs, proc, sysfs, devpts, mqueue, cgroup2 and binds within the sandbox; devpts without newinstance is \
             the sandbox's own instance, with newinstance a new one with a ptmx of its own (ptmxmode=) numbering \
             its terminals from 0 (mode=, gid= and max= accepted without effect: terminals are 0620, group tty); tmpfs \
             size=/nr_blocks=/nr_inodes= enforced; ro, nosuid, nodev, noexec and nosymfollow enforced and changed \
             in place by a remount; noatime/nodiratime/strictatime shown in mountinfo and statfs but reads keep \
             relatime; propagation recorded, not propagated; host filesystems EPERM (policy.denied)",
        ),
    ),
    (libc::SYS_umount2, sys_umount2, Support::Partial("MNT_EXPIRE is EINVAL; runtime mounts are locked (EINVAL)")),
    (libc::SYS_pivot_root, sys_pivot_root, Support::Partial("within the caller's mount namespace")),
    (libc::SYS_chroot, sys_chroot, Support::Full),
];

const MS_RDONLY: u64 = libc::MS_RDONLY;
const MS_NOSUID: u64 = libc::MS_NOSUID;
const MS_NODEV: u64 = libc::MS_NODEV;
const MS_NOEXEC: u64 = libc::MS_NOEXEC;
const MS_NOATIME: u64 = libc::MS_NOATIME;
const MS_NODIRATIME: u64 = libc::MS_NODIRATIME;
const MS_RELATIME: u64 = libc::MS_RELATIME;
const MS_STRICTATIME: u64 = libc::MS_STRICTATIME;
/// The atime flags: a remount without any of them keeps the mount's.
const MS_ATIME: u64 = MS_NOATIME | MS_NODIRATIME | MS_RELATIME | MS_STRICTATIME;
const MS_REMOUNT: u64 = libc::MS_REMOUNT;
const MS_BIND: u64 = libc::MS_BIND;
const MS_MOVE: u64 = libc::MS_MOVE;
const MS_REC: u64 = libc::MS_REC;
const MS_SILENT: u64 = libc::MS_SILENT;
const MS_NOSYMFOLLOW: u64 = 256;
const PROPAGATION: u64 = libc::MS_SHARED | libc::MS_PRIVATE | libc::MS_SLAVE | libc::MS_UNBINDABLE;
/// The old magic number in the top half of the flags (MS_MGC_VAL).
const MS_MGC_MSK: u64 = 0xffff_0000;
const MS_MGC_VAL: u64 = 0xC0ED_0000;
/// The longest options string (one page, as Linux copies it).
const DATA_MAX: usize = 4096;

const MNT_FORCE: u64 = 1;
const MNT_DETACH: u64 = 2;
const MNT_EXPIRE: u64 = 4;
const UMOUNT_NOFOLLOW: u64 = 8;

/// Filesystem types whose mount would reach host storage, devices or
/// kernel interfaces: refused for policy, as under a container runtime.
const HOST_TYPES: &[&str] = &[
    "ext2",
    "ext3",
    "ext4",
    "xfs",
    "btrfs",
    "vfat",
    "msdos",
    "exfat",
    "ntfs",
    "ntfs3",
    "iso9660",
    "squashfs",
    "erofs",
    "f2fs",
    "jfs",
    "reiserfs",
    "hfs",
    "hfsplus",
    "udf",
    "zfs",
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "ceph",
    "9p",
    "virtiofs",
    "fuse",
    "fuseblk",
    "overlay",
    "aufs",
    "devtmpfs",
    "cgroup",
    "bpf",
    "debugfs",
    "tracefs",
    "securityfs",
    "configfs",
    "pstore",
    "efivarfs",
    "hugetlbfs",
    "binfmt_misc",
    "autofs",
    "nsfs",
    "rpc_pipefs",
    "fusectl",
];

fn need_admin(task: &Task) -> Result<(), Errno> {
    if task.thread.creds().capable(CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(Errno::EPERM)
    }
}

/// A string argument of at most `max` bytes (NUL excluded), or None for
/// a null pointer.
fn opt_string(task: &Task, addr: u64, max: usize) -> Result<Option<Vec<u8>>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    task.thread.mm().read_cstring(addr, max).map(Some)
}

fn sys_mount(task: &mut Task, a: [u64; 6]) -> SysResult {
    let mut flags = a[3];
    if flags & MS_MGC_MSK == MS_MGC_VAL {
        flags &= !MS_MGC_MSK;
    }
    let source = opt_string(task, a[0], crate::abi::limits::PATH_MAX - 1)?;
    let target = args::path(task, a[1])?;
    let fs_type = opt_string(task, a[2], 255)?;
    let data = opt_string(task, a[4], DATA_MAX - 1)?.unwrap_or_default();
    let at = args::resolve_at(task, AT_FDCWD_ARG, &target, true, false)?;
    need_admin(task)?;
    let ns = task.thread.fs().mounts();
    // Not a place of this namespace (an anonymous file through
    // /proc/self/fd): Linux's do_lock_mount finds it unmounted.
    if ns.by_id(at.mount.id).is_none() {
        return Err(Errno::ENOENT);
    }
    // Recorded (file.mount) before it is made, as the paths later records
    // name may change with it.
    let note = |from: Option<&Arc<Dentry>>, device: Option<&[u8]>| {
        let (at, fs_type) = (Some(&at), fs_type.as_deref());
        view_change(task, &ViewChange { operation: "mount", at, from, device, fs_type, flags })
    };
    if flags & MS_REMOUNT != 0 {
        note(None, None)?;
        remount(&ns, &at, flags, &data)
    } else if flags & MS_BIND != 0 {
        let source = source.ok_or(Errno::EFAULT)?;
        let from = args::resolve_at(task, AT_FDCWD_ARG, &source, true, false)?;
        note(Some(&from), None)?;
        bind(&ns, &from, &at, flags)
    } else if flags & PROPAGATION != 0 {
        note(None, None)?;
        change_type(&ns, &at, flags)
    } else if flags & MS_MOVE != 0 {
        let source = source.ok_or(Errno::EFAULT)?;
        let from = args::resolve_at(task, AT_FDCWD_ARG, &source, true, false)?;
        note(Some(&from), None)?;
        ns.move_mount(&from, &at).map(|()| 0)
    } else {
        note(None, Some(source.as_deref().unwrap_or(b"none")))?;
        let fs_type = fs_type.ok_or(Errno::EINVAL)?;
        let fs_type = String::from_utf8(fs_type).map_err(|_| Errno::ENODEV)?;
        let source = String::from_utf8_lossy(&source.unwrap_or_else(|| b"none".to_vec())).into_owned();
        new_mount(task, &ns, &at, &fs_type, &source, flags, &data)
    }
}

/// The per-mount flags (`MNT_*`) of `flags`, as Linux's `path_mount`
/// sorts them out: relatime unless another atime flag is asked for.
fn mnt_flags(flags: u64) -> u32 {
    let mut m = if flags & MS_NOATIME == 0 { MNT_RELATIME } else { 0 };
    for (ms, mnt) in [
        (MS_NOSUID, MNT_NOSUID),
        (MS_NODEV, MNT_NODEV),
        (MS_NOEXEC, MNT_NOEXEC),
        (MS_NOATIME, MNT_NOATIME),
        (MS_NODIRATIME, MNT_NODIRATIME),
        (MS_RDONLY, MNT_READONLY),
        (MS_NOSYMFOLLOW, MNT_NOSYMFOLLOW),
    ] {
        if flags & ms != 0 {
            m |= mnt;
        }
    }
    if flags & MS_STRICTATIME != 0 {
        m &= !(MNT_RELATIME | MNT_NOATIME);
    }
    m
}

/// The per-mount options of a new mount.
fn mount_opts(flags: u64) -> MountOpts {
    MountOpts { flags: mnt_flags(flags) & !MNT_READONLY, ..MountOpts::default() }
}

/// Options every filesystem takes (superblock flags and their opposites).
fn generic_option(o: &[u8]) -> bool {
    matches!(
        o,
        b"ro"
            | b"rw"
            | b"sync"
            | b"async"
            | b"dirsync"
            | b"lazytime"
            | b"nolazytime"
            | b"mand"
            | b"nomand"
            | b"silent"
            | b"loud"
    )
}

/// The options of a tmpfs: its limits, mode, owner and group.
struct TmpfsOpts {
    limits: TmpfsLimits,
    mode: u32,
    uid: u32,
    gid: u32,
}

impl TmpfsOpts {
    /// What mountinfo lists after rw/ro, as Linux's `shmem_show_options`.
    fn shown(&self) -> String {
        let mut s = String::new();
        if let Some(size) = self.limits.size {
            s.push_str(&format!(",size={}k", size.div_ceil(PAGE_SIZE) * (PAGE_SIZE / 1024)));
        }
        if let Some(n) = self.limits.inodes {
            s.push_str(&format!(",nr_inodes={n}"));
        }
        if self.mode != 0o1777 {
            s.push_str(&format!(",mode={:03o}", self.mode));
        }
        if self.uid != 0 {
            s.push_str(&format!(",uid={}", self.uid));
        }
        if self.gid != 0 {
            s.push_str(&format!(",gid={}", self.gid));
        }
        s
    }
}

fn parse_number(v: &[u8]) -> Result<u64, Errno> {
    let s = std::str::from_utf8(v).map_err(|_| Errno::EINVAL)?;
    s.parse().map_err(|_| Errno::EINVAL)
}

/// A size with Linux's `memparse` suffixes (k, m, g, t, p, e).
fn parse_size(v: &[u8]) -> Result<u64, Errno> {
    let (digits, shift) = match v.last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&v[..v.len() - 1], 10),
        Some(b'm') => (&v[..v.len() - 1], 20),
        Some(b'g') => (&v[..v.len() - 1], 30),
        Some(b't') => (&v[..v.len() - 1], 40),
        Some(b'p') => (&v[..v.len() - 1], 50),
        Some(b'e') => (&v[..v.len() - 1], 60),
        _ => (v, 0),
    };
    parse_number(digits)?.checked_mul(1u64 << shift).ok_or(Errno::EINVAL)
}

/// A limit: 0 is none, as for Linux's tmpfs.
fn nonzero(n: u64) -> Option<u64> {
    (n > 0).then_some(n)
}

fn parse_tmpfs(data: &[u8]) -> Result<TmpfsOpts, Errno> {
    let mut o = TmpfsOpts { limits: TmpfsLimits::default(), mode: 0o1777, uid: 0, gid: 0 };
    for opt in data.split(|&b| b == b',').filter(|s| !s.is_empty()) {
        let (key, value) = match opt.iter().position(|&b| b == b'=') {
            Some(i) => (&opt[..i], Some(&opt[i + 1..])),
            None => (opt, None),
        };
        match (key, value) {
            (b"size", Some(v)) => o.limits.size = nonzero(parse_size(v)?),
            (b"nr_blocks", Some(v)) => {
                o.limits.size = nonzero(parse_size(v)?.checked_mul(PAGE_SIZE).ok_or(Errno::EINVAL)?)
            }
            (b"nr_inodes", Some(v)) => o.limits.inodes = nonzero(parse_size(v)?),
            (b"mode", Some(v)) => {
                let s = std::str::from_utf8(v).map_err(|_| Errno::EINVAL)?;
                o.mode = u32::from_str_radix(s, 8).map_err(|_| Errno::EINVAL)? & 0o7777;
            }
            (b"uid", Some(v)) => o.uid = u32::try_from(parse_number(v)?).map_err(|_| Errno::EINVAL)?,
            (b"gid", Some(v)) => o.gid = u32::try_from(parse_number(v)?).map_err(|_| Errno::EINVAL)?,
            // Huge pages and NUMA policy do not apply.
            (b"huge", Some(b"never" | b"always" | b"within_size" | b"advise" | b"deny" | b"force")) => {}
            (b"inode32" | b"inode64" | b"noswap", None) => {}
            (k, None) if generic_option(k) => {}
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(o)
}

/// Only the generic options (and, for devpts, the options of an
/// instance, of which newinstance and ptmxmode take effect).
fn check_options(fs_type: &str, data: &[u8]) -> Result<(), Errno> {
    for opt in data.split(|&b| b == b',').filter(|s| !s.is_empty()) {
        let key = opt.split(|&b| b == b'=').next().unwrap_or_default();
        let devpts = fs_type == "devpts" && matches!(key, b"newinstance" | b"ptmxmode" | b"mode" | b"gid" | b"max");
        let cgroup = fs_type == "cgroup2" && matches!(key, b"nsdelegate" | b"memory_recursiveprot");
        if !(generic_option(opt) || devpts || cgroup) {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// With newinstance, the mode of a new devpts instance's ptmx
/// (ptmxmode=, octal, 0 by default as in Linux); None for the sandbox's
/// own instance.
fn devpts_instance(data: &[u8]) -> Result<Option<u32>, Errno> {
    let mut new = false;
    let mut mode = 0;
    for opt in data.split(|&b| b == b',') {
        let (key, value) = match opt.iter().position(|&b| b == b'=') {
            Some(i) => (&opt[..i], Some(&opt[i + 1..])),
            None => (opt, None),
        };
        match (key, value) {
            (b"newinstance", None) => new = true,
            (b"ptmxmode", Some(v)) => {
                let v = std::str::from_utf8(v).map_err(|_| Errno::EINVAL)?;
                mode = u32::from_str_radix(v, 8).map_err(|_| Errno::EINVAL)? & 0o777;
            }
            _ => {}
        }
    }
    Ok(new.then_some(mode))
}

/// The root of the sandbox's first mount of type `fs_type`.
fn sandbox_fs(task: &Task, fs_type: &str) -> Result<Arc<dyn Node>, Errno> {
    let m = task.kernel.mounts().all().into_iter().find(|m| m.fs_type == fs_type).ok_or(Errno::ENODEV)?;
    Ok(m.root.clone())
}

/// A new instance (or, for the filesystems the sandbox has one of, the
/// sandbox's) of `fs_type`, and the options mountinfo shows for it.
fn new_fs(task: &Task, fs_type: &str, data: &[u8]) -> Result<(Arc<dyn Node>, String), Errno> {
    let k = &task.kernel;
    match fs_type {
        "tmpfs" => {
            let o = parse_tmpfs(data)?;
            let disk = k.ext::<SandboxDisk>().0.get().cloned();
            Ok((Tmpfs::sized(disk, o.limits, o.mode, o.uid, o.gid), o.shown()))
        }
        "ramfs" => {
            // ramfs has no limits: it takes size= and nr_inodes= without
            // effect, as Linux's does.
            let o = parse_tmpfs(data)?;
            let disk = k.ext::<SandboxDisk>().0.get().cloned();
            Ok((Tmpfs::with_disk(disk, o.mode, o.uid, o.gid), String::new()))
        }
        _ => {
            check_options(fs_type, data)?;
            let fs = match fs_type {
                "proc" => Ok(crate::fs::procfs::new_procfs(Arc::downgrade(k))),
                "mqueue" => Ok(crate::fs::mqueue::new_mqueuefs(&k.ext())),
                "cgroup2" => {
                    Ok(ReadOnly::wrap(crate::fs::cgroupfs::new_cgroupfs(Arc::downgrade(k), k.cgroup_limits().clone())))
                }
                "sysfs" => sandbox_fs(task, "sysfs"),
                "devpts" => match devpts_instance(data)? {
                    Some(ptmx_mode) => Ok(k.ext::<Devpts>().new_instance(ptmx_mode)),
                    None => sandbox_fs(task, "devtmpfs")?.lookup(b"pts"),
                },
                _ => Err(Errno::ENODEV),
            };
            Ok((fs?, String::new()))
        }
    }
}

fn new_mount(
    task: &Task,
    ns: &MountNamespace,
    at: &Arc<Dentry>,
    fs_type: &str,
    source: &str,
    flags: u64,
    data: &[u8],
) -> SysResult {
    if HOST_TYPES.contains(&fs_type) || fs_type.starts_with("fuse.") {
        return policy::refuse(task, libc::SYS_mount);
    }
    if !at.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    let (fs, super_opts) = new_fs(task, fs_type, data)?;
    let mut opts = MountOpts { super_opts, ..mount_opts(flags) };
    let root = if flags & MS_RDONLY != 0 && !fs.read_only() {
        opts.rw_root = Some(fs.clone());
        ReadOnly::wrap(fs)
    } else {
        fs
    };
    ns.mount_with(at, root, fs_type, source, opts)?;
    Ok(0)
}

/// What a copy of a mount (a bind) takes from it: its nosuid, nodev and
/// noexec; read-only comes with its root. As in Linux, a copy of a shared
/// mount joins its peer group and a copy of a slave has the same master;
/// a copy of an unbindable one (below a recursive bind) is private.
fn inherited(o: &MountOpts, fs_root: Vec<u8>) -> MountOpts {
    let propagation = match o.propagation {
        p @ (Propagation::Shared(_) | Propagation::Slave(_)) => p,
        Propagation::Private | Propagation::Unbindable => Propagation::Private,
    };
    MountOpts {
        flags: o.flags & !MNT_READONLY,
        fs_root,
        propagation,
        super_opts: o.super_opts.clone(),
        ..MountOpts::default()
    }
}

/// MS_REMOUNT (with MS_BIND or without): the mount's flags become those
/// of `flags`. A mount the runtime made read-only stays so.
fn remount(ns: &MountNamespace, at: &Arc<Dentry>, flags: u64, data: &[u8]) -> SysResult {
    if !ns.is_mount_root(at) {
        return Err(Errno::EINVAL);
    }
    if flags & MS_BIND == 0 {
        // Changing a filesystem's own options (a tmpfs's size …) is not
        // supported: only the generic ones may come along.
        if data.split(|&b| b == b',').any(|o| !o.is_empty() && !generic_option(o)) {
            return Err(Errno::EINVAL);
        }
    }
    let m = ns.by_id(at.mount.id).ok_or(Errno::EINVAL)?;
    let old = m.live.get();
    let mut new = mnt_flags(flags);
    if flags & MS_ATIME == 0 {
        // A remount that names no atime flag keeps the mount's.
        let atime = MNT_NOATIME | MNT_NODIRATIME | MNT_RELATIME;
        new = (new & !atime) | (old & atime);
    }
    let lock = MNT_NOSUID | MNT_NODEV | MNT_NOEXEC | MNT_NOSYMFOLLOW;
    if m.opts.locked && old & lock & !new != 0 {
        return Err(Errno::EPERM);
    }
    let want_ro = new & MNT_READONLY != 0;
    let (root, rw_root) = match (m.read_only(), want_ro) {
        (false, true) => (ReadOnly::wrap(m.root.clone()), Some(m.root.clone())),
        (true, false) => (m.opts.rw_root.clone().ok_or(Errno::EPERM)?, None),
        (true, true) => (m.root.clone(), m.opts.rw_root.clone()),
        (false, false) => (m.root.clone(), None),
    };
    let opts = MountOpts {
        flags: new,
        rw_root,
        propagation: m.opts.propagation,
        fs_root: m.opts.fs_root.clone(),
        locked: m.opts.locked,
        super_opts: m.opts.super_opts.clone(),
    };
    ns.change(&m, Change { root, opts });
    Ok(0)
}

/// MS_BIND: `from` (a place the caller reaches in its namespace) mounted
/// on `at` as well; with MS_REC, the mounts below it too.
fn bind(ns: &MountNamespace, from: &Arc<Dentry>, at: &Arc<Dentry>, flags: u64) -> SysResult {
    let Some(src) = ns.by_id(from.mount.id) else {
        // An anonymous file (a pipe through /proc/self/fd) or a mount of
        // another namespace.
        return Err(Errno::EINVAL);
    };
    if src.opts.propagation == Propagation::Unbindable {
        return Err(Errno::EINVAL);
    }
    let covered: Vec<_> = ns
        .descendants(src.id)
        .into_iter()
        .filter(|c| c.mountpoint.as_ref().is_some_and(|mp| Dentry::is_under(mp, from)))
        .collect();
    // Without MS_REC the copy would show what the runtime's mounts below
    // cover (a masked or read-only path): refused, as Linux refuses a
    // bind that would uncover locked mounts.
    if flags & MS_REC == 0 && covered.iter().any(|c| c.opts.locked) {
        return Err(Errno::EINVAL);
    }
    let mut fs_root = src.opts.fs_root.clone();
    fs_root.extend_from_slice(&from.path_in_mount());
    // A copy of a read-only mount is read-only, even made from a place
    // reached before the mount became so.
    let node =
        if src.read_only() && !from.node.read_only() { ReadOnly::wrap(from.node.clone()) } else { from.node.clone() };
    let top = ns.mount_with(at, node, &src.fs_type, &src.source, inherited(&src.opts, fs_root))?;
    if flags & MS_REC != 0 {
        let mut copies = vec![(src.id, top)];
        for c in covered {
            let Some(mp) = &c.mountpoint else { continue };
            if c.opts.propagation == Propagation::Unbindable && !c.opts.locked {
                continue;
            }
            let Some(parent_copy) = copies.iter().find(|(id, _)| *id == mp.mount.id).map(|(_, m)| m.clone()) else {
                continue;
            };
            let stop = if mp.mount.id == src.id { from.clone() } else { Dentry::mount_root(&mp.mount) };
            let place = below(&Dentry::mount_root(&parent_copy), mp, &stop);
            // A runtime mount stays locked in the copy: unmounting it there
            // would uncover what it covers.
            let copy = MountOpts { locked: c.opts.locked, ..inherited(&c.opts, c.opts.fs_root.clone()) };
            let m = ns.mount_with(&place, c.root.clone(), &c.fs_type, &c.source, copy)?;
            copies.push((c.id, m));
        }
    }
    Ok(0)
}

/// `d`'s place relative to `stop` (one of its ancestors in its mount),
/// as a dentry below `top` (the same nodes, reached from another mount).
fn below(top: &Arc<Dentry>, d: &Arc<Dentry>, stop: &Arc<Dentry>) -> Arc<Dentry> {
    let mut chain = Vec::new();
    let mut cur = d.clone();
    while !same(&cur, stop) {
        let Some(p) = cur.parent.clone() else { break };
        chain.push(cur);
        cur = p;
    }
    let mut place = top.clone();
    for c in chain.iter().rev() {
        place = place.child(&c.name, c.node.clone());
    }
    place
}

/// MS_SHARED, MS_PRIVATE, MS_SLAVE or MS_UNBINDABLE (exactly one), of
/// the mount at `at` and, with MS_REC, every mount below it.
fn change_type(ns: &MountNamespace, at: &Arc<Dentry>, flags: u64) -> SysResult {
    let kind = flags & PROPAGATION;
    if kind.count_ones() != 1 || flags & !(PROPAGATION | MS_REC | MS_SILENT) != 0 {
        return Err(Errno::EINVAL);
    }
    if !ns.is_mount_root(at) {
        return Err(Errno::EINVAL);
    }
    let m = ns.by_id(at.mount.id).ok_or(Errno::EINVAL)?;
    let mut targets = vec![m.clone()];
    if flags & MS_REC != 0 {
        targets.extend(ns.descendants(m.id));
    }
    let group = (kind == libc::MS_SHARED).then(|| ns.new_peer_group());
    for t in targets {
        let propagation = match (kind, t.opts.propagation) {
            (libc::MS_SHARED, Propagation::Shared(n)) => Propagation::Shared(n),
            (libc::MS_SHARED, _) => Propagation::Shared(group.unwrap_or_default()),
            (libc::MS_SLAVE, Propagation::Shared(n) | Propagation::Slave(n)) => Propagation::Slave(n),
            (libc::MS_SLAVE, _) | (libc::MS_PRIVATE, _) => Propagation::Private,
            _ => Propagation::Unbindable,
        };
        let opts = MountOpts { propagation, flags: t.live.get(), ..t.opts.clone() };
        ns.change(&t, Change { root: t.root.clone(), opts });
    }
    Ok(0)
}

fn sys_umount2(task: &mut Task, a: [u64; 6]) -> SysResult {
    let flags = a[1];
    if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & MNT_EXPIRE != 0 {
        // Expiry marks are not kept.
        return Err(Errno::EINVAL);
    }
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, flags & UMOUNT_NOFOLLOW == 0, false)?;
    need_admin(task)?;
    let ns = task.thread.fs().mounts();
    // The topmost mount there ("." after pivot_root(".", ".") is the old
    // root stacked on the new).
    let d = ns.crossed(d);
    let change = ViewChange { operation: "umount2", at: Some(&d), from: None, device: None, fs_type: None, flags };
    view_change(task, &change)?;
    ns.umount(&d, flags & MNT_DETACH != 0)?;
    Ok(0)
}

fn sys_chroot(task: &mut Task, a: [u64; 6]) -> SysResult {
    let path = args::path(task, a[0])?;
    let d = args::resolve_at(task, AT_FDCWD_ARG, &path, true, false)?;
    let st = d.node.stat()?;
    if st.mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    perm::check(&task.thread.creds(), &st, MAY_EXEC)?;
    if !task.thread.creds().capable(CAP_SYS_CHROOT) {
        return Err(Errno::EPERM);
    }
    let change = ViewChange { operation: "chroot", at: Some(&d), from: None, device: None, fs_type: None, flags: 0 };
    view_change(task, &change)?;
    task.thread.fs().set_root(d);
    Ok(0)
}

fn sys_pivot_root(task: &mut Task, a: [u64; 6]) -> SysResult {
    let new_root = args::path(task, a[0])?;
    let put_old = args::path(task, a[1])?;
    let new_root = args::resolve_at(task, AT_FDCWD_ARG, &new_root, true, false)?;
    let put_old = args::resolve_at(task, AT_FDCWD_ARG, &put_old, true, false)?;
    need_admin(task)?;
    let fs = task.thread.fs();
    let ns = fs.mounts();
    let old_root = fs.root();
    let (at, from) = (Some(&new_root), Some(&put_old));
    view_change(task, &ViewChange { operation: "pivot_root", at, from, device: None, fs_type: None, flags: 0 })?;
    let new = ns.pivot(&new_root, &put_old, &old_root)?;
    // Every process of the namespace whose root or working directory was
    // the old root moves to the new one, as Linux's chroot_fs_refs.
    for t in task.kernel.threads() {
        let tfs = t.fs();
        if !Arc::ptr_eq(&tfs.mounts(), &ns) {
            continue;
        }
        if same(&tfs.root(), &old_root) {
            tfs.set_root(new.clone());
        }
        if same(&tfs.cwd(), &old_root) {
            tfs.set_cwd(new.clone());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_options() {
        let o = parse_tmpfs(b"size=64k,mode=0755,uid=1000,gid=100,nr_inodes=10k,inode64,rw").unwrap();
        assert_eq!(o.limits, TmpfsLimits { size: Some(65536), inodes: Some(10240) });
        assert_eq!((o.mode, o.uid, o.gid), (0o755, 1000, 100));
        assert_eq!(o.shown(), ",size=64k,nr_inodes=10240,mode=755,uid=1000,gid=100");
        assert_eq!(parse_tmpfs(b"nr_blocks=2").unwrap().limits.size, Some(8192));
        assert_eq!(parse_tmpfs(b"size=6000").unwrap().shown(), ",size=8k", "rounded up to pages");
        assert_eq!(parse_tmpfs(b"size=0,mode=1777").unwrap().shown(), "", "0 is no limit");
        assert_eq!(parse_tmpfs(b"").unwrap().mode, 0o1777, "a new tmpfs is sticky and open to all");
        for bad in [&b"size=abc"[..], b"mode=9", b"bogus", b"uid=99999999999", b"size=99999999e"] {
            assert_eq!(parse_tmpfs(bad).err(), Some(Errno::EINVAL), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn other_filesystems_take_generic_options_only() {
        assert!(check_options("proc", b"rw").is_ok());
        assert_eq!(check_options("proc", b"hidepid=2"), Err(Errno::EINVAL));
        assert!(check_options("devpts", b"newinstance,ptmxmode=0666,mode=620,gid=5").is_ok());
        assert_eq!(devpts_instance(b"newinstance,ptmxmode=0666,mode=620"), Ok(Some(0o666)));
        assert_eq!(devpts_instance(b"newinstance"), Ok(Some(0)));
        assert_eq!(devpts_instance(b"ptmxmode=0666"), Ok(None));
        assert_eq!(devpts_instance(b"newinstance,ptmxmode=9"), Err(Errno::EINVAL));
    }
}
