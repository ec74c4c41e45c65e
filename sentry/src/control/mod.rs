//! The control socket (ARCHITECTURE.md §1): in the OCI lifecycle the
//! runtime creates the sandbox, then `husk start`, `kill` and `ps` reach
//! the running sentry through a Unix socket in the container's state
//! directory. The runtime binds it and hands the sentry the listening
//! descriptor, so the sentry never resolves a host path.

pub mod protocol;

use crate::kernel::process::INIT_PID;
use crate::kernel::Kernel;
use parking_lot::{Condvar, Mutex};
use protocol::{ProcessRow, Request};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Weak};

/// How long a client may take to send its request.
const REQUEST_TIMEOUT_MS: i32 = 5000;

/// The descriptors the runtime gives a sentry it drives over the control
/// socket.
pub struct ControlConfig {
    /// A listening SOCK_STREAM Unix socket.
    pub listener: OwnedFd,
    /// Where the sentry reports `ready` (the container process is loaded)
    /// or `error MESSAGE`; closed afterwards.
    pub ready: OwnedFd,
}

/// The container process waits here between `create` and `start`.
pub struct StartGate {
    started: Mutex<bool>,
    cv: Condvar,
    ready: Mutex<Option<File>>,
}

impl StartGate {
    pub fn new(ready: OwnedFd) -> StartGate {
        StartGate { started: Mutex::new(false), cv: Condvar::new(), ready: Mutex::new(Some(File::from(ready))) }
    }

    /// Tells the runtime how creation went; only the first report counts.
    pub fn report(&self, outcome: Result<(), String>) {
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
    pub fn wait(&self) {
        let mut s = self.started.lock();
        while !*s {
            self.cv.wait(&mut s);
        }
    }

    /// Opens the gate; false if it was open already.
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
pub fn serve(kernel: Weak<Kernel>, listener: OwnedFd, gate: Arc<StartGate>) -> std::io::Result<()> {
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
        serve_one(&k, &gate, conn);
    })?;
    Ok(())
}

fn serve_one(k: &Kernel, gate: &StartGate, mut conn: File) {
    let reply = match read_request(&mut conn) {
        Ok(line) => match Request::decode(&line) {
            Ok(req) => handle(k, gate, req),
            Err(e) => Err((libc::EINVAL, e.to_string())),
        },
        Err(e) => Err((e.raw_os_error().unwrap_or(libc::EIO), e.to_string())),
    };
    if let Err(e) = conn.write_all(protocol::encode_reply(&reply).as_bytes()) {
        log::debug!("control socket: reply lost: {e}");
    }
}

/// Reads one line, giving up after REQUEST_TIMEOUT_MS without data.
fn read_request(conn: &mut File) -> std::io::Result<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; protocol::MAX_REQUEST];
    while !buf.contains(&b'\n') && buf.len() < protocol::MAX_REQUEST {
        let mut pfd = libc::pollfd { fd: conn.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll reads and writes one pollfd we own.
        if unsafe { libc::poll(&mut pfd, 1, REQUEST_TIMEOUT_MS) } <= 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ETIMEDOUT));
        }
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let end = buf.iter().position(|&b| b == b'\n').unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

fn handle(k: &Kernel, gate: &StartGate, req: Request) -> Result<Vec<String>, (i32, String)> {
    log::debug!("control request {req:?}");
    match req {
        Request::Start => {
            if gate.open() {
                Ok(Vec::new())
            } else {
                Err((libc::EALREADY, "the container was started already".into()))
            }
        }
        Request::Signal { sig, .. }
            if !usize::try_from(sig).is_ok_and(|s| (1..=crate::kernel::signal::NSIG).contains(&s)) =>
        {
            Err((libc::EINVAL, format!("invalid signal {sig}")))
        }
        Request::Signal { sig, all } => {
            let targets = if all { k.procs.live() } else { vec![INIT_PID] };
            let targets: Vec<i32> = targets.into_iter().filter(|&p| k.procs.alive(p)).collect();
            if targets.is_empty() {
                return Err((libc::ESRCH, "the container process has exited".into()));
            }
            for pid in targets {
                k.signal_process(pid, sig);
            }
            Ok(Vec::new())
        }
        Request::Processes => Ok(k
            .procs
            .live()
            .into_iter()
            .filter_map(|pid| {
                let t = k.thread(pid)?;
                let comm: String = String::from_utf8_lossy(&t.comm.lock())
                    .chars()
                    .map(|c| if c.is_control() { '?' } else { c })
                    .collect();
                Some(ProcessRow { pid, ppid: k.procs.ppid(pid), uid: t.creds().uid, comm }.encode())
            })
            .collect()),
    }
}
