//! The manifest: the list of bands (zone, level, key range, sequence range, write time) and
//! log bands, kept in the conventional area as two alternating checksummed copies. A new
//! copy goes to the slot the older copy is in, and the device cache is flushed before
//! anything depends on it; a torn copy fails its checksum and the other one is used.
//!
//! Copy: `magic "SMRDBMAN" u64 | version u32 | generation u64 | body_len u32 | body | crc u32`
//! (crc over everything before it): the codec's copy frame, [`MANIFEST_FORMAT`]. See
//! `docs/formats/smrdb.md`.

use std::collections::BTreeMap;
use tegula_codec::frame::Format;
use tegula_codec::{Dec, Enc, FormatError};

/// Manifest magic.
pub const MANIFEST_MAGIC: u64 = u64::from_le_bytes(*b"SMRDBMAN");
/// Manifest format version written; it versions the log records of the bands it lists too.
/// Version 2: those log bands may hold gap markers (records of no operations, written after
/// unlogged writes), which an engine that knows only version 1 would replay past. Version 3:
/// they may hold version 2 log chunks (magic "SLG2", header with its own checksum), which an
/// engine that knows only "SLOG" chunks would take for the end of the log. Version 4: the body
/// ends with the log bands closed without a flush and where their chunks end
/// ([`Manifest::log_ends`]), which an older engine would replay only up to their saved write
/// pointers. Version 5: they may hold continued chunks (magic "SLC2", a record going on in
/// the next chunk), which an older engine would report as corruption; body as version 4.
/// An engine refuses a manifest newer than it knows instead.
pub const MANIFEST_VERSION: u32 = 5;
/// Oldest manifest version read (version 1 logs hold no gap markers, versions 1 and 2 only
/// "SLOG" chunks; the body is the same in the first three).
pub const MANIFEST_MIN_VERSION: u32 = 1;
/// The frame of a copy: magic, version, generation, body length, body, masked crc32c.
pub const MANIFEST_FORMAT: Format = Format::copy("smrdb manifest", b"SMRDBMAN", MANIFEST_VERSION)
    .reading_from(MANIFEST_MIN_VERSION)
    .masked();
/// Bytes before the body.
pub const MANIFEST_HEADER: usize = MANIFEST_FORMAT.header_len();

/// One band as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandMeta {
    /// Unique id (never reused).
    pub id: u64,
    /// Zone holding the band.
    pub zone: u32,
    /// Level (0 = memtable dumps).
    pub level: u8,
    /// Sectors written (the footer ends the last one).
    pub sectors: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
    /// Smallest sequence number.
    pub min_seq: u64,
    /// Largest sequence number.
    pub max_seq: u64,
    /// Entries.
    pub entries: u64,
    /// Bytes of data blocks.
    pub data_bytes: u64,
    /// Device time (ns) when the band was written.
    pub write_time: u64,
}

impl BandMeta {
    /// Whether the key ranges of two bands intersect.
    pub fn overlaps(&self, o: &BandMeta) -> bool {
        self.smallest <= o.largest && o.smallest <= self.largest
    }
    /// Whether `[lo, hi]` intersects the band's key range.
    pub fn overlaps_range(&self, lo: &[u8], hi: &[u8]) -> bool {
        self.smallest.as_slice() <= hi && lo <= self.largest.as_slice()
    }
    /// Whether the band's key range holds `key`.
    pub fn covers(&self, key: &[u8]) -> bool {
        self.smallest.as_slice() <= key && key <= self.largest.as_slice()
    }
}

/// The database's band-level state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    /// Generation of this copy (one more than the copy it replaces).
    pub generation: u64,
    /// Next band id to hand out.
    pub next_band_id: u64,
    /// Every sequence number ≤ this is in a band; log records above it are replayed.
    pub flushed_seq: u64,
    /// Log bands, oldest first; their records after `flushed_seq` are not in any band.
    pub log_zones: Vec<u32>,
    /// Log bands the engine moved on from without flushing them (a device that saves a zone's
    /// write pointer only at a flush of it: zone files), each with the sector its chunks end
    /// at: recovery follows the chunks past the saved write pointer up to there, and stops the
    /// log where they are not all there. Encoded only for zones in `log_zones`.
    pub log_ends: BTreeMap<u32, u64>,
    /// Live bands.
    pub bands: Vec<BandMeta>,
    /// LOC: per level, the largest key of the last band compacted (round robin).
    pub compact_pointers: Vec<Vec<u8>>,
}

impl Manifest {
    /// Encodes a copy.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Enc::new();
        body.varint(self.next_band_id);
        body.varint(self.flushed_seq);
        body.varint(self.log_zones.len() as u64);
        for z in &self.log_zones {
            body.varint(*z as u64);
        }
        body.varint(self.bands.len() as u64);
        for b in &self.bands {
            body.varint(b.id);
            body.varint(b.zone as u64);
            body.u8(b.level);
            body.varint(b.sectors);
            body.bytes_varint(&b.smallest);
            body.bytes_varint(&b.largest);
            body.varint(b.min_seq);
            body.varint(b.max_seq);
            body.varint(b.entries);
            body.varint(b.data_bytes);
            body.varint(b.write_time);
        }
        body.varint(self.compact_pointers.len() as u64);
        for p in &self.compact_pointers {
            body.bytes_varint(p);
        }
        let ends: Vec<(u32, u64)> = self
            .log_zones
            .iter()
            .filter_map(|z| self.log_ends.get(z).map(|e| (*z, *e)))
            .collect();
        body.varint(ends.len() as u64);
        for (z, e) in ends {
            body.varint(z as u64);
            body.varint(e);
        }
        MANIFEST_FORMAT.encode(0, self.generation, body.as_bytes())
    }

    /// Total encoded length announced by a copy's header, or `None` if the header is not a
    /// manifest header. The version is not checked: a copy of an unknown version is read
    /// whole and refused by [`Manifest::decode`].
    pub fn encoded_len(header: &[u8]) -> Option<usize> {
        let h = MANIFEST_FORMAT.peek_header(header).ok()?;
        Some(MANIFEST_FORMAT.frame_len(h.len as usize))
    }

    /// The format version a copy's header names, or `None` if it is not a manifest header.
    pub fn version_of(header: &[u8]) -> Option<u32> {
        Some(MANIFEST_FORMAT.peek_header(header).ok()?.version)
    }

    /// Decodes and checks a copy (`buf` may hold more bytes after it).
    pub fn decode(buf: &[u8]) -> Result<Self, FormatError> {
        let f = MANIFEST_FORMAT.decode(buf)?;
        let generation = f.header.seq;
        let mut r = Dec::new(f.payload);
        let bad = FormatError::field("smrdb manifest body");
        let zone = |z: u64| {
            u32::try_from(z)
                .map_err(|_| FormatError::invalid(format!("manifest names zone {z}, past u32")))
        };
        let next_band_id = r.varint().map_err(bad)?;
        let flushed_seq = r.varint().map_err(bad)?;
        let nl = r.varint().map_err(bad)?;
        let mut log_zones = Vec::new();
        for _ in 0..nl.min(1 << 20) {
            log_zones.push(zone(r.varint().map_err(bad)?)?);
        }
        let nb = r.varint().map_err(bad)?;
        let mut bands = Vec::new();
        for _ in 0..nb.min(1 << 24) {
            bands.push(BandMeta {
                id: r.varint().map_err(bad)?,
                zone: zone(r.varint().map_err(bad)?)?,
                level: r.u8().map_err(bad)?,
                sectors: r.varint().map_err(bad)?,
                smallest: r.bytes_varint().map_err(bad)?.to_vec(),
                largest: r.bytes_varint().map_err(bad)?.to_vec(),
                min_seq: r.varint().map_err(bad)?,
                max_seq: r.varint().map_err(bad)?,
                entries: r.varint().map_err(bad)?,
                data_bytes: r.varint().map_err(bad)?,
                write_time: r.varint().map_err(bad)?,
            });
        }
        let np = r.varint().map_err(bad)?;
        let mut compact_pointers = Vec::new();
        for _ in 0..np.min(64) {
            compact_pointers.push(r.bytes_varint().map_err(bad)?.to_vec());
        }
        let mut log_ends = BTreeMap::new();
        if f.header.version >= 4 {
            let ne = r.varint().map_err(bad)?;
            for _ in 0..ne.min(1 << 20) {
                let z = zone(r.varint().map_err(bad)?)?;
                if !log_zones.contains(&z) {
                    return Err(FormatError::invalid(format!(
                        "manifest names the end of log band {z}, which it does not list"
                    )));
                }
                log_ends.insert(z, r.varint().map_err(bad)?);
            }
        }
        if !r.is_empty() {
            return Err(FormatError::invalid("trailing bytes in manifest"));
        }
        Ok(Manifest {
            generation,
            next_band_id,
            flushed_seq,
            log_zones,
            log_ends,
            bands,
            compact_pointers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tegula_codec::frame::{Crc, FrameError, Suffix};

    pub(crate) fn sample() -> Manifest {
        Manifest {
            generation: 7,
            next_band_id: 12,
            flushed_seq: 99,
            log_zones: vec![5, 9],
            log_ends: BTreeMap::from([(5, 4096)]),
            bands: vec![BandMeta {
                id: 3,
                zone: 4,
                level: 1,
                sectors: 200,
                smallest: b"a".to_vec(),
                largest: b"m".to_vec(),
                min_seq: 1,
                max_seq: 50,
                entries: 1000,
                data_bytes: 800_000,
                write_time: 123,
            }],
            compact_pointers: vec![b"q".to_vec()],
        }
    }

    #[test]
    fn round_trip_and_every_flip_detected() {
        let m = sample();
        let enc = m.encode();
        assert_eq!(Manifest::decode(&enc).unwrap(), m);
        for i in 0..enc.len() {
            let mut b = enc.clone();
            b[i] ^= 0x04;
            assert!(Manifest::decode(&b).is_err(), "flip at {i}");
        }
        for n in 0..enc.len() {
            assert!(Manifest::decode(&enc[..n]).is_err());
        }
    }

    /// A copy of `m` with `version` in place of the current one, checksum recomputed; before
    /// version 4 without the body's last field (the log band ends, which `m` must not have).
    fn with_version_of(m: &Manifest, version: u32) -> Vec<u8> {
        let mut enc = m.encode();
        if version < 4 {
            assert!(m.log_ends.is_empty());
            // Drop the empty list of log band ends (one byte) before the crc.
            enc.remove(enc.len() - 5);
            let body = u32::from_le_bytes(enc[20..24].try_into().unwrap()) - 1;
            enc[20..24].copy_from_slice(&body.to_le_bytes());
        }
        enc[8..12].copy_from_slice(&version.to_le_bytes());
        let n = enc.len() - 4;
        Suffix::masked("").seal_at(&mut enc, n);
        enc
    }

    fn with_version(version: u32) -> Vec<u8> {
        let m = Manifest {
            log_ends: BTreeMap::new(),
            ..sample()
        };
        with_version_of(&m, version)
    }

    #[test]
    fn log_band_ends_are_kept_only_for_listed_log_bands() {
        let mut m = sample();
        // An end left behind for a zone no longer listed is not encoded.
        m.log_ends.insert(77, 10);
        let d = Manifest::decode(&m.encode()).unwrap();
        assert_eq!(d, sample());
        // A copy naming the end of a zone it does not list is refused.
        let mut enc = sample().encode();
        // log_zones [5, 9] -> [9, 9] (after next_band_id, flushed_seq and the count, one byte
        // each): 5 is no longer listed.
        let at = MANIFEST_HEADER + 3;
        assert_eq!(enc[at], 5);
        enc[at] = 9;
        let n = enc.len() - 4;
        Suffix::masked("").seal_at(&mut enc, n);
        let e = Manifest::decode(&enc).unwrap_err();
        assert!(e.to_string().contains("does not list"), "{e}");
    }

    /// The bytes of the documented layout (`docs/formats/smrdb.md`), checksum included.
    #[test]
    fn bytes_follow_the_documented_layout() {
        let m = Manifest::default();
        let mut want = b"SMRDBMAN".to_vec();
        want.extend_from_slice(&5u32.to_le_bytes());
        want.extend_from_slice(&0u64.to_le_bytes());
        // Body: next_band_id, flushed_seq, no log zones, no bands, no pointers, no log ends.
        want.extend_from_slice(&6u32.to_le_bytes());
        want.extend_from_slice(&[0; 6]);
        let crc = Crc::Masked.of(&want);
        want.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(m.encode(), want);
        assert_eq!(Manifest::encoded_len(&want), Some(want.len()));
    }

    #[test]
    fn older_copies_still_decode_and_newer_ones_are_refused() {
        let no_ends = Manifest {
            log_ends: BTreeMap::new(),
            ..sample()
        };
        for v in 1..=3 {
            assert_eq!(Manifest::decode(&with_version(v)).unwrap(), no_ends);
            assert_eq!(Manifest::version_of(&with_version(v)), Some(v));
        }
        for v in 4..=5 {
            assert_eq!(
                Manifest::decode(&with_version_of(&sample(), v)).unwrap(),
                sample()
            );
        }
        let e = Manifest::decode(&with_version(6)).unwrap_err();
        assert_eq!(
            e,
            FormatError::Frame(FrameError::Version {
                name: "smrdb manifest",
                found: 6
            })
        );
        assert!(e.to_string().contains("version 6"), "{e}");
        assert!(Manifest::decode(&with_version(0)).is_err());
        // A copy of an unknown version is still read whole (and then refused).
        let v6 = with_version(6);
        assert_eq!(Manifest::encoded_len(&v6), Some(v6.len()));
        assert_eq!(Manifest::version_of(&v6), Some(6));
    }
}
