//! The control protocol between the runtime CLI and a running sentry: one
//! request line per connection, answered by `ok` and payload lines, or by
//! `error ERRNO MESSAGE`. Plain text keeps the sentry free of a JSON
//! parser on a path the guest cannot reach anyway.

use crate::auth::caps::Capabilities;

/// The longest request line the sentry reads.
pub(crate) const MAX_REQUEST: usize = 256;
/// The largest payload of an `exec` request (argv, environment, cwd).
pub(crate) const MAX_PAYLOAD: usize = 4 << 20;

/// A process to start in a running sandbox (`husk exec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSpec {
    pub argv: Vec<Vec<u8>>,
    pub env: Vec<Vec<u8>>,
    pub cwd: Vec<u8>,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
    /// Resource limits: (Linux's resource number, soft, hard).
    pub rlimits: Vec<(usize, u64, u64)>,
    /// The name of the host terminal the three descriptors are, if they
    /// are one ("/dev/pts/3"); empty otherwise.
    pub terminal: Vec<u8>,
    /// The process's capability sets, if the spec gives them (else those
    /// of its uid).
    pub caps: Option<Capabilities>,
    /// process.noNewPrivileges.
    pub no_new_privs: bool,
}

impl ExecSpec {
    /// NUL-terminated fields: uid, gid, cwd, terminal, groups (comma
    /// separated), rlimits (RES:SOFT:HARD, comma separated), capabilities
    /// (E:P:I:B:A in hex, or empty), no_new_privs (0 or 1), argc, argv…,
    /// env….
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let groups: Vec<String> = self.groups.iter().map(u32::to_string).collect();
        let rlimits: Vec<String> = self.rlimits.iter().map(|(r, s, h)| format!("{r}:{s}:{h}")).collect();
        let heads = [
            self.uid.to_string().into_bytes(),
            self.gid.to_string().into_bytes(),
            self.cwd.clone(),
            self.terminal.clone(),
            groups.join(",").into_bytes(),
            rlimits.join(",").into_bytes(),
            self.caps.map(|c| c.encode()).unwrap_or_default().into_bytes(),
            vec![b'0' + u8::from(self.no_new_privs)],
        ];
        let argc = self.argv.len().to_string().into_bytes();
        for f in heads.iter().chain([&argc]).chain(&self.argv).chain(&self.env) {
            out.extend_from_slice(f);
            out.push(0);
        }
        out
    }

    pub fn decode(payload: &[u8]) -> Option<ExecSpec> {
        let body = payload.strip_suffix(&[0])?;
        let mut fields = body.split(|&b| b == 0).map(<[u8]>::to_vec);
        let num = |f: Option<Vec<u8>>| -> Option<u32> { String::from_utf8(f?).ok()?.parse().ok() };
        let uid = num(fields.next())?;
        let gid = num(fields.next())?;
        let cwd = fields.next()?;
        let terminal = fields.next()?;
        let list = |f: Vec<u8>| -> Option<Vec<String>> {
            let text = String::from_utf8(f).ok()?;
            Some(text.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect())
        };
        let groups = list(fields.next()?)?.iter().map(|g| g.parse().ok()).collect::<Option<Vec<u32>>>()?;
        let rlimits = list(fields.next()?)?
            .iter()
            .map(|r| {
                let mut p = r.split(':');
                let limit = (p.next()?.parse().ok()?, p.next()?.parse().ok()?, p.next()?.parse().ok()?);
                p.next().is_none().then_some(limit)
            })
            .collect::<Option<Vec<(usize, u64, u64)>>>()?;
        let caps = match String::from_utf8(fields.next()?).ok()?.as_str() {
            "" => None,
            text => Some(Capabilities::decode(text)?),
        };
        let no_new_privs = match fields.next()?.as_slice() {
            b"0" => false,
            b"1" => true,
            _ => return None,
        };
        let argc = usize::try_from(num(fields.next())?).ok()?;
        let argv: Vec<Vec<u8>> = fields.by_ref().take(argc).collect();
        if argv.len() != argc || argc == 0 || !cwd.starts_with(b"/") {
            return None;
        }
        Some(ExecSpec { argv, env: fields.collect(), cwd, uid, gid, groups, rlimits, terminal, caps, no_new_privs })
    }
}

/// What the runtime asks of the sentry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Run the container process (`husk start`).
    Start,
    /// Send `sig` to the container's init, or to every process.
    Signal { sig: i32, all: bool },
    /// List the guest's processes.
    Processes,
    /// Wait for the container's process to end: the reply comes then,
    /// `ok` and an exit line.
    Wait,
    /// Start a process with the three descriptors passed along (stdin,
    /// stdout, stderr). The reply's line is its pid; a last line `exit
    /// code N` or `exit signal N` follows when it ends.
    Exec(Box<ExecSpec>),
    /// The host cgroup's limits changed (`update`): each is None to keep
    /// it, Some(None) for "max".
    Limits { cpu_max: Option<Option<(u64, u64)>>, pids_max: Option<Option<u64>>, memory_max: Option<Option<u64>> },
    /// The runtime is about to freeze the sandbox (`pause`): write and
    /// sync `sandbox.pause` first, since a frozen sentry cannot.
    Pausing,
    /// The runtime thawed the sandbox (`resume`): write `sandbox.resume`.
    Resumed,
    /// The runtime is about to SIGKILL the sentry (`kill ID KILL`,
    /// `delete --force`): hand the audit log's batch to the host and write
    /// every later record at once, then reply.
    Flush,
}

/// A request line that is not one of ours.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed control request {0:?}")]
pub struct BadRequest(pub String);

/// How a request's line announces what follows it.
#[derive(Debug, PartialEq, Eq)]
pub enum Header {
    Complete(Request),
    /// An `exec` line: this many payload bytes follow.
    Exec(usize),
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Start => b"start\n".to_vec(),
            Request::Signal { sig, all } => {
                format!("signal {sig} {}\n", if *all { "all" } else { "init" }).into_bytes()
            }
            Request::Processes => b"ps\n".to_vec(),
            Request::Wait => b"wait\n".to_vec(),
            Request::Pausing => b"pausing\n".to_vec(),
            Request::Resumed => b"resumed\n".to_vec(),
            Request::Flush => b"flush\n".to_vec(),
            Request::Limits { cpu_max, pids_max, memory_max } => {
                let cpu = match cpu_max {
                    None => "keep".to_string(),
                    Some(None) => "max".to_string(),
                    Some(Some((q, p))) => format!("{q}:{p}"),
                };
                format!("limits {cpu} {} {}\n", limit_word(*pids_max), limit_word(*memory_max)).into_bytes()
            }
            Request::Exec(spec) => {
                let payload = spec.encode();
                let mut out = format!("exec {}\n", payload.len()).into_bytes();
                out.extend_from_slice(&payload);
                out
            }
        }
    }

    /// Parses a request line (without its newline).
    pub fn decode(line: &str) -> Result<Header, BadRequest> {
        let bad = || BadRequest(line.chars().take(64).collect());
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        let req = match words.as_slice() {
            ["start"] => Request::Start,
            ["ps"] => Request::Processes,
            ["wait"] => Request::Wait,
            ["pausing"] => Request::Pausing,
            ["resumed"] => Request::Resumed,
            ["flush"] => Request::Flush,
            ["exec", len] => {
                let len = len.parse::<usize>().map_err(|_| bad())?;
                return if len <= MAX_PAYLOAD { Ok(Header::Exec(len)) } else { Err(bad()) };
            }
            ["limits", cpu, pids, memory] => {
                let cpu_max = match *cpu {
                    "keep" => None,
                    "max" => Some(None),
                    qp => {
                        // cgroup v2's bounds: a period of 1 ms to 1 s, a
                        // quota of at least 1 ms.
                        let (q, p) = qp.split_once(':').ok_or_else(bad)?;
                        let (q, p): (u64, u64) = (q.parse().map_err(|_| bad())?, p.parse().map_err(|_| bad())?);
                        if q < 1000 || !(1000..=1_000_000).contains(&p) {
                            return Err(bad());
                        }
                        Some(Some((q, p)))
                    }
                };
                let pids_max = parse_limit_word(pids).ok_or_else(bad)?;
                let memory_max = parse_limit_word(memory).ok_or_else(bad)?;
                Request::Limits { cpu_max, pids_max, memory_max }
            }
            ["signal", sig, target] => {
                let sig = sig.parse::<i32>().map_err(|_| bad())?;
                let all = match *target {
                    "all" => true,
                    "init" => false,
                    _ => return Err(bad()),
                };
                Request::Signal { sig, all }
            }
            _ => return Err(bad()),
        };
        Ok(Header::Complete(req))
    }
}

/// A limit in a `limits` request: `keep`, `max` or a number.
fn limit_word(v: Option<Option<u64>>) -> String {
    match v {
        None => "keep".to_string(),
        Some(None) => "max".to_string(),
        Some(Some(n)) => n.to_string(),
    }
}

fn parse_limit_word(w: &str) -> Option<Option<Option<u64>>> {
    match w {
        "keep" => Some(None),
        "max" => Some(Some(None)),
        n => Some(Some(Some(n.parse().ok()?))),
    }
}

/// How an exec'd process ended, as the last line of an `exec` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitLine {
    Code(i32),
    Signal(i32),
}

impl From<crate::kernel::ExitStatus> for ExitLine {
    fn from(s: crate::kernel::ExitStatus) -> ExitLine {
        match s {
            crate::kernel::ExitStatus::Code(c) => ExitLine::Code(c),
            crate::kernel::ExitStatus::Signal(s) => ExitLine::Signal(s),
        }
    }
}

impl ExitLine {
    /// The shell's view of it: the code, or 128+N for signal N.
    pub fn code(self) -> i32 {
        match self {
            ExitLine::Code(c) => c,
            ExitLine::Signal(s) => 128 + s,
        }
    }

    pub fn encode(&self) -> String {
        match self {
            ExitLine::Code(c) => format!("exit code {c}\n"),
            ExitLine::Signal(s) => format!("exit signal {s}\n"),
        }
    }

    pub fn decode(line: &str) -> Option<ExitLine> {
        let mut w = line.split_ascii_whitespace();
        let (Some("exit"), Some(kind), Some(n), None) = (w.next(), w.next(), w.next(), w.next()) else { return None };
        let n = n.parse().ok()?;
        match kind {
            "code" => Some(ExitLine::Code(n)),
            "signal" => Some(ExitLine::Signal(n)),
            _ => None,
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
pub(crate) fn encode_reply(r: &Result<Vec<String>, (i32, String)>) -> String {
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
            Request::Wait,
            Request::Pausing,
            Request::Resumed,
            Request::Flush,
            Request::Signal { sig: 15, all: true },
            Request::Signal { sig: 9, all: false },
            Request::Limits { cpu_max: Some(Some((50_000, 100_000))), pids_max: None, memory_max: Some(Some(1 << 26)) },
            Request::Limits { cpu_max: Some(None), pids_max: Some(Some(64)), memory_max: None },
            Request::Limits { cpu_max: None, pids_max: Some(None), memory_max: Some(None) },
        ] {
            let line = String::from_utf8(r.encode()).unwrap();
            assert_eq!(Request::decode(line.trim_end()), Ok(Header::Complete(r)));
        }
        for bad in [
            "limits 1 2 3",
            "limits 1:x keep keep",
            "limits keep keep",
            "limits keep -1 keep",
            "limits 5000:0 keep keep",
        ] {
            assert!(Request::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exec_requests_carry_their_payload() {
        let spec = ExecSpec {
            argv: vec![b"sh".to_vec(), b"-c".to_vec(), b"echo a b".to_vec()],
            env: vec![b"A=1".to_vec(), b"EMPTY=".to_vec()],
            cwd: b"/tmp".to_vec(),
            uid: 1000,
            gid: 100,
            groups: vec![4, 27],
            rlimits: vec![(7, 1024, 4096), (3, u64::MAX, u64::MAX)],
            terminal: b"/dev/pts/3".to_vec(),
            caps: Some(Capabilities { effective: 1, permitted: 1, inheritable: 0, bounding: 5, ambient: 0 }),
            no_new_privs: true,
        };
        let bytes = Request::Exec(Box::new(spec.clone())).encode();
        let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
        let line = std::str::from_utf8(&bytes[..nl]).unwrap();
        assert_eq!(Request::decode(line), Ok(Header::Exec(bytes.len() - nl - 1)));
        assert_eq!(ExecSpec::decode(&bytes[nl + 1..]), Some(spec));
        let bad: [&[u8]; 9] = [
            b"",
            b"0\x000\x00/\x00\x00\x00\x00\x000\x000\x00",
            b"0\x000\x00rel\x00\x00\x00\x00\x000\x001\x00sh\x00",
            b"x\x000\x00/\x00\x00\x00\x00\x000\x001\x00sh\x00",
            b"0\x000\x00/\x00\x00\x00\x00\x000\x003\x00sh\x00",
            b"0\x000\x00/\x00\x00x\x00\x00\x000\x001\x00sh\x00",
            b"0\x000\x00/\x00\x00\x007:1\x00\x000\x001\x00sh\x00",
            b"0\x000\x00/\x00\x00\x00\x001:2\x000\x001\x00sh\x00",
            b"0\x000\x00/\x00\x00\x00\x00\x002\x001\x00sh\x00",
        ];
        assert!(ExecSpec::decode(b"0\x000\x00/\x00\x00\x00\x00\x000\x001\x00sh\x00").is_some());
        for b in bad {
            assert_eq!(ExecSpec::decode(b), None, "{b:?}");
        }
        assert!(Request::decode(&format!("exec {}", MAX_PAYLOAD + 1)).is_err());
        for e in [ExitLine::Code(3), ExitLine::Signal(9)] {
            assert_eq!(ExitLine::decode(e.encode().trim_end()), Some(e));
        }
        assert_eq!(ExitLine::decode("exit code"), None);
    }

    #[test]
    fn garbage_is_refused() {
        for line in ["", "stop", "signal", "signal x init", "signal 9 some", "start now", "pausing now", "flush now"] {
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
