//! Byte-level encoding of guest structures. Guest structures are built and
//! parsed field by field in little-endian order, so no handler needs `unsafe`
//! or relies on the host's struct layout. The field codec is husk-wire's,
//! the one the gofer's frames use too; a guest structure reads with its
//! zero-filling decoder, since fields a guest did not supply read as zero.

/// Builds a guest structure field by field.
pub(crate) use husk_wire::Encoder;
/// Reads a guest structure field by field; reads past the end yield zero.
pub(crate) use husk_wire::ZeroFill as Decoder;

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

#[cfg(test)]
mod tests {
    use super::*;

    /// Guest structures read with the zero-filling decoder.
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
}
