//! `tegula disk …` on drive-managed SMR images (`kind = "dm-smr"`): create, info, stats, read,
//! write and dump. A dm-smr drive is a plain block device behind a shingle translation layer;
//! it has no zones, so the zone commands refuse it with a clear message.

use super::create::{CreateArgs, OnOff};
use super::size_arg;
use crate::output;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use tegula_device::{format_size, BlockDevice, DeviceInfo, Stats};
use tegula_stl::image::{decode_drive_state, decode_header, scan_metadata, DM_HEADER_REGION};
use tegula_stl::{DmConfig, DmDrive, StlStats};

/// Whether `path` is a drive-managed SMR image.
pub fn is_dm(path: &Path) -> bool {
    tegula_stl::is_dm_image(path)
}

/// Whether a configuration file asks for a drive-managed drive.
pub fn is_dm_config(text: &str) -> bool {
    DmConfig::is_dm_smr_toml(text)
}

/// Opens a drive-managed image read-only; with `past_writer`, at once even while another
/// process writes it (as that process last saved it).
fn open(path: &Path, past_writer: bool) -> Result<DmDrive> {
    let mut spec = crate::device::Spec::new(path, crate::device::Access::ReadOnly);
    spec.read_past_writer = past_writer;
    match crate::device::open(&spec)? {
        crate::device::Opened::Dm(d) => Ok(d),
        _ => bail!("{} is not a dm-smr image", path.display()),
    }
}

/// Runs `disk create --config drive.toml IMAGE` for a `kind = "dm-smr"` configuration.
pub fn create(a: &CreateArgs, text: &str) -> Result<()> {
    let mut cfg = DmConfig::from_toml(text)
        .with_context(|| format!("{}", a.config.as_deref().unwrap_or(Path::new("")).display()))?;
    for (flag, given) in [
        ("--zone-size", a.zone_size.is_some()),
        ("--conv-zones", a.conv_zones.is_some()),
        ("--sector-size", a.sector_size.is_some()),
        ("--span", a.span.is_some()),
    ] {
        if given {
            bail!("{flag} does not apply to a drive-managed (dm-smr) drive: it has no zones and its sector size and geometry come from its media profile");
        }
    }
    for kv in &a.set {
        let (k, v) = kv
            .split_once('=')
            .with_context(|| format!("--set {kv}: expected KEY=VALUE, e.g. cache_size=8GiB"))?;
        cfg.set(k.trim(), v.trim())
            .with_context(|| format!("--set {kv}"))?;
    }
    if let Some(c) = &a.capacity {
        cfg.capacity = size_arg("--capacity", c)?;
    }
    if a.no_data {
        cfg.store_data = false;
    }
    if let Some(w) = a.write_cache {
        cfg.volatile_cache = w == OnOff::On;
    }
    cfg.validate()?;
    if a.image.exists() {
        bail!(
            "{} already exists; refusing to overwrite it (remove it first)",
            a.image.display()
        );
    }
    let drive = match DmDrive::create_image(&a.image, cfg) {
        Ok(d) => d,
        Err(e) => {
            // Leave nothing half-made behind (the file did not exist before).
            let _ = std::fs::remove_file(&a.image);
            return Err(e.into());
        }
    };
    let summary = summary(&drive, &a.image);
    drive
        .close()
        .with_context(|| format!("closing {}", a.image.display()))?;
    println!("created {}", a.image.display());
    output::print_kv(&summary);
    Ok(())
}

fn summary(d: &DmDrive, path: &Path) -> Vec<(String, String)> {
    let c = d.config();
    let info = d.info();
    let mut kv: Vec<(String, String)> = vec![
        ("path".into(), path.display().to_string()),
        (
            "kind".into(),
            format!(
                "dm-smr: drive-managed SMR, {} translation layer",
                stl_name(c)
            ),
        ),
        (
            "capacity".into(),
            format!(
                "{} ({} sectors of {} bytes)",
                format_size(info.capacity_bytes()),
                info.capacity_sectors,
                info.sector_size
            ),
        ),
        ("media".into(), c.media.clone()),
        (
            "band size".into(),
            if c.band_size == 0 {
                "track bands of the media".into()
            } else {
                format_size(c.band_size)
            },
        ),
        (
            "persistent cache".into(),
            format!(
                "{} on {}{}",
                format_size(c.cache_size),
                format!("{:?}", c.cache_media).to_lowercase(),
                if c.cache_media == tegula_stl::CacheMedia::Disk {
                    format!(" at {}", format!("{:?}", c.cache_location).to_lowercase())
                } else {
                    String::new()
                }
            ),
        ),
        (
            "cleaning".into(),
            format!(
                "{:?} (idle before cleaning {}), {:?} mapping",
                c.cleaning,
                output::duration(c.idle_before_cleaning),
                c.mapping
            )
            .to_lowercase(),
        ),
        (
            "volatile cache".into(),
            if c.volatile_cache {
                format!("on, {}", format_size(c.volatile_cache_size))
            } else {
                "off".into()
            },
        ),
        (
            "data".into(),
            if c.store_data {
                "stored (sparse image)".into()
            } else {
                "metadata only (reads return zeros)".into()
            },
        ),
    ];
    if let Ok(m) = std::fs::metadata(path) {
        kv.push((
            "image".into(),
            format!(
                "{} apparent, {} allocated",
                format_size(m.len()),
                format_size(m.blocks() * 512)
            ),
        ));
    }
    kv
}

fn stl_name(c: &DmConfig) -> &'static str {
    match c.stl {
        tegula_stl::StlKind::Journal => "journal",
        tegula_stl::StlKind::SetAssociative => "set-associative",
        tegula_stl::StlKind::FullyAssociative => "fully-associative",
    }
}

#[derive(Serialize)]
struct InfoJson<'a> {
    path: String,
    info: DeviceInfo,
    capacity_bytes: u64,
    now_ns: u64,
    config: &'a DmConfig,
    stl: StlStats,
}

/// `disk info` on a dm-smr image.
pub fn info(path: &Path, json: bool) -> Result<()> {
    let d = open(path, true)?;
    if json {
        let info = d.info();
        return output::print_json(&InfoJson {
            path: path.display().to_string(),
            capacity_bytes: info.capacity_bytes(),
            info,
            now_ns: d.now(),
            config: d.config(),
            stl: d.stl_stats(),
        });
    }
    let mut kv = summary(&d, path);
    kv.push(("model".into(), d.info().model));
    let s = d.stl_stats();
    kv.push((
        "cache occupancy".into(),
        format!(
            "{} of {} used, {} live",
            format_size(s.cache_used_bytes),
            format_size(s.cache_bytes),
            format_size(s.cache_live_bytes)
        ),
    ));
    kv.push((
        "map entries".into(),
        format!("{} of {}", s.map_entries, s.map_entries_max),
    ));
    kv.push(("virtual clock".into(), output::duration(d.now())));
    output::print_kv(&kv);
    Ok(())
}

#[derive(Serialize)]
struct StatsJson {
    path: String,
    now_ns: u64,
    stl: StlStats,
    media: Stats,
}

/// The translation-layer statistics as `key: value` lines.
pub fn stl_summary(s: &StlStats) -> Vec<(String, String)> {
    vec![
        ("translation layer".into(), s.stl.clone()),
        (
            "cache occupancy".into(),
            format!(
                "{} of {} used ({}), {} live",
                format_size(s.cache_used_bytes),
                format_size(s.cache_bytes),
                output::percent(s.cache_used_bytes, s.cache_bytes),
                format_size(s.cache_live_bytes)
            ),
        ),
        (
            "journal entries".into(),
            format!(
                "{} written, {} live",
                s.journal_entries, s.journal_entries_live
            ),
        ),
        (
            "map entries".into(),
            format!("{} of {}", s.map_entries, s.map_entries_max),
        ),
        ("map merges".into(), s.map_merges.to_string()),
        ("cleaning runs".into(), s.cleaning_runs.to_string()),
        ("bands cleaned".into(), s.bands_cleaned.to_string()),
        ("cleaning read".into(), format_size(s.cleaning_bytes_read)),
        (
            "cleaning written".into(),
            format_size(s.cleaning_bytes_written),
        ),
        ("time cleaning".into(), output::duration(s.cleaning_ns)),
        ("bypass writes".into(), s.bypass_writes.to_string()),
        ("salvaged sectors".into(), s.salvaged_sectors.to_string()),
        (
            "recoveries".into(),
            format!(
                "{} (last replayed {} records)",
                s.recoveries, s.replayed_records
            ),
        ),
    ]
}

/// `disk stats` on a dm-smr image.
pub fn stats(path: &Path, json: bool) -> Result<()> {
    let d = open(path, false)?;
    let s = d.stl_stats();
    let m = d.media_stats();
    if json {
        return output::print_json(&StatsJson {
            path: path.display().to_string(),
            now_ns: d.now(),
            stl: s,
            media: m,
        });
    }
    output::print_kv(&stl_summary(&s));
    println!();
    println!("raw media:");
    output::print_kv(&output::stats_summary(&m, d.now()));
    Ok(())
}

/// `disk dump` on a dm-smr image: header, drive-state slots and metadata slots, decoded.
pub fn dump(path: &Path) -> Result<()> {
    let (file, _size, hb) = super::dump::open_header(path, DM_HEADER_REGION)?;
    let h =
        decode_header(&hb).map_err(|p| anyhow::anyhow!("dm-smr image {}: {p}", path.display()))?;
    println!(
        "\n== header (tegula dm-smr image, version {}) ==",
        h.version
    );
    output::print_kv(&[
        (
            "drive state slots".into(),
            format!(
                "A at {}, B at {} ({} bytes each)",
                h.state_offset,
                h.state_offset + h.state_slot,
                h.state_slot
            ),
        ),
        (
            "metadata slots".into(),
            format!(
                "0 at {}, 1 at {} ({} each, sparse)",
                h.meta_offset,
                h.meta_offset + h.meta_slot,
                format_size(h.meta_slot)
            ),
        ),
        (
            "media data".into(),
            if h.config.store_data {
                format!("from offset {}", h.data_offset)
            } else {
                "none (metadata only)".into()
            },
        ),
        (
            "flash data".into(),
            if h.flash_offset > 0 {
                format!("from offset {}", h.flash_offset)
            } else {
                "none".into()
            },
        ),
    ]);
    println!("\n== configuration ==");
    print!("{}", h.config.to_toml());
    println!("\n== drive state slots ==");
    let mut best: Option<tegula_stl::image::DriveState> = None;
    for (i, name) in ['A', 'B'].into_iter().enumerate() {
        let off = h.state_offset + i as u64 * h.state_slot;
        let mut b = vec![0u8; h.state_slot.min(64 << 20) as usize];
        if let Err(e) = file.read_exact_at(&mut b, off) {
            println!("slot {name} at offset {off}: unreadable: {e}");
            continue;
        }
        match decode_drive_state(&b) {
            Ok(s) => {
                println!(
                    "slot {name} at offset {off}: valid, seq {}, clock {}, {} destroyed ranges",
                    s.seq,
                    output::duration(s.media.now),
                    s.media.destroyed.len()
                );
                if best.as_ref().is_none_or(|x| s.seq > x.seq) {
                    best = Some(s);
                }
            }
            Err(p) => println!("slot {name} at offset {off}: invalid: {p}"),
        }
    }
    println!("\n== metadata slots ==");
    for (i, s) in scan_metadata(path, &h)?.iter().enumerate() {
        match s.checkpoint {
            Some((gen, bytes)) => println!(
                "slot {i}: checkpoint generation {gen} ({bytes} bytes), {} records ({} bytes)",
                s.records, s.record_bytes
            ),
            None => println!("slot {i}: no valid checkpoint"),
        }
    }
    let Some(st) = best else {
        bail!("dm-smr image {}: no valid drive state", path.display());
    };
    println!("\n== translation layer (newest drive state) ==");
    output::print_kv(&stl_summary(&st.stl));
    Ok(())
}
