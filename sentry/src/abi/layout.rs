//! Byte-level encoding of guest structures. Guest structures are built and
//! parsed field by field in little-endian order, so no handler needs `unsafe`
//! or relies on the host's struct layout.

/// A guest structure with a fixed layout: one definition of its fields'
/// order, sizes and padding serves both directions (gVisor's
/// `marshal.Marshallable`, which `+marshal` generates).
pub(crate) trait Layout: Sized {
    /// The structure's size in guest memory.
    const SIZE: usize;

    fn encode_to(&self, e: &mut Encoder);

    /// Reads the structure; bytes past the end of the buffer read as zero.
    fn decode_from(d: &mut Decoder) -> Self;

    fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::with_capacity(Self::SIZE);
        self.encode_to(&mut e);
        e.finish()
    }

    fn decode(b: &[u8]) -> Self {
        Self::decode_from(&mut Decoder::new(b))
    }
}

/// Builds a guest structure field by field.
#[derive(Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder::default()
    }

    pub fn with_capacity(n: usize) -> Encoder {
        Encoder { buf: Vec::with_capacity(n) }
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i16(&mut self, v: i16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }

    /// A fixed-size, NUL-padded character array (e.g. `utsname` fields).
    pub fn cstr_array(&mut self, v: &[u8], size: usize) -> &mut Self {
        let n = v.len().min(size.saturating_sub(1));
        self.buf.extend_from_slice(&v[..n]);
        self.buf.resize(self.buf.len() + (size - n), 0);
        self
    }

    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.buf.resize(self.buf.len() + n, 0);
        self
    }

    /// Pads with zeros up to a multiple of `align`.
    pub fn align(&mut self, align: usize) -> &mut Self {
        let rem = self.buf.len() % align;
        if rem != 0 {
            self.zeros(align - rem);
        }
        self
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// Reads a guest structure field by field; reads past the end yield zero.
pub(crate) struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Decoder<'a> {
        Decoder { buf, pos: 0 }
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.buf.get(self.pos..self.pos + N) {
            out.copy_from_slice(src);
        }
        self.pos += N;
        out
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }

    pub(crate) fn i16(&mut self) -> i16 {
        i16::from_le_bytes(self.take())
    }

    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }

    pub(crate) fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.take())
    }

    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }

    pub(crate) fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }

    pub(crate) fn skip(&mut self, n: usize) -> &mut Self {
        self.pos += n;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_padding() {
        let mut e = Encoder::new();
        e.u32(7).align(8).i64(-2).cstr_array(b"Linux", 8);
        let b = e.finish();
        assert_eq!(b.len(), 24);
        assert_eq!(&b[16..22], b"Linux\0");
        let mut d = Decoder::new(&b);
        assert_eq!(d.u32(), 7);
        d.skip(4);
        assert_eq!(d.i64(), -2);
        d.skip(8);
        assert_eq!(d.u64(), 0, "reads past the end are zero");
    }

    #[test]
    fn cstr_array_truncates_and_terminates() {
        let mut e = Encoder::new();
        e.cstr_array(b"abcdef", 4);
        assert_eq!(e.finish(), b"abc\0");
    }
}
