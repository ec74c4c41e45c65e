//! The sysctls the sandbox has a view of: a container's `linux.sysctl`
//! sets them at boot, /proc/sys shows them (and writing its files sets
//! them), and the sentry consults them (the first unprivileged port, the
//! ephemeral port range). Others have no meaning in the sentry and are
//! left aside with a warning by the caller.

use super::Kernel;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

/// The network sysctls the sentry's stack honors or reports.
pub struct NetSysctls {
    /// net.ipv4.ip_unprivileged_port_start: ports below it need
    /// CAP_NET_BIND_SERVICE.
    unprivileged_port_start: AtomicU32,
    /// net.ipv4.ping_group_range (shown; the stack has no ICMP sockets).
    ping_group_range: Mutex<(u32, u32)>,
    /// net.ipv4.tcp_sack, tcp_recovery and ip_forward: shown as set (the
    /// stack's TCP has neither SACK nor RACK, and it forwards nothing).
    tcp_sack: AtomicI64,
    tcp_recovery: AtomicI64,
    ip_forward: AtomicI64,
}

impl Default for NetSysctls {
    fn default() -> Self {
        NetSysctls {
            unprivileged_port_start: AtomicU32::new(1024),
            ping_group_range: Mutex::new((1, 0)),
            tcp_sack: AtomicI64::new(1),
            tcp_recovery: AtomicI64::new(1),
            ip_forward: AtomicI64::new(0),
        }
    }
}

/// kernel.keys.maxkeys: shown as set (the sandbox has no keyrings).
struct KeySysctls {
    maxkeys: AtomicI64,
}

impl Default for KeySysctls {
    fn default() -> Self {
        KeySysctls { maxkeys: AtomicI64::new(200) }
    }
}

impl NetSysctls {
    pub fn unprivileged_port_start(&self) -> u32 {
        self.unprivileged_port_start.load(Ordering::Relaxed)
    }

    /// The /proc/sys text of ping_group_range.
    pub fn ping_group_range(&self) -> String {
        let (lo, hi) = *self.ping_group_range.lock();
        format!("{lo}\t{hi}\n")
    }
}

/// Why a sysctl was not set.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SysctlError {
    #[error("{0}: not in the sandbox's view")]
    Unknown(String),
    #[error("{0}: invalid value {1:?}")]
    Invalid(String, String),
}

/// The writable sysctls, as their /proc/sys files are named.
pub(crate) const WRITABLE: [&str; 7] = [
    "kernel.keys.maxkeys",
    "net.ipv4.ip_forward",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ping_group_range",
    "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_sack",
];

/// The text of sysctl `key` (dotted, one of `WRITABLE`), as its /proc/sys
/// file shows it.
pub(crate) fn get(kernel: &Kernel, key: &str) -> Option<Vec<u8>> {
    let net = &kernel.net_sysctls;
    let number = |n: &AtomicI64| format!("{}\n", n.load(Ordering::Relaxed));
    let text = match key {
        "kernel.keys.maxkeys" => number(&kernel.ext::<KeySysctls>().maxkeys),
        "net.ipv4.ip_forward" => number(&net.ip_forward),
        "net.ipv4.ip_local_port_range" => {
            let (lo, hi) = husk_netstack::local_port_range();
            format!("{lo}\t{hi}\n")
        }
        "net.ipv4.ip_unprivileged_port_start" => format!("{}\n", net.unprivileged_port_start()),
        "net.ipv4.ping_group_range" => net.ping_group_range(),
        "net.ipv4.tcp_recovery" => number(&net.tcp_recovery),
        "net.ipv4.tcp_sack" => number(&net.tcp_sack),
        _ => return None,
    };
    Some(text.into_bytes())
}

/// An integer sysctl's value, as Linux's `proc_dointvec` parses it
/// (surrounding blanks allowed).
fn int(v: &str) -> Option<i64> {
    v.trim().parse().ok()
}

/// Sets sysctl `key` (dotted or slashed) to `value`, as writing its
/// /proc/sys file would.
pub(crate) fn set(kernel: &Kernel, key: &str, value: &str) -> Result<(), SysctlError> {
    let name = key.replace('/', ".");
    let invalid = || SysctlError::Invalid(name.clone(), value.to_string());
    let v = value.trim_end_matches(['\n', '\0']);
    let net = &kernel.net_sysctls;
    let store = |field: &AtomicI64, lo: i64, hi: i64| {
        let n = int(v).filter(|n| (lo..=hi).contains(n)).ok_or_else(invalid)?;
        field.store(n, Ordering::Relaxed);
        Ok(())
    };
    let any_int = (i64::from(i32::MIN), i64::from(i32::MAX));
    match name.as_str() {
        "kernel.keys.maxkeys" => return store(&kernel.ext::<KeySysctls>().maxkeys, 0, i64::from(i32::MAX)),
        "net.ipv4.ip_forward" => return store(&net.ip_forward, any_int.0, any_int.1),
        "net.ipv4.tcp_sack" => return store(&net.tcp_sack, 0, 255),
        "net.ipv4.tcp_recovery" => return store(&net.tcp_recovery, any_int.0, any_int.1),
        "net.ipv4.ip_local_port_range" => {
            let mut it = v.split_whitespace().map(str::parse::<u16>);
            let (Some(Ok(lo)), Some(Ok(hi)), None) = (it.next(), it.next(), it.next()) else { return Err(invalid()) };
            if lo == 0 || lo > hi {
                return Err(invalid());
            }
            husk_netstack::set_local_port_range(lo, hi);
        }
        "kernel.hostname" | "kernel.domainname" => {
            if v.len() > 64 {
                return Err(invalid());
            }
            let field = if name == "kernel.hostname" { &kernel.hostname } else { &kernel.domainname };
            *field.lock() = v.as_bytes().to_vec();
        }
        "net.ipv4.ip_unprivileged_port_start" => {
            let port: u32 = v.trim().parse().ok().filter(|&p| p <= 65535).ok_or_else(invalid)?;
            kernel.net_sysctls.unprivileged_port_start.store(port, Ordering::Relaxed);
        }
        "net.ipv4.ping_group_range" => {
            let mut it = v.split_whitespace().map(str::parse::<u32>);
            let (Some(Ok(lo)), Some(Ok(hi)), None) = (it.next(), it.next(), it.next()) else { return Err(invalid()) };
            if lo > hi && !(lo == 1 && hi == 0) {
                return Err(invalid());
            }
            *kernel.net_sysctls.ping_group_range.lock() = (lo, hi);
        }
        _ => return Err(SysctlError::Unknown(name)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::MemoryFile;

    fn kernel() -> std::sync::Arc<Kernel> {
        crate::testing::kernel(std::sync::Arc::new(MemoryFile::new(1 << 24).unwrap()))
    }

    #[test]
    fn writable_sysctls_read_back_what_was_set() {
        let k = kernel();
        for key in WRITABLE {
            assert!(get(&k, key).is_some(), "{key}");
        }
        assert_eq!(get(&k, "kernel.keys.maxkeys").unwrap(), b"200\n");
        set(&k, "kernel/keys/maxkeys", "100\n").unwrap();
        assert_eq!(get(&k, "kernel.keys.maxkeys").unwrap(), b"100\n");
        assert!(set(&k, "kernel.keys.maxkeys", "-1").is_err());
        assert!(set(&k, "kernel.keys.maxkeys", "x").is_err());
        assert_eq!(get(&k, "kernel.keys.maxkeys").unwrap(), b"100\n");
        assert_eq!(get(&k, "net.ipv4.tcp_sack").unwrap(), b"1\n");
        set(&k, "net.ipv4.tcp_sack", "0").unwrap();
        assert_eq!(get(&k, "net.ipv4.tcp_sack").unwrap(), b"0\n");
        assert!(set(&k, "net.ipv4.tcp_sack", "256").is_err());
        set(&k, "net.ipv4.tcp_recovery", " 100\n").unwrap();
        assert_eq!(get(&k, "net.ipv4.tcp_recovery").unwrap(), b"100\n");
        assert_eq!(get(&k, "net.ipv4.ip_forward").unwrap(), b"0\n");
        set(&k, "net.ipv4.ip_forward", "1\0").unwrap();
        assert_eq!(get(&k, "net.ipv4.ip_forward").unwrap(), b"1\n");
        assert_eq!(get(&k, "nope"), None);
    }

    #[test]
    fn port_range_is_checked() {
        let k = kernel();
        let (lo, hi) = husk_netstack::local_port_range();
        assert!(set(&k, "net.ipv4.ip_local_port_range", "5 1").is_err());
        assert!(set(&k, "net.ipv4.ip_local_port_range", "0 10").is_err());
        assert!(set(&k, "net.ipv4.ip_local_port_range", "1 2 3").is_err());
        assert!(set(&k, "net.ipv4.ip_local_port_range", "1 70000").is_err());
        assert_eq!(get(&k, "net.ipv4.ip_local_port_range").unwrap(), format!("{lo}\t{hi}\n").into_bytes());
        set(&k, "net.ipv4.ip_local_port_range", &format!("{lo}\t{hi}\n")).unwrap();
        assert_eq!(husk_netstack::local_port_range(), (lo, hi));
    }
}
