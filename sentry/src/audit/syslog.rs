//! `--audit-syslog`: every record of the log, also sent as an RFC 5424
//! message to a unix datagram socket (the runtime connects it; the
//! sentry writes one datagram per record). Facility 13 (log audit),
//! severity 6 (informational); the timestamp is the record's `ts`, the
//! APP-NAME `husk`, the PROCID the sandbox's id, the MSGID the record's
//! type and the MSG the record's line, whose hash chain it keeps.

use super::writer::Sink;
use std::io::Write;

/// `<PRI>` of facility 13 (log audit) and severity 6 (informational).
const PRI: u32 = 13 * 8 + 6;

/// The RFC 5424 message of the log line `line` (without its newline) of
/// sandbox `sandbox`.
pub fn message(line: &[u8], sandbox: &str) -> Vec<u8> {
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
    out
}

/// A sink of records both to the log and to a syslog socket.
pub struct Tee {
    log: Box<dyn Sink>,
    socket: std::fs::File,
    sandbox: String,
}

impl Tee {
    pub fn new(log: Box<dyn Sink>, socket: std::os::fd::OwnedFd, sandbox: &str) -> Tee {
        Tee { log, socket: socket.into(), sandbox: sandbox.to_string() }
    }
}

impl Sink for Tee {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.log.append(line)?;
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        // One write: one datagram.
        let n = self.socket.write(&message(text, &self.sandbox))?;
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
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
}
