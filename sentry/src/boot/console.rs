//! A container's console: the host pseudo-terminal the runtime hands over
//! (whose master the shim or conmon holds) bridged to a terminal of the
//! sentry. The host side is put in raw mode and carries bytes only; line
//! editing, echo, the signal characters and job control happen in the
//! sentry's line discipline, for the guest's own sessions and process
//! groups. Two threads move the bytes; a third concern, the window size,
//! is polled from the host terminal (the shim resizes it there) and
//! signalled to the foreground group when it changes.

use crate::abi::Errno;
use crate::audit::redact::{RedactStream, IDLE_FLUSH};
use crate::fs::devpts::Devpts;
use crate::fs::tty::terminal::{Terminal, TtyFile};
use crate::fs::tty::termios::{Winsize, WINSIZE_SIZE};
use crate::kernel::Kernel;
use crate::vfs::FileOps;
use parking_lot::Mutex;
use std::borrow::Cow;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

/// How often the host terminal's window size is compared.
const RESIZE_POLL_MS: i32 = 250;

/// One bridged console.
pub struct Console {
    host: OwnedFd,
    master: Arc<TtyFile>,
    /// Held while output moves to the host, so a final flush keeps order;
    /// with secrets, the redaction of that output.
    writing: Mutex<Option<RedactStream>>,
}

impl Console {
    /// Bridges host terminal `host` to a new sentry terminal; returns the
    /// console and the terminal's replica, for the process's stdio.
    pub fn start(kernel: &Kernel, host: OwnedFd) -> std::io::Result<(Arc<Console>, Arc<TtyFile>)> {
        make_raw(&host)?;
        let master = kernel.ext::<Devpts>().new_terminal(0, libc::O_RDWR, crate::fs::tmpfs::now());
        let term = master.term.clone();
        term.set_locked(false);
        let replica = term.open_replica(libc::O_RDWR | libc::O_NOCTTY).map_err(io_error)?;
        if let Some(w) = host_winsize(&host) {
            term.set_winsize(w);
        }
        let console = Arc::new(Console { host, master, writing: Mutex::new(crate::audit::redact::stream()) });
        let c = console.clone();
        std::thread::Builder::new().name("console-in".into()).spawn(move || c.pump_input())?;
        let c = console.clone();
        std::thread::Builder::new().name("console-out".into()).spawn(move || c.pump_output())?;
        Ok((console, replica))
    }

    pub fn terminal(&self) -> &Arc<Terminal> {
        &self.master.term
    }

    /// Host keystrokes to the terminal, and window size changes. Ends
    /// when the host terminal goes away (its master closed): the sentry
    /// terminal is then hung up, as Linux does with a vanished terminal.
    fn pump_input(&self) {
        let mut buf = [0u8; 4096];
        // The host's size last passed on: only a change of it is, so a
        // guest's own TIOCSWINSZ (stty cols) stands.
        let mut host_size = host_winsize(&self.host);
        loop {
            let mut p = libc::pollfd { fd: self.host.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, RESIZE_POLL_MS) };
            let now = host_winsize(&self.host);
            if now != host_size {
                host_size = now;
                if let Some(w) = now {
                    self.master.term.set_winsize(w);
                }
            }
            if n <= 0 {
                continue;
            }
            // SAFETY: read writes at most buf.len() bytes into `buf`.
            let r = unsafe { libc::read(self.host.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(len) = usize::try_from(r) else {
                if Errno::last_os_error() == Errno::EINTR {
                    continue;
                }
                break;
            };
            if len == 0 || self.master.write(&buf[..len], 0).is_err() {
                break;
            }
        }
        log::debug!("console {}: the host terminal closed", self.master.term.name());
        self.master.term.hang_up();
    }

    /// Terminal output to the host, until the host terminal goes away.
    /// Bytes the redactor holds back go out after an idle spell.
    fn pump_output(&self) {
        loop {
            let holding = self.writing.lock().as_ref().is_some_and(RedactStream::holding);
            let deadline = holding.then(|| Instant::now() + IDLE_FLUSH);
            match self.master.term.wait_output_until(deadline) {
                Some(true) => self.pump(),
                Some(false) => return,
                None => self.release_held(),
            }
        }
    }

    /// Moves the output waiting in the terminal to the host, redacted.
    fn pump(&self) {
        let mut w = self.writing.lock();
        let mut buf = [0u8; 4096];
        while let Ok(n) = self.master.term.read_output(&mut buf) {
            let out = match w.as_mut() {
                Some(r) => Cow::Owned(r.feed(&buf[..n])),
                None => Cow::Borrowed(&buf[..n]),
            };
            if n == 0 || write_all(&self.host, &out).is_err() {
                return;
            }
        }
    }

    /// Sends what the redactor held back.
    fn release_held(&self) {
        let mut w = self.writing.lock();
        if let Some(r) = w.as_mut() {
            let _ = write_all(&self.host, &r.flush());
        }
    }

    /// Moves all output not yet on the host there (also called when the
    /// console's process ended, so nothing it wrote is lost).
    pub fn flush(&self) {
        self.pump();
        self.release_held();
    }
}

fn io_error(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.0)
}

fn write_all(fd: &OwnedFd, mut data: &[u8]) -> Result<(), Errno> {
    while !data.is_empty() {
        // SAFETY: write reads at most data.len() bytes from `data`.
        let r = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        match usize::try_from(r) {
            Ok(n) => data = &data[n..],
            Err(_) if Errno::last_os_error() == Errno::EINTR => {}
            Err(_) => return Err(Errno::last_os_error()),
        }
    }
    Ok(())
}

/// Raw mode on the host side: no editing, echo or signals there.
fn make_raw(fd: &OwnedFd) -> std::io::Result<()> {
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let mut t = tcgetattr(fd).map_err(std::io::Error::from)?;
    cfmakeraw(&mut t);
    tcsetattr(fd, SetArg::TCSANOW, &t).map_err(std::io::Error::from)
}

fn host_winsize(fd: &OwnedFd) -> Option<Winsize> {
    let mut b = [0u8; WINSIZE_SIZE];
    // SAFETY: TIOCGWINSZ writes one struct winsize, which `b` holds.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, b.as_mut_ptr()) };
    (r == 0).then(|| Winsize::decode(&b))
}
