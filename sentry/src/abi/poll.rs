//! `poll` and `epoll` event bits and `epoll_ctl` operations (Linux's
//! `include/uapi/asm-generic/poll.h`, `eventpoll.h`). The epoll bits below
//! 0x100 are the poll bits. With `struct pollfd` and `struct
//! epoll_event`.

use super::layout::{Decoder, Encoder, Layout};

pub(crate) const POLLIN: u32 = 0x1;
pub(crate) const POLLPRI: u32 = 0x2;
pub(crate) const POLLOUT: u32 = 0x4;
pub(crate) const POLLERR: u32 = 0x8;
pub(crate) const POLLHUP: u32 = 0x10;
pub(crate) const POLLNVAL: u32 = 0x20;
pub(crate) const POLLRDNORM: u32 = 0x40;
pub(crate) const POLLRDBAND: u32 = 0x80;
pub(crate) const POLLWRNORM: u32 = 0x100;
pub(crate) const POLLWRBAND: u32 = 0x200;
pub(crate) const POLLMSG: u32 = 0x400;
pub(crate) const POLLRDHUP: u32 = 0x2000;

pub(crate) const EPOLLERR: u32 = POLLERR;
pub(crate) const EPOLLHUP: u32 = POLLHUP;
pub(crate) const EPOLLONESHOT: u32 = 1 << 30;
pub(crate) const EPOLLET: u32 = 1 << 31;

pub(crate) const EPOLL_CTL_ADD: i32 = libc::EPOLL_CTL_ADD;
pub(crate) const EPOLL_CTL_DEL: i32 = libc::EPOLL_CTL_DEL;
pub(crate) const EPOLL_CTL_MOD: i32 = libc::EPOLL_CTL_MOD;

/// A `struct pollfd`: the descriptor, the events asked for and those
/// that happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PollFd {
    pub fd: i32,
    pub events: u16,
    pub revents: u16,
}

impl Layout for PollFd {
    const SIZE: usize = 8;

    fn encode_to(&self, e: &mut Encoder) {
        e.i32(self.fd).u16(self.events).u16(self.revents);
    }

    fn decode_from(d: &mut Decoder) -> PollFd {
        PollFd { fd: d.i32(), events: d.u16(), revents: d.u16() }
    }
}

/// A `struct epoll_event` (packed on x86-64: 12 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EpollEvent {
    pub events: u32,
    pub data: u64,
}

impl Layout for EpollEvent {
    const SIZE: usize = 12;

    fn encode_to(&self, e: &mut Encoder) {
        e.u32(self.events).u64(self.data);
    }

    fn decode_from(d: &mut Decoder) -> EpollEvent {
        EpollEvent { events: d.u32(), data: d.u64() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_match_linux() {
        use std::mem::{offset_of, size_of};
        assert_eq!(PollFd::SIZE, size_of::<libc::pollfd>());
        assert_eq!(EpollEvent::SIZE, size_of::<libc::epoll_event>());
        assert_eq!(offset_of!(libc::epoll_event, u64), 4);
        assert_eq!(offset_of!(libc::pollfd, revents), 6);
        let p = PollFd { fd: -1, events: 1, revents: 4 };
        assert_eq!(PollFd::decode(&p.encode()), p);
        let e = EpollEvent { events: EPOLLET | POLLIN, data: 0x1122_3344_5566_7788 };
        assert_eq!(e.encode()[4..], 0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(EpollEvent::decode(&e.encode()), e);
    }

    #[test]
    fn match_linux() {
        let bits = [
            (POLLIN, libc::POLLIN),
            (POLLPRI, libc::POLLPRI),
            (POLLOUT, libc::POLLOUT),
            (POLLERR, libc::POLLERR),
            (POLLHUP, libc::POLLHUP),
            (POLLNVAL, libc::POLLNVAL),
            (POLLRDNORM, libc::POLLRDNORM),
            (POLLWRNORM, libc::POLLWRNORM),
            (POLLRDBAND, libc::POLLRDBAND),
            (POLLWRBAND, libc::POLLWRBAND),
        ];
        for (ours, linux) in bits {
            assert_eq!(Ok(ours), u32::try_from(linux));
        }
        assert_eq!(Ok(POLLMSG), u32::try_from(libc::EPOLLMSG));
        assert_eq!(Ok(EPOLLONESHOT), u32::try_from(libc::EPOLLONESHOT));
        assert_eq!(EPOLLET, u32::from_ne_bytes(libc::EPOLLET.to_ne_bytes()));
    }
}
