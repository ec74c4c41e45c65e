//! The writable files of a process directory (comm, oom_score_adj,
//! coredump_filter): a write changes only the sentry's own record of the
//! process, parsed and checked as Linux's fs/proc/base.c does.

use super::task::FileKind;
use crate::abi::Errno;
use crate::auth::caps;
use crate::kernel::{thread, Thread};

/// Applies what was written to a file of `t`'s directory.
pub(super) type Write = fn(&Thread, &[u8]) -> Result<(), Errno>;

/// How writes to a file of kind `kind` apply, if it is writable.
pub(super) fn writer(kind: FileKind) -> Option<Write> {
    match kind {
        FileKind::Comm => Some(write_comm),
        FileKind::OomScoreAdj => Some(write_oom_score_adj),
        FileKind::CoredumpFilter => Some(write_coredump_filter),
        _ => None,
    }
}

/// The longest task name (TASK_COMM_LEN without its NUL).
const COMM_MAX: usize = 15;
/// OOM_SCORE_ADJ_MIN and OOM_SCORE_ADJ_MAX.
const OOM_SCORE_ADJ: std::ops::RangeInclusive<i64> = -1000..=1000;
/// The bits of coredump_filter (MMF_DUMP_FILTER_BITS).
const COREDUMP_FILTER_MASK: u64 = (1 << 9) - 1;

/// `comm_write`: a thread of the same process renames `t` (the name cut
/// at a NUL and to 15 bytes); anyone else gets EINVAL.
fn write_comm(t: &Thread, data: &[u8]) -> Result<(), Errno> {
    let me = thread::current().ok_or(Errno::EINVAL)?;
    if me.tgid() != t.tgid() {
        return Err(Errno::EINVAL);
    }
    let data = &data[..data.len().min(COMM_MAX)];
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    t.set_comm(data[..end].to_vec());
    Ok(())
}

/// `oom_score_adj_write`: an integer (blanks around it allowed) in
/// -1000 ..= 1000; below the process's floor only with CAP_SYS_RESOURCE.
fn write_oom_score_adj(t: &Thread, data: &[u8]) -> Result<(), Errno> {
    let text = until_nul(&data[..data.len().min(23)]);
    let adj = std::str::from_utf8(text).ok().and_then(|s| parse_int(s.trim())).ok_or(Errno::EINVAL)?;
    if !OOM_SCORE_ADJ.contains(&adj) {
        return Err(Errno::EINVAL);
    }
    let privileged = thread::current().is_some_and(|me| me.creds().capable(caps::CAP_SYS_RESOURCE));
    t.group().set_oom_score_adj(i16::try_from(adj).map_err(|_| Errno::EINVAL)?, privileged)
}

/// `coredump_filter_write`: an unsigned integer (one trailing newline
/// allowed) whose low nine bits become the filter.
fn write_coredump_filter(t: &Thread, data: &[u8]) -> Result<(), Errno> {
    let text = until_nul(data);
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let value = std::str::from_utf8(text).ok().and_then(parse_int).filter(|&v| v >= 0).ok_or(Errno::EINVAL)?;
    let value = u64::try_from(value).map_err(|_| Errno::EINVAL)?;
    if value > u64::from(u32::MAX) {
        return Err(Errno::ERANGE);
    }
    t.group().set_coredump_filter(u32::try_from(value & COREDUMP_FILTER_MASK).unwrap_or(0));
    Ok(())
}

/// `data` up to its first NUL.
fn until_nul(data: &[u8]) -> &[u8] {
    &data[..data.iter().position(|&b| b == 0).unwrap_or(data.len())]
}

/// An integer as Linux's `kstrtoint` with base 0 reads it: an optional
/// sign, then `0x` hexadecimal, `0` octal or decimal digits.
fn parse_int(s: &str) -> Option<i64> {
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let v = i64::from_str_radix(digits, radix).ok()?;
    Some(if negative { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_kstrtoint_reads_them() {
        assert_eq!(parse_int("7"), Some(7));
        assert_eq!(parse_int("-1000"), Some(-1000));
        assert_eq!(parse_int("+5"), Some(5));
        assert_eq!(parse_int("0x1f"), Some(31));
        assert_eq!(parse_int("010"), Some(8));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int(""), None);
        assert_eq!(parse_int("-"), None);
        assert_eq!(parse_int("1 2"), None);
        assert_eq!(parse_int("09"), None);
        assert_eq!(parse_int("0x"), None);
        assert_eq!(until_nul(b"7\0junk"), b"7");
    }

    #[test]
    fn writable_kinds() {
        assert!(writer(FileKind::Comm).is_some());
        assert!(writer(FileKind::OomScoreAdj).is_some());
        assert!(writer(FileKind::CoredumpFilter).is_some());
        assert!(writer(FileKind::OomScore).is_none());
        assert!(writer(FileKind::Status).is_none());
    }
}
