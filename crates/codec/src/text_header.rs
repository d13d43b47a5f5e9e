//! The header of an image whose configuration travels inside it as text (the zoned disk image
//! and the dm-smr image): 8-byte magic, version, header length, text length, flags, a fixed
//! number of little-endian `u64` layout fields, the text, and a CRC-32C over all of it.
//!
//! ```text
//! offset 0   magic[8]
//!        8   version u32
//!       12   header_len u32   (= 24 + 8 * fields + text_len; the CRC follows it)
//!       16   text_len u32
//!       20   flags u32
//!       24   fields u64 * N
//!  24 + 8N   text[text_len]   (UTF-8)
//! header_len crc32c u32       (of bytes 0..header_len)
//! ```
//!
//! Each image format checks its own version range, flags and layout on the decoded fields;
//! this module checks only what every such header shares.

use crate::checksum::crc32c;
use crate::{Dec, DecodeError, Enc};
use std::ops::RangeInclusive;

/// Bytes before the layout fields.
const PREFIX: usize = 24;

/// A decoded header: what the image format interprets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextHeader<'a> {
    /// Format version, as stored (the caller checks its range).
    pub version: u32,
    /// Flag bits, as stored.
    pub flags: u32,
    /// The layout fields, in order.
    pub fields: Vec<u64>,
    /// The configuration text.
    pub text: &'a str,
}

/// What kind of image a header belongs to, for its checks and error messages.
#[derive(Debug, Clone)]
pub struct HeaderKind<'a> {
    /// The image's name in messages ("tegula disk image").
    pub name: &'a str,
    /// Its magic.
    pub magic: &'a [u8; 8],
    /// The versions this build reads.
    pub versions: RangeInclusive<u32>,
    /// How many `u64` layout fields follow the flags.
    pub fields: usize,
    /// The bytes reserved for the header at the start of the image.
    pub region: u64,
}

/// Why a text header did not decode; each variant names the offset at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The bytes ended inside the header.
    #[error(transparent)]
    Truncated(#[from] DecodeError),
    /// The magic is not this kind's.
    #[error("not a {name} (bad magic at offset 0)")]
    Magic {
        /// The image's name.
        name: String,
    },
    /// A version this build does not read.
    #[error(
        "unsupported {name} version {found} (this build reads {})",
        reads_text(reads)
    )]
    Version {
        /// The image's name.
        name: String,
        /// The version found.
        found: u32,
        /// The versions this build reads.
        reads: RangeInclusive<u32>,
    },
    /// The header length disagrees with the text length, or runs past the header region.
    #[error(
        "corrupt header: length {header_len} does not match config length {text_len} (offset 12)"
    )]
    Length {
        /// The header length stored at offset 12.
        header_len: usize,
        /// The text length stored at offset 16.
        text_len: usize,
    },
    /// The stored checksum does not match the header's bytes.
    #[error(
        "corrupt header: checksum mismatch at offset {at} (stored {stored:#010x}, computed {computed:#010x})"
    )]
    Checksum {
        /// Offset of the checksum.
        at: usize,
        /// Checksum stored.
        stored: u32,
        /// Checksum of the bytes read.
        computed: u32,
    },
    /// The configuration text is not UTF-8.
    #[error("corrupt header: configuration is not UTF-8 (offset {at})")]
    Utf8 {
        /// Offset of the text.
        at: usize,
    },
}

/// "version 1" or "versions 1 to 2".
fn reads_text(r: &RangeInclusive<u32>) -> String {
    let (lo, hi) = (r.start(), r.end());
    if lo == hi {
        format!("version {lo}")
    } else {
        format!("versions {lo} to {hi}")
    }
}

impl HeaderKind<'_> {
    /// Length of the header without its text.
    pub fn fixed_len(&self) -> usize {
        PREFIX + 8 * self.fields
    }

    /// Encodes a header of this kind (`fields.len()` must be `self.fields`).
    pub fn encode(&self, version: u32, flags: u32, fields: &[u64], text: &str) -> Vec<u8> {
        debug_assert_eq!(fields.len(), self.fields);
        let mut e = Enc::new();
        e.raw(self.magic);
        e.u32(version);
        e.u32((self.fixed_len() + text.len()) as u32);
        e.u32(text.len() as u32);
        e.u32(flags);
        for &f in fields {
            e.u64(f);
        }
        e.raw(text.as_bytes());
        crate::frame::seal(&mut e);
        e.into_bytes()
    }

    /// Decodes a header of this kind, checking magic, version range, lengths, checksum and
    /// that the text is UTF-8. Each error is one line naming the offset at fault.
    pub fn decode<'b>(&self, b: &'b [u8]) -> Result<TextHeader<'b>, HeaderError> {
        let mut d = Dec::new(b);
        let name = || self.name.to_string();
        if d.take(8)? != self.magic {
            return Err(HeaderError::Magic { name: name() });
        }
        let version = d.u32()?;
        if !self.versions.contains(&version) {
            return Err(HeaderError::Version {
                name: name(),
                found: version,
                reads: self.versions.clone(),
            });
        }
        let header_len = d.u32()? as usize;
        let text_len = d.u32()? as usize;
        let flags = d.u32()?;
        let mut fields = Vec::with_capacity(self.fields);
        for _ in 0..self.fields {
            fields.push(d.u64()?);
        }
        if Some(header_len) != self.fixed_len().checked_add(text_len)
            || header_len as u64 + 4 > self.region
        {
            return Err(HeaderError::Length {
                header_len,
                text_len,
            });
        }
        let text = d.take(text_len)?;
        let stored = d.u32()?;
        let computed = crc32c(&b[..header_len]);
        if stored != computed {
            return Err(HeaderError::Checksum {
                at: header_len,
                stored,
                computed,
            });
        }
        let text = std::str::from_utf8(text).map_err(|_| HeaderError::Utf8 {
            at: self.fixed_len(),
        })?;
        Ok(TextHeader {
            version,
            flags,
            fields,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: HeaderKind<'static> = HeaderKind {
        name: "test image",
        magic: b"TESTHEAD",
        versions: 1..=2,
        fields: 3,
        region: 4096,
    };

    #[test]
    fn round_trips_and_keeps_the_documented_layout() {
        let b = KIND.encode(2, 1, &[10, 20, 30], "a = 1\n");
        assert_eq!(&b[..8], b"TESTHEAD");
        assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 48 + 6);
        assert_eq!(b.len(), 48 + 6 + 4);
        let h = KIND.decode(&b).unwrap();
        assert_eq!(h.version, 2);
        assert_eq!(h.flags, 1);
        assert_eq!(h.fields, vec![10, 20, 30]);
        assert_eq!(h.text, "a = 1\n");
    }

    #[test]
    fn every_damage_is_an_error_naming_what_is_wrong() {
        let b = KIND.encode(1, 0, &[1, 2, 3], "text");
        let mut m = b.clone();
        m[0] ^= 1;
        assert!(KIND
            .decode(&m)
            .unwrap_err()
            .to_string()
            .contains("bad magic"));
        let v = KIND.encode(3, 0, &[1, 2, 3], "text");
        assert!(KIND
            .decode(&v)
            .unwrap_err()
            .to_string()
            .contains("reads versions 1 to 2"));
        let mut m = b.clone();
        m[12] ^= 1;
        assert!(KIND
            .decode(&m)
            .unwrap_err()
            .to_string()
            .contains("offset 12"));
        let mut m = b.clone();
        m[50] ^= 0x80;
        assert!(KIND
            .decode(&m)
            .unwrap_err()
            .to_string()
            .contains("checksum"));
        for n in 0..b.len() {
            assert!(KIND.decode(&b[..n]).is_err(), "truncated at {n}");
        }
    }
}
