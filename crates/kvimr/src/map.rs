//! The file-to-track map: which files exist, where each lives (its data tracks, in order, or
//! its safe slot), its level and its durable length, plus the newest read-modify-write whose
//! backup needs no replay. Two alternating slots in the safe region; the valid copy with the
//! higher sequence number wins. Since version 2 a copy also carries the store's lifetime
//! counters ([`Stats`]). Byte layout in `docs/formats/kvimr-map.md`.

use crate::stats::{Placement, Stats};
use tegula_codec::frame::Format;
use tegula_codec::{Dec, DecodeError, Enc, FormatError};

/// Magic of a map copy.
pub const MAP_MAGIC: [u8; 8] = *b"KVIMRMAP";
/// Current map version: 2 adds the lifetime counters.
pub const MAP_VERSION: u32 = 2;
/// The frame around a map copy (reads versions 1 and 2, writes 2).
pub const MAP_FORMAT: Format = Format::slot("kvimr map", &MAP_MAGIC, MAP_VERSION).reading_from(1);
/// The frame of a version-1 copy (no counters), written only to re-encode one.
const MAP_FORMAT_V1: Format = Format::slot("kvimr map", &MAP_MAGIC, 1);
/// Bytes of one level's placement counters in a map copy.
const LEVEL_BYTES: usize = 1 + 3 * 8;
/// Most tracks one file may list (a bound for decoders, far above any real file).
pub const MAX_FILE_TRACKS: usize = 1 << 20;
/// The level byte of a file without a level.
const NO_LEVEL: u8 = 0xff;

/// Where a file lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// On data tracks, placed by the allocation policy for its LSM level (if known).
    Data {
        /// The level hint given at creation.
        level: Option<u8>,
    },
    /// In a slot of the safe region (written in place, never damaged).
    Safe {
        /// The slot.
        slot: u32,
    },
}

/// One file of the map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Unique id.
    pub id: u64,
    /// The client's name for it (an adapter's zone number).
    pub name: u32,
    /// Where it lives.
    pub place: Place,
    /// Durable length in bytes (a safe file may hold more: its appends need no map update).
    pub len: u64,
    /// Whether the file is complete (no more appends).
    pub sealed: bool,
    /// Its data tracks in file order (empty for safe files).
    pub tracks: Vec<u32>,
}

/// A map copy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Map {
    /// Sequence number of this copy.
    pub seq: u64,
    /// Format epoch (from the superblock): copies of another epoch are ignored.
    pub epoch: u64,
    /// Staging records with a sequence number up to this one were applied completely.
    pub applied_rmw: u64,
    /// Next file id to hand out.
    pub next_file: u64,
    /// The files.
    pub files: Vec<FileEntry>,
    /// The store's counters over its life when this copy was written (version 2; `None` in
    /// a version-1 copy).
    pub totals: Option<Stats>,
}

/// The level byte of a [`Stats::levels`] key (`L3` → 3, `none` → 0xff).
fn level_byte(key: &str) -> Option<u8> {
    match key {
        "none" => Some(NO_LEVEL),
        k => k.strip_prefix('L')?.parse().ok().filter(|&l| l != NO_LEVEL),
    }
}

fn encode_totals(e: &mut Enc, t: &Stats) {
    let mut t = t.clone();
    for c in t.counters_mut() {
        e.u64(*c);
    }
    let levels: Vec<(u8, Placement)> = t
        .levels
        .iter()
        .filter_map(|(k, p)| Some((level_byte(k)?, *p)))
        .collect();
    e.u32(levels.len() as u32);
    for (l, p) in levels {
        e.u8(l);
        e.u64(p.files);
        e.u64(p.top_bytes);
        e.u64(p.bottom_bytes);
    }
}

fn decode_totals(d: &mut Dec<'_>) -> Result<Stats, DecodeError> {
    let mut t = Stats::default();
    for c in t.counters_mut() {
        *c = d.u64()?;
    }
    let n = d.u32()? as usize;
    if n > d.remaining() / LEVEL_BYTES {
        return Err(d.invalid("level count exceeds the record"));
    }
    for _ in 0..n {
        let l = d.u8()?;
        let p = Placement {
            files: d.u64()?,
            top_bytes: d.u64()?,
            bottom_bytes: d.u64()?,
        };
        let key = if l == NO_LEVEL {
            "none".to_string()
        } else {
            format!("L{l}")
        };
        if t.levels.insert(key, p).is_some() {
            return Err(d.invalid("a level's counters listed twice"));
        }
    }
    Ok(t)
}

/// Encodes a track list as runs `(first, count, step)`.
fn encode_tracks(e: &mut Enc, tracks: &[u32]) {
    let mut runs: Vec<(u32, u32, u8)> = Vec::new();
    for &t in tracks {
        if let Some(r) = runs.last_mut() {
            let last = r.0 as u64 + (r.1 as u64 - 1) * r.2 as u64;
            if r.1 == 1 && t as u64 > last && t as u64 - last <= u8::MAX as u64 {
                r.2 = (t as u64 - last) as u8;
                r.1 = 2;
                continue;
            }
            if r.1 > 1 && r.2 > 0 && t as u64 == last + r.2 as u64 {
                r.1 += 1;
                continue;
            }
        }
        runs.push((t, 1, 1));
    }
    e.u32(runs.len() as u32);
    for (first, count, step) in runs {
        e.u32(first);
        e.u32(count);
        e.u8(step);
    }
}

fn decode_tracks(d: &mut Dec<'_>) -> Result<Vec<u32>, DecodeError> {
    let n = d.u32()? as usize;
    if n > d.remaining() / 9 {
        return Err(d.invalid("track run count exceeds the record"));
    }
    let mut out = Vec::new();
    for _ in 0..n {
        let (first, count, step) = (d.u32()?, d.u32()?, d.u8()?);
        if count == 0 || step == 0 {
            return Err(d.invalid("empty track run"));
        }
        let last = first as u64 + (count as u64 - 1) * step as u64;
        if last >= u32::MAX as u64 || out.len() + count as usize > MAX_FILE_TRACKS {
            return Err(d.invalid("track run out of range"));
        }
        out.extend((0..count).map(|i| first + i * step as u32));
    }
    Ok(out)
}

impl Map {
    /// Whether the copy records safe files' lengths (version 2: their length as of the sync
    /// that wrote the copy); version 1 recorded 0, and a safe file was its whole slot.
    pub fn records_safe_lengths(&self) -> bool {
        self.totals.is_some()
    }

    /// Encodes this copy (one frame; the caller pads it to whole sectors).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Enc::new();
        e.u64(self.epoch);
        e.u64(self.applied_rmw);
        e.u64(self.next_file);
        e.u32(self.files.len() as u32);
        for f in &self.files {
            e.u64(f.id);
            e.u32(f.name);
            match f.place {
                Place::Data { level } => {
                    e.u8(0);
                    e.u8(level.unwrap_or(NO_LEVEL));
                    e.u32(0);
                }
                Place::Safe { slot } => {
                    e.u8(1);
                    e.u8(NO_LEVEL);
                    e.u32(slot);
                }
            }
            e.u64(f.len);
            e.u8(f.sealed as u8);
            encode_tracks(&mut e, &f.tracks);
        }
        match &self.totals {
            Some(t) => {
                encode_totals(&mut e, t);
                MAP_FORMAT.encode(0, self.seq, e.as_bytes())
            }
            None => MAP_FORMAT_V1.encode(0, self.seq, e.as_bytes()),
        }
    }

    /// Bytes of the frame at the start of `b`, from its header (to know how much to read), or
    /// `None` when no map header is there.
    pub fn frame_len(b: &[u8]) -> Option<usize> {
        let h = MAP_FORMAT.decode_header(b).ok()?;
        Some(MAP_FORMAT.frame_len(h.len as usize))
    }

    /// Decodes a map copy, checking magic, version, length, checksum and every field's range.
    pub fn decode(b: &[u8]) -> Result<Map, FormatError> {
        let f = MAP_FORMAT.decode(b)?;
        let mut d = Dec::new(f.payload);
        let m = (|| -> Result<Map, DecodeError> {
            let epoch = d.u64()?;
            let applied_rmw = d.u64()?;
            let next_file = d.u64()?;
            let n = d.u32()? as usize;
            if n > d.remaining() / 31 {
                return Err(d.invalid("file count exceeds the record"));
            }
            let mut files = Vec::with_capacity(n);
            for _ in 0..n {
                let id = d.u64()?;
                let name = d.u32()?;
                let kind = d.u8()?;
                let level = d.u8()?;
                let slot = d.u32()?;
                let place = match kind {
                    0 => Place::Data {
                        level: (level != NO_LEVEL).then_some(level),
                    },
                    1 if level == NO_LEVEL => Place::Safe { slot },
                    _ => return Err(d.invalid("unknown file placement")),
                };
                if kind == 0 && slot != 0 {
                    return Err(d.invalid("data file with a slot"));
                }
                let len = d.u64()?;
                let sealed = match d.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(d.invalid("sealed flag is not 0 or 1")),
                };
                let tracks = decode_tracks(&mut d)?;
                if kind == 1 && !tracks.is_empty() {
                    return Err(d.invalid("safe file with data tracks"));
                }
                if id >= next_file {
                    return Err(d.invalid("file id not below the next file id"));
                }
                files.push(FileEntry {
                    id,
                    name,
                    place,
                    len,
                    sealed,
                    tracks,
                });
            }
            let totals = if f.header.version >= 2 {
                Some(decode_totals(&mut d)?)
            } else {
                None
            };
            if !d.is_empty() {
                return Err(d.invalid("trailing bytes"));
            }
            Ok(Map {
                seq: f.header.seq,
                epoch,
                applied_rmw,
                next_file,
                files,
                totals,
            })
        })()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Map {
        Map {
            seq: 9,
            epoch: 2,
            applied_rmw: 4,
            next_file: 10,
            files: vec![
                FileEntry {
                    id: 3,
                    name: 7,
                    place: Place::Data { level: Some(2) },
                    len: 12345,
                    sealed: true,
                    tracks: vec![10, 12, 14, 15, 16, 40, 3],
                },
                FileEntry {
                    id: 4,
                    name: 8,
                    place: Place::Safe { slot: 1 },
                    len: 4096,
                    sealed: false,
                    tracks: vec![],
                },
                FileEntry {
                    id: 5,
                    name: 9,
                    place: Place::Data { level: None },
                    len: 0,
                    sealed: false,
                    tracks: vec![],
                },
            ],
            totals: Some(totals()),
        }
    }

    fn totals() -> Stats {
        let mut t = Stats::default();
        for (i, c) in t.counters_mut().into_iter().enumerate() {
            *c = 1000 + i as u64;
        }
        for (l, files) in [(Some(0), 3), (Some(12), 1), (None, 2)] {
            let p = t.level_mut(l);
            p.files = files;
            p.top_bytes = files << 20;
            p.bottom_bytes = files << 21;
        }
        t
    }

    #[test]
    fn round_trips_and_detects_every_flipped_byte() {
        let mut v1 = sample();
        v1.totals = None;
        let mut empty = sample();
        empty.totals = Some(Stats::default());
        for m in [sample(), v1, empty] {
            let b = m.encode();
            assert_eq!(Map::decode(&b), Ok(m.clone()));
            assert_eq!(Map::frame_len(&b), Some(b.len()));
            for i in 0..b.len() {
                let mut bad = b.clone();
                bad[i] ^= 0x04;
                assert!(Map::decode(&bad).is_err(), "flip at {i}");
            }
            for n in 0..b.len() {
                assert!(Map::decode(&b[..n]).is_err());
            }
        }
    }

    #[test]
    fn a_version_1_copy_has_no_counters_and_a_level_twice_is_refused() {
        let mut m = sample();
        m.totals = None;
        let b = m.encode();
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        // The sample's counters with level 0 listed twice, checksum valid.
        let b = sample().encode();
        let f = MAP_FORMAT.decode(&b).unwrap();
        let mut p = f.payload.to_vec();
        let n_at = p.len() - 3 * LEVEL_BYTES - 4;
        p[n_at] = 4;
        p.extend_from_within(n_at + 4..n_at + 4 + LEVEL_BYTES);
        let bad = MAP_FORMAT.encode(0, 9, &p);
        assert!(Map::decode(&bad).is_err());
    }

    #[test]
    fn runs_keep_the_order_of_tracks() {
        let mut e = Enc::new();
        let t = vec![5, 7, 9, 11, 12, 13, 2, 2, 100];
        encode_tracks(&mut e, &t);
        let b = e.into_bytes();
        assert_eq!(decode_tracks(&mut Dec::new(&b)), Ok(t));
    }

    proptest! {
        #[test]
        fn any_map_round_trips(
            files in proptest::collection::vec(
                (any::<u32>(), proptest::option::of(0u8..7), any::<u64>(), any::<bool>(),
                 proptest::collection::vec(0u32..5000, 0..40), proptest::option::of(0u32..64)),
                0..20),
            applied in any::<u64>(),
        ) {
            let n = files.len() as u64;
            let m = Map {
                seq: 1,
                epoch: 1,
                applied_rmw: applied,
                next_file: n + 1,
                files: files
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, level, len, sealed, tracks, slot))| FileEntry {
                        id: i as u64,
                        name,
                        place: match slot {
                            Some(s) => Place::Safe { slot: s },
                            None => Place::Data { level },
                        },
                        len,
                        sealed,
                        tracks: if slot.is_some() { vec![] } else { tracks },
                    })
                    .collect(),
                totals: (applied % 3 != 0).then(|| {
                    let mut t = Stats { syncs: applied, ..Stats::default() };
                    t.level_mut(Some((applied % 7) as u8)).files = applied / 3;
                    t
                }),
            };
            prop_assert_eq!(Map::decode(&m.encode()), Ok(m));
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = Map::decode(&b);
            let mut framed = MAP_FORMAT.encode(0, 1, &b);
            let _ = Map::decode(&framed);
            framed.truncate(framed.len() / 2);
            let _ = Map::decode(&framed);
        }
    }
}
