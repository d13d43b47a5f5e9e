//! Buffers aligned for `O_DIRECT` (4096 bytes: enough for every logical block size Linux
//! supports), used where a caller's buffer is not aligned itself.

/// One aligned block.
#[repr(C, align(4096))]
#[derive(Clone, Copy)]
struct Block([u8; ALIGN]);

/// The alignment of every [`AlignedBuf`].
pub const ALIGN: usize = 4096;

/// A zeroed buffer of whole 4096-byte blocks, 4096-byte aligned.
pub struct AlignedBuf {
    blocks: Vec<Block>,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` bytes (rounded up to whole blocks inside).
    pub fn new(len: usize) -> AlignedBuf {
        AlignedBuf {
            blocks: vec![Block([0; ALIGN]); len.div_ceil(ALIGN)],
            len,
        }
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `blocks` is a live allocation of `blocks.len() * ALIGN >= len` initialised
        // bytes (Block is plain bytes with no padding).
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.len) }
    }

    /// The buffer's bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr().cast::<u8>(), self.len) }
    }
}

/// Whether `buf` can go to `O_DIRECT` as it is (aligned start and length).
pub fn is_aligned(buf: &[u8]) -> bool {
    (buf.as_ptr() as usize).is_multiple_of(ALIGN) && buf.len().is_multiple_of(512)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_of_the_asked_length() {
        for len in [512, 4096, 4096 * 3 + 512, 1 << 20] {
            let mut b = AlignedBuf::new(len);
            assert_eq!(b.as_slice().len(), len);
            assert!(is_aligned(b.as_slice()));
            assert!(b.as_slice().iter().all(|&x| x == 0));
            b.as_mut_slice()[len - 1] = 7;
            assert_eq!(b.as_slice()[len - 1], 7);
        }
        let v = vec![0u8; 8192 + 1];
        let off = if is_aligned(&v[..4096]) { 1 } else { 0 };
        assert!(!is_aligned(&v[off..off + 4096]) || off == 0);
    }
}
