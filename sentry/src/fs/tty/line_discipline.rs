//! The line discipline between a terminal's keyboard side and its reader,
//! as Linux's n_tty: canonical line editing (erase, word erase, kill,
//! end of file, literal next, reprint), echo, the signal characters,
//! carriage-return translation, XON/XOFF output stop, and output
//! post-processing (newline to CR-LF, tab expansion). It is pure state:
//! the terminal around it blocks readers and writers and sends signals.

use super::termios::*;
use std::collections::VecDeque;

/// The input buffer's size (N_TTY_BUF_SIZE): a canonical line holds one
/// byte less, the rest of a longer line is dropped; raw input beyond it
/// waits in the writer.
pub(crate) const INPUT_CAPACITY: usize = 4096;

/// What receiving input did besides queueing it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Bytes to show on the terminal (echo), already post-processed.
    pub echo: Vec<u8>,
    /// Signals for the foreground process group, in order.
    pub signals: Vec<i32>,
    /// Output not yet read was discarded (a signal character without
    /// NOFLSH).
    pub flush_output: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Erase {
    Char,
    Word,
    Line,
}

/// One terminal's line discipline.
pub(crate) struct LineDiscipline {
    termios: Termios,
    /// Canonical mode: finished lines, each with its terminator (a line
    /// ended by EOF has none; an empty one reads as end of file).
    lines: VecDeque<Vec<u8>>,
    /// The bytes in `lines`.
    line_bytes: usize,
    /// Canonical mode: the line being edited.
    edit: Vec<u8>,
    /// The output column where the edited line began (to erase tabs).
    edit_column: usize,
    /// Non-canonical input.
    raw: VecDeque<u8>,
    /// The previous character was VLNEXT: take this one literally.
    literal_next: bool,
    /// The output column, for tabs and ONOCR.
    column: usize,
    /// Output stopped by VSTOP (XOFF).
    stopped: bool,
}

impl Default for LineDiscipline {
    fn default() -> Self {
        LineDiscipline::new(Termios::default())
    }
}

fn is_control(c: u8) -> bool {
    c < 0x20 || c == 0x7f
}

fn is_utf8_continuation(c: u8) -> bool {
    c & 0xc0 == 0x80
}

impl LineDiscipline {
    pub(crate) fn new(termios: Termios) -> LineDiscipline {
        LineDiscipline {
            termios,
            lines: VecDeque::new(),
            line_bytes: 0,
            edit: Vec::new(),
            edit_column: 0,
            raw: VecDeque::new(),
            literal_next: false,
            column: 0,
            stopped: false,
        }
    }

    pub(crate) fn termios(&self) -> &Termios {
        &self.termios
    }

    /// New modes. Switching canonical mode off makes everything typed so
    /// far readable; switching it on makes unread input the start of the
    /// edited line.
    pub(crate) fn set_termios(&mut self, t: Termios) {
        let was_canonical = self.termios.lflag(ICANON);
        if was_canonical && !t.lflag(ICANON) {
            for line in self.lines.drain(..) {
                self.raw.extend(line);
            }
            self.line_bytes = 0;
            self.raw.extend(self.edit.drain(..));
        } else if !was_canonical && t.lflag(ICANON) {
            self.edit_column = self.column;
            self.edit.extend(self.raw.drain(..));
        }
        if !t.iflag(IXON) {
            self.stopped = false;
        }
        self.termios = t;
    }

    /// Whether output is stopped (XOFF).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    pub(crate) fn set_stopped(&mut self, stopped: bool) {
        self.stopped = stopped;
    }

    /// Discards input not yet read.
    pub(crate) fn flush_input(&mut self) {
        self.lines.clear();
        self.line_bytes = 0;
        self.edit.clear();
        self.raw.clear();
        self.literal_next = false;
    }

    /// Whether a read would return now: a finished line (canonical) or
    /// any byte.
    pub(crate) fn has_input(&self) -> bool {
        if self.termios.lflag(ICANON) {
            !self.lines.is_empty()
        } else {
            !self.raw.is_empty()
        }
    }

    /// Bytes a reader can take (FIONREAD).
    pub(crate) fn readable(&self) -> usize {
        if self.termios.lflag(ICANON) {
            self.line_bytes
        } else {
            self.raw.len()
        }
    }

    /// Whether more input fits now; a writer waits until it does. Each
    /// finished line also counts one byte, so lines of nothing but an end
    /// of file fill the buffer too.
    pub(crate) fn has_room(&self) -> bool {
        if self.termios.lflag(ICANON) {
            self.line_bytes + self.lines.len() < INPUT_CAPACITY
        } else {
            self.raw.len() < INPUT_CAPACITY
        }
    }

    /// Reads input: one line at most in canonical mode (0 at an end of
    /// file), what there is otherwise.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        if !self.termios.lflag(ICANON) {
            let n = buf.len().min(self.raw.len());
            for (dst, src) in buf.iter_mut().zip(self.raw.drain(..n)) {
                *dst = src;
            }
            return n;
        }
        let Some(line) = self.lines.front_mut() else { return 0 };
        let n = buf.len().min(line.len());
        buf[..n].copy_from_slice(&line[..n]);
        line.drain(..n);
        if line.is_empty() {
            self.lines.pop_front();
        }
        self.line_bytes -= n;
        n
    }

    /// Receives typed input; returns how much was taken (less than all
    /// when the buffer is full: the writer waits for a reader).
    pub(crate) fn receive(&mut self, input: &[u8], fx: &mut Effects) -> usize {
        for (i, &byte) in input.iter().enumerate() {
            if !self.has_room() {
                return i;
            }
            self.receive_byte(byte, fx);
        }
        input.len()
    }

    fn receive_byte(&mut self, byte: u8, fx: &mut Effects) {
        let t = self.termios;
        let mut c = if t.iflag(ISTRIP) { byte & 0x7f } else { byte };
        if std::mem::take(&mut self.literal_next) {
            if t.lflag(ECHO) {
                self.echo(c, fx);
            }
            self.queue(c);
            return;
        }
        if t.iflag(IXON) {
            if t.is(VSTOP, c) {
                self.stopped = true;
                return;
            }
            if t.is(VSTART, c) {
                self.stopped = false;
                return;
            }
            if t.iflag(IXANY) {
                self.stopped = false;
            }
        }
        if t.lflag(ISIG) {
            let sig = [(VINTR, libc::SIGINT), (VQUIT, libc::SIGQUIT), (VSUSP, libc::SIGTSTP)]
                .into_iter()
                .find(|&(which, _)| t.is(which, c))
                .map(|(_, sig)| sig);
            if let Some(sig) = sig {
                if !t.lflag(NOFLSH) {
                    self.flush_input();
                    fx.flush_output = true;
                }
                if t.iflag(IXON) {
                    self.stopped = false;
                }
                if t.lflag(ECHO) {
                    self.echo(c, fx);
                }
                fx.signals.push(sig);
                return;
            }
        }
        if c == b'\r' {
            if t.iflag(IGNCR) {
                return;
            }
            if t.iflag(ICRNL) {
                c = b'\n';
            }
        } else if c == b'\n' && t.iflag(INLCR) {
            c = b'\r';
        }
        if t.lflag(ICANON) {
            self.receive_canonical(c, fx);
        } else {
            if t.lflag(ECHO) {
                self.echo(c, fx);
            }
            self.raw.push_back(c);
        }
    }

    fn receive_canonical(&mut self, c: u8, fx: &mut Effects) {
        let t = self.termios;
        let ext = t.lflag(IEXTEN);
        if t.is(VERASE, c) {
            return self.erase(Erase::Char, fx);
        }
        if t.is(VKILL, c) {
            return self.erase(Erase::Line, fx);
        }
        if ext && t.is(VWERASE, c) {
            return self.erase(Erase::Word, fx);
        }
        if ext && t.is(VLNEXT, c) {
            self.literal_next = true;
            if t.lflag(ECHO) && t.lflag(ECHOCTL) {
                self.output(b"^\x08", &mut fx.echo);
            }
            return;
        }
        if ext && t.lflag(ECHO) && t.is(VREPRINT, c) {
            self.echo(c, fx);
            self.output(b"\n", &mut fx.echo);
            let line = self.edit.clone();
            self.edit_column = self.column;
            for b in line {
                self.echo(b, fx);
            }
            return;
        }
        if c == b'\n' || t.is(VEOL, c) || (ext && t.is(VEOL2, c)) {
            if t.lflag(ECHO) || (c == b'\n' && t.lflag(ECHONL)) {
                self.echo(c, fx);
            }
            self.edit.push(c);
            self.finish_line();
            return;
        }
        if t.is(VEOF, c) {
            self.finish_line();
            return;
        }
        self.queue_with_echo(c, fx);
    }

    fn queue_with_echo(&mut self, c: u8, fx: &mut Effects) {
        if self.termios.lflag(ICANON) && self.edit.len() >= INPUT_CAPACITY - 1 {
            return;
        }
        if self.termios.lflag(ECHO) {
            self.echo(c, fx);
        }
        self.queue(c);
    }

    /// Queues a character without looking at it (after VLNEXT).
    fn queue(&mut self, c: u8) {
        if !self.termios.lflag(ICANON) {
            self.raw.push_back(c);
        } else if self.edit.len() < INPUT_CAPACITY - 1 {
            if self.edit.is_empty() {
                self.edit_column = self.column;
            }
            self.edit.push(c);
        }
    }

    fn finish_line(&mut self) {
        let line = std::mem::take(&mut self.edit);
        self.line_bytes += line.len();
        self.lines.push_back(line);
    }

    /// How wide the first `len` bytes of the edited line are on screen.
    fn edit_width(&self, len: usize) -> usize {
        let ctl = self.termios.lflag(ECHOCTL);
        self.edit[..len].iter().fold(self.edit_column, |col, &c| match c {
            b'\t' => col + 8 - col % 8,
            c if is_control(c) => col + if ctl { 2 } else { 0 },
            c if is_utf8_continuation(c) && self.termios.iflag(IUTF8) => col,
            _ => col + 1,
        })
    }

    fn erase(&mut self, kind: Erase, fx: &mut Effects) {
        let t = self.termios;
        if self.edit.is_empty() {
            return;
        }
        if kind == Erase::Line && t.lflag(ECHO) && !(t.lflag(ECHOK) && t.lflag(ECHOE) && t.lflag(ECHOKE)) {
            self.echo(t.cc[VKILL], fx);
            if t.lflag(ECHOK) {
                self.output(b"\n", &mut fx.echo);
            }
            self.edit.clear();
            return;
        }
        let mut seen_word = false;
        while let Some(&c) = self.edit.last() {
            if kind == Erase::Word {
                if c.is_ascii_alphanumeric() || c == b'_' {
                    seen_word = true;
                } else if seen_word {
                    break;
                }
            }
            let before = self.edit_width(self.edit.len());
            let mut len = self.edit.len() - 1;
            if t.iflag(IUTF8) {
                while len > 0 && is_utf8_continuation(self.edit[len]) {
                    len -= 1;
                }
            }
            let after = self.edit_width(len);
            self.edit.truncate(len);
            if t.lflag(ECHO) {
                if !t.lflag(ECHOE) {
                    self.echo(t.cc[VERASE], fx);
                } else {
                    let seq: &[u8] = if c == b'\t' { b"\x08" } else { b"\x08 \x08" };
                    for _ in 0..before - after {
                        fx.echo.extend_from_slice(seq);
                    }
                    self.column = self.column.saturating_sub(before - after);
                }
            }
            if kind == Erase::Char {
                break;
            }
        }
    }

    /// Echoes a typed character: control characters as ^X with ECHOCTL.
    fn echo(&mut self, c: u8, fx: &mut Effects) {
        let ctl = is_control(c) && c != b'\t' && c != b'\n';
        if ctl && self.termios.lflag(ECHOCTL) {
            self.output(&[b'^', c ^ 0x40], &mut fx.echo);
        } else {
            self.output(&[c], &mut fx.echo);
        }
    }

    /// Post-processes output (OPOST) into `out`.
    pub(crate) fn output(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let t = self.termios;
        if !t.oflag(OPOST) {
            out.extend_from_slice(data);
            return;
        }
        for &c in data {
            match c {
                b'\n' => {
                    if t.oflag(ONLRET) {
                        self.column = 0;
                    }
                    if t.oflag(ONLCR) {
                        out.extend_from_slice(b"\r\n");
                        self.column = 0;
                    } else {
                        out.push(b'\n');
                    }
                }
                b'\r' => {
                    if t.oflag(ONOCR) && self.column == 0 {
                        continue;
                    }
                    if t.oflag(OCRNL) {
                        out.push(b'\n');
                        if t.oflag(ONLRET) {
                            self.column = 0;
                        }
                    } else {
                        out.push(b'\r');
                        self.column = 0;
                    }
                }
                b'\t' => {
                    let spaces = 8 - self.column % 8;
                    if t.oflag & TABDLY == XTABS {
                        out.extend(std::iter::repeat_n(b' ', spaces));
                    } else {
                        out.push(b'\t');
                    }
                    self.column += spaces;
                }
                b'\x08' => {
                    self.column = self.column.saturating_sub(1);
                    out.push(c);
                }
                c => {
                    if !(is_control(c) || (t.iflag(IUTF8) && is_utf8_continuation(c))) {
                        self.column += 1;
                    }
                    out.push(c);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(ld: &mut LineDiscipline, input: &[u8]) -> Effects {
        let mut fx = Effects::default();
        assert_eq!(ld.receive(input, &mut fx), input.len());
        fx
    }

    fn read_all(ld: &mut LineDiscipline) -> Vec<u8> {
        let mut buf = [0u8; 256];
        let n = ld.read(&mut buf);
        buf[..n].to_vec()
    }

    #[test]
    fn a_line_is_readable_once_finished_and_echoed_with_crlf() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"abc");
        assert_eq!(fx.echo, b"abc");
        assert!(!ld.has_input());
        let fx = typed(&mut ld, b"\r");
        assert_eq!(fx.echo, b"\r\n", "ICRNL makes it a newline, ONLCR echoes CR-LF");
        assert_eq!(read_all(&mut ld), b"abc\n");
    }

    #[test]
    fn reads_return_one_line_at_a_time_and_keep_the_rest() {
        let mut ld = LineDiscipline::default();
        typed(&mut ld, b"one\ntwo\n");
        let mut small = [0u8; 2];
        assert_eq!(ld.read(&mut small), 2);
        assert_eq!(&small, b"on");
        assert_eq!(read_all(&mut ld), b"e\n");
        assert_eq!(read_all(&mut ld), b"two\n");
    }

    #[test]
    fn erase_kill_and_word_erase_edit_the_line() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"ab\x7f");
        assert_eq!(fx.echo, b"ab\x08 \x08");
        typed(&mut ld, b"c foo bar\x17\n");
        assert_eq!(read_all(&mut ld), b"ac foo \n");
        let fx = typed(&mut ld, b"xyz\x15");
        assert_eq!(fx.echo, b"xyz\x08 \x08\x08 \x08\x08 \x08", "ECHOKE erases the line on screen");
        typed(&mut ld, b"k\n");
        assert_eq!(read_all(&mut ld), b"k\n");
    }

    #[test]
    fn erasing_a_control_character_erases_its_two_columns() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"\x01\x7f");
        assert_eq!(fx.echo, b"^A\x08 \x08\x08 \x08");
    }

    #[test]
    fn utf8_erase_takes_the_whole_character() {
        let mut ld = LineDiscipline::default();
        let mut t = *ld.termios();
        t.iflag |= IUTF8;
        ld.set_termios(t);
        let fx = typed(&mut ld, "é\x7f\n".as_bytes());
        assert_eq!(&fx.echo[2..], b"\x08 \x08\r\n");
        assert_eq!(read_all(&mut ld), b"\n");
    }

    #[test]
    fn eof_ends_a_line_without_a_terminator_and_alone_reads_zero() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"ab\x04\x04");
        assert_eq!(fx.echo, b"ab");
        assert_eq!(read_all(&mut ld), b"ab");
        assert!(ld.has_input());
        assert_eq!(read_all(&mut ld), b"", "end of file");
        assert!(!ld.has_input());
    }

    #[test]
    fn signal_characters_signal_and_flush() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"junk\x03");
        assert_eq!(fx.signals, vec![libc::SIGINT]);
        assert!(fx.flush_output);
        assert_eq!(fx.echo, b"junk^C");
        typed(&mut ld, b"\n");
        assert_eq!(read_all(&mut ld), b"\n", "the junk was flushed");
        assert_eq!(typed(&mut ld, b"\x1c\x1a").signals, vec![libc::SIGQUIT, libc::SIGTSTP]);
        let mut t = *ld.termios();
        t.lflag &= !ISIG;
        ld.set_termios(t);
        let fx = typed(&mut ld, b"\x03\n");
        assert!(fx.signals.is_empty());
        assert_eq!(read_all(&mut ld), b"\x03\n");
    }

    #[test]
    fn end_of_file_lines_fill_the_buffer_too() {
        let mut ld = LineDiscipline::default();
        let mut fx = Effects::default();
        let eofs = vec![4u8; INPUT_CAPACITY * 2];
        assert_eq!(ld.receive(&eofs, &mut fx), INPUT_CAPACITY, "each end of file counts");
        assert_eq!(ld.read(&mut [0u8; 8]), 0);
        assert!(ld.has_room());
    }

    #[test]
    fn literal_next_quotes_a_special_character() {
        let mut ld = LineDiscipline::default();
        let fx = typed(&mut ld, b"\x16\x03\x16\x7f\n");
        assert!(fx.signals.is_empty());
        assert_eq!(read_all(&mut ld), b"\x03\x7f\n");
    }

    #[test]
    fn raw_mode_passes_bytes_through_without_echo_processing() {
        let mut ld = LineDiscipline::default();
        let mut t = *ld.termios();
        t.lflag &= !(ICANON | ECHO);
        t.iflag &= !ICRNL;
        ld.set_termios(t);
        let fx = typed(&mut ld, b"a\x7f\r");
        assert!(fx.echo.is_empty());
        assert_eq!(ld.readable(), 3);
        assert_eq!(read_all(&mut ld), b"a\x7f\r");
    }

    #[test]
    fn leaving_canonical_mode_makes_the_edited_line_readable() {
        let mut ld = LineDiscipline::default();
        typed(&mut ld, b"done\npart");
        let mut t = *ld.termios();
        t.lflag &= !ICANON;
        ld.set_termios(t);
        assert_eq!(read_all(&mut ld), b"done\npart");
    }

    #[test]
    fn xoff_stops_output_and_xon_resumes_it() {
        let mut ld = LineDiscipline::default();
        typed(&mut ld, b"\x13");
        assert!(ld.stopped());
        typed(&mut ld, b"\x11");
        assert!(!ld.stopped());
        assert_eq!(ld.readable(), 0, "flow control characters are not input");
    }

    #[test]
    fn a_full_raw_buffer_makes_the_writer_wait_and_a_long_line_is_cut() {
        let mut ld = LineDiscipline::default();
        let mut fx = Effects::default();
        let long = vec![b'x'; INPUT_CAPACITY + 10];
        assert_eq!(ld.receive(&long, &mut fx), long.len(), "canonical mode drops, never blocks");
        typed(&mut ld, b"\n");
        assert_eq!(ld.readable(), INPUT_CAPACITY);
        let mut ld = LineDiscipline::default();
        let mut t = *ld.termios();
        t.lflag &= !(ICANON | ECHO);
        ld.set_termios(t);
        assert_eq!(ld.receive(&long, &mut fx), INPUT_CAPACITY);
        assert!(!ld.has_room());
    }

    #[test]
    fn output_processing() {
        let mut ld = LineDiscipline::default();
        let mut out = Vec::new();
        ld.output(b"a\nb", &mut out);
        assert_eq!(out, b"a\r\nb");
        let mut t = *ld.termios();
        t.oflag |= XTABS;
        ld.set_termios(t);
        out.clear();
        ld.output(b"\tx\r\t", &mut out);
        assert_eq!(out, b"       x\r        ", "tabs to the next multiple of 8 from column 1");
        t.oflag &= !OPOST;
        ld.set_termios(t);
        out.clear();
        ld.output(b"a\n", &mut out);
        assert_eq!(out, b"a\n");
    }
}
