//! The superblock: safe-space sector 0 (the first sector of the drive's first top track). It
//! records the format options, the drive it was laid out for and (version 2) the store
//! options it was formatted with. Byte layout in `docs/formats/kvimr-map.md`.

use crate::options::{FormatOptions, Options, Policy, RmwMode};
use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of the superblock.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"KVIMRSUP";
/// Current superblock version: 2 adds the store options.
pub const SUPERBLOCK_VERSION: u32 = 2;
/// The frame around the superblock (reads versions 1 and 2, writes 2).
pub const SUPERBLOCK_FORMAT: Format =
    Format::slot("kvimr superblock", &SUPERBLOCK_MAGIC, SUPERBLOCK_VERSION).reading_from(1);
/// The frame of a version-1 superblock (no store options), written only to re-encode one.
const SUPERBLOCK_FORMAT_V1: Format = Format::slot("kvimr superblock", &SUPERBLOCK_MAGIC, 1);

/// The decoded superblock.
#[derive(Debug, Clone, PartialEq)]
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
    /// The store options it was formatted with (version 2; `None` in a version-1
    /// superblock). `unsafe_skip_bottom_sync` is never recorded: it reads back false.
    pub options: Option<Options>,
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
        let Some(o) = &self.options else {
            return SUPERBLOCK_FORMAT_V1.encode(0, 0, e.as_bytes());
        };
        e.u8(o.policy.code());
        e.u8(o.rmw.code());
        e.u8(o.hot_levels);
        e.u8(o.cold_runs as u8);
        e.u64(o.bottom_share.to_bits());
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
            let options = if f.header.version >= 2 {
                let policy = Policy::of_code(d.u8()?).ok_or_else(|| d.invalid("unknown policy"))?;
                let rmw = RmwMode::of_code(d.u8()?).ok_or_else(|| d.invalid("unknown RMW mode"))?;
                let hot_levels = d.u8()?;
                let cold_runs = match d.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(d.invalid("cold_runs is not 0 or 1")),
                };
                let bottom_share = f64::from_bits(d.u64()?);
                if !(0.0..=1.0).contains(&bottom_share) {
                    return Err(d.invalid("bottom_share outside [0, 1]"));
                }
                Some(Options {
                    policy,
                    rmw,
                    hot_levels,
                    bottom_share,
                    cold_runs,
                    unsafe_skip_bottom_sync: false,
                })
            } else {
                None
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
                options,
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

    fn sample(options: Option<Options>) -> Superblock {
        Superblock {
            sector_size: 4096,
            tracks: 1234,
            tracks_end: 99_999,
            epoch: 3,
            format: FormatOptions::default(),
            options,
        }
    }

    #[test]
    fn round_trips_and_detects_every_flipped_byte() {
        let stored = Options {
            policy: Policy::ThreePhase,
            rmw: RmwMode::Naive,
            hot_levels: 3,
            bottom_share: 0.25,
            cold_runs: false,
            unsafe_skip_bottom_sync: false,
        };
        for sb in [
            sample(Some(Options::default())),
            sample(Some(stored)),
            sample(None),
        ] {
            let b = sb.encode();
            assert_eq!(Superblock::decode(&b), Ok(Some(sb.clone())));
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

    #[test]
    fn a_version_1_superblock_reads_without_options() {
        let b = sample(None).encode();
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        assert_eq!(Superblock::decode(&b).unwrap().unwrap().options, None);
        let b = sample(Some(Options::default())).encode();
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 2);
    }

    #[test]
    fn stored_options_out_of_range_are_refused() {
        let opts = |f: fn(&mut Options)| {
            let mut o = Options::default();
            f(&mut o);
            sample(Some(o)).encode()
        };
        for b in [
            opts(|o| o.bottom_share = f64::NAN),
            opts(|o| o.bottom_share = 1.5),
            opts(|o| o.bottom_share = -0.1),
        ] {
            assert!(Superblock::decode(&b).is_err());
        }
        // Unknown policy, RMW mode and a flag other than 0/1, with a valid checksum.
        for (at, byte) in [(0, 3u8), (1, 2), (3, 2)] {
            let b = sample(Some(Options::default())).encode();
            let f = SUPERBLOCK_FORMAT.decode(&b).unwrap();
            let mut p = f.payload.to_vec();
            p[72 + at] = byte;
            let bad = SUPERBLOCK_FORMAT.encode(0, 0, &p);
            assert!(Superblock::decode(&bad).is_err(), "byte {at} = {byte}");
        }
    }
}
