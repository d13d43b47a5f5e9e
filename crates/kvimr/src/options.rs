//! Configuration. `Default` is the one source of every default; each field says its default
//! and what it trades.

use serde::{Deserialize, Serialize};

/// How data tracks are chosen for a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Tracks in physical order (the paper's "Seq"): bottom and top tracks alternate, so a
    /// file's later bottom tracks damage its own earlier top tracks.
    Seq,
    /// Three-phase write management (Tracklace; the paper's "3Phase"): below 50% space usage
    /// only bottom tracks, up to 75% also every other top track, then every track.
    ThreePhase,
    /// KVIMR's compaction-aware allocation: files of the larger (longer-lived) LSM levels on
    /// bottom tracks, files of the smaller levels on top tracks, each level's files kept
    /// physically sequential. The default.
    #[default]
    CompactionAware,
}

impl Policy {
    /// Name used in reports (`seq`, `three-phase`, `compaction-aware`).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Seq => "seq",
            Policy::ThreePhase => "three-phase",
            Policy::CompactionAware => "compaction-aware",
        }
    }

    /// The policy of a name [`Policy::name`] gives (`aware` is short for compaction-aware).
    pub fn parse(name: &str) -> Option<Policy> {
        match name {
            "seq" => Some(Policy::Seq),
            "three-phase" => Some(Policy::ThreePhase),
            "compaction-aware" | "aware" => Some(Policy::CompactionAware),
            _ => None,
        }
    }

    /// Its byte in the superblock (`docs/formats/kvimr-map.md`).
    pub(crate) fn code(self) -> u8 {
        match self {
            Policy::Seq => 0,
            Policy::ThreePhase => 1,
            Policy::CompactionAware => 2,
        }
    }

    /// The policy of a superblock byte.
    pub(crate) fn of_code(code: u8) -> Option<Policy> {
        [Policy::Seq, Policy::ThreePhase, Policy::CompactionAware]
            .into_iter()
            .find(|p| p.code() == code)
    }
}

/// How a file's writes to bottom tracks protect the valid data of neighbouring top tracks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RmwMode {
    /// Track by track in the file's order: before each bottom track with valid neighbouring
    /// tops, back the tops up, sync, write the bottom, sync, restore the tops, sync.
    Naive,
    /// KVIMR's merged RMW: one backup of every valid top next to any of the file's bottom
    /// tracks, one pass over all the bottoms, one pass over the restored and the file's own
    /// top tracks: at most three syncs per persist and no rewrite of the file's own tops.
    /// The default.
    #[default]
    Merged,
}

impl RmwMode {
    /// Name used in reports (`naive`, `merged`).
    pub fn name(self) -> &'static str {
        match self {
            RmwMode::Naive => "naive",
            RmwMode::Merged => "merged",
        }
    }

    /// The mode of a name [`RmwMode::name`] gives.
    pub fn parse(name: &str) -> Option<RmwMode> {
        match name {
            "naive" => Some(RmwMode::Naive),
            "merged" => Some(RmwMode::Merged),
            _ => None,
        }
    }

    /// Its byte in the superblock.
    pub(crate) fn code(self) -> u8 {
        match self {
            RmwMode::Naive => 0,
            RmwMode::Merged => 1,
        }
    }

    /// The mode of a superblock byte.
    pub(crate) fn of_code(code: u8) -> Option<RmwMode> {
        [RmwMode::Naive, RmwMode::Merged]
            .into_iter()
            .find(|m| m.code() == code)
    }
}

/// Options of [`crate::Store::open`] that may change from one open to the next.
/// [`crate::Store::format`] records them in the superblock (all but
/// `unsafe_skip_bottom_sync`), and [`crate::Store::open_stored`] opens with what it recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Track allocation policy. Default [`Policy::CompactionAware`].
    pub policy: Policy,
    /// Read-modify-write scheme. Default [`RmwMode::Merged`].
    pub rmw: RmwMode,
    /// Compaction-aware allocation: files of levels below this (and files without a level,
    /// such as a log) are "hot" (short-lived) and go to top tracks; deeper levels go to bottom
    /// tracks. Default 2 (L0 and L1, which LevelDB-style engines compact the most often).
    pub hot_levels: u8,
    /// Compaction-aware allocation: below this space usage every file, hot or cold, takes
    /// bottom tracks with no valid neighbouring top (nothing is damaged, and bottom tracks are
    /// the faster ones); beyond it bottoms are kept for the cold levels. Default 0.5
    /// (three-phase's first phase).
    pub bottom_share: f64,
    /// Compaction-aware allocation: a cold file first takes a run of physically contiguous
    /// free tracks (its bottoms and the tops between them, written bottoms first) whose
    /// bottoms damage no valid track outside it, so that it dies as a whole run; false takes
    /// lone clean bottoms first, as the paper describes. Default true: near full, lone
    /// bottoms leave every free bottom between other files' valid tops (see
    /// docs/performance/kvimr.md for both measured).
    pub cold_runs: bool,
    /// Skip the sync between writing bottom tracks and restoring the top tracks. Default
    /// false. **Unsafe**: with the write cache on, a restore can then reach the media before
    /// the bottom write it must follow and be destroyed again; it exists so that a test can
    /// show the model catches exactly that.
    pub unsafe_skip_bottom_sync: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            policy: Policy::default(),
            rmw: RmwMode::default(),
            hot_levels: 2,
            bottom_share: 0.5,
            cold_runs: true,
            unsafe_skip_bottom_sync: false,
        }
    }
}

/// What [`crate::Store::format`] fixes on the device, recorded in the superblock. Sizes are in
/// bytes and rounded up to whole sectors. The safe region (superblock, map slots, staging
/// area, raw area, safe files) lives on top tracks whose neighbouring bottom tracks are never
/// written, so nothing can damage it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatOptions {
    /// Size of each of the two map slots. Default 1 MiB (≈ 20,000 files of a few runs each).
    pub map_slot_bytes: u64,
    /// Size of the staging area that holds read-modify-write backups. Default 32 MiB; at least
    /// two of the largest tracks. A merged RMW whose backup is larger is split into several.
    pub staging_bytes: u64,
    /// Raw area for the layer above (an adapter's conventional zones). Default 0.
    pub raw_bytes: u64,
    /// Number of safe files (written in place, never damaged: a write-ahead log's home).
    /// Default 0.
    pub safe_files: u32,
    /// Size of each safe file. Default 0.
    pub safe_file_bytes: u64,
    /// Largest data file the layer above will write (an adapter's zone size), recorded for
    /// it. Default 64 MiB (the paper's SSTable size).
    pub file_bytes: u64,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            map_slot_bytes: 1 << 20,
            staging_bytes: 32 << 20,
            raw_bytes: 0,
            safe_files: 0,
            safe_file_bytes: 0,
            file_bytes: 64 << 20,
        }
    }
}
