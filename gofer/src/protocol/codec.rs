//! Cursor-based encoding and decoding of frames and their fields.

use super::{Dirent, SetAttr, SetTime, Stat, StatFs, TimeSpec, HEADER_LEN, MAX_FRAME};
use crate::{Error, Result};

/// Builds one frame: the header (length and tag) followed by fields.
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// Starts a frame whose header carries `tag` (an opcode or a status).
    pub fn new(tag: u16) -> Self {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&tag.to_le_bytes());
        Encoder { buf }
    }

    /// Appends a `u8`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `i32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `i64`.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a byte string: `u32` length, then the bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        // A string too long for the length field cannot fit in a frame
        // either; `finish` rejects the frame by its size.
        self.u32(u32::try_from(v.len()).unwrap_or(u32::MAX));
        self.buf.extend_from_slice(v);
        self
    }

    /// Appends an optional `u32`: a presence byte, then the value if present.
    pub fn opt_u32(&mut self, v: Option<u32>) -> &mut Self {
        match v {
            None => self.u8(0),
            Some(v) => self.u8(1).u32(v),
        }
    }

    /// Appends an optional `u64`: a presence byte, then the value if present.
    pub fn opt_u64(&mut self, v: Option<u64>) -> &mut Self {
        match v {
            None => self.u8(0),
            Some(v) => self.u8(1).u64(v),
        }
    }

    /// Appends a [`TimeSpec`].
    pub fn timespec(&mut self, t: &TimeSpec) -> &mut Self {
        self.i64(t.sec).i64(t.nsec)
    }

    /// Appends an optional [`SetTime`]: tag 0 (unchanged), 1 (now) or 2
    /// (a time follows).
    pub fn set_time(&mut self, t: Option<SetTime>) -> &mut Self {
        match t {
            None => self.u8(0),
            Some(SetTime::Now) => self.u8(1),
            Some(SetTime::At(ts)) => self.u8(2).timespec(&ts),
        }
    }

    /// Appends a [`Stat`].
    pub fn stat(&mut self, s: &Stat) -> &mut Self {
        self.u64(s.dev)
            .u64(s.ino)
            .u64(s.nlink)
            .u32(s.mode)
            .u32(s.uid)
            .u32(s.gid)
            .u64(s.rdev)
            .u64(s.size)
            .u64(s.blksize)
            .u64(s.blocks)
            .timespec(&s.atime)
            .timespec(&s.mtime)
            .timespec(&s.ctime)
    }

    /// Appends a [`StatFs`].
    pub fn statfs(&mut self, s: &StatFs) -> &mut Self {
        self.u64(s.fs_type)
            .u64(s.bsize)
            .u64(s.blocks)
            .u64(s.bfree)
            .u64(s.bavail)
            .u64(s.files)
            .u64(s.ffree)
            .u64(s.namelen)
            .u64(s.frsize)
            .u64(s.flags)
    }

    /// Appends a [`SetAttr`].
    pub fn set_attr(&mut self, a: &SetAttr) -> &mut Self {
        self.opt_u32(a.mode).opt_u32(a.uid).opt_u32(a.gid).opt_u64(a.size).set_time(a.atime).set_time(a.mtime)
    }

    /// Appends a [`Dirent`].
    pub fn dirent(&mut self, d: &Dirent) -> &mut Self {
        self.u64(d.ino).u8(d.kind).bytes(&d.name)
    }

    /// Fills in the length field and returns the frame.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        if self.buf.len() > MAX_FRAME {
            return Err(Error::Protocol(format!(
                "frame of {} bytes exceeds the {MAX_FRAME}-byte limit",
                self.buf.len()
            )));
        }
        let rest =
            u32::try_from(self.buf.len() - 4).map_err(|_| Error::Protocol("frame length overflows u32".into()))?;
        self.buf[..4].copy_from_slice(&rest.to_le_bytes());
        Ok(self.buf)
    }
}

/// Reads the fields of one frame, front to back. Every read checks bounds;
/// nothing panics on malformed input.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// Checks a frame's header and returns its tag and a decoder positioned
    /// at the payload.
    pub fn frame(frame: &'a [u8]) -> Result<(u16, Decoder<'a>)> {
        if frame.len() > MAX_FRAME {
            return Err(Error::Protocol(format!("frame of {} bytes exceeds the {MAX_FRAME}-byte limit", frame.len())));
        }
        let mut header = Decoder::new(frame);
        let len = header.u32()?;
        let tag = header.u16()?;
        let rest = frame.len() - 4;
        if usize::try_from(len).ok() != Some(rest) {
            return Err(Error::Protocol(format!("frame length field says {len} but {rest} bytes follow it")));
        }
        Ok((tag, Decoder::new(&frame[HEADER_LEN..])))
    }

    /// A decoder over `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.buf.len()).ok_or_else(|| {
            Error::Protocol(format!(
                "truncated frame: wanted {n} bytes at offset {}, have {}",
                self.pos,
                self.buf.len() - self.pos
            ))
        })?;
        let field = &self.buf[self.pos..end];
        self.pos = end;
        Ok(field)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads a `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    /// Reads a `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    /// Reads a `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// Reads a `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an `i32`.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    /// Reads an `i64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// Reads a byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.u32()?;
        let len = usize::try_from(len).map_err(|_| Error::Protocol(format!("byte string of {len} bytes")))?;
        self.take(len)
    }

    fn presence(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(Error::Protocol(format!("bad presence byte {other}"))),
        }
    }

    /// Reads an optional `u32`.
    pub fn opt_u32(&mut self) -> Result<Option<u32>> {
        Ok(if self.presence()? { Some(self.u32()?) } else { None })
    }

    /// Reads an optional `u64`.
    pub fn opt_u64(&mut self) -> Result<Option<u64>> {
        Ok(if self.presence()? { Some(self.u64()?) } else { None })
    }

    /// Reads a [`TimeSpec`].
    pub fn timespec(&mut self) -> Result<TimeSpec> {
        Ok(TimeSpec { sec: self.i64()?, nsec: self.i64()? })
    }

    /// Reads an optional [`SetTime`].
    pub fn set_time(&mut self) -> Result<Option<SetTime>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(SetTime::Now)),
            2 => Ok(Some(SetTime::At(self.timespec()?))),
            other => Err(Error::Protocol(format!("bad set-time tag {other}"))),
        }
    }

    /// Reads a [`Stat`].
    pub fn stat(&mut self) -> Result<Stat> {
        Ok(Stat {
            dev: self.u64()?,
            ino: self.u64()?,
            nlink: self.u64()?,
            mode: self.u32()?,
            uid: self.u32()?,
            gid: self.u32()?,
            rdev: self.u64()?,
            size: self.u64()?,
            blksize: self.u64()?,
            blocks: self.u64()?,
            atime: self.timespec()?,
            mtime: self.timespec()?,
            ctime: self.timespec()?,
        })
    }

    /// Reads a [`StatFs`].
    pub fn statfs(&mut self) -> Result<StatFs> {
        Ok(StatFs {
            fs_type: self.u64()?,
            bsize: self.u64()?,
            blocks: self.u64()?,
            bfree: self.u64()?,
            bavail: self.u64()?,
            files: self.u64()?,
            ffree: self.u64()?,
            namelen: self.u64()?,
            frsize: self.u64()?,
            flags: self.u64()?,
        })
    }

    /// Reads a [`SetAttr`].
    pub fn set_attr(&mut self) -> Result<SetAttr> {
        Ok(SetAttr {
            mode: self.opt_u32()?,
            uid: self.opt_u32()?,
            gid: self.opt_u32()?,
            size: self.opt_u64()?,
            atime: self.set_time()?,
            mtime: self.set_time()?,
        })
    }

    /// Reads a [`Dirent`].
    pub fn dirent(&mut self) -> Result<Dirent> {
        Ok(Dirent { ino: self.u64()?, kind: self.u8()?, name: self.bytes()?.to_vec() })
    }

    /// Ends decoding; trailing bytes are a protocol error.
    pub fn finish(self) -> Result<()> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(Error::Protocol(format!("{} trailing bytes after the payload", self.remaining())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let stat = Stat {
            dev: 1,
            ino: 2,
            nlink: 3,
            mode: 0o100644,
            uid: 5,
            gid: 6,
            rdev: 7,
            size: 8,
            blksize: 9,
            blocks: 10,
            atime: TimeSpec { sec: -1, nsec: 11 },
            mtime: TimeSpec { sec: 12, nsec: 13 },
            ctime: TimeSpec { sec: 14, nsec: 15 },
        };
        let attr = SetAttr {
            mode: Some(0o755),
            uid: None,
            gid: Some(3),
            size: Some(u64::MAX),
            atime: Some(SetTime::Now),
            mtime: Some(SetTime::At(TimeSpec { sec: 1, nsec: 2 })),
        };
        let mut enc = Encoder::new(7);
        enc.u8(1).i32(-5).bytes(b"name").stat(&stat).set_attr(&attr).set_attr(&SetAttr::default());
        let frame = enc.finish().unwrap();
        let (tag, mut dec) = Decoder::frame(&frame).unwrap();
        assert_eq!(tag, 7);
        assert_eq!(dec.u8().unwrap(), 1);
        assert_eq!(dec.i32().unwrap(), -5);
        assert_eq!(dec.bytes().unwrap(), b"name");
        assert_eq!(dec.stat().unwrap(), stat);
        assert_eq!(dec.set_attr().unwrap(), attr);
        assert_eq!(dec.set_attr().unwrap(), SetAttr::default());
        dec.finish().unwrap();
    }

    #[test]
    fn header_must_match_frame() {
        let mut frame = Encoder::new(1).finish().unwrap();
        assert!(Decoder::frame(&frame).is_ok());
        frame.push(0);
        assert!(Decoder::frame(&frame).is_err());
        assert!(Decoder::frame(&frame[..3]).is_err());
        assert!(Decoder::frame(&[]).is_err());
    }

    #[test]
    fn truncation_and_trailing_bytes_are_errors() {
        let mut dec = Decoder::new(&[1, 2, 3]);
        assert!(dec.u32().is_err());
        let mut dec = Decoder::new(&[5, 0, 0, 0, b'a']);
        assert!(dec.bytes().is_err());
        let mut dec = Decoder::new(&[0xff, 0xff, 0xff, 0xff]);
        assert!(dec.bytes().is_err());
        let mut dec = Decoder::new(&[1, 2]);
        assert_eq!(dec.u8().unwrap(), 1);
        assert!(dec.finish().is_err());
        assert!(Decoder::new(&[2]).opt_u32().is_err());
        assert!(Decoder::new(&[3]).set_time().is_err());
    }

    #[test]
    fn oversized_frames_are_refused() {
        let mut enc = Encoder::new(1);
        enc.bytes(&vec![0u8; MAX_FRAME]);
        assert!(enc.finish().is_err());
        let big = vec![0u8; MAX_FRAME + 1];
        assert!(Decoder::frame(&big).is_err());
    }
}
