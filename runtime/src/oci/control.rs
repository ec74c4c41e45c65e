//! The runtime's end of a sentry's control socket.

use husk_sentry::control::protocol::{decode_reply, Request};
use std::io::{Read as _, Write as _};
use std::os::fd::AsRawFd as _;
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
    #[error("the sandbox refused: {msg} ({})", std::io::Error::from_raw_os_error(*errno))]
    Refused { errno: i32, msg: String },
}

/// Socket paths are limited to 107 bytes and state directories can be
/// deep (Docker's are), so sockets are named through the directory's
/// descriptor: /proc/self/fd/N/NAME.
fn via_dir<T>(path: &Path, f: impl FnOnce(&Path) -> std::io::Result<T>) -> std::io::Result<T> {
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
    let mut s = via_dir(path, |p| UnixStream::connect(p)).map_err(|e| ControlError::Connect(path.to_path_buf(), e))?;
    s.set_read_timeout(Some(REPLY_TIMEOUT)).map_err(ControlError::Io)?;
    s.write_all(req.encode().as_bytes()).map_err(ControlError::Io)?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(ControlError::Io)?;
    decode_reply(&text).map_err(|(errno, msg)| ControlError::Refused { errno, msg })
}
