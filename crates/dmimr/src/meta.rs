//! The metadata record, kept in two slots written in turn: which tracks hold host data (so
//! that a bottom-track write knows which neighbouring tops to protect, and reads of a
//! never-written top return zeros) and the newest read-modify-write whose restore is durable
//! (so that recovery never restores a backup over newer data). Byte layout in
//! `docs/formats/dm-imr.md`.

use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of a metadata record.
pub const META_MAGIC: [u8; 8] = *b"TGLADMIM";
/// Current metadata record version.
pub const META_VERSION: u32 = 1;
/// The frame around a metadata record.
pub const META_FORMAT: Format = Format::slot("dm-imr metadata", &META_MAGIC, META_VERSION);

/// A metadata record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaRecord {
    /// Sequence number (the newer of the two slots wins).
    pub seq: u64,
    /// Format epoch (from the superblock): records of another epoch are ignored.
    pub epoch: u64,
    /// Sequence number of the newest read-modify-write whose restore was durable when this
    /// record was written: staging records up to it are never restored.
    pub applied_rmw: u64,
    /// One flag per track of the drive: whether it holds host data.
    pub valid: Vec<bool>,
}

impl MetaRecord {
    /// Bytes of the encoded record of a drive of `tracks` tracks (before padding).
    pub fn encoded_len(tracks: usize) -> usize {
        META_FORMAT.frame_len(8 + 8 + 4 + 4 + tracks.div_ceil(8))
    }

    /// Encodes the record (one frame; the caller pads it to whole sectors).
    pub fn encode(&self) -> Vec<u8> {
        let mut bits = vec![0u8; self.valid.len().div_ceil(8)];
        for (i, v) in self.valid.iter().enumerate() {
            if *v {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        let mut e = Enc::with_capacity(Self::encoded_len(self.valid.len()));
        e.u64(self.epoch);
        e.u64(self.applied_rmw);
        e.u32(self.valid.len() as u32);
        e.bytes_u32(&bits);
        META_FORMAT.encode(0, self.seq, e.as_bytes())
    }

    /// Bytes of the frame at the start of `b`, from its header, or `None` when no record
    /// header is there.
    pub fn frame_len(b: &[u8]) -> Option<usize> {
        let h = META_FORMAT.decode_header(b).ok()?;
        Some(META_FORMAT.frame_len(h.len as usize))
    }

    /// Decodes a record, checking magic, version, length and checksum.
    pub fn decode(b: &[u8]) -> Result<MetaRecord, FormatError> {
        let f = META_FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        (|| -> Result<MetaRecord, DecodeError> {
            let epoch = d.u64()?;
            let applied_rmw = d.u64()?;
            let tracks = d.u32()? as usize;
            let bits = d.bytes_u32()?;
            if bits.len() != tracks.div_ceil(8) {
                return Err(d.invalid("track flags do not match the track count"));
            }
            if !d.is_empty() {
                return Err(d.invalid("trailing bytes"));
            }
            let valid = (0..tracks)
                .map(|i| bits[i / 8] & (1 << (i % 8)) != 0)
                .collect();
            Ok(MetaRecord {
                seq: f.header.seq,
                epoch,
                applied_rmw,
                valid,
            })
        })()
        .map_err(FormatError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_and_detects_every_flipped_byte() {
        let r = MetaRecord {
            seq: 9,
            epoch: 2,
            applied_rmw: 41,
            valid: (0..77).map(|i| i % 3 == 0).collect(),
        };
        let b = r.encode();
        assert_eq!(b.len(), MetaRecord::encoded_len(77));
        assert_eq!(MetaRecord::frame_len(&b), Some(b.len()));
        assert_eq!(MetaRecord::decode(&b), Ok(r));
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x04;
            assert!(MetaRecord::decode(&bad).is_err(), "flip at {i}");
        }
        for n in 0..b.len() {
            assert!(MetaRecord::decode(&b[..n]).is_err(), "cut at {n}");
        }
    }

    proptest! {
        #[test]
        fn any_record_round_trips(seq: u64, epoch: u64, applied: u64,
                                  valid in proptest::collection::vec(any::<bool>(), 0..300)) {
            let r = MetaRecord { seq, epoch, applied_rmw: applied, valid };
            prop_assert_eq!(MetaRecord::decode(&r.encode()), Ok(r));
        }

        #[test]
        fn random_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = MetaRecord::decode(&b);
        }
    }
}
