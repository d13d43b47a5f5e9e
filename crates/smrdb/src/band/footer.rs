//! The band footer: the last [`FOOTER_LEN`] bytes of the band's last sector. It locates the
//! index, filter and histogram and carries the band's identity, so a band found through the
//! manifest can be checked against it.

use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Footer magic: `SMRDBBND`.
pub const BAND_MAGIC: u64 = u64::from_le_bytes(*b"SMRDBBND");
/// Band format version written. Version 2: each index entry also records its block's first
/// key (so that a scan orders bands without reading them). Version 1 is still read.
pub const BAND_VERSION: u32 = 2;
/// Oldest band format version read.
pub const BAND_MIN_VERSION: u32 = 1;
/// Encoded footer length.
pub const FOOTER_LEN: usize = 8 + 4 + 8 + 3 * 12 + 8 * 4 + 4;

/// Where a part of the band lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extent {
    /// Byte offset in the band.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
}

/// A decoded footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footer {
    /// Band format version (of the footer and the index).
    pub version: u32,
    /// Band id (unique for the life of the database).
    pub band_id: u64,
    /// Index block.
    pub index: Extent,
    /// Bloom filter.
    pub bloom: Extent,
    /// Histogram.
    pub histogram: Extent,
    /// Entries in the band.
    pub entries: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Smallest sequence number.
    pub min_seq: u64,
    /// Largest sequence number.
    pub max_seq: u64,
}

impl Default for Footer {
    fn default() -> Self {
        Footer {
            version: BAND_VERSION,
            band_id: 0,
            index: Extent::default(),
            bloom: Extent::default(),
            histogram: Extent::default(),
            entries: 0,
            data_bytes: 0,
            min_seq: 0,
            max_seq: 0,
        }
    }
}

impl Footer {
    /// Encodes to exactly [`FOOTER_LEN`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Enc::with_capacity(FOOTER_LEN);
        b.u64(BAND_MAGIC);
        b.u32(self.version);
        b.u64(self.band_id);
        for x in [self.index, self.bloom, self.histogram] {
            b.u64(x.offset);
            b.u32(x.len);
        }
        for v in [self.entries, self.data_bytes, self.min_seq, self.max_seq] {
            b.u64(v);
        }
        super::block::checksummed(b)
    }

    /// Decodes and checks a footer.
    pub fn decode(buf: &[u8]) -> Result<Self, FormatError> {
        if buf.len() != FOOTER_LEN {
            return Err(FormatError::invalid(format!(
                "footer of {} bytes",
                buf.len()
            )));
        }
        let body = super::block::verify(buf)?;
        let mut r = Dec::new(body);
        let bad = |_: DecodeError| FormatError::invalid("truncated footer");
        if r.u64().map_err(bad)? != BAND_MAGIC {
            return Err(FormatError::invalid("bad band magic"));
        }
        let v = r.u32().map_err(bad)?;
        if !(BAND_MIN_VERSION..=BAND_VERSION).contains(&v) {
            return Err(FormatError::invalid(format!("unknown band version {v}")));
        }
        let band_id = r.u64().map_err(bad)?;
        let mut ex = [Extent::default(); 3];
        for x in &mut ex {
            x.offset = r.u64().map_err(bad)?;
            x.len = r.u32().map_err(bad)?;
        }
        Ok(Footer {
            version: v,
            band_id,
            index: ex[0],
            bloom: ex[1],
            histogram: ex[2],
            entries: r.u64().map_err(bad)?,
            data_bytes: r.u64().map_err(bad)?,
            min_seq: r.u64().map_err(bad)?,
            max_seq: r.u64().map_err(bad)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trip_and_flips() {
        let f = Footer {
            band_id: 3,
            index: Extent {
                offset: 10,
                len: 20,
            },
            entries: 5,
            max_seq: 9,
            ..Footer::default()
        };
        let enc = f.encode();
        assert_eq!(enc.len(), FOOTER_LEN);
        assert_eq!(Footer::decode(&enc).unwrap(), f);
        for i in 0..enc.len() {
            let mut b = enc.clone();
            b[i] ^= 1;
            assert!(Footer::decode(&b).is_err());
        }
    }
}
