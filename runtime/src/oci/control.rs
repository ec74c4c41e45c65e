//! The runtime's end of a sentry's control socket.

use husk_sentry::api::boot::control::protocol::{decode_reply, ExecSpec, ExitLine, Request};
use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd as _, BorrowedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the runtime waits for the sentry to answer.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("cannot reach the sandbox at {0}: {1}")]
    Connect(PathBuf, std::io::Error),
    #[error("the sandbox did not answer: {0}")]
    Io(std::io::Error),
    #[error("{0}")]
    Refused(String),
}

/// Socket paths are limited to 107 bytes and state directories can be
/// deep (Docker's are), so sockets are named through the directory's
/// descriptor: /proc/self/fd/N/NAME.
pub fn via_dir<T>(path: &Path, f: impl FnOnce(&Path) -> std::io::Result<T>) -> std::io::Result<T> {
    let dir = std::fs::File::open(path.parent().unwrap_or(Path::new("/")))?;
    let name = path.file_name().unwrap_or_default();
    f(&Path::new("/proc/self/fd").join(dir.as_raw_fd().to_string()).join(name))
}

/// Binds and listens on the control socket of a new container.
pub fn listen(path: &Path) -> std::io::Result<UnixListener> {
    via_dir(path, |p| UnixListener::bind(p))
}

/// Sends one request and returns the reply's payload lines.
pub fn call(path: &Path, req: Request) -> Result<Vec<String>, ControlError> {
    call_within(path, req, Some(REPLY_TIMEOUT))
}

/// Waits for the container's process to end and returns how it did.
pub fn wait(path: &Path) -> Result<ExitLine, ControlError> {
    let lines = call_within(path, Request::Wait, None)?;
    lines
        .first()
        .and_then(|l| ExitLine::decode(l))
        .ok_or_else(|| ControlError::Refused(format!("unexpected reply {lines:?}")))
}

pub fn call_within(path: &Path, req: Request, timeout: Option<Duration>) -> Result<Vec<String>, ControlError> {
    let mut s = via_dir(path, |p| UnixStream::connect(p)).map_err(|e| ControlError::Connect(path.to_path_buf(), e))?;
    s.set_read_timeout(timeout).map_err(ControlError::Io)?;
    s.write_all(&req.encode()).map_err(ControlError::Io)?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(ControlError::Io)?;
    decode_reply(&text).map_err(|(_, msg)| ControlError::Refused(msg))
}

/// A process started by `exec`, still running in the sandbox.
pub struct ExecHandle {
    stream: UnixStream,
}

/// One line, read a byte at a time so that nothing after it is consumed
/// (the stream may be handed to another process).
fn read_line(mut s: &UnixStream) -> std::io::Result<String> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while s.read(&mut b)? == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// Starts a process in the sandbox with `stdio` as its standard streams.
pub fn exec(path: &Path, spec: ExecSpec, stdio: [BorrowedFd<'_>; 3]) -> Result<ExecHandle, ControlError> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let s = via_dir(path, |p| UnixStream::connect(p)).map_err(|e| ControlError::Connect(path.to_path_buf(), e))?;
    s.set_read_timeout(Some(REPLY_TIMEOUT)).map_err(ControlError::Io)?;
    let bytes = Request::Exec(Box::new(spec)).encode();
    let fds: Vec<RawFd> = stdio.iter().map(|f| f.as_raw_fd()).collect();
    let rights = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(&bytes)];
    let sent =
        sendmsg::<()>(s.as_raw_fd(), &iov, &rights, MsgFlags::empty(), None).map_err(|e| ControlError::Io(e.into()))?;
    (&s).write_all(&bytes[sent..]).map_err(ControlError::Io)?;
    let mut reply = read_line(&s).map_err(ControlError::Io)? + "\n";
    if reply == "ok\n" {
        reply += &read_line(&s).map_err(ControlError::Io)?;
    }
    let lines = decode_reply(&reply).map_err(|(_, msg)| ControlError::Refused(msg))?;
    let pid: i32 = lines
        .first()
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| ControlError::Refused(format!("unexpected reply {reply:?}")))?;
    log::debug!("exec'd process: guest pid {pid}");
    s.set_read_timeout(None).map_err(ControlError::Io)?;
    Ok(ExecHandle { stream: s })
}

impl ExecHandle {
    /// Waits for the process to end. A sandbox that goes away first took
    /// the process with it, as a SIGKILL would.
    pub fn wait(self) -> ExitLine {
        read_line(&self.stream).ok().and_then(|l| ExitLine::decode(&l)).unwrap_or(ExitLine::Signal(libc::SIGKILL))
    }

    /// The connection, for a waiter process to inherit.
    pub fn into_stream(self) -> UnixStream {
        self.stream
    }

    pub fn from_stream(stream: UnixStream) -> ExecHandle {
        ExecHandle { stream }
    }
}
