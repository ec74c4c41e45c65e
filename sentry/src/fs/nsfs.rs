//! Namespace files: what `/proc/PID/ns/*` links lead to (Linux's nsfs).
//! Opened, one names a namespace for `setns`; `stat` gives the
//! namespace's identity (its inode number on the nsfs device), the same
//! for every process in it. The mount, UTS and IPC namespaces are the
//! sentry's own objects; of the others the sandbox has one each, which
//! every process is in.

use crate::abi::Errno;
use crate::kernel::namespaces::{uts_ino, Uts};
use crate::kernel::{ipc, Thread};
use crate::vfs::{nsid, FileOps, MountNamespace, Node, Stat, TimeSpec, S_IFREG};
use std::sync::Arc;

/// The nsfs device number (Linux's nsfs is an anonymous device).
const NSFS_DEV: u64 = 0x04;

/// The kinds of namespace files, in Linux's order in /proc/PID/ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Cgroup,
    Ipc,
    Mnt,
    Net,
    Pid,
    PidForChildren,
    Time,
    TimeForChildren,
    User,
    Uts,
}

pub const KINDS: [Kind; 10] = [
    Kind::Cgroup,
    Kind::Ipc,
    Kind::Mnt,
    Kind::Net,
    Kind::Pid,
    Kind::PidForChildren,
    Kind::Time,
    Kind::TimeForChildren,
    Kind::User,
    Kind::Uts,
];

impl Kind {
    /// The file's name in /proc/PID/ns.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cgroup => "cgroup",
            Kind::Ipc => "ipc",
            Kind::Mnt => "mnt",
            Kind::Net => "net",
            Kind::Pid => "pid",
            Kind::PidForChildren => "pid_for_children",
            Kind::Time => "time",
            Kind::TimeForChildren => "time_for_children",
            Kind::User => "user",
            Kind::Uts => "uts",
        }
    }

    /// The namespace type, as the link's text names it.
    fn type_name(self) -> &'static str {
        match self {
            Kind::PidForChildren => "pid",
            Kind::TimeForChildren => "time",
            k => k.name(),
        }
    }

    /// The CLONE_NEW* flag of the namespace type (setns's `nstype`).
    pub fn clone_flag(self) -> i32 {
        match self {
            Kind::Cgroup => libc::CLONE_NEWCGROUP,
            Kind::Ipc => libc::CLONE_NEWIPC,
            Kind::Mnt => libc::CLONE_NEWNS,
            Kind::Net => libc::CLONE_NEWNET,
            Kind::Pid | Kind::PidForChildren => libc::CLONE_NEWPID,
            Kind::Time | Kind::TimeForChildren => 0x80,
            Kind::User => libc::CLONE_NEWUSER,
            Kind::Uts => libc::CLONE_NEWUTS,
        }
    }
}

/// The namespace a file names.
#[derive(Clone)]
pub enum Namespace {
    Mnt(Arc<MountNamespace>),
    /// None: the sandbox's first.
    Uts(Option<Arc<Uts>>),
    Ipc(Option<Arc<ipc::Namespace>>),
    /// One the sentry does not emulate: the sandbox has one of it.
    Single,
}

/// An nsfs file.
#[derive(Clone)]
pub struct NsFile {
    pub kind: Kind,
    pub ino: u64,
    pub ns: Namespace,
}

impl NsFile {
    /// `t`'s namespace of `kind`.
    pub fn of(t: &Thread, kind: Kind) -> NsFile {
        let (ino, ns) = match kind {
            Kind::Mnt => {
                let m = t.fs().mounts();
                (m.ino, Namespace::Mnt(m))
            }
            Kind::Uts => (uts_ino(t), Namespace::Uts(t.namespaces().lock().uts.clone())),
            Kind::Ipc => {
                let i = t.namespaces().lock().ipc.clone();
                (i.as_ref().map_or(nsid::IPC_INIT_INO, |i| i.ino), Namespace::Ipc(i))
            }
            Kind::Cgroup => (nsid::CGROUP_INIT_INO, Namespace::Single),
            Kind::Net => (nsid::NET_INIT_INO, Namespace::Single),
            Kind::Pid | Kind::PidForChildren => (nsid::PID_INIT_INO, Namespace::Single),
            Kind::Time | Kind::TimeForChildren => (nsid::TIME_INIT_INO, Namespace::Single),
            Kind::User => (nsid::USER_INIT_INO, Namespace::Single),
        };
        NsFile { kind, ino, ns }
    }

    /// What readlink shows: "mnt:[4026531841]".
    pub fn text(&self) -> Vec<u8> {
        format!("{}:[{}]", self.kind.type_name(), self.ino).into_bytes()
    }
}

impl Node for NsFile {
    fn stat(&self) -> Result<Stat, Errno> {
        Ok(super::anon::stat(NSFS_DEV, self.ino, S_IFREG | 0o444, TimeSpec::default()))
    }

    fn open(&self, _flags: i32) -> Result<Arc<dyn FileOps>, Errno> {
        Ok(Arc::new(self.clone()))
    }

    fn fs_id(&self) -> usize {
        usize::MAX - 10
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Reads and writes fail as on nsfs (EINVAL, the FileOps defaults).
impl FileOps for NsFile {
    fn seekable(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts() {
        let f = NsFile { kind: Kind::PidForChildren, ino: nsid::PID_INIT_INO, ns: Namespace::Single };
        assert_eq!(f.text(), b"pid:[4026531836]");
        let m = NsFile { kind: Kind::Mnt, ino: nsid::MNT_INIT_INO, ns: Namespace::Single };
        assert_eq!(m.text(), b"mnt:[4026531841]");
        assert_eq!(KINDS.map(Kind::name).len(), 10);
        assert_eq!(Kind::Uts.clone_flag(), libc::CLONE_NEWUTS);
    }
}
