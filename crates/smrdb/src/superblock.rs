//! The superblock: sector 0 of the conventional area. Written once when the database is
//! created; names the geometry the database was laid out for and the format options.
//!
//! `magic "SMRDBSUP" u64 | version u32 | sector_size u32 | zone_sectors u64 | zones u32 |
//!  conventional_zones u32 | slot_sectors u64 | mode u8 | crc u32`

use crate::options::Mode;
use tegula_codec::checksum::masked_crc32c;
use tegula_codec::{Dec, Enc, FormatError};

/// Superblock magic.
pub const SUPER_MAGIC: u64 = u64::from_le_bytes(*b"SMRDBSUP");
/// Superblock format version.
pub const SUPER_VERSION: u32 = 1;

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
        crate::band::block::checksummed(b)
    }

    /// Decodes a superblock from the start of sector 0. `Ok(None)` when there is none (no
    /// magic: a fresh device); `Err` when one is there but damaged or foreign.
    pub fn decode(buf: &[u8]) -> Result<Option<Self>, FormatError> {
        let mut r = Dec::new(buf);
        fn bad<E>(_: E) -> FormatError {
            FormatError::invalid("truncated superblock")
        }
        if r.u64().map_err(bad)? != SUPER_MAGIC {
            return Ok(None);
        }
        const LEN: usize = 8 + 4 + 4 + 8 + 4 + 4 + 8 + 1;
        let body = buf.get(..LEN).ok_or_else(|| bad(()))?;
        let stored = buf.get(LEN..LEN + 4).ok_or_else(|| bad(()))?;
        if masked_crc32c(body).to_le_bytes() != stored {
            return Err(FormatError::invalid("superblock checksum mismatch"));
        }
        let v = r.u32().map_err(bad)?;
        if v != SUPER_VERSION {
            return Err(FormatError::invalid(format!(
                "unknown superblock version {v}"
            )));
        }
        let sb = Superblock {
            sector_size: r.u32().map_err(bad)?,
            zone_sectors: r.u64().map_err(bad)?,
            zones: r.u32().map_err(bad)?,
            conventional_zones: r.u32().map_err(bad)?,
            slot_sectors: r.u64().map_err(bad)?,
            mode: match r.u8().map_err(bad)? {
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
    }
}
