//! Where everything lives on the drive: the track table (a compact copy of the device's
//! [`TrackLayout`]), the safe region and its guard tracks, the data tracks, and the regions of
//! the safe space (superblock, map slots, staging area, raw area, safe files).
//!
//! The safe region is made of top tracks, taken in track order from track 0 until they hold
//! the safe space; every bottom track next to one of them is a guard that is never written.
//! Top tracks are only damaged by writes to neighbouring bottom tracks, so nothing written to
//! the safe region can ever be damaged: it holds what a read-modify-write must not lose (the
//! backups) and what is rewritten in place (the map, a log). On the CMR twin the same layout
//! is used, so that both drives give data the same tracks.

use crate::error::{Error, Result};
use crate::options::FormatOptions;
use tegula_device::{TrackKind, TrackLayout};

/// No track (a missing neighbour, a track outside the data region).
pub const NONE: u32 = u32::MAX;

/// One track, as the middleware keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Track {
    /// First LBA.
    pub lba: u64,
    /// Sectors.
    pub sectors: u32,
    /// Bottom (true) or top track.
    pub bottom: bool,
    /// Cylinder.
    pub cyl: u32,
    /// Neighbouring tracks of the other kind ([`NONE`] where there is none).
    pub nb: [u32; 2],
}

impl Track {
    /// The neighbours that exist.
    pub fn neighbours(&self) -> impl Iterator<Item = u32> + '_ {
        self.nb.iter().copied().filter(|&n| n != NONE)
    }

    /// First LBA after the track.
    pub fn end(&self) -> u64 {
        self.lba + self.sectors as u64
    }
}

/// What a track is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Holds files.
    Data,
    /// A top track of the safe region.
    Safe,
    /// A bottom track next to the safe region: never written.
    Guard,
}

/// Offsets (in sectors of the safe space) of the safe regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// Sectors of each map slot.
    pub map_sectors: u64,
    /// Map slots A and B.
    pub map: [u64; 2],
    /// Staging area.
    pub staging: u64,
    /// Sectors of the staging area.
    pub staging_sectors: u64,
    /// Raw area.
    pub raw: u64,
    /// Sectors of the raw area.
    pub raw_sectors: u64,
    /// First safe file slot.
    pub files: u64,
    /// Sectors per safe file slot.
    pub file_sectors: u64,
    /// Number of safe file slots.
    pub safe_files: u32,
    /// Sectors of the whole safe space.
    pub total: u64,
}

impl Regions {
    /// The regions `fmt` asks for, with `ss`-byte sectors.
    pub fn new(fmt: &FormatOptions, ss: u64) -> Self {
        let sec = |b: u64| b.div_ceil(ss);
        let map_sectors = sec(fmt.map_slot_bytes).max(1);
        let map = [1, 1 + map_sectors];
        let staging = 1 + 2 * map_sectors;
        let staging_sectors = sec(fmt.staging_bytes);
        let raw = staging + staging_sectors;
        let raw_sectors = sec(fmt.raw_bytes);
        let files = raw + raw_sectors;
        let file_sectors = sec(fmt.safe_file_bytes);
        let total = files + fmt.safe_files as u64 * file_sectors;
        Regions {
            map_sectors,
            map,
            staging,
            staging_sectors,
            raw,
            raw_sectors,
            files,
            file_sectors,
            safe_files: fmt.safe_files,
            total,
        }
    }
}

/// The drive as the middleware lays it out.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Sector size in bytes.
    pub ss: u64,
    /// Every whole track of the device, by track number.
    pub tracks: Vec<Track>,
    /// Role of each track.
    pub role: Vec<Role>,
    /// Data tracks in physical (track) order.
    pub data: Vec<u32>,
    /// Position of each track in `data` ([`NONE`] for safe and guard tracks).
    pub data_pos: Vec<u32>,
    /// Safe tracks in order.
    pub safe: Vec<u32>,
    /// Offset in the safe space of each safe track, plus the total at the end.
    safe_start: Vec<u64>,
    /// The safe regions.
    pub regions: Regions,
    /// Sectors of all data tracks.
    pub data_sectors: u64,
    /// Whether bottom writes damage tops (false on the CMR twin).
    pub damages: bool,
}

impl Layout {
    /// Lays out a device of `tracks` with `ss`-byte sectors for `fmt`.
    pub fn new(tl: &TrackLayout, ss: u64, fmt: &FormatOptions) -> Result<Self> {
        let n = tl.track_count();
        if n >= NONE as u64 {
            return Err(Error::Invalid(format!("{n} tracks are too many")));
        }
        let mut tracks = Vec::with_capacity(n as usize);
        for i in 0..n {
            let t = tl
                .track(i)
                .ok_or_else(|| Error::Invalid(format!("track {i} is missing")))?;
            let nb = [
                t.neighbours[0].map_or(NONE, |x| x as u32),
                t.neighbours[1].map_or(NONE, |x| x as u32),
            ];
            tracks.push(Track {
                lba: t.lba,
                sectors: t.sectors as u32,
                bottom: t.kind == TrackKind::Bottom,
                cyl: t.cyl as u32,
                nb,
            });
        }
        let regions = Regions::new(fmt, ss);
        let max_track = tracks.iter().map(|t| t.sectors as u64).max().unwrap_or(0);
        if regions.staging_sectors < 2 * max_track + 2 {
            return Err(Error::Invalid(format!(
                "staging area of {} sectors holds less than two tracks of {max_track}",
                regions.staging_sectors
            )));
        }
        let mut role = vec![Role::Data; tracks.len()];
        let mut safe = Vec::new();
        let mut safe_start = Vec::new();
        let mut have = 0u64;
        for (i, t) in tracks.iter().enumerate() {
            if have >= regions.total {
                break;
            }
            if t.bottom {
                continue;
            }
            role[i] = Role::Safe;
            safe.push(i as u32);
            safe_start.push(have);
            have += t.sectors as u64;
        }
        if have < regions.total {
            return Err(Error::Invalid(format!(
                "the drive's top tracks hold {have} sectors; the safe region needs {}",
                regions.total
            )));
        }
        safe_start.push(have);
        for &s in &safe {
            for nb in tracks[s as usize].neighbours() {
                role[nb as usize] = Role::Guard;
            }
        }
        let mut data = Vec::new();
        let mut data_pos = vec![NONE; tracks.len()];
        let mut data_sectors = 0;
        for (i, r) in role.iter().enumerate() {
            if *r == Role::Data {
                data_pos[i] = data.len() as u32;
                data.push(i as u32);
                data_sectors += tracks[i].sectors as u64;
            }
        }
        if data.is_empty() {
            return Err(Error::Invalid(
                "no data tracks left after the safe region".into(),
            ));
        }
        Ok(Layout {
            ss,
            tracks,
            role,
            data,
            data_pos,
            safe,
            safe_start,
            regions,
            data_sectors,
            damages: tl.damages(),
        })
    }

    /// Track `t`.
    pub fn track(&self, t: u32) -> &Track {
        &self.tracks[t as usize]
    }

    /// The device extents `(lba, sectors)` holding safe-space sectors `[off, off + n)`.
    pub fn safe_extents(&self, off: u64, n: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut pos = off;
        let end = off + n;
        let mut i = self
            .safe_start
            .partition_point(|&s| s <= pos)
            .saturating_sub(1);
        while pos < end && i < self.safe.len() {
            let t = self.track(self.safe[i]);
            let within = pos - self.safe_start[i];
            let k = (t.sectors as u64 - within).min(end - pos);
            out.push((t.lba + within, k));
            pos += k;
            i += 1;
        }
        out
    }

    /// The track whose first LBA is `lba`.
    pub fn track_of_lba(&self, lba: u64) -> Option<u32> {
        let i = self
            .tracks
            .partition_point(|t| t.lba <= lba)
            .checked_sub(1)?;
        (self.tracks[i].lba == lba).then_some(i as u32)
    }

    /// Largest track in sectors.
    pub fn max_track_sectors(&self) -> u64 {
        self.tracks
            .iter()
            .map(|t| t.sectors as u64)
            .max()
            .unwrap_or(0)
    }
}
