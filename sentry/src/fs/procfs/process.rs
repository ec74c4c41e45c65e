//! The text of the per-process files of /proc, as pure functions of plain
//! data, in Linux's exact formats (fs/proc/array.c, base.c, namespace.c).

use crate::auth::Credentials;
use crate::kernel::limits::{Rlimit, RLIM_INFINITY};
use crate::loader::ArgRanges;
use std::io::Write as _;

/// The clock ticks per second of /proc/[pid]/stat (USER_HZ).
pub(super) const CLOCK_TICKS: u64 = 100;
const PAGE: u64 = crate::abi::PAGE_SIZE;

/// Memory figures of an address space, in bytes (addresses for the
/// `start_*`/`end_*` fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct VmCounts {
    pub size: u64,
    pub rss: u64,
    /// Locked areas (mlock).
    pub locked: u64,
    /// Private writable mappings other than the stack.
    pub data: u64,
    pub stack: u64,
    /// The executable's text.
    pub exe: u64,
    /// Other executable mappings.
    pub lib: u64,
    pub start_code: u64,
    pub end_code: u64,
    pub start_brk: u64,
}

/// One line of /proc/[pid]/maps, split into the parts `vm_counts` needs.
struct MapLine<'a> {
    start: u64,
    end: u64,
    write: bool,
    exec: bool,
    shared: bool,
    name: &'a str,
}

/// Splits the first whitespace-separated field off `s`.
fn field(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    s.split_once(' ').unwrap_or((s, ""))
}

fn parse_map_line(line: &str) -> Option<MapLine<'_>> {
    let (range, rest) = field(line);
    let (perms, rest) = field(rest);
    let (_offset, rest) = field(rest);
    let (_dev, rest) = field(rest);
    let (_ino, rest) = field(rest);
    let (start, end) = range.split_once('-')?;
    let perms = perms.as_bytes();
    Some(MapLine {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        write: perms.get(1) == Some(&b'w'),
        exec: perms.get(2) == Some(&b'x'),
        shared: perms.get(3) == Some(&b's'),
        name: rest.trim_start(),
    })
}

/// Breaks an address space down like Linux's mm counters, from the text of
/// its /proc/[pid]/maps; `exe` is the executable's path. `size` and `rss`
/// are left for the caller.
pub(super) fn vm_counts(maps: &str, exe: &str) -> VmCounts {
    let mut c = VmCounts::default();
    let mut exec = 0;
    for m in maps.lines().filter_map(parse_map_line) {
        let len = m.end.saturating_sub(m.start);
        if m.name == "[stack]" {
            c.stack += len;
            continue;
        }
        if m.write && !m.shared {
            c.data += len;
        }
        if m.exec && !m.write {
            exec += len;
        }
        if m.exec && !exe.is_empty() && m.name == exe && c.end_code == 0 {
            (c.start_code, c.end_code) = (m.start, m.end);
        }
        if m.name == "[heap]" {
            c.start_brk = m.start;
        }
    }
    c.exe = c.end_code - c.start_code;
    c.lib = exec.saturating_sub(c.exe);
    c
}

/// /proc/[pid]/oom_score of a process with `rss` bytes resident out of
/// `total` and oom_score_adj `adj`, as Linux's `proc_oom_score`: its
/// badness (pages, plus `adj` thousandths of all pages) scaled to
/// 0 ..= 1333 with 666 for none; 0 for an unkillable one (adj -1000).
pub(super) fn oom_score(rss: u64, total: u64, adj: i16) -> u64 {
    let total_pages = i64::try_from((total / PAGE).max(1)).unwrap_or(i64::MAX);
    if adj == -1000 {
        return 0;
    }
    let rss_pages = i64::try_from(rss / PAGE).unwrap_or(i64::MAX);
    let badness = rss_pages.saturating_add(i64::from(adj) * (total_pages / 1000));
    let points = (1000 + badness.saturating_mul(1000) / total_pages) * 2 / 3;
    u64::try_from(points).unwrap_or(0)
}

/// Signal sets, one bit per signal (bit 0 is signal 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SigSets {
    pub pending: u64,
    /// The process's pending signals (ShdPnd).
    pub shared: u64,
    pub blocked: u64,
    pub ignored: u64,
    pub caught: u64,
}

/// What /proc/[pid]/status shows.
pub(super) struct Status<'a> {
    pub name: &'a [u8],
    pub umask: u32,
    /// E.g. "R (running)".
    pub state: &'a str,
    pub tgid: i32,
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    pub creds: &'a Credentials,
    pub fd_size: u64,
    pub vm: VmCounts,
    pub threads: usize,
    /// RLIMIT_SIGPENDING.
    pub sigq_max: u64,
    pub sigs: SigSets,
    pub no_new_privs: bool,
    /// The seccomp mode and the number of filters attached.
    pub seccomp: (u8, usize),
    /// "Key:\tvalue\n" lines passed through from the host (CPU and memory
    /// node affinity, speculation mitigations).
    pub host_lines: &'a str,
}

/// A task name as /proc/[pid]/status shows it (`\n` and `\\` escaped).
fn escape_name(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &b in name {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            _ => out.push(b),
        }
    }
    out
}

/// `%8lu kB` of a byte count, as the Vm* lines print it.
fn kb(bytes: u64) -> String {
    format!("{:>8} kB", bytes / 1024)
}

/// /proc/[pid]/status, in the field order of Linux 6.x.
pub(super) fn format_status(s: &Status<'_>) -> Vec<u8> {
    let c = s.creds;
    let mut out = b"Name:\t".to_vec();
    out.extend_from_slice(&escape_name(s.name));
    let groups = c.groups.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
    let caps = &c.caps;
    let vm = &s.vm;
    let _ = write!(
        out,
        "\nUmask:\t{:04o}\nState:\t{}\nTgid:\t{}\nNgid:\t0\nPid:\t{}\nPPid:\t{}\nTracerPid:\t0\n\
         Uid:\t{}\t{}\t{}\t{}\nGid:\t{}\t{}\t{}\t{}\nFDSize:\t{}\nGroups:\t{groups} \n\
         NStgid:\t{}\nNSpid:\t{}\nNSpgid:\t{}\nNSsid:\t{}\nKthread:\t0\n",
        s.umask,
        s.state,
        s.tgid,
        s.pid,
        s.ppid,
        c.uid,
        c.euid,
        c.suid,
        c.fsuid,
        c.gid,
        c.egid,
        c.sgid,
        c.fsgid,
        s.fd_size,
        s.tgid,
        s.pid,
        s.pgid,
        s.sid,
    );
    let mem = [
        ("VmPeak", vm.size),
        ("VmSize", vm.size),
        ("VmLck", vm.locked),
        ("VmPin", 0),
        ("VmHWM", vm.rss),
        ("VmRSS", vm.rss),
        ("RssAnon", vm.rss),
        ("RssFile", 0),
        ("RssShmem", 0),
        ("VmData", vm.data),
        ("VmStk", vm.stack),
        ("VmExe", vm.exe),
        ("VmLib", vm.lib),
        ("VmPTE", 0),
        ("VmSwap", 0),
        ("HugetlbPages", 0),
    ];
    for (key, bytes) in mem {
        let _ = writeln!(out, "{key}:\t{}", kb(bytes));
    }
    let (threads, sigq, host) = (s.threads, s.sigq_max, s.host_lines);
    let SigSets { pending, shared, blocked, ignored, caught } = s.sigs;
    let nnp = u8::from(s.no_new_privs);
    let (seccomp, filters) = s.seccomp;
    let _ = write!(
        out,
        "CoreDumping:\t0\nTHP_enabled:\t1\nuntag_mask:\t0xffffffffffffffff\n\
         Threads:\t{threads}\nSigQ:\t0/{sigq}\nSigPnd:\t{pending:016x}\nShdPnd:\t{shared:016x}\n\
         SigBlk:\t{blocked:016x}\nSigIgn:\t{ignored:016x}\nSigCgt:\t{caught:016x}\n\
         CapInh:\t{:016x}\nCapPrm:\t{:016x}\nCapEff:\t{:016x}\n\
         CapBnd:\t{:016x}\nCapAmb:\t{:016x}\n\
         NoNewPrivs:\t{nnp}\nSeccomp:\t{seccomp}\nSeccomp_filters:\t{filters}\n{host}\
         voluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n",
        caps.inheritable, caps.permitted, caps.effective, caps.bounding, caps.ambient,
    );
    out
}

/// A CPU mask (bit n for CPU n) as a Cpus_allowed value laid out like
/// `template`, the host's: comma-separated groups of 32 CPUs, highest
/// first, each as wide as the host prints it.
pub(super) fn format_cpumask(mask: &[u64], template: &str) -> String {
    let widths: Vec<usize> = template.split(',').map(str::len).collect();
    let n = widths.len();
    let group = |i: usize| {
        let word = mask.get(i / 2).copied().unwrap_or(0);
        (word >> (32 * (i % 2))) & 0xffff_ffff
    };
    let groups: Vec<String> = widths.iter().enumerate().map(|(k, &w)| format!("{:0w$x}", group(n - 1 - k))).collect();
    groups.join(",")
}

/// A CPU mask as a Cpus_allowed_list value: ranges such as "0-3,6".
pub(super) fn format_cpulist(mask: &[u64]) -> String {
    let is_set = |cpu: usize| mask.get(cpu / 64).is_some_and(|w| w >> (cpu % 64) & 1 == 1);
    let mut ranges = Vec::new();
    let mut cpu = 0;
    while cpu < mask.len() * 64 {
        if !is_set(cpu) {
            cpu += 1;
            continue;
        }
        let first = cpu;
        while is_set(cpu + 1) {
            cpu += 1;
        }
        ranges.push(if first == cpu { first.to_string() } else { format!("{first}-{cpu}") });
        cpu += 1;
    }
    ranges.join(",")
}

/// What /proc/[pid]/stat shows.
pub(super) struct StatFields<'a> {
    pub pid: i32,
    pub comm: &'a [u8],
    /// The one-letter state.
    pub state: char,
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    pub threads: usize,
    /// Start time in clock ticks since boot.
    pub start_ticks: u64,
    /// utime, stime, cutime, cstime in clock ticks.
    pub times: [u64; 4],
    pub vm: VmCounts,
    /// RLIMIT_RSS.
    pub rsslim: u64,
    pub sigs: SigSets,
    /// SIGCHLD for a process, -1 for other threads.
    pub exit_signal: i32,
    pub args: ArgRanges,
    pub nice: i32,
}

/// /proc/[pid]/stat: the 52 fields of `do_task_stat`. The obsolete signal
/// fields show only the first 31 signals, as Linux's do.
pub(super) fn format_stat(f: &StatFields<'_>) -> Vec<u8> {
    const LOW: u64 = 0x7fff_ffff;
    let mut out = format!("{} (", f.pid).into_bytes();
    out.extend_from_slice(f.comm);
    let vm = &f.vm;
    let a = &f.args;
    let _ = writeln!(
        out,
        ") {} {} {} {} 0 -1 0 0 0 0 0 {} {} {} {} {} {} {} 0 {} {} {} {} {} {} 0 0 0 {} {} {} {} 0 0 0 {} 0 0 0 0 0 0 0 0 {} {} {} {} {} 0",
        f.state,
        f.ppid,
        f.pgid,
        f.sid,
        f.times[0],
        f.times[1],
        f.times[2],
        f.times[3],
        20 + f.nice,
        f.nice,
        f.threads,
        f.start_ticks,
        vm.size,
        vm.rss / PAGE,
        f.rsslim,
        vm.start_code,
        vm.end_code,
        f.sigs.pending & LOW,
        f.sigs.blocked & LOW,
        f.sigs.ignored & LOW,
        f.sigs.caught & LOW,
        f.exit_signal,
        vm.start_brk,
        a.arg_start,
        a.arg_end,
        a.env_start,
        a.env_end,
    );
    out
}

/// /proc/[pid]/statm, in pages: size resident shared text lib data dt.
pub(super) fn format_statm(vm: &VmCounts) -> String {
    format!("{} {} 0 {} 0 {} 0\n", vm.size / PAGE, vm.rss / PAGE, vm.exe.div_ceil(PAGE), (vm.data + vm.stack) / PAGE)
}

/// The rows of /proc/[pid]/limits: name and unit, by resource number.
const LIMITS: [(&str, &str); 16] = [
    ("Max cpu time", "seconds"),
    ("Max file size", "bytes"),
    ("Max data size", "bytes"),
    ("Max stack size", "bytes"),
    ("Max core file size", "bytes"),
    ("Max resident set", "bytes"),
    ("Max processes", "processes"),
    ("Max open files", "files"),
    ("Max locked memory", "bytes"),
    ("Max address space", "bytes"),
    ("Max file locks", "locks"),
    ("Max pending signals", "signals"),
    ("Max msgqueue size", "bytes"),
    ("Max nice priority", ""),
    ("Max realtime priority", ""),
    ("Max realtime timeout", "us"),
];

fn limit_value(v: u64) -> String {
    if v == RLIM_INFINITY {
        "unlimited".into()
    } else {
        v.to_string()
    }
}

/// /proc/[pid]/limits.
pub(super) fn format_limits(limits: &[Rlimit]) -> String {
    let mut out = format!("{:<25} {:<20} {:<20} {:<10}\n", "Limit", "Soft Limit", "Hard Limit", "Units");
    for ((name, unit), l) in LIMITS.iter().zip(limits) {
        out.push_str(&format!("{name:<25} {:<20} {:<20} ", limit_value(l.cur), limit_value(l.max)));
        if unit.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&format!("{unit:<10}\n"));
        }
    }
    out
}

/// /proc/[pid]/fdinfo/N.
pub(super) fn format_fdinfo(pos: u64, flags: u32, mnt_id: u64, ino: u64) -> String {
    format!("pos:\t{pos}\nflags:\t0{flags:o}\nmnt_id:\t{mnt_id}\nino:\t{ino}\n")
}

/// One mount as /proc/[pid]/mounts and mountinfo show it.
pub(super) struct MountRow {
    pub id: u64,
    /// The parent mount's id (the mount's own for the namespace root).
    pub parent: u64,
    /// The `st_dev` of the mounted filesystem.
    pub dev: u64,
    /// Where it is mounted, as seen from the process's root.
    pub path: Vec<u8>,
    pub fs_type: String,
    pub source: String,
    pub read_only: bool,
    /// The per-mount options after rw/ro (",nosuid,nodev,noexec,relatime").
    pub flags: String,
    /// The filesystem's own options after rw/ro (",size=8k,mode=755").
    pub super_opts: String,
    /// The directory of the filesystem the mount shows ("/" but for binds).
    pub fs_root: Vec<u8>,
    /// mountinfo's optional fields ("shared:3 ", "master:3 ", "unbindable ").
    pub propagation: String,
}

/// Escapes space, tab, newline and backslash as `\ooo` (Linux's `mangle`).
fn mangle(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\\') {
            out.extend_from_slice(format!("\\{b:03o}").as_bytes());
        } else {
            out.push(b);
        }
    }
    out
}

fn rw(read_only: bool) -> &'static str {
    if read_only {
        "ro"
    } else {
        "rw"
    }
}

/// /proc/[pid]/mounts.
pub(super) fn format_mounts(rows: &[MountRow]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(&mangle(r.source.as_bytes()));
        out.push(b' ');
        out.extend_from_slice(&mangle(&r.path));
        let _ = writeln!(
            out,
            " {} {}{}{} 0 0",
            String::from_utf8_lossy(&mangle(r.fs_type.as_bytes())),
            rw(r.read_only),
            r.flags,
            r.super_opts
        );
    }
    out
}

/// /proc/[pid]/mountinfo.
pub(super) fn format_mountinfo(rows: &[MountRow]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        let _ = write!(out, "{} {} {}:{} ", r.id, r.parent, libc::major(r.dev), libc::minor(r.dev));
        out.extend_from_slice(&mangle(&r.fs_root));
        out.push(b' ');
        out.extend_from_slice(&mangle(&r.path));
        let _ = write!(out, " {}{} {}- ", rw(r.read_only), r.flags, r.propagation);
        out.extend_from_slice(&mangle(r.fs_type.as_bytes()));
        out.push(b' ');
        out.extend_from_slice(&mangle(r.source.as_bytes()));
        let _ = writeln!(out, " {}{}", rw(r.read_only), r.super_opts);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::limits::defaults;

    const MAPS: &str = "\
55d4c8a00000-55d4c8a02000 r--p 00000000 00:2a 17                                 /bin/cat
55d4c8a02000-55d4c8a07000 r-xp 00002000 00:2a 17                                 /bin/cat
55d4c8a07000-55d4c8a09000 r--p 00007000 00:2a 17                                 /bin/cat
55d4c8a0a000-55d4c8a0b000 rw-p 00009000 00:2a 17                                 /bin/cat
55d4c9000000-55d4c9021000 rw-p 00000000 00:00 0                                  [heap]
7f0000000000-7f0000002000 rw-p 00000000 00:00 0
7f0000010000-7f0000030000 r-xp 00001000 00:2a 99                                 /lib/my lib.so
7f0000040000-7f0000041000 rw-s 00000000 00:2a 100                                /dev/shm/x
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                                  [stack]
";

    #[test]
    fn vm_counts_from_maps() {
        let c = vm_counts(MAPS, "/bin/cat");
        assert_eq!(c.start_code, 0x55d4_c8a0_2000);
        assert_eq!(c.end_code, 0x55d4_c8a0_7000);
        assert_eq!(c.exe, 0x5000);
        assert_eq!(c.lib, 0x20000);
        assert_eq!(c.stack, 0x21000);
        assert_eq!(c.data, 0x1000 + 0x21000 + 0x2000);
        assert_eq!(c.start_brk, 0x55d4_c900_0000);
        let none = vm_counts(MAPS, "");
        assert_eq!((none.exe, none.start_code), (0, 0));
        assert_eq!(none.lib, 0x25000);
        assert_eq!(vm_counts("", "/bin/cat"), VmCounts::default());
    }

    fn status_text(creds: &Credentials) -> String {
        let vm = VmCounts { size: 3060 * 1024, rss: 1704 * 1024, data: 360 * 1024, ..VmCounts::default() };
        let s = Status {
            name: b"c\\at\n",
            umask: 0o22,
            state: "R (running)",
            tgid: 5,
            pid: 6,
            ppid: 1,
            pgid: 1,
            sid: 1,
            creds,
            fd_size: 64,
            vm,
            threads: 2,
            sigq_max: 63_668,
            sigs: SigSets { pending: 1 << 9, shared: 0, blocked: 1 << 1, ignored: 1 << 12, caught: 1 << 16 },
            no_new_privs: creds.uid == 0,
            seccomp: (2, 3),
            host_lines: "Cpus_allowed:\t3\nCpus_allowed_list:\t0-1\n",
        };
        String::from_utf8(format_status(&s)).unwrap()
    }

    #[test]
    fn status_fields_in_linux_order() {
        let mut creds = Credentials::new(0, 0);
        creds.groups = vec![0, 10];
        let text = status_text(&creds);
        let keys: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
        assert_eq!(
            keys,
            [
                "Name",
                "Umask",
                "State",
                "Tgid",
                "Ngid",
                "Pid",
                "PPid",
                "TracerPid",
                "Uid",
                "Gid",
                "FDSize",
                "Groups",
                "NStgid",
                "NSpid",
                "NSpgid",
                "NSsid",
                "Kthread",
                "VmPeak",
                "VmSize",
                "VmLck",
                "VmPin",
                "VmHWM",
                "VmRSS",
                "RssAnon",
                "RssFile",
                "RssShmem",
                "VmData",
                "VmStk",
                "VmExe",
                "VmLib",
                "VmPTE",
                "VmSwap",
                "HugetlbPages",
                "CoreDumping",
                "THP_enabled",
                "untag_mask",
                "Threads",
                "SigQ",
                "SigPnd",
                "ShdPnd",
                "SigBlk",
                "SigIgn",
                "SigCgt",
                "CapInh",
                "CapPrm",
                "CapEff",
                "CapBnd",
                "CapAmb",
                "NoNewPrivs",
                "Seccomp",
                "Seccomp_filters",
                "Cpus_allowed",
                "Cpus_allowed_list",
                "voluntary_ctxt_switches",
                "nonvoluntary_ctxt_switches",
            ]
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Name:\tc\\\\at\\n");
        assert_eq!(lines[1], "Umask:\t0022");
        assert_eq!(lines[8], "Uid:\t0\t0\t0\t0");
        assert_eq!(lines[11], "Groups:\t0 10 ");
        assert_eq!(lines[17], "VmPeak:\t    3060 kB");
        assert_eq!(lines[22], "VmRSS:\t    1704 kB");
        assert_eq!(lines[26], "VmData:\t     360 kB");
        assert_eq!(lines[32], "HugetlbPages:\t       0 kB");
        assert_eq!(lines[37], "SigQ:\t0/63668");
        assert_eq!(lines[38], "SigPnd:\t0000000000000200");
        assert_eq!(lines[39], "ShdPnd:\t0000000000000000");
        assert_eq!(lines[40], "SigBlk:\t0000000000000002");
        assert_eq!(lines[41], "SigIgn:\t0000000000001000");
        assert_eq!(lines[42], "SigCgt:\t0000000000010000");
        assert_eq!(lines[44], "CapPrm:\t000001ffffffffff");
        assert_eq!(lines[45], "CapEff:\t000001ffffffffff");
        assert_eq!(lines[48], "NoNewPrivs:\t1");
        assert_eq!((lines[49], lines[50]), ("Seccomp:\t2", "Seccomp_filters:\t3"));
        assert_eq!(lines[51], "Cpus_allowed:\t3");
    }

    #[test]
    fn status_of_an_unprivileged_process() {
        let text = status_text(&Credentials::new(1000, 100));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[9], "Gid:\t100\t100\t100\t100");
        assert_eq!(lines[11], "Groups:\t ");
        assert_eq!(lines[43], "CapInh:\t0000000000000000");
        assert_eq!(lines[44], "CapPrm:\t0000000000000000");
        assert_eq!(lines[46], "CapBnd:\t000001ffffffffff");
        assert_eq!(lines[48], "NoNewPrivs:\t0");
        assert_eq!(lines.last(), Some(&"nonvoluntary_ctxt_switches:\t0"));
    }

    #[test]
    fn stat_has_52_fields() {
        let f = StatFields {
            pid: 7,
            comm: b"my prog",
            state: 'R',
            ppid: 1,
            pgid: 1,
            sid: 1,
            threads: 1,
            start_ticks: 250,
            times: [11, 12, 13, 14],
            vm: VmCounts { size: 8192, rss: 4096, start_code: 10, end_code: 20, start_brk: 30, ..VmCounts::default() },
            rsslim: RLIM_INFINITY,
            sigs: SigSets { pending: 0, shared: 0, blocked: 1 << 40 | 3, ignored: 0, caught: 0 },
            exit_signal: 17,
            args: ArgRanges { arg_start: 100, arg_end: 110, env_start: 110, env_end: 130 },
            nice: 5,
        };
        let text = String::from_utf8(format_stat(&f)).unwrap();
        assert!(text.ends_with('\n'));
        let (head, rest) = text.trim_end().split_once(") ").unwrap();
        assert_eq!(head, "7 (my prog");
        let fields: Vec<&str> = rest.split(' ').collect();
        assert_eq!(fields.len() + 2, 52);
        let at = |n: usize| fields[n - 3];
        assert_eq!(at(3), "R");
        assert_eq!(at(4), "1");
        assert_eq!(at(8), "-1");
        assert_eq!((at(14), at(15), at(16), at(17)), ("11", "12", "13", "14"), "utime stime cutime cstime");
        assert_eq!(at(18), "25", "priority");
        assert_eq!(at(19), "5", "nice");
        assert_eq!(at(20), "1");
        assert_eq!(at(22), "250");
        assert_eq!(at(23), "8192");
        assert_eq!(at(24), "1");
        assert_eq!(at(25), "18446744073709551615");
        assert_eq!((at(26), at(27)), ("10", "20"));
        assert_eq!(at(32), "3");
        assert_eq!(at(38), "17");
        assert_eq!(at(47), "30");
        assert_eq!((at(48), at(49), at(50), at(51)), ("100", "110", "110", "130"));
        assert_eq!(at(52), "0");
    }

    #[test]
    fn cpu_masks() {
        assert_eq!(format_cpumask(&[0b10], "3"), "2");
        assert_eq!(format_cpumask(&[0x1_0000_0005], "ff,ffffffff"), "01,00000005");
        assert_eq!(format_cpumask(&[], "ff"), "00");
        assert_eq!(format_cpulist(&[0b1011_0111]), "0-2,4-5,7");
        assert_eq!(format_cpulist(&[1, 1 << 63]), "0,127");
        assert_eq!(format_cpulist(&[u64::MAX]), "0-63");
        assert_eq!(format_cpulist(&[]), "");
    }

    #[test]
    fn statm_in_pages() {
        let vm = VmCounts { size: 40960, rss: 8192, data: 4096, stack: 8192, exe: 100, ..VmCounts::default() };
        assert_eq!(format_statm(&vm), "10 2 0 1 0 3 0\n");
    }

    #[test]
    fn limits_table_matches_linux() {
        let text = format_limits(&defaults());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 17);
        assert_eq!(lines[0], "Limit                     Soft Limit           Hard Limit           Units     ");
        assert_eq!(lines[1], "Max cpu time              unlimited            unlimited            seconds   ");
        assert_eq!(lines[4], "Max stack size            8388608              unlimited            bytes     ");
        assert_eq!(lines[8], "Max open files            1024                 1048576              files     ");
        assert_eq!(lines[14], "Max nice priority         0                    0                    ");
        assert_eq!(lines[16], "Max realtime timeout      unlimited            unlimited            us        ");
    }

    #[test]
    fn fdinfo_format() {
        assert_eq!(format_fdinfo(12, 0o100002, 3, 99), "pos:\t12\nflags:\t0100002\nmnt_id:\t3\nino:\t99\n");
        assert_eq!(format_fdinfo(0, 0, 1, 1), "pos:\t0\nflags:\t00\nmnt_id:\t1\nino:\t1\n");
    }

    fn rows() -> Vec<MountRow> {
        vec![
            MountRow {
                id: 1,
                parent: 1,
                dev: libc::makedev(0, 40),
                path: b"/".to_vec(),
                fs_type: "overlay".into(),
                source: "root".into(),
                read_only: false,
                flags: ",relatime".into(),
                super_opts: String::new(),
                fs_root: b"/".to_vec(),
                propagation: String::new(),
            },
            MountRow {
                id: 3,
                parent: 1,
                dev: libc::makedev(0, 41),
                path: b"/my dir".to_vec(),
                fs_type: "tmpfs".into(),
                source: "tmpfs".into(),
                read_only: true,
                flags: ",nosuid,noexec,relatime".into(),
                super_opts: ",mode=755".into(),
                fs_root: b"/sub dir".to_vec(),
                propagation: "shared:7 ".into(),
            },
        ]
    }

    #[test]
    fn mounts_format() {
        assert_eq!(
            String::from_utf8(format_mounts(&rows())).unwrap(),
            "root / overlay rw,relatime 0 0\ntmpfs /my\\040dir tmpfs ro,nosuid,noexec,relatime,mode=755 0 0\n"
        );
    }

    #[test]
    fn mountinfo_format() {
        assert_eq!(
            String::from_utf8(format_mountinfo(&rows())).unwrap(),
            "1 1 0:40 / / rw,relatime - overlay root rw\n\
             3 1 0:41 /sub\\040dir /my\\040dir ro,nosuid,noexec,relatime shared:7 - tmpfs tmpfs ro,mode=755\n"
        );
    }
}
