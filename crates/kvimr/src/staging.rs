//! A staging record: the backup of the valid data of the top tracks one read-modify-write is
//! about to damage, written to the staging area (in the safe region) and synced before the
//! bottom tracks are written. Recovery restores the records newer than the map's
//! `applied_rmw`. Byte layout in `docs/formats/kvimr-map.md`.

use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of a staging record.
pub const STAGING_MAGIC: [u8; 8] = *b"KVIMRSTG";
/// Current staging record version.
pub const STAGING_VERSION: u32 = 1;
/// The frame around a staging record.
pub const STAGING_FORMAT: Format =
    Format::slot("kvimr staging record", &STAGING_MAGIC, STAGING_VERSION);

/// One backed-up extent: where it goes back to and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// First LBA of the extent.
    pub lba: u64,
    /// Its contents (whole sectors).
    pub data: Vec<u8>,
}

/// A staging record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagingRecord {
    /// Sequence number of the read-modify-write.
    pub seq: u64,
    /// Format epoch (from the superblock): records of another epoch are ignored.
    pub epoch: u64,
    /// The backed-up extents.
    pub entries: Vec<Backup>,
}

impl StagingRecord {
    /// Bytes of the encoded record (before padding).
    pub fn encoded_len(entries: &[Backup]) -> usize {
        STAGING_FORMAT.frame_len(12 + entries.iter().map(|b| 12 + b.data.len()).sum::<usize>())
    }

    /// Encodes the record (one frame; the caller pads it to whole sectors).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::with_capacity(Self::encoded_len(&self.entries));
        e.u64(self.epoch);
        e.u32(self.entries.len() as u32);
        for b in &self.entries {
            e.u64(b.lba);
            e.bytes_u32(&b.data);
        }
        STAGING_FORMAT.encode(0, self.seq, e.as_bytes())
    }

    /// Bytes of the frame at the start of `b`, from its header, or `None` when no record
    /// header is there.
    pub fn frame_len(b: &[u8]) -> Option<usize> {
        let h = STAGING_FORMAT.decode_header(b).ok()?;
        Some(STAGING_FORMAT.frame_len(h.len as usize))
    }

    /// Decodes a record, checking magic, version, length and checksum; `ss` is the sector
    /// size every extent must be a whole number of.
    pub fn decode(b: &[u8], ss: usize) -> Result<StagingRecord, FormatError> {
        let f = STAGING_FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        (|| -> Result<StagingRecord, DecodeError> {
            let epoch = d.u64()?;
            let n = d.u32()? as usize;
            if n > d.remaining() / 12 {
                return Err(d.invalid("entry count exceeds the record"));
            }
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let lba = d.u64()?;
                let data = d.bytes_u32()?;
                if data.is_empty() || ss == 0 || data.len() % ss != 0 {
                    return Err(d.invalid("extent is not whole sectors"));
                }
                entries.push(Backup {
                    lba,
                    data: data.to_vec(),
                });
            }
            if !d.is_empty() {
                return Err(d.invalid("trailing bytes"));
            }
            Ok(StagingRecord {
                seq: f.header.seq,
                epoch,
                entries,
            })
        })()
        .map_err(FormatError::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_every_flipped_byte() {
        let r = StagingRecord {
            seq: 77,
            epoch: 5,
            entries: vec![
                Backup {
                    lba: 1000,
                    data: vec![3u8; 16],
                },
                Backup {
                    lba: 5,
                    data: vec![9u8; 8],
                },
            ],
        };
        let b = r.encode();
        assert_eq!(b.len(), StagingRecord::encoded_len(&r.entries));
        assert_eq!(StagingRecord::decode(&b, 8), Ok(r.clone()));
        assert_eq!(StagingRecord::frame_len(&b), Some(b.len()));
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x80;
            assert!(StagingRecord::decode(&bad, 8).is_err(), "flip at {i}");
        }
        assert!(
            StagingRecord::decode(&b, 16).is_err(),
            "8-byte extents are not 16-byte sectors"
        );
    }
}
