//! Drive configuration: named profiles, TOML files that start from a profile and override any
//! key, and the resolution of a configuration into geometry, timing, zones and shingling.
//! Every default lives in [`profile`]; `docs/guides/device-model.md` gives each value's source.

use crate::error::{DeviceError, Result};
use crate::geometry::GeometryParams;
use crate::mechanics::TimingParams;
use crate::seek::SeekPoints;
use crate::shingle::BandLayout;
use crate::units::size_serde;
use crate::zone::ZoneType;
use serde::{Deserialize, Serialize};

mod profiles;
mod resolve;

pub use profiles::{profile, IMRSIM_RATIO, PROFILES};

/// What kind of drive the configuration describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriveKind {
    /// Conventional magnetic recording: a block device (all zones conventional).
    Cmr,
    /// Host-managed SMR: conventional zones then sequential-write-required zones.
    HmSmr,
    /// Host-aware SMR: conventional zones then sequential-write-preferred zones.
    HaSmr,
    /// Raw shingled media behind the block interface with no translation: writes that break
    /// the shingling rule destroy data (what a translation layer is built on).
    SmrRaw,
    /// Raw interlaced media (IMR) behind the block interface, managed by the host at track
    /// level: narrow top tracks over the seams of wide bottom tracks; writing a bottom track
    /// destroys the overlapping span of its two neighbouring top tracks.
    Imr,
}

impl DriveKind {
    /// Name used in configs and reports.
    pub fn name(self) -> &'static str {
        match self {
            DriveKind::Cmr => "cmr",
            DriveKind::HmSmr => "hm-smr",
            DriveKind::HaSmr => "ha-smr",
            DriveKind::SmrRaw => "smr-raw",
            DriveKind::Imr => "imr",
        }
    }
}

/// How a capacity smaller than the profile's full drive is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Span {
    /// Fewer cylinders on the same radii: the small drive keeps the full drive's seek profile and
    /// outer-to-inner rate fall-off (a whole drive in miniature).
    #[default]
    Scaled,
    /// The first `capacity` bytes of the full-size drive (a partition at the outer diameter).
    Partition,
}

/// Media and layout parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaParams {
    /// Spindle speed.
    pub rpm: u32,
    /// Surfaces (heads).
    pub heads: u32,
    /// Cylinders of the full-size drive.
    pub cylinders: u64,
    /// Bytes on an outer-diameter track.
    pub od_track_bytes: u64,
    /// Outer-to-inner track capacity ratio.
    pub od_id_ratio: f64,
    /// Recording zones (zoned bit recording).
    pub recording_zones: u32,
    /// Cylinders per surface run (set this or `strokes_per_surface`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stroke_tracks: Option<u64>,
    /// Surface runs per surface; the run length scales with the drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strokes_per_surface: Option<u64>,
    /// Alternate run direction (conventional serpentine layout).
    pub serpentine: bool,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// `Option<u64>` sizes: a number of bytes or a size string, as [`size_serde`].
mod opt_size_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => s.serialize_u64(*n),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(with = "crate::units::size_serde")] u64);
        Ok(Some(Wrap::deserialize(d)?.0))
    }
}

/// Zone layout parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneParams {
    /// Zone size in bytes.
    #[serde(with = "size_serde")]
    pub zone_size: u64,
    /// Fraction of zones that are conventional (rounded up, at least one on SMR drives).
    pub conventional_fraction: f64,
    /// Exact number of conventional zones (overrides the fraction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conventional_zones: Option<u32>,
    /// Maximum implicitly plus explicitly open zones (0 = unlimited).
    pub max_open: u32,
    /// Maximum zones open or closed at once (NVMe ZNS's active resources; 0 = unlimited, the
    /// default, as on SMR drives). A zone stops being active when it is full or reset.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_active: u32,
    /// Writable bytes of each sequential zone (NVMe ZNS's zone capacity), a whole number of
    /// sectors no larger than `zone_size`; default: the zone size (SMR drives). The sectors
    /// after it up to the zone's end are never written.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opt_size_serde"
    )]
    pub zone_capacity: Option<u64>,
    /// Allow reads past write pointers (they return zeros); ZBC's URSWRZ.
    pub unrestricted_reads: bool,
    /// Offer the T13 banded proposal's "set write pointer" (moving a write pointer back, for
    /// the file system's tail cleaning); default true. ZNS has no such command: the `zns`
    /// profile sets it false.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub set_write_pointer: bool,
}

fn yes() -> bool {
    true
}

fn is_true(v: &bool) -> bool {
    *v
}

/// Shingling parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShingleParams {
    /// Head width in tracks: writing track t destroys tracks t+1 … t+k−1 of its band (1 = none).
    pub overlap_tracks: u64,
    /// Tracks per band on raw shingled media (host-managed drives use their zones as bands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band_tracks: Option<u64>,
    /// Unshingled bytes at the start of raw shingled media (e.g. a persistent cache).
    #[serde(default, with = "size_serde")]
    pub unshingled_prefix: u64,
}

/// Interlaced recording parameters (drive kind `imr` only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterlaceParams {
    /// Sectors of a bottom track per sector of a top track at the same radius (IMRSim: 568 /
    /// 456 ≈ 1.246). Bottom tracks hold `media.od_track_bytes` at the outer diameter.
    pub bottom_top_ratio: f64,
    /// Whether writing a bottom track destroys its neighbouring top tracks. `false` is the
    /// "CMR twin": the same geometry and timing with no damage (the paper's CMR baseline).
    pub damage: bool,
}

/// Volatile write cache parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheParams {
    /// Whether the volatile write cache is enabled (writes complete before they are durable).
    pub write_cache: bool,
    /// Cache size in bytes.
    #[serde(with = "size_serde")]
    pub size: u64,
}

/// A complete drive configuration. `tegula disk create --config F` reads a TOML file naming a
/// `profile` and overriding any key; the resolved configuration is stored in the disk image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskConfig {
    /// Profile the configuration started from.
    pub profile: String,
    /// Drive kind.
    pub kind: DriveKind,
    /// Exposed capacity in bytes (rounded down to whole zones).
    #[serde(with = "size_serde")]
    pub capacity: u64,
    /// Logical sector size: 512 or 4096.
    pub sector_size: u32,
    /// How a smaller capacity is derived from the full drive.
    #[serde(default)]
    pub span: Span,
    /// Keep sector data (false: metadata-only simulation; reads return zeros).
    pub store_data: bool,
    /// Seed of the fault injector.
    #[serde(default)]
    pub seed: u64,
    /// Media and layout.
    pub media: MediaParams,
    /// Timing.
    pub timing: TimingParams,
    /// Zones.
    pub zones: ZoneParams,
    /// Shingling.
    pub shingle: ShingleParams,
    /// Volatile write cache.
    pub cache: CacheParams,
    /// Interlaced recording (kind `imr`); absent on every other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interlace: Option<InterlaceParams>,
}
