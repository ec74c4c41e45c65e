//! The terminal ioctls of the sentry's pseudo-terminals: modes (termios
//! and termios2), window size, queues and flow, the controlling terminal
//! and foreground group of job control, and the master's pty requests
//! (number, lock, peer).

use crate::abi::ioctl::{
    FIONREAD, TCFLSH, TCGETS, TCGETS2, TCSBRK, TCSBRKP, TCSETS, TCSETS2, TCSETSF, TCSETSF2, TCSETSW, TCSETSW2, TCXONC,
    TIOCCBRK, TIOCEXCL, TIOCGETD, TIOCGEXCL, TIOCGPGRP, TIOCGPTLCK, TIOCGPTN, TIOCGPTPEER, TIOCGSID, TIOCGWINSZ,
    TIOCNOTTY, TIOCNXCL, TIOCOUTQ, TIOCSBRK, TIOCSCTTY, TIOCSETD, TIOCSPGRP, TIOCSPTLCK, TIOCSTI, TIOCSWINSZ,
};
use crate::abi::{Errno, SysResult};
use crate::auth::caps;
use crate::fs::tty::terminal::TtyFile;
use crate::fs::tty::termios::{Termios, Winsize, TERMIOS2_SIZE, TERMIOS_SIZE, WINSIZE_SIZE};
use crate::kernel::Task;
use crate::vfs::FileDescription;
use std::sync::Arc;

fn put_i32(task: &Task, addr: u64, v: i32) -> SysResult {
    task.thread.mm().copy_out(addr, &v.to_le_bytes())?;
    Ok(0)
}

fn get_i32(task: &Task, addr: u64) -> Result<i32, Errno> {
    let mut b = [0u8; 4];
    task.thread.mm().copy_in(addr, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// An ioctl on an open end of a sentry terminal.
pub(super) fn ioctl(task: &mut Task, file: &Arc<TtyFile>, req: u64, arg: u64) -> SysResult {
    let term = &file.term;
    let tgid = task.thread.tgid;
    let sid = task.kernel.procs.sid(tgid).unwrap_or(0);
    // Requests about the controlling terminal made on the replica need it
    // to be the caller's (the master may always ask).
    let ctty_only = || if file.master || term.session() == Some(sid) { Ok(()) } else { Err(Errno::ENOTTY) };
    match req {
        TCGETS | TCGETS2 => {
            let t = term.termios();
            let size = if req == TCGETS { TERMIOS_SIZE } else { TERMIOS2_SIZE };
            task.thread.mm().copy_out(arg, &t.encode()[..size])?;
            Ok(0)
        }
        TCSETS | TCSETSW | TCSETSF | TCSETS2 | TCSETSW2 | TCSETSF2 => {
            let size = if matches!(req, TCSETS | TCSETSW | TCSETSF) { TERMIOS_SIZE } else { TERMIOS2_SIZE };
            let mut b = [0u8; TERMIOS2_SIZE];
            task.thread.mm().copy_in(arg, &mut b[..size])?;
            file.check_change()?;
            let t = Termios::decode(&b[..size], &term.termios());
            term.set_termios(t, matches!(req, TCSETSF | TCSETSF2));
            Ok(0)
        }
        TIOCGWINSZ => {
            task.thread.mm().copy_out(arg, &term.winsize().encode())?;
            Ok(0)
        }
        TIOCSWINSZ => {
            let mut b = [0u8; WINSIZE_SIZE];
            task.thread.mm().copy_in(arg, &mut b)?;
            term.set_winsize(Winsize::decode(&b));
            Ok(0)
        }
        FIONREAD => {
            let (input, output) = term.queued();
            put_i32(task, arg, count(if file.master { output } else { input }))
        }
        TIOCOUTQ => {
            let (_, output) = term.queued();
            put_i32(task, arg, count(if file.master { 0 } else { output }))
        }
        TCFLSH => {
            let (input, output) = match arg {
                0 => (true, false),
                1 => (false, true),
                2 => (true, true),
                _ => return Err(Errno::EINVAL),
            };
            file.check_change()?;
            // The master's input is the replica's output.
            if file.master {
                term.flush(output, input);
            } else {
                term.flush(input, output);
            }
            Ok(0)
        }
        TCXONC => {
            file.check_change()?;
            term.flow(arg)?;
            Ok(0)
        }
        // A pseudo-terminal drains at once and has no line to break.
        TCSBRK | TCSBRKP => {
            file.check_change()?;
            Ok(0)
        }
        TIOCSBRK | TIOCCBRK => Ok(0),
        TIOCEXCL | TIOCNXCL => {
            term.set_exclusive(req == TIOCEXCL);
            Ok(0)
        }
        TIOCGEXCL => put_i32(task, arg, i32::from(term.exclusive())),
        TIOCGETD => put_i32(task, arg, 0),
        // Only N_TTY, the one line discipline there is.
        TIOCSETD => match get_i32(task, arg)? {
            0 => Ok(0),
            _ => Err(Errno::EINVAL),
        },
        TIOCSCTTY => set_controlling(task, file, sid, arg),
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
            put_i32(task, arg, term.foreground().unwrap_or(0))
        }
        TIOCSPGRP => {
            // Either side, but only the caller's controlling terminal.
            if term.session() != Some(sid) {
                return Err(Errno::ENOTTY);
            }
            file.check_change()?;
            let pgid = get_i32(task, arg)?;
            if pgid < 0 {
                return Err(Errno::EINVAL);
            }
            term.set_foreground(pgid)?;
            Ok(0)
        }
        TIOCGSID => {
            ctty_only()?;
            put_i32(task, arg, term.session().ok_or(Errno::ENOTTY)?)
        }
        TIOCGPTN if file.master => put_i32(task, arg, i32::try_from(term.index).map_err(|_| Errno::EINVAL)?),
        TIOCSPTLCK if file.master => {
            term.set_locked(get_i32(task, arg)? != 0);
            Ok(0)
        }
        TIOCGPTLCK if file.master => put_i32(task, arg, i32::from(term.locked())),
        TIOCGPTPEER if file.master => open_peer(task, file, arg),
        // Faking input needs CAP_SYS_ADMIN, as in Linux without
        // legacy_tiocsti.
        TIOCSTI => {
            if !task.thread.creds().capable(caps::CAP_SYS_ADMIN) {
                return Err(Errno::EIO);
            }
            let mut c = [0u8; 1];
            task.thread.mm().copy_in(arg, &mut c)?;
            term.simulate_input(c[0]);
            Ok(0)
        }
        _ => Err(Errno::ENOTTY),
    }
}

/// TIOCSCTTY: a session leader without a controlling terminal takes this
/// one; `steal` (arg 1) lets root take it from another session.
fn set_controlling(task: &Task, file: &TtyFile, sid: i32, steal: u64) -> SysResult {
    let tgid = task.thread.tgid;
    let term = &file.term;
    if term.session() == Some(sid) {
        return Ok(0);
    }
    if sid != tgid || task.kernel.has_controlling_terminal(sid) {
        return Err(Errno::EPERM);
    }
    let root = task.thread.creds().capable(caps::CAP_SYS_ADMIN);
    let pgid = task.kernel.procs.pgid(tgid).unwrap_or(tgid);
    // A stolen terminal is quietly detached from its old session.
    term.set_controlling(sid, pgid, steal == 1 && root)?;
    Ok(0)
}

/// TIOCGPTPEER: opens the replica of this master, with `flags`.
fn open_peer(task: &Task, file: &TtyFile, flags: u64) -> SysResult {
    let allowed = libc::O_ACCMODE | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC;
    let flags = i32::try_from(flags).ok().filter(|f| f & !allowed == 0).ok_or(Errno::EINVAL)?;
    let replica = file.term.open_replica(flags)?;
    let d = crate::fs::devpts::replica_dentry(&task.kernel, &file.term);
    let status = u32::try_from(flags & !libc::O_CLOEXEC).map_err(|_| Errno::EINVAL)?;
    let f = FileDescription::new(d, replica, status);
    let fd = task.thread.fds().install(f, flags & libc::O_CLOEXEC != 0, 0, task.thread.nofile())?;
    u64::try_from(fd).map_err(|_| Errno::EBADF)
}
