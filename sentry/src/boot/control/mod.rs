//! The control socket (ARCHITECTURE.md §1): in the OCI lifecycle the
//! runtime creates the sandbox, then `husk start`, `kill`, `ps`, `exec`
//! and `wait` reach the running sentry through a Unix socket in the container's state
//! directory. The runtime binds it and hands the sentry the listening
//! descriptor, so the sentry never resolves a host path.

pub mod protocol;

use crate::boot::launch::{self, LaunchError, ProcessSpec};
use crate::kernel::process::INIT_PID;
use crate::kernel::ExitStatus;
use crate::kernel::Kernel;
use parking_lot::{Condvar, Mutex};
use protocol::{ExecSpec, ExitLine, Header, ProcessRow, Request};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Weak};

/// How long a client may take to send its whole request.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// What one receive reads at most.
const CHUNK: usize = 64 << 10;

/// The descriptors the runtime gives a sentry it drives over the control
/// socket.
pub struct ControlConfig {
    /// A listening SOCK_STREAM Unix socket.
    pub listener: OwnedFd,
    /// Where the sentry reports `ready` (the container process is loaded)
    /// or `error MESSAGE`; closed afterwards.
    pub ready: OwnedFd,
}

/// A container's lifecycle as the control socket sees it: its process
/// waits here between `create` and `start`, and `wait` requests wait here
/// for its end.
pub(crate) struct Lifecycle {
    started: Mutex<bool>,
    cv: Condvar,
    ready: Mutex<Option<File>>,
    /// `wait` requests: answered when the container exits, or at once
    /// once it has.
    waiters: Mutex<Waiters>,
}

#[derive(Default)]
struct Waiters {
    exited: Option<ExitStatus>,
    conns: Vec<File>,
}

fn exit_reply(status: ExitStatus) -> String {
    protocol::encode_reply(&Ok(Vec::new())) + &ExitLine::from(status).encode()
}

impl Lifecycle {
    pub(crate) fn new(ready: OwnedFd) -> Lifecycle {
        Lifecycle {
            started: Mutex::new(false),
            cv: Condvar::new(),
            ready: Mutex::new(Some(File::from(ready))),
            waiters: Mutex::new(Waiters::default()),
        }
    }

    /// Tells every `wait` request how the container ended.
    pub(crate) fn exited(&self, status: ExitStatus) {
        let mut w = self.waiters.lock();
        w.exited = Some(status);
        for mut conn in w.conns.drain(..) {
            let _ = conn.write_all(exit_reply(status).as_bytes());
        }
    }

    /// Answers `conn` when the container has exited.
    fn add_waiter(&self, mut conn: File) {
        let mut w = self.waiters.lock();
        match w.exited {
            Some(status) => {
                let _ = conn.write_all(exit_reply(status).as_bytes());
            }
            None => w.conns.push(conn),
        }
    }

    /// Tells the runtime how creation went; only the first report counts.
    pub(crate) fn report(&self, outcome: Result<(), String>) {
        if let Some(mut f) = self.ready.lock().take() {
            let line = match outcome {
                Ok(()) => "ready\n".to_string(),
                Err(msg) => format!("error {}\n", msg.replace('\n', " ")),
            };
            if let Err(e) = f.write_all(line.as_bytes()) {
                log::warn!("cannot report readiness to the runtime: {e}");
            }
        }
    }

    /// Blocks until `start`.
    pub(crate) fn wait_start(&self) {
        let mut s = self.started.lock();
        while !*s {
            self.cv.wait(&mut s);
        }
    }

    /// Lets the container process run; false if it was started already.
    fn open(&self) -> bool {
        let mut s = self.started.lock();
        let first = !*s;
        *s = true;
        self.cv.notify_all();
        first
    }
}

/// Starts the thread that serves the control socket for the sandbox's
/// lifetime.
pub(crate) fn serve(kernel: Weak<Kernel>, listener: OwnedFd, life: Arc<Lifecycle>) -> std::io::Result<()> {
    std::thread::Builder::new().name("control".into()).spawn(move || loop {
        // SAFETY: accept4 on a listening socket we own; no address is
        // requested, so the pointers are null.
        let fd = unsafe {
            libc::accept4(listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC)
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::ECONNABORTED) {
                continue;
            }
            log::warn!("control socket: accept: {e}");
            return;
        }
        // SAFETY: accept4 just created `fd` and nothing else owns it.
        let conn = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let Some(k) = kernel.upgrade() else { return };
        // One thread per connection: a slow client holds up only itself.
        let life = life.clone();
        if let Err(e) =
            std::thread::Builder::new().name("control-conn".into()).spawn(move || serve_one(&k, &life, conn))
        {
            log::warn!("control socket: cannot serve a connection: {e}");
        }
    })?;
    Ok(())
}

fn serve_one(k: &Arc<Kernel>, life: &Lifecycle, mut conn: File) {
    let reply = match read_request(&conn) {
        Ok((Request::Wait, _)) => {
            life.add_waiter(conn);
            return;
        }
        Ok((Request::Exec(spec), fds)) => match exec(k, *spec, fds, conn) {
            Ok(()) => return,
            Err((c, e)) => {
                conn = c;
                Err(e)
            }
        },
        Ok((req, _)) => handle(k, life, req),
        Err(e) => Err(e),
    };
    if let Err(e) = conn.write_all(protocol::encode_reply(&reply).as_bytes()) {
        log::debug!("control socket: reply lost: {e}");
    }
}

type Failure = (i32, String);

fn failure(e: &std::io::Error) -> Failure {
    (e.raw_os_error().unwrap_or(libc::EIO), e.to_string())
}

/// Bytes of a request, with the descriptors that came along.
struct Incoming {
    bytes: Vec<u8>,
    fds: Vec<OwnedFd>,
    chunk: Vec<u8>,
    deadline: std::time::Instant,
}

impl Incoming {
    fn new() -> Incoming {
        let deadline = std::time::Instant::now() + REQUEST_TIMEOUT;
        Incoming { bytes: Vec::new(), fds: Vec::new(), chunk: vec![0u8; CHUNK], deadline }
    }

    /// Receives more before the request's deadline; false at EOF.
    fn receive(&mut self, conn: &File) -> std::io::Result<bool> {
        use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
        let left = self.deadline.saturating_duration_since(std::time::Instant::now());
        let left_ms = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
        let mut pfd = libc::pollfd { fd: conn.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll reads and writes one pollfd we own.
        if left_ms == 0 || unsafe { libc::poll(&mut pfd, 1, left_ms) } <= 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ETIMEDOUT));
        }
        let mut space = nix::cmsg_space!([std::os::fd::RawFd; 3]);
        let mut iov = [std::io::IoSliceMut::new(&mut self.chunk)];
        let msg = recvmsg::<()>(conn.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)?;
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: the kernel just installed these descriptors for us.
                self.fds.extend(fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
            }
        }
        let n = msg.bytes;
        self.bytes.extend_from_slice(&self.chunk[..n]);
        Ok(n > 0)
    }
}

/// Reads one request: its line and, for `exec`, its payload.
fn read_request(conn: &File) -> Result<(Request, Vec<OwnedFd>), Failure> {
    let mut inc = Incoming::new();
    let nl = loop {
        match inc.bytes.iter().position(|&b| b == b'\n') {
            Some(nl) if nl <= protocol::MAX_REQUEST => break nl,
            Some(_) => return Err((libc::EINVAL, "control request line too long".into())),
            None => {}
        }
        if inc.bytes.len() >= protocol::MAX_REQUEST || !inc.receive(conn).map_err(|e| failure(&e))? {
            return Err((libc::EINVAL, "incomplete control request".into()));
        }
    };
    let line = std::str::from_utf8(&inc.bytes[..nl]).map_err(|_| (libc::EINVAL, "request is not text".into()))?;
    match Request::decode(line).map_err(|e| (libc::EINVAL, e.to_string()))? {
        Header::Complete(req) => Ok((req, inc.fds)),
        Header::Exec(len) => {
            while inc.bytes.len() - nl - 1 < len {
                if !inc.receive(conn).map_err(|e| failure(&e))? {
                    return Err((libc::EINVAL, "incomplete exec request".into()));
                }
            }
            let payload = &inc.bytes[nl + 1..];
            let spec = ExecSpec::decode(payload)
                .filter(|_| payload.len() == len)
                .ok_or_else(|| (libc::EINVAL, "malformed exec request".into()))?;
            Ok((Request::Exec(Box::new(spec)), inc.fds))
        }
    }
}

/// Starts an exec'd process on a thread of its own (the ptrace platform
/// ties an address space to the host thread that made it), which answers
/// with its pid, then with its exit status when it ends.
fn exec(k: &Arc<Kernel>, spec: ExecSpec, fds: Vec<OwnedFd>, conn: File) -> Result<(), (File, Failure)> {
    let Ok(stdio) = <[OwnedFd; 3]>::try_from(fds) else {
        return Err((conn, (libc::EINVAL, "exec needs exactly three descriptors".into())));
    };
    let names: [String; 3] = if spec.terminal.is_empty() {
        ["exec-stdio:[0]".into(), "exec-stdio:[1]".into(), "exec-stdio:[2]".into()]
    } else {
        let t = String::from_utf8_lossy(&spec.terminal).into_owned();
        [t.clone(), t.clone(), t]
    };
    let mut env = spec.env;
    k.ext::<crate::boot::secrets::SecretEnv>().apply(&mut env);
    let spec = ProcessSpec {
        argv: spec.argv,
        env,
        cwd: spec.cwd,
        uid: spec.uid,
        gid: spec.gid,
        groups: spec.groups,
        rlimits: spec
            .rlimits
            .into_iter()
            .map(|(r, cur, max)| (r, crate::kernel::limits::Rlimit { cur, max }))
            .collect(),
        stdio,
        caps: spec.caps,
        no_new_privs: spec.no_new_privs,
        console: !spec.terminal.is_empty(),
    };
    let kernel = k.clone();
    let spawned = std::thread::Builder::new().name("exec".into()).stack_size(8 << 20).spawn(move || {
        let mut conn = conn;
        // The new process counts against the pids limit as a forked one
        // does, from before it exists until it is in the thread table.
        let comm = program_name(&spec.argv);
        let slot = match kernel.reserve_pid_for(0, || comm) {
            Ok(slot) => slot,
            Err(e) => {
                let _ = conn.write_all(protocol::encode_reply(&Err((e.0, pids_refusal(&kernel)))).as_bytes());
                return;
            }
        };
        let loaded = launch::load(&kernel, spec, &names);
        drop(slot);
        let process = match loaded {
            Ok(p) => p,
            Err(e) => {
                let errno = if let LaunchError::Exec { errno, .. } = &e { errno.0 } else { libc::EIO };
                let _ = conn.write_all(protocol::encode_reply(&Err((errno, e.to_string()))).as_bytes());
                return;
            }
        };
        let pid = process.pid;
        let _ = conn.write_all(protocol::encode_reply(&Ok(vec![pid.to_string()])).as_bytes());
        let line = match process.run() {
            Ok(status) => ExitLine::from(status),
            Err(e) => {
                log::warn!("exec'd process {pid}: {e}");
                ExitLine::Signal(libc::SIGKILL)
            }
        };
        kernel.procs().remove(pid);
        drop(kernel);
        let _ = conn.write_all(line.encode().as_bytes());
    });
    if let Err(e) = spawned {
        log::warn!("cannot start a thread for an exec'd process: {e}");
    }
    Ok(())
}

/// The name a process of `argv` gets (its comm): the program's file
/// name, at most 15 bytes as Linux keeps it.
fn program_name(argv: &[Vec<u8>]) -> String {
    let path = argv.first().map_or(&[][..], Vec::as_slice);
    let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    String::from_utf8_lossy(&base[..base.len().min(15)]).into_owned()
}

/// Why an exec was refused at the pids limit, for the runtime's user.
fn pids_refusal(k: &Kernel) -> String {
    match k.cgroup_limits().lock().pids_max {
        Some(limit) => format!("the sandbox's pids limit ({limit}) is reached: no process can start"),
        None => "no process can start".into(),
    }
}

fn handle(k: &Kernel, life: &Lifecycle, req: Request) -> Result<Vec<String>, Failure> {
    log::debug!("control request {req:?}");
    match req {
        Request::Start => {
            if life.open() {
                Ok(Vec::new())
            } else {
                Err((libc::EALREADY, "the container was started already".into()))
            }
        }
        Request::Signal { sig, .. }
            if !usize::try_from(sig).is_ok_and(|s| (1..=crate::abi::signal::NSIG).contains(&s)) =>
        {
            Err((libc::EINVAL, format!("invalid signal {sig}")))
        }
        Request::Signal { sig, all } => {
            let targets = if all { k.procs().live() } else { vec![INIT_PID] };
            let targets: Vec<i32> = targets.into_iter().filter(|&p| k.procs().alive(p)).collect();
            if targets.is_empty() {
                return Err((libc::ESRCH, "the container process has exited".into()));
            }
            for pid in targets {
                k.signal_from_outside(pid, sig);
            }
            Ok(Vec::new())
        }
        Request::Processes => Ok(k
            .procs()
            .live()
            .into_iter()
            .filter_map(|pid| {
                let t = k.thread(pid)?;
                let comm: String =
                    String::from_utf8_lossy(&t.comm()).chars().map(|c| if c.is_control() { '?' } else { c }).collect();
                Some(ProcessRow { pid, ppid: k.procs().ppid(pid), uid: t.creds().uid, comm }.encode())
            })
            .collect()),
        Request::Limits { cpu_max, pids_max, memory_max } => {
            let mut l = k.cgroup_limits().lock();
            if let Some(cpu) = cpu_max {
                l.cpu_max = cpu;
            }
            if let Some(pids) = pids_max {
                l.pids_max = pids;
            }
            if let Some(memory) = memory_max {
                l.memory_max = memory;
            }
            Ok(Vec::new())
        }
        // Written and synced (lifecycle records are) before the reply, so
        // the runtime freezes only a sandbox whose log says so; until the
        // freeze, whatever the guest would do that the log records waits
        // (AuditLog::write holds it), so no record follows the pause's. A log
        // failing closed refuses: the sandbox is being stopped.
        Request::Pausing => k
            .audit(|| crate::audit::Record::SandboxPause {})
            .map(|()| Vec::new())
            .map_err(|e| (e.0, "cannot record sandbox.pause".into())),
        // The resume's record first, then what waited for it.
        Request::Resumed => k
            .audit(|| crate::audit::Record::SandboxResume {})
            .map(|()| Vec::new())
            .map_err(|e| (e.0, "cannot record sandbox.resume".into())),
        // Under the log's lock, so the reply means every record chained
        // so far is in the host kernel's hands; later ones go at once.
        Request::Flush => match k.audit_log() {
            Some(log) => log.flush_for_kill().map(|()| Vec::new()).map_err(|e| (libc::EIO, e.to_string())),
            None => Ok(Vec::new()),
        },
        Request::Exec(_) | Request::Wait => Err((libc::EINVAL, "served on its own".into())),
    }
}
