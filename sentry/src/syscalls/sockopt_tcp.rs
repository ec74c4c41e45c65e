//! The IPPROTO_TCP options of a TCP socket, checked and reported as
//! Linux's do_tcp_setsockopt and do_tcp_getsockopt do. The netstack moves
//! bytes between sockets of the sandbox without segments, so most are
//! kept and read back (those the egress gateway forwards also reach the
//! host socket); TCP_CORK holds partial segments back and TCP_NODELAY
//! pushes them; TCP_INFO reports the connection's state.

use super::args;
use crate::abi::layout::Encoder;
use crate::abi::socket::{
    IPPROTO_TCP, TCP_CORK, TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_NODELAY, TCP_QUICKACK, TCP_USER_TIMEOUT,
};
use crate::abi::Errno;
use crate::fs::inet::{Endpoint, InetSocket};
use crate::kernel::Task;

const TCP_MAXSEG: i32 = 2;
const TCP_SYNCNT: i32 = 7;
const TCP_LINGER2: i32 = 8;
const TCP_DEFER_ACCEPT: i32 = 9;
const TCP_WINDOW_CLAMP: i32 = 10;
const TCP_INFO: i32 = 11;
const TCP_CONGESTION: i32 = 13;
const TCP_THIN_LINEAR_TIMEOUTS: i32 = 16;
const TCP_THIN_DUPACK: i32 = 17;
const TCP_NOTSENT_LOWAT: i32 = 25;
const TCP_INQ: i32 = 36;

/// TCP_MIN_MSS and MAX_TCP_WINDOW: TCP_MAXSEG's bounds.
const MIN_MSS: i32 = 88;
const MAX_WINDOW: i32 = 32_767;
/// TCP_MSS_DEFAULT: an unconnected socket's segment size.
const MSS_DEFAULT: i32 = 536;
/// The segment size over loopback.
fn loopback_mss() -> i32 {
    i32::try_from(husk_netstack::tcp::LOOPBACK_MSS).unwrap_or(i32::MAX)
}
/// net.ipv4.tcp_fin_timeout and its ceiling (TCP_FIN_TIMEOUT_MAX), s.
const FIN_TIMEOUT: i32 = 60;
const FIN_TIMEOUT_MAX: i32 = 120;
/// net.ipv4.tcp_syn_retries and its ceiling (MAX_TCP_SYNCNT).
const SYN_RETRIES: i32 = 6;
const MAX_SYNCNT: i32 = 127;
/// Half of SOCK_MIN_RCVBUF: the smallest window clamp.
const MIN_CLAMP: i32 = 1152;
/// TCP_CA_NAME_MAX.
const CA_NAME_MAX: usize = 16;
/// The congestion controls the sandbox offers; the first is the default.
const CONGESTION: [&str; 2] = ["cubic", "reno"];
/// The initial and largest retransmission timeouts (TCP_TIMEOUT_INIT,
/// TCP_RTO_MAX), in seconds: TCP_DEFER_ACCEPT counts retransmissions.
const RTO_INIT: i32 = 1;
const RTO_MAX: i32 = 120;
/// sizeof(struct tcp_info) as Linux 6.x fills it.
const TCP_INFO_SIZE: usize = 248;

fn tcp(s: &InetSocket) -> Option<&husk_netstack::TcpEndpoint> {
    match &s.endpoint {
        Endpoint::Tcp(t) => Some(t),
        Endpoint::Udp(_) => None,
    }
}

/// Linux's TCP state number of `s` (TCP_ESTABLISHED for a connection the
/// egress gateway carries).
fn state(s: &InetSocket) -> u8 {
    match (s.stream_outside(), tcp(s)) {
        (Some(_), _) => 1,
        (None, Some(t)) => t.linux_state(),
        (None, None) => 7,
    }
}

const TIME_WAIT: u8 = 6;
const CLOSE: u8 = 7;
const CLOSE_WAIT: u8 = 8;
const LISTEN: u8 = 10;

/// secs_to_retrans: the retransmissions that cover `secs` seconds.
fn secs_to_retrans(secs: i32) -> i32 {
    if secs <= 0 {
        return 0;
    }
    let (mut res, mut timeout, mut period) = (1, RTO_INIT, RTO_INIT);
    while secs > period && res < 255 {
        res += 1;
        timeout = (timeout << 1).min(RTO_MAX);
        period += timeout;
    }
    res
}

/// retrans_to_secs: the seconds `retrans` retransmissions take.
fn retrans_to_secs(retrans: i32) -> i32 {
    if retrans <= 0 {
        return 0;
    }
    let (mut timeout, mut period) = (RTO_INIT, RTO_INIT);
    for _ in 1..retrans {
        timeout = (timeout << 1).min(RTO_MAX);
        period += timeout;
    }
    period
}

/// The stored int of option `name`, or `default`.
fn stored_int(s: &InetSocket, name: i32, default: i32) -> i32 {
    s.stored
        .lock()
        .get(&(IPPROTO_TCP, name))
        .and_then(|v| v.get(..4))
        .map_or(default, |v| i32::from_le_bytes([v[0], v[1], v[2], v[3]]))
}

fn store_int(s: &InetSocket, name: i32, v: i32) {
    s.stored.lock().insert((IPPROTO_TCP, name), v.to_le_bytes().to_vec());
}

/// The control messages a recvmsg that took `got` bytes from the
/// sandbox's own connection delivers, as Linux's tcp_recvmsg: the
/// receive timestamp (SO_TIMESTAMP*, taken as the bytes are read) when it
/// read any, then with TCP_INQ set TCP_CM_INQ: the bytes left to read, or
/// 1 when none are but the peer finished (tcp_inq_hint).
pub(super) fn control(s: &InetSocket, got: usize) -> Vec<(i32, i32, Vec<u8>)> {
    let Some(t) = tcp(s).filter(|_| s.outside().is_none()) else { return Vec::new() };
    let mut out = Vec::new();
    if got > 0 {
        out.extend(super::sockopt_ip::timestamp(s, std::time::SystemTime::now()));
    }
    if stored_int(s, TCP_INQ, 0) != 0 {
        let left = t.queued().0;
        let done = matches!(state(s), TIME_WAIT | CLOSE | CLOSE_WAIT);
        let inq = if left == 0 && done { 1 } else { i32::try_from(left).unwrap_or(i32::MAX) };
        out.push((IPPROTO_TCP, TCP_INQ, inq.to_le_bytes().to_vec()));
    }
    out
}

/// setsockopt(2) at IPPROTO_TCP on a TCP socket.
pub(super) fn set(task: &Task, s: &InetSocket, name: i32, optval: u64, optlen: u64) -> Result<(), Errno> {
    let mm = task.thread.mm();
    let optlen = i64::from(args::int(optlen));
    if name == TCP_CONGESTION {
        if optlen < 1 {
            return Err(Errno::EINVAL);
        }
        let n = usize::try_from(optlen).unwrap_or(0).min(CA_NAME_MAX - 1);
        let mut raw = vec![0u8; n];
        mm.copy_in(optval, &mut raw)?;
        let end = raw.iter().position(|&b| b == 0).unwrap_or(n);
        let name_given = &raw[..end];
        let known = CONGESTION.iter().find(|c| c.as_bytes() == name_given).ok_or(Errno::ENOENT)?;
        s.stored.lock().insert((IPPROTO_TCP, TCP_CONGESTION), known.as_bytes().to_vec());
        return Ok(());
    }
    if optlen < 4 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 4];
    mm.copy_in(optval, &mut raw)?;
    let val = i32::from_le_bytes(raw);
    let stored = match name {
        TCP_NODELAY | TCP_CORK | TCP_THIN_LINEAR_TIMEOUTS | TCP_THIN_DUPACK => i32::from(val != 0),
        // Quick-ack mode on an odd value; an even one enters ping-pong mode.
        TCP_QUICKACK => val & 1,
        TCP_KEEPIDLE | TCP_KEEPINTVL | TCP_KEEPCNT if !crate::fs::egress::valid_option((IPPROTO_TCP, name), val) => {
            return Err(Errno::EINVAL)
        }
        TCP_KEEPIDLE | TCP_KEEPINTVL | TCP_KEEPCNT => val,
        TCP_USER_TIMEOUT if val < 0 => return Err(Errno::EINVAL),
        TCP_USER_TIMEOUT => val,
        TCP_MAXSEG if val != 0 && !(MIN_MSS..=MAX_WINDOW).contains(&val) => return Err(Errno::EINVAL),
        TCP_MAXSEG => val,
        TCP_SYNCNT if !(1..=MAX_SYNCNT).contains(&val) => return Err(Errno::EINVAL),
        TCP_SYNCNT => val,
        // Kept as Linux keeps it: -1 (no FIN_WAIT2), 0 (the sysctl) or
        // seconds up to the ceiling.
        TCP_LINGER2 => val.clamp(-1, FIN_TIMEOUT_MAX),
        TCP_DEFER_ACCEPT => secs_to_retrans(val),
        TCP_WINDOW_CLAMP if val == 0 && state(s) != CLOSE => return Err(Errno::EINVAL),
        TCP_WINDOW_CLAMP if val == 0 => 0,
        TCP_WINDOW_CLAMP => val.max(MIN_CLAMP),
        TCP_NOTSENT_LOWAT => val,
        TCP_INQ if !(0..=1).contains(&val) => return Err(Errno::EINVAL),
        TCP_INQ => val,
        _ => return Err(Errno::ENOPROTOOPT),
    };
    if let Some(conn) =
        s.stream_outside().filter(|_| crate::fs::egress::FORWARDED_OPTIONS.contains(&(IPPROTO_TCP, name)))
    {
        conn.set_option(IPPROTO_TCP, name, val)?;
    }
    match (name, tcp(s)) {
        (TCP_CORK, Some(t)) => t.set_cork(stored != 0),
        // Setting TCP_NODELAY sends what is held back, even corked.
        (TCP_NODELAY, Some(t)) if stored != 0 => t.push(),
        _ => {}
    }
    if let (TCP_DEFER_ACCEPT, Some(t)) = (name, tcp(s)) {
        t.set_defer_accept(u32::try_from(retrans_to_secs(stored)).unwrap_or(0));
    }
    store_int(s, name, stored);
    if let (TCP_LINGER2, Some(t)) = (name, tcp(s)) {
        // How long the closed connection holds its port waiting for the
        // peer's FIN: -1 not at all, 0 the sysctl's time.
        let secs = u64::try_from(stored.max(0)).unwrap_or(0);
        t.set_fin_timeout((stored != 0).then(|| std::time::Duration::from_secs(secs)));
    }
    Ok(())
}

/// getsockopt(2) at IPPROTO_TCP on a TCP socket: the value's bytes
/// (write_sockopt cuts them to the caller's length).
pub(super) fn get(s: &InetSocket, name: i32) -> Result<Vec<u8>, Errno> {
    let int = |v: i32| Ok(v.to_le_bytes().to_vec());
    match name {
        TCP_NODELAY
        | TCP_CORK
        | TCP_THIN_LINEAR_TIMEOUTS
        | TCP_THIN_DUPACK
        | TCP_USER_TIMEOUT
        | TCP_NOTSENT_LOWAT
        | TCP_INQ
        | TCP_WINDOW_CLAMP => int(stored_int(s, name, 0)),
        TCP_QUICKACK => int(stored_int(s, name, 1)),
        TCP_KEEPIDLE => int(stored_int(s, name, 7200)),
        TCP_KEEPINTVL => int(stored_int(s, name, 75)),
        TCP_KEEPCNT => int(stored_int(s, name, 9)),
        TCP_SYNCNT => int(stored_int(s, name, SYN_RETRIES)),
        TCP_LINGER2 => int(match stored_int(s, name, 0) {
            0 => FIN_TIMEOUT,
            v => v,
        }),
        TCP_DEFER_ACCEPT => int(retrans_to_secs(stored_int(s, name, 0))),
        TCP_MAXSEG => {
            let user = stored_int(s, name, 0);
            int(match state(s) {
                CLOSE | LISTEN if user != 0 => user,
                CLOSE | LISTEN => MSS_DEFAULT,
                _ if user != 0 => user.min(loopback_mss()),
                _ => loopback_mss(),
            })
        }
        TCP_CONGESTION => {
            let mut name = s
                .stored
                .lock()
                .get(&(IPPROTO_TCP, TCP_CONGESTION))
                .cloned()
                .unwrap_or_else(|| CONGESTION[0].as_bytes().to_vec());
            name.resize(CA_NAME_MAX, 0);
            Ok(name)
        }
        TCP_INFO => Ok(info(s)),
        _ => Err(Errno::ENOPROTOOPT),
    }
}

/// struct tcp_info: the state, the segment sizes and the loopback path's
/// constants; the counters of a real segment path (retransmits, RTT
/// samples) are those of a path that never loses or delays.
fn info(s: &InetSocket) -> Vec<u8> {
    let st = state(s);
    let connected = !matches!(st, CLOSE | LISTEN);
    let mss = if connected { loopback_mss().unsigned_abs() } else { MSS_DEFAULT as u32 };
    let unacked = match tcp(s) {
        Some(t) if connected => u32::try_from(t.queued().1).unwrap_or(u32::MAX),
        _ => 0,
    };
    let mut e = Encoder::new();
    // tcpi_state, ca_state, retransmits, probes, backoff, options,
    // snd/rcv_wscale, delivery_rate_app_limited and fastopen bits.
    e.u8(st).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0);
    // rto (µs), ato, snd_mss, rcv_mss.
    e.u32(if connected { 201_000 } else { 1_000_000 }).u32(0).u32(mss).u32(mss);
    // unacked, sacked, lost, retrans, fackets.
    e.u32(unacked).u32(0).u32(0).u32(0).u32(0);
    // last_data_sent, last_ack_sent, last_data_recv, last_ack_recv.
    e.u32(0).u32(0).u32(0).u32(0);
    // pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss,
    // reordering.
    e.u32(if connected { 65_535 } else { 0 }).u32(65_483).u32(0).u32(0).u32(i32::MAX as u32).u32(10).u32(mss).u32(3);
    let mut v = e.as_bytes().to_vec();
    v.resize(TCP_INFO_SIZE, 0);
    v
}
