//! Formatting a drive and opening it again: the superblock, the newest valid map copy, the
//! replay of staging records newer than the map's `applied_rmw` (finishing the restore of an
//! interrupted read-modify-write), and the track states the map implies. Tracks no durable
//! map records are free: data persisted but never synced is forgotten, as on any drive.

use crate::error::{Error, Result};
use crate::layout::{Layout, Role};
use crate::map::{Map, Place};
use crate::options::{FormatOptions, Options};
use crate::staging::StagingRecord;
use crate::store::{File, Inner, SlotOwner, Store};
use crate::superblock::Superblock;

use parking_lot::Mutex;
use std::sync::Arc;
use tegula_codec::FormatError;
use tegula_device::{BlockDevice, TrackKind, TrackLayout};

/// LBA of the superblock: the first sector of the drive's first top track (safe space 0).
fn superblock_lba(tl: &TrackLayout) -> Result<u64> {
    (0..tl.track_count())
        .filter_map(|i| tl.track(i))
        .find(|t| t.kind == TrackKind::Top)
        .map(|t| t.lba)
        .ok_or_else(|| Error::Invalid("the drive has no top track".into()))
}

fn tracks_end(tl: &TrackLayout) -> u64 {
    tl.track_count()
        .checked_sub(1)
        .and_then(|i| tl.track(i))
        .map_or(0, |t| t.end_lba())
}

pub(crate) fn read_superblock(
    dev: &dyn BlockDevice,
    tl: &TrackLayout,
) -> Result<Option<Superblock>> {
    let ss = dev.info().sector_size as usize;
    let mut b = vec![0u8; ss];
    dev.read(superblock_lba(tl)?, &mut b)?;
    Superblock::decode(&b).map_err(|source| Error::Malformed {
        what: "superblock",
        source,
    })
}

/// Formats `dev` and opens it.
pub fn format(
    dev: Arc<dyn BlockDevice>,
    tl: &TrackLayout,
    fmt: FormatOptions,
    opts: Options,
) -> Result<Store> {
    let ss = dev.info().sector_size as u64;
    let layout = Layout::new(tl, ss, &fmt)?;
    let epoch = match read_superblock(&*dev, tl) {
        Ok(Some(old)) => old.epoch + 1,
        _ => 1,
    };
    let sb = Superblock {
        sector_size: ss as u32,
        tracks: tl.track_count(),
        tracks_end: tracks_end(tl),
        epoch,
        format: fmt,
        options: Some(opts.clone()),
    };
    let mut inner = Inner::new(dev, layout, fmt, opts, epoch);
    let mut b = sb.encode();
    b.resize((b.len() as u64).div_ceil(ss) as usize * ss as usize, 0);
    inner.safe_write(0, &b)?;
    inner.write_map()?;
    Ok(Store {
        inner: Mutex::new(inner),
    })
}

/// Why one copy of the map could not be used.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    /// Reading it failed.
    #[error(transparent)]
    Read(#[from] Error),
    /// It does not decode.
    #[error(transparent)]
    Format(#[from] FormatError),
}

fn read_map(inner: &mut Inner, slot: usize) -> std::result::Result<Map, CopyError> {
    let ss = inner.layout.ss;
    let r = inner.layout.regions;
    let mut first = vec![0u8; ss as usize];
    inner.safe_read(r.map[slot], &mut first)?;
    let len = Map::frame_len(&first).ok_or_else(|| FormatError::invalid("no map"))?;
    let sectors = (len as u64).div_ceil(ss);
    if sectors > r.map_sectors {
        return Err(FormatError::invalid(format!("length {len} exceeds the slot")).into());
    }
    let mut b = vec![0u8; (sectors * ss) as usize];
    inner.safe_read(r.map[slot], &mut b)?;
    Ok(Map::decode(&b)?)
}

/// Opens a formatted drive with `opts`, or with the options its superblock recorded.
pub fn open(dev: Arc<dyn BlockDevice>, tl: &TrackLayout, opts: Option<Options>) -> Result<Store> {
    let ss = dev.info().sector_size as u64;
    let sb = read_superblock(&*dev, tl)?.ok_or(Error::NotFormatted)?;
    if sb.sector_size as u64 != ss
        || sb.tracks != tl.track_count()
        || sb.tracks_end != tracks_end(tl)
    {
        return Err(Error::corrupt(
            "superblock",
            format!(
                "formatted for {} tracks of {}-byte sectors ending at LBA {}; the drive has {} \
                 tracks of {ss} ending at {}",
                sb.tracks,
                sb.sector_size,
                sb.tracks_end,
                tl.track_count(),
                tracks_end(tl)
            ),
        ));
    }
    let layout = Layout::new(tl, ss, &sb.format)?;
    let opts = opts.or(sb.options).unwrap_or_default();
    let mut inner = Inner::new(dev, layout, sb.format, opts, sb.epoch);
    let mut best: Option<Map> = None;
    let mut problems = Vec::new();
    for slot in 0..2 {
        match read_map(&mut inner, slot) {
            Ok(m) if m.epoch == sb.epoch => {
                if best.as_ref().is_none_or(|b| m.seq > b.seq) {
                    best = Some(m);
                }
            }
            Ok(m) => problems.push(format!(
                "slot {slot}: epoch {} of an earlier format",
                m.epoch
            )),
            Err(p) => problems.push(format!("slot {slot}: {p}")),
        }
    }
    let map = best
        .ok_or_else(|| Error::corrupt("map", format!("no valid copy ({})", problems.join("; "))))?;
    load(&mut inner, &map)?;
    replay(&mut inner)?;
    Ok(Store {
        inner: Mutex::new(inner),
    })
}

/// Builds files and track states from `map`.
fn load(inner: &mut Inner, map: &Map) -> Result<()> {
    let ss = inner.layout.ss;
    inner.map_seq = map.seq;
    inner.next_file = map.next_file;
    inner.applied_rmw = map.applied_rmw;
    inner.rmw_seq = map.applied_rmw;
    inner.base = map.totals.clone().unwrap_or_default();
    for e in &map.files {
        let bad = |p: String| Error::corrupt("map", format!("file {}: {p}", e.id));
        if inner.files.contains_key(&e.id) {
            return Err(bad("listed twice".into()));
        }
        let mut f = File {
            id: e.id,
            name: e.name,
            place: e.place,
            len: e.len,
            buf_start: e.len / ss * ss,
            buf: Vec::new(),
            durable: e.len,
            sealed: e.sealed,
            tracks: e.tracks.clone(),
        };
        match e.place {
            Place::Safe { slot } => {
                let r = inner.layout.regions;
                if inner.slots.get(slot as usize) != Some(&SlotOwner::Free) {
                    return Err(bad(format!("safe slot {slot} missing or taken twice")));
                }
                inner.slots[slot as usize] = SlotOwner::File(e.id);
                if map.records_safe_lengths() {
                    // Its length as of the last sync; appends go on from there.
                    if e.len > r.file_sectors * ss || !e.len.is_multiple_of(ss) {
                        return Err(bad(format!(
                            "safe file length {} does not fit its slot of {} sectors",
                            e.len, r.file_sectors
                        )));
                    }
                    f.buf_start = e.len;
                } else {
                    // A version-1 map records no safe file's length: the whole slot, sealed.
                    f.len = r.file_sectors * ss;
                    f.buf_start = f.len;
                    f.durable = f.len;
                    f.sealed = true;
                }
            }
            Place::Data { .. } => {
                let mut left = e.len.div_ceil(ss);
                for &t in &e.tracks {
                    if inner.layout.role.get(t as usize) != Some(&Role::Data) {
                        return Err(bad(format!("track {t} is not a data track")));
                    }
                    if !inner.state.is_free(t) {
                        return Err(bad(format!("track {t} belongs to two files")));
                    }
                    inner.state.take(&inner.layout, t, e.id);
                    let n = left.min(inner.layout.track(t).sectors as u64);
                    inner.state.written[t as usize] = n as u32;
                    left -= n;
                }
                if left > 0 {
                    return Err(bad(format!("{} bytes do not fit its tracks", e.len)));
                }
            }
        }
        inner.files.insert(e.id, f);
    }
    // An unsealed data file ending inside a sector keeps that sector buffered for appends.
    let partial: Vec<(u64, u64, usize)> = inner
        .files
        .values()
        .filter(|f| matches!(f.place, Place::Data { .. }) && f.len > f.buf_start)
        .map(|f| (f.id, f.buf_start, (f.len - f.buf_start) as usize))
        .collect();
    for (id, start, n) in partial {
        let tracks = inner.file(id)?.tracks.clone();
        let mut b = vec![0u8; n];
        inner.read_tracks(&tracks, start, &mut b)?;
        inner.file_mut(id)?.buf = b;
    }
    inner.map_dirty = false;
    Ok(())
}

/// Restores the backups of staging records newer than the map's `applied_rmw`.
fn replay(inner: &mut Inner) -> Result<()> {
    let ss = inner.layout.ss;
    let r = inner.layout.regions;
    let mut pos = 0u64;
    let mut newest = inner.applied_rmw;
    let mut replayed = 0;
    while pos < r.staging_sectors {
        let mut first = vec![0u8; ss as usize];
        inner.safe_read(r.staging + pos, &mut first)?;
        let Some(len) = StagingRecord::frame_len(&first) else {
            break;
        };
        let sectors = (len as u64).div_ceil(ss);
        if pos + sectors > r.staging_sectors {
            break;
        }
        let mut b = vec![0u8; (sectors * ss) as usize];
        inner.safe_read(r.staging + pos, &mut b)?;
        let Ok(rec) = StagingRecord::decode(&b, ss as usize) else {
            break;
        };
        if rec.epoch != inner.epoch {
            break;
        }
        if rec.seq > inner.applied_rmw {
            for e in &rec.entries {
                inner.dev_write(e.lba, &e.data)?;
            }
            replayed += 1;
        }
        newest = newest.max(rec.seq);
        pos += sectors;
    }
    inner.rmw_seq = newest;
    inner.stats.recovered_rmw = replayed;
    if replayed > 0 {
        inner.flush()?;
        inner.applied_rmw = newest;
        inner.write_map()?;
    }
    Ok(())
}
