//! `disk info` and `disk stats` of a real Linux zoned block device: what sysfs and the zone
//! report say (a real device keeps no write counters: the bytes shown are the data below the
//! write pointers now).

use super::Access;
use crate::device::{self, Opened, PathKind, Spec};
use crate::output;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use tegula_device::{format_size, BlockDevice, DeviceInfo, Zbd, Zone, ZoneFilter, ZonedDevice};

/// Opens `path` as a zoned block device if it is one.
pub fn open(path: &Path, access: Access) -> Result<Option<Zbd>> {
    if device::kind_of(path) != PathKind::ZonedBlock {
        return Ok(None);
    }
    match device::open(&Spec::new(path, access))? {
        Opened::Zbd(d) => Ok(Some(d)),
        _ => anyhow::bail!("{} did not open as a zoned block device", path.display()),
    }
}

/// What sysfs says, as `disk info --json` prints it.
#[derive(Serialize)]
struct LimitsJson {
    zoned: &'static str,
    chunk_sectors: u64,
    nr_zones: u32,
    max_open_zones: u32,
    max_active_zones: u32,
    logical_block_size: u32,
    physical_block_size: u32,
    zone_append_max_bytes: u64,
    model: String,
}

#[derive(Serialize)]
struct InfoJson {
    path: String,
    info: DeviceInfo,
    capacity_bytes: u64,
    sysfs: LimitsJson,
    zone_conditions: BTreeMap<&'static str, usize>,
    bytes_below_write_pointers: u64,
}

fn bytes_below_write_pointers(zones: &[Zone], ss: u64) -> u64 {
    zones
        .iter()
        .filter(|z| z.zone_type.is_sequential())
        .map(|z| z.written_sectors() * ss)
        .sum()
}

/// `disk info` of a zoned block device.
pub fn info(d: &Zbd, path: &Path, json: bool) -> Result<()> {
    let info = d.info();
    let l = d.limits();
    let zones = d.report_zones(ZoneFilter::All);
    let ss = u64::from(info.sector_size);
    let below = bytes_below_write_pointers(&zones, ss);
    if json {
        let mut counts = BTreeMap::new();
        for z in &zones {
            *counts.entry(z.condition.name()).or_insert(0) += 1;
        }
        return output::print_json(&InfoJson {
            path: path.display().to_string(),
            capacity_bytes: info.capacity_bytes(),
            sysfs: LimitsJson {
                zoned: l.zoned.name(),
                chunk_sectors: l.zone_bytes / 512,
                nr_zones: l.nr_zones,
                max_open_zones: l.max_open_zones,
                max_active_zones: l.max_active_zones,
                logical_block_size: l.logical_block_size,
                physical_block_size: l.physical_block_size,
                zone_append_max_bytes: l.zone_append_max_bytes,
                model: l.model.clone(),
            },
            info,
            zone_conditions: counts,
            bytes_below_write_pointers: below,
        });
    }
    let seq = info.zones - info.conventional_zones;
    let seq_type = zones
        .iter()
        .find(|z| z.zone_type.is_sequential())
        .map_or("sequential", |z| z.zone_type.name());
    let mut kv: Vec<(String, String)> = vec![
        ("device".into(), path.display().to_string()),
        ("model".into(), l.model.clone()),
        (
            "kind".into(),
            format!("Linux zoned block device ({})", l.zoned.name()),
        ),
        (
            "capacity".into(),
            format!(
                "{} ({} bytes, {} sectors)",
                format_size(info.capacity_bytes()),
                info.capacity_bytes(),
                info.capacity_sectors
            ),
        ),
        (
            "sector size".into(),
            format!(
                "{} B as tegula uses it (logical block {} B, physical {} B)",
                ss, l.logical_block_size, l.physical_block_size
            ),
        ),
        (
            "zones".into(),
            format!(
                "{} x {} ({} conventional, {} {})",
                info.zones,
                format_size(info.zone_sectors * ss),
                info.conventional_zones,
                seq,
                seq_type
            ),
        ),
    ];
    kv.extend(output::zone_limits(&info));
    if l.zone_append_max_bytes > 0 {
        kv.push((
            "zone append".into(),
            format!("up to {} per command", format_size(l.zone_append_max_bytes)),
        ));
    }
    kv.push(("zone conditions".into(), output::condition_counts(&zones)));
    kv.push((
        "data".into(),
        format!(
            "{} below the write pointers of the sequential zones",
            format_size(below)
        ),
    ));
    kv.push(("clock".into(), "wall time".into()));
    output::print_kv(&kv);
    Ok(())
}

#[derive(Serialize)]
struct ZoneStat {
    #[serde(flatten)]
    zone: Zone,
    bytes_below_write_pointer: u64,
}

#[derive(Serialize)]
struct StatsJson {
    path: String,
    bytes_below_write_pointers: u64,
    zones: Vec<ZoneStat>,
}

/// `disk stats` of a zoned block device: the zones holding data and the data they hold.
pub fn stats(d: &Zbd, path: &Path, json: bool, all: bool) -> Result<()> {
    let info = d.info();
    let ss = u64::from(info.sector_size);
    let zones: Vec<Zone> = d
        .report_zones(ZoneFilter::All)
        .into_iter()
        .filter(|z| all || (z.zone_type.is_sequential() && z.written_sectors() > 0))
        .collect();
    let below = bytes_below_write_pointers(&zones, ss);
    if json {
        return output::print_json(&StatsJson {
            path: path.display().to_string(),
            bytes_below_write_pointers: below,
            zones: zones
                .into_iter()
                .map(|z| ZoneStat {
                    bytes_below_write_pointer: if z.zone_type.is_sequential() {
                        z.written_sectors() * ss
                    } else {
                        0
                    },
                    zone: z,
                })
                .collect(),
        });
    }
    if zones.is_empty() {
        println!("no sequential zone holds data (use --all to list every zone)");
    } else {
        let mut bytes = vec![0u64; info.zones as usize];
        for z in &zones {
            if let Some(b) = bytes.get_mut(z.index as usize) {
                *b = if z.zone_type.is_sequential() {
                    z.written_sectors() * ss
                } else {
                    0
                };
            }
        }
        print!(
            "{}",
            output::zone_table(&zones, Some(&bytes), output::Unit::Lba, info.sector_size)
        );
    }
    println!();
    output::print_kv(&[
        (
            "data".into(),
            format!(
                "{} below the write pointers ({} zones hold data)",
                format_size(below),
                zones
                    .iter()
                    .filter(|z| z.zone_type.is_sequential() && z.written_sectors() > 0)
                    .count()
            ),
        ),
        (
            "note".into(),
            "a real device keeps no write counters: written = data below each write pointer now"
                .into(),
        ),
    ]);
    Ok(())
}
