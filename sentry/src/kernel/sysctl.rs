//! The sysctls the sandbox has a view of: a container's `linux.sysctl`
//! sets them at boot, /proc/sys shows them, and the sentry consults them
//! (the first unprivileged port). Others have no meaning in the sentry and
//! are left aside with a warning by the caller.

use super::Kernel;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// The network sysctls the sentry's stack honors or reports.
pub struct NetSysctls {
    /// net.ipv4.ip_unprivileged_port_start: ports below it need
    /// CAP_NET_BIND_SERVICE.
    unprivileged_port_start: AtomicU32,
    /// net.ipv4.ping_group_range (shown; the stack has no ICMP sockets).
    ping_group_range: Mutex<(u32, u32)>,
}

impl Default for NetSysctls {
    fn default() -> Self {
        NetSysctls { unprivileged_port_start: AtomicU32::new(1024), ping_group_range: Mutex::new((1, 0)) }
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

/// Sets sysctl `key` (dotted or slashed) to `value`, as writing its
/// /proc/sys file would.
pub(crate) fn set(kernel: &Kernel, key: &str, value: &str) -> Result<(), SysctlError> {
    let name = key.replace('/', ".");
    let invalid = || SysctlError::Invalid(name.clone(), value.to_string());
    let v = value.trim_end_matches('\n');
    match name.as_str() {
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
