//! /proc/sys: the sandbox's sysctls. The writable ones are the kernel's
//! (`kernel::sysctl`), read and set through it; the others show fixed
//! values or the sentry's limits.

use super::{dir, file, host_file, shown, system, text, Entry, Proc};
use crate::abi::Errno;
use crate::fs::sockopt;
use crate::fs::synthetic::GenFile;
use crate::kernel::{ipc, namespaces, sysctl, thread};
use crate::vfs::S_IFREG;
use std::sync::Arc;

/// The writable file of sysctl `key` (dotted) at `path`: root may write
/// it (0644), which sets the sandbox's value (EINVAL for a value the
/// sysctl refuses, as Linux).
fn sysctl_file(p: &Arc<Proc>, path: &str, key: &'static str) -> Entry {
    debug_assert!(sysctl::WRITABLE.contains(&key), "{key}");
    let (read, write) = (p.clone(), p.clone());
    let node = GenFile::writable(
        p.attr(path, S_IFREG | 0o644),
        Box::new(move || {
            let k = read.kernel()?;
            sysctl::get(&k, key).ok_or(Errno::ENOENT)
        }),
        Box::new(move |data| {
            let value = std::str::from_utf8(data).map_err(|_| Errno::EINVAL)?;
            let k = write.kernel()?;
            sysctl::set(&k, key, value).map_err(|_| Errno::EINVAL)
        }),
    );
    (super::name_of(path), node)
}

/// The host name (`domain` false) or domain name of the reader's UTS
/// namespace (the sandbox's first for a reader that is no guest thread);
/// a write sets the writer's, cut at a newline and to 64 bytes, as
/// Linux's `proc_do_uts_string`.
fn uts_file(p: &Arc<Proc>, path: &str, domain: bool) -> Entry {
    let (read, write) = (p.clone(), p.clone());
    let node = GenFile::writable(
        p.attr(path, S_IFREG | 0o644),
        Box::new(move || {
            let k = read.kernel()?;
            let (host, dom) = match thread::current() {
                Some(t) => namespaces::uts_names(&k, &t),
                None => (k.hostname(), k.domainname()),
            };
            Ok(super::line(if domain { &dom } else { &host }))
        }),
        Box::new(move |data| {
            let k = write.kernel()?;
            let t = thread::current().ok_or(Errno::EPERM)?;
            let end = data.iter().position(|&b| b == b'\n' || b == 0).unwrap_or(data.len()).min(UTS_NAME_MAX);
            namespaces::set_uts_name(&k, &t, domain, data[..end].to_vec());
            Ok(())
        }),
    );
    (super::name_of(path), node)
}

/// The longest host or domain name (`__NEW_UTS_LEN`).
const UTS_NAME_MAX: usize = 64;

pub(super) fn sys_dir(p: &Arc<Proc>) -> Entry {
    let mut id = [0u8; 16];
    crate::loader::host_random(&mut id);
    let boot_id = system::format_uuid(id);
    let kernel = dir(
        p,
        "/sys/kernel",
        vec![
            shown(p, "/sys/kernel/cap_last_cap", crate::auth::caps::CAP_LAST_CAP),
            uts_file(p, "/sys/kernel/domainname", true),
            uts_file(p, "/sys/kernel/hostname", false),
            dir(p, "/sys/kernel/keys", vec![sysctl_file(p, "/sys/kernel/keys/maxkeys", "kernel.keys.maxkeys")]),
            shown(p, "/sys/kernel/msgmax", ipc::msg::MSGMAX),
            shown(p, "/sys/kernel/msgmnb", ipc::msg::MSGMNB),
            shown(p, "/sys/kernel/msgmni", ipc::msg::MSGMNI),
            text(p, "/sys/kernel/ngroups_max", "65536\n"),
            host_file(p, "/sys/kernel/osrelease", |h| &h.osrelease),
            text(p, "/sys/kernel/ostype", "Linux\n"),
            // The ids that stand for ones a namespace cannot show.
            text(p, "/sys/kernel/overflowgid", "65534\n"),
            text(p, "/sys/kernel/overflowuid", "65534\n"),
            text(p, "/sys/kernel/pid_max", "4194304\n"),
            dir(
                p,
                "/sys/kernel/random",
                vec![
                    file(p, "/sys/kernel/random/boot_id", Box::new(move || Ok(boot_id.clone().into_bytes()))),
                    file(
                        p,
                        "/sys/kernel/random/uuid",
                        Box::new(|| {
                            let mut b = [0u8; 16];
                            crate::loader::host_random(&mut b);
                            Ok(system::format_uuid(b).into_bytes())
                        }),
                    ),
                ],
            ),
            // The sandbox lays out address spaces without randomization.
            shown(p, "/sys/kernel/randomize_va_space", 0),
            file(p, "/sys/kernel/sem", {
                use ipc::sem::{SEMMNI, SEMMNS, SEMMSL, SEMOPM};
                Box::new(|| Ok(format!("{SEMMSL}\t{SEMMNS}\t{SEMOPM}\t{SEMMNI}\n").into_bytes()))
            }),
            shown(p, "/sys/kernel/shmall", ipc::shm::SHMALL),
            shown(p, "/sys/kernel/shmmax", ipc::shm::SHMMAX),
            shown(p, "/sys/kernel/shmmni", ipc::shm::SHMMNI),
            // Classic ptrace permissions: what the sentry's ptrace enforces.
            dir(p, "/sys/kernel/yama", vec![shown(p, "/sys/kernel/yama/ptrace_scope", 0)]),
        ],
    );
    let pipe_max =
        file(p, "/sys/fs/pipe-max-size", Box::new(|| Ok(format!("{}\n", crate::fs::pipe::PIPE_MAX_SIZE).into_bytes())));
    let inotify = {
        use crate::vfs::notify::{MAX_QUEUED_EVENTS, MAX_USER_INSTANCES, MAX_USER_WATCHES};
        let limit = |name: &str, v: usize| {
            file(p, &format!("/sys/fs/inotify/{name}"), Box::new(move || Ok(format!("{v}\n").into_bytes())))
        };
        dir(
            p,
            "/sys/fs/inotify",
            vec![
                limit("max_queued_events", MAX_QUEUED_EVENTS),
                limit("max_user_instances", MAX_USER_INSTANCES),
                limit("max_user_watches", MAX_USER_WATCHES),
            ],
        )
    };
    let fs = dir(p, "/sys/fs", vec![host_file(p, "/sys/fs/file-max", |h| &h.file_max), pipe_max, inotify]);
    let ipv4 = dir(
        p,
        "/sys/net/ipv4",
        vec![
            sysctl_file(p, "/sys/net/ipv4/ip_forward", "net.ipv4.ip_forward"),
            sysctl_file(p, "/sys/net/ipv4/ip_local_port_range", "net.ipv4.ip_local_port_range"),
            sysctl_file(p, "/sys/net/ipv4/ip_unprivileged_port_start", "net.ipv4.ip_unprivileged_port_start"),
            sysctl_file(p, "/sys/net/ipv4/ping_group_range", "net.ipv4.ping_group_range"),
            sysctl_file(p, "/sys/net/ipv4/tcp_recovery", "net.ipv4.tcp_recovery"),
            sysctl_file(p, "/sys/net/ipv4/tcp_sack", "net.ipv4.tcp_sack"),
        ],
    );
    // The stack's IPv6 behavior: flow labels are not generated, `::`
    // takes IPv4 too unless IPV6_V6ONLY, no fragment reassembly timeout
    // other than Linux's, no binding to foreign addresses.
    let ipv6 = dir(
        p,
        "/sys/net/ipv6",
        vec![
            shown(p, "/sys/net/ipv6/auto_flowlabels", 1),
            shown(p, "/sys/net/ipv6/bindv6only", 0),
            shown(p, "/sys/net/ipv6/ip6frag_time", 60),
            shown(p, "/sys/net/ipv6/ip_nonlocal_bind", 0),
        ],
    );
    let mem = |name: &str, v: i64| shown(p, &format!("/sys/net/core/{name}"), v);
    let core = dir(
        p,
        "/sys/net/core",
        vec![
            text(p, "/sys/net/core/somaxconn", "4096\n"),
            mem("rmem_default", sockopt::RMEM_DEFAULT.into()),
            mem("rmem_max", sockopt::RMEM_MAX.into()),
            mem("wmem_default", sockopt::WMEM_DEFAULT.into()),
            mem("wmem_max", sockopt::WMEM_MAX.into()),
        ],
    );
    let net = dir(p, "/sys/net", vec![core, ipv4, ipv6]);
    let vm = dir(
        p,
        "/sys/vm",
        vec![
            // Linux's default; the sentry's own limit on mappings is memory.
            text(p, "/sys/vm/max_map_count", "65530\n"),
            shown(p, "/sys/vm/mmap_min_addr", crate::mm::manager::MMAP_MIN_ADDR),
            text(p, "/sys/vm/overcommit_memory", "0\n"),
        ],
    );
    dir(p, "/sys", vec![fs, kernel, net, vm])
}
