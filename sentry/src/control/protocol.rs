//! The control protocol between the runtime CLI and a running sentry: one
//! request line per connection, answered by `ok` and payload lines, or by
//! `error ERRNO MESSAGE`. Plain text keeps the sentry free of a JSON
//! parser on a path the guest cannot reach anyway.

/// The longest request the sentry reads.
pub const MAX_REQUEST: usize = 256;

/// What the runtime asks of the sentry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// Run the container process (`husk start`).
    Start,
    /// Send `sig` to the container's init, or to every process.
    Signal { sig: i32, all: bool },
    /// List the guest's processes.
    Processes,
}

/// A request line that is not one of ours.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed control request {0:?}")]
pub struct BadRequest(pub String);

impl Request {
    pub fn encode(&self) -> String {
        match self {
            Request::Start => "start\n".into(),
            Request::Signal { sig, all } => format!("signal {sig} {}\n", if *all { "all" } else { "init" }),
            Request::Processes => "ps\n".into(),
        }
    }

    pub fn decode(line: &str) -> Result<Request, BadRequest> {
        let bad = || BadRequest(line.chars().take(64).collect());
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        match words.as_slice() {
            ["start"] => Ok(Request::Start),
            ["ps"] => Ok(Request::Processes),
            ["signal", sig, target] => {
                let sig = sig.parse::<i32>().map_err(|_| bad())?;
                let all = match *target {
                    "all" => true,
                    "init" => false,
                    _ => return Err(bad()),
                };
                Ok(Request::Signal { sig, all })
            }
            _ => Err(bad()),
        }
    }
}

/// One guest process, as `husk ps` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessRow {
    pub pid: i32,
    pub ppid: i32,
    pub uid: u32,
    pub comm: String,
}

impl ProcessRow {
    pub fn encode(&self) -> String {
        format!("{} {} {} {}", self.pid, self.ppid, self.uid, self.comm)
    }

    pub fn decode(line: &str) -> Option<ProcessRow> {
        let mut it = line.splitn(4, ' ');
        Some(ProcessRow {
            pid: it.next()?.parse().ok()?,
            ppid: it.next()?.parse().ok()?,
            uid: it.next()?.parse().ok()?,
            comm: it.next().unwrap_or("").to_string(),
        })
    }
}

/// Formats a reply: `ok` and the payload lines, or the error.
pub fn encode_reply(r: &Result<Vec<String>, (i32, String)>) -> String {
    match r {
        Ok(lines) => {
            let mut s = String::from("ok\n");
            for l in lines {
                s.push_str(l);
                s.push('\n');
            }
            s
        }
        Err((errno, msg)) => format!("error {errno} {msg}\n"),
    }
}

/// Parses a reply into its payload lines or (errno, message).
pub fn decode_reply(text: &str) -> Result<Vec<String>, (i32, String)> {
    let mut lines = text.lines();
    match lines.next() {
        Some("ok") => Ok(lines.map(str::to_string).collect()),
        Some(first) => {
            let rest = first.strip_prefix("error ").unwrap_or(first);
            let (num, msg) = rest.split_once(' ').unwrap_or((rest, ""));
            Err((num.parse().unwrap_or(libc::EIO), msg.to_string()))
        }
        None => Err((libc::EIO, "the sentry closed the connection without a reply".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for r in [
            Request::Start,
            Request::Processes,
            Request::Signal { sig: 15, all: true },
            Request::Signal { sig: 9, all: false },
        ] {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
    }

    #[test]
    fn garbage_is_refused() {
        for line in ["", "stop", "signal", "signal x init", "signal 9 some", "start now"] {
            assert!(Request::decode(line).is_err(), "{line:?}");
        }
    }

    #[test]
    fn replies_round_trip() {
        let ok: Result<Vec<String>, (i32, String)> = Ok(vec!["1 0 0 sh".into()]);
        assert_eq!(decode_reply(&encode_reply(&ok)), ok);
        let err: Result<Vec<String>, (i32, String)> = Err((libc::ESRCH, "no such process".into()));
        assert_eq!(decode_reply(&encode_reply(&err)), err);
        assert!(decode_reply("").is_err());
        let row = ProcessRow { pid: 7, ppid: 1, uid: 0, comm: "python3 x".into() };
        assert_eq!(ProcessRow::decode(&row.encode()), Some(row));
    }
}
