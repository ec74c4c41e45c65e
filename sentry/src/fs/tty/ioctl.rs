//! The terminal ioctls of the sentry's pseudo-terminals: modes (termios
//! and termios2), window size, queues and flow, the controlling terminal
//! and foreground group of job control, and the master's pty requests
//! (number, lock, peer). The caller's session, process group and
//! credentials come from the ioctl's context, not from the dispatch.

use super::terminal::TtyFile;
use super::termios::{Termios, Winsize, TERMIOS2_SIZE, TERMIOS_SIZE, WINSIZE_SIZE};
use crate::abi::ioctl::{
    FIONREAD, TCFLSH, TCGETS, TCGETS2, TCSBRK, TCSBRKP, TCSETS, TCSETS2, TCSETSF, TCSETSF2, TCSETSW, TCSETSW2, TCXONC,
    TIOCCBRK, TIOCEXCL, TIOCGETD, TIOCGEXCL, TIOCGPGRP, TIOCGPTLCK, TIOCGPTN, TIOCGPTPEER, TIOCGSID, TIOCGWINSZ,
    TIOCNOTTY, TIOCNXCL, TIOCOUTQ, TIOCSBRK, TIOCSCTTY, TIOCSETD, TIOCSPGRP, TIOCSPTLCK, TIOCSTI, TIOCSWINSZ,
};
use crate::abi::Errno;
use crate::auth::caps;
use crate::vfs::{FileDescription, IoctlContext};

type IoctlResult = Result<u64, Errno>;

fn put_i32(c: &dyn IoctlContext, addr: u64, v: i32) -> IoctlResult {
    c.mm().copy_out(addr, &v.to_le_bytes())?;
    Ok(0)
}

fn get_i32(c: &dyn IoctlContext, addr: u64) -> Result<i32, Errno> {
    let mut b = [0u8; 4];
    c.mm().copy_in(addr, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// An ioctl on an open end of a sentry terminal by caller `c`.
pub(super) fn ioctl(file: &TtyFile, c: &dyn IoctlContext, req: u64, arg: u64) -> IoctlResult {
    let term = &file.term;
    let tgid = c.tgid();
    let sid = c.sid();
    // Requests about the controlling terminal made on the replica need it
    // to be the caller's (the master may always ask).
    let ctty_only = || if file.master || term.session() == Some(sid) { Ok(()) } else { Err(Errno::ENOTTY) };
    match req {
        TCGETS | TCGETS2 => {
            let t = term.termios();
            let size = if req == TCGETS { TERMIOS_SIZE } else { TERMIOS2_SIZE };
            c.mm().copy_out(arg, &t.encode()[..size])?;
            Ok(0)
        }
        TCSETS | TCSETSW | TCSETSF | TCSETS2 | TCSETSW2 | TCSETSF2 => {
            let size = if matches!(req, TCSETS | TCSETSW | TCSETSF) { TERMIOS_SIZE } else { TERMIOS2_SIZE };
            let mut b = [0u8; TERMIOS2_SIZE];
            c.mm().copy_in(arg, &mut b[..size])?;
            file.check_change(c)?;
            let t = Termios::decode(&b[..size], &term.termios());
            term.set_termios(t, matches!(req, TCSETSF | TCSETSF2));
            Ok(0)
        }
        TIOCGWINSZ => {
            c.mm().copy_out(arg, &term.winsize().encode())?;
            Ok(0)
        }
        TIOCSWINSZ => {
            let mut b = [0u8; WINSIZE_SIZE];
            c.mm().copy_in(arg, &mut b)?;
            term.set_winsize(Winsize::decode(&b));
            Ok(0)
        }
        FIONREAD => {
            let (input, output) = term.queued();
            put_i32(c, arg, count(if file.master { output } else { input }))
        }
        TIOCOUTQ => {
            let (_, output) = term.queued();
            put_i32(c, arg, count(if file.master { 0 } else { output }))
        }
        TCFLSH => {
            let (input, output) = match arg {
                0 => (true, false),
                1 => (false, true),
                2 => (true, true),
                _ => return Err(Errno::EINVAL),
            };
            file.check_change(c)?;
            // The master's input is the replica's output.
            if file.master {
                term.flush(output, input);
            } else {
                term.flush(input, output);
            }
            Ok(0)
        }
        TCXONC => {
            file.check_change(c)?;
            term.flow(arg)?;
            Ok(0)
        }
        // A pseudo-terminal drains at once and has no line to break.
        TCSBRK | TCSBRKP => {
            file.check_change(c)?;
            Ok(0)
        }
        TIOCSBRK | TIOCCBRK => Ok(0),
        TIOCEXCL | TIOCNXCL => {
            term.set_exclusive(req == TIOCEXCL);
            Ok(0)
        }
        TIOCGEXCL => put_i32(c, arg, i32::from(term.exclusive())),
        TIOCGETD => put_i32(c, arg, 0),
        // Only N_TTY, the one line discipline there is.
        TIOCSETD => match get_i32(c, arg)? {
            0 => Ok(0),
            _ => Err(Errno::EINVAL),
        },
        TIOCSCTTY => set_controlling(c, file, arg),
        TIOCNOTTY => {
            if file.master || term.session() != Some(sid) {
                return Err(Errno::ENOTTY);
            }
            // A session leader gives the terminal up for its session. (A
            // member's own detachment is not modelled: the session keeps
            // its terminal.)
            term.release_controlling(sid, sid == tgid, false);
            Ok(0)
        }
        TIOCGPGRP => {
            ctty_only()?;
            put_i32(c, arg, term.foreground().unwrap_or(0))
        }
        TIOCSPGRP => {
            // Either side, but only the caller's controlling terminal; a
            // background caller is stopped first, and an orphaned one is
            // refused with ENOTTY (Linux's tiocspgrp).
            if term.session() != Some(sid) {
                return Err(Errno::ENOTTY);
            }
            file.check_change(c).map_err(|e| if e == Errno::EIO { Errno::ENOTTY } else { e })?;
            let pgid = get_i32(c, arg)?;
            if pgid < 0 {
                return Err(Errno::EINVAL);
            }
            term.set_foreground(c, pgid)?;
            Ok(0)
        }
        TIOCGSID => {
            ctty_only()?;
            put_i32(c, arg, term.session().ok_or(Errno::ENOTTY)?)
        }
        TIOCGPTN if file.master => put_i32(c, arg, i32::try_from(term.index).map_err(|_| Errno::EINVAL)?),
        TIOCSPTLCK if file.master => {
            term.set_locked(get_i32(c, arg)? != 0);
            Ok(0)
        }
        TIOCGPTLCK if file.master => put_i32(c, arg, i32::from(term.locked())),
        TIOCGPTPEER if file.master => open_peer(c, file, arg),
        // Faking input needs CAP_SYS_ADMIN, as in Linux without
        // legacy_tiocsti.
        TIOCSTI => {
            if !c.capable(caps::CAP_SYS_ADMIN) {
                return Err(Errno::EIO);
            }
            let mut typed = [0u8; 1];
            c.mm().copy_in(arg, &mut typed)?;
            term.simulate_input(typed[0]);
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// TIOCSCTTY: a session leader without a controlling terminal takes this
/// one; `steal` (arg 1) lets root take it from another session.
fn set_controlling(c: &dyn IoctlContext, file: &TtyFile, steal: u64) -> IoctlResult {
    let term = &file.term;
    if term.session() == Some(c.sid()) {
        return Ok(0);
    }
    if c.sid() != c.tgid() || c.session_has_terminal() {
        return Err(Errno::EPERM);
    }
    // A stolen terminal is quietly detached from its old session.
    term.set_controlling(c.sid(), c.pgid(), steal == 1 && c.capable(caps::CAP_SYS_ADMIN))?;
    Ok(0)
}

/// TIOCGPTPEER: opens the replica of this master, with `flags`.
fn open_peer(c: &dyn IoctlContext, file: &TtyFile, flags: u64) -> IoctlResult {
    let allowed = libc::O_ACCMODE | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let flags = i32::try_from(flags).ok().filter(|f| f & !allowed == 0).ok_or(Errno::EINVAL)?;
    let kernel = file.term.kernel().ok_or(Errno::EIO)?;
    let replica = file.term.open_replica_by(flags, Some(c))?;
    let d = crate::fs::devpts::replica_dentry(&kernel, &file.term);
    let status = u32::try_from(flags & !libc::O_CLOEXEC).map_err(|_| Errno::EINVAL)?;
    let fd = c.install(FileDescription::new(d, replica, status), flags & libc::O_CLOEXEC != 0)?;
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}
