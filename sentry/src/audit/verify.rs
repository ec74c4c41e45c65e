//! Checking a log (`husk audit verify`): every line a JSON record of the
//! same sandbox, `seq` from 0 without gaps, each `prev` the hash of the
//! line before (the first's, of its nonce), and the last record
//! `sandbox.exit`, or `sandbox.delete` right after it (the runtime
//! appends that when the container is deleted). The first bad record is
//! named with what is wrong.
//!
//! The chain protects every record but the newest: the last line can be
//! rewritten without breaking anything after it. The summary therefore
//! prints the head hash, for comparison with a copy kept elsewhere.

use super::writer::sha256_hex;
use serde_json::Value;

/// An intact log.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub records: usize,
    pub sandbox: String,
    pub first_ts: String,
    pub last_ts: String,
    /// The exit record's fields, as text (`exited, status 0`), and the
    /// delete record's reason after `; ` when one follows.
    pub exit: String,
    /// The log ends with `sandbox.delete`.
    pub deleted: bool,
    /// The hex SHA-256 of the last line.
    pub head: String,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "intact: {} records of sandbox {} from {} to {}, closed ({}); head {}",
            self.records, self.sandbox, self.first_ts, self.last_ts, self.exit, self.head
        )
    }
}

/// The first bad record: its line (from 1), its `seq` when it has one,
/// and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct Defect {
    pub line: usize,
    pub seq: Option<u64>,
    pub what: String,
}

impl std::fmt::Display for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.seq {
            Some(s) => write!(f, "line {} (seq {s}): {}", self.line, self.what),
            None => write!(f, "line {}: {}", self.line, self.what),
        }
    }
}

/// The envelope fields every record has.
struct Envelope<'a> {
    seq: u64,
    sandbox: &'a str,
    ts: &'a str,
    kind: &'a str,
    prev: &'a str,
}

fn envelope(v: &Value) -> Result<Envelope<'_>, String> {
    let text = |k: &str| v.get(k).and_then(Value::as_str).ok_or_else(|| format!("edited: no text field `{k}`"));
    Ok(Envelope {
        seq: v.get("seq").and_then(Value::as_u64).ok_or("edited: no number field `seq`")?,
        sandbox: text("sandbox")?,
        ts: text("ts")?,
        kind: text("type")?,
        prev: text("prev")?,
    })
}

/// Hex digits at which `a` and `b` differ (all of them when their
/// lengths differ).
fn distance(a: &str, b: &str) -> usize {
    if a.len() != b.len() {
        return a.len().max(b.len());
    }
    a.bytes().zip(b.bytes()).filter(|(x, y)| x != y).count()
}

/// Differences in `prev` up to which the field itself is taken to be the
/// edited part (a hash of other bytes differs in about 60 of 64 digits).
const EDITED_PREV: usize = 8;

/// Checks `data`, a whole log.
pub fn verify(data: &[u8]) -> Result<Summary, Defect> {
    let complete = data.last() == Some(&b'\n');
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if complete || data.is_empty() {
        lines.pop();
    }
    if lines.is_empty() {
        return Err(Defect { line: 1, seq: None, what: "empty: no sandbox.create record".into() });
    }
    let seqs: Vec<Option<u64>> = lines
        .iter()
        .map(|l| serde_json::from_slice::<Value>(l).ok().and_then(|v| v.get("seq").and_then(Value::as_u64)))
        .collect();
    let mut sandbox = String::new();
    let mut first_ts = String::new();
    for (i, raw) in lines.iter().enumerate() {
        let line = i + 1;
        let bad = |seq: Option<u64>, what: String| Defect { line, seq, what };
        if i + 1 == lines.len() && !complete {
            return Err(bad(seqs[i], "cut: the last line is incomplete (the log was truncated)".into()));
        }
        let v: Value =
            serde_json::from_slice(raw).map_err(|e| bad(None, format!("edited: not a JSON record ({e})")))?;
        let env = envelope(&v).map_err(|what| bad(seqs[i], what))?;
        let expected = u64::try_from(i).unwrap_or(u64::MAX);
        let seq = Some(env.seq);
        if env.seq != expected {
            let what = if let Some(at) = seqs.iter().position(|&s| s == Some(expected)) {
                format!("reordered: seq {expected} was expected here; it is at line {}", at + 1)
            } else if env.seq > expected {
                format!("missing: seq {expected} to {} are not in the log (deleted)", env.seq - 1)
            } else {
                format!("reordered: seq {} again after seq {}", env.seq, expected.saturating_sub(1))
            };
            return Err(bad(seq, what));
        }
        if i == 0 {
            if env.kind != "sandbox.create" {
                return Err(bad(seq, format!("edited: the first record is {}, not sandbox.create", env.kind)));
            }
            let nonce = v.get("nonce").and_then(Value::as_str).ok_or_else(|| bad(seq, "edited: no nonce".into()))?;
            if env.prev != sha256_hex(nonce.as_bytes()) {
                return Err(bad(seq, "edited: its prev is not the hash of its nonce".into()));
            }
            sandbox = env.sandbox.to_string();
            first_ts = env.ts.to_string();
            continue;
        }
        let before = sha256_hex(lines[i - 1]);
        if env.prev != before {
            if distance(env.prev, &before) <= EDITED_PREV {
                return Err(bad(seq, "edited: its prev field was changed".into()));
            }
            return Err(Defect {
                line: i,
                seq: seqs[i - 1],
                what: "edited: its bytes do not hash to the next record's prev".into(),
            });
        }
        if env.sandbox != sandbox {
            return Err(bad(seq, format!("edited: sandbox {:?}, not {sandbox:?}", env.sandbox)));
        }
    }
    let parse = |raw: &[u8]| serde_json::from_slice::<Value>(raw).unwrap_or_default();
    let last_raw = lines.last().copied().unwrap_or_default();
    let last = parse(last_raw);
    let env = envelope(&last).map_err(|what| Defect { line: lines.len(), seq: None, what })?;
    // A deleted container's log: its sandbox.exit is the line before.
    let deleted = env.kind == "sandbox.delete";
    let exit_at = if deleted { lines.len() - 1 } else { lines.len() };
    let exit_record = if deleted && exit_at > 0 { parse(lines[exit_at - 1]) } else { last.clone() };
    let exit_kind = exit_record.get("type").and_then(Value::as_str).unwrap_or("?");
    if exit_kind != "sandbox.exit" {
        let what = if deleted {
            format!("edited: sandbox.delete follows {exit_kind}, not sandbox.exit")
        } else {
            format!(
                "open: the log ends with {}, not sandbox.exit or sandbox.delete (truncated, or the sandbox still runs)",
                env.kind
            )
        };
        return Err(Defect { line: lines.len(), seq: Some(env.seq), what });
    }
    let mut exit = exit_record.get("reason").and_then(Value::as_str).unwrap_or("?").to_string();
    for k in ["status", "signal"] {
        if let Some(n) = exit_record.get(k) {
            exit.push_str(&format!(", {k} {n}"));
        }
    }
    if deleted {
        exit.push_str("; ");
        exit.push_str(last.get("reason").and_then(Value::as_str).unwrap_or("?"));
    }
    Ok(Summary {
        records: lines.len(),
        sandbox,
        first_ts,
        last_ts: env.ts.to_string(),
        exit,
        deleted,
        head: sha256_hex(last_raw),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::writer::tests::sample;

    fn lines(log: &[u8]) -> Vec<Vec<u8>> {
        log.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec).collect()
    }

    fn join(lines: &[Vec<u8>]) -> Vec<u8> {
        lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect()
    }

    /// The byte offset where the last line starts.
    fn last_start(log: &[u8]) -> usize {
        log[..log.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
    }

    #[test]
    fn an_intact_log_verifies() {
        let log = sample();
        let s = verify(&log).unwrap();
        assert_eq!((s.records, s.sandbox.as_str(), s.exit.as_str()), (6, "sb1", "exited, status 0"));
        assert!(s.to_string().starts_with("intact: 6 records of sandbox sb1"), "{s}");
    }

    #[test]
    fn flipping_any_byte_before_the_last_line_names_that_record() {
        let log = sample();
        for at in 0..last_start(&log) {
            let line = log[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            for bit in [0x01u8, 0x20, 0x80] {
                let mut bad = log.clone();
                bad[at] ^= bit;
                let d = verify(&bad).expect_err("a flipped byte must not verify");
                // A flipped newline joins two lines into the first.
                assert_eq!(d.line, line, "byte {at} ^ {bit:#x}: {d}");
                assert!(
                    d.what.starts_with("edited") || d.what.starts_with("reordered") || d.what.starts_with("missing"),
                    "{d}"
                );
            }
        }
    }

    #[test]
    fn flipping_a_byte_of_the_last_line_fails_or_changes_the_head() {
        let log = sample();
        let head = verify(&log).unwrap().head;
        for at in last_start(&log)..log.len() {
            let mut bad = log.clone();
            bad[at] ^= 0x01;
            if let Ok(s) = verify(&bad) {
                assert_ne!(s.head, head, "byte {at}");
            }
        }
    }

    #[test]
    fn deleting_a_line_names_the_record_after_the_gap() {
        let all = lines(&sample());
        for gone in 0..all.len() - 1 {
            let mut l = all.clone();
            l.remove(gone);
            let d = verify(&join(&l)).unwrap_err();
            assert_eq!((d.line, d.seq), (gone + 1, Some(u64::try_from(gone).unwrap() + 1)), "{d}");
            assert!(d.what.starts_with("missing"), "{d}");
        }
    }

    #[test]
    fn swapping_two_lines_names_the_first_out_of_order() {
        let all = lines(&sample());
        for a in 0..all.len() - 1 {
            let mut l = all.clone();
            l.swap(a, a + 1);
            let d = verify(&join(&l)).unwrap_err();
            assert_eq!((d.line, d.seq), (a + 1, Some(u64::try_from(a).unwrap() + 1)), "{d}");
            assert!(d.what.starts_with("reordered"), "{d}");
        }
    }

    /// `sample` with a `sandbox.delete` chained after its exit.
    fn deleted_sample() -> Vec<u8> {
        let mut log = sample();
        let last = &log[last_start(&log)..log.len() - 1];
        let v: Value = serde_json::from_slice(last).unwrap();
        let line = format!(
            r#"{{"ts":"2026-01-01T00:00:00.000000000Z","sandbox":"sb1","seq":{},"type":"sandbox.delete","reason":"deleted","force":false,"closed_by":"runtime","prev":"{}"}}"#,
            v["seq"].as_u64().unwrap() + 1,
            sha256_hex(last)
        );
        log.extend_from_slice(line.as_bytes());
        log.push(b'\n');
        log
    }

    #[test]
    fn a_delete_after_the_exit_closes_the_log() {
        let log = deleted_sample();
        let s = verify(&log).unwrap();
        assert_eq!((s.records, s.deleted, s.exit.as_str()), (7, true, "exited, status 0; deleted"));
        // Without its delete line it is the log of an exited sandbox: the
        // head names which one was kept.
        let cut = verify(&log[..last_start(&log)]).unwrap();
        assert_eq!((cut.records, cut.deleted), (6, false));
        assert_ne!(cut.head, s.head);
        // A delete in place of the exit (the exit line deleted and the
        // chain remade) does not close it.
        let all = lines(&log);
        let mut no_exit = all[..all.len() - 2].to_vec();
        let prev = sha256_hex(no_exit.last().unwrap());
        let delete = String::from_utf8(all[all.len() - 1].clone()).unwrap();
        let delete = delete.replace(r#""seq":6"#, r#""seq":5"#);
        let at = delete.find(r#""prev":""#).unwrap() + 8;
        no_exit.push(format!("{}{prev}\"}}", &delete[..at]).into_bytes());
        let d = verify(&join(&no_exit)).unwrap_err();
        assert_eq!((d.line, d.seq), (6, Some(5)), "{d}");
        assert!(d.what.contains("sandbox.delete follows process.exit"), "{d}");
    }

    #[test]
    fn cutting_the_tail_says_the_log_is_open_or_cut() {
        let log = sample();
        let all = lines(&log);
        for keep in 1..all.len() {
            let d = verify(&join(&all[..keep])).unwrap_err();
            assert_eq!((d.line, d.seq), (keep, Some(u64::try_from(keep).unwrap() - 1)), "{d}");
            assert!(d.what.starts_with("open"), "{d}");
        }
        let d = verify(&log[..log.len() - 10]).unwrap_err();
        assert_eq!((d.line, d.seq), (all.len(), None));
        assert!(d.what.starts_with("cut"), "{d}");
        assert!(verify(b"").unwrap_err().what.starts_with("empty"));
    }
}
