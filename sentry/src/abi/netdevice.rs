//! The network-device ioctls (`<linux/sockios.h>`) and `struct ifreq`, as
//! any socket answers them.

pub const SIOCGIFNAME: u64 = 0x8910;
pub const SIOCGIFCONF: u64 = 0x8912;
pub const SIOCGIFFLAGS: u64 = 0x8913;
pub const SIOCGIFADDR: u64 = 0x8915;
pub const SIOCGIFNETMASK: u64 = 0x891b;
pub const SIOCGIFMTU: u64 = 0x8921;
pub const SIOCGIFHWADDR: u64 = 0x8927;
pub const SIOCGIFINDEX: u64 = 0x8933;
pub const SIOCGIFTXQLEN: u64 = 0x8942;

/// `struct ifreq`: an interface name of IFNAMSIZ bytes, then a union (an
/// address, flags, an index, the MTU …).
pub struct IfReq;

impl IfReq {
    /// sizeof(struct ifreq).
    pub const SIZE: usize = 40;
    /// Where the union starts, after the name.
    pub const UNION_OFFSET: usize = IFNAMSIZ;
}

/// The longest interface name, its NUL included.
pub const IFNAMSIZ: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_linux() {
        let requests = [
            (SIOCGIFNAME, libc::SIOCGIFNAME),
            (SIOCGIFCONF, libc::SIOCGIFCONF),
            (SIOCGIFFLAGS, libc::SIOCGIFFLAGS),
            (SIOCGIFADDR, libc::SIOCGIFADDR),
            (SIOCGIFNETMASK, libc::SIOCGIFNETMASK),
            (SIOCGIFMTU, libc::SIOCGIFMTU),
            (SIOCGIFHWADDR, libc::SIOCGIFHWADDR),
            (SIOCGIFINDEX, libc::SIOCGIFINDEX),
            (SIOCGIFTXQLEN, libc::SIOCGIFTXQLEN),
        ];
        for (ours, linux) in requests {
            assert_eq!(ours, linux);
        }
    }

    #[test]
    fn layout_matches_linux() {
        assert_eq!(std::mem::size_of::<libc::ifreq>(), IfReq::SIZE);
        assert_eq!(std::mem::offset_of!(libc::ifreq, ifr_ifru), IfReq::UNION_OFFSET);
        assert_eq!(libc::IFNAMSIZ, IFNAMSIZ);
    }
}
