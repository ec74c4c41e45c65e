//! The UTS and IPC namespaces a thread is in (`unshare`, `setns`). A
//! thread starts in the sandbox's first ones: the kernel's host and domain
//! names and its `ipc::Namespace`. Its mount namespace is part of its
//! `FsContext`.

use super::{ipc, Kernel, Thread};
use crate::vfs::nsid;
use parking_lot::Mutex;
use std::sync::Arc;

/// A UTS namespace of the guest's own: its host and domain names.
pub struct Uts {
    pub hostname: Mutex<Vec<u8>>,
    pub domainname: Mutex<Vec<u8>>,
    /// Its identity (`/proc/PID/ns/uts`).
    pub ino: u64,
}

/// The namespaces a thread left the sandbox's first ones for (None: it
/// is in the first).
#[derive(Clone, Default)]
pub struct Namespaces {
    pub uts: Option<Arc<Uts>>,
    pub ipc: Option<Arc<ipc::Namespace>>,
}

/// `t`'s host name and domain name.
pub(crate) fn uts_names(k: &Kernel, t: &Thread) -> (Vec<u8>, Vec<u8>) {
    match &t.namespaces.lock().uts {
        Some(u) => (u.hostname.lock().clone(), u.domainname.lock().clone()),
        None => (k.hostname.lock().clone(), k.domainname.lock().clone()),
    }
}

/// Sets `t`'s host name (`domain` false) or domain name.
pub(crate) fn set_uts_name(k: &Kernel, t: &Thread, domain: bool, name: Vec<u8>) {
    let ns = t.namespaces.lock().uts.clone();
    let slot = match (&ns, domain) {
        (Some(u), false) => &u.hostname,
        (Some(u), true) => &u.domainname,
        (None, false) => &k.hostname,
        (None, true) => &k.domainname,
    };
    *slot.lock() = name;
}

/// A new UTS namespace for `t`, with the names it has now.
pub(crate) fn unshare_uts(k: &Kernel, t: &Thread) {
    let (hostname, domainname) = uts_names(k, t);
    let uts = Uts { hostname: Mutex::new(hostname), domainname: Mutex::new(domainname), ino: nsid::alloc() };
    t.namespaces.lock().uts = Some(Arc::new(uts));
}

/// A new IPC namespace for `t`, with no objects.
pub fn unshare_ipc(t: &Thread) {
    t.namespaces.lock().ipc = Some(Arc::new(ipc::Namespace::new_unshared()));
}

/// The identity of `t`'s UTS namespace.
pub fn uts_ino(t: &Thread) -> u64 {
    t.namespaces.lock().uts.as_ref().map_or(nsid::UTS_INIT_INO, |u| u.ino)
}

/// `t`'s SysV IPC namespace.
pub(crate) fn ipc_ns(k: &Kernel, t: &Thread) -> Arc<ipc::Namespace> {
    t.namespaces.lock().ipc.clone().unwrap_or_else(|| k.ext::<ipc::Namespace>())
}
