//! System calls: the system's names and state — `uname` (the host's
//! kernel release and version, the sandbox's own host and domain names),
//! `sethostname`/`setdomainname`, `sysinfo` and `syslog` (the sandbox's
//! kernel log ring, always empty: the sentry logs to the host, not to it).

use super::args::int;
use super::common::capable;
use super::{Entries, Support};
use crate::abi::layout::Encoder;
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::kernel::namespaces::{set_uts_name, uts_names};
use crate::kernel::Task;
use crate::waiter;
use std::time::{Duration, Instant};

pub(super) const ENTRIES: Entries = &[
    (libc::SYS_uname, sys_uname, Support::Full),
    (libc::SYS_sethostname, sys_sethostname, Support::Full),
    (libc::SYS_setdomainname, sys_setdomainname, Support::Full),
    (
        libc::SYS_sysinfo,
        sys_sysinfo,
        Support::Partial("load averages, shared and buffer memory and swap are 0; totalram is the host's RAM"),
    ),
    (
        libc::SYS_syslog,
        sys_syslog,
        Support::Partial("the kernel log ring is the sandbox's own and always empty: reads return 0 bytes (SYSLOG_ACTION_READ waits, as Linux on an empty ring); arguments and CAP_SYSLOG are checked as Linux"),
    ),
];

/// syslog(2) actions (`SYSLOG_ACTION_*`).
const SYSLOG_ACTION_CLOSE: i32 = 0;
const SYSLOG_ACTION_READ: i32 = 2;
const SYSLOG_ACTION_READ_ALL: i32 = 3;
const SYSLOG_ACTION_READ_CLEAR: i32 = 4;
const SYSLOG_ACTION_CONSOLE_LEVEL: i32 = 8;
const SYSLOG_ACTION_SIZE_UNREAD: i32 = 9;
const SYSLOG_ACTION_SIZE_BUFFER: i32 = 10;
/// The ring's size SYSLOG_ACTION_SIZE_BUFFER reports: Linux's default
/// `log_buf_len` (1 << CONFIG_LOG_BUF_SHIFT, 17 on x86_64 distributions).
const LOG_BUF_LEN: u64 = 1 << 17;

/// syslog(2) on an empty ring, checked as Linux's do_syslog: reading the
/// whole ring and its size are open to all (`dmesg_restrict` is 0), the
/// rest needs CAP_SYSLOG (or, as Linux still allows, CAP_SYS_ADMIN);
/// then the buffer of the read actions and the console level.
fn sys_syslog(task: &mut Task, a: [u64; 6]) -> SysResult {
    let action = int(a[0]);
    let len = int(a[2]);
    let open_to_all = matches!(action, SYSLOG_ACTION_READ_ALL | SYSLOG_ACTION_SIZE_BUFFER);
    if !open_to_all && !capable(task, caps::CAP_SYSLOG) && !capable(task, caps::CAP_SYS_ADMIN) {
        return Err(Errno::EPERM);
    }
    match action {
        SYSLOG_ACTION_READ | SYSLOG_ACTION_READ_ALL | SYSLOG_ACTION_READ_CLEAR => {
            if a[1] == 0 || len < 0 {
                return Err(Errno::EINVAL);
            }
            if action == SYSLOG_ACTION_READ && len > 0 {
                // Nothing is ever logged: wait, as Linux does, until a
                // signal interrupts.
                waiter::sleep_until(Instant::now() + Duration::from_secs(1 << 40))?;
            }
            Ok(0)
        }
        SYSLOG_ACTION_CONSOLE_LEVEL if !(1..=8).contains(&len) => Err(Errno::EINVAL),
        SYSLOG_ACTION_CLOSE..=SYSLOG_ACTION_SIZE_UNREAD => Ok(0),
        SYSLOG_ACTION_SIZE_BUFFER => Ok(LOG_BUF_LEN),
        _ => Err(Errno::EINVAL),
    }
}

/// `__NEW_UTS_LEN`.
const UTS_LEN: usize = 64;

/// `struct utsname`: six NUL-padded fields of 65 bytes.
fn encode_utsname(fields: [&[u8]; 6]) -> Vec<u8> {
    let mut e = Encoder::with_capacity(6 * (UTS_LEN + 1));
    for f in fields {
        e.cstr_array(f, UTS_LEN + 1);
    }
    e.finish()
}

fn sys_uname(task: &mut Task, a: [u64; 6]) -> SysResult {
    let (release, version) = crate::host::uts();
    let (hostname, domainname) = uts_names(&task.kernel, &task.thread);
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
    set_uts_name(&task.kernel, &task.thread, false, name);
    Ok(0)
}

fn sys_setdomainname(task: &mut Task, a: [u64; 6]) -> SysResult {
    let name = read_uts_name(task, a[0], a[1])?;
    set_uts_name(&task.kernel, &task.thread, true, name);
    Ok(0)
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
    let total = crate::host::total_ram();
    let free = total.saturating_sub(task.kernel.memory().used());
    let procs = u16::try_from(task.kernel.tids().len()).unwrap_or(u16::MAX);
    task.thread.mm().copy_out(a[0], &encode_sysinfo(uptime, total, free, procs))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::Decoder;

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
}
