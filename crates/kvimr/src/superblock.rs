//! The superblock: safe-space sector 0 (the first sector of the drive's first top track). It
//! records the format options and the drive it was laid out for. Byte layout in
//! `docs/formats/kvimr-map.md`.

use crate::options::FormatOptions;
use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of the superblock.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"KVIMRSUP";
/// Current superblock version.
pub const SUPERBLOCK_VERSION: u32 = 1;
/// The frame around the superblock.
pub const SUPERBLOCK_FORMAT: Format =
    Format::slot("kvimr superblock", &SUPERBLOCK_MAGIC, SUPERBLOCK_VERSION);

/// The decoded superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Sector size of the drive.
    pub sector_size: u32,
    /// Whole tracks of the drive.
    pub tracks: u64,
    /// First LBA after the last whole track (a fingerprint of the geometry).
    pub tracks_end: u64,
    /// Format epoch: one more than the previous format's, so that maps and staging records
    /// left by an earlier format are never taken for this one's.
    pub epoch: u64,
    /// The format options.
    pub format: FormatOptions,
}

impl Superblock {
    /// Encodes the superblock (one frame; the caller pads it to a sector).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u32(self.sector_size);
        e.u64(self.tracks);
        e.u64(self.tracks_end);
        e.u64(self.epoch);
        let f = &self.format;
        e.u64(f.map_slot_bytes);
        e.u64(f.staging_bytes);
        e.u64(f.raw_bytes);
        e.u32(f.safe_files);
        e.u64(f.safe_file_bytes);
        e.u64(f.file_bytes);
        SUPERBLOCK_FORMAT.encode(0, 0, e.as_bytes())
    }

    /// Decodes a superblock: `Ok(None)` when `b` holds none (wrong magic: never formatted),
    /// an error when it holds a damaged one.
    pub fn decode(b: &[u8]) -> Result<Option<Superblock>, FormatError> {
        if b.len() < SUPERBLOCK_MAGIC.len() || b[..SUPERBLOCK_MAGIC.len()] != SUPERBLOCK_MAGIC {
            return Ok(None);
        }
        let f = SUPERBLOCK_FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        let sb = (|| -> Result<Superblock, DecodeError> {
            let sector_size = d.u32()?;
            let tracks = d.u64()?;
            let tracks_end = d.u64()?;
            let epoch = d.u64()?;
            let format = FormatOptions {
                map_slot_bytes: d.u64()?,
                staging_bytes: d.u64()?,
                raw_bytes: d.u64()?,
                safe_files: d.u32()?,
                safe_file_bytes: d.u64()?,
                file_bytes: d.u64()?,
            };
            if !d.is_empty() {
                return Err(d.invalid("trailing bytes"));
            }
            Ok(Superblock {
                sector_size,
                tracks,
                tracks_end,
                epoch,
                format,
            })
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
            format: FormatOptions::default(),
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
