//! POSIX access control lists, as Linux's fs/posix_acl.c: the xattr
//! format of `system.posix_acl_access` and `system.posix_acl_default`,
//! their validation, the permission check, and what a new node inherits
//! from its directory's default ACL.
//!
//! A filesystem stores an ACL as the extended attribute of that name. The
//! entries that mirror the file mode (the owner, the group class — the mask
//! entry if there is one, else the owning group's — and others) are taken
//! from the mode whenever the ACL is read or evaluated, so chmod needs no
//! rewrite of the stored ACL, as Linux's `posix_acl_chmod` keeps them equal.

use super::{NewNode, Node, Stat};
use crate::abi::Errno;
use crate::auth::Credentials;

pub(crate) const ACL_ACCESS: &[u8] = b"system.posix_acl_access";
pub(crate) const ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

const VERSION: u32 = 2;
const HEADER: usize = 4;
const ENTRY: usize = 8;

pub(crate) const ACL_USER_OBJ: u16 = 0x01;
pub(crate) const ACL_USER: u16 = 0x02;
pub(crate) const ACL_GROUP_OBJ: u16 = 0x04;
pub(crate) const ACL_GROUP: u16 = 0x08;
pub(crate) const ACL_MASK: u16 = 0x10;
pub(crate) const ACL_OTHER: u16 = 0x20;

/// One entry: a tag, rwx permission bits, and a uid or gid for ACL_USER and
/// ACL_GROUP entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub tag: u16,
    pub perm: u16,
    pub id: u32,
}

/// A valid ACL (in Linux's order: owner, named users, owning group, named
/// groups, mask, others).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Acl(Vec<Entry>);

impl Acl {
    /// Parses an xattr value as `posix_acl_from_xattr` and checks it as
    /// `posix_acl_valid`: `Ok(None)` for a header without entries (no ACL),
    /// EOPNOTSUPP for another version, EINVAL for anything malformed.
    pub(crate) fn from_xattr(value: &[u8]) -> Result<Option<Acl>, Errno> {
        let Some((header, body)) = value.split_first_chunk::<HEADER>() else { return Err(Errno::EINVAL) };
        if u32::from_le_bytes(*header) != VERSION {
            return Err(Errno::EOPNOTSUPP);
        }
        if body.len() % ENTRY != 0 {
            return Err(Errno::EINVAL);
        }
        if body.is_empty() {
            return Ok(None);
        }
        let entries = body
            .chunks_exact(ENTRY)
            .map(|e| {
                let tag = u16::from_le_bytes([e[0], e[1]]);
                let id = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
                Entry {
                    tag,
                    perm: u16::from_le_bytes([e[2], e[3]]),
                    id: if tag == ACL_USER || tag == ACL_GROUP { id } else { u32::MAX },
                }
            })
            .collect();
        let acl = Acl(entries);
        acl.validate()?;
        Ok(Some(acl))
    }

    /// `posix_acl_valid`: known tags in order, one owner, owning group and
    /// others entry, a mask where named entries are, rwx bits only, ids
    /// that map (the invalid id -1 does not).
    fn validate(&self) -> Result<(), Errno> {
        #[derive(PartialEq)]
        enum State {
            UserObj,
            User,
            Group,
            Other,
            Done,
        }
        let mut state = State::UserObj;
        let mut needs_mask = false;
        for e in &self.0 {
            if e.perm & !7 != 0 {
                return Err(Errno::EINVAL);
            }
            state = match (e.tag, state) {
                (ACL_USER_OBJ, State::UserObj) => State::User,
                (ACL_USER, State::User) if e.id != u32::MAX => {
                    needs_mask = true;
                    State::User
                }
                (ACL_GROUP_OBJ, State::User) => State::Group,
                (ACL_GROUP, State::Group) if e.id != u32::MAX => {
                    needs_mask = true;
                    State::Group
                }
                (ACL_MASK, State::Group) => State::Other,
                (ACL_OTHER, State::Other) => State::Done,
                (ACL_OTHER, State::Group) if !needs_mask => State::Done,
                _ => return Err(Errno::EINVAL),
            };
        }
        if state == State::Done {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    }

    /// The xattr value (`posix_acl_to_xattr`).
    pub(crate) fn to_xattr(&self) -> Vec<u8> {
        let mut v = VERSION.to_le_bytes().to_vec();
        for e in &self.0 {
            v.extend_from_slice(&e.tag.to_le_bytes());
            v.extend_from_slice(&e.perm.to_le_bytes());
            v.extend_from_slice(&e.id.to_le_bytes());
        }
        v
    }

    /// The entry that stands for the group class in the mode: the mask if
    /// there is one, else the owning group's.
    fn group_class(&mut self) -> Option<&mut Entry> {
        let tag = if self.0.iter().any(|e| e.tag == ACL_MASK) { ACL_MASK } else { ACL_GROUP_OBJ };
        self.0.iter_mut().find(|e| e.tag == tag)
    }

    /// The ACL with the entries the mode mirrors set from `mode`.
    pub(crate) fn with_mode(mut self, mode: u32) -> Acl {
        for (tag, shift) in [(ACL_USER_OBJ, 6), (ACL_OTHER, 0)] {
            if let Some(e) = self.0.iter_mut().find(|e| e.tag == tag) {
                e.perm = bits(mode >> shift);
            }
        }
        if let Some(e) = self.group_class() {
            e.perm = bits(mode >> 3);
        }
        self
    }

    /// The permission bits the ACL gives the mode (`posix_acl_equiv_mode`),
    /// and whether the mode says all of it (no named entries, no mask).
    pub(crate) fn mode(&mut self) -> (u32, bool) {
        let perm = |acl: &Acl, tag| acl.0.iter().find(|e| e.tag == tag).map_or(0, |e| u32::from(e.perm));
        let equiv = self.0.iter().all(|e| matches!(e.tag, ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_OTHER));
        let group = self.group_class().map_or(0, |e| u32::from(e.perm));
        (perm(self, ACL_USER_OBJ) << 6 | group << 3 | perm(self, ACL_OTHER), equiv)
    }

    /// `posix_acl_permission` for a caller that is not the owner (the
    /// owner class is the mode's): a named user entry, else the owning and
    /// named groups the caller is in, each limited by the mask; others
    /// only if no group entry matched.
    pub(crate) fn permits(&self, creds: &Credentials, st: &Stat, want: u32) -> bool {
        let want = u16::try_from(want & 7).unwrap_or(7);
        let mask = self.0.iter().find(|e| e.tag == ACL_MASK).map_or(7, |e| e.perm);
        let mut in_a_group = false;
        for e in &self.0 {
            match e.tag {
                ACL_USER_OBJ if creds.fsuid == st.uid => return e.perm & want == want,
                ACL_USER if creds.fsuid == e.id => return e.perm & mask & want == want,
                ACL_GROUP_OBJ | ACL_GROUP => {
                    let gid = if e.tag == ACL_GROUP_OBJ { st.gid } else { e.id };
                    if creds.in_group(gid) {
                        in_a_group = true;
                        if e.perm & want == want {
                            return e.perm & mask & want == want;
                        }
                    }
                }
                ACL_OTHER => return !in_a_group && e.perm & want == want,
                _ => {}
            }
        }
        false
    }
}

fn bits(mode: u32) -> u16 {
    u16::try_from(mode & 7).unwrap_or(0)
}

/// The ACL stored as `name` on `node`, if any (a stored value that does not
/// parse counts as none).
pub(crate) fn stored(node: &dyn Node, name: &[u8]) -> Option<Acl> {
    node.getxattr(name).ok().and_then(|v| Acl::from_xattr(&v).ok().flatten())
}

/// The access ACL of `node`, its mode-mirrored entries from `st`.
pub(crate) fn access(node: &dyn Node, st: &Stat) -> Option<Acl> {
    stored(node, ACL_ACCESS).map(|a| a.with_mode(st.mode))
}

/// What a node made in a directory gets (Linux's `posix_acl_create`): with
/// a default ACL on the directory, the umask does not apply; the new
/// node's access ACL is the default ACL with its mode-mirrored entries
/// limited by the create mode (kept only if the mode cannot say it all),
/// and a new directory inherits the default ACL itself. Without one, the
/// mode less the umask, and no ACL.
pub(crate) struct Inherited {
    pub new: NewNode,
    access: Option<Vec<u8>>,
    default: Option<Vec<u8>>,
}

/// `new.mode` is the requested mode before the umask; `is_dir` for mkdir.
pub(crate) fn inherit(dir: &dyn Node, new: NewNode, umask: u32, is_dir: bool) -> Inherited {
    let Some(default) = stored(dir, ACL_DEFAULT) else {
        let mode = new.mode & !(umask & 0o777);
        return Inherited { new: NewNode { mode, ..new }, access: None, default: None };
    };
    let mut acl = default.clone();
    for e in &mut acl.0 {
        match e.tag {
            ACL_USER_OBJ => e.perm &= bits(new.mode >> 6),
            ACL_OTHER => e.perm &= bits(new.mode),
            _ => {}
        }
    }
    if let Some(e) = acl.group_class() {
        e.perm &= bits(new.mode >> 3);
    }
    let (perms, equiv) = acl.mode();
    Inherited {
        new: NewNode { mode: new.mode & !0o777 | perms, ..new },
        access: (!equiv).then(|| acl.to_xattr()),
        default: is_dir.then(|| default.to_xattr()),
    }
}

impl Inherited {
    /// Stores the inherited ACLs on the new node.
    pub(crate) fn apply(&self, node: &dyn Node) -> Result<(), Errno> {
        if let Some(v) = &self.access {
            node.setxattr(ACL_ACCESS, v, 0)?;
        }
        if let Some(v) = &self.default {
            node.setxattr(ACL_DEFAULT, v, 0)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xattr(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        Acl(entries.iter().map(|&(tag, perm, id)| Entry { tag, perm, id }).collect()).to_xattr()
    }

    fn minimal() -> Vec<(u16, u16, u32)> {
        vec![(ACL_USER_OBJ, 6, u32::MAX), (ACL_GROUP_OBJ, 4, u32::MAX), (ACL_OTHER, 0, u32::MAX)]
    }

    #[test]
    fn the_format_is_validated_as_linux() {
        assert_eq!(Acl::from_xattr(&[]), Err(Errno::EINVAL));
        assert_eq!(Acl::from_xattr(&1u32.to_le_bytes()), Err(Errno::EOPNOTSUPP));
        assert_eq!(Acl::from_xattr(&2u32.to_le_bytes()), Ok(None));
        let mut v = xattr(&minimal());
        assert!(Acl::from_xattr(&v).unwrap().is_some());
        v.push(0);
        assert_eq!(Acl::from_xattr(&v), Err(Errno::EINVAL), "a partial entry");
        let named = [(ACL_USER_OBJ, 6, 0), (ACL_USER, 4, 1000), (ACL_GROUP_OBJ, 4, 0), (ACL_OTHER, 0, 0)];
        assert_eq!(Acl::from_xattr(&xattr(&named)), Err(Errno::EINVAL), "a named entry needs a mask");
        let out_of_order = [(ACL_GROUP_OBJ, 4, 0), (ACL_USER_OBJ, 6, 0), (ACL_OTHER, 0, 0)];
        assert_eq!(Acl::from_xattr(&xattr(&out_of_order)), Err(Errno::EINVAL));
        let mut bad_perm = minimal();
        bad_perm[0].1 = 8;
        assert_eq!(Acl::from_xattr(&xattr(&bad_perm)), Err(Errno::EINVAL));
        assert_eq!(Acl::from_xattr(&xattr(&minimal()[..2])), Err(Errno::EINVAL), "no other entry");
    }

    #[test]
    fn named_entries_are_limited_by_the_mask() {
        let v = xattr(&[
            (ACL_USER_OBJ, 6, 0),
            (ACL_USER, 6, 1000),
            (ACL_GROUP_OBJ, 4, 0),
            (ACL_GROUP, 2, 50),
            (ACL_MASK, 4, 0),
            (ACL_OTHER, 0, 0),
        ]);
        let acl = Acl::from_xattr(&v).unwrap().unwrap();
        let st = Stat { mode: 0o100640, uid: 1, gid: 2, ..Stat::default() };
        let user = Credentials::new(1000, 1000);
        assert!(acl.permits(&user, &st, 4));
        assert!(!acl.permits(&user, &st, 2), "the mask takes write away");
        let mut member = Credentials::new(2000, 50);
        assert!(!acl.permits(&member, &st, 2), "masked");
        assert!(!acl.permits(&member, &st, 4), "a matching group entry without the bit: not others");
        member.fsgid = 3;
        member.groups = vec![];
        assert!(!acl.permits(&member, &st, 4), "others get nothing");
        let (mode, equiv) = acl.clone().mode();
        assert_eq!((mode, equiv), (0o640, false));
        assert_eq!(acl.with_mode(0o750).mode().0, 0o750);
    }
}
