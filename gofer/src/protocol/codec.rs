//! Cursor-based encoding and decoding of frames and their fields: the
//! framing and the protocol's compound fields, on husk-wire's field codec.

use super::{Dirent, SetAttr, SetTime, Stat, StatFs, TimeSpec, HEADER_LEN, MAX_FRAME};
use crate::{Error, Result};
use husk_wire::Truncated;

/// Builds one frame: the header (length and tag) followed by fields, on
/// the shared field encoder.
pub struct Encoder {
    fields: husk_wire::Encoder,
}

impl Encoder {
    /// Starts a frame whose header carries `tag` (an opcode or a status).
    pub fn new(tag: u16) -> Self {
        let mut fields = husk_wire::Encoder::with_capacity(64);
        fields.u32(0).u16(tag);
        Encoder { fields }
    }

    /// Appends a `u8`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.fields.u8(v);
        self
    }

    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.fields.u32(v);
        self
    }

    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.fields.u64(v);
        self
    }

    /// Appends an `i32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.fields.i32(v);
        self
    }

    /// Appends an `i64`.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.fields.i64(v);
        self
    }

    /// Appends a byte string: `u32` length, then the bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        // A string too long for the length field cannot fit in a frame
        // either; `finish` rejects the frame by its size.
        self.fields.u32(u32::try_from(v.len()).unwrap_or(u32::MAX)).bytes(v);
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
    pub fn finish(self) -> Result<Vec<u8>> {
        let mut buf = self.fields.finish();
        if buf.len() > MAX_FRAME {
            return Err(Error::Protocol(format!("frame of {} bytes exceeds the {MAX_FRAME}-byte limit", buf.len())));
        }
        let rest = u32::try_from(buf.len() - 4).map_err(|_| Error::Protocol("frame length overflows u32".into()))?;
        buf[..4].copy_from_slice(&rest.to_le_bytes());
        Ok(buf)
    }
}

/// Reads the fields of one frame, front to back, on the shared
/// bounds-checked decoder: nothing panics on malformed input.
pub struct Decoder<'a> {
    fields: husk_wire::Decoder<'a>,
}

/// A read past the end of a frame.
impl From<Truncated> for Error {
    fn from(e: Truncated) -> Error {
        Error::Protocol(format!("truncated frame: {e}"))
    }
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
        Decoder { fields: husk_wire::Decoder::new(buf) }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.fields.remaining()
    }

    /// Reads a `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.fields.u8()?)
    }

    /// Reads a `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(self.fields.u16()?)
    }

    /// Reads a `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(self.fields.u32()?)
    }

    /// Reads a `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(self.fields.u64()?)
    }

    /// Reads an `i32`.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(self.fields.i32()?)
    }

    /// Reads an `i64`.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.fields.i64()?)
    }

    /// Reads a byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.u32()?;
        let len = usize::try_from(len).map_err(|_| Error::Protocol(format!("byte string of {len} bytes")))?;
        Ok(self.fields.take(len)?)
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
        if self.remaining() == 0 {
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
    fn frame_bytes_are_pinned() {
        let mut enc = Encoder::new(0x0102);
        enc.u8(9).u32(0x0a0b_0c0d).bytes(b"ab").opt_u64(None).opt_u32(Some(3)).i64(-1);
        let mut want =
            vec![27, 0, 0, 0, 0x02, 0x01, 9, 0x0d, 0x0c, 0x0b, 0x0a, 2, 0, 0, 0, b'a', b'b', 0, 1, 3, 0, 0, 0];
        want.extend_from_slice(&[0xff; 8]);
        assert_eq!(enc.finish().unwrap(), want);
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
        assert_eq!(
            Decoder::new(&[1, 2, 3]).u32().unwrap_err().to_string(),
            "gofer protocol: truncated frame: wanted 4 bytes at offset 0, have 3"
        );
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
