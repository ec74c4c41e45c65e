//! Task credentials.

use super::caps::Capabilities;

/// The identity a task acts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub uid: u32,
    pub euid: u32,
    pub suid: u32,
    pub fsuid: u32,
    pub gid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub fsgid: u32,
    pub groups: Vec<u32>,
    pub caps: Capabilities,
}

impl Credentials {
    /// `uid`'s credentials, with the capabilities a process of that uid
    /// starts with (all for root).
    pub fn new(uid: u32, gid: u32) -> Credentials {
        Credentials {
            uid,
            euid: uid,
            suid: uid,
            fsuid: uid,
            gid,
            egid: gid,
            sgid: gid,
            fsgid: gid,
            groups: Vec::new(),
            caps: Capabilities::for_uid(uid),
        }
    }

    pub fn in_group(&self, gid: u32) -> bool {
        self.fsgid == gid || self.groups.contains(&gid)
    }

    /// Whether capability `cap` is effective.
    pub fn capable(&self, cap: u32) -> bool {
        self.caps.has(cap)
    }
}
