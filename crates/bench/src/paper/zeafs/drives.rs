//! The two drives under ext4: the conventional `cmr-7200` and a drive-managed SMR drive.

use super::ext4;
use super::probe::{disk_counters, dm_counters, instrument};
use super::run::{size_text, Run};
use super::ZeafsOptions;
use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::stl::new_drive;
use std::path::Path;
use std::sync::Arc;
use tegula_device::{profile, Disk};
use tegula_stl::{DmConfig, DmDrive};

/// ext4 on the conventional `cmr-7200` drive.
pub(super) fn cmr(a: &ZeafsOptions, tmp: &Path, obs: &dyn Observer) -> Result<Run> {
    let mut cfg = profile("cmr-7200").map_err(|e| Error::invalid(e.to_string()))?;
    cfg.capacity = a.capacity;
    let disk = Arc::new(
        Disk::in_memory(cfg).map_err(|e| Error::device("creating the cmr-7200 drive", e))?,
    );
    let (counted, probe, counters) = instrument(disk, |d: &Disk| d.stats().busy_ns, disk_counters);
    ext4::run(
        "cmr",
        "ext4 on cmr-7200",
        format!("cmr-7200, {}", size_text(a.capacity)),
        counted,
        probe,
        counters,
        a,
        tmp,
        obs,
    )
}

/// The drive-managed SMR drive: `dm_config` (the Seagate ST5000AS0011 journal STL with data)
/// at `capacity`, its persistent cache scaled by the same factor as the capacity, the
/// volatile write cache on (as on the other two drives) and `dm_set` overrides applied last.
/// Returns the configuration and what was changed.
fn dm_config(a: &ZeafsOptions) -> Result<(DmConfig, Vec<String>)> {
    let mut cfg = crate::paper::stl::read_config(&a.dm_config)?;
    let mut changes = Vec::new();
    let full = cfg.capacity;
    if a.capacity != full {
        let cache = ((cfg.cache_size as f64 * a.capacity as f64 / full as f64) as u64) >> 20 << 20;
        changes.push(format!(
            "capacity {} (from {:.1} TB), cache_size {} MiB (from {} GiB, the same fraction)",
            size_text(a.capacity),
            full as f64 / 1e12,
            cache >> 20,
            cfg.cache_size >> 30
        ));
        cfg.capacity = a.capacity;
        cfg.cache_size = cache;
    }
    if !cfg.volatile_cache {
        let wc = profile("cmr-7200")
            .map_err(|e| Error::invalid(e.to_string()))?
            .cache
            .size;
        cfg.volatile_cache = true;
        cfg.volatile_cache_size = wc;
        changes.push(format!(
            "volatile_cache on, {} MiB (as the other drives' write caches)",
            wc >> 20
        ));
    }
    for (k, v) in &a.dm_set {
        cfg.set(k, v)
            .map_err(|e| Error::invalid(format!("--dm-set {k}={v}: {e}")))?;
        changes.push(format!("{k} = {v}"));
    }
    cfg.validate()
        .map_err(|e| Error::invalid(format!("{}: {e}", a.dm_config.display())))?;
    Ok((cfg, changes))
}

/// ext4 on the drive-managed SMR drive.
pub(super) fn dm(a: &ZeafsOptions, tmp: &Path, obs: &dyn Observer) -> Result<Run> {
    let (cfg, changes) = dm_config(a)?;
    let drive = Arc::new(new_drive(&cfg)?);
    let (counted, probe, counters) = instrument(
        drive.clone(),
        |d: &DmDrive| d.media_stats().busy_ns,
        dm_counters,
    );
    let file = a
        .dm_config
        .file_name()
        .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let mut r = ext4::run(
        "dm",
        "ext4 on dm-smr",
        format!("dm-smr ({file}: {})", changes.join("; ")),
        counted,
        probe,
        counters,
        a,
        tmp,
        obs,
    )?;
    let s = drive.stl_stats();
    r.notes.push(format!(
        "drive-managed SMR at the end: cache {} of {} MiB used, map {} of {} entries",
        s.cache_used_bytes >> 20,
        s.cache_bytes >> 20,
        s.map_entries,
        s.map_entries_max
    ));
    Ok(r)
}
