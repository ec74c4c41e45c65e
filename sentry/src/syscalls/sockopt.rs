//! The socket-level (SOL_SOCKET) options every family shares, as Linux's
//! sk_setsockopt and sk_getsockopt serve them: each family's getsockopt and
//! setsockopt answer what is its own (SO_ERROR, SO_PEERCRED, port sharing
//! on IP sockets …) and pass the rest here.

use super::args;
use crate::abi::layout::{Encoder, Layout};
use crate::abi::netdevice::IFNAMSIZ;
use crate::abi::socket::{
    Ucred, AF_INET, AF_INET6, AF_NETLINK, AF_UNIX, IPPROTO_UDP, SOCK_DGRAM, SOCK_STREAM, SO_ACCEPTCONN,
    SO_BINDTODEVICE, SO_BINDTOIFINDEX, SO_BROADCAST, SO_BUSY_POLL, SO_COOKIE, SO_DEBUG, SO_DETACH_FILTER, SO_DOMAIN,
    SO_DONTROUTE, SO_ERROR, SO_INCOMING_CPU, SO_KEEPALIVE, SO_LINGER, SO_MARK, SO_NOFCS, SO_NO_CHECK, SO_OOBINLINE,
    SO_PASSCRED, SO_PASSSEC, SO_PEERCRED, SO_PEERGROUPS, SO_PRIORITY, SO_PROTOCOL, SO_RCVBUF, SO_RCVBUFFORCE,
    SO_RCVLOWAT, SO_RCVTIMEO, SO_RCVTIMEO_NEW, SO_REUSEADDR, SO_REUSEPORT, SO_RXQ_OVFL, SO_SELECT_ERR_QUEUE, SO_SNDBUF,
    SO_SNDBUFFORCE, SO_SNDLOWAT, SO_SNDTIMEO, SO_SNDTIMEO_NEW, SO_TIMESTAMPING_NEW, SO_TIMESTAMPING_OLD,
    SO_TIMESTAMPNS_NEW, SO_TIMESTAMPNS_OLD, SO_TIMESTAMP_NEW, SO_TIMESTAMP_OLD, SO_TYPE, SO_WIFI_STATUS, SO_ZEROCOPY,
};
use crate::abi::time::Timeval;
use crate::abi::Errno;
use crate::auth::caps;
use crate::fs::sockopt::{SockOpts, Stamping, Values, RMEM_DEFAULT, RMEM_MAX, TCP_RMEM_MAX, WMEM_DEFAULT, WMEM_MAX};
use crate::kernel::Task;
use parking_lot::Mutex;
use std::time::Duration;

/// SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF of a 64-bit Linux.
const MIN_SNDBUF: i32 = 4608;
const MIN_RCVBUF: i32 = 2304;
/// IFNAMSIZ.
/// SOF_TIMESTAMPING_*: every flag Linux 6.18 knows, OPT_ID, OPT_ID_TCP and
/// BIND_PHC.
const TSF_MASK: u32 = (1 << 19) - 1;
const TSF_OPT_ID: u32 = 1 << 7;
const TSF_BIND_PHC: u32 = 1 << 15;
const TSF_OPT_ID_TCP: u32 = 1 << 16;

/// The boolean options: stored and read back as 0 or 1.
const FLAGS: &[i32] = &[
    SO_DEBUG,
    SO_DONTROUTE,
    SO_BROADCAST,
    SO_KEEPALIVE,
    SO_OOBINLINE,
    SO_NO_CHECK,
    SO_RXQ_OVFL,
    SO_WIFI_STATUS,
    SO_NOFCS,
    SO_SELECT_ERR_QUEUE,
];

/// A socket as the shared options see it.
pub(super) struct Sock<'a> {
    pub domain: i32,
    /// SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET or SOCK_RAW.
    pub ty: i32,
    pub protocol: i32,
    pub opts: &'a SockOpts,
    /// SO_RCVTIMEO and SO_SNDTIMEO (None: none).
    pub timeouts: &'a Mutex<(Option<Duration>, Option<Duration>)>,
}

impl Sock<'_> {
    fn inet(&self) -> bool {
        self.domain == AF_INET || self.domain == AF_INET6
    }

    fn tcp(&self) -> bool {
        self.inet() && self.ty == SOCK_STREAM
    }

    /// SO_SNDBUF and SO_RCVBUF before any is set: tcp_wmem and tcp_rmem's
    /// defaults for TCP, net.core's for the rest.
    fn default_bufs(&self) -> (i32, i32) {
        if self.tcp() {
            (16_384, 131_072)
        } else {
            (WMEM_DEFAULT, RMEM_DEFAULT)
        }
    }

    /// May this family carry credentials (SO_PASSCRED and the like)?
    /// Since Linux 6.16 only Unix and netlink sockets may.
    fn may_pass_creds(&self) -> bool {
        self.domain == AF_UNIX || self.domain == AF_NETLINK
    }
}

pub(super) fn flag_bit(opt: i32) -> u64 {
    1u64 << u32::try_from(opt).unwrap_or(0).min(63)
}

/// getsockopt(2) of a shared option: the value's bytes (write_sockopt cuts
/// them to the caller's `len`).
pub(super) fn get(s: &Sock, name: i32, len: usize) -> Result<Vec<u8>, Errno> {
    let v = s.opts.get();
    let int = |x: i32| Ok(x.to_le_bytes().to_vec());
    let on = |b: bool| int(i32::from(b));
    match name {
        n if FLAGS.contains(&n) => on(v.flags & flag_bit(n) != 0),
        SO_REUSEADDR => on(v.flags & flag_bit(SO_REUSEADDR) != 0),
        SO_REUSEPORT => on(false),
        SO_PASSCRED | SO_PASSSEC if s.may_pass_creds() => on(v.flags & flag_bit(name) != 0),
        SO_PASSCRED | SO_PASSSEC => Err(Errno::EOPNOTSUPP),
        SO_TYPE => int(s.ty),
        SO_DOMAIN => int(s.domain),
        SO_PROTOCOL => int(s.protocol),
        SO_ERROR | SO_ACCEPTCONN => int(0),
        SO_SNDBUF => int(v.sndbuf.unwrap_or(s.default_bufs().0)),
        SO_RCVBUF => int(v.rcvbuf.unwrap_or(s.default_bufs().1)),
        SO_LINGER => {
            let mut e = Encoder::new();
            e.i32(i32::from(v.linger.0)).i32(v.linger.1);
            Ok(e.as_bytes().to_vec())
        }
        SO_PRIORITY => int(v.priority),
        SO_MARK => Ok(v.mark.to_le_bytes().to_vec()),
        SO_RCVLOWAT => int(v.rcvlowat),
        SO_SNDLOWAT => int(1),
        SO_BUSY_POLL => int(v.busy_poll),
        SO_INCOMING_CPU => int(v.incoming_cpu),
        SO_ZEROCOPY => on(v.zerocopy),
        SO_RCVTIMEO | SO_RCVTIMEO_NEW | SO_SNDTIMEO | SO_SNDTIMEO_NEW => {
            let t = s.timeouts.lock();
            let t = if name == SO_RCVTIMEO || name == SO_RCVTIMEO_NEW { t.0 } else { t.1 };
            Ok(Timeval::from_duration(t.unwrap_or_default()).encode())
        }
        SO_TIMESTAMP_OLD => on(v.stamping == Some(Stamping { ns: false, new: false })),
        SO_TIMESTAMPNS_OLD => on(v.stamping == Some(Stamping { ns: true, new: false })),
        SO_TIMESTAMP_NEW => on(v.stamping == Some(Stamping { ns: false, new: true })),
        SO_TIMESTAMPNS_NEW => on(v.stamping == Some(Stamping { ns: true, new: true })),
        // struct so_timestamping: the flags and the bound clock (none).
        SO_TIMESTAMPING_OLD | SO_TIMESTAMPING_NEW => {
            let mut e = Encoder::new();
            e.u32(v.tsflags).i32(0);
            Ok(e.as_bytes().to_vec())
        }
        SO_COOKIE if len < 8 => Err(Errno::EINVAL),
        SO_COOKIE => Ok(s.opts.cookie().to_le_bytes().to_vec()),
        SO_BINDTODEVICE => match v.device {
            None => Ok(Vec::new()),
            Some(_) if len < IFNAMSIZ => Err(Errno::EINVAL),
            Some((_, dev)) => {
                let mut name = dev.as_bytes().to_vec();
                name.push(0);
                Ok(name)
            }
        },
        SO_BINDTOIFINDEX => Ok(v.device.map_or(0, |(i, _)| i).to_le_bytes().to_vec()),
        // No peer credentials: pid 0 and the ids -1, as cred_to_ucred.
        SO_PEERCRED => Ok(Ucred { pid: 0, uid: u32::MAX, gid: u32::MAX }.encode()),
        SO_PEERGROUPS => Err(Errno::ENODATA),
        // No security module labels sockets.
        _ => Err(Errno::ENOPROTOOPT),
    }
}

/// The sandbox interface named `name` (index, name): ENODEV for another.
fn device_named(name: &[u8]) -> Result<(u32, &'static str), Errno> {
    husk_netstack::iface::current()
        .into_iter()
        .find(|i| i.name.as_bytes() == name)
        .map(|i| (i.index, i.name))
        .ok_or(Errno::ENODEV)
}

fn device_indexed(index: u32) -> Result<(u32, &'static str), Errno> {
    husk_netstack::iface::current()
        .into_iter()
        .find(|i| i.index == index)
        .map(|i| (i.index, i.name))
        .ok_or(Errno::ENODEV)
}

/// A timeout as sock_set_timeout reads it: EDOM for microseconds out of
/// range; a negative time never waits (Some(0)); zero waits forever.
pub(super) fn timeout(raw: &[u8]) -> Result<Option<Duration>, Errno> {
    let Timeval { sec, usec } = Timeval::decode(raw);
    if !(0..1_000_000).contains(&usec) {
        return Err(Errno::EDOM);
    }
    let Ok(sec) = u64::try_from(sec) else {
        return Ok(Some(Duration::ZERO));
    };
    let t = Duration::from_secs(sec) + Duration::from_micros(u64::try_from(usec).unwrap_or(0));
    Ok((!t.is_zero()).then_some(t))
}

/// setsockopt(2) of a shared option, value at `optval`, `optlen` bytes.
pub(super) fn set(task: &Task, s: &Sock, name: i32, optval: u64, optlen: u64) -> Result<(), Errno> {
    let mm = task.thread.mm();
    // The length is a signed int to Linux.
    let optlen = i64::from(args::int(optlen));
    if name == SO_BINDTODEVICE {
        let n = usize::try_from(optlen).map_err(|_| Errno::EINVAL)?.min(IFNAMSIZ - 1);
        let mut raw = vec![0u8; n];
        mm.copy_in(optval, &mut raw)?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(n);
        let dev = if end == 0 { None } else { Some(device_named(&raw[..end])?) };
        return s.opts.update(|v| {
            v.device = dev;
            Ok(())
        });
    }
    if optlen < 4 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 4];
    mm.copy_in(optval, &mut raw)?;
    let val = i32::from_le_bytes(raw);
    let creds = task.thread.creds();
    let admin = creds.capable(caps::CAP_NET_ADMIN);
    let net_raw = creds.capable(caps::CAP_NET_RAW);
    let set_flag = |v: &mut Values, opt: i32| {
        if val != 0 {
            v.flags |= flag_bit(opt);
        } else {
            v.flags &= !flag_bit(opt);
        }
    };
    match name {
        SO_DEBUG if val != 0 && !admin => Err(Errno::EACCES),
        n if FLAGS.contains(&n) || n == SO_REUSEADDR => s.opts.update(|v| {
            set_flag(v, n);
            Ok(())
        }),
        // Port sharing is for IP sockets (Linux 6.9), which serve it
        // themselves.
        SO_REUSEPORT if val != 0 => Err(Errno::EOPNOTSUPP),
        SO_REUSEPORT => Ok(()),
        SO_PASSCRED | SO_PASSSEC if !s.may_pass_creds() => Err(Errno::EOPNOTSUPP),
        SO_PASSCRED | SO_PASSSEC => s.opts.update(|v| {
            set_flag(v, name);
            Ok(())
        }),
        SO_SNDBUF | SO_SNDBUFFORCE | SO_RCVBUF | SO_RCVBUFFORCE => {
            let force = name == SO_SNDBUFFORCE || name == SO_RCVBUFFORCE;
            let send = name == SO_SNDBUF || name == SO_SNDBUFFORCE;
            if force && !admin {
                return Err(Errno::EPERM);
            }
            // The unforced size is read unsigned and bounded by
            // net.core.*mem_max; the forced one is at least 0.
            let asked = if force {
                val.max(0)
            } else {
                let max = if send { WMEM_MAX } else { RMEM_MAX };
                i32::try_from(u32::from_ne_bytes(val.to_ne_bytes()).min(max)).unwrap_or(i32::MAX)
            };
            let min = if send { MIN_SNDBUF } else { MIN_RCVBUF };
            let size = (asked.min(i32::MAX / 2) * 2).max(min);
            s.opts.update(|v| {
                *(if send { &mut v.sndbuf } else { &mut v.rcvbuf }) = Some(size);
                Ok(())
            })
        }
        SO_PRIORITY if !(0..=6).contains(&val) && !admin && !net_raw => Err(Errno::EPERM),
        SO_PRIORITY => s.opts.update(|v| {
            v.priority = val;
            Ok(())
        }),
        SO_MARK if !admin && !net_raw => Err(Errno::EPERM),
        SO_MARK => s.opts.update(|v| {
            v.mark = u32::from_ne_bytes(val.to_ne_bytes());
            Ok(())
        }),
        SO_LINGER => {
            if optlen < 8 {
                return Err(Errno::EINVAL);
            }
            let mut raw = [0u8; 8];
            mm.copy_in(optval, &mut raw)?;
            let onoff = i32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
            let secs = i32::from_le_bytes([raw[4], raw[5], raw[6], raw[7]]);
            s.opts.update(|v| {
                v.linger = if onoff == 0 { (false, v.linger.1) } else { (true, secs) };
                Ok(())
            })
        }
        SO_RCVLOWAT => {
            let mut want = if val < 0 { i32::MAX } else { val };
            let v = s.opts.get();
            if s.tcp() {
                // tcp_set_rcvlowat: at most half the receive buffer.
                want = want.min(v.rcvbuf.map_or(TCP_RMEM_MAX, |b| b) >> 1);
            }
            s.opts.update(|v| {
                v.rcvlowat = want.max(1);
                Ok(())
            })
        }
        SO_RCVTIMEO | SO_RCVTIMEO_NEW | SO_SNDTIMEO | SO_SNDTIMEO_NEW => {
            if optlen < i64::try_from(Timeval::SIZE).unwrap_or(16) {
                return Err(Errno::EINVAL);
            }
            let mut raw = [0u8; Timeval::SIZE];
            mm.copy_in(optval, &mut raw)?;
            let t = timeout(&raw)?;
            let mut timeouts = s.timeouts.lock();
            if name == SO_RCVTIMEO || name == SO_RCVTIMEO_NEW {
                timeouts.0 = t;
            } else {
                timeouts.1 = t;
            }
            Ok(())
        }
        SO_TIMESTAMP_OLD | SO_TIMESTAMPNS_OLD | SO_TIMESTAMP_NEW | SO_TIMESTAMPNS_NEW => s.opts.update(|v| {
            let ns = name == SO_TIMESTAMPNS_OLD || name == SO_TIMESTAMPNS_NEW;
            let new = name == SO_TIMESTAMP_NEW || name == SO_TIMESTAMPNS_NEW;
            v.stamping = (val != 0).then_some(Stamping { ns, new });
            Ok(())
        }),
        SO_TIMESTAMPING_OLD | SO_TIMESTAMPING_NEW => {
            let f = u32::from_ne_bytes(val.to_ne_bytes());
            // No hardware clock to bind to; OPT_ID_TCP refines OPT_ID.
            if f & !TSF_MASK != 0 || f & TSF_BIND_PHC != 0 || (f & TSF_OPT_ID_TCP != 0 && f & TSF_OPT_ID == 0) {
                return Err(Errno::EINVAL);
            }
            s.opts.update(|v| {
                v.tsflags = f;
                Ok(())
            })
        }
        SO_BUSY_POLL if val < 0 => Err(Errno::EINVAL),
        SO_BUSY_POLL => s.opts.update(|v| {
            if val > v.busy_poll && !admin {
                return Err(Errno::EPERM);
            }
            v.busy_poll = val;
            Ok(())
        }),
        SO_INCOMING_CPU => s.opts.update(|v| {
            v.incoming_cpu = val;
            Ok(())
        }),
        SO_ZEROCOPY => {
            let udp = s.ty == SOCK_DGRAM && s.protocol == IPPROTO_UDP;
            if !(s.inet() && (s.tcp() || udp)) {
                return Err(Errno::EOPNOTSUPP);
            }
            if !(0..=1).contains(&val) {
                return Err(Errno::EINVAL);
            }
            s.opts.update(|v| {
                v.zerocopy = val == 1;
                Ok(())
            })
        }
        SO_BINDTOIFINDEX => {
            let index = u32::try_from(val).map_err(|_| Errno::EINVAL)?;
            let dev = if index == 0 { None } else { Some(device_indexed(index)?) };
            s.opts.update(|v| {
                v.device = dev;
                Ok(())
            })
        }
        // No socket filter can be attached (SO_ATTACH_FILTER is not
        // served), so there is none to detach, as sk_detach_filter says.
        SO_DETACH_FILTER => Err(Errno::ENOENT),
        // Read-only ones (SO_TYPE, SO_ERROR, SO_PEERCRED, SO_COOKIE …),
        // SO_SNDLOWAT (fixed at 1) and unknown ones.
        _ => Err(Errno::ENOPROTOOPT),
    }
}
