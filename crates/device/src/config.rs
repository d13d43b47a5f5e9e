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

/// Names of the built-in profiles.
pub const PROFILES: [&str; 7] = [
    "cmr-7200",
    "hm-smr",
    "ha-smr",
    "zns",
    "smr-5900",
    "imr",
    "imr-paper",
];

/// Bottom / top sectors per track of IMRSim (568 and 456 blocks of 4 KiB).
pub const IMRSIM_RATIO: f64 = 568.0 / 456.0;

fn cmr_timing() -> TimingParams {
    TimingParams {
        seek_read: SeekPoints {
            t2t_ms: 0.23,
            avg_ms: 7.4,
            full_ms: 15.0,
        },
        seek_write: SeekPoints {
            t2t_ms: 0.32,
            avg_ms: 8.2,
            full_ms: 16.0,
        },
        head_switch_ms: 0.8,
        command_overhead_ms: 0.2,
        interface_mb_s: 600.0,
        read_ahead_bytes: 1 << 20,
        track_switch_ms: None,
    }
}

/// Zones of a drive without shingled zones: 256 MiB, all conventional, no open limit.
fn unzoned(mib: u64) -> ZoneParams {
    ZoneParams {
        zone_size: 256 * mib,
        conventional_fraction: 1.0,
        conventional_zones: None,
        max_open: 0,
        max_active: 0,
        zone_capacity: None,
        unrestricted_reads: true,
        set_write_pointer: true,
    }
}

/// A built-in profile from the parts that differ between them; the rest is shared (4 KiB
/// sectors, scaled span, stored data, a 32 MiB cache, no interlacing, capacity filled in later).
fn built_in(
    name: &str,
    kind: DriveKind,
    media: MediaParams,
    timing: TimingParams,
    zones: ZoneParams,
    shingle: ShingleParams,
    write_cache: bool,
) -> DiskConfig {
    DiskConfig {
        profile: name.into(),
        kind,
        capacity: 0,
        sector_size: 4096,
        span: Span::Scaled,
        store_data: true,
        seed: 0,
        media,
        timing,
        zones,
        shingle,
        cache: CacheParams {
            write_cache,
            size: 32 << 20,
        },
        interlace: None,
    }
}

/// The built-in profile `name` at its full capacity.
pub fn profile(name: &str) -> Result<DiskConfig> {
    let mib = 1u64 << 20;
    // cmr-7200 and the imr profiles: a conventional 7200 rpm drive, serpentine layout.
    let cmr = |kind, heads, cylinders, od_track_bytes, od_id_ratio, recording_zones| {
        built_in(
            name,
            kind,
            MediaParams {
                rpm: 7200,
                heads,
                cylinders,
                od_track_bytes,
                od_id_ratio,
                recording_zones,
                stroke_tracks: Some(18),
                strokes_per_surface: None,
                serpentine: true,
            },
            TimingParams {
                track_switch_ms: Some(0.9),
                ..cmr_timing()
            },
            unzoned(mib),
            ShingleParams {
                overlap_tracks: 1,
                band_tracks: None,
                unshingled_prefix: 0,
            },
            true,
        )
    };
    let cfg = match name {
        "cmr-7200" => cmr(DriveKind::Cmr, 10, 320_800, 1_668_096, 175.0 / 83.0, 30),
        "hm-smr" | "ha-smr" => built_in(
            name,
            if name == "hm-smr" {
                DriveKind::HmSmr
            } else {
                DriveKind::HaSmr
            },
            MediaParams {
                rpm: 7200,
                heads: 16,
                cylinders: 557_000,
                od_track_bytes: 2_200_000,
                od_id_ratio: 2.1,
                recording_zones: 30,
                stroke_tracks: None,
                strokes_per_surface: Some(32),
                serpentine: false,
            },
            cmr_timing(),
            ZoneParams {
                zone_size: 256 * mib,
                conventional_fraction: 0.0094,
                conventional_zones: None,
                max_open: 128,
                max_active: 0,
                zone_capacity: None,
                unrestricted_reads: false,
                set_write_pointer: true,
            },
            ShingleParams {
                overlap_tracks: 3,
                band_tracks: None,
                unshingled_prefix: 0,
            },
            true,
        ),
        // The interface rules of an NVMe ZNS namespace (no conventional zones, a zone
        // capacity below the zone size, open and active limits: QEMU's emulated ZNS device
        // of the real-device tests) on hm-smr's media and timing. Flash timing is not
        // modelled: this profile tests that every layer keeps ZNS's rules.
        "zns" => {
            let mut c = profile("hm-smr")?;
            c.profile = name.into();
            c.zones = ZoneParams {
                zone_size: 64 * mib,
                conventional_fraction: 0.0,
                conventional_zones: Some(0),
                max_open: 14,
                max_active: 14,
                zone_capacity: Some(48 * mib),
                unrestricted_reads: false,
                set_write_pointer: false,
            };
            c
        }
        "smr-5900" => built_in(
            name,
            DriveKind::SmrRaw,
            MediaParams {
                rpm: 5900,
                heads: 8,
                cylinders: 450_000,
                od_track_bytes: 2 * mib,
                od_id_ratio: 2.1,
                recording_zones: 30,
                stroke_tracks: None,
                strokes_per_surface: Some(32),
                serpentine: false,
            },
            TimingParams {
                seek_read: SeekPoints {
                    t2t_ms: 1.0,
                    avg_ms: 11.0,
                    full_ms: 21.0,
                },
                seek_write: SeekPoints {
                    t2t_ms: 1.2,
                    avg_ms: 12.0,
                    full_ms: 22.0,
                },
                head_switch_ms: 1.0,
                command_overhead_ms: 0.3,
                interface_mb_s: 600.0,
                read_ahead_bytes: 1 << 20,
                track_switch_ms: None,
            },
            unzoned(mib),
            ShingleParams {
                overlap_tracks: 3,
                band_tracks: Some(16),
                unshingled_prefix: 0,
            },
            false,
        ),
        "imr" | "imr-paper" => {
            let paper = name == "imr-paper";
            // imr: ≈560,000 tracks per surface; imr-paper: the slides' 100 GB drive, with one
            // recording zone: every track pair holds 2 MiB.
            let mut c = if paper {
                cmr(DriveKind::Imr, 8, 6_000, 568 * 4096, 1.0, 1)
            } else {
                cmr(DriveKind::Imr, 8, 560_000, 568 * 4096, 175.0 / 83.0, 30)
            };
            c.interlace = Some(InterlaceParams {
                bottom_top_ratio: IMRSIM_RATIO,
                damage: true,
            });
            c
        }
        other => {
            return Err(DeviceError::Config(format!(
                "unknown profile {other:?} (one of: {})",
                PROFILES.join(", ")
            )))
        }
    };
    let mut cfg = cfg;
    cfg.capacity = cfg.full_capacity()?;
    Ok(cfg)
}

/// Merges TOML table `over` into `base`, key by key, recursing into tables.
fn merge(base: &mut toml::Value, over: toml::Value) {
    match (base, over) {
        (toml::Value::Table(b), toml::Value::Table(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(bv) if bv.is_table() && v.is_table() => merge(bv, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

impl DiskConfig {
    /// Parses a TOML configuration: `profile = "…"` (default `hm-smr`) plus any overrides.
    /// A `capacity` not given means the profile's full size.
    pub fn from_toml(text: &str) -> Result<Self> {
        let over: toml::Value = text
            .parse()
            .map_err(|e| DeviceError::Config(format!("{e}")))?;
        let name = over
            .get("profile")
            .and_then(|v| v.as_str())
            .unwrap_or("hm-smr")
            .to_string();
        let base = profile(&name)?;
        let mut v = toml::Value::try_from(&base).map_err(|e| DeviceError::Config(e.to_string()))?;
        merge(&mut v, over);
        let cfg: DiskConfig = v
            .try_into()
            .map_err(|e: toml::de::Error| DeviceError::Config(e.to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The configuration as TOML text (what disk images store).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Applies a `key=value` override such as `media.rpm=5400` or `zones.zone_size=64MiB`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let mut v =
            toml::Value::try_from(&*self).map_err(|e| DeviceError::Config(e.to_string()))?;
        let parsed: toml::Value = format!("x = {value}")
            .parse::<toml::Value>()
            .ok()
            .and_then(|t| t.get("x").cloned())
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        let mut cur = &mut v;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, p) in parts.iter().enumerate() {
            let t = cur
                .as_table_mut()
                .ok_or_else(|| DeviceError::Config(format!("{key}: {p} is not a table")))?;
            if i + 1 == parts.len() {
                t.insert((*p).to_string(), parsed.clone());
                break;
            }
            cur = t
                .get_mut(*p)
                .ok_or_else(|| DeviceError::Config(format!("unknown key {key}")))?;
        }
        let cfg: DiskConfig = v
            .try_into()
            .map_err(|e: toml::de::Error| DeviceError::Config(format!("{key}={value}: {e}")))?;
        *self = cfg;
        Ok(())
    }

    /// Checks ranges that the type system does not.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DeviceError::Config(m));
        if self.sector_size != 512 && self.sector_size != 4096 {
            return bad(format!(
                "sector_size must be 512 or 4096, got {}",
                self.sector_size
            ));
        }
        let ss = self.sector_size as u64;
        if self.zones.zone_size == 0 || !self.zones.zone_size.is_multiple_of(ss) {
            return bad(format!(
                "zone_size {} must be a positive multiple of the sector size",
                self.zones.zone_size
            ));
        }
        if let Some(cap) = self.zones.zone_capacity {
            if cap == 0 || cap > self.zones.zone_size || !cap.is_multiple_of(ss) {
                return bad(format!(
                    "zone_capacity {cap} must be a positive multiple of the sector size no \
                     larger than zone_size {}",
                    self.zones.zone_size
                ));
            }
        }
        if self.zones.max_active > 0 && self.zones.max_open > self.zones.max_active {
            return bad(format!(
                "max_open {} exceeds max_active {} (an open zone is active)",
                self.zones.max_open, self.zones.max_active
            ));
        }
        if self.capacity < self.zones.zone_size {
            return bad(format!(
                "capacity {} is smaller than one zone ({} bytes)",
                self.capacity, self.zones.zone_size
            ));
        }
        if !(0.0..=1.0).contains(&self.zones.conventional_fraction) {
            return bad("conventional_fraction must be within 0..1".into());
        }
        if matches!(self.kind, DriveKind::HmSmr | DriveKind::HaSmr) {
            let n = self.zone_count();
            let conv = self.zones.conventional_zones.unwrap_or_else(|| {
                ((n as f64 * self.zones.conventional_fraction).ceil() as u32).max(1)
            });
            if conv >= n {
                return bad(format!(
                    "{conv} conventional zones leave no sequential zone on a {} drive of {n} \
                     zones (at most {} conventional; a drive of conventional zones only is \
                     kind = \"cmr\")",
                    self.kind.name(),
                    n.saturating_sub(1)
                ));
            }
        }
        if self.media.rpm < 1000 || self.media.rpm > 20000 {
            return bad(format!("rpm {} out of range 1000..20000", self.media.rpm));
        }
        if self.media.heads == 0 || self.media.heads > 64 {
            return bad(format!("heads {} out of range 1..64", self.media.heads));
        }
        if self.media.cylinders < 2 {
            return bad("cylinders must be at least 2".into());
        }
        if self.media.od_track_bytes < ss {
            return bad("od_track_bytes must hold at least one sector".into());
        }
        if self.shingle.overlap_tracks == 0 {
            return bad("overlap_tracks must be at least 1".into());
        }
        if self.media.stroke_tracks == Some(0) || self.media.strokes_per_surface == Some(0) {
            return bad("stroke_tracks and strokes_per_surface must be positive".into());
        }
        match (&self.interlace, self.kind) {
            (None, DriveKind::Imr) => {
                return bad("kind = \"imr\" needs an [interlace] table".into());
            }
            (Some(_), k) if k != DriveKind::Imr => {
                return bad(format!(
                    "[interlace] applies to kind = \"imr\" only, not {}",
                    k.name()
                ));
            }
            (Some(i), _) => {
                if !(i.bottom_top_ratio.is_finite() && (1.0..=4.0).contains(&i.bottom_top_ratio)) {
                    return bad(format!(
                        "interlace.bottom_top_ratio {} out of range 1..4",
                        i.bottom_top_ratio
                    ));
                }
                if self.shingle.overlap_tracks != 1 {
                    return bad("an imr drive is not shingled (overlap_tracks = 1)".into());
                }
            }
            (None, _) => {}
        }
        Ok(())
    }

    fn geometry_params(&self, cylinders: u64) -> GeometryParams {
        let stroke = match (self.media.strokes_per_surface, self.media.stroke_tracks) {
            (Some(s), _) => cylinders.div_ceil(s.max(1)),
            (None, Some(t)) => t,
            (None, None) => cylinders,
        };
        GeometryParams {
            sector_size: self.sector_size,
            rpm: self.media.rpm,
            heads: self.media.heads,
            cylinders,
            od_track_bytes: self.media.od_track_bytes,
            od_id_ratio: self.media.od_id_ratio,
            recording_zones: self.media.recording_zones,
            stroke: stroke.clamp(1, cylinders),
            serpentine: self.media.serpentine,
            interlace: self.interlace.as_ref().map(|i| i.bottom_top_ratio),
        }
    }

    /// Capacity of the full-size drive in bytes, rounded down to whole zones.
    pub fn full_capacity(&self) -> Result<u64> {
        let ss = self.sector_size as u64;
        let g = crate::mechanics::Mechanics::new(
            self.geometry_params(self.media.cylinders),
            &self.timing,
        )?;
        let bytes = g.geometry().total_sectors() * ss;
        Ok(bytes / self.zones.zone_size * self.zones.zone_size)
    }

    /// Builds the mechanics for this configuration's capacity.
    pub fn mechanics(&self) -> Result<crate::mechanics::Mechanics> {
        self.validate()?;
        let ss = self.sector_size as u64;
        let need = self.capacity / ss;
        let full = crate::mechanics::Mechanics::new(
            self.geometry_params(self.media.cylinders),
            &self.timing,
        )?;
        let full_sectors = full.geometry().total_sectors();
        if need > full_sectors {
            return Err(DeviceError::Config(format!(
                "capacity {} exceeds the profile's full drive ({} bytes); raise media.cylinders or heads",
                self.capacity,
                full_sectors * ss
            )));
        }
        if self.span == Span::Partition || need == full_sectors {
            return Ok(full);
        }
        // Scaled: the fewest cylinders (on the same radii) that hold the capacity.
        let (mut lo, mut hi) = (2u64, self.media.cylinders);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let m = crate::mechanics::Mechanics::new(self.geometry_params(mid), &self.timing)?;
            if m.geometry().total_sectors() >= need {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        crate::mechanics::Mechanics::new(self.geometry_params(lo), &self.timing)
    }

    /// The "CMR twin" of an interlaced configuration: the same geometry and timing with
    /// bottom-track writes damaging nothing (the paper's CMR baseline). Other kinds unchanged.
    pub fn cmr_twin(&self) -> DiskConfig {
        let mut c = self.clone();
        if let Some(i) = &mut c.interlace {
            i.damage = false;
        }
        c
    }

    /// Zone size in sectors.
    pub fn zone_sectors(&self) -> u64 {
        self.zones.zone_size / self.sector_size as u64
    }

    /// Writable sectors of each sequential zone (the zone capacity, or the zone size).
    pub fn zone_capacity_sectors(&self) -> u64 {
        self.zones.zone_capacity.unwrap_or(self.zones.zone_size) / self.sector_size as u64
    }

    /// Number of zones.
    pub fn zone_count(&self) -> u32 {
        (self.capacity / self.zones.zone_size) as u32
    }

    /// Number of conventional zones.
    pub fn conventional_zones(&self) -> u32 {
        let n = self.zone_count();
        match self.kind {
            DriveKind::Cmr | DriveKind::SmrRaw | DriveKind::Imr => n,
            DriveKind::HmSmr | DriveKind::HaSmr => {
                let c = self.zones.conventional_zones.unwrap_or_else(|| {
                    ((n as f64 * self.zones.conventional_fraction).ceil() as u32).max(1)
                });
                c.min(n)
            }
        }
    }

    /// Type of the sequential zones.
    pub fn seq_zone_type(&self) -> ZoneType {
        match self.kind {
            DriveKind::HaSmr => ZoneType::SeqWritePreferred,
            _ => ZoneType::SeqWriteRequired,
        }
    }

    /// Band layout of the media.
    pub fn band_layout(&self) -> BandLayout {
        if self.shingle.overlap_tracks <= 1 {
            return BandLayout::None;
        }
        let ss = self.sector_size as u64;
        match self.kind {
            DriveKind::Cmr | DriveKind::Imr => BandLayout::None,
            DriveKind::HmSmr | DriveKind::HaSmr => BandLayout::Lba {
                unshingled_sectors: self.conventional_zones() as u64 * self.zone_sectors(),
                band_sectors: self.zone_sectors(),
            },
            DriveKind::SmrRaw => BandLayout::Tracks {
                unshingled_sectors: self.shingle.unshingled_prefix / ss,
                band_tracks: self.shingle.band_tracks.unwrap_or(16),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_resolves_and_has_plausible_capacity() {
        for p in PROFILES {
            let c = profile(p).expect("profile");
            c.validate().expect("valid");
            let tb = c.capacity as f64 / 1e12;
            if p == "imr-paper" {
                // The slides' emulated 100 GB drive.
                assert!(tb > 0.09 && tb < 0.11, "{p}: {tb} TB");
            } else {
                assert!(tb > 3.0 && tb < 16.0, "{p}: {tb} TB");
            }
        }
    }

    #[test]
    fn toml_overrides_start_from_the_named_profile() {
        let c = DiskConfig::from_toml(
            "profile = \"cmr-7200\"\ncapacity = \"8GiB\"\n[media]\nrpm = 5400\n",
        )
        .expect("config");
        assert_eq!(c.kind, DriveKind::Cmr);
        assert_eq!(c.capacity, 8 << 30);
        assert_eq!(c.media.rpm, 5400);
        assert_eq!(c.media.heads, 10);
        assert!(DiskConfig::from_toml("profile = \"nope\"").is_err());
        assert!(DiskConfig::from_toml("capacity = \"4GiB\"\nbogus = 1").is_err());
        let back = DiskConfig::from_toml(&c.to_toml()).expect("round trip");
        assert_eq!(back, c);
    }

    #[test]
    fn dotted_overrides_apply_and_are_checked() {
        let mut c = profile("hm-smr").expect("profile");
        c.set("capacity", "\"4GiB\"").expect("set");
        c.set("zones.zone_size", "64MiB").expect("set");
        assert_eq!(c.zones.zone_size, 64 << 20);
        assert!(c.set("media.nope", "1").is_err());
        assert!(c.set("media.rpm", "fast").is_err());
    }

    #[test]
    fn interlace_is_checked_and_round_trips() {
        let c = profile("imr").expect("profile");
        let back = DiskConfig::from_toml(&c.to_toml()).expect("round trip");
        assert_eq!(back, c);
        let mut t = c.cmr_twin();
        assert_eq!(t.interlace.as_ref().map(|i| i.damage), Some(false));
        t.set("interlace.damage", "true").expect("set");
        assert_eq!(t, c);
        let mut bad = c.clone();
        bad.interlace = None;
        assert!(bad.validate().is_err());
        let mut bad = profile("cmr-7200").expect("profile");
        bad.interlace = c.interlace.clone();
        assert!(bad.validate().is_err());
        // A configuration of another kind has no [interlace] table in its TOML.
        assert!(!profile("hm-smr")
            .expect("profile")
            .to_toml()
            .contains("interlace"));
    }

    #[test]
    fn scaled_capacity_uses_fewer_cylinders() {
        let mut c = profile("hm-smr").expect("profile");
        c.capacity = 4 << 30;
        let m = c.mechanics().expect("mechanics");
        assert!(m.geometry().total_sectors() * 4096 >= 4 << 30);
        assert!(m.geometry().params().cylinders < 1000);
        c.span = Span::Partition;
        let m = c.mechanics().expect("mechanics");
        assert_eq!(m.geometry().params().cylinders, 557_000);
    }
}
