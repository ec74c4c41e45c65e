//! Task credentials, and Linux's rules for changing them (credentials(7),
//! kernel/sys.c): which set*id transitions an unprivileged task may make,
//! and what a privileged one may do instead. The system call handlers only
//! decode arguments and call these.

use super::caps::{self, Capabilities};
use crate::abi::Errno;

/// `(uid_t)-1` / `(gid_t)-1`: "leave unchanged" in the set*id calls, and
/// never a valid id.
pub(crate) const NO_ID: u32 = u32::MAX;

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

/// Which family of ids a set*id call changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdKind {
    User,
    Group,
}

impl IdKind {
    /// The capability that lets a task set any id of this kind.
    fn cap(self) -> u32 {
        match self {
            IdKind::User => caps::CAP_SETUID,
            IdKind::Group => caps::CAP_SETGID,
        }
    }
}

/// Real, effective, saved and filesystem ids, in that order.
pub(crate) type Ids = [u32; 4];

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

    /// The ids of kind `k`.
    pub fn ids(&self, k: IdKind) -> Ids {
        match k {
            IdKind::User => [self.uid, self.euid, self.suid, self.fsuid],
            IdKind::Group => [self.gid, self.egid, self.sgid, self.fsgid],
        }
    }

    fn set_ids(&mut self, k: IdKind, [r, e, s, f]: Ids) {
        match k {
            IdKind::User => (self.uid, self.euid, self.suid, self.fsuid) = (r, e, s, f),
            IdKind::Group => (self.gid, self.egid, self.sgid, self.fsgid) = (r, e, s, f),
        }
    }

    /// Changes the ids of kind `k` by `rule` (`setid_rule`, `setreid_rule`
    /// or `setresid_rule`, given the old ids and whether the task holds
    /// CAP_SETUID/CAP_SETGID). A change of uids carries the capability
    /// effects of cap_emulate_setxuid; `keep_caps` is PR_SET_KEEPCAPS.
    pub fn change_ids(
        &mut self,
        k: IdKind,
        keep_caps: bool,
        rule: impl FnOnce(Ids, bool) -> Result<Ids, Errno>,
    ) -> Result<(), Errno> {
        let old = self.ids(k);
        let new = rule(old, self.capable(k.cap()))?;
        self.set_ids(k, new);
        if k == IdKind::User {
            let [r, e, s, _] = old;
            let [nr, ne, ns, _] = new;
            self.caps = self.caps.after_setuid([r, e, s], [nr, ne, ns], keep_caps);
        }
        Ok(())
    }

    /// `setfsuid`/`setfsgid`: sets the filesystem id of kind `k` when
    /// allowed, and returns the previous one either way, as Linux does. A
    /// filesystem uid leaving 0 takes the filesystem capabilities along.
    pub fn change_fsid(&mut self, k: IdKind, id: u32) -> u32 {
        let old = self.ids(k);
        let new = setfsid_rule(old, id, self.capable(k.cap()));
        self.set_ids(k, new);
        if k == IdKind::User {
            self.caps = self.caps.after_setfsuid(old[3], new[3]);
        }
        old[3]
    }

    /// `may_setgroups`: replacing the supplementary groups needs
    /// CAP_SETGID.
    pub fn may_set_groups(&self) -> bool {
        self.capable(caps::CAP_SETGID)
    }

    /// Replaces the supplementary groups, kept sorted as Linux keeps them;
    /// `(gid_t)-1` is no group (EINVAL).
    pub fn set_groups(&mut self, mut groups: Vec<u32>) -> Result<(), Errno> {
        if groups.contains(&NO_ID) {
            return Err(Errno::EINVAL);
        }
        groups.sort_unstable();
        self.groups = groups;
        Ok(())
    }

    /// Whether the target's real, effective and saved uids all equal our
    /// real uid, and its gids our real gid: the identity test of
    /// `prlimit64` and of ptrace access with real credentials.
    pub fn real_ids_match(&self, t: &Credentials) -> bool {
        [t.uid, t.euid, t.suid].iter().all(|&u| u == self.uid) && [t.gid, t.egid, t.sgid].iter().all(|&g| g == self.gid)
    }

    /// `check_prlimit_permission`: changing or reading another process's
    /// limits needs the same ids or CAP_SYS_RESOURCE.
    pub fn may_prlimit(&self, target: &Credentials) -> bool {
        self.real_ids_match(target) || self.capable(caps::CAP_SYS_RESOURCE)
    }

    /// `ptrace_may_access` in PTRACE_MODE_READ_REALCREDS, as
    /// `get_robust_list` asks it of another process: CAP_SYS_PTRACE, or the
    /// same ids, a dumpable target and no permitted capability the caller
    /// lacks (else a capability-less task of the same uid could read a
    /// process that kept its caps across a uid change).
    pub fn may_read_process(&self, target: &Credentials, dumpable: bool) -> bool {
        if self.capable(caps::CAP_SYS_PTRACE) {
            return true;
        }
        let caps_subset = target.caps.permitted & !self.caps.permitted == 0;
        self.real_ids_match(target) && dumpable && caps_subset
    }

    /// Whether going from `self` to `new` is a change after which Linux's
    /// `commit_creds` makes the process non-dumpable: another effective or
    /// filesystem id, or a permitted capability it did not have (losing
    /// some does not).
    pub fn change_resets_dumpable(&self, new: &Credentials) -> bool {
        self.euid != new.euid
            || self.egid != new.egid
            || self.fsuid != new.fsuid
            || self.fsgid != new.fsgid
            || new.caps.permitted & !self.caps.permitted != 0
    }

    /// `check_same_owner`: our effective uid is the target's real or
    /// effective uid.
    pub fn same_owner(&self, target: &Credentials) -> bool {
        self.euid == target.euid || self.euid == target.uid
    }
}

/// `setuid`/`setgid`: the new ids, or the errno Linux gives. A privileged
/// task sets all four; anyone else may set the effective (and filesystem)
/// id to its real or saved one.
pub(crate) fn setid_rule(old: Ids, id: u32, privileged: bool) -> Result<Ids, Errno> {
    let [r, _, s, _] = old;
    if id == NO_ID {
        return Err(Errno::EINVAL);
    }
    if privileged {
        Ok([id; 4])
    } else if id == r || id == s {
        Ok([r, id, s, id])
    } else {
        Err(Errno::EPERM)
    }
}

/// `setreuid`/`setregid`: an unprivileged task may set the real id to its
/// real or effective one, the effective id to any of its real, effective
/// or saved ones. The saved id follows the new effective one when the real
/// id is set or the effective one becomes other than the (old) real id.
pub(crate) fn setreid_rule(old: Ids, rid: u32, eid: u32, privileged: bool) -> Result<Ids, Errno> {
    let [r, e, s, _] = old;
    let mut new = old;
    if rid != NO_ID {
        if rid != r && rid != e && !privileged {
            return Err(Errno::EPERM);
        }
        new[0] = rid;
    }
    if eid != NO_ID {
        if eid != r && eid != e && eid != s && !privileged {
            return Err(Errno::EPERM);
        }
        new[1] = eid;
    }
    if rid != NO_ID || (eid != NO_ID && eid != r) {
        new[2] = new[1];
    }
    new[3] = new[1];
    Ok(new)
}

/// `setresuid`/`setresgid`: an unprivileged task may set each id to any of
/// its current real, effective or saved ones; the filesystem id follows
/// the effective one.
pub(crate) fn setresid_rule(old: Ids, rid: u32, eid: u32, sid: u32, privileged: bool) -> Result<Ids, Errno> {
    let [r, e, s, f] = old;
    let unchanged =
        (rid == NO_ID || rid == r) && (eid == NO_ID || (eid == e && eid == f)) && (sid == NO_ID || sid == s);
    if unchanged {
        return Ok(old);
    }
    let foreign = |id: u32| id != NO_ID && id != r && id != e && id != s;
    if (foreign(rid) || foreign(eid) || foreign(sid)) && !privileged {
        return Err(Errno::EPERM);
    }
    let pick = |id: u32, cur: u32| if id == NO_ID { cur } else { id };
    let e2 = pick(eid, e);
    Ok([pick(rid, r), e2, pick(sid, s), e2])
}

/// `setfsuid`/`setfsgid`: the new ids (unchanged when refused). Anyone may
/// set the filesystem id to one of its real, effective, saved or current
/// filesystem ids; a privileged task to any.
pub(crate) fn setfsid_rule(old: Ids, id: u32, privileged: bool) -> Ids {
    let [r, e, s, f] = old;
    let allowed = id != NO_ID && (privileged || id == r || id == e || id == s || id == f);
    if allowed {
        [r, e, s, id]
    } else {
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::caps::{bit, ALL, CAP_DAC_OVERRIDE, CAP_KILL, CAP_SETUID};

    #[test]
    fn setuid_rules() {
        let user = [1000, 1000, 1000, 1000];
        assert_eq!(setid_rule(user, 0, false), Err(Errno::EPERM));
        assert_eq!(setid_rule(user, 1000, false), Ok(user));
        assert_eq!(setid_rule(user, NO_ID, true), Err(Errno::EINVAL));
        assert_eq!(setid_rule([0; 4], 1000, true), Ok([1000; 4]));
        // An unprivileged process may switch its euid back to the saved id.
        assert_eq!(setid_rule([1000, 1000, 0, 1000], 0, false), Ok([1000, 0, 0, 0]));
    }

    #[test]
    fn setreuid_rules() {
        let ids = [1000, 2000, 3000, 2000];
        assert_eq!(setreid_rule(ids, NO_ID, NO_ID, false), Ok(ids));
        assert_eq!(setreid_rule(ids, 2000, NO_ID, false), Ok([2000, 2000, 2000, 2000]));
        assert_eq!(setreid_rule(ids, NO_ID, 3000, false), Ok([1000, 3000, 3000, 3000]));
        assert_eq!(setreid_rule(ids, NO_ID, 1000, false), Ok([1000, 1000, 3000, 1000]));
        assert_eq!(setreid_rule(ids, 3000, NO_ID, false), Err(Errno::EPERM));
        assert_eq!(setreid_rule(ids, NO_ID, 5, false), Err(Errno::EPERM));
        assert_eq!(setreid_rule(ids, 5, 6, true), Ok([5, 6, 6, 6]));
    }

    #[test]
    fn setresuid_rules() {
        let ids = [1000, 2000, 3000, 2000];
        assert_eq!(setresid_rule(ids, NO_ID, NO_ID, NO_ID, false), Ok(ids));
        // Any permutation of the current three ids is allowed unprivileged.
        assert_eq!(setresid_rule(ids, 3000, 1000, 2000, false), Ok([3000, 1000, 2000, 1000]));
        assert_eq!(setresid_rule(ids, 5, NO_ID, NO_ID, false), Err(Errno::EPERM));
        assert_eq!(setresid_rule(ids, NO_ID, NO_ID, 5, false), Err(Errno::EPERM), "a foreign saved id");
        assert_eq!(setresid_rule(ids, 5, 5, 5, true), Ok([5, 5, 5, 5]));
        // fsuid follows euid even when only that was out of sync.
        assert_eq!(setresid_rule([1, 1, 1, 7], NO_ID, 1, NO_ID, false), Ok([1, 1, 1, 1]));
    }

    #[test]
    fn setfsuid_rules() {
        let ids = [1000, 1000, 1000, 1000];
        assert_eq!(setfsid_rule(ids, 0, false), ids);
        assert_eq!(setfsid_rule(ids, 0, true), [1000, 1000, 1000, 0]);
        assert_eq!(setfsid_rule(ids, NO_ID, true), ids);
        assert_eq!(setfsid_rule([1, 2, 3, 4], 3, false), [1, 2, 3, 3], "the saved id is allowed");
    }

    #[test]
    fn ids_round_trip_through_credentials() {
        let mut c = Credentials::new(1, 2);
        c.set_ids(IdKind::Group, [3, 4, 5, 6]);
        assert_eq!(c.ids(IdKind::Group), [3, 4, 5, 6]);
        assert_eq!(c.ids(IdKind::User), [1, 1, 1, 1]);
    }

    #[test]
    fn unprivileged_setresuid_is_refused_and_changes_nothing() {
        let mut c = Credentials::new(1000, 1000);
        let before = c.clone();
        let r = c.change_ids(IdKind::User, false, |old, p| setresid_rule(old, 0, 0, 0, p));
        assert_eq!(r, Err(Errno::EPERM));
        assert_eq!(c, before);
    }

    #[test]
    fn root_dropping_to_a_user_loses_its_capabilities() {
        // capabilities(7): when all of the real, effective and saved uids
        // leave 0, the permitted and effective sets are cleared.
        let mut c = Credentials::new(0, 0);
        c.change_ids(IdKind::User, false, |old, p| setresid_rule(old, 1000, 1000, 1000, p)).unwrap();
        assert_eq!(c.ids(IdKind::User), [1000; 4]);
        assert_eq!((c.caps.effective, c.caps.permitted), (0, 0));
        // Having dropped CAP_SETUID, it cannot come back.
        let r = c.change_ids(IdKind::User, false, |old, p| setid_rule(old, 0, p));
        assert_eq!(r, Err(Errno::EPERM));
    }

    #[test]
    fn keepcaps_keeps_the_permitted_set_across_the_drop() {
        let mut c = Credentials::new(0, 0);
        c.change_ids(IdKind::User, true, |old, p| setresid_rule(old, 1000, 1000, 1000, p)).unwrap();
        assert_eq!((c.caps.effective, c.caps.permitted), (0, ALL));
    }

    #[test]
    fn seteuid_away_from_root_and_back_moves_the_effective_set() {
        // capabilities(7): euid 0 -> nonzero clears the effective set;
        // nonzero -> 0 copies the permitted set into it. The saved uid 0
        // keeps the permitted set.
        let mut c = Credentials::new(0, 0);
        c.change_ids(IdKind::User, false, |old, p| setreid_rule(old, NO_ID, 1000, p)).unwrap();
        assert_eq!(c.ids(IdKind::User), [0, 1000, 1000, 1000], "a new euid other than the ruid sets the saved uid");
        let mut c = Credentials::new(0, 0);
        c.change_ids(IdKind::User, false, |old, p| setresid_rule(old, NO_ID, 1000, NO_ID, p)).unwrap();
        assert_eq!((c.caps.effective, c.caps.permitted), (0, ALL));
        assert!(!c.capable(CAP_SETUID));
        // With euid 1000 it holds no CAP_SETUID, but the saved uid is 0.
        c.change_ids(IdKind::User, false, |old, p| setresid_rule(old, NO_ID, 0, NO_ID, p)).unwrap();
        assert_eq!(c.caps.effective, ALL);
    }

    #[test]
    fn group_changes_leave_capabilities_alone() {
        let mut c = Credentials::new(0, 0);
        c.change_ids(IdKind::Group, false, |old, p| setid_rule(old, 1000, p)).unwrap();
        assert_eq!(c.ids(IdKind::Group), [1000; 4]);
        assert_eq!(c.caps, Capabilities::for_uid(0));
    }

    #[test]
    fn setfsuid_returns_the_old_id_and_carries_the_fs_capabilities() {
        let mut c = Credentials::new(0, 0);
        assert_eq!(c.change_fsid(IdKind::User, 1000), 0);
        assert!(!c.capable(CAP_DAC_OVERRIDE) && c.capable(CAP_KILL));
        assert_eq!(c.change_fsid(IdKind::User, 0), 1000);
        assert!(c.capable(CAP_DAC_OVERRIDE));
        let mut user = Credentials::new(1000, 1000);
        assert_eq!(user.change_fsid(IdKind::User, 0), 1000, "refused, yet the old id is returned");
        assert_eq!(user.fsuid, 1000);
    }

    #[test]
    fn groups_are_validated_and_sorted() {
        let mut c = Credentials::new(0, 0);
        assert!(c.may_set_groups());
        assert_eq!(c.set_groups(vec![30, 10, 20]), Ok(()));
        assert_eq!(c.groups, vec![10, 20, 30]);
        assert_eq!(c.set_groups(vec![1, NO_ID]), Err(Errno::EINVAL));
        assert_eq!(c.groups, vec![10, 20, 30]);
        assert!(!Credentials::new(1000, 1000).may_set_groups());
    }

    #[test]
    fn access_to_other_processes() {
        let me = Credentials::new(1000, 1000);
        let mut other = Credentials::new(1000, 1000);
        assert!(me.may_prlimit(&other) && me.may_read_process(&other, true));
        assert!(!me.may_read_process(&other, false), "not dumpable");
        other.suid = 0;
        assert!(!me.may_prlimit(&other) && !me.may_read_process(&other, true));
        assert!(me.same_owner(&other));
        let root = Credentials::new(0, 0);
        assert!(root.may_prlimit(&other) && root.may_read_process(&other, false));
        assert!(!root.same_owner(&other));
        let mut raised = Credentials::new(1000, 1000);
        raised.caps.effective = bit(CAP_KILL);
        assert!(!raised.may_prlimit(&Credentials::new(2000, 2000)));
    }

    #[test]
    fn reading_a_process_needs_its_permitted_caps() {
        let me = Credentials::new(1000, 1000);
        let mut kept = Credentials::new(1000, 1000);
        kept.caps.permitted = bit(CAP_KILL);
        assert!(!me.may_read_process(&kept, true), "target holds a capability we lack");
        let mut same = Credentials::new(1000, 1000);
        same.caps.permitted = bit(CAP_KILL);
        assert!(same.may_read_process(&kept, true));
        assert!(Credentials::new(0, 0).may_read_process(&kept, true));
    }

    #[test]
    fn id_and_cap_changes_reset_dumpable() {
        let old = Credentials::new(0, 0);
        assert!(!old.change_resets_dumpable(&old.clone()));
        let mut new = old.clone();
        new.uid = 5;
        assert!(!old.change_resets_dumpable(&new), "the real uid alone does not");
        new.euid = 5;
        assert!(old.change_resets_dumpable(&new));
        let mut new = old.clone();
        new.fsgid = 5;
        assert!(old.change_resets_dumpable(&new));
        let mut new = old.clone();
        new.caps.permitted = 0;
        new.caps.effective = 0;
        assert!(!old.change_resets_dumpable(&new), "losing caps does not");
        let user = Credentials::new(1000, 1000);
        let mut raised = user.clone();
        raised.caps.permitted = bit(CAP_KILL);
        assert!(user.change_resets_dumpable(&raised), "gaining a permitted cap does");
    }
}
