//! A container's console: the host pseudo-terminal the runtime hands over
//! (whose master the shim or conmon holds) bridged to a terminal of the
//! sentry. The host side is put in raw mode and carries bytes only; line
//! editing, echo, the signal characters and job control happen in the
//! sentry's line discipline, for the guest's own sessions and process
//! groups. Two threads move the bytes; a third concern, the window size,
//! follows the host terminal's: the shim resizes it there, the host
//! kernel sends the sentry (which leads the host terminal's session)
//! SIGWINCH, and the host-signal thread has every console re-read its
//! size ([`Consoles::host_resized`]), which a change of signals to the
//! foreground group.

use crate::abi::Errno;
use crate::audit::redact::{RedactStream, IDLE_FLUSH};
use crate::fs::devpts::Devpts;
use crate::fs::tty::terminal::{Terminal, TtyFile};
use crate::fs::tty::termios::{Winsize, WINSIZE_SIZE};
use crate::kernel::Kernel;
use crate::vfs::{FileOps, WRITE_EVENTS};
use crate::waiter::{Entry, Registered, Waiter};
use parking_lot::Mutex;
use std::borrow::Cow;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The sandbox's bridged consoles, for the host-signal thread to tell of
/// a resized host terminal (a kernel extension).
#[derive(Default)]
pub(crate) struct Consoles(Mutex<Vec<Weak<Console>>>);

impl Consoles {
    /// The host terminal may have changed size (host SIGWINCH): every
    /// console passes a new size on to its terminal.
    pub(crate) fn host_resized(&self) {
        let live: Vec<Arc<Console>> = {
            let mut v = self.0.lock();
            v.retain(|c| c.strong_count() > 0);
            v.iter().filter_map(Weak::upgrade).collect()
        };
        for c in live {
            c.resized();
        }
    }
}

/// One bridged console.
pub(crate) struct Console {
    host: OwnedFd,
    master: Arc<TtyFile>,
    /// The host's size last passed on: only a change of it is, so a
    /// guest's own TIOCSWINSZ (stty cols) stands.
    host_size: Mutex<Option<Winsize>>,
    /// Held while output moves to the host, so a final flush keeps order;
    /// with secrets, the redaction of that output.
    writing: Mutex<Option<RedactStream>>,
}

impl Console {
    /// Bridges host terminal `host` to a new sentry terminal; returns the
    /// console and the terminal's replica, for the process's stdio.
    pub(crate) fn start(kernel: &Kernel, host: OwnedFd) -> std::io::Result<(Arc<Console>, Arc<TtyFile>)> {
        make_raw(&host)?;
        let master = kernel.ext::<Devpts>().new_terminal(0, crate::fs::tmpfs::now());
        let term = master.term.clone();
        term.set_locked(false);
        let replica = term.open_replica(libc::O_RDWR | libc::O_NOCTTY).map_err(io_error)?;
        let writing = Mutex::new(crate::audit::redact::stream());
        let console = Arc::new(Console { host, master, host_size: Mutex::new(None), writing });
        // Registered before the first size is read, so that no resize
        // falls between the two.
        kernel.ext::<Consoles>().0.lock().push(Arc::downgrade(&console));
        console.resized();
        let c = console.clone();
        std::thread::Builder::new().name("console-in".into()).spawn(move || c.pump_input())?;
        let c = console.clone();
        std::thread::Builder::new().name("console-out".into()).spawn(move || c.pump_output())?;
        Ok((console, replica))
    }

    pub(crate) fn terminal(&self) -> &Arc<Terminal> {
        &self.master.term
    }

    /// Passes the host terminal's size on to the sentry's terminal if it
    /// changed since last passed on.
    fn resized(&self) {
        let mut last = self.host_size.lock();
        let now = host_winsize(&self.host);
        if now != *last {
            *last = now;
            if let Some(w) = now {
                self.master.term.set_winsize(w);
            }
        }
    }

    /// Host keystrokes to the terminal. Ends when the host terminal goes
    /// away (its master closed): the sentry terminal is then hung up, as
    /// Linux does with a vanished terminal.
    fn pump_input(&self) {
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: read writes at most buf.len() bytes into `buf`.
            let r = unsafe { libc::read(self.host.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(len) = usize::try_from(r) else {
                match Errno::last_os_error() {
                    Errno::EINTR => continue,
                    // A non-blocking host terminal: wait until it has input.
                    Errno::EAGAIN => {
                        let mut p = libc::pollfd { fd: self.host.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                        // SAFETY: one valid pollfd; no timeout.
                        unsafe { libc::poll(&mut p, 1, -1) };
                        continue;
                    }
                    _ => break,
                }
            };
            if len == 0 || self.type_in(&buf[..len]).is_err() {
                break;
            }
        }
        log::debug!("console {}: the host terminal closed", self.master.term.name());
        self.master.term.hang_up();
    }

    /// Types `data` into the terminal, waiting for room in its line
    /// discipline as a blocking write does; fails when the terminal takes
    /// no more.
    fn type_in(&self, mut data: &[u8]) -> Result<(), Errno> {
        let w = Waiter::new();
        let register = |e: &Entry| self.master.event_register(e);
        let _r = Registered::new(Entry::new(WRITE_EVENTS, w.clone()), register, |e| self.master.event_unregister(e));
        while !data.is_empty() {
            match self.master.write(data, 0) {
                Ok(n) => data = &data[n..],
                Err(Errno::EAGAIN) => w.wait(None)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
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
    pub(crate) fn flush(&self) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::memory_file::MemoryFile;
    use std::os::fd::FromRawFd;

    /// A host pseudo-terminal pair: (master, replica).
    fn host_pty() -> (OwnedFd, OwnedFd) {
        let (mut m, mut r) = (-1, -1);
        // SAFETY: openpty writes two descriptors; the other arguments may
        // be null.
        let rc = unsafe { libc::openpty(&mut m, &mut r, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: just opened and owned by nobody else.
        let master = unsafe { OwnedFd::from_raw_fd(m) };
        // SAFETY: as above.
        let replica = unsafe { OwnedFd::from_raw_fd(r) };
        (master, replica)
    }

    fn set_host_size(master: &OwnedFd, rows: u16, cols: u16) {
        let w = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        // SAFETY: TIOCSWINSZ reads one struct winsize.
        assert_eq!(unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &w) }, 0);
    }

    #[test]
    fn a_host_resize_reaches_the_terminal_when_announced_and_a_guest_size_stands_until_then() {
        let k = crate::testing::kernel(Arc::new(MemoryFile::new(1 << 24).unwrap()));
        let (master, replica) = host_pty();
        set_host_size(&master, 24, 80);
        let (console, _tty) = Console::start(&k, replica).unwrap();
        let size = |c: &Console| {
            let w = c.terminal().winsize();
            (w.rows, w.cols)
        };
        assert_eq!(size(&console), (24, 80), "the host's size at start");
        console.terminal().set_winsize(Winsize { rows: 10, cols: 20, xpixel: 0, ypixel: 0 });
        k.ext::<Consoles>().host_resized();
        assert_eq!(size(&console), (10, 20), "the host did not change: the guest's size stands");
        set_host_size(&master, 50, 132);
        assert_eq!(size(&console), (10, 20), "nothing is polled");
        k.ext::<Consoles>().host_resized();
        assert_eq!(size(&console), (50, 132), "the announced resize is passed on");
        drop(master);
    }
}
