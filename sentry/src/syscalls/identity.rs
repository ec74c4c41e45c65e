//! System calls: identity. Process and user ids, credentials, host and
//! system information, resource limits, randomness, CPU affinity, process
//! groups and sessions, `prctl`, `arch_prctl`, thread bookkeeping and
//! capabilities.
//!
//! The kernel models capabilities by the effective uid: root holds all of
//! them, everyone else none.

use super::args::{int, uint};
use super::{Entries, Support};
use crate::abi::layout::{Decoder, Encoder};
use crate::abi::{Errno, SysResult};
use crate::auth::{caps, Credentials};
use crate::kernel::limits::{Rlimit, RLIMIT_NLIMITS, RLIMIT_NOFILE};
use crate::kernel::{Task, Thread};
use crate::loader::host_random;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

const PGRP: &str = "setpgid on a child that already execed is allowed (Linux says EACCES)";

pub(super) const ENTRIES: Entries = &[
    ("getpid", sys_getpid, Support::Full),
    ("gettid", sys_gettid, Support::Full),
    ("getppid", sys_getppid, Support::Full),
    ("getuid", sys_getuid, Support::Full),
    ("geteuid", sys_geteuid, Support::Full),
    ("getgid", sys_getgid, Support::Full),
    ("getegid", sys_getegid, Support::Full),
    ("getresuid", sys_getresuid, Support::Full),
    ("getresgid", sys_getresgid, Support::Full),
    ("getgroups", sys_getgroups, Support::Full),
    ("setuid", sys_setuid, Support::Full),
    ("setgid", sys_setgid, Support::Full),
    ("setreuid", sys_setreuid, Support::Full),
    ("setregid", sys_setregid, Support::Full),
    ("setresuid", sys_setresuid, Support::Full),
    ("setresgid", sys_setresgid, Support::Full),
    ("setfsuid", sys_setfsuid, Support::Full),
    ("setfsgid", sys_setfsgid, Support::Full),
    ("setgroups", sys_setgroups, Support::Full),
    ("uname", sys_uname, Support::Full),
    ("sethostname", sys_sethostname, Support::Full),
    ("setdomainname", sys_setdomainname, Support::Full),
    (
        "sysinfo",
        sys_sysinfo,
        Support::Partial("load averages, shared and buffer memory and swap are 0; totalram is the host's RAM"),
    ),
    ("getrlimit", sys_getrlimit, Support::Full),
    (
        "setrlimit",
        sys_setrlimit,
        Support::Partial("limits are recorded; only those the sentry consults (NOFILE, STACK) take effect"),
    ),
    (
        "prlimit64",
        sys_prlimit64,
        Support::Partial("limits are recorded; only those the sentry consults (NOFILE, STACK) take effect"),
    ),
    ("getrandom", sys_getrandom, Support::Full),
    ("sched_getaffinity", sys_sched_getaffinity, Support::Full),
    ("sched_setaffinity", sys_sched_setaffinity, Support::Partial("affinity is recorded, not enforced")),
    ("sched_yield", sys_sched_yield, Support::Full),
    (
        "getcpu",
        sys_getcpu,
        Support::Partial("reports the host CPU of the sentry thread serving the task, and NUMA node 0"),
    ),
    ("getpgrp", sys_getpgrp, Support::Full),
    ("getpgid", sys_getpgid, Support::Full),
    ("getsid", sys_getsid, Support::Full),
    ("setpgid", sys_setpgid, Support::Partial(PGRP)),
    ("setsid", sys_setsid, Support::Partial(PGRP)),
    (
        "prctl",
        sys_prctl,
        Support::Partial(
            "supports SET/GET_NAME, SET/GET_PDEATHSIG (sent when the parent process exits, not its forking \
             thread), SET/GET_DUMPABLE, SET/GET_KEEPCAPS, SET/GET_NO_NEW_PRIVS, CAPBSET_READ/DROP, CAP_AMBIENT, \
             SET/GET_CHILD_SUBREAPER and GET_SECCOMP; \
             other options return EINVAL",
        ),
    ),
    (
        "arch_prctl",
        sys_arch_prctl,
        Support::Partial(
            "ARCH_SET_CPUID returns ENODEV (no CPUID faulting); XSTATE-permission, vDSO-mapping and shadow-stack \
             options return EINVAL",
        ),
    ),
    ("set_tid_address", sys_set_tid_address, Support::Full),
    ("set_robust_list", sys_set_robust_list, Support::Full),
    ("get_robust_list", sys_get_robust_list, Support::Full),
    ("rseq", sys_rseq, Support::Unimplemented("restartable sequences are not supported; glibc falls back")),
    ("capget", sys_capget, Support::Full),
    ("capset", sys_capset, Support::Full),
];

/// `(uid_t)-1` / `(gid_t)-1`: "leave unchanged", and never a valid id.
const NO_ID: u32 = u32::MAX;
/// `__NEW_UTS_LEN`.
const UTS_LEN: usize = 64;
/// `sysctl fs.nr_open`: the ceiling of RLIMIT_NOFILE.
const NR_OPEN: u64 = 1 << 20;

/// A signed value as the raw return register.
fn ret(v: i32) -> u64 {
    u64::from_ne_bytes(i64::from(v).to_ne_bytes())
}

/// Whether capability `cap` is in the task's effective set.
fn capable(task: &Task, cap: u32) -> bool {
    task.thread.creds.read().capable(cap)
}

/// The capability that lets a task set any id of kind `k`.
fn setid_cap(k: Kind) -> u32 {
    match k {
        Kind::User => caps::CAP_SETUID,
        Kind::Group => caps::CAP_SETGID,
    }
}

fn read_array<const N: usize>(task: &Task, addr: u64) -> Result<[u8; N], Errno> {
    let mut b = [0u8; N];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(b)
}

fn put_u32(task: &Task, addr: u64, v: u32) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

fn put_i32(task: &Task, addr: u64, v: i32) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

fn put_u64(task: &Task, addr: u64, v: u64) -> Result<(), Errno> {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())
}

/// The thread `pid` names (0 is the caller), or ESRCH.
fn find_thread(task: &Task, pid: i32) -> Result<Arc<Thread>, Errno> {
    if pid == 0 || pid == task.thread.tid {
        return Ok(task.thread.clone());
    }
    task.kernel.thread(pid).ok_or(Errno::ESRCH)
}

// ---- ids ----

fn sys_getpid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.thread.tgid))
}

fn sys_gettid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.thread.tid))
}

fn sys_getppid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(ret(task.kernel.procs.ppid(task.thread.tgid)))
}

fn sys_getuid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds.read().uid))
}

fn sys_geteuid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds.read().euid))
}

fn sys_getgid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds.read().gid))
}

fn sys_getegid(task: &mut Task, _: [u64; 6]) -> SysResult {
    Ok(u64::from(task.thread.creds.read().egid))
}

/// Which family of ids a `set*id` call changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    User,
    Group,
}

/// Real, effective, saved and filesystem ids, in that order.
type Ids = [u32; 4];

fn get_ids(c: &Credentials, k: Kind) -> Ids {
    match k {
        Kind::User => [c.uid, c.euid, c.suid, c.fsuid],
        Kind::Group => [c.gid, c.egid, c.sgid, c.fsgid],
    }
}

fn put_ids(c: &mut Credentials, k: Kind, [r, e, s, f]: Ids) {
    match k {
        Kind::User => (c.uid, c.euid, c.suid, c.fsuid) = (r, e, s, f),
        Kind::Group => (c.gid, c.egid, c.sgid, c.fsgid) = (r, e, s, f),
    }
}

/// `setuid`/`setgid`: the new ids, or the errno Linux gives.
fn setid_rule(old: Ids, id: u32, privileged: bool) -> Result<Ids, Errno> {
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

/// `setreuid`/`setregid`.
fn setreid_rule(old: Ids, rid: u32, eid: u32, privileged: bool) -> Result<Ids, Errno> {
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

/// `setresuid`/`setresgid`.
fn setresid_rule(old: Ids, rid: u32, eid: u32, sid: u32, privileged: bool) -> Result<Ids, Errno> {
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

/// `setfsuid`/`setfsgid`: the new ids (unchanged when refused).
fn setfsid_rule(old: Ids, id: u32, privileged: bool) -> Ids {
    let [r, e, s, f] = old;
    let allowed = id != NO_ID && (privileged || id == r || id == e || id == s || id == f);
    if allowed {
        [r, e, s, id]
    } else {
        old
    }
}

/// Applies `rule` to the caller's ids of kind `k`.
fn change_ids(task: &Task, k: Kind, rule: impl FnOnce(Ids, bool) -> Result<Ids, Errno>) -> SysResult {
    let privileged = capable(task, setid_cap(k));
    let keep_caps = task.thread.attrs.lock().keepcaps;
    let mut c = task.thread.creds.write();
    let old = get_ids(&c, k);
    let new = rule(old, privileged)?;
    put_ids(&mut c, k, new);
    if let Kind::User = k {
        let [r, e, s, _] = old;
        let [nr, ne, ns, _] = new;
        c.caps = c.caps.after_setuid([r, e, s], [nr, ne, ns], keep_caps);
    }
    Ok(0)
}

fn sys_setuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::User, |old, p| setid_rule(old, uint(a[0]), p))
}

fn sys_setgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::Group, |old, p| setid_rule(old, uint(a[0]), p))
}

fn sys_setreuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::User, |old, p| setreid_rule(old, uint(a[0]), uint(a[1]), p))
}

fn sys_setregid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::Group, |old, p| setreid_rule(old, uint(a[0]), uint(a[1]), p))
}

fn sys_setresuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::User, |old, p| setresid_rule(old, uint(a[0]), uint(a[1]), uint(a[2]), p))
}

fn sys_setresgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_ids(task, Kind::Group, |old, p| setresid_rule(old, uint(a[0]), uint(a[1]), uint(a[2]), p))
}

/// `setfsuid`/`setfsgid` return the previous filesystem id, always.
fn change_fsid(task: &Task, k: Kind, id: u32) -> SysResult {
    let privileged = capable(task, setid_cap(k));
    let mut c = task.thread.creds.write();
    let old = get_ids(&c, k);
    let new = setfsid_rule(old, id, privileged);
    put_ids(&mut c, k, new);
    if let Kind::User = k {
        c.caps = c.caps.after_setfsuid(old[3], new[3]);
    }
    Ok(u64::from(old[3]))
}

fn sys_setfsuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_fsid(task, Kind::User, uint(a[0]))
}

fn sys_setfsgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    change_fsid(task, Kind::Group, uint(a[0]))
}

/// Writes three ids to three guest pointers, stopping at the first fault.
fn put_three(task: &Task, ptrs: [u64; 3], ids: [u32; 3]) -> SysResult {
    for (p, id) in ptrs.into_iter().zip(ids) {
        put_u32(task, p, id)?;
    }
    Ok(0)
}

fn sys_getresuid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let [r, e, s, _] = get_ids(&task.thread.creds.read(), Kind::User);
    put_three(task, [a[0], a[1], a[2]], [r, e, s])
}

fn sys_getresgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let [r, e, s, _] = get_ids(&task.thread.creds.read(), Kind::Group);
    put_three(task, [a[0], a[1], a[2]], [r, e, s])
}

fn sys_getgroups(task: &mut Task, a: [u64; 6]) -> SysResult {
    let size = usize::try_from(int(a[0])).map_err(|_| Errno::EINVAL)?;
    let groups = task.thread.creds.read().groups.clone();
    if size != 0 {
        if groups.len() > size {
            return Err(Errno::EINVAL);
        }
        let mut e = Encoder::with_capacity(groups.len() * 4);
        for g in &groups {
            e.u32(*g);
        }
        task.thread.mm().copy_out(a[1], e.as_bytes())?;
    }
    Ok(groups.len() as u64)
}

/// `NGROUPS_MAX`.
const NGROUPS_MAX: u32 = 65536;

fn sys_setgroups(task: &mut Task, a: [u64; 6]) -> SysResult {
    if !capable(task, caps::CAP_SETGID) {
        return Err(Errno::EPERM);
    }
    let n = uint(a[0]);
    if n > NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    let mut buf = vec![0u8; n as usize * 4];
    task.thread.mm().copy_in(a[1], &mut buf)?;
    let groups = parse_groups(&buf)?;
    task.thread.creds.write().groups = groups;
    Ok(0)
}

/// The guest's `gid_t` array, validated and sorted as Linux keeps it.
fn parse_groups(buf: &[u8]) -> Result<Vec<u32>, Errno> {
    let mut d = Decoder::new(buf);
    let mut groups: Vec<u32> = (0..buf.len() / 4).map(|_| d.u32()).collect();
    if groups.contains(&NO_ID) {
        return Err(Errno::EINVAL);
    }
    groups.sort_unstable();
    Ok(groups)
}

// ---- host and system information ----

/// Reads, once, the host facts these calls report, so that it happens
/// before the sentry is confined (its filter forbids opening files).
pub(crate) fn prime_host_info() {
    host_uts();
    host_total_ram();
    host_cpus();
}

/// The host's kernel release and version, as uname reports them.
fn host_uts() -> &'static (Vec<u8>, Vec<u8>) {
    static UTS: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    UTS.get_or_init(|| {
        // SAFETY: utsname is character arrays only; all-zero is valid.
        let mut u: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: `u` is a valid, writable utsname.
        if unsafe { libc::uname(&mut u) } != 0 {
            log::warn!("host uname failed: {}", std::io::Error::last_os_error());
        }
        (c_chars(&u.release), c_chars(&u.version))
    })
}

/// The bytes of a NUL-terminated C character array.
fn c_chars(f: &[libc::c_char]) -> Vec<u8> {
    f.iter().map(|c| c.to_ne_bytes()[0]).take_while(|&b| b != 0).collect()
}

/// `struct utsname`: six NUL-padded fields of 65 bytes.
fn encode_utsname(fields: [&[u8]; 6]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(6 * (UTS_LEN + 1));
    for f in fields {
        e.cstr_array(f, UTS_LEN + 1);
    }
    e.finish()
}

fn sys_uname(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (release, version) = host_uts();
    let hostname = task.kernel.hostname.lock().clone();
    let domainname = task.kernel.domainname.lock().clone();
    let buf = encode_utsname([b"Linux", &hostname, release, version, b"x86_64", &domainname]);
    task.thread.mm().copy_out(a[0], &buf)?;
    Ok(0)
}

/// Reads a new host or domain name as `sethostname` does.
fn read_uts_name(task: &Task, addr: u64, len: u64) -> Result<Vec<u8>, Errno> {
    if !capable(task, caps::CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    let len = usize::try_from(int(len)).ok().filter(|&l| l <= UTS_LEN).ok_or(Errno::EINVAL)?;
    let mut buf = vec![0u8; len];
    task.thread.mm().copy_in(addr, &mut buf)?;
    Ok(buf)
}

fn sys_sethostname(task: &mut Task, a: [u64; 6]) -> SysResult {
    let name = read_uts_name(task, a[0], a[1])?;
    *task.kernel.hostname.lock() = name;
    Ok(0)
}

fn sys_setdomainname(task: &mut Task, a: [u64; 6]) -> SysResult {
    let name = read_uts_name(task, a[0], a[1])?;
    *task.kernel.domainname.lock() = name;
    Ok(0)
}

/// The host's total RAM in bytes.
fn host_total_ram() -> u64 {
    static TOTAL: OnceLock<u64> = OnceLock::new();
    *TOTAL.get_or_init(|| {
        // SAFETY: sysinfo is integers only; all-zero is valid.
        let mut si: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: `si` is a valid, writable sysinfo.
        if unsafe { libc::sysinfo(&mut si) } != 0 {
            log::warn!("host sysinfo failed: {}", std::io::Error::last_os_error());
            return 0;
        }
        si.totalram.saturating_mul(u64::from(si.mem_unit))
    })
}

/// `struct sysinfo` (112 bytes) with `mem_unit` 1.
fn encode_sysinfo(uptime: i64, totalram: u64, freeram: u64, procs: u16) -> Vec<u8> {
    let mut e = Encoder::with_capacity(112);
    e.i64(uptime);
    e.zeros(3 * 8); // loads
    e.u64(totalram).u64(freeram);
    e.zeros(4 * 8); // sharedram, bufferram, totalswap, freeswap
    e.u16(procs).u16(0).align(8);
    e.zeros(2 * 8); // totalhigh, freehigh
    e.u32(1); // mem_unit
    e.align(8);
    e.finish()
}

fn sys_sysinfo(task: &mut Task, a: [u64; 6]) -> SysResult {
    let up = task.kernel.uptime();
    let uptime = i64::try_from(up.as_secs()).unwrap_or(i64::MAX).saturating_add(i64::from(up.subsec_nanos() != 0));
    let total = host_total_ram();
    let free = total.saturating_sub(task.kernel.memory.used());
    let procs = u16::try_from(task.kernel.threads.lock().len()).unwrap_or(u16::MAX);
    task.thread.mm().copy_out(a[0], &encode_sysinfo(uptime, total, free, procs))?;
    Ok(0)
}

// ---- resource limits ----

fn encode_rlimit(l: Rlimit) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&l.cur.to_le_bytes());
    b[8..].copy_from_slice(&l.max.to_le_bytes());
    b
}

fn decode_rlimit(b: &[u8; 16]) -> Rlimit {
    let mut d = Decoder::new(b);
    Rlimit { cur: d.u64(), max: d.u64() }
}

fn rlimit_index(resource: u64) -> Result<usize, Errno> {
    usize::try_from(uint(resource)).ok().filter(|&r| r < RLIMIT_NLIMITS).ok_or(Errno::EINVAL)
}

/// Validates a new limit against the old one as `do_prlimit` does.
fn check_rlimit(resource: usize, old: Rlimit, new: Rlimit, privileged: bool) -> Result<(), Errno> {
    if new.cur > new.max {
        return Err(Errno::EINVAL);
    }
    if resource == RLIMIT_NOFILE && new.max > NR_OPEN {
        return Err(Errno::EPERM);
    }
    if new.max > old.max && !privileged {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Reads and optionally replaces a limit of `target`'s thread group;
/// returns the old limit.
fn do_prlimit(task: &Task, target: &Arc<Thread>, resource: u64, new: Option<Rlimit>) -> Result<Rlimit, Errno> {
    let res = rlimit_index(resource)?;
    let old = target.rlimit(res);
    let Some(new) = new else { return Ok(old) };
    check_rlimit(res, old, new, capable(task, caps::CAP_SYS_RESOURCE))?;
    let mut group: Vec<Arc<Thread>> =
        task.kernel.threads.lock().values().filter(|t| t.tgid == target.tgid).cloned().collect();
    if !group.iter().any(|t| Arc::ptr_eq(t, target)) {
        group.push(target.clone());
    }
    for t in group {
        if let Some(l) = t.rlimits.lock().get_mut(res) {
            *l = new;
        }
    }
    Ok(old)
}

fn sys_getrlimit(task: &mut Task, a: [u64; 6]) -> SysResult {
    let old = do_prlimit(task, &task.thread, a[0], None)?;
    task.thread.mm().copy_out(a[1], &encode_rlimit(old))?;
    Ok(0)
}

fn sys_setrlimit(task: &mut Task, a: [u64; 6]) -> SysResult {
    rlimit_index(a[0])?;
    let new = decode_rlimit(&read_array(task, a[1])?);
    do_prlimit(task, &task.thread, a[0], Some(new))?;
    Ok(0)
}

fn sys_prlimit64(task: &mut Task, a: [u64; 6]) -> SysResult {
    let new = if a[2] != 0 { Some(decode_rlimit(&read_array(task, a[2])?)) } else { None };
    let target = find_thread(task, int(a[0]))?;
    if !Arc::ptr_eq(&target, &task.thread) {
        let c = task.thread.creds();
        let t = target.creds();
        let same = c.uid == t.euid
            && c.uid == t.suid
            && c.uid == t.uid
            && c.gid == t.egid
            && c.gid == t.sgid
            && c.gid == t.gid;
        if !same && !capable(task, caps::CAP_SYS_RESOURCE) {
            return Err(Errno::EPERM);
        }
    }
    let old = do_prlimit(task, &target, a[1], new)?;
    if a[3] != 0 {
        task.thread.mm().copy_out(a[3], &encode_rlimit(old))?;
    }
    Ok(0)
}

// ---- randomness ----

const GRND_NONBLOCK: u32 = 1;
const GRND_RANDOM: u32 = 2;
const GRND_INSECURE: u32 = 4;
/// The most bytes one getrandom call returns (`INT_MAX >> 6`).
const GETRANDOM_MAX: u64 = 33_554_431;

fn check_getrandom_flags(flags: u32) -> Result<(), Errno> {
    if flags & !(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & (GRND_RANDOM | GRND_INSECURE) == GRND_RANDOM | GRND_INSECURE {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn sys_getrandom(task: &mut Task, a: [u64; 6]) -> SysResult {
    check_getrandom_flags(uint(a[2]))?;
    let n = usize::try_from(a[1].min(GETRANDOM_MAX)).map_err(|_| Errno::EINVAL)?;
    let got = task.thread.mm().fill_with(a[0], n, |s| {
        host_random(s);
        Ok(s.len())
    })?;
    Ok(got as u64)
}

// ---- CPU affinity ----

/// The host's CPUs: the online ones (a bit mask in 64-bit words) and
/// `nr_cpu_ids`, the number of possible CPU ids.
struct HostCpus {
    online: Vec<u64>,
    nr_cpu_ids: usize,
}

impl HostCpus {
    /// `cpumask_size()`: the bytes of a kernel CPU mask.
    fn mask_bytes(&self) -> usize {
        self.nr_cpu_ids.div_ceil(64) * 8
    }
}

/// Parses a sysfs CPU list ("0-3,8,10-11") into a mask in 64-bit words.
fn parse_cpu_list(s: &str) -> Option<Vec<u64>> {
    let mut words = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?),
            None => {
                let c = part.parse::<usize>().ok()?;
                (c, c)
            }
        };
        if lo > hi || hi >= 1 << 16 {
            return None;
        }
        for cpu in lo..=hi {
            if words.len() <= cpu / 64 {
                words.resize(cpu / 64 + 1, 0);
            }
            words[cpu / 64] |= 1u64 << (cpu % 64);
        }
    }
    (!words.is_empty()).then_some(words)
}

/// One past the highest CPU in `mask`.
fn cpu_count_bound(mask: &[u64]) -> usize {
    mask.iter().rposition(|&w| w != 0).map_or(0, |i| i * 64 + 64 - mask[i].leading_zeros() as usize)
}

fn host_cpus() -> &'static HostCpus {
    static CPUS: OnceLock<HostCpus> = OnceLock::new();
    CPUS.get_or_init(|| {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/{name}")).ok().and_then(|s| parse_cpu_list(&s))
        };
        let online = read("online").unwrap_or_else(|| {
            // SAFETY: sysconf has no memory-safety preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
            let n = usize::try_from(n).unwrap_or(1).clamp(1, 1 << 16);
            let mut words = vec![0u64; n.div_ceil(64)];
            for cpu in 0..n {
                words[cpu / 64] |= 1u64 << (cpu % 64);
            }
            words
        });
        let possible = read("possible").map_or(0, |m| cpu_count_bound(&m));
        let nr_cpu_ids = possible.max(cpu_count_bound(&online)).max(1);
        HostCpus { online, nr_cpu_ids }
    })
}

/// The guest-visible bytes of a CPU mask, `len` long.
fn mask_to_bytes(mask: &[u64], len: usize) -> Vec<u8> {
    let mut out: Vec<u8> = mask.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.resize(len, 0);
    out
}

/// `a & b`, as long as `a`.
fn and_masks(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().enumerate().map(|(i, w)| w & b.get(i).copied().unwrap_or(0)).collect()
}

fn sys_sched_getaffinity(task: &mut Task, a: [u64; 6]) -> SysResult {
    let len = uint(a[1]) as usize;
    let host = host_cpus();
    if len.saturating_mul(8) < host.nr_cpu_ids || len % 8 != 0 {
        return Err(Errno::EINVAL);
    }
    let target = find_thread(task, int(a[0]))?;
    let mask = match &target.attrs.lock().cpu_affinity {
        Some(m) => and_masks(&host.online, m),
        None => host.online.clone(),
    };
    let n = len.min(host.mask_bytes());
    task.thread.mm().copy_out(a[2], &mask_to_bytes(&mask, n))?;
    Ok(n as u64)
}

fn sys_sched_setaffinity(task: &mut Task, a: [u64; 6]) -> SysResult {
    let host = host_cpus();
    let size = host.mask_bytes();
    let mut buf = vec![0u8; size];
    let n = (uint(a[1]) as usize).min(size);
    task.thread.mm().copy_in(a[2], &mut buf[..n])?;
    let target = find_thread(task, int(a[0]))?;
    let (c, t) = (task.thread.creds(), target.creds());
    if c.euid != t.euid && c.euid != t.uid && !capable(task, caps::CAP_SYS_NICE) {
        return Err(Errno::EPERM);
    }
    let mut d = Decoder::new(&buf);
    let requested: Vec<u64> = (0..size / 8).map(|_| d.u64()).collect();
    let mask = and_masks(&requested, &host.online);
    if mask.iter().all(|&w| w == 0) {
        return Err(Errno::EINVAL);
    }
    target.attrs.lock().cpu_affinity = Some(mask);
    Ok(0)
}

fn sys_sched_yield(_: &mut Task, _: [u64; 6]) -> SysResult {
    std::thread::yield_now();
    Ok(0)
}

fn sys_getcpu(task: &mut Task, a: [u64; 6]) -> SysResult {
    // SAFETY: sched_getcpu has no memory-safety preconditions.
    let cpu = u32::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0);
    let mut ok = true;
    if a[0] != 0 {
        ok &= put_u32(task, a[0], cpu).is_ok();
    }
    if a[1] != 0 {
        ok &= put_u32(task, a[1], 0).is_ok();
    }
    if ok {
        Ok(0)
    } else {
        Err(Errno::EFAULT)
    }
}

// ---- process groups and sessions ----

fn sys_getpgrp(task: &mut Task, _: [u64; 6]) -> SysResult {
    let me = task.thread.tgid;
    Ok(ret(task.kernel.procs.pgid(me).unwrap_or(me)))
}

fn sys_getpgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = find_thread(task, int(a[0]))?.tgid;
    task.kernel.procs.pgid(pid).map(ret).ok_or(Errno::ESRCH)
}

fn sys_getsid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pid = find_thread(task, int(a[0]))?.tgid;
    task.kernel.procs.sid(pid).map(ret).ok_or(Errno::ESRCH)
}

fn sys_setpgid(task: &mut Task, a: [u64; 6]) -> SysResult {
    let pgid = int(a[1]);
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = task.thread.tgid;
    let pid = match int(a[0]) {
        0 => me,
        p => p,
    };
    let target = find_thread(task, pid)?;
    let pid = target.tgid;
    if pid != me && task.kernel.procs.ppid(pid) != me {
        return Err(Errno::ESRCH);
    }
    task.kernel.procs.set_pgid(pid, if pgid == 0 { pid } else { pgid })?;
    Ok(0)
}

fn sys_setsid(task: &mut Task, _: [u64; 6]) -> SysResult {
    task.kernel.procs.set_sid(task.thread.tgid).map(ret)
}

// ---- prctl ----

const PR_SET_PDEATHSIG: i32 = 1;
const PR_GET_PDEATHSIG: i32 = 2;
const PR_GET_DUMPABLE: i32 = 3;
const PR_SET_DUMPABLE: i32 = 4;
const PR_GET_KEEPCAPS: i32 = 7;
const PR_SET_KEEPCAPS: i32 = 8;
const PR_SET_NAME: i32 = 15;
const PR_GET_NAME: i32 = 16;
const PR_GET_SECCOMP: i32 = 21;
const PR_CAPBSET_READ: i32 = 23;
const PR_CAPBSET_DROP: i32 = 24;
const PR_CAP_AMBIENT: i32 = 47;
const PR_CAP_AMBIENT_IS_SET: u64 = 1;
const PR_CAP_AMBIENT_RAISE: u64 = 2;
const PR_CAP_AMBIENT_LOWER: u64 = 3;
const PR_CAP_AMBIENT_CLEAR_ALL: u64 = 4;
const PR_SET_CHILD_SUBREAPER: i32 = 36;
const PR_GET_CHILD_SUBREAPER: i32 = 37;
const PR_SET_NO_NEW_PRIVS: i32 = 38;
const PR_GET_NO_NEW_PRIVS: i32 = 39;
/// `TASK_COMM_LEN`.
const COMM_LEN: usize = 16;

/// Reads a thread name as `PR_SET_NAME` does: up to 15 bytes or a NUL.
fn read_comm(task: &Task, addr: u64) -> Result<Vec<u8>, Errno> {
    let mm = task.thread.mm();
    let mut name = Vec::with_capacity(COMM_LEN - 1);
    let mut at = addr;
    while name.len() < COMM_LEN - 1 {
        let mut b = [0u8];
        mm.copy_in(at, &mut b)?;
        if b[0] == 0 {
            break;
        }
        name.push(b[0]);
        at = at.checked_add(1).ok_or(Errno::EFAULT)?;
    }
    Ok(name)
}

fn sys_prctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (arg2, rest) = (a[1], [a[2], a[3], a[4]]);
    match int(a[0]) {
        PR_SET_PDEATHSIG => {
            let sig = i32::try_from(arg2).ok().filter(|s| *s <= 64).ok_or(Errno::EINVAL)?;
            task.thread.attrs.lock().pdeathsig = sig;
            Ok(0)
        }
        PR_GET_PDEATHSIG => {
            let sig = task.thread.attrs.lock().pdeathsig;
            put_i32(task, arg2, sig)?;
            Ok(0)
        }
        PR_GET_DUMPABLE => Ok(u64::from(task.thread.attrs.lock().dumpable)),
        PR_SET_DUMPABLE => {
            let d = u8::try_from(arg2).ok().filter(|d| *d <= 1).ok_or(Errno::EINVAL)?;
            task.thread.attrs.lock().dumpable = d;
            Ok(0)
        }
        PR_GET_KEEPCAPS => Ok(u64::from(task.thread.attrs.lock().keepcaps)),
        PR_SET_KEEPCAPS => {
            if arg2 > 1 {
                return Err(Errno::EINVAL);
            }
            task.thread.attrs.lock().keepcaps = arg2 == 1;
            Ok(0)
        }
        PR_SET_NAME => {
            let name = read_comm(task, arg2)?;
            *task.thread.comm.lock() = name;
            Ok(0)
        }
        PR_GET_NAME => {
            let mut e = Encoder::with_capacity(COMM_LEN);
            e.cstr_array(&task.thread.comm.lock(), COMM_LEN);
            task.thread.mm().copy_out(arg2, e.as_bytes())?;
            Ok(0)
        }
        PR_GET_SECCOMP => Ok(0),
        PR_CAPBSET_READ => Ok(u64::from(task.thread.creds().caps.bounding & cap_bit(arg2)? != 0)),
        PR_CAPBSET_DROP => {
            let bit = cap_bit(arg2)?;
            let mut c = task.thread.creds.write();
            if !c.capable(caps::CAP_SETPCAP) {
                return Err(Errno::EPERM);
            }
            c.caps.bounding &= !bit;
            Ok(0)
        }
        PR_CAP_AMBIENT => ambient(task, arg2, rest),
        PR_SET_CHILD_SUBREAPER => {
            task.kernel.procs.set_subreaper(task.thread.tgid, arg2 != 0);
            Ok(0)
        }
        PR_GET_CHILD_SUBREAPER => {
            let v = task.kernel.procs.is_subreaper(task.thread.tgid);
            put_i32(task, arg2, i32::from(v))?;
            Ok(0)
        }
        PR_SET_NO_NEW_PRIVS => {
            if arg2 != 1 || rest != [0; 3] {
                return Err(Errno::EINVAL);
            }
            task.thread.attrs.lock().no_new_privs = true;
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS => {
            if arg2 != 0 || rest != [0; 3] {
                return Err(Errno::EINVAL);
            }
            Ok(u64::from(task.thread.attrs.lock().no_new_privs))
        }
        option => {
            log::debug!("prctl: unsupported option {option:#x}");
            Err(Errno::EINVAL)
        }
    }
}

// ---- arch_prctl ----

const ARCH_SET_GS: i32 = 0x1001;
const ARCH_SET_FS: i32 = 0x1002;
const ARCH_GET_FS: i32 = 0x1003;
const ARCH_GET_GS: i32 = 0x1004;
const ARCH_GET_CPUID: i32 = 0x1011;
const ARCH_SET_CPUID: i32 = 0x1012;

fn sys_arch_prctl(task: &mut Task, a: [u64; 6]) -> SysResult {
    let addr = a[1];
    match int(a[0]) {
        ARCH_SET_FS | ARCH_SET_GS if addr >= crate::abi::TASK_SIZE_MAX => Err(Errno::EPERM),
        ARCH_SET_FS => {
            task.cpu.regs.fs = 0;
            task.cpu.regs.fs_base = addr;
            Ok(0)
        }
        ARCH_SET_GS => {
            task.cpu.regs.gs = 0;
            task.cpu.regs.gs_base = addr;
            Ok(0)
        }
        ARCH_GET_FS => {
            put_u64(task, addr, task.cpu.regs.fs_base)?;
            Ok(0)
        }
        ARCH_GET_GS => {
            put_u64(task, addr, task.cpu.regs.gs_base)?;
            Ok(0)
        }
        ARCH_GET_CPUID => Ok(1),
        ARCH_SET_CPUID => Err(Errno::ENODEV),
        code => {
            log::debug!("arch_prctl: unsupported code {code:#x}");
            Err(Errno::EINVAL)
        }
    }
}

// ---- thread bookkeeping ----

/// `sizeof(struct robust_list_head)`.
const ROBUST_LIST_HEAD_LEN: u64 = 24;

fn sys_set_tid_address(task: &mut Task, a: [u64; 6]) -> SysResult {
    task.thread.clear_child_tid.store(a[0], Ordering::Relaxed);
    Ok(ret(task.thread.tid))
}

fn sys_set_robust_list(task: &mut Task, a: [u64; 6]) -> SysResult {
    if a[1] != ROBUST_LIST_HEAD_LEN {
        return Err(Errno::EINVAL);
    }
    *task.thread.robust_list.lock() = (a[0], a[1]);
    Ok(0)
}

fn sys_get_robust_list(task: &mut Task, a: [u64; 6]) -> SysResult {
    let target = find_thread(task, int(a[0]))?;
    if target.tgid != task.thread.tgid && !capable(task, caps::CAP_SYS_PTRACE) {
        let (c, t) = (task.thread.creds(), target.creds());
        let ids_match = c.uid == t.uid
            && c.uid == t.euid
            && c.uid == t.suid
            && c.gid == t.gid
            && c.gid == t.egid
            && c.gid == t.sgid;
        if !ids_match || target.attrs.lock().dumpable == 0 {
            return Err(Errno::EPERM);
        }
    }
    let head = target.robust_list.lock().0;
    put_u64(task, a[2], ROBUST_LIST_HEAD_LEN)?;
    put_u64(task, a[1], head)?;
    Ok(0)
}

fn sys_rseq(_: &mut Task, _: [u64; 6]) -> SysResult {
    Err(Errno::ENOSYS)
}

// ---- capabilities ----

const CAP_VERSION_1: u32 = 0x1998_0330;
const CAP_VERSION_2: u32 = 0x2007_1026;
const CAP_VERSION_3: u32 = 0x2008_0522;
/// The bit of capability number `cap`; EINVAL past CAP_LAST_CAP.
fn cap_bit(cap: u64) -> Result<u64, Errno> {
    u32::try_from(cap).ok().filter(|&c| c <= caps::CAP_LAST_CAP).map(caps::bit).ok_or(Errno::EINVAL)
}

/// PR_CAP_AMBIENT: a capability may be raised into the ambient set only
/// while it is both permitted and inheritable.
fn ambient(task: &Task, op: u64, [cap, a4, a5]: [u64; 3]) -> SysResult {
    if a4 != 0 || a5 != 0 || (op == PR_CAP_AMBIENT_CLEAR_ALL && cap != 0) {
        return Err(Errno::EINVAL);
    }
    let mut c = task.thread.creds.write();
    match op {
        PR_CAP_AMBIENT_CLEAR_ALL => {
            c.caps.ambient = 0;
            Ok(0)
        }
        PR_CAP_AMBIENT_IS_SET => Ok(u64::from(c.caps.ambient & cap_bit(cap)? != 0)),
        PR_CAP_AMBIENT_RAISE => {
            let bit = cap_bit(cap)?;
            if c.caps.permitted & c.caps.inheritable & bit == 0 {
                return Err(Errno::EPERM);
            }
            c.caps.ambient |= bit;
            Ok(0)
        }
        PR_CAP_AMBIENT_LOWER => {
            c.caps.ambient &= !cap_bit(cap)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// The number of `__user_cap_data_struct`s a header version uses, or
/// `None` for an unknown version.
fn cap_words(version: u32) -> Option<usize> {
    match version {
        CAP_VERSION_1 => Some(1),
        CAP_VERSION_2 | CAP_VERSION_3 => Some(2),
        _ => None,
    }
}

/// Capability sets: effective, permitted, inheritable.
type CapSets = [u64; 3];

fn encode_caps(sets: CapSets, words: usize) -> Vec<u8> {
    let mut e = Encoder::with_capacity(words * 12);
    for w in 0..words {
        for set in sets {
            e.u32(u32::try_from((set >> (32 * w)) & 0xffff_ffff).unwrap_or(0));
        }
    }
    e.finish()
}

fn decode_caps(buf: &[u8], words: usize) -> CapSets {
    let mut d = Decoder::new(buf);
    let mut sets = [0u64; 3];
    for w in 0..words {
        for set in &mut sets {
            *set |= u64::from(d.u32()) << (32 * w);
        }
    }
    sets
}

/// `cap_capset`: the checks a new set of capabilities must pass, given
/// the old sets and the bounding set.
fn check_capset(old: CapSets, bounding: u64, new: CapSets) -> Result<(), Errno> {
    let [old_e, old_p, old_i] = old;
    let [e, p, i] = new;
    let subset = |a: u64, b: u64| a & !b == 0;
    let inh_capped = old_e & caps::bit(caps::CAP_SETPCAP) == 0;
    if inh_capped && !subset(i, old_i | old_p) {
        return Err(Errno::EPERM);
    }
    if !subset(i, old_i | bounding) || !subset(p, old_p) || !subset(e, p) {
        return Err(Errno::EPERM);
    }
    Ok(())
}

fn caps_of(creds: &Credentials) -> CapSets {
    [creds.caps.effective, creds.caps.permitted, creds.caps.inheritable]
}

/// Validates the header's version; an unknown one is replaced by the
/// kernel's and rejected.
fn cap_header(task: &Task, hdr: u64) -> Result<usize, Errno> {
    let version = u32::from_le_bytes(read_array(task, hdr)?);
    match cap_words(version) {
        Some(w) => Ok(w),
        None => {
            put_u32(task, hdr, CAP_VERSION_3)?;
            Err(Errno::EINVAL)
        }
    }
}

fn cap_header_pid(task: &Task, hdr: u64) -> Result<i32, Errno> {
    let pid_addr = hdr.checked_add(4).ok_or(Errno::EFAULT)?;
    Ok(i32::from_le_bytes(read_array(task, pid_addr)?))
}

fn sys_capget(task: &mut Task, a: [u64; 6]) -> SysResult {
    let words = match cap_header(task, a[0]) {
        Err(Errno::EINVAL) if a[1] == 0 => return Ok(0),
        Err(e) => return Err(e),
        Ok(_) if a[1] == 0 => return Ok(0),
        Ok(w) => w,
    };
    let pid = cap_header_pid(task, a[0])?;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let target = find_thread(task, pid)?;
    let sets = caps_of(&target.creds());
    task.thread.mm().copy_out(a[1], &encode_caps(sets, words))?;
    Ok(0)
}

fn sys_capset(task: &mut Task, a: [u64; 6]) -> SysResult {
    let words = cap_header(task, a[0])?;
    let pid = cap_header_pid(task, a[0])?;
    if pid != 0 && pid != task.thread.tid {
        return Err(Errno::EPERM);
    }
    let mut buf = vec![0u8; words * 12];
    task.thread.mm().copy_in(a[1], &mut buf)?;
    let mut c = task.thread.creds.write();
    // Bits past the last capability are dropped, as Linux does.
    let new = decode_caps(&buf, words).map(|set| set & caps::ALL);
    check_capset(caps_of(&c), c.caps.bounding, new)?;
    let [e, p, i] = new;
    (c.caps.effective, c.caps.permitted, c.caps.inheritable) = (e, p, i);
    c.caps.ambient &= p & i;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(setresid_rule(ids, 3000, 1000, 2000, false), Ok([3000, 1000, 2000, 1000]));
        assert_eq!(setresid_rule(ids, 5, NO_ID, NO_ID, false), Err(Errno::EPERM));
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
    }

    #[test]
    fn ids_round_trip_through_credentials() {
        let mut c = Credentials::new(1, 2);
        put_ids(&mut c, Kind::Group, [3, 4, 5, 6]);
        assert_eq!(get_ids(&c, Kind::Group), [3, 4, 5, 6]);
        assert_eq!(get_ids(&c, Kind::User), [1, 1, 1, 1]);
    }

    #[test]
    fn groups_are_validated_and_sorted() {
        let mut e = Encoder::new();
        e.u32(30).u32(10).u32(20);
        assert_eq!(parse_groups(e.as_bytes()), Ok(vec![10, 20, 30]));
        let mut e = Encoder::new();
        e.u32(1).u32(NO_ID);
        assert_eq!(parse_groups(e.as_bytes()), Err(Errno::EINVAL));
    }

    #[test]
    fn utsname_layout() {
        let b = encode_utsname([b"Linux", b"host", b"6.1.0", b"#1 SMP", b"x86_64", b"(none)"]);
        assert_eq!(b.len(), 390);
        assert_eq!(&b[..6], b"Linux\0");
        assert_eq!(&b[65..70], b"host\0");
        assert_eq!(&b[260..267], b"x86_64\0");
        assert_eq!(&b[325..332], b"(none)\0");
    }

    #[test]
    fn sysinfo_layout() {
        let b = encode_sysinfo(42, 1 << 30, 1 << 29, 3);
        assert_eq!(b.len(), 112);
        let mut d = Decoder::new(&b);
        assert_eq!(d.i64(), 42);
        d.skip(24);
        assert_eq!(d.u64(), 1 << 30);
        assert_eq!(d.u64(), 1 << 29);
        d.skip(32);
        assert_eq!(d.u16(), 3);
        d.skip(6 + 16);
        assert_eq!(d.u32(), 1);
    }

    #[test]
    fn rlimit_checks() {
        let old = Rlimit { cur: 1024, max: 4096 };
        let lim = |cur, max| Rlimit { cur, max };
        assert_eq!(check_rlimit(0, old, lim(10, 5), true), Err(Errno::EINVAL));
        assert_eq!(check_rlimit(0, old, lim(10, 8192), false), Err(Errno::EPERM));
        assert_eq!(check_rlimit(0, old, lim(10, 8192), true), Ok(()));
        assert_eq!(check_rlimit(0, old, lim(10, 100), false), Ok(()));
        assert_eq!(check_rlimit(RLIMIT_NOFILE, old, lim(10, NR_OPEN + 1), true), Err(Errno::EPERM));
        assert_eq!(rlimit_index(16), Err(Errno::EINVAL));
        assert_eq!(rlimit_index(1 << 32 | 3), Ok(3));
        assert_eq!(decode_rlimit(&encode_rlimit(old)), old);
    }

    #[test]
    fn getrandom_flags() {
        assert_eq!(check_getrandom_flags(0), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_NONBLOCK | GRND_RANDOM), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_NONBLOCK | GRND_INSECURE), Ok(()));
        assert_eq!(check_getrandom_flags(GRND_RANDOM | GRND_INSECURE), Err(Errno::EINVAL));
        assert_eq!(check_getrandom_flags(8), Err(Errno::EINVAL));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0b11]));
        assert_eq!(parse_cpu_list("0,2-3,64"), Some(vec![0b1101, 1]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(cpu_count_bound(&[0b11]), 2);
        assert_eq!(cpu_count_bound(&[0b1, 1]), 65);
        assert_eq!(cpu_count_bound(&[0]), 0);
        assert_eq!(mask_to_bytes(&[0x0102], 8), vec![2, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(and_masks(&[0b110, 5], &[0b011]), vec![0b010, 0]);
        let host = HostCpus { online: vec![3], nr_cpu_ids: 65 };
        assert_eq!(host.mask_bytes(), 16);
    }

    #[test]
    fn capability_sets() {
        assert_eq!(cap_words(CAP_VERSION_1), Some(1));
        assert_eq!(cap_words(CAP_VERSION_3), Some(2));
        assert_eq!(cap_words(0), None);
        let root = [caps::ALL, caps::ALL, 0];
        let b = encode_caps(root, 2);
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..4], &[0xff; 4]);
        assert_eq!(u32::from_le_bytes([b[12], b[13], b[14], b[15]]), 0x1ff);
        assert_eq!(decode_caps(&b, 2), root);
        let all = caps::ALL;
        assert_eq!(check_capset(root, all, root), Ok(()));
        assert_eq!(check_capset(root, all, [0, 0, 0]), Ok(()));
        assert_eq!(check_capset(root, all, [1, 0, 0]), Err(Errno::EPERM), "effective beyond permitted");
        assert_eq!(check_capset([0; 3], all, [0, 1, 0]), Err(Errno::EPERM), "new permitted");
        assert_eq!(check_capset([0; 3], all, [0, 0, 1]), Err(Errno::EPERM), "inheritable without CAP_SETPCAP");
        assert_eq!(check_capset(root, all, [0, 0, 1]), Ok(()));
        assert_eq!(check_capset(root, 2, [0, 0, 1]), Err(Errno::EPERM), "inheritable beyond the bounding set");
    }

    #[test]
    fn signed_return_values() {
        assert_eq!(ret(7), 7);
        assert_eq!(ret(-1), u64::MAX);
    }
}
