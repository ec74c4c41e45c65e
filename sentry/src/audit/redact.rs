//! Redaction of secret values (ARCHITECTURE.md §8): every value passed
//! with `--secret`, and the usual spellings of it, is replaced by
//! `[REDACTED:NAME]` in what leaves the sandbox for the runtime's
//! consumer — the guest's output on host descriptors and consoles, the
//! debug log and `--strace`, and every audit record. The guest itself
//! reads the real value from /run/secrets: redaction is only on the way
//! out.
//!
//! The spellings matched, besides the raw bytes: lower- and upper-case
//! hex; standard and URL-safe base64 at each of the three alignments the
//! value can start at in encoded data (the characters that depend on the
//! value's bits alone, so padding and the neighbouring bytes do not
//! matter, with or without `=`); percent-encoding of every byte and of
//! the reserved bytes only, with upper- and lower-case digits; and its
//! JSON string escaping (the audit log's; for a value that is not UTF-8,
//! of its text with U+FFFD for the bad bytes, as records carry it). A
//! guest that transforms the value any other way (reverses it, splits it
//! with pauses longer than the idle flush) is not caught: this is a guard
//! against accidental leaks through logs and output, not a barrier
//! against a guest that means to exfiltrate what it was given.
//!
//! Matching uses one Aho-Corasick automaton over all spellings, leftmost
//! longest, so overlapping values redact the longest one. Its cost grows
//! with the length of the data, not with what matches, so the time a
//! write takes tells nothing about a value.

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The shortest value accepted (trailing whitespace aside): shorter ones
/// (and their encodings) would match ordinary output far too often.
pub(crate) const MIN_SECRET_LEN: usize = 8;

/// How long a stream may hold back the start of a possible match while
/// no more output comes: after that the held bytes go out as they are.
///
/// The trade-off: a value split across two writes further apart than
/// this leaves unredacted, while interactive output (a prompt ending in
/// bytes that begin some spelling) waits at most this long. Output that
/// cannot begin a match (a line ending in a newline, in practice) is
/// never held at all.
pub(crate) const IDLE_FLUSH: Duration = Duration::from_millis(200);

/// A secret's name and value, as the redactor knows it.
#[derive(Clone)]
pub struct Secret {
    pub name: String,
    pub value: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    /// The name only: a value must never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The automaton over every spelling of every value.
pub struct Redactor {
    ac: AhoCorasick,
    /// The replacement of each pattern, by pattern id.
    tags: Vec<Vec<u8>>,
    /// The patterns, sorted, to tell whether a tail may begin one.
    sorted: Vec<Vec<u8>>,
    /// Whether some pattern begins with the byte.
    first: [bool; 256],
    /// The longest pattern's length less one: the most a stream holds.
    hold: usize,
}

impl Redactor {
    /// A redactor for `secrets`; None when there is nothing to redact.
    pub fn new(secrets: &[Secret]) -> Result<Option<Redactor>, String> {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut tags = Vec::new();
        for s in secrets {
            if s.value.trim_ascii_end().len() < MIN_SECRET_LEN {
                return Err(format!("secret {}: shorter than {MIN_SECRET_LEN} bytes", s.name));
            }
            let tag = format!("[REDACTED:{}]", s.name).into_bytes();
            // A file's value often ends in a newline its users drop
            // (`$(cat FILE)`): the value without it is redacted too.
            let trimmed = s.value.trim_ascii_end();
            let forms = std::iter::once(s.value.as_slice()).chain((trimmed.len() != s.value.len()).then_some(trimmed));
            for p in forms.flat_map(spellings) {
                // A value shared by two names redacts as the first.
                if !p.is_empty() && !patterns.contains(&p) {
                    patterns.push(p);
                    tags.push(tag.clone());
                }
            }
        }
        if patterns.is_empty() {
            return Ok(None);
        }
        // A DFA without a prefilter: guest output is often high-entropy
        // text (base64, hex) where rare-byte prefilters only add work.
        let ac = AhoCorasick::builder()
            .kind(Some(AhoCorasickKind::DFA))
            .prefilter(false)
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|e| e.to_string())?;
        let mut first = [false; 256];
        for p in &patterns {
            if let Some(&b) = p.first() {
                first[usize::from(b)] = true;
            }
        }
        let hold = patterns.iter().map(Vec::len).max().unwrap_or(1).saturating_sub(1);
        let mut sorted = patterns;
        sorted.sort_unstable();
        Ok(Some(Redactor { ac, tags, sorted, first, hold }))
    }

    /// `data` with every match replaced (a whole message: nothing follows).
    pub fn redact<'a>(&self, data: &'a [u8]) -> Cow<'a, [u8]> {
        if self.ac.find(data).is_none() {
            return Cow::Borrowed(data);
        }
        let mut out = Vec::with_capacity(data.len());
        let end = self.replace(data, usize::MAX, &mut out);
        out.extend_from_slice(&data[end..]);
        Cow::Owned(out)
    }

    /// Appends `data` to `out` with the matches that start before `cut`
    /// replaced, up to the end of the last of them; returns where it
    /// stopped.
    fn replace(&self, data: &[u8], cut: usize, out: &mut Vec<u8>) -> usize {
        let mut pos = 0;
        for m in self.ac.find_iter(data) {
            if m.start() >= cut {
                break;
            }
            out.extend_from_slice(&data[pos..m.start()]);
            out.extend_from_slice(&self.tags[m.pattern().as_usize()]);
            pos = m.end();
        }
        pos
    }

    /// Whether `tail` is the beginning of a pattern longer than it: a
    /// match there is decided only by what follows.
    fn unfinished(&self, tail: &[u8]) -> bool {
        let Some(&b) = tail.first() else { return false };
        if !self.first[usize::from(b)] {
            return false;
        }
        // Patterns beginning with `tail` sort right at or after it.
        let i = self.sorted.partition_point(|p| p.as_slice() < tail);
        self.sorted[i..].iter().take(2).any(|p| p.len() > tail.len() && p.starts_with(tail))
    }

    /// Where the first unfinished tail of `buf` begins (its length if none).
    fn undecided_from(&self, buf: &[u8], from: usize) -> usize {
        let start = from.max(buf.len().saturating_sub(self.hold));
        (start..buf.len()).find(|&i| self.unfinished(&buf[i..])).unwrap_or(buf.len())
    }
}

/// One output stream's redaction: what it has passed on, less the tail
/// that may still turn out to begin a value.
pub(crate) struct RedactStream {
    redactor: Arc<Redactor>,
    /// Bytes held back: at most the longest pattern less one, and only
    /// while they begin a longer pattern.
    carry: Vec<u8>,
}

impl RedactStream {
    pub(crate) fn new(redactor: Arc<Redactor>) -> RedactStream {
        RedactStream { redactor, carry: Vec::new() }
    }

    /// Takes `input`; returns what may go out now, redacted. Bytes are
    /// held back only while they begin a longer pattern; every match
    /// before them is decided by what was seen, so a value split across
    /// calls is caught as if it came in one.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Vec<u8> {
        let r = &self.redactor;
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(input);
        let mut out = Vec::with_capacity(buf.len());
        let mut start = 0;
        loop {
            let cut = r.undecided_from(&buf, start);
            let pos = start + r.replace(&buf[start..], cut - start, &mut out);
            if pos <= cut {
                out.extend_from_slice(&buf[pos..cut]);
                self.carry = buf.split_off(cut);
                return out;
            }
            // A match ran past the cut: what follows it is looked at anew.
            start = pos;
        }
    }

    /// Ends the stream (or an idle spell): what was held, redacted as if
    /// nothing followed.
    pub(crate) fn flush(&mut self) -> Vec<u8> {
        let carry = std::mem::take(&mut self.carry);
        self.redactor.redact(&carry).into_owned()
    }

    /// Whether bytes are held back.
    pub(crate) fn holding(&self) -> bool {
        !self.carry.is_empty()
    }
}

/// The sandbox's redactor, installed once at boot when it has secrets.
static GLOBAL: OnceLock<Arc<Redactor>> = OnceLock::new();

/// Installs the process's redactor (the first call wins).
pub fn install(r: Redactor) {
    let _ = GLOBAL.set(Arc::new(r));
}

/// The process's redactor, if it has secrets.
pub(crate) fn global() -> Option<&'static Arc<Redactor>> {
    GLOBAL.get()
}

/// `data` redacted by the process's redactor.
pub(crate) fn redact_bytes(data: &[u8]) -> Cow<'_, [u8]> {
    match global() {
        Some(r) => r.redact(data),
        None => Cow::Borrowed(data),
    }
}

/// `text` redacted by the process's redactor (a replacement is ASCII, so
/// text stays text).
pub fn redact_text(text: &str) -> Cow<'_, str> {
    match redact_bytes(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
    }
}

/// A stream for one output of the process's redactor, if it has one.
pub(crate) fn stream() -> Option<RedactStream> {
    global().map(|r| RedactStream::new(r.clone()))
}

const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const B64_STD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Every spelling of `v` that is matched.
fn spellings(v: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![v.to_vec(), hex(v, HEX_LOWER), hex(v, HEX_UPPER)];
    for alphabet in [B64_STD, B64_URL] {
        for k in 0..3 {
            out.push(base64_middle(v, k, alphabet));
        }
    }
    for digits in [HEX_LOWER, HEX_UPPER] {
        out.push(percent(v, digits, |_| true));
        out.push(percent(v, digits, |b| !(b.is_ascii_alphanumeric() || b"-._~".contains(&b))));
    }
    // Audit records are JSON text: a value that is not UTF-8 appears there
    // with U+FFFD for its bad bytes, so that form and its escaping count.
    let text = String::from_utf8_lossy(v);
    if text.as_bytes() != v {
        out.push(text.as_bytes().to_vec());
    }
    if let Ok(json) = serde_json::to_string(&text) {
        out.push(json.as_bytes()[1..json.len().saturating_sub(1)].to_vec());
    }
    out
}

fn hex(v: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    v.iter().flat_map(|&b| [digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]).collect()
}

fn percent(v: &[u8], digits: &[u8; 16], encode: impl Fn(u8) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 3);
    for &b in v {
        if encode(b) {
            out.extend_from_slice(&[b'%', digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]);
        } else {
            out.push(b);
        }
    }
    out
}

/// The base64 characters of `v` preceded by `k` other bytes that depend
/// on `v`'s bits alone: the same whatever comes before and after it.
fn base64_middle(v: &[u8], k: usize, alphabet: &[u8; 64]) -> Vec<u8> {
    let mut data = vec![0u8; k];
    data.extend_from_slice(v);
    let encoded = base64(&data, alphabet);
    // Character i holds bits [6i, 6i + 6); the value's are [8k, 8(k + len)).
    let first = (8 * k).div_ceil(6);
    let end = (8 * (k + v.len())) / 6;
    encoded.get(first..end).map(<[u8]>::to_vec).unwrap_or_default()
}

/// Unpadded base64 of `data`.
fn base64(data: &[u8], alphabet: &[u8; 64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            let idx = (n >> (18 - 6 * i)) & 63;
            out.push(alphabet[usize::try_from(idx).unwrap_or(0)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: &[u8] = b"s3cr3t-t0ken/with+odd?chars";

    fn redactor(secrets: &[(&str, &[u8])]) -> Arc<Redactor> {
        let s: Vec<Secret> = secrets.iter().map(|(n, v)| Secret { name: n.to_string(), value: v.to_vec() }).collect();
        Arc::new(Redactor::new(&s).unwrap().unwrap())
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    /// Standard base64 with padding, as `base64(1)` writes it.
    fn padded(data: &[u8], alphabet: &[u8; 64]) -> Vec<u8> {
        let mut e = base64(data, alphabet);
        while e.len() % 4 != 0 {
            e.push(b'=');
        }
        e
    }

    #[test]
    fn base64_matches_a_known_encoding() {
        assert_eq!(padded(b"hello, world", B64_STD), b"aGVsbG8sIHdvcmxk");
        assert_eq!(padded(b"\xfb\xff", B64_STD), b"+/8=");
        assert_eq!(padded(b"\xfb\xff", B64_URL), b"-_8=");
    }

    #[test]
    fn every_spelling_is_redacted() {
        let r = redactor(&[("API_KEY", VALUE)]);
        let mut spelled = vec![
            VALUE.to_vec(),
            hex(VALUE, HEX_LOWER),
            hex(VALUE, HEX_UPPER),
            percent(VALUE, HEX_UPPER, |_| true),
            percent(VALUE, HEX_LOWER, |_| true),
            b"s3cr3t-t0ken%2Fwith%2Bodd%3Fchars".to_vec(),
            b"s3cr3t-t0ken%2fwith%2bodd%3fchars".to_vec(),
        ];
        // base64 of the value at every alignment, padded or not, in both
        // alphabets.
        for prefix in [&b""[..], b"x", b"xy", b"xyz"] {
            for alphabet in [B64_STD, B64_URL] {
                let mut data = prefix.to_vec();
                data.extend_from_slice(VALUE);
                spelled.push(padded(&data, alphabet));
                data.extend_from_slice(b"!");
                spelled.push(base64(&data, alphabet));
            }
        }
        for s in spelled {
            let out = text(&r.redact(&s));
            assert!(out.contains("[REDACTED:API_KEY]"), "{} -> {out}", text(&s));
            assert!(!out.contains("t0ken"), "{out}");
        }
    }

    #[test]
    fn text_without_a_value_is_untouched() {
        let r = redactor(&[("API_KEY", VALUE)]);
        assert!(matches!(r.redact(b"nothing to see here s3cr3t"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_refused() {
        let s = [Secret { name: "PIN".into(), value: b"1234".to_vec() }];
        assert!(Redactor::new(&s).err().unwrap_or_default().contains("PIN"));
        let s = [Secret { name: "PIN".into(), value: b"1234567\n\n".to_vec() }];
        assert!(Redactor::new(&s).is_err());
    }

    #[test]
    fn overlapping_values_redact_the_longest() {
        let r = redactor(&[("SHORT", b"abcdefgh"), ("LONG", b"abcdefghijkl")]);
        assert_eq!(text(&r.redact(b"<abcdefghijkl>")), "<[REDACTED:LONG]>");
        assert_eq!(text(&r.redact(b"<abcdefghij>")), "<[REDACTED:SHORT]ij>");
        // Streamed a byte at a time, the longer one still wins.
        let mut s = RedactStream::new(r.clone());
        let mut out = Vec::new();
        for b in b"<abcdefghijkl>" {
            out.extend(s.feed(&[*b]));
        }
        out.extend(s.flush());
        assert_eq!(text(&out), "<[REDACTED:LONG]>");
    }

    #[test]
    fn a_value_split_anywhere_is_caught() {
        let r = redactor(&[("API_KEY", VALUE)]);
        let mut line = b"key=".to_vec();
        line.extend_from_slice(VALUE);
        line.extend_from_slice(b"\nnext line\n");
        for at in 0..line.len() {
            let mut s = RedactStream::new(r.clone());
            let mut out = s.feed(&line[..at]);
            out.extend(s.feed(&line[at..]));
            assert_eq!(text(&out), "key=[REDACTED:API_KEY]\nnext line\n", "split at {at}");
            assert!(!s.holding());
        }
    }

    #[test]
    fn only_what_may_begin_a_value_is_held() {
        let r = redactor(&[("API_KEY", VALUE)]);
        let mut s = RedactStream::new(r.clone());
        assert_eq!(s.feed(b"plain line\n"), b"plain line\n");
        assert!(!s.holding());
        assert_eq!(s.feed(b"prompt> s3cr"), b"prompt> ");
        assert!(s.holding());
        // The stream ends (or goes idle): what was held goes out.
        assert_eq!(s.flush(), b"s3cr");
        assert!(!s.holding());
        let mut out = s.feed(b"3t-t0ken");
        out.extend(s.flush());
        assert_eq!(out, b"3t-t0ken");
    }

    #[test]
    fn the_held_tail_is_redacted_when_flushed() {
        let r = redactor(&[("SHORT", b"abcdefgh"), ("LONG", b"abcdefghijkl")]);
        let mut s = RedactStream::new(r);
        assert_eq!(s.feed(b"x abcdefghi"), b"x ");
        assert_eq!(text(&s.flush()), "[REDACTED:SHORT]i");
    }

    #[test]
    fn a_value_read_from_a_file_matches_without_its_newline() {
        let r = redactor(&[("F", b"from-a-file-123\n")]);
        assert_eq!(text(&r.redact(b"<from-a-file-123\n>")), "<[REDACTED:F]>");
        assert_eq!(text(&r.redact(b"<from-a-file-123>")), "<[REDACTED:F]>");
        let hex_trimmed = hex(b"from-a-file-123", HEX_LOWER);
        assert_eq!(text(&r.redact(hex_trimmed.as_slice())), "[REDACTED:F]");
    }

    #[test]
    fn json_escaping_is_a_spelling() {
        let r = redactor(&[("Q", b"quote\"back\\slash")]);
        let line = serde_json::to_string(&serde_json::json!({"argv": ["quote\"back\\slash"]})).unwrap();
        assert_eq!(text(&r.redact(line.as_bytes())), r#"{"argv":["[REDACTED:Q]"]}"#);
    }

    #[test]
    fn a_value_that_is_not_utf8_is_caught_in_json_text() {
        let r = redactor(&[("B", b"abcdefgh\xffijklmnop")]);
        let arg = String::from_utf8_lossy(b"abcdefgh\xffijklmnop").into_owned();
        let line = serde_json::to_string(&serde_json::json!({"argv": ["echo", arg]})).unwrap();
        assert_eq!(text(&r.redact(line.as_bytes())), r#"{"argv":["echo","[REDACTED:B]"]}"#);
        assert_eq!(text(&r.redact(b"<abcdefgh\xffijklmnop>")), "<[REDACTED:B]>", "raw bytes still match");
    }

    #[test]
    fn debug_output_names_but_never_shows_a_value() {
        let s = Secret { name: "API_KEY".into(), value: VALUE.to_vec() };
        let shown = format!("{s:?}");
        assert!(shown.contains("API_KEY") && !shown.contains("t0ken"), "{shown}");
    }
}
