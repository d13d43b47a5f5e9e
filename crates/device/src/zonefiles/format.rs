//! The descriptor of a zone-files device (spec: `docs/formats/zone-files.md`): the geometry,
//! written once in `DIR/zones` when the device is created, in the shared checksummed slot
//! frame.

use tegula_codec::frame::Format;
use tegula_codec::{Dec, Enc, FormatError};

/// Magic of the descriptor.
pub const MAGIC: [u8; 8] = *b"TGLAZFDS";
/// Version of the descriptor.
pub const VERSION: u32 = 1;
/// The descriptor's frame.
pub const FORMAT: Format = Format::slot("zone-files descriptor", &MAGIC, VERSION);

/// A zone-files device's geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Bytes per sector (512 or 4096).
    pub sector_size: u32,
    /// Bytes per zone.
    pub zone_size: u64,
    /// Conventional zones at the start (kept together in `DIR/conventional`).
    pub conventional_zones: u32,
    /// Zones in all.
    pub zones: u32,
}

/// Encodes a descriptor.
pub fn encode(d: &Descriptor) -> Vec<u8> {
    let mut e = Enc::new();
    e.u32(d.sector_size);
    e.u64(d.zone_size);
    e.u32(d.conventional_zones);
    e.u32(d.zones);
    FORMAT.encode(0, 0, e.as_bytes())
}

/// Decodes a descriptor, checking its frame and that the geometry is usable.
pub fn decode(b: &[u8]) -> Result<Descriptor, FormatError> {
    let f = FORMAT.decode(b)?;
    let mut d = Dec::new(f.payload);
    let s = Descriptor {
        sector_size: d.u32()?,
        zone_size: d.u64()?,
        conventional_zones: d.u32()?,
        zones: d.u32()?,
    };
    check(&s)?;
    Ok(s)
}

/// Most zones a device may have: each sequential zone is an open file.
pub const MAX_ZONES: u32 = 65_536;

/// Whether a geometry is usable: a 512- or 4096-byte sector, zones of whole sectors, at least
/// one sequential zone, at most [`MAX_ZONES`] zones, a capacity that fits in a `u64`.
pub fn check(s: &Descriptor) -> Result<(), FormatError> {
    crate::hostfile::format::check_geometry(
        s.sector_size,
        s.zone_size,
        s.conventional_zones,
        s.zones,
    )?;
    if s.zones > MAX_ZONES {
        return Err(FormatError::invalid(format!(
            "{} zones: at most {MAX_ZONES}",
            s.zones
        )));
    }
    if u64::from(s.zones).checked_mul(s.zone_size).is_none() {
        return Err(FormatError::invalid(
            "the zones end past the largest offset",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d() -> Descriptor {
        Descriptor {
            sector_size: 4096,
            zone_size: 1 << 20,
            conventional_zones: 1,
            zones: 8,
        }
    }

    #[test]
    fn round_trips() {
        assert_eq!(decode(&encode(&d())), Ok(d()));
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let b = encode(&d());
        for i in 0..b.len() * 8 {
            let mut c = b.clone();
            c[i / 8] ^= 1 << (i % 8);
            assert!(decode(&c).is_err(), "bit {i} flipped was accepted");
        }
    }

    #[test]
    fn bad_geometry_is_refused_even_with_a_good_checksum() {
        for bad in [
            Descriptor {
                sector_size: 1000,
                ..d()
            },
            Descriptor {
                zone_size: 4097,
                ..d()
            },
            Descriptor {
                conventional_zones: 8,
                ..d()
            },
            Descriptor {
                zones: MAX_ZONES + 1,
                ..d()
            },
        ] {
            assert!(decode(&encode(&bad)).is_err(), "{bad:?}");
        }
    }
}
