//! RFC 3339 timestamps in UTC with nanoseconds, without a calendar crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` (times before 1970 as 1970).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let out = format(t.duration_since(UNIX_EPOCH).unwrap_or_default());
    String::from_utf8_lossy(&out).into_owned()
}

/// The writer's clock: the text of the last second formatted, kept, so
/// a record written in the same second as the one before it only has
/// its nanoseconds spelled out.
#[derive(Default)]
pub(crate) struct Stamper {
    /// The second of `text`, and `text` (its first 20 bytes:
    /// `YYYY-MM-DDTHH:MM:SS.`).
    second: Option<u64>,
    text: [u8; 30],
}

impl Stamper {
    /// Appends the time now, as `rfc3339` writes it, to `out`.
    pub(crate) fn push_now(&mut self, out: &mut Vec<u8>) {
        let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        if self.second != Some(d.as_secs()) {
            self.text = format(d);
            self.second = Some(d.as_secs());
        } else {
            let mut v = d.subsec_nanos();
            for slot in self.text[20..29].iter_mut().rev() {
                *slot = b'0' + (v % 10) as u8;
                v /= 10;
            }
        }
        out.extend_from_slice(&self.text);
    }
}

/// The text of `d` after the epoch.
fn format(d: std::time::Duration) -> [u8; 30] {
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, day) = civil_from_days(days);
    // Digit by digit: a record's timestamp is on the audit log's hot path.
    let mut out = [0u8; 30];
    let mut put = |at: usize, width: usize, mut v: u64| {
        for slot in out[at..at + width].iter_mut().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y.min(9999));
    put(5, 2, m);
    put(8, 2, day);
    put(11, 2, rem / 3600);
    put(14, 2, rem / 60 % 60);
    put(17, 2, rem % 60);
    put(20, 9, u64::from(d.subsec_nanos()));
    for (at, c) in [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':'), (19, b'.'), (29, b'Z')] {
        out[at] = c;
    }
    out
}

/// Milliseconds since the epoch of a `YYYY-MM-DDTHH:MM:SS[.frac]Z` time
/// (as `rfc3339` writes them, from 1970 on); None for anything else.
pub(crate) fn epoch_millis(ts: &str) -> Option<u64> {
    let b = ts.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u64> { std::str::from_utf8(b.get(r)?).ok()?.parse().ok() };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60
    {
        return None;
    }
    let rest = ts.get(19..)?.strip_suffix('Z')?;
    let ms = match rest.strip_prefix('.') {
        Some(frac) if !frac.is_empty() && frac.bytes().all(|c| c.is_ascii_digit()) => {
            format!("{frac:0<3}")[..3].parse::<u64>().ok()?
        }
        None if rest.is_empty() => 0,
        _ => return None,
    };
    let days = days_from_civil(y, m, d);
    Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1000) + ms)
}

/// The day since 1970-01-01 of a date on or after it (Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date of day `days` since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_utc_with_nanoseconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000000000Z");
        let t = UNIX_EPOCH + Duration::new(951_782_400 + 3661, 5);
        assert_eq!(rfc3339(t), "2000-02-29T01:01:01.000000005Z");
        let t = UNIX_EPOCH + Duration::new(1_798_761_599, 999_999_999);
        assert_eq!(rfc3339(t), "2026-12-31T23:59:59.999999999Z");
    }

    #[test]
    fn the_stamper_spells_the_time_as_rfc3339_does() {
        let mut s = Stamper::default();
        let mut out = Vec::new();
        let before = SystemTime::now();
        s.push_now(&mut out);
        s.push_now(&mut out);
        let after = SystemTime::now();
        let text = String::from_utf8(out.clone()).unwrap();
        let (a, b) = text.split_at(30);
        for t in [a, b] {
            assert!(rfc3339(before).as_str() <= t && t <= rfc3339(after).as_str(), "{t}");
        }
        assert!(a <= b);
        // A new second is formatted whole.
        s.second = Some(0);
        out.clear();
        s.push_now(&mut out);
        assert!(std::str::from_utf8(&out).unwrap() >= b);
    }

    #[test]
    fn parses_its_own_times_back_to_milliseconds() {
        assert_eq!(epoch_millis("1970-01-01T00:00:00.000000000Z"), Some(0));
        assert_eq!(epoch_millis("2000-02-29T01:01:01.250000005Z"), Some((951_782_400 + 3661) * 1000 + 250));
        assert_eq!(epoch_millis("2026-12-31T23:59:59Z"), Some(1_798_761_599_000));
        for bad in ["", "2026-12-31", "2026-13-01T00:00:00Z", "2026-12-31T23:59:59.Z", "2026-12-31T23:59:59+01:00"] {
            assert_eq!(epoch_millis(bad), None, "{bad}");
        }
    }
}
