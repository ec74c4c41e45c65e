//! Facts about the host the guest may see: its kernel release, RAM and
//! CPUs, and which CPU a sentry thread runs on. They are read once and
//! cached: `prime_info` reads them before the sentry is confined, when
//! its seccomp filter forbids opening files.

use std::sync::OnceLock;

/// Reads, once, the host facts this module reports, so that it happens
/// before the sentry is confined.
pub(crate) fn prime_info() {
    uts();
    total_ram();
    cpus();
    super::membarrier::have_global_barrier();
}

/// The host's kernel release and version, as uname reports them.
pub(crate) fn uts() -> &'static (Vec<u8>, Vec<u8>) {
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

/// The host's total RAM in bytes.
pub(crate) fn total_ram() -> u64 {
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

/// The host's CPUs: the online ones (a bit mask in 64-bit words) and
/// `nr_cpu_ids`, the number of possible CPU ids.
pub(crate) struct HostCpus {
    pub online: Vec<u64>,
    pub nr_cpu_ids: usize,
}

impl HostCpus {
    /// `cpumask_size()`: the bytes of a kernel CPU mask.
    pub(crate) fn mask_bytes(&self) -> usize {
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

/// The host's CPUs, from sysfs (or the online count when that is absent).
pub(crate) fn cpus() -> &'static HostCpus {
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

/// The host CPU the calling sentry thread runs on (0 if unknown).
pub(crate) fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no memory-safety preconditions.
    u32::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0b11]));
        assert_eq!(parse_cpu_list("0,2-3,64"), Some(vec![0b1101, 1]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(cpu_count_bound(&[0b11]), 2);
        assert_eq!(cpu_count_bound(&[0b1, 1]), 65);
        assert_eq!(cpu_count_bound(&[0]), 0);
        let host = HostCpus { online: vec![3], nr_cpu_ids: 65 };
        assert_eq!(host.mask_bytes(), 16);
    }

    #[test]
    fn the_host_has_a_cpu_a_release_and_memory() {
        let host = cpus();
        assert!(host.nr_cpu_ids >= 1 && host.online.iter().any(|&w| w != 0));
        assert!(!uts().0.is_empty());
        assert!(total_ram() > 0);
    }
}
