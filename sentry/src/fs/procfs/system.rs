//! The text of /proc's system-wide files, as pure functions of plain data.

use crate::kernel::cputime::CpuTimes;
use std::fmt::Write as _;
use std::time::Duration;

/// The filesystems the sandbox implements, as /proc/filesystems lists them.
pub(super) const FILESYSTEMS: &str =
    "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tdevtmpfs\nnodev\tsockfs\nnodev\tpipefs\nnodev\tdevpts\nnodev\toverlay\n";

/// /proc/devices: the major numbers of the sandbox's device files (/dev's
/// memory devices, /dev/tty and /dev/ptmx, the pseudo-terminals); it has
/// no block devices.
pub(super) const DEVICES: &str =
    "Character devices:\n  1 mem\n  5 /dev/tty\n  5 /dev/ptmx\n136 pts\n\nBlock devices:\n";

/// The lines /proc/meminfo has when the host's cannot be read.
const FALLBACK_MEMINFO: &str = "MemTotal: 0 kB\nMemFree: 0 kB\nMemAvailable: 0 kB\n";

/// The value in kB of `key` in a /proc/meminfo text.
pub(super) fn meminfo_kb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
}

/// The sandbox's /proc/meminfo: the host's field list and layout, with the
/// sandbox's memory (`total_kb`, of which `used_kb` is committed) and zero
/// for what the sandbox does not have (swap, page cache, huge pages …).
pub(super) fn format_meminfo(host: &str, total_kb: u64, used_kb: u64) -> String {
    let template = if host.lines().next().is_some() { host } else { FALLBACK_MEMINFO };
    let mut out = String::new();
    for line in template.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let host_value = rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
        let value = match key {
            "MemTotal" => total_kb,
            "MemFree" | "MemAvailable" => total_kb.saturating_sub(used_kb),
            "Active" | "Active(anon)" | "AnonPages" | "Committed_AS" => used_kb,
            "CommitLimit" => total_kb / 2,
            "VmallocTotal" | "Hugepagesize" => host_value,
            _ => 0,
        };
        let unit = if rest.ends_with(" kB") { " kB" } else { "" };
        let _ = writeln!(out, "{:<16}{value:>8}{unit}", format!("{key}:"));
    }
    out
}

/// Seconds with two decimals, truncated as Linux prints them.
fn centiseconds(d: Duration) -> String {
    format!("{}.{:02}", d.as_secs(), d.subsec_nanos() / 10_000_000)
}

/// /proc/uptime: time since boot and time the CPUs spent idle.
pub(super) fn format_uptime(up: Duration, idle: Duration) -> String {
    format!("{} {}\n", centiseconds(up), centiseconds(idle))
}

/// /proc/net/dev: the loopback interface, whose every sent byte is also
/// received; `(bytes, packets)` are its counters.
pub(super) fn format_net_dev((bytes, packets): (u64, u64), uplink: bool) -> String {
    let mut s = String::from(
        "Inter-|   Receive                                                |  Transmit\n \
         face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n",
    );
    let mut row = |name: &str, bytes: u64, packets: u64| {
        s.push_str(&format!(
            "{name:>6}:{bytes:>8} {packets:>7} {z:>4} {z:>4} {z:>4} {z:>5} {z:>10} {z:>9} {bytes:>8} {packets:>7} {z:>4} {z:>4} {z:>4} {z:>5} {z:>7} {z:>10}\n",
            z = 0
        ))
    };
    row("lo", bytes, packets);
    // The gateway's traffic is not counted here (yet): flow records will.
    if uplink {
        row("eth0", 0, 0);
    }
    s
}

/// /proc/net/route: the IPv4 main table (little-endian hex addresses, as
/// the kernel prints them): the uplink's default route and network.
pub(super) fn format_net_route(uplink: Option<&husk_netstack::iface::Uplink>) -> String {
    let mut s = String::from("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n");
    if let Some(u) = uplink {
        let hex = |a: std::net::Ipv4Addr| format!("{:08X}", u32::from_le_bytes(a.octets()));
        let zero = std::net::Ipv4Addr::UNSPECIFIED;
        // RTF_UP|RTF_GATEWAY (3), then RTF_UP (1).
        s.push_str(&format!("eth0\t{}\t{}\t0003\t0\t0\t0\t{}\t0\t0\t0\n", hex(zero), hex(u.gateway), hex(zero)));
        s.push_str(&format!(
            "eth0\t{}\t{}\t0001\t0\t0\t0\t{}\t0\t0\t0\n",
            hex(u.network()),
            hex(zero),
            hex(u.netmask())
        ));
    }
    s
}

/// /proc/net/if_inet6: loopback's ::1/128, host scope, permanent.
pub(super) const IF_INET6: &str = "00000000000000000000000000000001 01 80 10 80       lo\n";

/// /proc/loadavg: the 1, 5 and 15-minute averages (Linux's fixed point),
/// runnable/total threads, the last pid given out.
pub(super) fn format_loadavg(avenrun: [u64; 3], running: u64, total: usize, last_pid: i32) -> String {
    let [a, b, c] = avenrun.map(crate::kernel::loadavg::format_load);
    format!("{a} {b} {c} {running}/{total} {last_pid}\n")
}

/// Clock ticks (USER_HZ) in `d`.
pub(super) fn ticks(d: Duration) -> u64 {
    let t = d.as_nanos() / u128::from(1_000_000_000 / super::process::CLOCK_TICKS);
    u64::try_from(t).unwrap_or(u64::MAX)
}

/// What /proc/stat counts.
pub(super) struct StatCounters {
    pub cpus: u32,
    /// The guest's CPU time since boot.
    pub cpu: CpuTimes,
    pub uptime: Duration,
    /// Times guest threads went to sleep.
    pub ctxt: u64,
    pub btime: u64,
    /// Processes and threads created since boot.
    pub processes: u64,
    pub running: u64,
}

/// /proc/stat: the guest's user and system time (its total, then each
/// CPU's share: the sentry does not track which CPU ran what), the rest
/// of the CPUs' time since boot as idle, and the sandbox's counters.
pub(super) fn format_stat(c: &StatCounters) -> String {
    let cpus = u64::from(c.cpus.max(1));
    let (user, system) = (ticks(c.cpu.user), ticks(c.cpu.system));
    let idle = (ticks(c.uptime) * cpus).saturating_sub(user + system);
    let share = |total: u64, i: u64| total / cpus + u64::from(i < total % cpus);
    let mut out = format!("cpu  {user} 0 {system} {idle} 0 0 0 0 0 0\n");
    for i in 0..cpus {
        let _ = writeln!(out, "cpu{i} {} 0 {} {} 0 0 0 0 0 0", share(user, i), share(system, i), share(idle, i));
    }
    let _ = write!(
        out,
        "intr 0\nctxt {}\nbtime {}\nprocesses {}\nprocs_running {}\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
        c.ctxt, c.btime, c.processes, c.running
    );
    out
}

/// A random (version 4) UUID as /proc/sys/kernel/random/uuid shows it.
pub(super) fn format_uuid(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!("{}-{}-{}-{}-{}\n", hex(0..4), hex(4..6), hex(6..8), hex(8..10), hex(10..16))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "MemTotal:       24684092 kB\nMemFree:        23500616 kB\nMemAvailable:   24313184 kB\nBuffers:            7200 kB\nActive(anon):       1528 kB\nCommitLimit:    12342044 kB\nVmallocTotal:   34359738367 kB\nHugePages_Total:       0\nHugePages_Free:       12\nHugepagesize:       2048 kB\nDirectMap1G:    25165824 kB\n";

    #[test]
    fn meminfo_keeps_host_layout_with_sandbox_values() {
        assert_eq!(meminfo_kb(HOST, "MemTotal"), Some(24_684_092));
        assert_eq!(meminfo_kb(HOST, "Mem"), None);
        let text = format_meminfo(HOST, 1_048_576, 2048);
        assert_eq!(
            text,
            "MemTotal:        1048576 kB\nMemFree:         1046528 kB\nMemAvailable:    1046528 kB\nBuffers:               0 kB\nActive(anon):       2048 kB\nCommitLimit:      524288 kB\nVmallocTotal:   34359738367 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\nDirectMap1G:           0 kB\n"
        );
        assert_eq!(format_meminfo(HOST, 100, 200).lines().nth(1), Some("MemFree:               0 kB"));
    }

    #[test]
    fn meminfo_without_host_file_has_the_essentials() {
        assert_eq!(
            format_meminfo("", 4096, 1024),
            "MemTotal:           4096 kB\nMemFree:            3072 kB\nMemAvailable:       3072 kB\n"
        );
    }

    #[test]
    fn uptime_truncates_to_centiseconds() {
        let up = Duration::new(12, 345_999_999);
        assert_eq!(format_uptime(up, up * 2), "12.34 24.69\n");
        assert_eq!(format_uptime(Duration::ZERO, Duration::from_millis(50)), "0.00 0.05\n");
    }

    #[test]
    fn net_dev_lists_loopback_with_its_counters() {
        let s = format_net_dev((1234, 5), false);
        assert_eq!(s.lines().count(), 3);
        assert!(format_net_dev((0, 0), true).lines().nth(3).unwrap().trim_start().starts_with("eth0:"));
        let lo = s.lines().nth(2).unwrap();
        let fields: Vec<&str> = lo.split_whitespace().collect();
        assert_eq!(fields.len(), 17);
        assert_eq!((fields[0], fields[1], fields[2], fields[9], fields[10]), ("lo:", "1234", "5", "1234", "5"));
    }

    #[test]
    fn net_route_shows_the_default_route_through_the_uplink() {
        assert_eq!(format_net_route(None).lines().count(), 1);
        let s = format_net_route(Some(&husk_netstack::iface::Uplink::SANDBOX));
        let default: Vec<&str> = s.lines().nth(1).unwrap().split('\t').collect();
        assert_eq!((default[0], default[1], default[2], default[3]), ("eth0", "00000000", "0202000A", "0003"));
        let net: Vec<&str> = s.lines().nth(2).unwrap().split('\t').collect();
        assert_eq!((net[1], net[7]), ("0002000A", "00FFFFFF"));
    }

    #[test]
    fn loadavg_line() {
        assert_eq!(format_loadavg([0; 3], 1, 3, 42), "0.00 0.00 0.00 1/3 42\n");
        assert_eq!(format_loadavg([2048, 1024, 2600], 2, 3, 42), "1.00 0.50 1.27 2/3 42\n");
    }

    #[test]
    fn stat_counts_guest_time_per_cpu_and_the_rest_as_idle() {
        let c = StatCounters {
            cpus: 2,
            cpu: CpuTimes { user: Duration::from_millis(1230), system: Duration::from_millis(50) },
            uptime: Duration::from_secs(10),
            ctxt: 99,
            btime: 1_700_000_000,
            processes: 7,
            running: 3,
        };
        let s = format_stat(&c);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "cpu  123 0 5 1872 0 0 0 0 0 0");
        assert_eq!(lines[1], "cpu0 62 0 3 936 0 0 0 0 0 0");
        assert_eq!(lines[2], "cpu1 61 0 2 936 0 0 0 0 0 0");
        assert_eq!(lines[3], "intr 0");
        for want in ["ctxt 99", "btime 1700000000", "processes 7", "procs_running 3", "procs_blocked 0"] {
            assert!(lines.contains(&want), "{want} in {s}");
        }
        assert_eq!(lines.last(), Some(&"softirq 0 0 0 0 0 0 0 0 0 0 0"));
    }

    #[test]
    fn uuid_is_version_4() {
        let u = format_uuid([0xff; 16]);
        assert_eq!(u, "ffffffff-ffff-4fff-bfff-ffffffffffff\n");
        assert_eq!(format_uuid([0; 16]), "00000000-0000-4000-8000-000000000000\n");
    }

    #[test]
    fn filesystems_format() {
        assert!(FILESYSTEMS.lines().all(|l| l.starts_with("nodev\t")));
        assert!(FILESYSTEMS.contains("nodev\tproc\n"));
    }
}
