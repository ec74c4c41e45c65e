//! `struct termios` and `struct winsize` in the kernel's layout, with the
//! flag and control-character values of Linux's x86-64 ABI.

/// `struct termios` (TCGETS): four flag words, the line discipline and
/// 19 control characters.
pub(crate) const TERMIOS_SIZE: usize = 36;
/// `struct termios2` (TCGETS2): termios and the two speeds.
pub(crate) const TERMIOS2_SIZE: usize = 44;
/// `struct winsize`.
pub(crate) const WINSIZE_SIZE: usize = 8;
const NCCS: usize = 19;

// Control characters (indices into c_cc).
pub(crate) const VINTR: usize = 0;
pub(crate) const VQUIT: usize = 1;
pub(crate) const VERASE: usize = 2;
pub(crate) const VKILL: usize = 3;
pub(crate) const VEOF: usize = 4;
pub(crate) const VTIME: usize = 5;
pub(crate) const VMIN: usize = 6;
pub(crate) const VSTART: usize = 8;
pub(crate) const VSTOP: usize = 9;
pub(crate) const VSUSP: usize = 10;
pub(crate) const VEOL: usize = 11;
pub(crate) const VREPRINT: usize = 12;
pub(crate) const VWERASE: usize = 14;
pub(crate) const VLNEXT: usize = 15;
pub(crate) const VEOL2: usize = 16;

// Input flags.
pub(crate) const ISTRIP: u32 = 0o40;
pub(crate) const INLCR: u32 = 0o100;
pub(crate) const IGNCR: u32 = 0o200;
pub(crate) const ICRNL: u32 = 0o400;
pub(crate) const IXON: u32 = 0o2000;
pub(crate) const IXANY: u32 = 0o4000;
pub(crate) const IUTF8: u32 = 0o40000;

// Output flags.
pub(crate) const OPOST: u32 = 0o1;
pub(crate) const ONLCR: u32 = 0o4;
pub(crate) const OCRNL: u32 = 0o10;
pub(crate) const ONOCR: u32 = 0o20;
pub(crate) const ONLRET: u32 = 0o40;
pub(crate) const TABDLY: u32 = 0o14000;
pub(crate) const XTABS: u32 = 0o14000;

// Control flags.
const B38400: u32 = 0o17;
const CS8: u32 = 0o60;
const CREAD: u32 = 0o200;

// Local flags.
pub(crate) const ISIG: u32 = 0o1;
pub(crate) const ICANON: u32 = 0o2;
pub(crate) const ECHO: u32 = 0o10;
pub(crate) const ECHOE: u32 = 0o20;
pub(crate) const ECHOK: u32 = 0o40;
pub(crate) const ECHONL: u32 = 0o100;
pub(crate) const NOFLSH: u32 = 0o200;
pub(crate) const TOSTOP: u32 = 0o400;
pub(crate) const ECHOCTL: u32 = 0o1000;
pub(crate) const ECHOKE: u32 = 0o4000;
pub(crate) const IEXTEN: u32 = 0o100000;

/// A terminal's modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Termios {
    pub iflag: u32,
    pub oflag: u32,
    pub cflag: u32,
    pub lflag: u32,
    pub line: u8,
    pub cc: [u8; NCCS],
    /// Input and output speeds (termios2; the classic struct encodes them
    /// in `cflag`).
    pub ispeed: u32,
    pub ospeed: u32,
}

impl Default for Termios {
    /// What a new pseudo-terminal starts with in Linux (the pty driver's
    /// init_termios): cooked mode, echo, signals, ^C ^\ DEL ^U ^D …
    fn default() -> Termios {
        let mut cc = [0u8; NCCS];
        for (i, c) in [
            (VINTR, 0x03),
            (VQUIT, 0x1c),
            (VERASE, 0x7f),
            (VKILL, 0x15),
            (VEOF, 0x04),
            (VMIN, 1),
            (VSTART, 0x11),
            (VSTOP, 0x13),
            (VSUSP, 0x1a),
            (VREPRINT, 0x12),
            (13, 0x0f),
            (VWERASE, 0x17),
            (VLNEXT, 0x16),
        ] {
            cc[i] = c;
        }
        Termios {
            iflag: ICRNL | IXON,
            oflag: OPOST | ONLCR,
            cflag: B38400 | CS8 | CREAD,
            lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | ECHOKE | IEXTEN,
            line: 0,
            cc,
            ispeed: 38400,
            ospeed: 38400,
        }
    }
}

fn word(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

impl Termios {
    /// Decodes a `struct termios` (36 bytes) or `struct termios2` (44).
    /// The classic struct keeps the speeds this terminal had.
    pub(crate) fn decode(b: &[u8], speeds_from: &Termios) -> Termios {
        let mut cc = [0u8; NCCS];
        cc.copy_from_slice(&b[17..17 + NCCS]);
        let (ispeed, ospeed) = if b.len() >= TERMIOS2_SIZE {
            (word(b, 36), word(b, 40))
        } else {
            (speeds_from.ispeed, speeds_from.ospeed)
        };
        Termios {
            iflag: word(b, 0),
            oflag: word(b, 4),
            cflag: word(b, 8),
            lflag: word(b, 12),
            line: b[16],
            cc,
            ispeed,
            ospeed,
        }
    }

    /// The termios2 encoding; its first 36 bytes are the classic struct.
    pub(crate) fn encode(&self) -> [u8; TERMIOS2_SIZE] {
        let mut b = [0u8; TERMIOS2_SIZE];
        for (i, w) in [self.iflag, self.oflag, self.cflag, self.lflag].into_iter().enumerate() {
            b[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        b[16] = self.line;
        b[17..17 + NCCS].copy_from_slice(&self.cc);
        b[36..40].copy_from_slice(&self.ispeed.to_le_bytes());
        b[40..44].copy_from_slice(&self.ospeed.to_le_bytes());
        b
    }

    pub(crate) fn iflag(&self, f: u32) -> bool {
        self.iflag & f != 0
    }

    pub(crate) fn oflag(&self, f: u32) -> bool {
        self.oflag & f != 0
    }

    pub(crate) fn lflag(&self, f: u32) -> bool {
        self.lflag & f != 0
    }

    /// Whether `c` is control character `which` (a zero entry is
    /// disabled, as Linux's _POSIX_VDISABLE).
    pub(crate) fn is(&self, which: usize, c: u8) -> bool {
        self.cc[which] != 0 && self.cc[which] == c
    }
}

/// A terminal's window size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Winsize {
    pub rows: u16,
    pub cols: u16,
    pub xpixel: u16,
    pub ypixel: u16,
}

impl Winsize {
    pub(crate) fn decode(b: &[u8; WINSIZE_SIZE]) -> Winsize {
        let h = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Winsize { rows: h(0), cols: h(2), xpixel: h(4), ypixel: h(6) }
    }

    pub(crate) fn encode(&self) -> [u8; WINSIZE_SIZE] {
        let mut b = [0u8; WINSIZE_SIZE];
        for (i, v) in [self.rows, self.cols, self.xpixel, self.ypixel].into_iter().enumerate() {
            b[i * 2..i * 2 + 2].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_the_kernels() {
        let t = Termios::default();
        let b = t.encode();
        assert_eq!(word(&b, 0), 0o2400, "ICRNL|IXON");
        assert_eq!(word(&b, 4), 0o5, "OPOST|ONLCR");
        assert_eq!(word(&b, 12), 0o105073, "ISIG|ICANON|ECHO|ECHOE|ECHOK|ECHOCTL|ECHOKE|IEXTEN");
        assert_eq!(&b[17..24], &[3, 0x1c, 0x7f, 0x15, 4, 0, 1]);
        assert_eq!(Termios::decode(&b, &t), t);
        assert_eq!(Termios::decode(&b[..TERMIOS_SIZE], &t), t);
    }

    #[test]
    fn a_disabled_character_matches_nothing() {
        let t = Termios::default();
        assert!(t.is(VINTR, 3));
        assert!(!t.is(VEOL, 0), "VEOL is 0: disabled, NUL is no end of line");
    }

    #[test]
    fn winsize_round_trips() {
        let w = Winsize { rows: 24, cols: 80, xpixel: 1, ypixel: 2 };
        assert_eq!(Winsize::decode(&w.encode()), w);
        assert_eq!(w.encode()[..4], [24, 0, 80, 0]);
    }
}
