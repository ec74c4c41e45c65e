//! A line of the log, spelled out by hand: the envelope (`ts`,
//! `sandbox`, `seq`, `prev`) and the records written by the thousand
//! (`file.*` of one path) without building them through serde, whose
//! generic path (a flattened map, every string escaped byte by byte) cost
//! more than the rest of a record. The bytes are exactly those serde_json
//! writes for the envelope with the record flattened into it (the tests
//! compare them); any other record's fields are serde_json's own.

use super::record::Record;

/// Appends `s` as a JSON string, escaped as serde_json escapes: `"`,
/// `\` and the control characters below U+0020 (`\b \f \n \r \t`, the
/// rest `\u00XX`); everything else, non-ASCII included, as it is.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escape);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends `n` in decimal.
pub fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Appends `n` in decimal, with its sign.
fn push_i32(out: &mut Vec<u8>, n: i32) {
    if n < 0 {
        out.push(b'-');
    }
    push_u64(out, u64::from(n.unsigned_abs()));
}

/// Appends the fields of `record` (`"type":…` and the rest, as in its
/// serde form without the braces), spelled by hand for the `file.*`
/// records of one path, by serde_json for the others.
pub fn push_record(out: &mut Vec<u8>, record: &Record) -> Result<(), serde_json::Error> {
    let (kind, pid, path) = match record {
        Record::FileCreate { pid, path } => ("file.create", pid, path),
        Record::FileUnlink { pid, path } => ("file.unlink", pid, path),
        Record::FileWrite { pid, path } => ("file.write", pid, path),
        Record::FileRead { pid, path, via: None } => ("file.read", pid, path),
        _ => {
            let from = out.len();
            serde_json::to_writer(&mut *out, record)?;
            // `{FIELDS}` → `FIELDS`: a record always has its `type`.
            out.remove(from);
            out.pop();
            return Ok(());
        }
    };
    out.extend_from_slice(b"\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"pid\":");
    push_i32(out, *pid);
    out.extend_from_slice(b",\"path\":");
    push_str(out, path);
    Ok(())
}

/// Appends a whole line (without its newline): the envelope around
/// `record`. `sandbox` is the sandbox's id already as a JSON string
/// (`push_str`), `ts` its time stamp's text, `prev` the hex hash.
pub fn push_line(
    out: &mut Vec<u8>,
    ts: impl FnOnce(&mut Vec<u8>),
    sandbox: &[u8],
    seq: u64,
    record: &Record,
    prev: &[u8],
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(b"{\"ts\":\"");
    ts(out);
    out.extend_from_slice(b"\",\"sandbox\":");
    out.extend_from_slice(sandbox);
    out.extend_from_slice(b",\"seq\":");
    push_u64(out, seq);
    out.push(b',');
    push_record(out, record)?;
    out.extend_from_slice(b",\"prev\":\"");
    out.extend_from_slice(prev);
    out.extend_from_slice(b"\"}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{ExitReason, Outcome, SecurityConfig};
    use serde::Serialize;

    /// The envelope as serde_json writes it, the record flattened in.
    #[derive(Serialize)]
    struct Line<'a> {
        ts: &'a str,
        sandbox: &'a str,
        seq: u64,
        #[serde(flatten)]
        record: &'a Record,
        prev: &'a str,
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é/ü\u{2028}\u{7f}\u{fffd}日本");
        for s in [all.as_str(), "", "plain", "\"\\", "a\nb"] {
            let mut out = Vec::new();
            push_str(&mut out, s);
            assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn lines_are_the_bytes_serde_json_writes() {
        let odd = "/tmp/a \"q\" \\ \n\u{1}é".to_string();
        let records = [
            Record::FileCreate { pid: 7, path: odd.clone() },
            Record::FileUnlink { pid: -1, path: "/etc/x".into() },
            Record::FileUnlink { pid: i32::MIN, path: "/".into() },
            Record::FileWrite { pid: 2_000_000, path: odd.clone() },
            Record::FileRead { pid: 1, path: "/run/secrets/k".into(), via: None },
            Record::FileRead { pid: 1, path: "/tmp/k".into(), via: Some("/run/secrets/k".into()) },
            Record::FileChmod { pid: 1, path: odd, mode: 0o4755 },
            Record::ProcessExit { pid: 3, outcome: Outcome::Signal(9) },
            Record::SandboxStart {},
            Record::SandboxExit { reason: ExitReason::Exited, outcome: None, error: None, closed_by: None },
            Record::SandboxCreate { nonce: "n".into(), config: SecurityConfig::default() },
        ];
        let (ts, sandbox, prev) = ("2026-01-02T03:04:05.000000006Z", "sb \"1\"", "ab".repeat(32));
        for (seq, record) in records.iter().enumerate() {
            let seq = if seq == 1 { u64::MAX } else { seq as u64 * 1_000_003 };
            let want = serde_json::to_vec(&Line { ts, sandbox, seq, record, prev: &prev }).unwrap();
            let mut quoted = Vec::new();
            push_str(&mut quoted, sandbox);
            let mut got = Vec::new();
            push_line(&mut got, |o| o.extend_from_slice(ts.as_bytes()), &quoted, seq, record, prev.as_bytes()).unwrap();
            assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
        }
    }
}
