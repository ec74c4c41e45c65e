//! The UDP-Lite checksum coverage options (UDPLITE_SEND_CSCOV,
//! UDPLITE_RECV_CSCOV) at SOL_UDPLITE or SOL_UDP, checked and read back
//! as Linux's udp_lib_setsockopt and udp_lib_getsockopt do: a UDP socket
//! reads them (0) but cannot set them. The coverage is kept, not applied:
//! datagrams inside the sandbox travel whole (their checksum never fails).

use super::socket::{read_optlen, write_sockopt};
use super::socket_ops::OptArg;
use crate::abi::socket::{IPPROTO_UDP, SOL_UDPLITE, UDPLITE_RECV_CSCOV, UDPLITE_SEND_CSCOV};
use crate::abi::{Errno, SysResult};
use crate::fs::inet::{Endpoint, InetSocket};
use crate::kernel::Task;
use husk_netstack::udp::Protocol;

/// Whether `opt` is one of these on socket `s` (a UDP or UDP-Lite one).
pub(super) fn handles(s: &InetSocket, opt: (i32, i32)) -> bool {
    matches!(s.endpoint, Endpoint::Udp(_))
        && matches!(opt, (SOL_UDPLITE | IPPROTO_UDP, UDPLITE_SEND_CSCOV | UDPLITE_RECV_CSCOV))
}

/// The coverage Linux keeps for `val`: below 8 (but 0, the whole
/// datagram) is 8, the header's; above 65535 is 65535.
fn coverage(val: i32) -> i32 {
    match val {
        0 => 0,
        v if v < 8 => 8,
        v => v.min(i32::from(u16::MAX)),
    }
}

pub(super) fn get(task: &Task, s: &InetSocket, arg: OptArg) -> SysResult {
    read_optlen(task, arg)?;
    let v = s.stored.lock().get(&(SOL_UDPLITE, arg.name)).cloned().unwrap_or_else(|| 0i32.to_le_bytes().to_vec());
    write_sockopt(task, arg, &v)
}

pub(super) fn set(task: &Task, s: &InetSocket, arg: OptArg) -> SysResult {
    if super::args::uint(arg.len) < 4 {
        return Err(Errno::EINVAL);
    }
    let mut raw = [0u8; 4];
    task.thread.mm().copy_in(arg.val, &mut raw)?;
    match &s.endpoint {
        Endpoint::Udp(u) if u.protocol() == Protocol::UdpLite => {
            let kept = coverage(i32::from_le_bytes(raw));
            s.stored.lock().insert((SOL_UDPLITE, arg.name), kept.to_le_bytes().to_vec());
            Ok(0)
        }
        _ => Err(Errno::ENOPROTOOPT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_is_raised_and_capped_as_linux() {
        let got: Vec<i32> = [0, 1, 7, 8, 20, -1, i32::MIN, 65535, 65536, i32::MAX].into_iter().map(coverage).collect();
        assert_eq!(got, [0, 8, 8, 8, 20, 8, 8, 65535, 65535, 65535]);
    }
}
