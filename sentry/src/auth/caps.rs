//! Capabilities as emulated credentials: the five sets a task carries
//! (effective, permitted, inheritable, bounding, ambient) and Linux's rules
//! for how they change when the task's uids change and when it executes a
//! program (commoncap.c, without file capabilities: the sandbox's files
//! carry none). Every privilege check of the sentry asks the effective set.

use crate::abi::Errno;

/// Capability numbers, as in linux/capability.h.
pub const CAP_CHOWN: u32 = 0;
pub const CAP_DAC_OVERRIDE: u32 = 1;
pub const CAP_DAC_READ_SEARCH: u32 = 2;
pub const CAP_FOWNER: u32 = 3;
pub const CAP_FSETID: u32 = 4;
pub const CAP_KILL: u32 = 5;
pub const CAP_SETGID: u32 = 6;
pub const CAP_SETUID: u32 = 7;
pub const CAP_SETPCAP: u32 = 8;
pub const CAP_LINUX_IMMUTABLE: u32 = 9;
pub const CAP_NET_BIND_SERVICE: u32 = 10;
pub const CAP_NET_ADMIN: u32 = 12;
pub const CAP_NET_RAW: u32 = 13;
pub const CAP_IPC_LOCK: u32 = 14;
pub const CAP_IPC_OWNER: u32 = 15;
pub const CAP_SYS_CHROOT: u32 = 18;
pub const CAP_SYS_PTRACE: u32 = 19;
pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYS_NICE: u32 = 23;
pub const CAP_SYS_RESOURCE: u32 = 24;
pub const CAP_MKNOD: u32 = 27;
pub const CAP_MAC_OVERRIDE: u32 = 32;
pub const CAP_SYSLOG: u32 = 34;
pub const CAP_WAKE_ALARM: u32 = 35;
pub const CAP_LAST_CAP: u32 = 40;

/// Every capability up to CAP_LAST_CAP.
pub const ALL: u64 = (1 << (CAP_LAST_CAP + 1)) - 1;

/// The capabilities that follow the filesystem uid (CAP_FS_MASK).
const FS_MASK: u64 = bit(CAP_CHOWN)
    | bit(CAP_DAC_OVERRIDE)
    | bit(CAP_DAC_READ_SEARCH)
    | bit(CAP_FOWNER)
    | bit(CAP_FSETID)
    | bit(CAP_LINUX_IMMUTABLE)
    | bit(CAP_MAC_OVERRIDE)
    | bit(CAP_MKNOD);

/// Names as the OCI spec and capsh write them, by number.
const NAMES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

pub const fn bit(cap: u32) -> u64 {
    1 << cap
}

/// The bit of capability number `cap` as a guest passes it; EINVAL past
/// CAP_LAST_CAP (`cap_valid`).
pub fn valid_bit(cap: u64) -> Result<u64, Errno> {
    u32::try_from(cap).ok().filter(|&c| c <= CAP_LAST_CAP).map(bit).ok_or(Errno::EINVAL)
}

/// The three sets `capget`/`capset` carry: effective, permitted,
/// inheritable.
pub type CapSets = [u64; 3];

/// Every capability's name, as the OCI spec writes it (`CAP_CHOWN` …).
pub fn all_names() -> Vec<String> {
    NAMES.iter().map(|n| format!("CAP_{n}")).collect()
}

/// The set named by capability names such as `CAP_NET_ADMIN`; unknown
/// names are returned as the error.
pub fn parse_set<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<u64, String> {
    let mut set = 0;
    for name in names {
        let upper = name.to_ascii_uppercase();
        let bare = upper.strip_prefix("CAP_").unwrap_or(&upper);
        let n = NAMES.iter().position(|&k| k == bare).ok_or_else(|| name.to_string())?;
        set |= 1 << n;
    }
    Ok(set)
}

/// A task's capability sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    pub effective: u64,
    pub permitted: u64,
    pub inheritable: u64,
    pub bounding: u64,
    pub ambient: u64,
}

impl Capabilities {
    /// What a process of `uid` starts with when nobody said otherwise:
    /// root has every capability, anyone else none; the bounding set is
    /// full.
    pub fn for_uid(uid: u32) -> Capabilities {
        let all = if uid == 0 { ALL } else { 0 };
        Capabilities { effective: all, permitted: all, inheritable: 0, bounding: ALL, ambient: 0 }
    }

    /// The five sets as `E:P:I:B:A` in hex (the command line's and the
    /// control protocol's form).
    pub fn encode(&self) -> String {
        let s = [self.effective, self.permitted, self.inheritable, self.bounding, self.ambient];
        s.map(|v| format!("{v:x}")).join(":")
    }

    /// Parses `encode`'s form; sets beyond CAP_LAST_CAP are refused.
    pub fn decode(text: &str) -> Option<Capabilities> {
        let v: Vec<u64> = text.split(':').map(|p| u64::from_str_radix(p, 16).ok()).collect::<Option<_>>()?;
        let [effective, permitted, inheritable, bounding, ambient] = <[u64; 5]>::try_from(v).ok()?;
        let c = Capabilities { effective, permitted, inheritable, bounding, ambient };
        (c.encode() == text && [effective, permitted, inheritable, bounding, ambient].iter().all(|s| s & !ALL == 0))
            .then_some(c)
    }

    pub fn has(&self, cap: u32) -> bool {
        self.effective & bit(cap) != 0
    }

    /// The effective, permitted and inheritable sets, as `capget` reports
    /// them.
    pub fn sets(&self) -> CapSets {
        [self.effective, self.permitted, self.inheritable]
    }

    /// `capset` on oneself (`cap_capset`): bits past the last capability
    /// are dropped; the inheritable set may grow only within the bounding
    /// set, and beyond the permitted set only with CAP_SETPCAP; the
    /// permitted set may only shrink and the effective set must lie in it.
    /// Ambient capabilities no longer both permitted and inheritable go.
    pub fn capset(&mut self, new: CapSets) -> Result<(), Errno> {
        let [e, p, i] = new.map(|set| set & ALL);
        let subset = |a: u64, b: u64| a & !b == 0;
        if !self.has(CAP_SETPCAP) && !subset(i, self.inheritable | self.permitted) {
            return Err(Errno::EPERM);
        }
        if !subset(i, self.inheritable | self.bounding) || !subset(p, self.permitted) || !subset(e, p) {
            return Err(Errno::EPERM);
        }
        (self.effective, self.permitted, self.inheritable) = (e, p, i);
        self.ambient &= p & i;
        Ok(())
    }

    /// PR_CAPBSET_DROP: removing a capability from the bounding set needs
    /// CAP_SETPCAP.
    pub fn drop_bounding(&mut self, bit: u64) -> Result<(), Errno> {
        if !self.has(CAP_SETPCAP) {
            return Err(Errno::EPERM);
        }
        self.bounding &= !bit;
        Ok(())
    }

    /// PR_CAP_AMBIENT_RAISE: a capability may enter the ambient set only
    /// while it is both permitted and inheritable.
    pub fn raise_ambient(&mut self, bit: u64) -> Result<(), Errno> {
        if self.permitted & self.inheritable & bit == 0 {
            return Err(Errno::EPERM);
        }
        self.ambient |= bit;
        Ok(())
    }

    /// The sets after setuid/setreuid/setresuid change the (real,
    /// effective, saved) uids from `old` to `new`, as cap_emulate_setxuid:
    /// losing uid 0 from all three drops the permitted and effective sets
    /// (unless `keep_caps`) and the ambient set; the effective uid leaving
    /// 0 drops the effective set, coming to 0 raises it to the permitted.
    pub fn after_setuid(mut self, old: [u32; 3], new: [u32; 3], keep_caps: bool) -> Capabilities {
        if old.contains(&0) && !new.contains(&0) {
            if !keep_caps {
                self.permitted = 0;
                self.effective = 0;
            }
            self.ambient = 0;
        }
        if old[1] == 0 && new[1] != 0 {
            self.effective = 0;
        }
        if old[1] != 0 && new[1] == 0 {
            self.effective = self.permitted;
        }
        self
    }

    /// The sets after setfsuid changes the filesystem uid: it carries the
    /// filesystem capabilities (CAP_FS_MASK) away from 0 and back.
    pub fn after_setfsuid(mut self, old: u32, new: u32) -> Capabilities {
        if old == 0 && new != 0 {
            self.effective &= !FS_MASK;
        }
        if old != 0 && new == 0 {
            self.effective |= self.permitted & FS_MASK;
        }
        self
    }

    /// The sets after executing a program with no file capabilities, by a
    /// task whose real and effective uids are `ruid` and `euid` after the
    /// exec (set-user-ID applied): root gets its bounding and inheritable
    /// sets as permitted (effective too when the effective uid is 0); anyone
    /// else keeps only its ambient capabilities. A set-id program clears
    /// the ambient set. With `no_new_privs` nothing beyond the old
    /// permitted set is gained.
    pub fn after_exec(self, ruid: u32, euid: u32, setid: bool, no_new_privs: bool) -> Capabilities {
        let ambient = if setid { 0 } else { self.ambient };
        let mut permitted = ambient;
        if euid == 0 || ruid == 0 {
            permitted = self.bounding | self.inheritable | ambient;
        }
        if no_new_privs {
            permitted &= self.permitted;
        }
        let effective = if euid == 0 { permitted } else { ambient & permitted };
        Capabilities { effective, permitted, inheritable: self.inheritable, bounding: self.bounding, ambient }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_with_or_without_the_prefix() {
        assert_eq!(parse_set(["CAP_CHOWN", "NET_BIND_SERVICE", "cap_sys_admin"]), Ok(1 | 1 << 10 | 1 << 21));
        assert_eq!(parse_set(["CAP_CHECKPOINT_RESTORE"]), Ok(1 << 40));
        assert_eq!(parse_set(["CAP_FLY"]), Err("CAP_FLY".into()));
        assert_eq!(NAMES.len(), CAP_LAST_CAP as usize + 1);
    }

    #[test]
    fn the_text_form_round_trips_and_refuses_garbage() {
        let c = Capabilities { effective: 1, permitted: 3, inheritable: 0, bounding: ALL, ambient: 2 };
        assert_eq!(c.encode(), "1:3:0:1ffffffffff:2");
        assert_eq!(Capabilities::decode(&c.encode()), Some(c));
        for bad in ["", "1:2:3:4", "1:2:3:4:5:6", "x:0:0:0:0", "20000000000:0:0:0:0", "01:0:0:0:0"] {
            assert_eq!(Capabilities::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn root_starts_with_everything_others_with_nothing() {
        assert!(Capabilities::for_uid(0).has(CAP_SYS_ADMIN));
        let user = Capabilities::for_uid(1000);
        assert!(!user.has(CAP_CHOWN));
        assert_eq!(user.bounding, ALL);
    }

    #[test]
    fn dropping_root_drops_capabilities_unless_kept() {
        let root = Capabilities::for_uid(0);
        let user = root.after_setuid([0; 3], [1000; 3], false);
        assert_eq!((user.effective, user.permitted), (0, 0));
        let kept = root.after_setuid([0; 3], [1000; 3], true);
        assert_eq!((kept.effective, kept.permitted), (0, ALL), "the effective uid left 0");
        // Keep-caps with an effective uid already elsewhere keeps the
        // effective set too.
        let mut raised = Capabilities::for_uid(1000);
        (raised.permitted, raised.effective) = (bit(CAP_KILL), bit(CAP_KILL));
        let kept = raised.after_setuid([0, 1000, 0], [1000; 3], true);
        assert!(kept.has(CAP_KILL));
        // seteuid(1000) and back: the effective set follows.
        let away = root.after_setuid([0; 3], [0, 1000, 0], false);
        assert_eq!((away.effective, away.permitted), (0, ALL));
        let back = away.after_setuid([0, 1000, 0], [0; 3], false);
        assert_eq!(back.effective, ALL);
        // setfsuid(1000) drops just the filesystem capabilities.
        let fs = root.after_setfsuid(0, 1000);
        assert!(!fs.has(CAP_DAC_OVERRIDE) && fs.has(CAP_KILL));
        assert!(fs.after_setfsuid(1000, 0).has(CAP_DAC_OVERRIDE));
    }

    #[test]
    fn capset_may_only_lower_permitted_and_keep_effective_within_it() {
        let try_set = |mut c: Capabilities, sets| c.capset(sets);
        let mut root = Capabilities::for_uid(0);
        assert_eq!(try_set(root, [ALL, ALL, 0]), Ok(()));
        assert_eq!(try_set(root, [1, 0, 0]), Err(Errno::EPERM), "effective beyond permitted");
        assert_eq!(try_set(root, [0, 0, 1]), Ok(()));
        let bounded = Capabilities { bounding: 2, ..root };
        assert_eq!(try_set(bounded, [0, 0, 1]), Err(Errno::EPERM), "inheritable beyond the bounding set");
        // Bits past CAP_LAST_CAP are ignored, not refused.
        assert_eq!(root.capset([!0, !0, 0]), Ok(()));
        assert_eq!(root.sets(), [ALL, ALL, 0]);
        let mut user = Capabilities::for_uid(1000);
        assert_eq!(user.capset([0, 0, 0]), Ok(()));
        assert_eq!(user.capset([0, 1, 0]), Err(Errno::EPERM), "a new permitted capability");
        assert_eq!(user.capset([0, 0, 1]), Err(Errno::EPERM), "inheritable without CAP_SETPCAP");
        // Lowering the permitted set takes the ambient capability with it.
        let mut amb = Capabilities::for_uid(0);
        amb.inheritable = bit(CAP_KILL);
        amb.ambient = bit(CAP_KILL);
        assert_eq!(amb.capset([0, bit(CAP_CHOWN), bit(CAP_KILL)]), Ok(()));
        assert_eq!(amb.ambient, 0);
    }

    #[test]
    fn ambient_and_bounding_changes() {
        let mut c = Capabilities::for_uid(0);
        assert_eq!(c.raise_ambient(bit(CAP_KILL)), Err(Errno::EPERM), "not inheritable");
        c.inheritable = bit(CAP_KILL);
        assert_eq!(c.raise_ambient(bit(CAP_KILL)), Ok(()));
        assert_eq!(c.ambient, bit(CAP_KILL));
        assert_eq!(c.drop_bounding(bit(CAP_KILL)), Ok(()));
        assert_eq!(c.bounding, ALL & !bit(CAP_KILL));
        let mut user = Capabilities::for_uid(1000);
        assert_eq!(user.drop_bounding(bit(CAP_KILL)), Err(Errno::EPERM));
        assert_eq!(valid_bit(u64::from(CAP_LAST_CAP)), Ok(1 << 40));
        assert_eq!(valid_bit(u64::from(CAP_LAST_CAP) + 1), Err(Errno::EINVAL));
        assert_eq!(valid_bit(1 << 32), Err(Errno::EINVAL));
    }

    #[test]
    fn exec_gives_root_its_bounding_set_and_others_their_ambient_set() {
        let mut docker = Capabilities::for_uid(0);
        docker.bounding = bit(CAP_CHOWN) | bit(CAP_KILL);
        docker.effective &= docker.bounding;
        docker.permitted &= docker.bounding;
        let after = docker.after_exec(0, 0, false, false);
        assert_eq!((after.effective, after.permitted), (docker.bounding, docker.bounding));
        let mut user = Capabilities::for_uid(1000);
        user.ambient = bit(CAP_NET_BIND_SERVICE);
        user.permitted = user.ambient;
        user.inheritable = user.ambient;
        let after = user.after_exec(1000, 1000, false, false);
        assert!(after.has(CAP_NET_BIND_SERVICE));
        let setuid_prog = user.after_exec(1000, 1000, true, false);
        assert_eq!(setuid_prog.permitted, 0, "a set-id program clears the ambient set");
        let plain = Capabilities::for_uid(1000).after_exec(1000, 1000, false, false);
        assert_eq!(plain.permitted, 0);
        // no_new_privs: root that gave capabilities up does not regain them.
        let mut lowered = Capabilities::for_uid(0);
        (lowered.permitted, lowered.effective) = (bit(CAP_CHOWN), bit(CAP_CHOWN));
        assert_eq!(lowered.after_exec(0, 0, false, true).permitted, bit(CAP_CHOWN));
        assert_eq!(lowered.after_exec(0, 0, false, false).permitted, ALL);
    }
}
