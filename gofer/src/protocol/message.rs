//! Requests, replies and their encodings.

use super::{Decoder, Dirent, Encoder, Fid, SetAttr, Stat, StatFs};
use crate::{Error, Result};

/// Response status: success, the payload is the operation's reply.
const STATUS_OK: u16 = 0;
/// Response status: failure, the payload is an `i32` errno.
const STATUS_ERR: u16 = 1;

/// Smallest encoding of a [`Dirent`]: ino, kind and an empty name.
const MIN_DIRENT_LEN: usize = 8 + 1 + 4;

/// Operation codes, the `u16` after a request's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Opcode {
    /// Get a fid for the root directory.
    Attach = 1,
    /// Look up one name in a directory.
    Walk = 2,
    /// Attributes of a fid.
    Stat = 3,
    /// Open a regular file; the reply donates a host fd.
    Open = 4,
    /// One page of directory entries.
    Getdents = 5,
    /// Target of a symlink.
    Readlink = 6,
    /// File system statistics.
    Statfs = 7,
    /// Create and open a regular file; the reply donates a host fd.
    Create = 8,
    /// Make a directory.
    Mkdir = 9,
    /// Make a regular file, FIFO or socket node.
    Mknod = 10,
    /// Make a symlink.
    Symlink = 11,
    /// Make a hard link.
    Link = 12,
    /// Remove a name.
    Unlink = 13,
    /// Rename (`renameat2`).
    Rename = 14,
    /// Change attributes.
    SetAttr = 15,
    /// Release a fid.
    Clunk = 16,
    /// Allocate, punch or zero a range of a regular file (`fallocate`).
    Fallocate = 17,
    /// Make a regular file with no name in a directory (`O_TMPFILE`).
    Tmpfile = 18,
}

impl TryFrom<u16> for Opcode {
    type Error = Error;

    fn try_from(v: u16) -> Result<Opcode> {
        const ALL: [Opcode; 18] = [
            Opcode::Attach,
            Opcode::Walk,
            Opcode::Stat,
            Opcode::Open,
            Opcode::Getdents,
            Opcode::Readlink,
            Opcode::Statfs,
            Opcode::Create,
            Opcode::Mkdir,
            Opcode::Mknod,
            Opcode::Symlink,
            Opcode::Link,
            Opcode::Unlink,
            Opcode::Rename,
            Opcode::SetAttr,
            Opcode::Clunk,
            Opcode::Fallocate,
            Opcode::Tmpfile,
        ];
        ALL.into_iter().find(|&op| op as u16 == v).ok_or_else(|| Error::Protocol(format!("unknown opcode {v}")))
    }
}

/// A request from the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Get a fid for the root directory.
    Attach,
    /// Look up `name` in `dir` without following a symlink.
    Walk {
        /// Directory to look in.
        dir: Fid,
        /// A single path component.
        name: Vec<u8>,
    },
    /// Attributes of `fid`.
    Stat {
        /// The file.
        fid: Fid,
    },
    /// Open the regular file `fid`.
    Open {
        /// The file.
        fid: Fid,
        /// Access mode plus `O_TRUNC`/`O_APPEND`; other flags are ignored.
        flags: i32,
    },
    /// Entries of directory `fid` from `cookie` (0 for the start).
    Getdents {
        /// The directory.
        fid: Fid,
        /// Where to resume, from a previous reply's `next_cookie`.
        cookie: u64,
    },
    /// Target of symlink `fid`.
    Readlink {
        /// The symlink.
        fid: Fid,
    },
    /// Statistics of the file system holding `fid`.
    Statfs {
        /// Any file on the file system.
        fid: Fid,
    },
    /// Create and open a new regular file (`O_CREAT|O_EXCL`).
    Create {
        /// Parent directory.
        dir: Fid,
        /// New name.
        name: Vec<u8>,
        /// Access mode plus `O_APPEND`.
        flags: i32,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// Make a directory.
    Mkdir {
        /// Parent directory.
        dir: Fid,
        /// New name.
        name: Vec<u8>,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// Make a node.
    Mknod {
        /// Parent directory.
        dir: Fid,
        /// New name.
        name: Vec<u8>,
        /// File type and permission bits.
        mode: u32,
        /// Device number (unused: devices are refused).
        rdev: u64,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// Make a symlink.
    Symlink {
        /// Parent directory.
        dir: Fid,
        /// New name.
        name: Vec<u8>,
        /// What the link points to.
        target: Vec<u8>,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
    /// Make a hard link to `target` named `name` in `dir`.
    Link {
        /// Existing file.
        target: Fid,
        /// Directory for the new name.
        dir: Fid,
        /// New name.
        name: Vec<u8>,
    },
    /// Remove `name` from `dir`.
    Unlink {
        /// The directory.
        dir: Fid,
        /// The name.
        name: Vec<u8>,
        /// 0 or `AT_REMOVEDIR`.
        flags: i32,
    },
    /// Rename.
    Rename {
        /// Source directory.
        old_dir: Fid,
        /// Source name.
        old_name: Vec<u8>,
        /// Destination directory.
        new_dir: Fid,
        /// Destination name.
        new_name: Vec<u8>,
        /// `renameat2` flags.
        flags: u32,
    },
    /// Change attributes of `fid`.
    SetAttr {
        /// The file.
        fid: Fid,
        /// The changes.
        attr: SetAttr,
    },
    /// Release `fid`.
    Clunk {
        /// The fid.
        fid: Fid,
    },
    /// `fallocate(2)` on the regular file `fid`.
    Fallocate {
        /// The file.
        fid: Fid,
        /// 0, `FALLOC_FL_KEEP_SIZE`, `FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE`
        /// or `FALLOC_FL_ZERO_RANGE` (with or without `KEEP_SIZE`); the
        /// server refuses any other mode.
        mode: i32,
        /// Start of the range.
        offset: u64,
        /// Its length.
        len: u64,
    },
    /// Make a regular file without a name in `dir` (`O_TMPFILE`), which
    /// `Link` may name later unless `flags` is `O_EXCL`.
    Tmpfile {
        /// The directory whose filesystem holds the file.
        dir: Fid,
        /// 0 or `O_EXCL`.
        flags: i32,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: u32,
        /// Group.
        gid: u32,
    },
}

/// The shape of a successful reply; each request has exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyKind {
    /// [`Reply::Empty`].
    Empty,
    /// [`Reply::FidStat`].
    FidStat,
    /// [`Reply::Stat`].
    Stat,
    /// [`Reply::Dirents`].
    Dirents,
    /// [`Reply::Bytes`].
    Bytes,
    /// [`Reply::StatFs`].
    StatFs,
}

/// A successful reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// No payload (`Open`, with a donated fd; `Unlink`, `Rename`, `Clunk`).
    Empty,
    /// A new fid and its attributes (`Attach`, `Walk`, `Mkdir`, `Mknod`,
    /// `Symlink`, `Tmpfile`; `Create`, with a donated fd).
    FidStat {
        /// The new fid.
        fid: Fid,
        /// Its attributes.
        stat: Stat,
    },
    /// Attributes (`Stat`, `Link`, `SetAttr`).
    Stat(Stat),
    /// A page of directory entries (`Getdents`).
    Dirents {
        /// The entries, without `.` and `..`.
        entries: Vec<Dirent>,
        /// Cookie for the next page, `None` at the end of the directory.
        next_cookie: Option<u64>,
    },
    /// A byte string (`Readlink`).
    Bytes(Vec<u8>),
    /// File system statistics (`Statfs`).
    StatFs(StatFs),
}

/// A response: a reply, or an errno.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The operation succeeded.
    Ok(Reply),
    /// The operation failed with this errno.
    Err(i32),
}

impl Request {
    /// The opcode of this request.
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Attach => Opcode::Attach,
            Request::Walk { .. } => Opcode::Walk,
            Request::Stat { .. } => Opcode::Stat,
            Request::Open { .. } => Opcode::Open,
            Request::Getdents { .. } => Opcode::Getdents,
            Request::Readlink { .. } => Opcode::Readlink,
            Request::Statfs { .. } => Opcode::Statfs,
            Request::Create { .. } => Opcode::Create,
            Request::Mkdir { .. } => Opcode::Mkdir,
            Request::Mknod { .. } => Opcode::Mknod,
            Request::Symlink { .. } => Opcode::Symlink,
            Request::Link { .. } => Opcode::Link,
            Request::Unlink { .. } => Opcode::Unlink,
            Request::Rename { .. } => Opcode::Rename,
            Request::SetAttr { .. } => Opcode::SetAttr,
            Request::Clunk { .. } => Opcode::Clunk,
            Request::Fallocate { .. } => Opcode::Fallocate,
            Request::Tmpfile { .. } => Opcode::Tmpfile,
        }
    }

    /// The shape of this request's successful reply.
    pub fn reply_kind(&self) -> ReplyKind {
        match self {
            Request::Open { .. }
            | Request::Unlink { .. }
            | Request::Rename { .. }
            | Request::Clunk { .. }
            | Request::Fallocate { .. } => ReplyKind::Empty,
            Request::Attach
            | Request::Walk { .. }
            | Request::Create { .. }
            | Request::Mkdir { .. }
            | Request::Mknod { .. }
            | Request::Symlink { .. }
            | Request::Tmpfile { .. } => ReplyKind::FidStat,
            Request::Stat { .. } | Request::Link { .. } | Request::SetAttr { .. } => ReplyKind::Stat,
            Request::Getdents { .. } => ReplyKind::Dirents,
            Request::Readlink { .. } => ReplyKind::Bytes,
            Request::Statfs { .. } => ReplyKind::StatFs,
        }
    }

    /// Encodes the request as one frame.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut e = Encoder::new(self.opcode() as u16);
        match self {
            Request::Attach => &mut e,
            Request::Walk { dir, name } => e.u64(*dir).bytes(name),
            Request::Stat { fid } | Request::Readlink { fid } | Request::Statfs { fid } => e.u64(*fid),
            Request::Clunk { fid } => e.u64(*fid),
            Request::Open { fid, flags } => e.u64(*fid).i32(*flags),
            Request::Getdents { fid, cookie } => e.u64(*fid).u64(*cookie),
            Request::Create { dir, name, flags, mode, uid, gid } => {
                e.u64(*dir).bytes(name).i32(*flags).u32(*mode).u32(*uid).u32(*gid)
            }
            Request::Mkdir { dir, name, mode, uid, gid } => e.u64(*dir).bytes(name).u32(*mode).u32(*uid).u32(*gid),
            Request::Mknod { dir, name, mode, rdev, uid, gid } => {
                e.u64(*dir).bytes(name).u32(*mode).u64(*rdev).u32(*uid).u32(*gid)
            }
            Request::Symlink { dir, name, target, uid, gid } => {
                e.u64(*dir).bytes(name).bytes(target).u32(*uid).u32(*gid)
            }
            Request::Link { target, dir, name } => e.u64(*target).u64(*dir).bytes(name),
            Request::Unlink { dir, name, flags } => e.u64(*dir).bytes(name).i32(*flags),
            Request::Rename { old_dir, old_name, new_dir, new_name, flags } => {
                e.u64(*old_dir).bytes(old_name).u64(*new_dir).bytes(new_name).u32(*flags)
            }
            Request::SetAttr { fid, attr } => e.u64(*fid).set_attr(attr),
            Request::Fallocate { fid, mode, offset, len } => e.u64(*fid).i32(*mode).u64(*offset).u64(*len),
            Request::Tmpfile { dir, flags, mode, uid, gid } => e.u64(*dir).i32(*flags).u32(*mode).u32(*uid).u32(*gid),
        };
        e.finish()
    }

    /// Decodes one request frame.
    pub fn decode(frame: &[u8]) -> Result<Request> {
        let (op, mut d) = Decoder::frame(frame)?;
        let req = match Opcode::try_from(op)? {
            Opcode::Attach => Request::Attach,
            Opcode::Walk => Request::Walk { dir: d.u64()?, name: d.bytes()?.to_vec() },
            Opcode::Stat => Request::Stat { fid: d.u64()? },
            Opcode::Open => Request::Open { fid: d.u64()?, flags: d.i32()? },
            Opcode::Getdents => Request::Getdents { fid: d.u64()?, cookie: d.u64()? },
            Opcode::Readlink => Request::Readlink { fid: d.u64()? },
            Opcode::Statfs => Request::Statfs { fid: d.u64()? },
            Opcode::Create => Request::Create {
                dir: d.u64()?,
                name: d.bytes()?.to_vec(),
                flags: d.i32()?,
                mode: d.u32()?,
                uid: d.u32()?,
                gid: d.u32()?,
            },
            Opcode::Mkdir => Request::Mkdir {
                dir: d.u64()?,
                name: d.bytes()?.to_vec(),
                mode: d.u32()?,
                uid: d.u32()?,
                gid: d.u32()?,
            },
            Opcode::Mknod => Request::Mknod {
                dir: d.u64()?,
                name: d.bytes()?.to_vec(),
                mode: d.u32()?,
                rdev: d.u64()?,
                uid: d.u32()?,
                gid: d.u32()?,
            },
            Opcode::Symlink => Request::Symlink {
                dir: d.u64()?,
                name: d.bytes()?.to_vec(),
                target: d.bytes()?.to_vec(),
                uid: d.u32()?,
                gid: d.u32()?,
            },
            Opcode::Link => Request::Link { target: d.u64()?, dir: d.u64()?, name: d.bytes()?.to_vec() },
            Opcode::Unlink => Request::Unlink { dir: d.u64()?, name: d.bytes()?.to_vec(), flags: d.i32()? },
            Opcode::Rename => Request::Rename {
                old_dir: d.u64()?,
                old_name: d.bytes()?.to_vec(),
                new_dir: d.u64()?,
                new_name: d.bytes()?.to_vec(),
                flags: d.u32()?,
            },
            Opcode::SetAttr => Request::SetAttr { fid: d.u64()?, attr: d.set_attr()? },
            Opcode::Clunk => Request::Clunk { fid: d.u64()? },
            Opcode::Fallocate => Request::Fallocate { fid: d.u64()?, mode: d.i32()?, offset: d.u64()?, len: d.u64()? },
            Opcode::Tmpfile => {
                Request::Tmpfile { dir: d.u64()?, flags: d.i32()?, mode: d.u32()?, uid: d.u32()?, gid: d.u32()? }
            }
        };
        d.finish()?;
        Ok(req)
    }
}

impl Reply {
    /// The shape of this reply.
    pub fn kind(&self) -> ReplyKind {
        match self {
            Reply::Empty => ReplyKind::Empty,
            Reply::FidStat { .. } => ReplyKind::FidStat,
            Reply::Stat(_) => ReplyKind::Stat,
            Reply::Dirents { .. } => ReplyKind::Dirents,
            Reply::Bytes(_) => ReplyKind::Bytes,
            Reply::StatFs(_) => ReplyKind::StatFs,
        }
    }

    fn encode_into(&self, e: &mut Encoder) {
        match self {
            Reply::Empty => {}
            Reply::FidStat { fid, stat } => {
                e.u64(*fid).stat(stat);
            }
            Reply::Stat(stat) => {
                e.stat(stat);
            }
            Reply::Dirents { entries, next_cookie } => {
                e.u32(u32::try_from(entries.len()).unwrap_or(u32::MAX));
                for entry in entries {
                    e.dirent(entry);
                }
                e.opt_u64(*next_cookie);
            }
            Reply::Bytes(bytes) => {
                e.bytes(bytes);
            }
            Reply::StatFs(statfs) => {
                e.statfs(statfs);
            }
        }
    }

    fn decode_from(kind: ReplyKind, d: &mut Decoder<'_>) -> Result<Reply> {
        Ok(match kind {
            ReplyKind::Empty => Reply::Empty,
            ReplyKind::FidStat => Reply::FidStat { fid: d.u64()?, stat: d.stat()? },
            ReplyKind::Stat => Reply::Stat(d.stat()?),
            ReplyKind::Dirents => {
                let count = usize::try_from(d.u32()?).unwrap_or(usize::MAX);
                let mut entries = Vec::with_capacity(count.min(d.remaining() / MIN_DIRENT_LEN));
                for _ in 0..count {
                    entries.push(d.dirent()?);
                }
                Reply::Dirents { entries, next_cookie: d.opt_u64()? }
            }
            ReplyKind::Bytes => Reply::Bytes(d.bytes()?.to_vec()),
            ReplyKind::StatFs => Reply::StatFs(d.statfs()?),
        })
    }
}

impl Response {
    /// Encodes the response as one frame.
    pub fn encode(&self) -> Result<Vec<u8>> {
        match self {
            Response::Ok(reply) => {
                let mut e = Encoder::new(STATUS_OK);
                reply.encode_into(&mut e);
                e.finish()
            }
            Response::Err(errno) => {
                let mut e = Encoder::new(STATUS_ERR);
                e.i32(*errno);
                e.finish()
            }
        }
    }

    /// Decodes a response frame to a request whose reply has shape `kind`.
    pub fn decode(frame: &[u8], kind: ReplyKind) -> Result<Response> {
        let (status, mut d) = Decoder::frame(frame)?;
        let response = match status {
            STATUS_OK => Response::Ok(Reply::decode_from(kind, &mut d)?),
            STATUS_ERR => match d.i32()? {
                errno @ 1.. => Response::Err(errno),
                bad => return Err(Error::Protocol(format!("bad errno {bad}"))),
            },
            other => return Err(Error::Protocol(format!("bad response status {other}"))),
        };
        d.finish()?;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{SetTime, TimeSpec};

    fn sample_requests() -> Vec<Request> {
        let name = b"file".to_vec();
        vec![
            Request::Attach,
            Request::Walk { dir: 1, name: name.clone() },
            Request::Stat { fid: 2 },
            Request::Open { fid: 3, flags: libc::O_RDWR | libc::O_TRUNC },
            Request::Getdents { fid: 4, cookie: u64::MAX },
            Request::Readlink { fid: 5 },
            Request::Statfs { fid: 6 },
            Request::Create { dir: 7, name: name.clone(), flags: libc::O_WRONLY, mode: 0o644, uid: 1, gid: 2 },
            Request::Mkdir { dir: 8, name: name.clone(), mode: 0o755, uid: 3, gid: 4 },
            Request::Mknod { dir: 9, name: name.clone(), mode: libc::S_IFIFO | 0o600, rdev: 0, uid: 5, gid: 6 },
            Request::Symlink { dir: 10, name: name.clone(), target: b"../x".to_vec(), uid: 7, gid: 8 },
            Request::Link { target: 11, dir: 12, name: name.clone() },
            Request::Unlink { dir: 13, name: name.clone(), flags: libc::AT_REMOVEDIR },
            Request::Rename {
                old_dir: 14,
                old_name: name.clone(),
                new_dir: 15,
                new_name: b"other".to_vec(),
                flags: libc::RENAME_NOREPLACE,
            },
            Request::SetAttr {
                fid: 16,
                attr: SetAttr {
                    mode: Some(0o600),
                    size: Some(0),
                    atime: Some(SetTime::Now),
                    mtime: Some(SetTime::At(TimeSpec { sec: 5, nsec: 6 })),
                    ..SetAttr::default()
                },
            },
            Request::Clunk { fid: 17 },
            Request::Fallocate {
                fid: 18,
                mode: libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset: 4096,
                len: 1 << 40,
            },
            Request::Tmpfile { dir: 19, flags: libc::O_EXCL, mode: 0o600, uid: 9, gid: 10 },
        ]
    }

    fn sample_replies() -> Vec<Reply> {
        vec![
            Reply::Empty,
            Reply::FidStat { fid: 9, stat: Stat { ino: 4, mode: libc::S_IFDIR | 0o755, ..Stat::default() } },
            Reply::Stat(Stat { size: 10, ..Stat::default() }),
            Reply::Dirents {
                entries: vec![
                    Dirent { ino: 1, kind: libc::DT_REG, name: b"a".to_vec() },
                    Dirent { ino: 2, kind: libc::DT_DIR, name: b"bb".to_vec() },
                ],
                next_cookie: Some(77),
            },
            Reply::Dirents { entries: Vec::new(), next_cookie: None },
            Reply::Bytes(b"/etc".to_vec()),
            Reply::StatFs(StatFs { fs_type: 0x0102_1994, namelen: 255, ..StatFs::default() }),
        ]
    }

    #[test]
    fn every_request_round_trips() {
        for req in sample_requests() {
            let frame = req.encode().unwrap();
            assert_eq!(Request::decode(&frame).unwrap(), req);
        }
    }

    #[test]
    fn every_reply_round_trips() {
        for reply in sample_replies() {
            let kind = reply.kind();
            let response = Response::Ok(reply);
            let frame = response.encode().unwrap();
            assert_eq!(Response::decode(&frame, kind).unwrap(), response);
        }
        let frame = Response::Err(libc::ENOENT).encode().unwrap();
        assert_eq!(Response::decode(&frame, ReplyKind::FidStat).unwrap(), Response::Err(libc::ENOENT));
    }

    #[test]
    fn bad_frames_are_rejected() {
        let unknown = Encoder::new(999).finish().unwrap();
        assert!(Request::decode(&unknown).is_err());
        let zero = Encoder::new(0).finish().unwrap();
        assert!(Request::decode(&zero).is_err());
        let mut trailing = Request::Stat { fid: 1 }.encode().unwrap();
        trailing.push(0);
        trailing[..4].copy_from_slice(&11u32.to_le_bytes());
        assert!(Request::decode(&trailing).is_err());
        let mut errno0 = Encoder::new(STATUS_ERR);
        errno0.i32(0);
        let errno0 = errno0.finish().unwrap();
        assert!(Response::decode(&errno0, ReplyKind::Empty).is_err());
        let status2 = Encoder::new(2).finish().unwrap();
        assert!(Response::decode(&status2, ReplyKind::Empty).is_err());
        let mut huge_count = Encoder::new(STATUS_OK);
        huge_count.u32(u32::MAX);
        let huge_count = huge_count.finish().unwrap();
        assert!(Response::decode(&huge_count, ReplyKind::Dirents).is_err());
    }

    #[test]
    fn truncated_frames_never_decode() {
        for req in sample_requests() {
            let frame = req.encode().unwrap();
            for cut in 0..frame.len() {
                let mut short = frame[..cut].to_vec();
                if cut >= 4 {
                    let rest = u32::try_from(cut - 4).unwrap();
                    short[..4].copy_from_slice(&rest.to_le_bytes());
                }
                assert!(Request::decode(&short).is_err(), "{req:?} cut at {cut}");
            }
        }
    }

    /// A small xorshift generator: deterministic noise without extra crates.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn byte(&mut self) -> u8 {
            self.next().to_le_bytes()[0]
        }
    }

    #[test]
    fn random_and_mutated_bytes_never_panic() {
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
        let kinds = [
            ReplyKind::Empty,
            ReplyKind::FidStat,
            ReplyKind::Stat,
            ReplyKind::Dirents,
            ReplyKind::Bytes,
            ReplyKind::StatFs,
        ];
        let mut seeds: Vec<Vec<u8>> = sample_requests().iter().map(|r| r.encode().unwrap()).collect();
        seeds.extend(sample_replies().into_iter().map(|r| Response::Ok(r).encode().unwrap()));
        for round in 0..20_000usize {
            let mut frame = if round % 2 == 0 {
                let len = usize::from(noise.byte()) % 96;
                (0..len).map(|_| noise.byte()).collect::<Vec<u8>>()
            } else {
                let seed = &seeds[round / 2 % seeds.len()];
                let mut frame = seed.clone();
                for _ in 0..=(noise.next() % 4) {
                    let at = usize::try_from(noise.next() % (frame.len() as u64)).unwrap();
                    frame[at] = noise.byte();
                }
                frame
            };
            if round % 3 == 0 && frame.len() >= 4 {
                let rest = u32::try_from(frame.len() - 4).unwrap();
                frame[..4].copy_from_slice(&rest.to_le_bytes());
            }
            let _ = Request::decode(&frame);
            for kind in kinds {
                let _ = Response::decode(&frame, kind);
            }
        }
    }
}
