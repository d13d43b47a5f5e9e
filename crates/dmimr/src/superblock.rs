//! The superblock: the first sector of the drive's safe region (its first top track), written
//! once by `format`. It names the drive it was laid out for and the sizes of the metadata
//! slots and the staging area. Byte layout in `docs/formats/dm-imr.md`.

use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of the superblock.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"TGLADMIS";
/// Current superblock version.
pub const SUPERBLOCK_VERSION: u32 = 1;
/// The frame around the superblock.
pub const SUPERBLOCK_FORMAT: Format =
    Format::slot("dm-imr superblock", &SUPERBLOCK_MAGIC, SUPERBLOCK_VERSION);

/// The decoded superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Sector size of the drive.
    pub sector_size: u32,
    /// Whole tracks of the drive.
    pub tracks: u64,
    /// First LBA after the last whole track (a fingerprint of the geometry).
    pub tracks_end: u64,
    /// Format epoch: one more than the previous format's, so that metadata and staging
    /// records an earlier format left are never taken for this one's.
    pub epoch: u64,
    /// Bytes of each of the two metadata slots.
    pub meta_slot_bytes: u64,
    /// Bytes of the staging area (two slots).
    pub staging_bytes: u64,
}

impl Superblock {
    /// Encodes the superblock (one frame; the caller pads it to a sector).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.sector_size);
        e.u64(self.tracks);
        e.u64(self.tracks_end);
        e.u64(self.epoch);
        e.u64(self.meta_slot_bytes);
        e.u64(self.staging_bytes);
        SUPERBLOCK_FORMAT.encode(0, 0, e.as_bytes())
    }

    /// Decodes a superblock: `Ok(None)` when `b` holds none (another magic: never formatted
    /// as drive-managed), an error when it holds a damaged one.
    pub fn decode(b: &[u8]) -> Result<Option<Superblock>, FormatError> {
        if b.len() < SUPERBLOCK_MAGIC.len() || b[..SUPERBLOCK_MAGIC.len()] != SUPERBLOCK_MAGIC {
            return Ok(None);
        }
        let f = SUPERBLOCK_FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        let sb = (|| -> Result<Superblock, DecodeError> {
            let sb = Superblock {
                sector_size: d.u32()?,
                tracks: d.u64()?,
                tracks_end: d.u64()?,
                epoch: d.u64()?,
                meta_slot_bytes: d.u64()?,
                staging_bytes: d.u64()?,
            };
            if !d.is_empty() {
                return Err(d.invalid("trailing bytes"));
            }
            Ok(sb)
        })()?;
        if sb.sector_size != 512 && sb.sector_size != 4096 {
            return Err(FormatError::invalid(format!(
                "sector size {} is not 512 or 4096",
                sb.sector_size
            )));
        }
        Ok(Some(sb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_every_flipped_byte() {
        let sb = Superblock {
            sector_size: 4096,
            tracks: 1234,
            tracks_end: 99_999,
            epoch: 3,
            meta_slot_bytes: 8192,
            staging_bytes: 16 << 20,
        };
        let b = sb.encode();
        assert_eq!(Superblock::decode(&b), Ok(Some(sb)));
        for i in SUPERBLOCK_MAGIC.len()..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x10;
            assert!(Superblock::decode(&bad).is_err(), "flip at {i}");
        }
        assert_eq!(Superblock::decode(&[0u8; 64]), Ok(None));
        for n in SUPERBLOCK_MAGIC.len()..b.len() {
            assert!(Superblock::decode(&b[..n]).is_err());
        }
    }
}
