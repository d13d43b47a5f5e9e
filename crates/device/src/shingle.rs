//! Shingled media physics: writing a track overwrites the next `k − 1` tracks of its band.
//!
//! The write head is `k` tracks wide. Writing sectors of track `t` also writes the same angular
//! positions of tracks `t+1 … t+k−1` (those that are physically adjacent, on the same surface
//! run, and inside the same band: the band's last track is followed by a guard region).
//! Those sectors are *destroyed* and read back as media errors until they are rewritten.

use crate::geometry::Geometry;
use crate::ranges::RangeSet;
use serde::{Deserialize, Serialize};

/// How the shingled part of the media is cut into bands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum BandLayout {
    /// Not shingled (conventional media).
    None,
    /// Fixed-size bands in LBA space after an unshingled prefix (the zones of a host-managed drive).
    Lba {
        /// Sectors before the first band (conventional zones).
        unshingled_sectors: u64,
        /// Sectors per band.
        band_sectors: u64,
    },
    /// Bands of a fixed number of tracks inside each surface run, so they hold fewer bytes
    /// toward the inner diameter (the isocapacity-per-zone bands of Skylight's drives).
    Tracks {
        /// Sectors before the first band (e.g. a persistent cache region).
        unshingled_sectors: u64,
        /// Tracks per band.
        band_tracks: u64,
    },
}

/// Shingled physics of one drive: its band layout, overlap, and the set of destroyed sectors.
#[derive(Debug, Clone)]
pub struct Shingling {
    layout: BandLayout,
    overlap: u64,
    destroyed: RangeSet,
}

impl Shingling {
    /// Shingling with a head `overlap` tracks wide (k ≥ 1; k = 1 means no damage).
    pub fn new(layout: BandLayout, overlap: u64) -> Self {
        Shingling {
            layout,
            overlap: overlap.max(1),
            destroyed: RangeSet::new(),
        }
    }

    /// The band layout.
    pub fn layout(&self) -> &BandLayout {
        &self.layout
    }

    /// Destroyed sectors.
    pub fn destroyed(&self) -> &RangeSet {
        &self.destroyed
    }

    /// The destroyed set, for other physics that destroy sectors (interlaced recording keeps
    /// its damage here too, so that images persist both alike).
    pub fn destroyed_mut(&mut self) -> &mut RangeSet {
        &mut self.destroyed
    }

    /// Replaces the destroyed set (when loading a disk image).
    pub fn set_destroyed(&mut self, set: RangeSet) {
        self.destroyed = set;
    }

    /// First LBA after the band holding `lba`, or `None` when `lba` is not shingled.
    pub fn band_end(&self, geo: &Geometry, lba: u64) -> Option<u64> {
        match self.layout {
            BandLayout::None => None,
            BandLayout::Lba {
                unshingled_sectors,
                band_sectors,
            } => {
                if lba < unshingled_sectors || band_sectors == 0 {
                    return None;
                }
                let b = (lba - unshingled_sectors) / band_sectors;
                Some(unshingled_sectors + (b + 1) * band_sectors)
            }
            BandLayout::Tracks {
                unshingled_sectors,
                band_tracks,
            } => {
                if lba < unshingled_sectors || band_tracks == 0 {
                    return None;
                }
                let loc = geo.locate(lba);
                let last = ((loc.run_index / band_tracks) + 1) * band_tracks - 1;
                let last = last.min(loc.run_len - 1);
                geo.run_track(loc.run, last).map(|(s, n)| s + n)
            }
        }
    }

    /// Records a media write of `[lba, lba + sectors)`: the written sectors become readable and
    /// the overlapped sectors of the following tracks are destroyed.
    pub fn on_write(&mut self, geo: &Geometry, lba: u64, sectors: u64) {
        let end = lba + sectors;
        self.destroyed.remove(lba, end);
        if self.overlap <= 1 {
            return;
        }
        let mut pos = lba;
        let mut damage: Vec<(u64, u64)> = Vec::new();
        while pos < end {
            let loc = geo.locate(pos);
            let n = (end - pos).min(loc.spt - loc.sector);
            if let Some(band_end) = self.band_end(geo, pos) {
                for i in 1..self.overlap {
                    let Some((tlba, tspt)) = geo.run_track(loc.run, loc.run_index + i) else {
                        break;
                    };
                    if tlba >= band_end {
                        break;
                    }
                    let s0 = loc.sector * tspt / loc.spt;
                    let s1 = ((loc.sector + n) * tspt).div_ceil(loc.spt).min(tspt);
                    let (a, b) = (tlba + s0, (tlba + s1).min(band_end));
                    if a < b {
                        damage.push((a, b));
                    }
                }
            }
            pos += n;
        }
        for (a, b) in damage {
            // Sectors written by this same command stay readable.
            self.destroyed.insert(a, b);
            self.destroyed
                .remove(lba.max(a), end.min(b).max(lba.max(a)));
        }
    }

    /// Forgets destroyed sectors in a range (a zone reset: the range is logically empty).
    pub fn clear(&mut self, lba: u64, sectors: u64) {
        self.destroyed.remove(lba, lba + sectors);
    }

    /// First destroyed sector of `[lba, lba + sectors)`.
    pub fn first_destroyed(&self, lba: u64, sectors: u64) -> Option<u64> {
        self.destroyed.first_in(lba, lba + sectors)
    }
}
