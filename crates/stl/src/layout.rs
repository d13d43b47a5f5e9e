//! Physical layout of a drive-managed drive: the raw shingled media cut into bands, and those
//! bands assigned to the persistent cache, the staging area, the map copies, and data.

use crate::config::{CacheLocation, CacheMedia, DmConfig, StlKind};
use crate::error::{Result, StlError};
use tegula_device::media::Media;
use tegula_device::shingle::{BandLayout, Shingling};
use tegula_device::store::{MemStore, NullStore, Store};
use tegula_device::{profile, DiskConfig};

/// One physical band: `len` sectors from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// First physical LBA.
    pub start: u64,
    /// Sectors.
    pub len: u64,
}

impl Band {
    /// First LBA after the band.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Where everything lives on the media.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Every physical band, in LBA order.
    pub bands: Vec<Band>,
    /// Physical band of each logical band (the static map; the initial map when dynamic).
    pub data: Vec<usize>,
    /// Logical start LBA of each logical band; the last entry is the capacity.
    pub logical_starts: Vec<u64>,
    /// Persistent cache bands (empty with a flash cache).
    pub cache: Vec<usize>,
    /// Staging bands for crash-safe read-modify-write (empty when not needed).
    pub staging: Vec<usize>,
    /// Two map copy slots (journal layer), each a list of bands.
    pub map_slots: [Vec<usize>; 2],
    /// Spare bands per zone (fully associative layer).
    pub spares: Vec<Vec<usize>>,
    /// Logical bands of each zone (fully associative layer).
    pub zones: Vec<std::ops::Range<usize>>,
    /// Sector size in bytes.
    pub sector: u64,
    /// Head width in tracks.
    pub overlap: u64,
}

impl Layout {
    /// Host-visible capacity in sectors.
    pub fn capacity(&self) -> u64 {
        self.logical_starts.last().copied().unwrap_or(0)
    }

    /// Logical band holding `lba`.
    pub fn band_of(&self, lba: u64) -> usize {
        self.logical_starts
            .partition_point(|&s| s <= lba)
            .saturating_sub(1)
    }

    /// Logical range `[start, end)` of logical band `b`.
    pub fn logical_range(&self, b: usize) -> (u64, u64) {
        (self.logical_starts[b], self.logical_starts[b + 1])
    }

    /// Logical range `[start, end)` of the band holding logical `lba`.
    pub fn band_range(&self, lba: u64) -> (u64, u64) {
        self.logical_range(self.band_of(lba))
    }

    /// Sectors of logical band `b`.
    pub fn logical_len(&self, b: usize) -> u64 {
        self.logical_starts[b + 1] - self.logical_starts[b]
    }

    /// Native physical LBA of logical `lba` under the static map.
    pub fn native(&self, lba: u64) -> u64 {
        let b = self.band_of(lba);
        self.bands[self.data[b]].start + (lba - self.logical_starts[b])
    }

    /// Largest logical band in sectors.
    pub fn max_band(&self) -> u64 {
        (0..self.data.len())
            .map(|b| self.logical_len(b))
            .max()
            .unwrap_or(0)
    }
}

/// Shortest surface run (in tracks) of the media under a drive-managed drive.
const MIN_RUN_TRACKS: u64 = 64;

/// The media configuration a drive-managed config resolves to.
pub fn media_config(cfg: &DmConfig) -> Result<DiskConfig> {
    let mut dc = profile(&cfg.media).map_err(|e| StlError::Config(e.to_string()))?;
    if dc.shingle.overlap_tracks < 2 {
        return Err(StlError::Config(format!(
            "media profile {:?} is not shingled (overlap_tracks < 2)",
            cfg.media
        )));
    }
    dc.store_data = cfg.store_data;
    dc.seed = cfg.seed;
    dc.cache.write_cache = false;
    if cfg.band_tracks > 0 {
        dc.shingle.band_tracks = Some(cfg.band_tracks);
    }
    Ok(dc)
}

fn band_layout(cfg: &DmConfig, dc: &DiskConfig) -> BandLayout {
    let ss = dc.sector_size as u64;
    if cfg.band_size > 0 {
        BandLayout::Lba {
            unshingled_sectors: 0,
            band_sectors: (cfg.band_size / ss).max(1),
        }
    } else {
        BandLayout::Tracks {
            unshingled_sectors: 0,
            band_tracks: dc.shingle.band_tracks.unwrap_or(16),
        }
    }
}

/// The raw media of a drive before it gets its sector store: mechanics, shingling, size and
/// the layout cut from them.
pub(crate) struct Plan {
    mech: tegula_device::mechanics::Mechanics,
    shingle: Shingling,
    /// Physical sectors of the media.
    pub total: u64,
    /// The layout.
    pub layout: Layout,
    seed: u64,
}

impl Plan {
    /// The media over `store`.
    pub fn media(self, store: Box<dyn Store>) -> Result<(Media, Layout)> {
        let media = Media::new(self.mech, store, self.total, self.shingle, None, self.seed)?;
        Ok((media, self.layout))
    }
}

/// Builds the raw media (in memory, or metadata-only) and the layout for `cfg`.
pub fn build(cfg: &DmConfig) -> Result<(Media, Layout)> {
    let store: Box<dyn Store> = if cfg.store_data {
        Box::new(MemStore::new())
    } else {
        Box::new(NullStore)
    };
    plan(cfg)?.media(store)
}

/// Cuts the media for `cfg` into bands and assigns them.
pub(crate) fn plan(cfg: &DmConfig) -> Result<Plan> {
    cfg.validate()?;
    let mut dc = media_config(cfg)?;
    let ss = dc.sector_size as u64;
    if cfg.capacity < ss {
        return Err(StlError::Config("capacity is below one sector".into()));
    }
    let track = dc.media.od_track_bytes;
    let band_guess = if cfg.band_size > 0 {
        cfg.band_size
    } else {
        track * dc.shingle.band_tracks.unwrap_or(16)
    };
    let map_bytes = cfg.map_entries.saturating_mul(cfg.map_entry_bytes);
    let mut extra = band_guess
        .saturating_mul(8)
        .saturating_add(if cfg.cache_media == CacheMedia::Disk {
            cfg.cache_size
        } else {
            0
        })
        .saturating_add(if cfg.stl == StlKind::Journal {
            map_bytes.saturating_mul(2).saturating_add(2 * band_guess)
        } else {
            0
        })
        .saturating_add(2 * band_guess)
        .saturating_add(cfg.capacity / 64);
    let zone = dc.zones.zone_size.max(1);
    for _ in 0..6 {
        let want = cfg
            .capacity
            .checked_add(extra)
            .and_then(|w| w.div_ceil(zone).checked_mul(zone))
            .ok_or_else(|| StlError::Layout("capacity plus cache overflows".into()))?;
        dc.capacity = want;
        let mut mech = dc
            .mechanics()
            .map_err(|e| StlError::Layout(format!("media for {} bytes: {e}", want)))?;
        if mech.geometry().stroke() < MIN_RUN_TRACKS {
            // A drive scaled down to a few cylinders would have surface runs shorter than a
            // band (no shingling at all): keep runs long enough for bands to be shingled.
            dc.media.strokes_per_surface = None;
            dc.media.stroke_tracks = Some(MIN_RUN_TRACKS);
            mech = dc
                .mechanics()
                .map_err(|e| StlError::Layout(format!("media for {} bytes: {e}", want)))?;
        }
        let total = mech.geometry().total_sectors();
        let shingle = Shingling::new(band_layout(cfg, &dc), dc.shingle.overlap_tracks);
        let bands = cut_bands(&shingle, mech.geometry(), total);
        if let Some(layout) = assign(cfg, bands, ss, dc.shingle.overlap_tracks) {
            return Ok(Plan {
                mech,
                shingle,
                total,
                layout,
                seed: cfg.seed,
            });
        }
        extra = extra.saturating_mul(2).saturating_add(band_guess * 4);
    }
    Err(StlError::Layout(format!(
        "media profile {:?} cannot hold {} bytes plus the cache and metadata regions",
        cfg.media, cfg.capacity
    )))
}

fn cut_bands(
    shingle: &Shingling,
    geo: &tegula_device::geometry::Geometry,
    total: u64,
) -> Vec<Band> {
    let mut out = Vec::new();
    let mut lba = 0;
    while lba < total {
        let end = shingle
            .band_end(geo, lba)
            .unwrap_or(total)
            .clamp(lba + 1, total);
        out.push(Band {
            start: lba,
            len: end - lba,
        });
        lba = end;
    }
    out
}

/// Takes bands from `free` (sorted indices) totalling at least `sectors`, preferring positions
/// near `at` (a fraction of the band list: 0 = OD, 1 = ID).
fn take_near(free: &mut Vec<usize>, bands: &[Band], sectors: u64, at: f64) -> Option<Vec<usize>> {
    if free.is_empty() {
        return None;
    }
    let n = free.len();
    let center = ((n - 1) as f64 * at).round() as usize;
    // Grow a contiguous window of `free` around `center`.
    let (mut lo, mut hi) = (center, center + 1);
    let mut sum = bands[free[center]].len;
    while sum < sectors {
        let can_lo = lo > 0;
        let can_hi = hi < n;
        if !can_lo && !can_hi {
            return None;
        }
        let go_hi = if at < 0.5 { can_hi } else { !can_lo };
        if go_hi {
            sum += bands[free[hi]].len;
            hi += 1;
        } else {
            lo -= 1;
            sum += bands[free[lo]].len;
        }
    }
    Some(free.drain(lo..hi).collect())
}

fn assign(cfg: &DmConfig, bands: Vec<Band>, ss: u64, overlap: u64) -> Option<Layout> {
    let cap = cfg.capacity / ss;
    let mut free: Vec<usize> = (0..bands.len()).collect();
    let max_band = bands.iter().map(|b| b.len).max().unwrap_or(0);
    let mut cache = Vec::new();
    let mut staging = Vec::new();
    let mut map_slots = [Vec::new(), Vec::new()];
    let disk_cache = cfg.cache_media == CacheMedia::Disk;
    let cache_sectors = cfg.cache_size.div_ceil(ss);
    let at = match cfg.cache_location {
        CacheLocation::Od => 0.0,
        CacheLocation::Id => 1.0,
        CacheLocation::Md | CacheLocation::Distributed => 0.5,
    };
    if cfg.stl != StlKind::FullyAssociative && disk_cache {
        if cfg.cache_location == CacheLocation::Distributed {
            // Every k-th band, so the cache is spread over the whole disk.
            let want = (cache_sectors.div_ceil(max_band.max(1)) as usize).max(1);
            let step = (free.len() / want.max(1)).max(2);
            let mut picked: Vec<usize> = free.iter().copied().step_by(step).take(want).collect();
            let mut sum: u64 = picked.iter().map(|&b| bands[b].len).sum();
            free.retain(|b| !picked.contains(b));
            while sum < cache_sectors {
                let b = free.pop()?;
                sum += bands[b].len;
                picked.push(b);
            }
            picked.sort_unstable();
            cache = picked;
        } else {
            cache = take_near(&mut free, &bands, cache_sectors, at)?;
        }
        // Staging next to the cache.
        let at_staging = match cfg.cache_location {
            CacheLocation::Id => 1.0,
            CacheLocation::Od => 0.0,
            _ => 0.5,
        };
        staging = take_near(&mut free, &bands, max_band, at_staging)?;
    }
    if cfg.stl == StlKind::Journal {
        let map_sectors = (cfg.map_entries * cfg.map_entry_bytes).div_ceil(ss).max(1);
        map_slots[0] = take_near(&mut free, &bands, map_sectors, 0.5)?;
        map_slots[1] = take_near(&mut free, &bands, map_sectors, 0.5)?;
    }
    let mut data = Vec::new();
    let mut logical_starts = vec![0u64];
    let mut spares = Vec::new();
    let mut zones = Vec::new();
    if cfg.stl == StlKind::FullyAssociative {
        // Zones of consecutive bands; each zone's spare bands sit at its end.
        let band = max_band.max(1);
        let logical_bands = cap.div_ceil(band) as usize;
        let zone_bands = ((cfg.zone_size / ss / band).max(1) as usize).min(logical_bands);
        let nzones = logical_bands.div_ceil(zone_bands);
        let spare_per_zone = ((cache_sectors.div_ceil(band) as usize).div_ceil(nzones)).max(2);
        // Only full-size bands can take any logical band.
        let mut it = free.into_iter().filter(|&b| bands[b].len == band);
        let mut left = cap;
        for z in 0..nzones {
            let nb = zone_bands.min(logical_bands - z * zone_bands);
            let first = data.len();
            for _ in 0..nb {
                let b = it.next()?;
                data.push(b);
                let take = left.min(bands[b].len);
                left -= take;
                logical_starts.push(logical_starts[logical_starts.len() - 1] + take);
            }
            zones.push(first..data.len());
            let mut sp = Vec::new();
            for _ in 0..spare_per_zone {
                sp.push(it.next()?);
            }
            spares.push(sp);
        }
        if left > 0 {
            return None;
        }
    } else {
        let mut left = cap;
        for b in free {
            if left == 0 {
                break;
            }
            let take = left.min(bands[b].len);
            left -= take;
            data.push(b);
            logical_starts.push(logical_starts[logical_starts.len() - 1] + take);
        }
        if left > 0 {
            return None;
        }
    }
    Some(Layout {
        bands,
        data,
        logical_starts,
        cache,
        staging,
        map_slots,
        spares,
        zones,
        sector: ss,
        overlap,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_disjoint_and_cover_the_capacity() {
        for stl in ["journal", "set-associative", "fully-associative"] {
            let mapping = if stl == "fully-associative" {
                "dynamic"
            } else {
                "static"
            };
            let text = format!(
                "kind=\"dm-smr\"\ncapacity=\"512MiB\"\nstl=\"{stl}\"\nmapping=\"{mapping}\"\nband_size=\"8MiB\"\ncache_size=\"32MiB\"\nmap_entries=1000\n"
            );
            let cfg = DmConfig::from_toml(&text).expect("config");
            let (_, l) = build(&cfg).expect("layout");
            assert_eq!(l.capacity(), 512 << 20 >> 12);
            let mut used = std::collections::HashSet::new();
            let all = l
                .data
                .iter()
                .chain(&l.cache)
                .chain(&l.staging)
                .chain(l.map_slots.iter().flatten())
                .chain(l.spares.iter().flatten());
            for &b in all {
                assert!(used.insert(b), "{stl}: band {b} assigned twice");
            }
        }
    }

    #[test]
    fn track_bands_shrink_toward_the_inner_diameter() {
        let cfg = DmConfig::from_toml("kind=\"dm-smr\"\ncapacity=\"8GiB\"\ncache_size=\"64MiB\"\n")
            .expect("config");
        let (_, l) = build(&cfg).expect("layout");
        let first = l.bands[0].len;
        let last = l.bands[l.bands.len() - 1].len;
        assert!(first > last, "{first} vs {last}");
        // Cache at the OD: the lowest physical bands.
        assert_eq!(l.cache[0], 0);
    }
}
