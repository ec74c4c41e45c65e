//! Vectored I/O: `struct iovec` (Linux's `include/uapi/linux/uio.h`).

use super::layout::{Decoder, Encoder, Layout};

/// The most iovecs one call takes (`UIO_MAXIOV`).
pub(crate) const IOV_MAX: usize = 1024;

/// A `struct iovec`: one buffer of a scatter/gather list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Iovec {
    pub base: u64,
    pub len: u64,
}

impl Layout for Iovec {
    const SIZE: usize = 16;

    fn encode_to(&self, e: &mut Encoder) {
        e.u64(self.base).u64(self.len);
    }

    fn decode_from(d: &mut Decoder) -> Iovec {
        Iovec { base: d.u64(), len: d.u64() }
    }
}

impl Iovec {
    /// The iovecs of an array read from the guest.
    pub(crate) fn decode_all(raw: &[u8]) -> impl Iterator<Item = Iovec> + '_ {
        raw.chunks_exact(Self::SIZE).map(Iovec::decode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_linux() {
        assert_eq!(std::mem::size_of::<libc::iovec>(), Iovec::SIZE);
        assert_eq!(Ok(IOV_MAX), usize::try_from(libc::UIO_MAXIOV));
        let v = [Iovec { base: 1, len: 2 }, Iovec { base: 3, len: 4 }];
        let raw: Vec<u8> = v.iter().flat_map(Layout::encode).collect();
        assert_eq!(Iovec::decode_all(&raw).collect::<Vec<_>>(), v);
    }
}
