//! Per-zone append and delete logs (ShingledFS §5.3.3): for each sequential zone, which
//! pieces of which inodes were appended to it and which of their bytes were deleted or
//! overwritten since the zone was last reset. Live and dead bytes, the live pieces a cleaner
//! must move and the holes at a zone's tail come from here, without a walk over every inode.
//!
//! The logs are part of the metadata state: [`super::State::apply`] appends an entry for
//! every piece a `Map` op places and a delete entry for every byte a `Map`, `Truncate` or
//! `Free` op unmaps, so log replay rebuilds them exactly; checkpoints store them (compacted:
//! an append record whose bytes are all deleted is dropped with its deletes) in a frame of
//! their own. Format: `docs/formats/fs-zone-logs.md`.

use super::inode::Piece;
use std::collections::BTreeMap;
use tegula_codec::{Dec, DecodeError, Enc};

/// One append-log entry: `len` bytes of inode `ino` from file offset `off`, stored at bytes
/// `[ext_off, ext_off + len)` of the extent whose data starts at `ext_lba` (`ext_len` bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendRec {
    /// Owner.
    pub ino: u64,
    /// File offset of the first byte.
    pub off: u64,
    /// First LBA of the extent's data.
    pub ext_lba: u64,
    /// Bytes of the whole extent.
    pub ext_len: u64,
    /// Offset of the first byte within the extent.
    pub ext_off: u64,
    /// Bytes appended.
    pub len: u64,
}

/// One delete-log entry: bytes `[from, from + len)` of append record `rec` died (deleted,
/// truncated, overwritten or moved by the cleaner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRec {
    /// The append record (its number within the zone).
    pub rec: u64,
    /// First byte, relative to the record's start.
    pub from: u64,
    /// Bytes.
    pub len: u64,
}

/// A live run of file bytes as the cleaner sees it: the piece and whose it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivePiece {
    /// Owner.
    pub ino: u64,
    /// File offset.
    pub off: u64,
    /// Where the bytes are.
    pub piece: Piece,
}

/// An extent with live bytes, as the cleaner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveExtent {
    /// First LBA of its data.
    pub lba: u64,
    /// Bytes of its data.
    pub len: u64,
    /// Live bytes in it.
    pub live: u64,
    /// Runs of live bytes (each moves as a piece of its own).
    pub pieces: usize,
}

/// Why a zone-log change does not apply (replay found a log that does not fit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneLogError(pub String);

/// The logs of one zone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoneLog {
    /// Number the next append record gets (records are numbered from 0 after each reset).
    next_rec: u64,
    /// Append records that still hold live bytes, by number.
    appends: BTreeMap<u64, AppendRec>,
    /// Delete records of those append records, in the order they happened.
    deletes: Vec<DeleteRec>,
    /// Live byte ranges of each append record (`start -> end`, relative to the record).
    live: BTreeMap<u64, BTreeMap<u64, u64>>,
    /// Append record by (extent LBA, offset in the extent) of its first byte.
    by_loc: BTreeMap<(u64, u64), u64>,
    /// Live bytes.
    live_bytes: u64,
    /// Bytes appended since the last reset (the append log's total).
    appended: u64,
    /// Bytes deleted since the last reset (the delete log's total).
    deleted: u64,
}

impl ZoneLog {
    /// Live bytes in the zone.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Bytes appended since the zone was last reset.
    pub fn appended_bytes(&self) -> u64 {
        self.appended
    }

    /// Bytes deleted since the zone was last reset.
    pub fn deleted_bytes(&self) -> u64 {
        self.deleted
    }

    /// Append records still holding live bytes.
    pub fn append_records(&self) -> usize {
        self.appends.len()
    }

    /// Delete records kept (those of live append records).
    pub fn delete_records(&self) -> usize {
        self.deletes.len()
    }

    /// Whether no record is kept.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.appends.is_empty()
    }

    /// Records an append.
    fn append(&mut self, a: AppendRec) -> Result<(), ZoneLogError> {
        let rec = self.next_rec;
        self.insert(rec, a)?;
        self.next_rec += 1;
        self.appended += a.len;
        Ok(())
    }

    /// Inserts append record `rec` with every byte live, refusing bytes another record holds.
    fn insert(&mut self, rec: u64, a: AppendRec) -> Result<(), ZoneLogError> {
        if a.len == 0 {
            return Err(ZoneLogError("empty append".into()));
        }
        let end = a.ext_off + a.len;
        let twice = || {
            ZoneLogError(format!(
                "bytes of the extent at LBA {} appended twice",
                a.ext_lba
            ))
        };
        if self.record_at(a.ext_lba, a.ext_off).is_some() {
            return Err(twice());
        }
        if let Some((&(l, o), _)) = self.by_loc.range((a.ext_lba, a.ext_off)..).next() {
            if l == a.ext_lba && o < end {
                return Err(twice());
            }
        }
        self.appends.insert(rec, a);
        self.live.insert(rec, BTreeMap::from([(0, a.len)]));
        self.by_loc.insert((a.ext_lba, a.ext_off), rec);
        self.live_bytes += a.len;
        Ok(())
    }

    /// The record holding byte `ext_off` of the extent at `ext_lba`.
    fn record_at(&self, ext_lba: u64, ext_off: u64) -> Option<u64> {
        let (&(l, _), &r) = self.by_loc.range(..=(ext_lba, ext_off)).next_back()?;
        let a = self.appends.get(&r)?;
        (l == ext_lba && ext_off < a.ext_off + a.len).then_some(r)
    }

    /// Records that the bytes of `p` died.
    fn delete(&mut self, p: &Piece) -> Result<(), ZoneLogError> {
        let missing = || {
            ZoneLogError(format!(
                "delete of bytes {}..{} of the extent at LBA {} that no append record holds",
                p.ext_off,
                p.ext_off + p.len,
                p.ext_lba
            ))
        };
        let rec = self.record_at(p.ext_lba, p.ext_off).ok_or_else(missing)?;
        let a = self.appends[&rec];
        let from = p.ext_off - a.ext_off;
        let to = from + p.len;
        if to > a.len {
            return Err(missing());
        }
        let ranges = self.live.get_mut(&rec).ok_or_else(missing)?;
        // The deleted bytes must be live: inside one live range.
        let (&s, &e) = ranges.range(..=from).next_back().ok_or_else(missing)?;
        if to > e {
            return Err(missing());
        }
        ranges.remove(&s);
        if s < from {
            ranges.insert(s, from);
        }
        if to < e {
            ranges.insert(to, e);
        }
        self.live_bytes -= p.len;
        self.deleted += p.len;
        if ranges.is_empty() {
            // Compaction: a record with no live byte left goes with its deletes.
            self.live.remove(&rec);
            self.appends.remove(&rec);
            self.by_loc.remove(&(a.ext_lba, a.ext_off));
            self.deletes.retain(|d| d.rec != rec);
        } else {
            self.deletes.push(DeleteRec {
                rec,
                from,
                len: p.len,
            });
        }
        Ok(())
    }

    /// Every live run of the zone in disk order (extent LBA, then offset).
    pub fn live_pieces(&self) -> Vec<LivePiece> {
        let mut out = Vec::new();
        for &rec in self.by_loc.values() {
            let (Some(a), Some(ranges)) = (self.appends.get(&rec), self.live.get(&rec)) else {
                continue;
            };
            for (&s, &e) in ranges {
                out.push(LivePiece {
                    ino: a.ino,
                    off: a.off + s,
                    piece: Piece {
                        len: e - s,
                        zone: 0,
                        ext_lba: a.ext_lba,
                        ext_len: a.ext_len,
                        ext_off: a.ext_off + s,
                    },
                });
            }
        }
        out
    }

    /// Extents holding live bytes, in disk order.
    pub fn live_extents(&self) -> Vec<LiveExtent> {
        let mut out: Vec<LiveExtent> = Vec::new();
        for (&(lba, _), &rec) in &self.by_loc {
            let (Some(a), Some(ranges)) = (self.appends.get(&rec), self.live.get(&rec)) else {
                continue;
            };
            let live: u64 = ranges.iter().map(|(s, e)| e - s).sum();
            match out.last_mut() {
                Some(l) if l.lba == lba => {
                    l.live += live;
                    l.pieces += ranges.len();
                }
                _ => out.push(LiveExtent {
                    lba,
                    len: a.ext_len,
                    live,
                    pieces: ranges.len(),
                }),
            }
        }
        out
    }

    /// Checks that no record of an extent starting at or after `lba` is left (the write
    /// pointer was set back to `lba`; every byte there must be dead, and dead records are
    /// dropped as they die). That extents before `lba` also end before it is the caller's
    /// check, which knows the sector size.
    fn rewind(&mut self, lba: u64) -> Result<(), ZoneLogError> {
        if let Some((&(l, _), _)) = self.by_loc.range((lba, 0)..).next() {
            return Err(ZoneLogError(format!(
                "write pointer set back to LBA {lba} over live bytes of the extent at LBA {l}"
            )));
        }
        Ok(())
    }

    /// Checks the zone holds no live byte and forgets it (the zone was reset).
    fn reset(&mut self) -> Result<(), ZoneLogError> {
        if self.live_bytes > 0 {
            return Err(ZoneLogError(format!(
                "reset of a zone with {} live bytes",
                self.live_bytes
            )));
        }
        *self = ZoneLog::default();
        Ok(())
    }
}

/// The logs of every zone (conventional zones keep empty ones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoneLogs {
    zones: Vec<ZoneLog>,
}

impl ZoneLogs {
    /// Empty logs for `zones` zones.
    pub fn new(zones: usize) -> Self {
        ZoneLogs {
            zones: vec![ZoneLog::default(); zones],
        }
    }

    /// The log of `zone`.
    pub fn zone(&self, zone: u32) -> Option<&ZoneLog> {
        self.zones.get(zone as usize)
    }

    fn zone_mut(&mut self, zone: u32) -> Result<&mut ZoneLog, ZoneLogError> {
        self.zones
            .get_mut(zone as usize)
            .ok_or_else(|| ZoneLogError(format!("zone {zone} past the device")))
    }

    /// Number of zones.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.zones.len()
    }

    /// Records that `piece` now holds bytes of `ino` from `off`.
    pub(super) fn append(&mut self, ino: u64, off: u64, p: &Piece) -> Result<(), ZoneLogError> {
        self.zone_mut(p.zone)?.append(AppendRec {
            ino,
            off,
            ext_lba: p.ext_lba,
            ext_len: p.ext_len,
            ext_off: p.ext_off,
            len: p.len,
        })
    }

    /// Records that the bytes of `piece` died.
    pub(super) fn delete(&mut self, p: &Piece) -> Result<(), ZoneLogError> {
        self.zone_mut(p.zone)?.delete(p)
    }

    /// Forgets a zone that was reset (it must hold no live byte).
    pub(super) fn reset(&mut self, zone: u32) -> Result<(), ZoneLogError> {
        self.zone_mut(zone)?.reset()
    }

    /// Forgets the records at or after `lba` (all dead) of a zone whose write pointer was set
    /// back.
    pub(super) fn rewind(&mut self, zone: u32, lba: u64) -> Result<(), ZoneLogError> {
        self.zone_mut(zone)?.rewind(lba)
    }

    /// Live pieces of `zone` in disk order, with the zone filled in.
    pub fn live_pieces(&self, zone: u32) -> Vec<LivePiece> {
        let mut v = self
            .zone(zone)
            .map(ZoneLog::live_pieces)
            .unwrap_or_default();
        for p in &mut v {
            p.piece.zone = zone;
        }
        v
    }

    /// Appends the encoding (the payload of the zone-log frame).
    pub fn encode(&self, e: &mut Enc) {
        e.u64(self.zones.len() as u64);
        for z in &self.zones {
            e.u64(z.next_rec);
            e.u64(z.appended);
            e.u64(z.deleted);
            e.u64(z.appends.len() as u64);
            for (&rec, a) in &z.appends {
                e.u64(rec);
                e.u64(a.ino);
                e.u64(a.off);
                e.u64(a.ext_lba);
                e.u64(a.ext_len);
                e.u64(a.ext_off);
                e.u64(a.len);
            }
            e.u64(z.deletes.len() as u64);
            for d in &z.deletes {
                e.u64(d.rec);
                e.u64(d.from);
                e.u64(d.len);
            }
        }
    }

    /// Decodes what [`ZoneLogs::encode`] wrote, checking that records fit their extents, that
    /// no two records share bytes and that every delete removes live bytes of a record.
    pub fn decode(d: &mut Dec) -> Result<ZoneLogs, DecodeError> {
        let n = d.count(40)?;
        let mut zones = Vec::with_capacity(n);
        for _ in 0..n {
            let next_rec = d.u64()?;
            let appended = d.u64()?;
            let deleted = d.u64()?;
            let mut z = ZoneLog::default();
            let na = d.count(56)?;
            let mut last_rec = None;
            for _ in 0..na {
                let rec = d.u64()?;
                let a = AppendRec {
                    ino: d.u64()?,
                    off: d.u64()?,
                    ext_lba: d.u64()?,
                    ext_len: d.u64()?,
                    ext_off: d.u64()?,
                    len: d.u64()?,
                };
                if last_rec.is_some_and(|l| rec <= l) || rec >= next_rec {
                    return Err(d.invalid("append record number"));
                }
                if a.len == 0
                    || a.ext_off.checked_add(a.len).is_none_or(|e| e > a.ext_len)
                    || a.off.checked_add(a.len).is_none()
                {
                    return Err(d.invalid("append record outside its extent"));
                }
                last_rec = Some(rec);
                z.insert(rec, a)
                    .map_err(|_| d.invalid("overlapping append records"))?;
            }
            let nd = d.count(24)?;
            for _ in 0..nd {
                let del = DeleteRec {
                    rec: d.u64()?,
                    from: d.u64()?,
                    len: d.u64()?,
                };
                let a = z
                    .appends
                    .get(&del.rec)
                    .copied()
                    .ok_or_else(|| d.invalid("delete of a missing append record"))?;
                if del.len == 0 || del.from.checked_add(del.len).is_none_or(|e| e > a.len) {
                    return Err(d.invalid("delete outside its append record"));
                }
                let p = Piece {
                    len: del.len,
                    zone: 0,
                    ext_lba: a.ext_lba,
                    ext_len: a.ext_len,
                    ext_off: a.ext_off + del.from,
                };
                z.delete(&p)
                    .map_err(|_| d.invalid("delete of bytes already deleted"))?;
                if !z.appends.contains_key(&del.rec) {
                    return Err(d.invalid("append record whose bytes are all deleted"));
                }
            }
            z.next_rec = next_rec;
            z.appended = appended;
            z.deleted = deleted;
            zones.push(z);
        }
        Ok(ZoneLogs { zones })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::testutil::piece;

    fn sub(p: Piece, from: u64, len: u64) -> Piece {
        Piece {
            len,
            ext_off: p.ext_off + from,
            ..p
        }
    }

    #[test]
    fn appends_and_deletes_give_live_pieces_and_compact() {
        let mut l = ZoneLogs::new(3);
        let a = piece(1, 100, 1000);
        let b = piece(1, 200, 500);
        l.append(7, 0, &a).unwrap();
        l.append(8, 4096, &b).unwrap();
        assert!(
            l.append(9, 0, &sub(a, 10, 5)).is_err(),
            "bytes appended twice"
        );
        l.delete(&sub(a, 100, 50)).unwrap();
        assert!(l.delete(&sub(a, 120, 10)).is_err(), "deleted twice");
        let z = l.zone(1).unwrap();
        assert_eq!(z.live_bytes(), 1450);
        assert_eq!(z.delete_records(), 1);
        let live = l.live_pieces(1);
        assert_eq!(
            live.iter()
                .map(|p| (p.ino, p.off, p.piece.len))
                .collect::<Vec<_>>(),
            vec![(7, 0, 100), (7, 150, 850), (8, 4096, 500)]
        );
        let mut e = Enc::new();
        l.encode(&mut e);
        let back = ZoneLogs::decode(&mut Dec::new(e.as_bytes())).unwrap();
        assert_eq!(back, l);
        // Deleting the rest of the first record drops it and its deletes.
        l.delete(&sub(a, 0, 100)).unwrap();
        l.delete(&sub(a, 150, 850)).unwrap();
        let z = l.zone(1).unwrap();
        assert_eq!((z.append_records(), z.delete_records()), (1, 0));
        assert!(l.reset(1).is_err(), "live bytes left");
        assert!(l.rewind(1, 150).is_err(), "live bytes behind the pointer");
        l.rewind(1, 201).unwrap_or_else(|e| panic!("{e:?}"));
        l.delete(&b).unwrap();
        l.reset(1).unwrap();
        assert!(l.zone(1).unwrap().is_empty());
        for cut in 0..e.as_bytes().len() {
            assert!(ZoneLogs::decode(&mut Dec::new(&e.as_bytes()[..cut])).is_err());
        }
    }
}
