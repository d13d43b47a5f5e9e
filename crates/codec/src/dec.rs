//! The decoder: reads little-endian fields from a slice, checking every read against the bytes
//! left, so that bad bytes give a [`DecodeError`] and never a panic.

use crate::error::DecodeError;

/// Reads little-endian values, varints and byte strings from a slice.
#[derive(Debug, Clone)]
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    /// A decoder at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Dec { buf, pos: 0 }
    }

    /// Bytes consumed so far (the offset of the next read).
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether everything was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes not yet consumed.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Takes `n` raw bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let left = self.remaining();
        if left < n {
            return Err(DecodeError::Truncated {
                at: self.pos,
                need: n,
                left,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Takes `N` raw bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// Reads a byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    /// Reads a u16.
    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    /// Reads a u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// Reads a u64.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads an i64 (two's complement).
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// Reads a LEB128 varint of at most 10 bytes; bits past the 64th are dropped, as the
    /// formats that use varints always have.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let at = self.pos;
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(DecodeError::Varint { at })
    }

    /// An [`DecodeError::Invalid`] at the current offset: for a format's own checks.
    pub fn invalid(&self, what: &'static str) -> DecodeError {
        DecodeError::Invalid { at: self.pos, what }
    }

    /// Reads a u64 item count that must be plausible for the bytes left (each item takes at
    /// least `min_item` bytes), so that a damaged count cannot make a decoder allocate or loop
    /// for items that are not there.
    pub fn count(&mut self, min_item: usize) -> Result<usize, DecodeError> {
        let n = self.u64()?;
        let fits = usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(min_item.max(1)) <= self.remaining());
        fits.ok_or_else(|| self.invalid("count exceeds the record"))
    }

    /// Reads a u32 length and that many bytes.
    pub fn bytes_u32(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()?;
        self.take(n as usize)
    }

    /// Reads a varint length and that many bytes.
    pub fn bytes_varint(&mut self) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| DecodeError::Length { at, len: n })?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enc::Enc;

    #[test]
    fn counts_larger_than_the_record_are_invalid() {
        let mut e = Enc::new();
        e.u64(3);
        e.raw(&[0u8; 24]);
        let b = e.into_bytes();
        assert_eq!(Dec::new(&b).count(8), Ok(3));
        assert!(matches!(
            Dec::new(&b).count(9),
            Err(DecodeError::Invalid { at: 8, .. })
        ));
        let huge = u64::MAX.to_le_bytes();
        assert!(Dec::new(&huge).count(0).is_err());
    }

    #[test]
    fn fields_round_trip_little_endian() {
        let mut e = Enc::new();
        e.u8(1);
        e.u16(0x0302);
        e.u32(0x0706_0504);
        e.u64(0x0f0e_0d0c_0b0a_0908);
        e.i64(-2);
        assert_eq!(
            &e.as_bytes()[..15],
            &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
        );
        let b = e.into_bytes();
        let mut d = Dec::new(&b);
        assert_eq!(d.u8(), Ok(1));
        assert_eq!(d.u16(), Ok(0x0302));
        assert_eq!(d.u32(), Ok(0x0706_0504));
        assert_eq!(d.u64(), Ok(0x0f0e_0d0c_0b0a_0908));
        assert_eq!(d.i64(), Ok(-2));
        assert!(d.is_empty());
    }

    #[test]
    fn a_short_read_is_an_error_that_names_the_offset_and_consumes_nothing() {
        let mut d = Dec::new(&[1, 2, 3, 4, 5]);
        assert_eq!(d.u8(), Ok(1));
        assert_eq!(
            d.u64(),
            Err(DecodeError::Truncated {
                at: 1,
                need: 8,
                left: 4
            })
        );
        assert_eq!(d.pos(), 1);
        assert_eq!(d.u32(), Ok(u32::from_le_bytes([2, 3, 4, 5])));
        assert_eq!(
            d.take(usize::MAX).unwrap_err().to_string(),
            "truncated at offset 5: need 18446744073709551615 bytes, 0 left"
        );
    }

    #[test]
    fn varints_round_trip_and_refuse_truncation_and_overlength() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut e = Enc::new();
            e.varint(v);
            let b = e.into_bytes();
            assert_eq!(Dec::new(&b).varint(), Ok(v));
            assert!(Dec::new(&b[..b.len() - 1]).varint().is_err());
        }
        assert_eq!(
            Dec::new(&[0xff; 11]).varint(),
            Err(DecodeError::Varint { at: 0 })
        );
    }

    #[test]
    fn length_prefixed_bytes_come_in_two_prefixes() {
        let mut e = Enc::new();
        e.bytes_u32(b"abc");
        e.bytes_varint(b"de");
        assert_eq!(e.as_bytes(), b"\x03\x00\x00\x00abc\x02de");
        let b = e.into_bytes();
        let mut d = Dec::new(&b);
        assert_eq!(d.bytes_u32(), Ok(&b"abc"[..]));
        assert_eq!(d.bytes_varint(), Ok(&b"de"[..]));
        // A length larger than what is left is truncation, not an allocation.
        let mut d = Dec::new(b"\xff\xff\xff\xffab");
        assert!(matches!(
            d.bytes_u32(),
            Err(DecodeError::Truncated { at: 4, .. })
        ));
        let mut d = Dec::new(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01");
        assert!(d.bytes_varint().is_err());
    }
}
