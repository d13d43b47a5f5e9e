//! The superblock: sector 0 of the conventional area. Written once when the database is
//! created; names the geometry the database was laid out for and the format options.
//!
//! `magic "SMRDBSUP" u64 | version u32 | sector_size u32 | zone_sectors u64 | zones u32 |
//!  conventional_zones u32 | slot_sectors u64 | mode u8 | crc u32`, the crc (masked) a
//! checksum suffix ([`SUPER_FRAME`]) over the 41 bytes before it.

use crate::options::Mode;
use tegula_codec::frame::{FrameError, Suffix};
use tegula_codec::{Dec, Enc, FormatError};

/// Superblock magic.
pub const SUPER_MAGIC: u64 = u64::from_le_bytes(*b"SMRDBSUP");
/// Superblock format version.
pub const SUPER_VERSION: u32 = 1;
/// The superblock's frame: the masked crc32c of its 41 bytes after them.
pub const SUPER_FRAME: Suffix = Suffix::masked("smrdb superblock");
/// Bytes of the superblock before its checksum.
const SUPER_LEN: usize = 8 + 4 + 4 + 8 + 4 + 4 + 8 + 1;

/// A decoded superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// Device sector size.
    pub sector_size: u32,
    /// Zone (band) size in sectors.
    pub zone_sectors: u64,
    /// Zones on the device.
    pub zones: u32,
    /// Conventional zones at the start.
    pub conventional_zones: u32,
    /// Sectors of each of the two manifest slots.
    pub slot_sectors: u64,
    /// Organisation the database was created with.
    pub mode: Mode,
}

impl Superblock {
    /// Encoded form (shorter than one sector).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Enc::new();
        b.u64(SUPER_MAGIC);
        b.u32(SUPER_VERSION);
        b.u32(self.sector_size);
        b.u64(self.zone_sectors);
        b.u32(self.zones);
        b.u32(self.conventional_zones);
        b.u64(self.slot_sectors);
        b.u8(match self.mode {
            Mode::Soc => 0,
            Mode::Loc => 1,
        });
        SUPER_FRAME.seal(&mut b);
        b.into_bytes()
    }

    /// Decodes a superblock from the start of sector 0. `Ok(None)` when there is none (no
    /// magic: a fresh device); `Err` when one is there but damaged or foreign.
    pub fn decode(buf: &[u8]) -> Result<Option<Self>, FormatError> {
        let field = FormatError::field("smrdb superblock");
        if Dec::new(buf).u64().map_err(field)? != SUPER_MAGIC {
            return Ok(None);
        }
        let mut r = Dec::new(SUPER_FRAME.open_at(buf, SUPER_LEN)?);
        r.u64().map_err(field)?;
        let v = r.u32().map_err(field)?;
        if v != SUPER_VERSION {
            return Err(FrameError::Version {
                name: SUPER_FRAME.name(),
                found: v,
            }
            .into());
        }
        let sb = Superblock {
            sector_size: r.u32().map_err(field)?,
            zone_sectors: r.u64().map_err(field)?,
            zones: r.u32().map_err(field)?,
            conventional_zones: r.u32().map_err(field)?,
            slot_sectors: r.u64().map_err(field)?,
            mode: match r.u8().map_err(field)? {
                0 => Mode::Soc,
                1 => Mode::Loc,
                m => return Err(FormatError::invalid(format!("unknown mode {m}"))),
            },
        };
        Ok(Some(sb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_detection() {
        let sb = Superblock {
            sector_size: 4096,
            zone_sectors: 256,
            zones: 64,
            conventional_zones: 1,
            slot_sectors: 100,
            mode: Mode::Loc,
        };
        let mut enc = sb.encode();
        enc.resize(4096, 0);
        assert_eq!(Superblock::decode(&enc).unwrap(), Some(sb));
        assert_eq!(Superblock::decode(&[0u8; 4096]).unwrap(), None);
        for i in 8..45 {
            let mut b = enc.clone();
            b[i] ^= 0x10;
            assert!(Superblock::decode(&b).is_err(), "flip at {i}");
        }
        // Cut short behind its magic, or of another version: errors, not "no database".
        assert!(Superblock::decode(&enc[..40]).is_err());
        let mut v2 = enc.clone();
        v2[8] = 2;
        SUPER_FRAME.seal_at(&mut v2, SUPER_LEN);
        assert_eq!(
            Superblock::decode(&v2).unwrap_err().to_string(),
            "unsupported smrdb superblock version 2"
        );
    }

    /// The bytes of the documented layout (`docs/formats/smrdb.md`), checksum included.
    #[test]
    fn bytes_follow_the_documented_layout() {
        let sb = Superblock {
            sector_size: 512,
            zone_sectors: 256,
            zones: 64,
            conventional_zones: 1,
            slot_sectors: 100,
            mode: Mode::Soc,
        };
        let mut want = b"SMRDBSUP".to_vec();
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&512u32.to_le_bytes());
        want.extend_from_slice(&256u64.to_le_bytes());
        want.extend_from_slice(&64u32.to_le_bytes());
        want.extend_from_slice(&1u32.to_le_bytes());
        want.extend_from_slice(&100u64.to_le_bytes());
        want.push(0);
        let crc = tegula_codec::frame::Crc::Masked.of(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(sb.encode(), want);
    }
}
