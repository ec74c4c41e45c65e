//! ioctl request numbers (Linux's x86-64 `include/uapi/asm-generic/ioctls.h`),
//! as the raw `u64` of the request argument.

// Terminals: termios and window size.
pub(crate) const TCGETS: u64 = 0x5401;
pub(crate) const TCSETS: u64 = 0x5402;
pub(crate) const TCSETSW: u64 = 0x5403;
pub(crate) const TCSETSF: u64 = 0x5404;
pub(crate) const TCSBRK: u64 = 0x5409;
pub(crate) const TCXONC: u64 = 0x540a;
pub(crate) const TCFLSH: u64 = 0x540b;
pub(crate) const TIOCEXCL: u64 = 0x540c;
pub(crate) const TIOCNXCL: u64 = 0x540d;
pub(crate) const TIOCSCTTY: u64 = 0x540e;
pub(crate) const TIOCGPGRP: u64 = 0x540f;
pub(crate) const TIOCSPGRP: u64 = 0x5410;
/// Bytes written but not yet read: a terminal's output queue, a socket's
/// unacknowledged bytes (`SIOCOUTQ` is the same number).
pub(crate) const TIOCOUTQ: u64 = 0x5411;
pub(crate) const SIOCOUTQ: u64 = TIOCOUTQ;
pub(crate) const TIOCSTI: u64 = 0x5412;
pub(crate) const TIOCGWINSZ: u64 = 0x5413;
pub(crate) const TIOCSWINSZ: u64 = 0x5414;
/// Bytes ready to read (`SIOCINQ` is the same number).
pub(crate) const FIONREAD: u64 = 0x541b;
/// Whether a TCP socket's next byte is the urgent mark (sockatmark(3));
/// asm-generic/sockios.h's value, which the libc crate lacks.
pub(crate) const SIOCATMARK: u64 = 0x8905;
pub(crate) const FIONBIO: u64 = 0x5421;
pub(crate) const TIOCNOTTY: u64 = 0x5422;
pub(crate) const TIOCSETD: u64 = 0x5423;
pub(crate) const TIOCGETD: u64 = 0x5424;
pub(crate) const TCSBRKP: u64 = 0x5425;
pub(crate) const TIOCSBRK: u64 = 0x5427;
pub(crate) const TIOCCBRK: u64 = 0x5428;
pub(crate) const TIOCGSID: u64 = 0x5429;
pub(crate) const TCGETS2: u64 = 0x802c_542a;
pub(crate) const TCSETS2: u64 = 0x402c_542b;
pub(crate) const TCSETSW2: u64 = 0x402c_542c;
pub(crate) const TCSETSF2: u64 = 0x402c_542d;
pub(crate) const TIOCGPTN: u64 = 0x8004_5430;
pub(crate) const TIOCSPTLCK: u64 = 0x4004_5431;
pub(crate) const TIOCGPTLCK: u64 = 0x8004_5439;
pub(crate) const TIOCGEXCL: u64 = 0x8004_5440;
pub(crate) const TIOCGPTPEER: u64 = 0x5441;
pub(crate) const FIONCLEX: u64 = 0x5450;
pub(crate) const FIOCLEX: u64 = 0x5451;
pub(crate) const FIOASYNC: u64 = 0x5452;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_linux() {
        let requests = [
            (TCGETS, libc::TCGETS),
            (TCSETS, libc::TCSETS),
            (TCSETSW, libc::TCSETSW),
            (TCSETSF, libc::TCSETSF),
            (TCSBRK, libc::TCSBRK),
            (TCFLSH, libc::TCFLSH),
            (TIOCSCTTY, libc::TIOCSCTTY),
            (TIOCGPGRP, libc::TIOCGPGRP),
            (TIOCSPGRP, libc::TIOCSPGRP),
            (TIOCOUTQ, libc::TIOCOUTQ),
            (TIOCGWINSZ, libc::TIOCGWINSZ),
            (TIOCSWINSZ, libc::TIOCSWINSZ),
            (FIONREAD, libc::FIONREAD),
            (FIONBIO, libc::FIONBIO),
            (TIOCNOTTY, libc::TIOCNOTTY),
            (TIOCGSID, libc::TIOCGSID),
            (TCGETS2, libc::TCGETS2),
            (TCSETS2, libc::TCSETS2),
            (TIOCGPTN, libc::TIOCGPTN),
            (TIOCSPTLCK, libc::TIOCSPTLCK),
            (FIONCLEX, libc::FIONCLEX),
            (FIOCLEX, libc::FIOCLEX),
            (FIOASYNC, libc::FIOASYNC),
        ];
        for (ours, linux) in requests {
            assert_eq!(ours, linux);
        }
    }
}
