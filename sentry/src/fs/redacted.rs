//! Guest output to a host descriptor (a standard stream the runtime
//! handed over) with the sandbox's secret values redacted on the way out.
//!
//! A guest write is redacted and handed to the host at once, as far as
//! the host takes it without blocking; the guest is told the whole write
//! went. What the host did not take yet waits in a queue (the next write
//! fails with EAGAIN until it is gone, so the guest waits for the host as
//! it would without redaction), and the bytes the redactor holds back
//! (the start of a possible match) wait for the next write. A flusher
//! thread per stream moves both on when the guest does not: the queue
//! when the host has room, the held bytes after `IDLE_FLUSH` without
//! output (see there for the trade-off). Closing the stream, and the
//! sandbox's end (`flush_all`), send everything that is left.
//!
//! A write the host has not taken yet counts as done for the guest: at
//! most `MAX_TAKE` bytes (and what redaction adds) per stream wait in the
//! sentry, and the sandbox's end waits for them as the writer would have.

use crate::abi::Errno;
use crate::audit::redact::{RedactStream, IDLE_FLUSH};
use crate::host;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// The most of one guest write taken at once.
const MAX_TAKE: usize = 64 << 10;

/// A redacting writer of one host descriptor.
pub(crate) struct RedactedOutput {
    shared: Arc<Shared>,
    /// The flusher runs (started the first time output waits).
    flusher: std::sync::Once,
}

struct Shared {
    fd: Arc<OwnedFd>,
    /// The most one host write takes (see `HostStream::chunk`).
    chunk: usize,
    state: Mutex<State>,
    /// Signalled when there is something for the flusher.
    work: Condvar,
}

struct State {
    stream: RedactStream,
    /// Redacted bytes the host has not taken yet.
    queue: Vec<u8>,
    /// When the guest last wrote.
    last_input: Instant,
    /// The stream is closed: the flusher ends once all is out.
    closed: bool,
    /// The host descriptor failed: nothing more is written.
    failed: Option<Errno>,
    /// The flusher waits for work with no deadline: only then does a
    /// write wake it (waking it at every write that holds bytes would cost
    /// a context switch each).
    flusher_idle: bool,
}

/// Every redacted stream, for the final flush.
static OUTPUTS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

impl RedactedOutput {
    /// A redacting writer of `fd`.
    pub(crate) fn new(fd: Arc<OwnedFd>, chunk: usize, stream: RedactStream) -> RedactedOutput {
        let state = State {
            stream,
            queue: Vec::new(),
            last_input: Instant::now(),
            closed: false,
            failed: None,
            flusher_idle: false,
        };
        let shared = Arc::new(Shared { fd, chunk, state: Mutex::new(state), work: Condvar::new() });
        let mut all = OUTPUTS.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&shared));
        RedactedOutput { shared, flusher: std::sync::Once::new() }
    }

    /// Wakes the flusher, starting it the first time. Without one (the
    /// host refused a thread) waiting output goes at the next write, the
    /// close or the sandbox's end.
    fn kick(&self) {
        self.flusher.call_once(|| {
            let s = self.shared.clone();
            if let Err(e) = std::thread::Builder::new().name("redact-flush".into()).spawn(move || s.flusher()) {
                log::warn!("no flusher for redacted output: {e}");
            }
        });
        self.shared.work.notify_one();
    }

    /// A guest write: takes up to `MAX_TAKE` bytes of `buf`; EAGAIN while
    /// earlier output still waits for the host.
    pub(crate) fn write(&self, buf: &[u8]) -> Result<usize, Errno> {
        let sh = &self.shared;
        let mut st = sh.state.lock();
        sh.drain(&mut st)?;
        if !st.queue.is_empty() {
            return Err(Errno::EAGAIN);
        }
        let n = buf.len().min(MAX_TAKE);
        st.queue = st.stream.feed(&buf[..n]);
        st.last_input = Instant::now();
        // A failure shows at the next write, as a pipe's would.
        let _ = sh.drain(&mut st);
        let started = self.flusher.is_completed();
        if !st.queue.is_empty() || (st.stream.holding() && (st.flusher_idle || !started)) {
            drop(st);
            self.kick();
        }
        Ok(n)
    }
}

impl Drop for RedactedOutput {
    fn drop(&mut self) {
        let mut st = self.shared.state.lock();
        let rest = st.stream.flush();
        st.queue.extend_from_slice(&rest);
        st.closed = true;
        let _ = self.shared.drain(&mut st);
        let waiting = !st.queue.is_empty();
        drop(st);
        if waiting {
            self.kick();
        } else {
            self.shared.work.notify_one();
        }
    }
}

impl Shared {
    /// Hands the host what it takes of the queue without blocking.
    fn drain(&self, st: &mut State) -> Result<(), Errno> {
        if let Some(e) = st.failed {
            return Err(e);
        }
        while !st.queue.is_empty() {
            let ready = host::fd::poll_now(self.fd.as_fd(), libc::POLLOUT)
                .map(|r| r & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0);
            let n = st.queue.len().min(self.chunk);
            let written = match ready {
                Ok(true) => host::fd::write(self.fd.as_fd(), &st.queue[..n]),
                Ok(false) => return Ok(()),
                Err(e) => Err(e),
            };
            match written {
                Ok(w) => drop(st.queue.drain(..w)),
                Err(Errno::EAGAIN | Errno::EINTR) => return Ok(()),
                Err(e) => {
                    st.failed = Some(e);
                    st.queue.clear();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Waits until the host has room or fails (the lock released
    /// meanwhile). Nothing else need end the wait: writes only add to
    /// the queue it is about to drain.
    fn wait_room(&self, st: &mut MutexGuard<'_, State>) {
        MutexGuard::unlocked(st, || {
            let _ = host::fd::poll_for(self.fd.as_fd(), libc::POLLOUT, -1);
        });
    }

    /// Moves output on while the guest does not write: queued bytes when
    /// the host has room, held ones after an idle spell. Ends when the
    /// stream is closed and everything is out (or the host failed).
    fn flusher(self: Arc<Self>) {
        let mut st = self.state.lock();
        loop {
            if st.failed.is_some() {
                return;
            }
            if !st.queue.is_empty() {
                self.wait_room(&mut st);
                let _ = self.drain(&mut st);
            } else if st.stream.holding() {
                let due = st.last_input.checked_add(IDLE_FLUSH).unwrap_or_else(Instant::now);
                if Instant::now() >= due {
                    st.queue = st.stream.flush();
                } else {
                    self.work.wait_until(&mut st, due);
                }
            } else if st.closed {
                return;
            } else {
                st.flusher_idle = true;
                self.work.wait(&mut st);
                st.flusher_idle = false;
            }
        }
    }

    /// Sends everything held or queued, waiting for the host to take it
    /// as a guest write would (until it does, or fails: its reader gone).
    fn finish(&self) {
        let mut st = self.state.lock();
        let rest = st.stream.flush();
        st.queue.extend_from_slice(&rest);
        while !st.queue.is_empty() && self.drain(&mut st).is_ok() && !st.queue.is_empty() {
            self.wait_room(&mut st);
        }
    }
}

/// At the sandbox's end: every redacted stream's remaining output goes
/// to the host, which the sandbox waits for as its last writer would have.
pub(crate) fn flush_all() {
    let all: Vec<Arc<Shared>> = OUTPUTS.lock().iter().filter_map(Weak::upgrade).collect();
    for s in all {
        s.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::redact::{Redactor, Secret};
    use std::io::Read;

    fn pipe() -> (std::fs::File, Arc<OwnedFd>) {
        let (r, w) = nix::unistd::pipe().unwrap();
        (std::fs::File::from(r), Arc::new(w))
    }

    fn stream() -> RedactStream {
        let s = [Secret { name: "K".into(), value: b"0123456789abcdef".to_vec() }];
        RedactStream::new(Arc::new(Redactor::new(&s).unwrap().unwrap()))
    }

    #[test]
    fn output_is_redacted_across_writes_and_flushed_on_close() {
        let (mut r, w) = pipe();
        let out = RedactedOutput::new(w, libc::PIPE_BUF, stream());
        assert_eq!(out.write(b"key=01234567").unwrap(), 12);
        assert_eq!(out.write(b"89abcdef\nprompt 0123").unwrap(), 20);
        drop(out);
        let mut got = String::new();
        r.read_to_string(&mut got).unwrap();
        assert_eq!(got, "key=[REDACTED:K]\nprompt 0123");
    }

    #[test]
    fn held_bytes_go_out_after_an_idle_spell() {
        let (mut r, w) = pipe();
        let out = RedactedOutput::new(w, libc::PIPE_BUF, stream());
        out.write(b"$ 0123").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(r.read(&mut buf).unwrap(), 2);
        let start = Instant::now();
        assert_eq!(r.read(&mut buf).unwrap(), 4, "the held tail");
        assert_eq!(&buf[..4], b"0123");
        assert!(start.elapsed() >= IDLE_FLUSH / 2, "{:?}", start.elapsed());
        drop(out);
    }
}
