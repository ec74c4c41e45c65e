//! A pseudo-terminal of the sentry: the master side (what a terminal
//! emulator, `script`, tmux or the container's console bridge holds) and
//! the replica, /dev/pts/N (what the shell reads and writes). Between
//! them, the line discipline; around them, the terminal's session and
//! foreground process group, which drive job control.

use super::line_discipline::{Effects, LineDiscipline};
use super::termios::{Termios, Winsize, ICANON, TOSTOP, VMIN, VTIME};
use crate::abi::poll::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::abi::Errno;
use crate::kernel::caller::Caller;
use crate::kernel::Kernel;
use crate::vfs::{FileOps, IoctlContext, ReadCall, Stat, TimeSpec};
use crate::waiter::{block_on, Entry, Queue, Waker, ALL};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Output the master has not read yet, at most (Linux's pty buffer).
const OUTPUT_CAPACITY: usize = 65536;
/// The major device number of /dev/pts/N.
pub(crate) const PTS_MAJOR: u32 = 136;
/// The group devpts gives terminals (`tty`, as Docker mounts it).
const TTY_GID: u32 = 5;

struct State {
    ld: LineDiscipline,
    /// Processed output for the master to read.
    output: VecDeque<u8>,
    winsize: Winsize,
    masters: usize,
    replicas: usize,
    /// A replica was ever opened: only then does the master see its
    /// closing (EIO, POLLHUP), as Linux's TTY_OTHER_CLOSED.
    replica_opened: bool,
    /// A new master's replica may not be opened until unlocked
    /// (unlockpt).
    locked: bool,
    /// TIOCEXCL: no further opens of the replica.
    exclusive: bool,
    /// The session this is the controlling terminal of.
    session: Option<i32>,
    /// The foreground process group.
    foreground: Option<i32>,
    /// Hung up: its master closed or its host terminal went away.
    hung_up: bool,
}

impl State {
    /// Whether the replica side is cut off from any master.
    fn gone(&self) -> bool {
        self.hung_up || self.masters == 0
    }

    /// Whether the master side is cut off from any replica.
    fn replica_closed(&self) -> bool {
        self.replica_opened && self.replicas == 0
    }
}

/// One pseudo-terminal pair.
pub(crate) struct Terminal {
    pub index: u32,
    state: Mutex<State>,
    cond: Condvar,
    /// Pollers (and O_ASYNC owners) of the master wait here.
    master_events: Queue,
    /// Pollers (and O_ASYNC owners) of the replicas wait here.
    replica_events: Queue,
    kernel: Weak<Kernel>,
    owner: u32,
    created: TimeSpec,
    /// The device of the devpts instance it belongs to (its st_dev).
    dev: u64,
}

impl Terminal {
    pub(crate) fn new(index: u32, kernel: Weak<Kernel>, owner: u32, created: TimeSpec, dev: u64) -> Arc<Terminal> {
        Arc::new(Terminal {
            index,
            state: Mutex::new(State {
                ld: LineDiscipline::default(),
                output: VecDeque::new(),
                winsize: Winsize::default(),
                masters: 0,
                replicas: 0,
                replica_opened: false,
                locked: true,
                exclusive: false,
                session: None,
                foreground: None,
                hung_up: false,
            }),
            cond: Condvar::new(),
            master_events: Queue::default(),
            replica_events: Queue::default(),
            kernel,
            owner,
            created,
            dev,
        })
    }

    /// The name of the replica, as ttyname finds it.
    pub(crate) fn name(&self) -> String {
        format!("/dev/pts/{}", self.index)
    }

    /// Whether a master is open: the pair exists (shows in /dev/pts).
    pub(crate) fn alive(&self) -> bool {
        self.state.lock().masters > 0
    }

    /// A change of state (an open, a close, a hang-up): both sides hear
    /// of it.
    fn changed(&self) {
        self.tell((ALL, ALL));
    }

    /// Wakes the calls blocked on the terminal and tells each side its
    /// news, (master, replica) events, 0 for none: data to read or room
    /// to write that the other side made, as Linux signals an O_ASYNC
    /// owner only of what the other side did.
    fn tell(&self, (master, replica): (u32, u32)) {
        self.cond.notify_all();
        if master != 0 {
            self.master_events.notify(master);
        }
        if replica != 0 {
            self.replica_events.notify(replica);
        }
    }

    fn waker(self: &Arc<Terminal>) -> Waker {
        let t = self.clone();
        Arc::new(move || {
            let _g = t.state.lock();
            t.cond.notify_all();
        })
    }

    /// The calling guest process, for a read, write or open (an ioctl is
    /// told its caller).
    fn caller(&self) -> Option<Caller> {
        Caller::current(&self.kernel)
    }

    /// The kernel, while it runs (for the replica's dentry).
    pub(crate) fn kernel(&self) -> Option<Arc<Kernel>> {
        self.kernel.upgrade()
    }

    /// Sends `sig` to every process of group `pgid` (SI_KERNEL, as the
    /// terminal driver's kill_pgrp).
    fn signal_group(&self, pgid: i32, sig: i32) {
        if let Some(k) = self.kernel.upgrade() {
            k.signal_processes(&k.procs().group_members(pgid), sig);
        }
    }

    /// Job control for a read or write of the calling process.
    fn check_background(&self, sig: i32) -> Result<(), Errno> {
        match self.caller() {
            Some(c) => self.job_control(&c, sig),
            None => Ok(()),
        }
    }

    /// Job control for caller `c` using its controlling terminal from a
    /// background group (Linux's tty_check_change and job_control): with
    /// SIGTTIN (reads) an ignored or blocked signal or an orphaned group
    /// means EIO; with SIGTTOU (writes with TOSTOP, mode changes) an
    /// ignored or blocked signal lets the call through. Otherwise the
    /// group is sent the signal and the call restarts after it.
    pub(crate) fn job_control(&self, c: &dyn IoctlContext, sig: i32) -> Result<(), Errno> {
        let (session, fg) = {
            let s = self.state.lock();
            (s.session, s.foreground)
        };
        let Some(fg) = fg else { return Ok(()) };
        if session != Some(c.sid()) || fg == c.pgid() {
            return Ok(());
        }
        if c.signal_held(sig) {
            return if sig == libc::SIGTTIN { Err(Errno::EIO) } else { Ok(()) };
        }
        if c.group_orphaned() {
            return Err(Errno::EIO);
        }
        c.signal_group(c.pgid(), sig);
        Err(Errno::ERESTARTSYS)
    }

    /// Opens the master side (once, by /dev/ptmx).
    pub(crate) fn open_master(self: &Arc<Terminal>) -> Arc<TtyFile> {
        self.state.lock().masters += 1;
        Arc::new(TtyFile { term: self.clone(), master: true })
    }

    /// Opens the replica. A session leader without a controlling terminal
    /// that opens one without O_NOCTTY acquires it, as in Linux.
    pub(crate) fn open_replica(self: &Arc<Terminal>, flags: i32) -> Result<Arc<TtyFile>, Errno> {
        let caller = self.caller();
        self.open_replica_by(flags, caller.as_ref().map(|c| c as &dyn IoctlContext))
    }

    /// `open_replica` by `caller` (None: the sentry itself).
    pub(crate) fn open_replica_by(
        self: &Arc<Terminal>,
        flags: i32,
        caller: Option<&dyn IoctlContext>,
    ) -> Result<Arc<TtyFile>, Errno> {
        // Whether the caller may acquire it (asked before taking our lock:
        // the registry looks at every terminal, this one too).
        let acquire =
            caller.filter(|c| flags & libc::O_NOCTTY == 0 && c.sid() == c.tgid() && !c.session_has_terminal());
        let mut s = self.state.lock();
        if s.locked || s.gone() {
            return Err(Errno::EIO);
        }
        if s.exclusive && caller.is_none_or(|c| !c.capable(crate::auth::caps::CAP_SYS_ADMIN)) {
            return Err(Errno::EBUSY);
        }
        s.replicas += 1;
        s.replica_opened = true;
        if let Some(c) = acquire.filter(|_| s.session.is_none()) {
            s.session = Some(c.sid());
            s.foreground = Some(c.pgid());
        }
        drop(s);
        self.changed();
        Ok(Arc::new(TtyFile { term: self.clone(), master: false }))
    }

    /// The session whose controlling terminal this is.
    pub(crate) fn session(&self) -> Option<i32> {
        self.state.lock().session
    }

    pub(crate) fn foreground(&self) -> Option<i32> {
        self.state.lock().foreground
    }

    /// Makes this the controlling terminal of session `sid` with `pgid`
    /// in the foreground (init's console at boot, TIOCSCTTY).
    /// `steal` takes it from another session (root's TIOCSCTTY 1).
    pub(crate) fn set_controlling(&self, sid: i32, pgid: i32, steal: bool) -> Result<(), Errno> {
        let mut s = self.state.lock();
        if s.session == Some(sid) {
            return Ok(());
        }
        if s.session.is_some() && !steal {
            return Err(Errno::EPERM);
        }
        s.session = Some(sid);
        s.foreground = Some(pgid);
        Ok(())
    }

    /// The session gives the terminal up (TIOCNOTTY, its leader's exit):
    /// the foreground group is sent SIGHUP (and SIGCONT unless the leader
    /// is exiting).
    pub(crate) fn release_controlling(&self, sid: i32, leader: bool, exiting: bool) {
        let fg = {
            let mut s = self.state.lock();
            if s.session != Some(sid) {
                return;
            }
            if !leader {
                return;
            }
            s.session = None;
            s.foreground.take()
        };
        if let Some(fg) = fg {
            self.signal_group(fg, libc::SIGHUP);
            if !exiting {
                self.signal_group(fg, libc::SIGCONT);
            }
        }
    }

    /// TIOCSPGRP: `pgid` must be a group of the terminal's session
    /// (`c` finds the group's).
    pub(crate) fn set_foreground(&self, c: &dyn IoctlContext, pgid: i32) -> Result<(), Errno> {
        let sid = c.session_of_group(pgid).ok_or(Errno::ESRCH)?;
        let mut s = self.state.lock();
        if s.session != Some(sid) {
            return Err(Errno::EPERM);
        }
        s.foreground = Some(pgid);
        Ok(())
    }

    pub(crate) fn termios(&self) -> Termios {
        *self.state.lock().ld.termios()
    }

    /// TCSETS*: `flush` discards unread input first (TCSETSF).
    pub(crate) fn set_termios(&self, t: Termios, flush: bool) {
        let mut s = self.state.lock();
        let before = readiness(&s);
        if flush {
            s.ld.flush_input();
        }
        s.ld.set_termios(t);
        let news = became_ready(before, &s);
        drop(s);
        self.tell(news);
    }

    pub(crate) fn winsize(&self) -> Winsize {
        self.state.lock().winsize
    }

    /// TIOCSWINSZ: a change is signalled to the foreground group.
    pub(crate) fn set_winsize(&self, w: Winsize) {
        let fg = {
            let mut s = self.state.lock();
            if s.winsize == w {
                return;
            }
            s.winsize = w;
            s.foreground
        };
        if let Some(fg) = fg {
            self.signal_group(fg, libc::SIGWINCH);
        }
    }

    /// TCFLSH: discards unread input, output or both.
    pub(crate) fn flush(&self, input: bool, output: bool) {
        let mut s = self.state.lock();
        if input {
            s.ld.flush_input();
        }
        if output {
            s.output.clear();
        }
        drop(s);
        // Room for the master's input, for the replica's output.
        let room = |made| if made { POLLOUT | POLLWRNORM } else { 0 };
        self.tell((room(input), room(output)));
    }

    /// TCXONC: suspends or restarts output (TCOOFF, TCOON), or sends the
    /// stop or start character (TCIOFF, TCION) towards the master.
    pub(crate) fn flow(&self, action: u64) -> Result<(), Errno> {
        let mut s = self.state.lock();
        let before = readiness(&s);
        match action {
            0 => s.ld.set_stopped(true),
            1 => s.ld.set_stopped(false),
            2 | 3 => {
                let which = if action == 2 { super::termios::VSTOP } else { super::termios::VSTART };
                let c = s.ld.termios().cc[which];
                if c != 0 {
                    s.output.push_back(c);
                }
            }
            _ => return Err(Errno::EINVAL),
        }
        let (mut master, replica) = became_ready(before, &s);
        if matches!(action, 2 | 3) {
            master |= readiness(&s).0 & (POLLIN | POLLRDNORM);
        }
        drop(s);
        self.tell((master, replica));
        Ok(())
    }

    /// TIOCSPTLCK.
    pub(crate) fn set_locked(&self, locked: bool) {
        self.state.lock().locked = locked;
    }

    pub(crate) fn locked(&self) -> bool {
        self.state.lock().locked
    }

    /// TIOCEXCL, TIOCNXCL.
    pub(crate) fn set_exclusive(&self, on: bool) {
        self.state.lock().exclusive = on;
    }

    pub(crate) fn exclusive(&self) -> bool {
        self.state.lock().exclusive
    }

    /// Bytes the replica can read (its FIONREAD) and bytes the master can
    /// read (the replica's TIOCOUTQ, the master's FIONREAD).
    pub(crate) fn queued(&self) -> (usize, usize) {
        let s = self.state.lock();
        (s.ld.readable(), s.output.len())
    }

    /// TIOCSTI: `c` as if typed (its echo and signals included).
    pub(crate) fn simulate_input(self: &Arc<Terminal>, c: u8) {
        if let Err(e) = self.master_write(&[c]) {
            log::debug!("TIOCSTI on {}: {e}", self.name());
        }
    }

    /// The master closed for good or the host terminal behind it went
    /// away: the session leader is sent SIGHUP and SIGCONT, the terminal
    /// is no session's any more, and the replica reads end of file and
    /// refuses writes (EIO).
    pub(crate) fn hang_up(&self) {
        let session = {
            let mut s = self.state.lock();
            s.hung_up = true;
            s.foreground = None;
            s.session.take()
        };
        self.changed();
        if let Some(sid) = session {
            if let Some(k) = self.kernel.upgrade().filter(|k| k.procs().alive(sid)) {
                k.signal_process(sid, libc::SIGHUP);
                k.signal_process(sid, libc::SIGCONT);
            }
        }
    }

    /// Waits until there is output for the master (true), or until the
    /// terminal is hung up (false); None when `deadline` passed first. For
    /// the console bridge, which is no guest thread and cannot be
    /// interrupted.
    pub(crate) fn wait_output_until(self: &Arc<Terminal>, deadline: Option<std::time::Instant>) -> Option<bool> {
        let mut s = self.state.lock();
        let ready = |s: &mut State| (!s.output.is_empty() && !s.ld.stopped()) || s.hung_up;
        match block_on(&mut s, &self.cond, self.waker(), deadline, ready) {
            Ok(()) => Some(!s.hung_up),
            Err(Errno::ETIMEDOUT) => None,
            Err(_) => Some(false),
        }
    }

    /// Takes output without waiting (0 when there is none).
    pub(crate) fn read_output(self: &Arc<Terminal>, buf: &mut [u8]) -> Result<usize, Errno> {
        match self.master_read(buf) {
            Err(Errno::EAGAIN) => Ok(0),
            other => other,
        }
    }

    /// The typed input `buf` from the master: how much the line
    /// discipline took, EAGAIN when it has no room (the writer waits on
    /// the terminal's queue).
    fn master_write(self: &Arc<Terminal>, buf: &[u8]) -> Result<usize, Errno> {
        let mut done = 0;
        let mut s = self.state.lock();
        loop {
            let before = readiness(&s);
            let mut fx = Effects::default();
            let took = s.ld.receive(&buf[done..], &mut fx);
            done += took;
            if fx.flush_output {
                s.output.clear();
            }
            // Echo beyond the output's room is dropped, as Linux's echo
            // buffer does when nobody reads the master.
            let room = OUTPUT_CAPACITY.saturating_sub(s.output.len());
            let echoed = !fx.echo.is_empty() && room > 0;
            s.output.extend(fx.echo.into_iter().take(room));
            // The replica hears of input to read and of output flushed;
            // the master of its echo; either of what typed flow control
            // started.
            let (mut master, mut replica) = became_ready(before, &s);
            let now = readiness(&s);
            if took > 0 {
                replica |= now.1 & (POLLIN | POLLRDNORM);
            }
            if fx.flush_output {
                replica |= now.1 & (POLLOUT | POLLWRNORM);
            }
            if echoed {
                master |= now.0 & (POLLIN | POLLRDNORM);
            }
            let fg = s.foreground;
            MutexGuard::unlocked(&mut s, || {
                self.tell((master, replica));
                if let Some(fg) = fg {
                    for sig in fx.signals {
                        self.signal_group(fg, sig);
                    }
                }
            });
            if done == buf.len() {
                return Ok(done);
            }
            // Nobody will ever read it: the input is dropped.
            if s.gone() || s.replica_closed() {
                return Ok(buf.len());
            }
            if !s.ld.has_room() {
                return if done > 0 { Ok(done) } else { Err(Errno::EAGAIN) };
            }
        }
    }

    /// The replica's output for the master; EAGAIN when there is none.
    fn master_read(self: &Arc<Terminal>, buf: &mut [u8]) -> Result<usize, Errno> {
        let mut s = self.state.lock();
        if !s.output.is_empty() && !s.ld.stopped() {
            let n = buf.len().min(s.output.len());
            for (dst, src) in buf.iter_mut().zip(s.output.drain(..n)) {
                *dst = src;
            }
            drop(s);
            // Room for the replica's output.
            self.tell((0, POLLOUT | POLLWRNORM));
            return Ok(n);
        }
        if s.replica_closed() {
            return Err(Errno::EIO);
        }
        Err(Errno::EAGAIN)
    }

    /// Output from the replica: what fits, EAGAIN when nothing does (the
    /// writer waits on the terminal's queue).
    fn replica_write(self: &Arc<Terminal>, buf: &[u8]) -> Result<usize, Errno> {
        if self.termios().lflag(TOSTOP) {
            self.check_background(libc::SIGTTOU)?;
        }
        let mut done = 0;
        let mut s = self.state.lock();
        while done < buf.len() {
            if s.gone() {
                return if done > 0 { Ok(done) } else { Err(Errno::EIO) };
            }
            let room = OUTPUT_CAPACITY.saturating_sub(s.output.len());
            if room == 0 || s.ld.stopped() {
                return if done > 0 { Ok(done) } else { Err(Errno::EAGAIN) };
            }
            let n = room.min(buf.len() - done);
            let mut out = Vec::with_capacity(n);
            s.ld.output(&buf[done..done + n], &mut out);
            s.output.extend(out);
            done += n;
            // Output for the master to read.
            MutexGuard::unlocked(&mut s, || self.tell((POLLIN | POLLRDNORM, 0)));
        }
        Ok(done)
    }

    /// One attempt of the replica's read call `call`: a line
    /// (canonical), or VMIN bytes, or what came before VTIME ran out (one
    /// timer for the call with VMIN 0; else an inter-byte timer, running
    /// while input is queued and restarted by each new byte); with
    /// O_NONBLOCK what there is. Otherwise EAGAIN, with the time the
    /// timer runs out in `call.retry_at`.
    fn replica_read(self: &Arc<Terminal>, buf: &mut [u8], call: &mut ReadCall) -> Result<usize, Errno> {
        self.check_background(libc::SIGTTIN)?;
        if buf.is_empty() {
            return Ok(0);
        }
        let mut s = self.state.lock();
        if s.gone() {
            return Ok(0);
        }
        let t = *s.ld.termios();
        let (vmin, vtime) = (usize::from(t.cc[VMIN]), u64::from(t.cc[VTIME]));
        let canonical = t.lflag(ICANON);
        // How many bytes end the wait: a line (canonical), else VMIN.
        let want = if canonical { 1 } else { vmin.min(buf.len()).max(1) };
        let interval = Duration::from_millis(vtime * 100);
        let inter_byte = !canonical && vmin > 0 && vtime > 0;
        let have = s.ld.readable();
        let now = Instant::now();
        let deadline = if !canonical && vmin == 0 && vtime > 0 {
            Some(call.started + interval)
        } else if inter_byte && have > 0 {
            let since = match call.seen {
                Some((n, at)) if n == have => at,
                _ => now,
            };
            call.seen = Some((have, since));
            Some(since + interval)
        } else {
            call.seen = None;
            None
        };
        let enough = if canonical { s.ld.has_input() } else { have >= want };
        let timed_out = deadline.is_some_and(|d| now >= d);
        let immediate = !canonical && vmin == 0 && vtime == 0;
        if enough || immediate || (timed_out && (have > 0 || vmin == 0)) || (call.nonblock && have > 0 && !canonical) {
            let n = s.ld.read(buf);
            drop(s);
            // Room for the master's input.
            self.tell((POLLOUT | POLLWRNORM, 0));
            return Ok(n);
        }
        call.retry_at = deadline;
        Err(Errno::EAGAIN)
    }

    fn poll(&self, master: bool) -> u32 {
        let r = readiness(&self.state.lock());
        if master {
            r.0
        } else {
            r.1
        }
    }
}

/// The poll events of the master and of the replica.
fn readiness(s: &State) -> (u32, u32) {
    (master_readiness(s), replica_readiness(s))
}

/// The events of `before` that were not ready then and are in `s`: what
/// a change of modes or flow made ready.
fn became_ready(before: (u32, u32), s: &State) -> (u32, u32) {
    let now = readiness(s);
    (now.0 & !before.0, now.1 & !before.1)
}

fn master_readiness(s: &State) -> u32 {
    let mut ev = 0;
    if !s.output.is_empty() && !s.ld.stopped() {
        ev |= POLLIN | POLLRDNORM;
    }
    if s.ld.has_room() {
        ev |= POLLOUT | POLLWRNORM;
    }
    if s.replica_closed() {
        ev |= POLLHUP;
    }
    ev
}

fn replica_readiness(s: &State) -> u32 {
    if s.gone() {
        return POLLIN | POLLOUT | POLLERR | POLLHUP | POLLRDNORM | POLLWRNORM;
    }
    let mut ev = 0;
    let t = s.ld.termios();
    let min = if !t.lflag(ICANON) && t.cc[VTIME] == 0 { usize::from(t.cc[VMIN]).max(1) } else { 1 };
    if (t.lflag(ICANON) && s.ld.has_input()) || (!t.lflag(ICANON) && s.ld.readable() >= min) {
        ev |= POLLIN | POLLRDNORM;
    }
    if s.output.len() < OUTPUT_CAPACITY && !s.ld.stopped() {
        ev |= POLLOUT | POLLWRNORM;
    }
    ev
}

impl Terminal {
    /// The replica's attributes: /dev/pts/N, owned by whoever opened the
    /// master, group tty, mode 0620.
    pub(crate) fn stat(&self) -> Stat {
        let mut st =
            crate::fs::anon::stat(self.dev, u64::from(self.index) + 3, crate::vfs::S_IFCHR | 0o620, self.created);
        st.rdev = libc::makedev(PTS_MAJOR, self.index);
        st.uid = self.owner;
        st.gid = TTY_GID;
        st
    }
}

/// An open end of a terminal.
pub(crate) struct TtyFile {
    pub term: Arc<Terminal>,
    /// The master side (else the replica).
    pub master: bool,
}

impl Drop for TtyFile {
    fn drop(&mut self) {
        let last_master = {
            let mut s = self.term.state.lock();
            if self.master {
                s.masters -= 1;
                s.masters == 0
            } else {
                s.replicas -= 1;
                false
            }
        };
        self.term.changed();
        if last_master {
            self.term.hang_up();
        }
    }
}

impl TtyFile {
    /// The queue this end's pollers wait on.
    fn events(&self) -> &Queue {
        if self.master {
            &self.term.master_events
        } else {
            &self.term.replica_events
        }
    }

    /// Job control for a call that changes the terminal (modes, the
    /// foreground group, flushing) from the replica side; the master, the
    /// terminal's owner, is never in the background.
    pub(crate) fn check_change(&self, c: &dyn IoctlContext) -> Result<(), Errno> {
        if self.master {
            Ok(())
        } else {
            self.term.job_control(c, libc::SIGTTOU)
        }
    }
}

impl FileOps for TtyFile {
    /// One attempt, of a read call that may wait.
    fn read(&self, buf: &mut [u8], _off: u64) -> Result<usize, Errno> {
        self.read_call(buf, &mut ReadCall::new(false))
    }

    fn read_call(&self, buf: &mut [u8], call: &mut ReadCall) -> Result<usize, Errno> {
        if self.master {
            self.term.master_read(buf)
        } else {
            self.term.replica_read(buf, call)
        }
    }

    fn write(&self, buf: &[u8], _off: u64) -> Result<usize, Errno> {
        if self.master {
            self.term.master_write(buf)
        } else {
            self.term.replica_write(buf)
        }
    }

    fn seekable(&self) -> bool {
        false
    }

    fn poll_events(&self) -> u32 {
        self.term.poll(self.master)
    }

    fn event_register(&self, e: &Entry) {
        self.events().register(e);
    }

    fn event_unregister(&self, e: &Entry) {
        self.events().unregister(e);
    }

    fn fasync(&self) -> Option<crate::vfs::Fasync> {
        // The master is no one's controlling terminal.
        let foreground = if self.master { None } else { self.term.foreground() };
        Some(crate::vfs::Fasync::Terminal { foreground })
    }

    fn ioctl(&self, ctx: &dyn IoctlContext, req: u64, arg: u64) -> Result<u64, Errno> {
        super::ioctl::ioctl(self, ctx, req, arg)
    }
}
