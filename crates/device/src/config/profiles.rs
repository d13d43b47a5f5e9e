//! The built-in profiles: every default value of a drive configuration, by name.

use super::*;

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

pub(super) fn cmr_timing() -> TimingParams {
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
pub(super) fn unzoned(mib: u64) -> ZoneParams {
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
pub(super) fn built_in(
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
