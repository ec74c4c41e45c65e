//! The one byte-level encoder and decoder of husk: fields in little-endian
//! order, appended to a buffer or read from a cursor. The gofer's frames
//! (`husk_gofer::protocol`) and the sentry's guest structures
//! (`abi::layout`) are both built on it, so each integer width is encoded
//! in exactly one place.
//!
//! Decoding has two policies over one cursor:
//! * [`Decoder`] is bounds-checked and fallible: a read past the end is a
//!   [`Truncated`] error and moves nothing. A peer's frame is untrusted
//!   input, and a short one must be refused.
//! * [`ZeroFill`] wraps a [`Decoder`] for guest structures, whose Linux
//!   semantics are that fields the guest did not supply read as zero: a
//!   read past the end yields zero, and so does every read after it.
#![cfg_attr(test, allow(clippy::unwrap_used))]

/// Appends fields to a buffer.
#[derive(Clone, Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty encoder.
    #[inline]
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// An empty encoder with room for `n` bytes.
    #[inline]
    pub fn with_capacity(n: usize) -> Encoder {
        Encoder { buf: Vec::with_capacity(n) }
    }

    /// Appends a `u8`.
    #[inline]
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    /// Appends a `u16`.
    #[inline]
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `i16`.
    #[inline]
    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u32`.
    #[inline]
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `i32`.
    #[inline]
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u64`.
    #[inline]
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends an `i64`.
    #[inline]
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends the bytes as they are (no length).
    #[inline]
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }

    /// Appends a fixed-size, NUL-padded character array (e.g. `utsname`
    /// fields): at most `size - 1` bytes of `v`, then zeros up to `size`.
    #[inline]
    pub fn cstr_array(&mut self, v: &[u8], size: usize) -> &mut Self {
        let n = v.len().min(size.saturating_sub(1));
        self.buf.extend_from_slice(&v[..n]);
        self.zeros(size - n)
    }

    /// Appends `n` zero bytes.
    #[inline]
    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.buf.resize(self.buf.len() + n, 0);
        self
    }

    /// Pads with zeros up to a multiple of `align`.
    #[inline]
    pub fn align(&mut self, align: usize) -> &mut Self {
        let rem = self.buf.len() % align;
        if rem != 0 {
            self.zeros(align - rem);
        }
        self
    }

    /// Bytes appended so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was appended yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes appended so far.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The encoded bytes.
    #[inline]
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// A read wanted more bytes than the buffer has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("wanted {wanted} bytes at offset {offset}, have {have}")]
pub struct Truncated {
    /// Bytes the read wanted.
    pub wanted: usize,
    /// Where the read started.
    pub offset: usize,
    /// Bytes left from there.
    pub have: usize,
}

/// Reads fields front to back. Every read checks bounds; a failed read
/// leaves the cursor where it was. Nothing panics on short input.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder { buf, pos: 0 }
    }

    /// Bytes read (or skipped) so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.buf.len()).ok_or(Truncated {
            wanted: n,
            offset: self.pos,
            have: self.remaining(),
        })?;
        let field = &self.buf[self.pos..end];
        self.pos = end;
        Ok(field)
    }

    /// Every byte not read yet; the decoder is at the end afterwards.
    #[inline]
    pub fn take_rest(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        self.pos = self.buf.len();
        rest
    }

    /// Steps over `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), Truncated> {
        self.take(n).map(|_| ())
    }

    /// The next `N` bytes as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Reads a `u8`.
    #[inline]
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        self.array().map(u8::from_le_bytes)
    }

    /// Reads a `u16`.
    #[inline]
    pub fn u16(&mut self) -> Result<u16, Truncated> {
        self.array().map(u16::from_le_bytes)
    }

    /// Reads an `i16`.
    #[inline]
    pub fn i16(&mut self) -> Result<i16, Truncated> {
        self.array().map(i16::from_le_bytes)
    }

    /// Reads a `u32`.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        self.array().map(u32::from_le_bytes)
    }

    /// Reads an `i32`.
    #[inline]
    pub fn i32(&mut self) -> Result<i32, Truncated> {
        self.array().map(i32::from_le_bytes)
    }

    /// Reads a `u64`.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        self.array().map(u64::from_le_bytes)
    }

    /// Reads an `i64`.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, Truncated> {
        self.array().map(i64::from_le_bytes)
    }
}

/// A [`Decoder`] whose reads past the end yield zero: once a read or a
/// skip runs off the end, it and every later read are zero, as if the
/// buffer went on with zeros.
#[derive(Clone, Debug)]
pub struct ZeroFill<'a> {
    inner: Decoder<'a>,
}

impl<'a> ZeroFill<'a> {
    /// A zero-filling decoder at the start of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> ZeroFill<'a> {
        ZeroFill { inner: Decoder::new(buf) }
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> [u8; N] {
        self.inner.array().unwrap_or_else(|_| {
            self.inner.take_rest();
            [0; N]
        })
    }

    /// Reads a `u8`.
    #[inline]
    pub fn u8(&mut self) -> u8 {
        u8::from_le_bytes(self.array())
    }

    /// Reads a `u16`.
    #[inline]
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    /// Reads an `i16`.
    #[inline]
    pub fn i16(&mut self) -> i16 {
        i16::from_le_bytes(self.array())
    }

    /// Reads a `u32`.
    #[inline]
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// Reads an `i32`.
    #[inline]
    pub fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.array())
    }

    /// Reads a `u64`.
    #[inline]
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// Reads an `i64`.
    #[inline]
    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.array())
    }

    /// Steps over `n` bytes (padding, fields nobody reads).
    #[inline]
    pub fn skip(&mut self, n: usize) -> &mut Self {
        if self.inner.skip(n).is_err() {
            self.inner.take_rest();
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_is_little_endian() {
        let mut e = Encoder::new();
        e.u8(0x01).u16(0x0302).i16(-2).u32(0x0706_0504).i32(-3).u64(0x0f0e_0d0c_0b0a_0908).i64(-4);
        let b = e.finish();
        assert_eq!(b.len(), 1 + 2 + 2 + 4 + 4 + 8 + 8);
        assert_eq!(&b[..3], &[0x01, 0x02, 0x03]);
        assert_eq!(&b[3..5], &[0xfe, 0xff]);
        assert_eq!(&b[5..9], &[0x04, 0x05, 0x06, 0x07]);
        assert_eq!(&b[13..21], &[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]);
        let mut d = Decoder::new(&b);
        assert_eq!(d.u8(), Ok(0x01));
        assert_eq!(d.u16(), Ok(0x0302));
        assert_eq!(d.i16(), Ok(-2));
        assert_eq!(d.u32(), Ok(0x0706_0504));
        assert_eq!(d.i32(), Ok(-3));
        assert_eq!(d.u64(), Ok(0x0f0e_0d0c_0b0a_0908));
        assert_eq!(d.i64(), Ok(-4));
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn padding_and_character_arrays() {
        let mut e = Encoder::new();
        e.u32(7).align(8).i64(-2).cstr_array(b"Linux", 8).zeros(2);
        assert_eq!(e.len(), 26);
        assert_eq!(&e.as_bytes()[4..8], &[0; 4]);
        assert_eq!(&e.as_bytes()[16..24], b"Linux\0\0\0");
        let mut e = Encoder::new();
        e.cstr_array(b"abcdef", 4);
        assert_eq!(e.finish(), b"abc\0", "truncated and terminated");
        let mut e = Encoder::new();
        assert!(e.is_empty());
        e.align(8).cstr_array(b"x", 0);
        assert!(e.is_empty(), "aligning nothing and a zero-size array add nothing");
    }

    #[test]
    fn short_reads_fail_and_move_nothing() {
        let mut d = Decoder::new(&[1, 2, 3]);
        assert_eq!(d.u32(), Err(Truncated { wanted: 4, offset: 0, have: 3 }));
        assert_eq!(d.position(), 0);
        assert_eq!(d.u16(), Ok(0x0201));
        assert_eq!(d.u16(), Err(Truncated { wanted: 2, offset: 2, have: 1 }));
        assert_eq!(d.skip(2), Err(Truncated { wanted: 2, offset: 2, have: 1 }));
        assert_eq!(d.take(usize::MAX), Err(Truncated { wanted: usize::MAX, offset: 2, have: 1 }));
        assert_eq!(d.take_rest(), &[3]);
        assert_eq!(d.u8(), Err(Truncated { wanted: 1, offset: 3, have: 0 }));
        assert_eq!(Truncated { wanted: 4, offset: 8, have: 1 }.to_string(), "wanted 4 bytes at offset 8, have 1");
    }

    #[test]
    fn zero_fill_reads_past_the_end_as_zero() {
        let b = [1, 0, 0, 0, 2, 0];
        let mut d = ZeroFill::new(&b);
        assert_eq!(d.u32(), 1);
        assert_eq!(d.u32(), 0, "a field cut short reads as zero");
        assert_eq!(d.u16(), 0, "and so does every field after it, not the bytes it left");
        let mut d = ZeroFill::new(&b);
        d.skip(4);
        assert_eq!(d.u16(), 2);
        d.skip(8);
        assert_eq!(d.u8(), 0);
        let mut d = ZeroFill::new(&[0xff, 0xff]);
        assert_eq!(d.i16(), -1);
        assert_eq!((d.u8(), d.i32(), d.u64(), d.i64()), (0, 0, 0, 0));
    }
}
