//! Interlaced magnetic recording (IMR) physics and the track-level view of interlaced media.
//!
//! On each surface, even cylinders are wide *bottom* tracks and odd cylinders narrow *top*
//! tracks laid over the seams between them (the geometry gives bottom tracks more sectors, see
//! [`crate::geometry::GeometryParams::interlace`]). Writing a top track damages nothing.
//! Writing sectors of a bottom track destroys the overlapping angular span of both
//! neighbouring top tracks (same head, cylinders `c − 1` and `c + 1`): those sectors read back
//! as media errors until rewritten. A write is applied track by track in LBA order, so a
//! single command (or a coalesced cache destage) that writes a top track and then the bottom
//! track next to it leaves that top track destroyed, as the head would.

use crate::geometry::{Geometry, TrackPlace, ANGLE_FULL};
use crate::ranges::RangeSet;
use serde::Serialize;

/// Which layer a track belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrackKind {
    /// A wide bottom track (even cylinder): writing it damages its neighbouring top tracks.
    Bottom,
    /// A narrow top track (odd cylinder): written freely.
    Top,
}

impl TrackKind {
    /// The kind of the tracks at cylinder `cyl`.
    pub fn of_cylinder(cyl: u64) -> Self {
        if cyl.is_multiple_of(2) {
            TrackKind::Bottom
        } else {
            TrackKind::Top
        }
    }

    /// Name used in reports (`bottom`, `top`).
    pub fn name(self) -> &'static str {
        match self {
            TrackKind::Bottom => "bottom",
            TrackKind::Top => "top",
        }
    }
}

/// One track of interlaced media as the layer above sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrackInfo {
    /// Track number (tracks are numbered in LBA order from 0).
    pub index: u64,
    /// First LBA.
    pub lba: u64,
    /// Sectors on the track.
    pub sectors: u64,
    /// Bottom or top.
    pub kind: TrackKind,
    /// Cylinder (0 = outer diameter).
    pub cyl: u64,
    /// Head (surface).
    pub head: u32,
    /// The physically adjacent tracks of the other kind (same head, cylinders `cyl ∓ 1`) that
    /// lie inside the device: a bottom track's writes damage these top tracks.
    pub neighbours: [Option<u64>; 2],
}

impl TrackInfo {
    /// First LBA after the track.
    pub fn end_lba(&self) -> u64 {
        self.lba + self.sectors
    }

    /// The neighbouring tracks that exist.
    pub fn neighbour_tracks(&self) -> impl Iterator<Item = u64> + '_ {
        self.neighbours.iter().flatten().copied()
    }
}

/// The track-level interface of an interlaced drive: how many tracks it has, where each lies,
/// its kind and neighbours, and which track holds an LBA. Only tracks that lie entirely below
/// the device's capacity are counted; a partial last track is not part of the interface.
#[derive(Debug, Clone)]
pub struct TrackLayout {
    geo: Geometry,
    tracks: u64,
    damage: bool,
}

impl TrackLayout {
    /// The tracks of `geo` below `capacity` sectors; `damage` says whether bottom writes
    /// destroy top tracks (false for the CMR twin).
    pub fn new(geo: Geometry, capacity: u64, damage: bool) -> Self {
        let capacity = capacity.min(geo.total_sectors());
        let tracks = if capacity == 0 {
            0
        } else {
            let l = geo.locate(capacity - 1);
            if l.sector + 1 == l.spt {
                l.track + 1
            } else {
                l.track
            }
        };
        TrackLayout {
            geo,
            tracks,
            damage,
        }
    }

    /// Number of whole tracks.
    pub fn track_count(&self) -> u64 {
        self.tracks
    }

    /// Whether bottom-track writes damage top tracks (false: the CMR twin).
    pub fn damages(&self) -> bool {
        self.damage
    }

    /// The geometry the layout was built from.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    fn info(&self, p: TrackPlace) -> TrackInfo {
        let mut neighbours = [None, None];
        let below = p.cyl.checked_sub(1);
        for (slot, cyl) in neighbours.iter_mut().zip([below, Some(p.cyl + 1)]) {
            *slot = cyl
                .and_then(|c| self.geo.track_at(c, p.head))
                .map(|t| t.track)
                .filter(|&t| t < self.tracks);
        }
        TrackInfo {
            index: p.track,
            lba: p.lba,
            sectors: p.spt,
            kind: TrackKind::of_cylinder(p.cyl),
            cyl: p.cyl,
            head: p.head,
            neighbours,
        }
    }

    /// Track `index`, or `None` past the last whole track.
    pub fn track(&self, index: u64) -> Option<TrackInfo> {
        if index >= self.tracks {
            return None;
        }
        self.geo.track(index).map(|p| self.info(p))
    }

    /// The track holding `lba`, or `None` when `lba` lies past the last whole track.
    pub fn track_of(&self, lba: u64) -> Option<TrackInfo> {
        if lba >= self.geo.total_sectors() {
            return None;
        }
        self.track(self.geo.locate(lba).track)
    }

    /// The top-track sector ranges `[a, b)` that writing `[lba, lba + sectors)` would destroy
    /// (empty on the CMR twin): what a layer above must back up before such a write. Applies
    /// the same physics as the media, so the two always agree.
    pub fn damaged_by(&self, lba: u64, sectors: u64) -> Vec<(u64, u64)> {
        if !self.damage || sectors == 0 {
            return Vec::new();
        }
        let mut hit = RangeSet::new();
        let end = self.geo.total_sectors();
        let sectors = sectors.min(end.saturating_sub(lba));
        Interlacing { damage: true }.on_write(&self.geo, end, lba, sectors, &mut hit);
        hit.iter().collect()
    }

    /// Numbers of bottom and top tracks.
    pub fn kind_counts(&self) -> (u64, u64) {
        let mut bottom = 0;
        for t in 0..self.tracks {
            if self.geo.track(t).is_some_and(|p| p.cyl.is_multiple_of(2)) {
                bottom += 1;
            }
        }
        (bottom, self.tracks - bottom)
    }
}

/// What one media write did to interlaced media.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteTally {
    /// Sectors written to top tracks.
    pub top: u64,
    /// Sectors written to bottom tracks.
    pub bottom: u64,
    /// Readable sectors of top tracks this write destroyed.
    pub destroyed: u64,
}

/// The interlaced physics of one drive.
#[derive(Debug, Clone, Copy)]
pub struct Interlacing {
    /// Whether bottom writes destroy top tracks.
    pub damage: bool,
}

impl Interlacing {
    /// Applies a media write of `[lba, lba + sectors)` to the damage map `destroyed`: track by
    /// track in LBA order, the written sectors become readable, and a bottom track's written
    /// span destroys the overlapping span of its neighbouring top tracks below `capacity`.
    pub fn on_write(
        &self,
        geo: &Geometry,
        capacity: u64,
        lba: u64,
        sectors: u64,
        destroyed: &mut RangeSet,
    ) -> WriteTally {
        let mut tally = WriteTally::default();
        let end = lba + sectors;
        let mut pos = lba;
        while pos < end {
            let loc = geo.locate(pos);
            let n = (end - pos).min(loc.spt - loc.sector);
            destroyed.remove(pos, pos + n);
            if TrackKind::of_cylinder(loc.cyl) == TrackKind::Top {
                tally.top += n;
                pos += n;
                continue;
            }
            tally.bottom += n;
            if self.damage {
                let start = geo.sector_angle(&loc, loc.sector);
                for cyl in [loc.cyl.checked_sub(1), Some(loc.cyl + 1)]
                    .into_iter()
                    .flatten()
                {
                    let Some(top) = geo.track_at(cyl, loc.head) else {
                        continue;
                    };
                    let tloc = geo.locate(top.lba);
                    for (a, b) in span_on(geo, &tloc, start, n, loc.spt) {
                        let (a, b) = (top.lba + a, (top.lba + b).min(capacity));
                        if a < b {
                            let before = destroyed
                                .clipped(a, b)
                                .iter()
                                .map(|r| r.1 - r.0)
                                .sum::<u64>();
                            destroyed.insert(a, b);
                            tally.destroyed += (b - a) - before;
                        }
                    }
                }
            }
            pos += n;
        }
        tally
    }
}

/// Sector ranges (relative to the track's first sector) of the track at `to` that overlap an
/// angular span starting at angle `start` and covering `n` of `from_spt` sectors per
/// revolution. At most two ranges (the span may wrap past the track's sector 0).
fn span_on(
    geo: &Geometry,
    to: &crate::geometry::Location,
    start: u64,
    n: u64,
    from_spt: u64,
) -> Vec<(u64, u64)> {
    let s = to.spt as u128;
    if n >= from_spt {
        return vec![(0, to.spt)];
    }
    let full = ANGLE_FULL as u128;
    let len = n as u128 * full / from_spt as u128;
    let rel = ((start as u128 + full) - geo.track_angle(to) as u128) % full;
    let first = rel * s / full;
    let last = ((rel + len) * s).div_ceil(full);
    if last - first >= s {
        return vec![(0, to.spt)];
    }
    if last <= s {
        vec![(first as u64, last as u64)]
    } else {
        vec![(first as u64, to.spt), (0, (last - s) as u64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{GeometryParams, SkewTimes};

    fn geo() -> Geometry {
        Geometry::new(
            GeometryParams {
                sector_size: 4096,
                rpm: 7200,
                heads: 2,
                cylinders: 40,
                od_track_bytes: 100 * 4096,
                od_id_ratio: 1.0,
                recording_zones: 1,
                stroke: 10,
                serpentine: true,
                interlace: Some(1.25),
            },
            SkewTimes {
                track: 400_000,
                surface: 1_000_000,
                section: 400_000,
            },
        )
        .expect("geometry")
    }

    #[test]
    fn a_whole_bottom_track_destroys_both_neighbouring_tops_and_nothing_else() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        let b = layout.track(2).expect("track");
        assert_eq!(b.kind, TrackKind::Bottom);
        assert_eq!(b.sectors, 100);
        let mut d = RangeSet::new();
        let t =
            Interlacing { damage: true }.on_write(&g, g.total_sectors(), b.lba, b.sectors, &mut d);
        assert_eq!(t.bottom, 100);
        let tops: Vec<TrackInfo> = b
            .neighbour_tracks()
            .map(|i| layout.track(i).expect("neighbour"))
            .collect();
        assert_eq!(tops.len(), 2);
        assert_eq!(t.destroyed, tops.iter().map(|t| t.sectors).sum::<u64>());
        for top in &tops {
            assert_eq!(top.kind, TrackKind::Top);
            assert_eq!(top.sectors, 80);
            assert_eq!(
                d.clipped(top.lba, top.end_lba()),
                vec![(top.lba, top.end_lba())]
            );
        }
        assert_eq!(d.total(), 160);
    }

    #[test]
    fn a_partial_bottom_write_destroys_only_the_overlapping_span() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        let b = layout.track(4).expect("track");
        let mut d = RangeSet::new();
        Interlacing { damage: true }.on_write(&g, g.total_sectors(), b.lba + 10, 20, &mut d);
        // 20 of 100 sectors span a fifth of a revolution: 16 top sectors, plus at most one
        // partly covered sector at each end.
        for top in b.neighbour_tracks() {
            let top = layout.track(top).expect("top");
            let hit: u64 = d
                .clipped(top.lba, top.end_lba())
                .iter()
                .map(|r| r.1 - r.0)
                .sum();
            assert!((16..=18).contains(&hit), "{hit}");
        }
    }

    #[test]
    fn top_writes_damage_nothing_and_heal_themselves() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        let b = layout.track(2).expect("track");
        let il = Interlacing { damage: true };
        let mut d = RangeSet::new();
        il.on_write(&g, g.total_sectors(), b.lba, b.sectors, &mut d);
        for top in b.neighbour_tracks() {
            let top = layout.track(top).expect("top");
            let t = il.on_write(&g, g.total_sectors(), top.lba, top.sectors, &mut d);
            assert_eq!((t.top, t.destroyed), (80, 0));
        }
        assert!(d.is_empty());
    }

    #[test]
    fn one_command_over_top_bottom_top_leaves_the_first_top_destroyed() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        let t1 = layout.track(1).expect("t1");
        let t3 = layout.track(3).expect("t3");
        assert_eq!((t1.kind, t3.kind), (TrackKind::Top, TrackKind::Top));
        let mut d = RangeSet::new();
        Interlacing { damage: true }.on_write(
            &g,
            g.total_sectors(),
            t1.lba,
            t3.end_lba() - t1.lba,
            &mut d,
        );
        assert_eq!(
            d.clipped(0, g.total_sectors()),
            vec![(t1.lba, t1.end_lba())]
        );
    }

    #[test]
    fn damaged_by_names_exactly_what_the_media_destroys() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        let il = Interlacing { damage: true };
        for (lba, n) in [(0, 1000), (450, 37), (2001, 5), (0, 1)] {
            let mut d = RangeSet::new();
            il.on_write(&g, g.total_sectors(), lba, n, &mut d);
            assert_eq!(layout.damaged_by(lba, n), d.iter().collect::<Vec<_>>());
        }
        let top = layout.track(1).expect("top");
        assert!(layout.damaged_by(top.lba, top.sectors).is_empty());
        let twin = TrackLayout::new(g.clone(), g.total_sectors(), false);
        assert!(twin.damaged_by(0, 1000).is_empty());
    }

    #[test]
    fn the_cmr_twin_damages_nothing() {
        let g = geo();
        let mut d = RangeSet::new();
        let t = Interlacing { damage: false }.on_write(&g, g.total_sectors(), 0, 1000, &mut d);
        assert!(d.is_empty());
        assert_eq!(t.top + t.bottom, 1000);
    }

    #[test]
    fn neighbours_are_adjacent_cylinders_of_the_other_kind_on_the_same_head() {
        let g = geo();
        let layout = TrackLayout::new(g.clone(), g.total_sectors(), true);
        assert_eq!(layout.track_count(), 80);
        assert_eq!(layout.kind_counts(), (40, 40));
        for i in 0..layout.track_count() {
            let t = layout.track(i).expect("track");
            assert_eq!(layout.track_of(t.lba + t.sectors - 1), Some(t));
            for n in t.neighbour_tracks() {
                let n = layout.track(n).expect("neighbour");
                assert_ne!(n.kind, t.kind);
                assert_eq!(n.head, t.head);
                assert_eq!(n.cyl.abs_diff(t.cyl), 1);
                assert!(n.neighbour_tracks().any(|m| m == i));
            }
            let expect = if t.cyl == 0 || t.cyl == 39 { 1 } else { 2 };
            assert_eq!(t.neighbour_tracks().count(), expect, "track {i}");
        }
        // A partial last track is not part of the interface.
        let short = TrackLayout::new(g.clone(), g.total_sectors() - 1, true);
        assert_eq!(short.track_count(), 79);
    }
}
