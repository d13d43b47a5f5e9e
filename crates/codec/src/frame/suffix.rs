//! A checksum at the end of a structure: `body | crc u32`, the crc over the body. The frame
//! of structures whose header is their own (a superblock at fixed offsets, a block whose
//! counts place the checksum): the structure encodes its fields, [`Suffix`] seals and opens.

use super::FrameError;
use crate::checksum::{crc32c, masked_crc32c};
use crate::dec::Dec;
use crate::enc::Enc;

/// Which CRC-32C a structure stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crc {
    /// CRC-32C of the bytes.
    Plain,
    /// CRC-32C masked as LevelDB does (`rotate_right(crc, 15) + 0xa282ead8`), so that the
    /// checksum of bytes holding checksums differs from theirs (SMRDB's formats).
    Masked,
}

impl Crc {
    /// This checksum of `b`.
    pub fn of(self, b: &[u8]) -> u32 {
        match self {
            Crc::Plain => crc32c(b),
            Crc::Masked => masked_crc32c(b),
        }
    }
}

/// A checksum suffix: its structure's name (for messages) and which CRC it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suffix {
    name: &'static str,
    crc: Crc,
}

impl Suffix {
    /// A suffix holding the plain CRC-32C of the body.
    pub const fn plain(name: &'static str) -> Self {
        Suffix {
            name,
            crc: Crc::Plain,
        }
    }

    /// A suffix holding the masked CRC-32C of the body.
    pub const fn masked(name: &'static str) -> Self {
        Suffix {
            name,
            crc: Crc::Masked,
        }
    }

    /// The name used in error messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Which CRC it stores.
    pub const fn crc(&self) -> Crc {
        self.crc
    }

    /// Appends the checksum of everything `e` holds.
    pub fn seal(&self, e: &mut Enc) {
        let c = self.crc.of(e.as_bytes());
        e.u32(c);
    }

    /// Writes the checksum of `b[..at]` into `b[at..at + 4]` (a structure laid out in a
    /// zeroed sector; the bytes after the checksum are not covered).
    ///
    /// # Panics
    /// If `b` is shorter than `at + 4` (the encoder sized it).
    pub fn seal_at(&self, b: &mut [u8], at: usize) {
        let c = self.crc.of(&b[..at]);
        b[at..at + super::CHECKSUM_LEN].copy_from_slice(&c.to_le_bytes());
    }

    /// Checks `b`, a body followed by its checksum, and returns the body.
    pub fn open<'a>(&self, b: &'a [u8]) -> Result<&'a [u8], FrameError> {
        let at = b.len().saturating_sub(super::CHECKSUM_LEN);
        self.open_at(b, at)
    }

    /// Checks the checksum at `b[at..at + 4]` of the bytes before it and returns them (`b`
    /// may hold more bytes after the checksum, which it does not cover).
    pub fn open_at<'a>(&self, b: &'a [u8], at: usize) -> Result<&'a [u8], FrameError> {
        let mut d = Dec::new(b);
        let body = d.take(at)?;
        let stored = d.u32()?;
        self.verify(body, stored)?;
        Ok(body)
    }

    /// Checks a checksum stored apart from the bytes it covers (a header field holding the
    /// checksum of a payload).
    pub fn verify(&self, covered: &[u8], stored: u32) -> Result<(), FrameError> {
        let computed = self.crc.of(covered);
        if stored != computed {
            return Err(FrameError::Checksum {
                name: self.name,
                stored,
                computed,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: Suffix = Suffix::plain("block");
    const MASKED: Suffix = Suffix::masked("block");

    #[test]
    fn the_suffix_is_the_crc_of_the_body_plain_or_masked() {
        for (s, crc) in [(PLAIN, crc32c(b"body")), (MASKED, masked_crc32c(b"body"))] {
            let mut e = Enc::new();
            e.raw(b"body");
            s.seal(&mut e);
            let b = e.into_bytes();
            assert_eq!(&b[4..], &crc.to_le_bytes());
            assert_eq!(s.open(&b), Ok(&b"body"[..]));
            let mut z = vec![0u8; 16];
            z[..4].copy_from_slice(b"body");
            s.seal_at(&mut z, 4);
            assert_eq!(&z[..8], &b[..]);
            assert_eq!(s.open_at(&z, 4), Ok(&b"body"[..]));
            assert_eq!(s.crc().of(b"body"), crc);
        }
        assert_ne!(crc32c(b"body"), masked_crc32c(b"body"));
    }

    #[test]
    fn every_flip_and_every_truncation_is_an_error() {
        let mut e = Enc::new();
        e.raw(b"some body");
        MASKED.seal(&mut e);
        let b = e.into_bytes();
        for i in 0..b.len() {
            for bit in 0..8 {
                let mut c = b.clone();
                c[i] ^= 1 << bit;
                assert!(
                    matches!(MASKED.open(&c), Err(FrameError::Checksum { .. })),
                    "flip at {i}"
                );
            }
        }
        for n in 0..4 {
            assert!(matches!(
                MASKED.open(&b[..n]),
                Err(FrameError::Truncated(_))
            ));
        }
        assert!(matches!(
            MASKED.open_at(&b, b.len()),
            Err(FrameError::Truncated(_))
        ));
        assert_eq!(
            PLAIN.verify(b"x", 7).unwrap_err().to_string(),
            format!(
                "block checksum mismatch (stored 0x00000007, computed {:#010x})",
                crc32c(b"x")
            )
        );
    }
}
