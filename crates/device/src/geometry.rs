//! Disk geometry: zoned bit recording and the layout from LBA to (cylinder, head, sector).
//!
//! The surface is divided into *sections* of `stroke` cylinders. Inside a section the LBAs
//! fill one surface after the other (a surface run), in head order 0..H on even sections and
//! H..0 on odd ones (the ascent and descent Skylight observed). With `serpentine` every other
//! surface run goes inward-to-outward so consecutive runs end and start at the same cylinder
//! (a conventional drive's serpentine); without it every run goes outward-to-inward and the
//! head jumps back at each surface change (the long per-surface strokes of SMR drives).
//!
//! Each track's sector 0 is placed at an angle (its skew) chosen so that a sequential transfer
//! crossing to the next track arrives just after the switch completes and loses no revolution.

use crate::error::{DeviceError, Result};
use crate::units::Nanos;

/// One revolution in angle units. The platter advances `rpm` angle units per nanosecond, so the
/// angle at virtual time `t` is `t·rpm mod ANGLE_FULL`, exact in integers.
pub const ANGLE_FULL: u64 = 60_000_000_000;

/// What the layout needs to know to build a geometry.
#[derive(Debug, Clone, PartialEq)]
pub struct GeometryParams {
    /// Logical sector size in bytes (512 or 4096).
    pub sector_size: u32,
    /// Spindle speed.
    pub rpm: u32,
    /// Number of surfaces (one head each).
    pub heads: u32,
    /// Cylinders (tracks per surface).
    pub cylinders: u64,
    /// Bytes on an outermost track.
    pub od_track_bytes: u64,
    /// Ratio of outer to inner track capacity (≈ 2.1).
    pub od_id_ratio: f64,
    /// Number of recording zones (constant sectors per track within each).
    pub recording_zones: u32,
    /// Cylinders per section (surface run length).
    pub stroke: u64,
    /// Alternate the direction of consecutive surface runs.
    pub serpentine: bool,
    /// Interlaced recording: even cylinders are wide bottom tracks, odd cylinders narrow top
    /// tracks holding this many times fewer sectors (bottom / top, ≥ 1). `None`: every track
    /// of a recording zone holds the same number of sectors.
    pub interlace: Option<f64>,
}

/// Time the mechanics need for the three kinds of track transitions of a sequential transfer.
#[derive(Debug, Clone, Copy)]
pub struct SkewTimes {
    /// Next track on the same surface (a one-cylinder seek).
    pub track: Nanos,
    /// Next surface run inside a section (a head switch, plus the jump back without serpentine).
    pub surface: Nanos,
    /// First track of the next section.
    pub section: Nanos,
}

#[derive(Debug, Clone)]
struct RecZone {
    first_cyl: u64,
    /// Sectors per track of the even (bottom) cylinders.
    spt: u64,
    /// Sectors per track of the odd (top) cylinders; `spt` unless interlaced.
    spt_odd: u64,
    /// Sectors per surface before `first_cyl`.
    cum: u64,
}

impl RecZone {
    fn spt_of(&self, cyl: u64) -> u64 {
        if cyl.is_multiple_of(2) {
            self.spt
        } else {
            self.spt_odd
        }
    }

    /// Sectors per surface in cylinders `[first_cyl, c)`.
    fn sectors_before(&self, c: u64) -> u64 {
        let evens = c.div_ceil(2) - self.first_cyl.div_ceil(2);
        let odds = (c - self.first_cyl) - evens;
        evens * self.spt + odds * self.spt_odd
    }
}

#[derive(Debug, Clone)]
struct Section {
    first_lba: u64,
    first_cyl: u64,
    cyls: u64,
    per_surface: u64,
}

/// Physical location of one sector, with what a transfer needs about its track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Cylinder (0 = outer diameter).
    pub cyl: u64,
    /// Head (surface).
    pub head: u32,
    /// Sector index on its track.
    pub sector: u64,
    /// Sectors on this track.
    pub spt: u64,
    /// First LBA of this track.
    pub track_lba: u64,
    /// Ordinal of the track in LBA order.
    pub track: u64,
    /// Identifies the surface run (section and surface) the track is in; tracks of one run are
    /// physically adjacent in LBA order.
    pub run: u64,
    /// Index of the track within its run.
    pub run_index: u64,
    /// Tracks in this run.
    pub run_len: u64,
}

/// Where one track lies: its number, first LBA, sectors, cylinder and head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrackPlace {
    /// Track number in LBA order.
    pub track: u64,
    /// First LBA of the track.
    pub lba: u64,
    /// Sectors on the track.
    pub spt: u64,
    /// Cylinder (0 = outer diameter).
    pub cyl: u64,
    /// Head (surface).
    pub head: u32,
}

/// A built geometry.
#[derive(Debug, Clone)]
pub struct Geometry {
    params: GeometryParams,
    zones: Vec<RecZone>,
    sections: Vec<Section>,
    total_sectors: u64,
    sigma_track: u64,
    sigma_surface: u64,
    sigma_section_total: u64,
}

impl Geometry {
    /// Builds the layout and the track skews.
    pub fn new(params: GeometryParams, skew: SkewTimes) -> Result<Self> {
        let p = &params;
        if p.sector_size != 512 && p.sector_size != 4096 {
            return Err(DeviceError::Config(format!(
                "sector size must be 512 or 4096, got {}",
                p.sector_size
            )));
        }
        if p.rpm == 0 || p.heads == 0 || p.cylinders == 0 || p.stroke == 0 {
            return Err(DeviceError::Config(
                "rpm, heads, cylinders and stroke must be positive".into(),
            ));
        }
        if !(p.od_id_ratio >= 1.0 && p.od_id_ratio.is_finite()) {
            return Err(DeviceError::Config(format!(
                "od_id_ratio must be ≥ 1, got {}",
                p.od_id_ratio
            )));
        }
        if let Some(r) = p.interlace {
            if !(r.is_finite() && (1.0..=4.0).contains(&r)) {
                return Err(DeviceError::Config(format!(
                    "interlace bottom/top ratio must be within 1..4, got {r}"
                )));
            }
        }
        let nz = (p.recording_zones.max(1) as u64).min(p.cylinders);
        let mut zones = Vec::with_capacity(nz as usize);
        let mut cum = 0u64;
        for z in 0..nz {
            let first_cyl = z * p.cylinders / nz;
            let next = (z + 1) * p.cylinders / nz;
            let frac = if nz == 1 {
                0.0
            } else {
                z as f64 / (nz - 1) as f64
            };
            let bytes = p.od_track_bytes as f64 * (1.0 - (1.0 - 1.0 / p.od_id_ratio) * frac);
            let spt = (bytes / p.sector_size as f64).floor() as u64;
            if spt == 0 {
                return Err(DeviceError::Config(format!(
                    "track of {bytes:.0} bytes holds no {}-byte sector",
                    p.sector_size
                )));
            }
            let spt_odd = match p.interlace {
                Some(r) => ((spt as f64 / r).round() as u64).max(1),
                None => spt,
            };
            let z = RecZone {
                first_cyl,
                spt,
                spt_odd,
                cum,
            };
            cum += z.sectors_before(next);
            zones.push(z);
        }
        let mut g = Geometry {
            params,
            zones,
            sections: Vec::new(),
            total_sectors: 0,
            sigma_track: 0,
            sigma_surface: 0,
            sigma_section_total: 0,
        };
        let heads = g.params.heads as u64;
        let stroke = g.params.stroke.min(g.params.cylinders);
        g.params.stroke = stroke;
        let mut lba = 0u64;
        let mut c0 = 0u64;
        while c0 < g.params.cylinders {
            let cyls = stroke.min(g.params.cylinders - c0);
            let per_surface = g.cum(c0 + cyls) - g.cum(c0);
            g.sections.push(Section {
                first_lba: lba,
                first_cyl: c0,
                cyls,
                per_surface,
            });
            lba += per_surface * heads;
            c0 += cyls;
        }
        g.total_sectors = lba;
        let rpm = g.params.rpm as u64;
        let angle = |t: Nanos| -> u64 { ((t as u128 * rpm as u128) % ANGLE_FULL as u128) as u64 };
        g.sigma_track = angle(skew.track);
        g.sigma_surface = angle(skew.surface);
        let sigma_section = angle(skew.section) as u128;
        let total = heads as u128 * (stroke as u128 - 1) * g.sigma_track as u128
            + (heads as u128 - 1) * g.sigma_surface as u128
            + sigma_section;
        g.sigma_section_total = (total % ANGLE_FULL as u128) as u64;
        Ok(g)
    }

    /// The parameters this geometry was built from.
    pub fn params(&self) -> &GeometryParams {
        &self.params
    }

    /// Sectors the media holds.
    pub fn total_sectors(&self) -> u64 {
        self.total_sectors
    }

    /// Sector size in bytes.
    pub fn sector_size(&self) -> u32 {
        self.params.sector_size
    }

    /// Spindle speed.
    pub fn rpm(&self) -> u32 {
        self.params.rpm
    }

    /// One revolution in nanoseconds (rounded).
    pub fn revolution_ns(&self) -> Nanos {
        60_000_000_000 / self.params.rpm as u64
    }

    /// Sectors per track at a cylinder.
    pub fn spt_at(&self, cyl: u64) -> u64 {
        self.zones[self.zone_of_cyl(cyl)].spt_of(cyl)
    }

    /// Whether the tracks are interlaced (even cylinders bottom, odd cylinders top).
    pub fn interlaced(&self) -> bool {
        self.params.interlace.is_some()
    }

    /// Cylinders per section (the length of a surface run).
    pub fn stroke(&self) -> u64 {
        self.params.stroke
    }

    /// Recording zones as (first cylinder, sectors per track of its even cylinders).
    pub fn recording_zones(&self) -> Vec<(u64, u64)> {
        self.zones.iter().map(|z| (z.first_cyl, z.spt)).collect()
    }

    fn zone_of_cyl(&self, cyl: u64) -> usize {
        self.zones
            .partition_point(|z| z.first_cyl <= cyl)
            .saturating_sub(1)
    }

    /// Sectors per surface before cylinder `c`.
    fn cum(&self, c: u64) -> u64 {
        let z = &self.zones[self.zone_of_cyl(c)];
        z.cum + z.sectors_before(c)
    }

    /// Cylinder holding per-surface sector offset `v`.
    fn cyl_at(&self, v: u64) -> u64 {
        let zi = self.zones.partition_point(|z| z.cum <= v).saturating_sub(1);
        let z = &self.zones[zi];
        let off = v - z.cum;
        let first = z.spt_of(z.first_cyl);
        let pair = z.spt + z.spt_odd;
        z.first_cyl + 2 * (off / pair) + u64::from(off % pair >= first)
    }

    /// Maps an LBA to its physical location. `lba` must be below [`Self::total_sectors`].
    pub fn locate(&self, lba: u64) -> Location {
        debug_assert!(lba < self.total_sectors);
        let si = self
            .sections
            .partition_point(|s| s.first_lba <= lba)
            .saturating_sub(1);
        let s = &self.sections[si];
        let heads = self.params.heads as u64;
        let off = lba - s.first_lba;
        let k = (off / s.per_surface).min(heads - 1);
        let o = off - k * s.per_surface;
        let head = if si % 2 == 0 { k } else { heads - 1 - k } as u32;
        let ascending = !self.params.serpentine || k.is_multiple_of(2);
        let (cyl, sector, j) = if ascending {
            let v = self.cum(s.first_cyl) + o;
            let c = self.cyl_at(v);
            (c, v - self.cum(c), c - s.first_cyl)
        } else {
            let end = self.cum(s.first_cyl + s.cyls);
            let w = end - o - 1;
            let c = self.cyl_at(w);
            let start_off = end - self.cum(c + 1);
            (c, o - start_off, s.first_cyl + s.cyls - 1 - c)
        };
        let spt = self.spt_at(cyl);
        Location {
            cyl,
            head,
            sector,
            spt,
            track_lba: lba - sector,
            track: si as u64 * heads * self.params.stroke + k * s.cyls + j,
            run: si as u64 * heads + k,
            run_index: j,
            run_len: s.cyls,
        }
    }

    /// Angle of sector 0 of the track at `loc` (its skew).
    pub fn track_angle(&self, loc: &Location) -> u64 {
        let heads = self.params.heads as u64;
        let si = loc.run / heads;
        let k = loc.run % heads;
        let fast = si
            .checked_mul(self.sigma_section_total)
            .zip(k.checked_mul(self.sigma_surface))
            .zip(loc.run_index.checked_mul(self.sigma_track))
            .and_then(|((a, b), c)| a.checked_add(b)?.checked_add(c));
        match fast {
            Some(a) => a % ANGLE_FULL,
            None => {
                let a = si as u128 * self.sigma_section_total as u128
                    + k as u128 * self.sigma_surface as u128
                    + loc.run_index as u128 * self.sigma_track as u128;
                (a % ANGLE_FULL as u128) as u64
            }
        }
    }

    /// Angle at which sector `sector` of the track at `loc` starts to pass under the head.
    pub fn sector_angle(&self, loc: &Location, sector: u64) -> u64 {
        let rel = match sector.checked_mul(ANGLE_FULL) {
            Some(x) => x / loc.spt,
            None => (sector as u128 * ANGLE_FULL as u128 / loc.spt as u128) as u64,
        };
        (self.track_angle(loc) + rel) % ANGLE_FULL
    }

    /// First LBA and sector count of track `index` of surface run `run`, or `None` past its end.
    pub fn run_track(&self, run: u64, index: u64) -> Option<(u64, u64)> {
        let heads = self.params.heads as u64;
        let si = (run / heads) as usize;
        let k = run % heads;
        let s = self.sections.get(si)?;
        if index >= s.cyls {
            return None;
        }
        let ascending = !self.params.serpentine || k.is_multiple_of(2);
        let base = s.first_lba + k * s.per_surface;
        if ascending {
            let c = s.first_cyl + index;
            Some((base + self.cum(c) - self.cum(s.first_cyl), self.spt_at(c)))
        } else {
            let c = s.first_cyl + s.cyls - 1 - index;
            Some((
                base + self.cum(s.first_cyl + s.cyls) - self.cum(c + 1),
                self.spt_at(c),
            ))
        }
    }

    /// Number of tracks (`heads × cylinders`), numbered in LBA order as [`Location::track`].
    pub fn track_count(&self) -> u64 {
        self.params.heads as u64 * self.params.cylinders
    }

    /// Track number `t` (in LBA order) as its physical place, or `None` past the last track.
    pub fn track(&self, t: u64) -> Option<TrackPlace> {
        let heads = self.params.heads as u64;
        let per_section = heads * self.params.stroke;
        let si = t / per_section;
        let s = self.sections.get(si as usize)?;
        let rem = t - si * per_section;
        let k = rem / s.cyls;
        let j = rem % s.cyls;
        if k >= heads {
            return None;
        }
        let (lba, spt) = self.run_track(si * heads + k, j)?;
        let ascending = !self.params.serpentine || k.is_multiple_of(2);
        let cyl = if ascending {
            s.first_cyl + j
        } else {
            s.first_cyl + s.cyls - 1 - j
        };
        let head = if si.is_multiple_of(2) {
            k
        } else {
            heads - 1 - k
        } as u32;
        Some(TrackPlace {
            track: t,
            lba,
            spt,
            cyl,
            head,
        })
    }

    /// The track at cylinder `cyl` under head `head`, or `None` outside the surface.
    pub fn track_at(&self, cyl: u64, head: u32) -> Option<TrackPlace> {
        let heads = self.params.heads as u64;
        if cyl >= self.params.cylinders || head as u64 >= heads {
            return None;
        }
        let si = self
            .sections
            .partition_point(|s| s.first_cyl <= cyl)
            .saturating_sub(1);
        let s = &self.sections[si];
        let k = if si % 2 == 0 {
            head as u64
        } else {
            heads - 1 - head as u64
        };
        let ascending = !self.params.serpentine || k.is_multiple_of(2);
        let j = if ascending {
            cyl - s.first_cyl
        } else {
            s.first_cyl + s.cyls - 1 - cyl
        };
        self.track(si as u64 * heads * self.params.stroke + k * s.cyls + j)
    }

    /// Media transfer rate in bytes per second at an LBA, ignoring track switches.
    pub fn media_rate_at(&self, lba: u64) -> f64 {
        let loc = self.locate(lba);
        loc.spt as f64 * self.params.sector_size as f64 * self.params.rpm as f64 / 60.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(serpentine: bool) -> GeometryParams {
        GeometryParams {
            sector_size: 4096,
            rpm: 7200,
            heads: 4,
            cylinders: 1000,
            od_track_bytes: 1 << 20,
            od_id_ratio: 2.0,
            recording_zones: 10,
            stroke: 64,
            serpentine,
            interlace: None,
        }
    }

    fn skew() -> SkewTimes {
        SkewTimes {
            track: 400_000,
            surface: 1_000_000,
            section: 400_000,
        }
    }

    #[test]
    fn every_lba_maps_to_a_unique_sector_and_back() {
        for serp in [false, true] {
            let g = Geometry::new(params(serp), skew()).expect("geometry");
            let mut seen = std::collections::HashSet::new();
            let mut lba = 0;
            while lba < g.total_sectors() {
                let l = g.locate(lba);
                assert!(l.sector < l.spt);
                assert!(seen.insert((l.cyl, l.head, l.sector)), "duplicate at {lba}");
                assert_eq!(g.run_track(l.run, l.run_index), Some((l.track_lba, l.spt)));
                lba += 1;
            }
            assert_eq!(seen.len() as u64, g.total_sectors());
        }
    }

    #[test]
    fn consecutive_tracks_of_a_run_are_adjacent_cylinders() {
        for serp in [false, true] {
            let g = Geometry::new(params(serp), skew()).expect("geometry");
            let a = g.locate(0);
            let b = g.locate(a.spt);
            assert_eq!(a.run, b.run);
            assert_eq!(a.cyl.abs_diff(b.cyl), 1);
            assert_eq!(b.track, a.track + 1);
        }
    }

    #[test]
    fn interlaced_tracks_alternate_in_size_and_map_back() {
        for serp in [false, true] {
            let mut p = params(serp);
            p.interlace = Some(1.25);
            let g = Geometry::new(p, skew()).expect("geometry");
            assert_eq!(g.spt_at(0), 256);
            assert_eq!(g.spt_at(1), 205);
            let mut lba = 0;
            let mut seen = std::collections::HashSet::new();
            while lba < g.total_sectors() {
                let l = g.locate(lba);
                assert_eq!(l.spt, g.spt_at(l.cyl));
                assert!(seen.insert((l.cyl, l.head, l.sector)));
                let t = g.track(l.track).expect("track");
                assert_eq!(
                    (t.lba, t.spt, t.cyl, t.head),
                    (l.track_lba, l.spt, l.cyl, l.head)
                );
                assert_eq!(g.track_at(l.cyl, l.head), Some(t));
                lba += l.spt - l.sector;
            }
            assert_eq!(g.track(g.track_count()), None);
        }
    }

    #[test]
    fn tracks_shrink_toward_the_inner_diameter() {
        let g = Geometry::new(params(false), skew()).expect("geometry");
        let od = g.spt_at(0);
        let id = g.spt_at(999);
        assert_eq!(od, 256);
        assert_eq!(id, 128);
    }
}
