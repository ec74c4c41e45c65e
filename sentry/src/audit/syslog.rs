//! `--audit-syslog`: every record of the log, also sent as an RFC 5424
//! message to a unix datagram socket (the runtime connects it; the
//! sentry writes one datagram per record, as batches reach the log).
//! Facility 13 (log audit), severity 6 (informational); the timestamp is
//! the record's `ts`, the APP-NAME `husk`, the PROCID the sandbox's id,
//! the MSGID the record's type and the MSG the record's line, whose hash
//! chain it keeps.
//!
//! The socket is a best-effort copy; the log is the authoritative record.
//! It is written without blocking, under the log's lock on a guest's
//! syscall thread: a reader that stopped, a full queue or a gone reader
//! drops the message (counted and warned about), and a line longer than
//! [`MAX_MESSAGE`] is cut with [`TRUNCATED`]. Nothing the socket does
//! fails the log or stops the sandbox.

use super::writer::Sink;
use std::io::Write;

/// `<PRI>` of facility 13 (log audit) and severity 6 (informational).
const PRI: u32 = 13 * 8 + 6;

/// The longest message sent: well under the 64 KiB a datagram socket
/// takes by default, so no record meets EMSGSIZE.
pub(crate) const MAX_MESSAGE: usize = 60 * 1024;

/// What ends a message cut to [`MAX_MESSAGE`] (its line then no longer
/// parses or verifies: the log has it whole).
pub(crate) const TRUNCATED: &[u8] = b" [husk: truncated]";

/// The RFC 5424 message of the log line `line` (without its newline) of
/// sandbox `sandbox`.
pub(crate) fn message(line: &[u8], sandbox: &str) -> Vec<u8> {
    let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_default();
    // PRINTUSASCII without spaces, at most `max` of them, or NILVALUE.
    let field = |s: Option<&str>, max: usize| -> String {
        let s: String = s.unwrap_or_default().chars().filter(|c| c.is_ascii_graphic()).take(max).collect();
        if s.is_empty() {
            "-".into()
        } else {
            s
        }
    };
    let ts = field(v["ts"].as_str(), 64);
    let procid = field(Some(sandbox), 128);
    let msgid = field(v["type"].as_str(), 32);
    let mut out = format!("<{PRI}>1 {ts} - husk {procid} {msgid} - ").into_bytes();
    out.extend_from_slice(line);
    if out.len() > MAX_MESSAGE {
        out.truncate(MAX_MESSAGE - TRUNCATED.len());
        out.extend_from_slice(TRUNCATED);
    }
    out
}

/// A sink of records both to the log and to a syslog socket.
pub(crate) struct Tee {
    log: Box<dyn Sink>,
    socket: std::fs::File,
    sandbox: String,
    /// Messages the socket did not take.
    dropped: u64,
}

impl Tee {
    /// Tees `log` to `socket`, which it makes non-blocking (an error: it
    /// could not, and the socket could stall the guest).
    pub(crate) fn new(log: Box<dyn Sink>, socket: std::os::fd::OwnedFd, sandbox: &str) -> std::io::Result<Tee> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        use std::os::fd::AsRawFd;
        let fd = socket.as_raw_fd();
        let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
        fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        Ok(Tee { log, socket: socket.into(), sandbox: sandbox.to_string(), dropped: 0 })
    }

    /// How many messages were dropped so far.
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl Sink for Tee {
    fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        self.log.append(lines)?;
        for text in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            // One write: one datagram; never waits.
            let sent = match self.socket.write(&message(text, &self.sandbox)) {
                Ok(0) => Err(std::io::Error::from_raw_os_error(libc::EIO)),
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                self.dropped += 1;
                // The first drop and then every power of two: a stalled
                // reader does not flood the sentry's log.
                if self.dropped.is_power_of_two() {
                    log::warn!("audit syslog: {} message(s) dropped, the log keeps them ({e})", self.dropped);
                }
            }
        }
        Ok(())
    }

    fn sync(&mut self) -> std::io::Result<()> {
        self.log.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_becomes_an_rfc5424_message() {
        let line = br#"{"ts":"2026-01-02T03:04:05.000000006Z","sandbox":"sb","seq":3,"type":"process.exit","pid":2,"status":0,"prev":"ab"}"#;
        let m = String::from_utf8(message(line, "do-1 2")).unwrap();
        assert_eq!(
            m,
            format!(
                "<110>1 2026-01-02T03:04:05.000000006Z - husk do-12 process.exit - {}",
                std::str::from_utf8(line).unwrap()
            )
        );
        assert!(String::from_utf8(message(b"garbage", "")).unwrap().starts_with("<110>1 - - husk - - - garbage"));
    }

    /// A tee of a memory log to one end of a fresh datagram pair.
    fn tee() -> (Tee, crate::audit::writer::tests::Memory, std::os::unix::net::UnixDatagram) {
        let (ours, theirs) = std::os::unix::net::UnixDatagram::pair().unwrap();
        let log = crate::audit::writer::tests::Memory::default();
        (Tee::new(Box::new(log.clone()), ours.into(), "sb").unwrap(), log, theirs)
    }

    #[test]
    fn a_huge_record_is_cut_for_the_socket_and_kept_whole_in_the_log() {
        let (mut tee, log, reader) = tee();
        let line = format!("{{\"type\":\"process.exec\",\"argv\":[\"{}\"]}}\n", "a".repeat(300 * 1024));
        tee.append(line.as_bytes()).unwrap();
        assert_eq!(*log.bytes.lock(), line.as_bytes());
        let mut buf = vec![0u8; 1 << 20];
        let n = reader.recv(&mut buf).unwrap();
        assert_eq!(n, MAX_MESSAGE);
        assert!(buf[..n].starts_with(b"<110>1 - - husk sb process.exec - {\"type\""));
        assert!(buf[..n].ends_with(TRUNCATED));
        assert_eq!(tee.dropped(), 0);
    }

    #[test]
    fn a_reader_that_stopped_or_left_drops_messages_without_blocking_or_failing() {
        let (mut tee, log, reader) = tee();
        let line = format!("{{\"type\":\"file.write\",\"path\":\"/{}\"}}\n", "p".repeat(4096));
        // Nobody reads: the socket's queue fills, and the writes after it
        // return at once (a blocking write would hang this test).
        for _ in 0..1000 {
            tee.append(line.as_bytes()).unwrap();
        }
        let queued = tee.dropped();
        assert!(queued > 0 && queued < 1000, "{queued}");
        drop(reader);
        tee.append(line.as_bytes()).unwrap();
        assert_eq!(tee.dropped(), queued + 1);
        assert_eq!(log.bytes.lock().len(), 1001 * line.len(), "the log has every record");
    }
}
