//! A header that checks itself and carries its payload's checksum:
//!
//! ```text
//!  0  m  magic    m  f  fields (the format's own)    m+f  4  payload crc u32
//!                 m+f+4  4  header crc u32 (over [0, m+f+4))    then the payload
//! ```
//!
//! Checked on its own, such a header tells a record whose header reached the media intact
//! (its length can be trusted, so a payload that fails is damage, or a tail a power cut tore
//! when the length runs past what was written) from a damaged header. The file system's
//! checkpoints and metadata-log records and SMRDB's version 2 log chunks use it.

use super::{Crc, FrameError, Suffix, CHECKSUM_LEN};
use crate::dec::Dec;

/// One sealed-header format: its name (for messages), magic, the bytes of its own fields and
/// the CRC it stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealedHeader {
    name: &'static str,
    magic: &'static [u8],
    fields: usize,
    crc: Crc,
}

/// A header whose magic and checksum were checked: the format's fields, for it to decode, and
/// the checksum its payload must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sealed<'a> {
    /// The fields between the magic and the payload checksum.
    pub fields: &'a [u8],
    /// The payload's checksum.
    pub payload_crc: u32,
}

impl Sealed<'_> {
    /// A decoder over the fields.
    pub fn dec(&self) -> Dec<'_> {
        Dec::new(self.fields)
    }
}

impl SealedHeader {
    /// A header of `magic`, `fields` bytes of the format's fields, and plain CRC-32Cs.
    pub const fn new(name: &'static str, magic: &'static [u8], fields: usize) -> Self {
        SealedHeader {
            name,
            magic,
            fields,
            crc: Crc::Plain,
        }
    }

    /// The same header with masked CRC-32Cs.
    pub const fn masked(self) -> Self {
        SealedHeader {
            crc: Crc::Masked,
            ..self
        }
    }

    /// The name used in error messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Bytes of the header (before the payload).
    pub const fn header_len(&self) -> usize {
        self.magic.len() + self.fields + 2 * CHECKSUM_LEN
    }

    fn suffix(&self) -> Suffix {
        match self.crc {
            Crc::Plain => Suffix::plain(self.name),
            Crc::Masked => Suffix::masked(self.name),
        }
    }

    /// The header of `payload`, with the format's `fields` (exactly `fields` bytes; shorter
    /// ones are zero padded).
    pub fn encode(&self, fields: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; self.header_len()];
        self.write(&mut h, fields, self.crc.of(payload));
        h
    }

    /// Fills the header room at the start of `buf` for the payload that follows it
    /// (`buf[len..]`), so that a buffer gathered behind room for its header is framed in
    /// place. Does nothing to a buffer shorter than the header.
    pub fn seal_in_place(&self, buf: &mut [u8], fields: &[u8]) {
        if buf.len() < self.header_len() {
            return;
        }
        let (h, payload) = buf.split_at_mut(self.header_len());
        let pc = self.crc.of(payload);
        self.write(h, fields, pc);
    }

    fn write(&self, h: &mut [u8], fields: &[u8], payload_crc: u32) {
        debug_assert_eq!(fields.len(), self.fields, "{} fields", self.name);
        let m = self.magic.len();
        h[..m].copy_from_slice(self.magic);
        let n = fields.len().min(self.fields);
        h[m..m + n].copy_from_slice(&fields[..n]);
        h[m + n..m + self.fields].fill(0);
        let at = m + self.fields;
        h[at..at + CHECKSUM_LEN].copy_from_slice(&payload_crc.to_le_bytes());
        self.suffix().seal_at(h, at + CHECKSUM_LEN);
    }

    /// Whether `b` starts with this header's magic (a header there, damaged or not).
    pub fn has_magic(&self, b: &[u8]) -> bool {
        b.starts_with(self.magic)
    }

    /// Checks the header at the start of `b` (which may hold more bytes): magic, length, then
    /// its own checksum. A failing checksum is [`FrameError::HeaderChecksum`].
    pub fn open<'a>(&self, b: &'a [u8]) -> Result<Sealed<'a>, FrameError> {
        let mut d = Dec::new(b);
        if d.take(self.magic.len())? != self.magic {
            return Err(FrameError::Magic { name: self.name });
        }
        let fields = d.take(self.fields)?;
        let payload_crc = d.u32()?;
        let stored = d.u32()?;
        let computed = self.crc.of(&b[..self.header_len() - CHECKSUM_LEN]);
        if stored != computed {
            return Err(FrameError::HeaderChecksum {
                name: self.name,
                stored,
                computed,
            });
        }
        Ok(Sealed {
            fields,
            payload_crc,
        })
    }

    /// Checks `payload` against the checksum its header `h` holds
    /// ([`FrameError::Checksum`] when it differs).
    pub fn check_payload(&self, h: &Sealed<'_>, payload: &[u8]) -> Result<(), FrameError> {
        self.suffix().verify(payload, h.payload_crc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::{crc32c, masked_crc32c};

    const H: SealedHeader = SealedHeader::new("record", b"TGLREC01", 12);
    const M: SealedHeader = SealedHeader::new("chunk", b"CHNK", 4).masked();

    #[test]
    fn bytes_follow_the_layout() {
        let h = H.encode(&[7; 12], b"payload");
        assert_eq!(h.len(), H.header_len());
        assert_eq!(H.header_len(), 8 + 12 + 8);
        let mut want = b"TGLREC01".to_vec();
        want.extend_from_slice(&[7; 12]);
        want.extend_from_slice(&crc32c(b"payload").to_le_bytes());
        let c = crc32c(&want);
        want.extend_from_slice(&c.to_le_bytes());
        assert_eq!(h, want);
        let mut buf = vec![0u8; M.header_len()];
        buf.extend_from_slice(b"abc");
        M.seal_in_place(&mut buf, &3u32.to_le_bytes());
        let mut want = b"CHNK".to_vec();
        want.extend_from_slice(&3u32.to_le_bytes());
        want.extend_from_slice(&masked_crc32c(b"abc").to_le_bytes());
        let c = masked_crc32c(&want);
        want.extend_from_slice(&c.to_le_bytes());
        want.extend_from_slice(b"abc");
        assert_eq!(buf, want);
        assert_eq!(
            M.encode(&3u32.to_le_bytes(), b"abc"),
            want[..M.header_len()]
        );
    }

    #[test]
    fn a_header_opens_alone_and_checks_its_payload() {
        let mut b = H.encode(&[1; 12], b"data");
        b.extend_from_slice(b"data");
        let h = H.open(&b).expect("opens");
        assert_eq!(h.fields, &[1; 12]);
        assert_eq!(H.check_payload(&h, b"data"), Ok(()));
        assert!(matches!(
            H.check_payload(&h, b"dat4"),
            Err(FrameError::Checksum { name: "record", .. })
        ));
        assert!(H.has_magic(&b) && !M.has_magic(&b));
        for i in 0..H.header_len() {
            let mut c = b.clone();
            c[i] ^= 0x20;
            let e = H.open(&c).unwrap_err();
            if i < 8 {
                assert_eq!(e, FrameError::Magic { name: "record" });
            } else {
                assert!(matches!(e, FrameError::HeaderChecksum { .. }), "{i}: {e}");
                assert!(e.to_string().starts_with("record header checksum mismatch"));
            }
        }
        for n in 0..H.header_len() {
            assert!(matches!(H.open(&b[..n]), Err(FrameError::Truncated(_))));
        }
        assert_eq!(
            H.open(&[0u8; 64]),
            Err(FrameError::Magic { name: "record" })
        );
    }
}
