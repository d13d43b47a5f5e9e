//! Read-only views of an image: `disk info`, `disk report`, `disk stats`, `disk profiles`.

use super::{open_zoned, Access, ImageArg};
use crate::device::Spec;
use crate::output::{self, Align, Table};
use anyhow::{anyhow, Result};
use clap::Args;
use serde::Serialize;
use tegula_device::{
    format_size, profile, BlockDevice, DeviceInfo, DiskConfig, Zone, ZoneFilter, ZonedDevice,
    PROFILES,
};

/// Arguments of `disk info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Print JSON (device info, configuration, geometry, zone counts).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct GeometryJson {
    cylinders: u64,
    od_sectors_per_track: u64,
    id_sectors_per_track: u64,
    /// Interlaced drives: whole tracks of each kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    bottom_tracks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_tracks: Option<u64>,
}

#[derive(Serialize)]
struct InfoJson<'a> {
    path: String,
    info: DeviceInfo,
    capacity_bytes: u64,
    geometry: GeometryJson,
    zone_conditions: std::collections::BTreeMap<&'static str, usize>,
    now_ns: u64,
    config: &'a DiskConfig,
    /// A drive formatted drive-managed IMR: its layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    drive_managed: Option<super::dmimr::DmImrJson>,
}

/// Runs `disk info`.
pub fn info(a: InfoArgs) -> Result<()> {
    if let Some(d) = super::real::open(&a.img.image, Access::ReadOnly)? {
        return super::real::info(&d, &a.img.image, a.json);
    }
    if super::dm::is_dm(&a.img.image) {
        return super::dm::info(&a.img.image, a.json);
    }
    // Figures only: an image a mount or server holds is read at once, as it last saved it.
    let mut spec = Spec::new(&a.img.image, Access::ReadOnly);
    spec.read_past_writer = true;
    let disk = super::open_raw(&spec)?;
    let (disk, dm) = super::dmimr::describe(disk)?;
    let (dm_kv, dm_json) = dm.unwrap_or_default();
    let zones = disk.report_zones(ZoneFilter::All);
    if a.json {
        let (cylinders, od, id) = output::tracks(&disk);
        let mut counts = std::collections::BTreeMap::new();
        for z in &zones {
            *counts.entry(z.condition.name()).or_insert(0) += 1;
        }
        let info = disk.info();
        let kinds = disk.track_layout().map(|l| l.kind_counts());
        return output::print_json(&InfoJson {
            path: a.img.image.display().to_string(),
            capacity_bytes: info.capacity_bytes(),
            info,
            geometry: GeometryJson {
                cylinders,
                od_sectors_per_track: od,
                id_sectors_per_track: id,
                bottom_tracks: kinds.map(|k| k.0),
                top_tracks: kinds.map(|k| k.1),
            },
            zone_conditions: counts,
            now_ns: disk.now(),
            config: disk.config(),
            drive_managed: dm_json,
        });
    }
    let mut kv = output::disk_summary(&disk, Some(&a.img.image));
    kv.push(("model".into(), disk.info().model));
    kv.push(("zone conditions".into(), output::condition_counts(&zones)));
    let stats = disk.stats();
    kv.push((
        "written".into(),
        format!(
            "{} by the host in {} writes",
            format_size(stats.bytes_written),
            stats.writes
        ),
    ));
    kv.push(("virtual clock".into(), output::duration(disk.now())));
    kv.extend(dm_kv);
    output::print_kv(&kv);
    Ok(())
}

/// Arguments of `disk report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Print a JSON array of zones.
    #[arg(long)]
    json: bool,
    /// Only zones in this condition: empty, open, closed, full, implicit-open, explicit-open,
    /// read-only, offline, not-write-pointer.
    #[arg(long, value_name = "COND")]
    condition: Option<String>,
    /// First zone to report (like `blkzone report --offset`, in zones).
    #[arg(long, value_name = "Z", default_value_t = 0)]
    zone: u32,
    /// Most zones to report (like `blkzone report --count`).
    #[arg(long, value_name = "N")]
    count: Option<u32>,
    /// Unit of start, length and write pointer: the drive's logical blocks (lba), 512-byte
    /// sectors as blkzone prints them (sector), or bytes (byte).
    #[arg(long, value_enum, default_value_t = output::Unit::Lba)]
    unit: output::Unit,
}

/// Parses a `--condition` filter.
pub fn parse_filter(s: Option<&str>) -> Result<ZoneFilter> {
    match s {
        None => Ok(ZoneFilter::All),
        Some(c) => c
            .parse::<ZoneFilter>()
            .map_err(|e| anyhow!("--condition: {e}")),
    }
}

/// Runs `disk report`.
pub fn report(a: ReportArgs) -> Result<()> {
    let filter = parse_filter(a.condition.as_deref())?;
    let handle = open_zoned(&a.img.image, Access::ReadOnly)?;
    let disk = handle.dev();
    let info = disk.info();
    if a.zone >= info.zones {
        anyhow::bail!(
            "--zone {}: the device has {} zones (0..{})",
            a.zone,
            info.zones,
            info.zones
        );
    }
    let zones: Vec<Zone> = disk
        .report_zones(filter)
        .into_iter()
        .filter(|z| z.index >= a.zone)
        .take(a.count.map_or(usize::MAX, |c| c as usize))
        .collect();
    if a.json {
        return output::print_json(&zones);
    }
    let unit = |lbas: u64| a.unit.of(lbas, info.sector_size);
    let unit_name = a.unit.name(info.sector_size);
    println!(
        "{}: {} zones of {} {unit_name} ({}){}; {}-byte logical blocks; {} reported",
        a.img.image.display(),
        info.zones,
        unit(info.zone_sectors),
        format_size(info.zone_sectors * info.sector_size as u64),
        if info.zone_capacity_sectors < info.zone_sectors {
            format!(
                " with a capacity of {} ({})",
                unit(info.zone_capacity_sectors),
                format_size(info.zone_capacity_sectors * info.sector_size as u64)
            )
        } else {
            String::new()
        },
        info.sector_size,
        zones.len()
    );
    print!(
        "{}",
        output::zone_table(&zones, None, a.unit, info.sector_size)
    );
    Ok(())
}

/// Arguments of `disk stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    img: ImageArg,
    /// Print JSON: the statistics and the zone list.
    #[arg(long)]
    json: bool,
    /// List every zone, not only the written or non-empty ones.
    #[arg(long)]
    all: bool,
}

#[derive(Serialize)]
struct ZoneStat {
    #[serde(flatten)]
    zone: Zone,
    bytes_written: u64,
}

#[derive(Serialize)]
struct StatsJson {
    path: String,
    now_ns: u64,
    stats: tegula_device::Stats,
    /// Sectors that read back as media errors now (shingled or interlaced damage).
    destroyed_sectors: u64,
    zones: Vec<ZoneStat>,
    /// A drive formatted drive-managed IMR: its layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    drive_managed: Option<super::dmimr::DmImrJson>,
}

/// Runs `disk stats`.
pub fn stats(a: StatsArgs) -> Result<()> {
    if let Some(d) = super::real::open(&a.img.image, Access::ReadOnly)? {
        return super::real::stats(&d, &a.img.image, a.json, a.all);
    }
    if super::dm::is_dm(&a.img.image) {
        return super::dm::stats(&a.img.image, a.json);
    }
    let disk = super::open_raw(&Spec::new(&a.img.image, Access::ReadOnly))?;
    let (disk, dm) = super::dmimr::describe(disk)?;
    let (dm_kv, dm_json) = dm.unwrap_or_default();
    let s = disk.stats();
    let zones: Vec<Zone> = disk
        .report_zones(ZoneFilter::All)
        .into_iter()
        .filter(|z| {
            a.all
                || s.zone_bytes_written
                    .get(z.index as usize)
                    .is_some_and(|&b| b > 0)
                || !matches!(
                    z.condition,
                    tegula_device::ZoneCondition::Empty
                        | tegula_device::ZoneCondition::NotWritePointer
                )
        })
        .collect();
    if a.json {
        let zs = zones
            .into_iter()
            .map(|z| ZoneStat {
                bytes_written: s
                    .zone_bytes_written
                    .get(z.index as usize)
                    .copied()
                    .unwrap_or(0),
                zone: z,
            })
            .collect();
        return output::print_json(&StatsJson {
            path: a.img.image.display().to_string(),
            now_ns: disk.now(),
            stats: s,
            destroyed_sectors: output::destroyed_sectors(&disk),
            zones: zs,
            drive_managed: dm_json,
        });
    }
    if zones.is_empty() {
        println!("no zone has been written (use --all to list every zone)");
    } else {
        print!(
            "{}",
            output::zone_table(
                &zones,
                Some(&s.zone_bytes_written),
                output::Unit::Lba,
                disk.info().sector_size
            )
        );
    }
    println!();
    let mut kv = output::stats_summary(&s, disk.now());
    if disk.track_layout().is_some() {
        kv.push((
            "interlaced tracks".into(),
            format!(
                "{} to top tracks, {} to bottom tracks; {} top sectors destroyed by bottom \
                 writes, {} sectors unreadable now",
                tegula_device::format_size(s.top_bytes_written),
                tegula_device::format_size(s.bottom_bytes_written),
                s.interlace_destroyed_sectors,
                output::destroyed_sectors(&disk)
            ),
        ));
    }
    kv.extend(dm_kv);
    output::print_kv(&kv);
    Ok(())
}

/// Arguments of `disk profiles`.
#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Print each profile's full configuration as JSON.
    #[arg(long)]
    json: bool,
}

/// The JSON of `disk profiles --json`.
#[derive(Serialize)]
struct ProfilesJson {
    zoned: Vec<DiskConfig>,
    dm_smr: Vec<tegula_stl::DmConfig>,
}

/// Runs `disk profiles`.
pub fn profiles(a: ProfilesArgs) -> Result<()> {
    let cfgs = PROFILES
        .iter()
        .map(|p| profile(p))
        .collect::<Result<Vec<_>, _>>()?;
    if a.json {
        let dm = tegula_stl::DM_PROFILES
            .iter()
            .map(|(n, _)| tegula_stl::dm_profile(n).transpose())
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        return output::print_json(&ProfilesJson {
            zoned: cfgs,
            dm_smr: dm,
        });
    }
    let mut t = Table::new(&[
        ("profile", Align::Left),
        ("kind", Align::Left),
        ("capacity", Align::Right),
        ("sector", Align::Right),
        ("zone", Align::Right),
        ("conv", Align::Right),
        ("max open", Align::Right),
        ("rpm", Align::Right),
        ("heads", Align::Right),
        ("cylinders", Align::Right),
        ("OD track", Align::Right),
        ("overlap", Align::Right),
        ("cache", Align::Left),
    ]);
    for c in &cfgs {
        let conv = match c.kind {
            tegula_device::DriveKind::Cmr
            | tegula_device::DriveKind::SmrRaw
            | tegula_device::DriveKind::Imr => "all".to_string(),
            _ => format!("{:.2}%", c.zones.conventional_fraction * 100.0),
        };
        t.row(vec![
            c.profile.clone(),
            c.kind.name().to_string(),
            format!("{:.2} TB", c.capacity as f64 / 1e12),
            c.sector_size.to_string(),
            match c.zones.zone_capacity {
                Some(cap) if cap < c.zones.zone_size => format!(
                    "{} ({} cap)",
                    format_size(c.zones.zone_size),
                    format_size(cap)
                ),
                _ => format_size(c.zones.zone_size),
            },
            match c.zones.conventional_zones {
                Some(0) => "none".to_string(),
                _ => conv,
            },
            match (c.zones.max_open, c.zones.max_active) {
                (0, _) => "-".into(),
                (o, 0) => o.to_string(),
                (o, a) => format!("{o} ({a} active)"),
            },
            c.media.rpm.to_string(),
            c.media.heads.to_string(),
            c.media.cylinders.to_string(),
            format_size(c.media.od_track_bytes),
            c.shingle.overlap_tracks.to_string(),
            if c.cache.write_cache {
                format!("on {}", format_size(c.cache.size))
            } else {
                "off".into()
            },
        ]);
    }
    print!("{}", t.render());
    println!("\nDrive-managed SMR drives (a translation layer behind a block interface):");
    let mut t = Table::new(&[
        ("profile", Align::Left),
        ("stl", Align::Left),
        ("capacity", Align::Right),
        ("media", Align::Left),
        ("band", Align::Right),
        ("persistent cache", Align::Left),
        ("cleaning", Align::Left),
        ("data", Align::Left),
    ]);
    for (name, _) in tegula_stl::DM_PROFILES {
        let Some(c) = tegula_stl::dm_profile(name).transpose()? else {
            continue;
        };
        t.row(vec![
            name.to_string(),
            format!("{:?}", c.stl).to_lowercase(),
            format!("{:.2} TB", c.capacity as f64 / 1e12),
            c.media.clone(),
            if c.band_size == 0 {
                "tracks".into()
            } else {
                format_size(c.band_size)
            },
            format!(
                "{} {} at {}",
                format_size(c.cache_size),
                format!("{:?}", c.cache_media).to_lowercase(),
                format!("{:?}", c.cache_location).to_lowercase()
            ),
            format!("{:?}", c.cleaning).to_lowercase(),
            if c.store_data {
                "kept"
            } else {
                "metadata only"
            }
            .into(),
        ]);
    }
    print!("{}", t.render());
    println!("\nStart from one with `tegula disk create --profile NAME --capacity SIZE IMAGE`;");
    println!("override any key with --set KEY=VALUE or a TOML file (--config).");
    Ok(())
}
