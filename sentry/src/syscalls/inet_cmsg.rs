//! The control messages of a sendmsg(2) on a UDP socket that set one
//! datagram's IP header: IP_TTL and IP_TOS (checked as Linux's
//! ip_cmsg_send), IPV6_HOPLIMIT and IPV6_TCLASS (as ip6_datagram_send_ctl).
//! An IPv6 socket sending to a v4-mapped address takes the IPv4 ones, as
//! Linux hands such a send to udp_sendmsg. Other messages are not served
//! and are passed over.

use crate::abi::socket::{MsgHdr, IPPROTO_IP, IPPROTO_IPV6, IPV6_HOPLIMIT, IPV6_TCLASS, IP_TOS, IP_TTL};
use crate::abi::Errno;
use crate::kernel::Task;
use husk_netstack::udp::HeaderOverride;

/// The header fields the control messages of `h` set for a datagram that
/// leaves as IPv6 (`v6`) or IPv4; EINVAL for a malformed message or a
/// value out of range, as Linux.
pub(super) fn header_override(task: &Task, h: &MsgHdr, v6: bool) -> Result<HeaderOverride, Errno> {
    let mut over = HeaderOverride::default();
    super::cmsg::each(task, h, |level, ty, data| apply(&mut over, v6, level, ty, data))?;
    Ok(over)
}

/// Takes one message (`data` its payload) into `over`.
fn apply(over: &mut HeaderOverride, v6: bool, level: i32, ty: i32, data: &[u8]) -> Result<(), Errno> {
    let int = || -> Result<i32, Errno> {
        let b: [u8; 4] = data.try_into().map_err(|_| Errno::EINVAL)?;
        Ok(i32::from_le_bytes(b))
    };
    let byte = |v: i32| u8::try_from(v).map_err(|_| Errno::EINVAL);
    match (v6, level, ty) {
        (false, IPPROTO_IP, IP_TTL) => {
            let v = int()?;
            if v == 0 {
                return Err(Errno::EINVAL);
            }
            over.ttl = Some(byte(v)?);
        }
        (false, IPPROTO_IP, IP_TOS) => {
            let v = match data {
                [b] => i32::from(*b),
                _ => int()?,
            };
            over.tos = Some(byte(v)?);
        }
        // -1: the socket's hop limit.
        (true, IPPROTO_IPV6, IPV6_HOPLIMIT) => match int()? {
            -1 => over.ttl = None,
            v => over.ttl = Some(byte(v)?),
        },
        // -1 is kept as it is: its low byte goes out, as on Linux.
        (true, IPPROTO_IPV6, IPV6_TCLASS) => match int()? {
            -1 => over.tos = Some(0xff),
            v => over.tos = Some(byte(v)?),
        },
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(v6: bool, level: i32, ty: i32, data: &[u8]) -> Result<HeaderOverride, Errno> {
        let mut over = HeaderOverride::default();
        apply(&mut over, v6, level, ty, data).map(|()| over)
    }

    #[test]
    fn values_are_checked_as_linux_does() {
        let int = |v: i32| v.to_le_bytes();
        assert_eq!(one(false, IPPROTO_IP, IP_TTL, &int(2)).map(|o| o.ttl), Ok(Some(2)));
        for bad in [0, 256, -1] {
            assert_eq!(one(false, IPPROTO_IP, IP_TTL, &int(bad)), Err(Errno::EINVAL), "{bad}");
        }
        assert_eq!(one(false, IPPROTO_IP, IP_TTL, &[2]), Err(Errno::EINVAL), "an int only");
        assert_eq!(one(false, IPPROTO_IP, IP_TOS, &[0x20]).map(|o| o.tos), Ok(Some(0x20)), "a byte too");
        assert_eq!(one(false, IPPROTO_IP, IP_TOS, &int(256)), Err(Errno::EINVAL));
        assert_eq!(one(true, IPPROTO_IPV6, IPV6_HOPLIMIT, &int(0)).map(|o| o.ttl), Ok(Some(0)));
        assert_eq!(one(true, IPPROTO_IPV6, IPV6_HOPLIMIT, &int(-1)), Ok(HeaderOverride::default()));
        assert_eq!(one(true, IPPROTO_IPV6, IPV6_HOPLIMIT, &int(-2)), Err(Errno::EINVAL));
        assert_eq!(one(true, IPPROTO_IPV6, IPV6_TCLASS, &int(-1)).map(|o| o.tos), Ok(Some(0xff)));
        let mut odd = int(4).to_vec();
        odd.push(0);
        assert_eq!(one(true, IPPROTO_IPV6, IPV6_TCLASS, &odd), Err(Errno::EINVAL), "an int and a byte");
        assert_eq!(one(true, IPPROTO_IP, IP_TTL, &int(0)), Ok(HeaderOverride::default()), "not for IPv6");
        assert_eq!(one(false, IPPROTO_IPV6, IPV6_HOPLIMIT, &int(-5)), Ok(HeaderOverride::default()), "not for IPv4");
    }
}
