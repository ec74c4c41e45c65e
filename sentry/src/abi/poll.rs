//! `poll` and `epoll` event bits and `epoll_ctl` operations (Linux's
//! `include/uapi/asm-generic/poll.h`, `eventpoll.h`). The epoll bits below
//! 0x100 are the poll bits.

pub const POLLIN: u32 = 0x1;
pub const POLLPRI: u32 = 0x2;
pub const POLLOUT: u32 = 0x4;
pub const POLLERR: u32 = 0x8;
pub const POLLHUP: u32 = 0x10;
pub const POLLNVAL: u32 = 0x20;
pub const POLLRDNORM: u32 = 0x40;
pub const POLLWRNORM: u32 = 0x100;
pub const POLLRDHUP: u32 = 0x2000;

pub const EPOLLERR: u32 = POLLERR;
pub const EPOLLHUP: u32 = POLLHUP;
pub const EPOLLONESHOT: u32 = 1 << 30;
pub const EPOLLET: u32 = 1 << 31;

pub const EPOLL_CTL_ADD: i32 = libc::EPOLL_CTL_ADD;
pub const EPOLL_CTL_DEL: i32 = libc::EPOLL_CTL_DEL;
pub const EPOLL_CTL_MOD: i32 = libc::EPOLL_CTL_MOD;

#[cfg(test)]
mod tests {
    use super::*;

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
        ];
        for (ours, linux) in bits {
            assert_eq!(Ok(ours), u32::try_from(linux));
        }
        assert_eq!(Ok(EPOLLONESHOT), u32::try_from(libc::EPOLLONESHOT));
        assert_eq!(EPOLLET, u32::from_ne_bytes(libc::EPOLLET.to_ne_bytes()));
    }
}
