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
use tegula_device::{BlockDevice, DeviceInfo, Disk, DriveKind, TrackLayout};
use tegula_kvimr::layout::Layout;
use tegula_kvimr::staging::StagingRecord;

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

/// Reads the superblock from the first sector of the safe region.
fn read_superblock(disk: &Disk, tl: &TrackLayout, ss: u64) -> Result<Option<Superblock>> {
    let Some(first_top) = (0..tl.track_count())
        .filter_map(|i| tl.track(i))
        .find(|t| t.kind == tegula_device::TrackKind::Top)
    else {
        return Ok(None);
    };
    let mut b = vec![0u8; ss as usize];
    disk.read(first_top.lba, &mut b)?;
    Superblock::decode(&b).map_err(|p| Error::corrupt("superblock", p))
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
            Ok(Some(_)) | Err(Error::Corruption { .. }) => true,
            Ok(None) | Err(_) => false,
        }
    }

    /// Formats the raw interlaced `disk` as a drive-managed drive: writes the superblock and
    /// an empty metadata record (every track without data), synced.
    pub fn format(disk: Arc<Disk>, opts: FormatOptions) -> Result<DmImr> {
        let (tl, ss) = raw_facts(&disk)?;
        let epoch = match read_superblock(&disk, &tl, ss) {
            Ok(Some(sb)) => sb.epoch + 1,
            _ => 1,
        };
        let meta_slot_bytes =
            (MetaRecord::encoded_len(tl.track_count() as usize) as u64).div_ceil(ss) * ss;
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
        let mut b = sb.encode();
        b.resize(ss as usize, 0);
        inner.safe_write(0, &b)?;
        inner.meta_dirty = true;
        inner.sync_all()?;
        Ok(Self::assemble(inner))
    }

    /// Opens the drive-managed drive on `disk`: reads the superblock and the newest intact
    /// metadata record, and restores the tops of a read-modify-write a power cut interrupted.
    pub fn open(disk: Arc<Disk>) -> Result<DmImr> {
        let (tl, ss) = raw_facts(&disk)?;
        let sb = read_superblock(&disk, &tl, ss)?.ok_or(Error::NotFormatted)?;
        Self::open_with(disk, tl, ss, sb)
    }

    /// Opens `disk` if it is formatted drive-managed ([`DmImr::is_formatted`]), and gives it
    /// back otherwise: one read of the superblock where `is_formatted` then `open` take two.
    /// A damaged superblock is an error, as in `open`.
    pub fn probe(disk: Arc<Disk>) -> Result<Probe> {
        let Ok((tl, ss)) = raw_facts(&disk) else {
            return Ok(Probe::Raw(disk));
        };
        match read_superblock(&disk, &tl, ss) {
            Ok(Some(sb)) => Self::open_with(disk, tl, ss, sb).map(|d| Probe::Opened(Box::new(d))),
            Err(e @ Error::Corruption { .. }) => Err(e),
            Ok(None) | Err(_) => Ok(Probe::Raw(disk)),
        }
    }

    /// Opens the drive whose superblock `sb` was read from `disk`.
    fn open_with(disk: Arc<Disk>, tl: TrackLayout, ss: u64, sb: Superblock) -> Result<DmImr> {
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
        inner.recover_rmw()?;
        Ok(Self::assemble(inner))
    }

    fn inner(disk: Arc<Disk>, tl: TrackLayout, layout: Layout, sb: Superblock, ss: u64) -> Inner {
        let map = Mapping::three_phase(&layout);
        let tracks = layout.tracks.len();
        Inner {
            disk,
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
    /// Takes the newer intact metadata record of this format's epoch.
    fn load_meta(&mut self) -> Result<()> {
        let r = self.layout.regions;
        let mut best: Option<MetaRecord> = None;
        for (k, &off) in r.map.iter().enumerate() {
            let mut b = vec![0u8; (r.map_sectors * self.ss) as usize];
            self.safe_read(off, &mut b)?;
            if b.iter().all(|&x| x == 0) {
                continue;
            }
            match MetaRecord::decode(&b) {
                Ok(m) if m.epoch == self.sb.epoch => {
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
                        best = Some(m);
                    }
                }
                Ok(_) => {}
                Err(e) => self.warnings.push(format!(
                    "metadata slot {k} is damaged and was passed over (a write the power cut \
                     tore): {e}"
                )),
            }
        }
        let m =
            best.ok_or_else(|| Error::corrupt("metadata", "neither slot holds an intact record"))?;
        self.meta_seq = m.seq;
        self.applied = m.applied_rmw;
        self.rmw_seq = m.applied_rmw;
        self.valid = m.valid;
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
