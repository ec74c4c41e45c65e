//! /proc/[pid]/net (which /proc/net links to through `self`): the
//! sandbox's one network namespace. The socket tables list the sandbox's
//! own sockets only, those of its netstack (tcp, udp) and its Unix
//! sockets, found in the guest's descriptor tables; never the host's.

use super::net_text::{self, InetRow, UnixRow};
use super::{kernel_file, system, text, Proc};
use crate::fs::inet::{Endpoint, InetSocket};
use crate::fs::synthetic::{Attr, Dir};
use crate::fs::unix::UnixSocket;
use crate::kernel::Kernel;
use crate::vfs::Node;
use husk_netstack::Family;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A socket the guest holds open, with its owner and inode.
enum Socket {
    Inet(Arc<InetSocket>),
    Unix(Arc<UnixSocket>),
}

/// The guest's open sockets, each once, by inode: the owner's uid and the
/// socket.
fn sockets(k: &Kernel) -> BTreeMap<u64, (u32, Socket)> {
    let mut tables = Vec::new();
    let mut found = BTreeMap::new();
    for t in k.threads() {
        let fds = t.fds();
        if tables.iter().any(|seen| Arc::ptr_eq(seen, &fds)) {
            continue;
        }
        for fd in fds.fds() {
            let Ok(file) = fds.get(fd) else { continue };
            let Ok(st) = file.stat() else { continue };
            if found.contains_key(&st.ino) {
                continue;
            }
            let any = file.ops.clone().into_any();
            let socket = match any.downcast::<InetSocket>() {
                Ok(s) => Socket::Inet(s),
                Err(any) => match any.downcast::<UnixSocket>() {
                    Ok(s) => Socket::Unix(s),
                    Err(_) => continue,
                },
            };
            found.insert(st.ino, (st.uid, socket));
        }
        tables.push(fds);
    }
    found
}

/// The rows of the TCP (`tcp`) or UDP sockets of `family`.
fn inet_rows(k: &Kernel, tcp: bool, family: Family) -> Vec<InetRow> {
    let mut rows = Vec::new();
    for (ino, (uid, s)) in sockets(k) {
        let Socket::Inet(s) = s else { continue };
        let row = match &s.endpoint {
            Endpoint::Tcp(e) if tcp && e.family() == family => {
                InetRow { local: e.local_addr(), remote: e.remote_addr(), state: e.linux_state(), uid, ino }
            }
            Endpoint::Udp(e) if !tcp && e.family() == family => {
                let remote = e.peer_addr().ok();
                // TCP_ESTABLISHED once connected, TCP_CLOSE before.
                let state = if remote.is_some() { 1 } else { 7 };
                InetRow { local: e.local_addr(), remote, state, uid, ino }
            }
            _ => continue,
        };
        rows.push(row);
    }
    rows
}

fn unix_rows(k: &Kernel) -> Vec<UnixRow> {
    let mut rows = Vec::new();
    for (ino, (_, s)) in sockets(k) {
        let Socket::Unix(s) = s else { continue };
        rows.push(UnixRow {
            ty: s.ty().number(),
            listening: s.is_listening(),
            connected: s.peer_name().is_ok(),
            ino,
            name: s.local_name().map(|n| n.sun_path()),
        });
    }
    rows
}

/// The /proc/[pid]/net directory at `path`, with attributes `attr`.
pub(super) fn net_dir(p: &Arc<Proc>, path: &str, attr: Attr) -> Arc<dyn Node> {
    let at = |name: &str| format!("{path}/{name}");
    Dir::fixed(
        attr,
        vec![
            kernel_file(p, &at("dev"), |_, k| {
                let uplink = husk_netstack::iface::uplink().is_some();
                system::format_net_dev(k.net().loopback_counters(), uplink).into_bytes()
            }),
            text(p, &at("if_inet6"), system::IF_INET6),
            kernel_file(p, &at("route"), |_, _| system::format_net_route(husk_netstack::iface::uplink()).into_bytes()),
            kernel_file(p, &at("tcp"), |_, k| {
                net_text::format_tcp(&inet_rows(k, true, Family::V4), false).into_bytes()
            }),
            kernel_file(p, &at("tcp6"), |_, k| {
                net_text::format_tcp(&inet_rows(k, true, Family::V6), true).into_bytes()
            }),
            kernel_file(p, &at("udp"), |_, k| {
                net_text::format_udp(&inet_rows(k, false, Family::V4), false).into_bytes()
            }),
            kernel_file(p, &at("udp6"), |_, k| {
                net_text::format_udp(&inet_rows(k, false, Family::V6), true).into_bytes()
            }),
            kernel_file(p, &at("unix"), |_, k| net_text::format_unix(&unix_rows(k))),
        ],
    )
}
