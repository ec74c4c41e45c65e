//! SIOCGSTAMP and SIOCGSTAMPNS on an IP socket: when the last datagram
//! the guest received arrived, as a timeval or a timespec (Linux's
//! sock_gettstamp). The old and the new request numbers give the same
//! layout on x86-64. ENOENT before a datagram was received without a
//! timestamp message (`InetSocket::last_stamp`).

use super::inet::InetSocket;
use crate::abi::layout::Layout;
use crate::abi::time::{Timespec, Timeval};
use crate::abi::Errno;

/// SIOCGSTAMP_OLD and SIOCGSTAMPNS_OLD (asm-generic/sockios.h).
const SIOCGSTAMP_OLD: u64 = 0x8906;
const SIOCGSTAMPNS_OLD: u64 = 0x8907;
/// SIOCGSTAMP_NEW and SIOCGSTAMPNS_NEW: _IOR(0x89, 6 or 7, long long[2]).
const SIOCGSTAMP_NEW: u64 = 0x8010_8906;
const SIOCGSTAMPNS_NEW: u64 = 0x8010_8907;

/// The bytes a timestamp request `req` copies out for socket `s`; None
/// for any other request.
pub(crate) fn ioctl(s: &InetSocket, req: u64) -> Result<Option<Vec<u8>>, Errno> {
    let ns = match req {
        SIOCGSTAMP_OLD | SIOCGSTAMP_NEW => false,
        SIOCGSTAMPNS_OLD | SIOCGSTAMPNS_NEW => true,
        _ => return Ok(None),
    };
    let since = s.last_stamp()?;
    Ok(Some(if ns { Timespec::from_duration(since).encode() } else { Timeval::from_duration(since).encode() }))
}
