//! Formatting a raw interlaced drive as drive-managed, opening one (finishing an interrupted
//! read-modify-write from its staging record), and telling whether a drive is one.

use crate::drive::{DmImr, Inner};
use crate::error::{Error, Result};
use crate::mapping::Mapping;
use crate::meta::MetaRecord;
use crate::options::FormatOptions;
use crate::stats::DmImrStats;
use crate::superblock::Superblock;
use parking_lot::Mutex;
use std::sync::Arc;
use tegula_codec::FormatError;
use tegula_device::{BlockDevice, DeviceInfo, Disk, DriveKind, TrackLayout};
use tegula_kvimr::layout::Layout;
use tegula_kvimr::staging::StagingRecord;

/// Why a copy of a metadata record is unusable.
#[derive(Debug, thiserror::Error)]
enum CopyProblem {
    /// Its sectors are all zero.
    #[error("never written")]
    Blank,
    /// It does not decode.
    #[error(transparent)]
    Damaged(FormatError),
}

/// The raw drive's track layout and sector size, or why it cannot be drive-managed IMR.
fn raw_facts(disk: &Disk) -> Result<(TrackLayout, u64)> {
    if disk.config().kind != DriveKind::Imr {
        return Err(Error::Invalid(format!(
            "a drive-managed IMR drive needs interlaced media (kind imr), not {}",
            disk.info().kind
        )));
    }
    let tl = disk
        .track_layout()
        .ok_or_else(|| Error::Invalid("the drive has no track layout".into()))?
        .clone();
    Ok((tl, disk.info().sector_size as u64))
}

/// The layout for `meta_slot_bytes` and `staging_bytes`.
fn layout_for(
    tl: &TrackLayout,
    ss: u64,
    meta_slot_bytes: u64,
    staging_bytes: u64,
) -> Result<Layout> {
    let fo = tegula_kvimr::FormatOptions {
        map_slot_bytes: meta_slot_bytes,
        staging_bytes,
        raw_bytes: 0,
        safe_files: 0,
        safe_file_bytes: 0,
        file_bytes: 0,
    };
    let layout = Layout::new(tl, ss, &fo)?;
    let slot = layout.regions.staging_sectors / 2;
    let need = 2 * layout.max_track_sectors() + 16;
    if slot < need {
        return Err(Error::Invalid(format!(
            "a staging slot of {slot} sectors (half of {staging_bytes} bytes) must hold two of \
             the largest tracks and a header ({need} sectors): give a larger staging area"
        )));
    }
    Ok(layout)
}

/// Sectors of one metadata record of a drive of `tl`'s tracks.
fn record_sectors(tl: &TrackLayout, ss: u64) -> u64 {
    (MetaRecord::encoded_len(tl.track_count() as usize) as u64)
        .div_ceil(ss)
        .max(1)
}

/// Metadata slot bytes of a new format: two copies of the record and one spare sector (in
/// slot 0, superblock copy B).
fn twin_slot_bytes(tl: &TrackLayout, ss: u64) -> u64 {
    (2 * record_sectors(tl, ss) + 1) * ss
}

/// Whether a drive formatted with `meta_slot_bytes` keeps twin records and superblock copy B
/// (formats before them had slots of one record).
fn has_twins(tl: &TrackLayout, ss: u64, meta_slot_bytes: u64) -> bool {
    meta_slot_bytes >= twin_slot_bytes(tl, ss)
}

/// The LBA of safe-region sector `off` (the safe tracks in order; the first sectors lie where
/// they lie whatever the region's size).
fn safe_lba(tl: &TrackLayout, ss: u64, off: u64) -> Result<u64> {
    let max_track = (0..tl.track_count())
        .filter_map(|i| tl.track(i))
        .map(|t| t.sectors)
        .max()
        .unwrap_or(0);
    let fo = tegula_kvimr::FormatOptions {
        map_slot_bytes: twin_slot_bytes(tl, ss),
        // The least the layout accepts: two of the largest tracks.
        staging_bytes: (2 * max_track + 2) * ss,
        raw_bytes: 0,
        safe_files: 0,
        safe_file_bytes: 0,
        file_bytes: 0,
    };
    let layout = Layout::new(tl, ss, &fo)?;
    layout
        .safe_extents(off, 1)
        .first()
        .map(|&(lba, _)| lba)
        .ok_or_else(|| Error::Invalid(format!("safe-region sector {off} does not exist")))
}

/// The superblock as found: which copy served and what is wrong with the other.
struct FoundSuperblock {
    sb: Superblock,
    /// Copy A when it was damaged and copy B served (its LBA, with why).
    damaged: Vec<(u64, String)>,
}

/// Reads the superblock: copy A (the first sector of the safe region) or, when A is damaged
/// or its magic is gone, copy B (the spare sector of metadata slot 0, on formats that have
/// it). `None` when neither holds one (never formatted drive-managed); both damaged is
/// corruption.
fn read_superblock(disk: &Disk, tl: &TrackLayout, ss: u64) -> Result<Option<FoundSuperblock>> {
    let Some(first_top) = (0..tl.track_count())
        .filter_map(|i| tl.track(i))
        .find(|t| t.kind == tegula_device::TrackKind::Top)
    else {
        return Ok(None);
    };
    let mut b = vec![0u8; ss as usize];
    disk.read(first_top.lba, &mut b)?;
    let a = Superblock::decode(&b);
    if let Ok(Some(sb)) = a {
        // Copy B is checked when the drive is opened (`check_copy_b`), not to tell whether it
        // is formatted.
        return Ok(Some(FoundSuperblock {
            sb,
            damaged: Vec::new(),
        }));
    }
    let copy_b = read_copy_b(disk, tl, ss)?;
    match (a, copy_b) {
        (a, Some(sb)) => Ok(Some(FoundSuperblock {
            sb,
            damaged: vec![(
                first_top.lba,
                match a {
                    Err(e) => format!("superblock copy A (LBA {}) is damaged: {e}", first_top.lba),
                    _ => format!(
                        "superblock copy A (LBA {}) has lost its magic; copy B was used",
                        first_top.lba
                    ),
                },
            )],
        })),
        (Err(source), None) => Err(Error::Malformed {
            what: "superblock",
            source,
        }),
        (Ok(_), None) => Ok(None),
    }
}

/// Superblock copy B, where a format with twins keeps it, if it holds a valid superblock of
/// such a format. Its sector may be unreadable on a raw drive (destroyed by bottom writes):
/// then there is no copy.
fn read_copy_b(disk: &Disk, tl: &TrackLayout, ss: u64) -> Result<Option<Superblock>> {
    let lba = safe_lba(tl, ss, 1 + 2 * record_sectors(tl, ss))?;
    let mut b = vec![0u8; ss as usize];
    Ok(match disk.read(lba, &mut b) {
        Ok(_) => Superblock::decode(&b)
            .ok()
            .flatten()
            .filter(|sb| has_twins(tl, ss, sb.meta_slot_bytes)),
        Err(_) => None,
    })
}

/// What is wrong with copy B of superblock `sb` (found through copy A), on a format with
/// twins: missing, damaged or different.
fn check_copy_b(disk: &Disk, tl: &TrackLayout, ss: u64, sb: &Superblock) -> Result<Option<String>> {
    if !has_twins(tl, ss, sb.meta_slot_bytes) {
        return Ok(None);
    }
    let lba = safe_lba(tl, ss, 1 + 2 * record_sectors(tl, ss))?;
    Ok(match read_copy_b(disk, tl, ss)? {
        Some(b) if b == *sb => None,
        Some(_) => Some(format!("superblock copy B (LBA {lba}) differs from copy A")),
        None => Some(format!(
            "superblock copy B (LBA {lba}) is damaged or missing"
        )),
    })
}

/// Where a formatted drive keeps its metadata copies (raw-drive LBAs), for tools and tests
/// that look at them: see `docs/formats/dm-imr.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaLocations {
    /// Superblock copy A, and copy B where the format has one.
    pub superblock: Vec<u64>,
    /// Per metadata slot, the first LBA of each copy of its record.
    pub meta: [Vec<u64>; 2],
    /// Sectors of one metadata record.
    pub record_sectors: u64,
}

/// What [`DmImr::check_metadata`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaCheck {
    /// Damaged copies of the superblock or of the newest metadata record (their twins hold
    /// the content; opening rewrites them).
    pub damaged: Vec<String>,
    /// Damaged older records: what a power cut tearing a record's write leaves (not a loss).
    pub torn: Vec<String>,
}

/// What [`DmImr::probe`] found on a raw interlaced drive.
pub enum Probe {
    /// A drive-managed drive, opened.
    Opened(Box<DmImr>),
    /// No drive-managed superblock: the raw drive, given back.
    Raw(Arc<Disk>),
}

impl DmImr {
    /// Whether `disk` holds a drive-managed IMR superblock (an intact or a damaged one).
    /// A drive whose superblock sector cannot be read (a raw drive whose first top track was
    /// damaged by bottom writes) is not one.
    pub fn is_formatted(disk: &Disk) -> bool {
        let Ok((tl, ss)) = raw_facts(disk) else {
            return false;
        };
        match read_superblock(disk, &tl, ss) {
            Ok(Some(_)) | Err(Error::Corruption { .. } | Error::Malformed { .. }) => true,
            Ok(None) | Err(_) => false,
        }
    }

    /// Examines the superblock and metadata copies of the drive-managed drive on `disk`
    /// without writing anything (`disk check`): a damaged copy, or a damaged older record
    /// that a torn write could have left. Opening would rewrite damaged copies of the newest
    /// from their twins; this only names them.
    pub fn check_metadata(disk: Arc<Disk>) -> Result<MetaCheck> {
        let (tl, ss) = raw_facts(&disk)?;
        let found = read_superblock(&disk, &tl, ss)?.ok_or(Error::NotFormatted)?;
        let sb = found.sb;
        let mut problems: Vec<String> = found.damaged.into_iter().map(|(_, w)| w).collect();
        if problems.is_empty() {
            problems.extend(check_copy_b(&disk, &tl, ss, &sb)?);
        }
        let layout = layout_for(&tl, ss, sb.meta_slot_bytes, sb.staging_bytes)?;
        let mut inner = Self::inner(disk, tl, layout, sb, ss);
        inner.load_meta()?;
        problems.append(&mut inner.meta_damage);
        Ok(MetaCheck {
            damaged: problems,
            torn: std::mem::take(&mut inner.warnings),
        })
    }

    /// Where the drive-managed drive on `disk` keeps its superblock and metadata copies.
    pub fn metadata_locations(disk: &Disk) -> Result<MetaLocations> {
        let (tl, ss) = raw_facts(disk)?;
        let found = read_superblock(disk, &tl, ss)?.ok_or(Error::NotFormatted)?;
        let sb = found.sb;
        let layout = layout_for(&tl, ss, sb.meta_slot_bytes, sb.staging_bytes)?;
        let rs = record_sectors(&tl, ss);
        let twins = has_twins(&tl, ss, sb.meta_slot_bytes);
        let lba = |off: u64| safe_lba(&tl, ss, off);
        let mut superblock = vec![lba(0)?];
        if twins {
            superblock.push(lba(1 + 2 * rs)?);
        }
        let copies = |k: usize| -> Result<Vec<u64>> {
            let off = layout.regions.map[k];
            if twins {
                Ok(vec![lba(off)?, lba(off + rs)?])
            } else {
                Ok(vec![lba(off)?])
            }
        };
        Ok(MetaLocations {
            superblock,
            meta: [copies(0)?, copies(1)?],
            record_sectors: rs,
        })
    }

    /// Formats the raw interlaced `disk` as a drive-managed drive: writes the superblock and
    /// an empty metadata record (every track without data), synced.
    pub fn format(disk: Arc<Disk>, opts: FormatOptions) -> Result<DmImr> {
        let (tl, ss) = raw_facts(&disk)?;
        let epoch = match read_superblock(&disk, &tl, ss) {
            Ok(Some(f)) => f.sb.epoch + 1,
            _ => 1,
        };
        // Two copies of each record, and a spare sector for superblock copy B.
        let meta_slot_bytes = twin_slot_bytes(&tl, ss);
        let layout = layout_for(&tl, ss, meta_slot_bytes, opts.staging_bytes)?;
        let tracks_end = tl
            .track(tl.track_count().saturating_sub(1))
            .map_or(0, |t| t.end_lba());
        let sb = Superblock {
            sector_size: ss as u32,
            tracks: tl.track_count(),
            tracks_end,
            epoch,
            meta_slot_bytes,
            staging_bytes: opts.staging_bytes,
        };
        let mut inner = Self::inner(disk, tl, layout, sb, ss);
        inner.write_superblocks()?;
        inner.meta_dirty = true;
        inner.sync_all()?;
        Ok(Self::assemble(inner))
    }

    /// Opens the drive-managed drive on `disk`: reads the superblock and the newest intact
    /// metadata record, and restores the tops of a read-modify-write a power cut interrupted.
    pub fn open(disk: Arc<Disk>) -> Result<DmImr> {
        let (tl, ss) = raw_facts(&disk)?;
        let found = read_superblock(&disk, &tl, ss)?.ok_or(Error::NotFormatted)?;
        Self::open_with(disk, tl, ss, found)
    }

    /// Opens `disk` if it is formatted drive-managed ([`DmImr::is_formatted`]), and gives it
    /// back otherwise: one read of the superblock where `is_formatted` then `open` take two.
    /// A damaged superblock is an error, as in `open`.
    pub fn probe(disk: Arc<Disk>) -> Result<Probe> {
        let Ok((tl, ss)) = raw_facts(&disk) else {
            return Ok(Probe::Raw(disk));
        };
        match read_superblock(&disk, &tl, ss) {
            Ok(Some(f)) => Self::open_with(disk, tl, ss, f).map(|d| Probe::Opened(Box::new(d))),
            Err(e @ (Error::Corruption { .. } | Error::Malformed { .. })) => Err(e),
            Ok(None) | Err(_) => Ok(Probe::Raw(disk)),
        }
    }

    /// Opens the drive whose superblock `sb` was read from `disk`.
    fn open_with(
        disk: Arc<Disk>,
        tl: TrackLayout,
        ss: u64,
        found: FoundSuperblock,
    ) -> Result<DmImr> {
        let sb = found.sb;
        let mut damaged: Vec<String> = found.damaged.into_iter().map(|(_, w)| w).collect();
        if damaged.is_empty() {
            damaged.extend(check_copy_b(&disk, &tl, ss, &sb)?);
        }
        let tracks_end = tl
            .track(tl.track_count().saturating_sub(1))
            .map_or(0, |t| t.end_lba());
        if sb.sector_size as u64 != ss
            || sb.tracks != tl.track_count()
            || sb.tracks_end != tracks_end
        {
            return Err(Error::corrupt(
                "superblock",
                format!(
                    "laid out for a drive of {} tracks ending at LBA {} with {}-byte sectors; \
                     this one has {} tracks ending at {} with {ss}-byte sectors",
                    sb.tracks,
                    sb.tracks_end,
                    sb.sector_size,
                    tl.track_count(),
                    tracks_end
                ),
            ));
        }
        let layout = layout_for(&tl, ss, sb.meta_slot_bytes, sb.staging_bytes)?;
        let mut inner = Self::inner(disk, tl, layout, sb, ss);
        inner.load_meta()?;
        // Damaged copies are rewritten from their good twins (the same content: a repair,
        // never a rollback) and reported.
        if !damaged.is_empty() {
            inner.write_superblocks()?;
            inner.sync()?;
            for why in damaged {
                inner.note_repair(format!("{why}; rewrote the superblock copies"));
            }
        }
        inner.repair_meta_twins()?;
        inner.recover_rmw()?;
        Ok(Self::assemble(inner))
    }

    fn inner(disk: Arc<Disk>, tl: TrackLayout, layout: Layout, sb: Superblock, ss: u64) -> Inner {
        let map = Mapping::three_phase(&layout);
        let tracks = layout.tracks.len();
        let record_sectors = record_sectors(&tl, ss);
        let twins = has_twins(&tl, ss, sb.meta_slot_bytes);
        Inner {
            disk,
            record_sectors,
            twins,
            meta_damage: Vec::new(),
            repaired: Vec::new(),
            tl,
            layout,
            map,
            sb,
            ss,
            valid: vec![false; tracks],
            meta_seq: 0,
            meta_dirty: false,
            applied: 0,
            rmw_seq: 0,
            dirty_bottoms: Vec::new(),
            stats: DmImrStats::default(),
            poisoned: None,
            warnings: Vec::new(),
        }
    }

    fn assemble(inner: Inner) -> DmImr {
        let raw = inner.disk.info();
        let info = DeviceInfo {
            model: format!("tegula dm-imr over {}", raw.model),
            kind: "dm-imr".into(),
            sector_size: raw.sector_size,
            capacity_sectors: inner.map.capacity(),
            zone_sectors: 0,
            zone_capacity_sectors: 0,
            zones: 0,
            conventional_zones: 0,
            max_open_zones: 0,
            max_active_zones: 0,
            unrestricted_reads: true,
            stores_data: raw.stores_data,
            wall_time: raw.wall_time,
        };
        DmImr {
            inner: Mutex::new(inner),
            info,
        }
    }
}

impl Inner {
    /// Where the copies of metadata slot `k` start (one copy on formats before twins).
    fn meta_copies(&self, k: usize) -> Vec<u64> {
        let r = self.layout.regions;
        let off = r.map[k];
        if self.twins {
            vec![off, off + self.record_sectors]
        } else {
            vec![off]
        }
    }

    /// Takes the newest intact metadata record of this format's epoch, from any copy of
    /// either slot. A damaged copy of the newest record is left to `repair_meta_twins`; a
    /// damaged copy of anything older is what a torn write leaves, and is passed over.
    fn load_meta(&mut self) -> Result<()> {
        let room = if self.twins {
            self.record_sectors
        } else {
            self.layout.regions.map_sectors
        };
        let mut best: Option<MetaRecord> = None;
        let mut copies = Vec::new();
        for k in 0..2 {
            for (c, off) in self.meta_copies(k).into_iter().enumerate() {
                let mut b = vec![0u8; (room * self.ss) as usize];
                self.safe_read(off, &mut b)?;
                let got = if b.iter().all(|&x| x == 0) {
                    Err(CopyProblem::Blank)
                } else {
                    MetaRecord::decode(&b).map_err(CopyProblem::Damaged)
                };
                if let Ok(m) = &got {
                    if m.epoch == self.sb.epoch {
                        if m.valid.len() != self.layout.tracks.len() {
                            return Err(Error::corrupt(
                                "metadata",
                                format!(
                                    "slot {k} has flags for {} tracks, the drive {}",
                                    m.valid.len(),
                                    self.layout.tracks.len()
                                ),
                            ));
                        }
                        if best.as_ref().is_none_or(|x| m.seq > x.seq) {
                            best = Some(m.clone());
                        }
                    }
                }
                copies.push((k, c, off, got));
            }
        }
        let m = best.ok_or_else(|| Error::corrupt("metadata", "no slot holds an intact record"))?;
        for (k, c, off, got) in copies {
            let newest_slot = (m.seq % 2) as usize == k;
            match got {
                Ok(x) if x.seq == m.seq && x.epoch == m.epoch => {}
                Err(e) if newest_slot && self.twins => self.meta_damage.push(format!(
                    "metadata slot {k} copy {} (safe sector {off}) is damaged ({e}); its twin \
                     holding record {} was used",
                    c + 1,
                    m.seq
                )),
                Ok(x) if newest_slot && self.twins && x.seq < m.seq && c == 0 => {
                    self.meta_damage.push(format!(
                        "metadata slot {k} copy 1 (safe sector {off}) holds record {}, its twin \
                         the newest, {}, which was used",
                        x.seq, m.seq
                    ))
                }
                Err(e @ CopyProblem::Damaged(_)) => self.warnings.push(format!(
                    "metadata slot {k} copy {} is damaged and was passed over (a write the \
                     power cut tore): {e}",
                    c + 1
                )),
                _ => {}
            }
        }
        self.meta_seq = m.seq;
        self.applied = m.applied_rmw;
        self.rmw_seq = m.applied_rmw;
        self.valid = m.valid;
        Ok(())
    }

    /// Rewrites both copies of the newest metadata record when one was found damaged, and
    /// reports it.
    fn repair_meta_twins(&mut self) -> Result<()> {
        if self.meta_damage.is_empty() {
            return Ok(());
        }
        let rec = MetaRecord {
            seq: self.meta_seq,
            epoch: self.sb.epoch,
            applied_rmw: self.applied,
            valid: self.valid.clone(),
        };
        self.write_meta_record(&rec)?;
        self.sync()?;
        for why in std::mem::take(&mut self.meta_damage) {
            self.note_repair(format!("{why}; rewrote both copies"));
        }
        Ok(())
    }

    /// Restores the tops of the newest staged read-modify-write if its restore may not have
    /// reached the media (its sequence number is above the metadata's `applied_rmw`).
    fn recover_rmw(&mut self) -> Result<()> {
        let slot = self.slot_sectors();
        let mut newest: Option<StagingRecord> = None;
        for k in 0..2u64 {
            let off = self.layout.regions.staging + k * slot;
            let mut head = vec![0u8; self.ss as usize];
            self.safe_read(off, &mut head)?;
            if head.iter().all(|&x| x == 0) {
                continue;
            }
            let Some(len) = StagingRecord::frame_len(&head) else {
                self.warnings.push(format!(
                    "staging slot {k} holds no readable record header (a torn backup write: its \
                     read-modify-write never began)"
                ));
                continue;
            };
            let sectors = (len as u64).div_ceil(self.ss);
            if sectors > slot {
                self.warnings.push(format!(
                    "staging slot {k}: a record of {len} bytes cannot fit the slot; passed over"
                ));
                continue;
            }
            let mut b = vec![0u8; (sectors * self.ss) as usize];
            self.safe_read(off, &mut b)?;
            match StagingRecord::decode(&b[..len], self.ss as usize) {
                Ok(r) if r.epoch == self.sb.epoch => {
                    self.rmw_seq = self.rmw_seq.max(r.seq);
                    if newest.as_ref().is_none_or(|x| r.seq > x.seq) {
                        newest = Some(r);
                    }
                }
                Ok(_) => {}
                Err(e) => self.warnings.push(format!(
                    "staging slot {k} is damaged and was passed over (a torn backup write: its \
                     read-modify-write never began): {e}"
                )),
            }
        }
        let Some(rec) = newest else {
            return Ok(());
        };
        if rec.seq <= self.applied {
            return Ok(());
        }
        let end = self.disk.info().capacity_sectors;
        for e in &rec.entries {
            let n = e.data.len() as u64 / self.ss;
            if e.lba.checked_add(n).is_none_or(|x| x > end) {
                return Err(Error::corrupt(
                    "staging record",
                    format!(
                        "extent at LBA {} of {n} sectors lies outside the drive",
                        e.lba
                    ),
                ));
            }
            self.disk.write(e.lba, &e.data)?;
        }
        self.sync()?;
        self.applied = rec.seq;
        self.meta_dirty = true;
        self.sync_all()?;
        self.stats.recovered_rmw += 1;
        Ok(())
    }
}
