//! `tegula db` on an interlaced (`imr`) disk image: `db create` formats a KVIMR store on it
//! (SSTables placed by LSM level on the drive's tracks, read-modify-write protecting the top
//! tracks; `tegula_open::KvimrDrive`) and SMRDB-LOC on the store's zoned view; the other
//! commands reopen it through the one device opener, which recognises the store by its
//! superblock. `db stats` adds the store's figures, `db check` its map check.

use crate::device::{self, Opened, PathKind, Spec};
use crate::signature::{self, Found};
use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use tegula_device::{format_size, Disk, ZonedDevice};
use tegula_open::kvimr::{self, Policy, RmwMode, Stats, ZonedAdapter};
use tegula_open::{KvimrDrive, KvimrFormat};
use tegula_smrdb::{Db, FormatOptions};

/// Track allocation policy of a KVIMR store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyArg {
    /// KVIMR's: deep (long-lived) levels on bottom tracks, L0 and L1 on top tracks, each
    /// level's files physically sequential.
    CompactionAware,
    /// Three-phase (Tracklace): bottoms only below 50% usage, then every other top, then all.
    ThreePhase,
    /// Tracks in physical order.
    Seq,
}

/// Read-modify-write scheme of a KVIMR store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RmwArg {
    /// KVIMR's merged RMW: one backup, one pass over the bottoms, one over the tops per
    /// SSTable persist (three syncs).
    Merged,
    /// Track by track (three syncs per bottom track with valid neighbours).
    Naive,
}

/// `db create`'s settings for an interlaced image (ignored by nothing: refused elsewhere).
#[derive(Debug, Clone, Default, Args)]
pub struct KvimrArgs {
    /// IMR image: SSTable (zone, band) size of the KVIMR store [default: 16MiB].
    #[arg(long, value_name = "SIZE")]
    pub sstable_size: Option<String>,
    /// IMR image: track allocation policy [default: compaction-aware].
    #[arg(long, value_enum)]
    pub policy: Option<PolicyArg>,
    /// IMR image: read-modify-write scheme [default: merged].
    #[arg(long, value_enum)]
    pub rmw: Option<RmwArg>,
}

impl KvimrArgs {
    fn given(&self) -> bool {
        self.sstable_size.is_some() || self.policy.is_some() || self.rmw.is_some()
    }

    /// The format these flags ask for, over [`KvimrFormat::default`].
    fn format(&self) -> Result<KvimrFormat> {
        let mut f = KvimrFormat::default();
        if let Some(s) =
            super::super::args::size_flag("--sstable-size", self.sstable_size.as_deref())?
        {
            if s < 1 << 20 || s % 4096 != 0 {
                bail!("--sstable-size {s}: give at least 1 MiB, a multiple of 4096 bytes");
            }
            f.zoned.zone_bytes = s;
        }
        if let Some(p) = self.policy {
            f.options.policy = match p {
                PolicyArg::CompactionAware => Policy::CompactionAware,
                PolicyArg::ThreePhase => Policy::ThreePhase,
                PolicyArg::Seq => Policy::Seq,
            };
        }
        if let Some(r) = self.rmw {
            f.options.rmw = match r {
                RmwArg::Merged => RmwMode::Merged,
                RmwArg::Naive => RmwMode::Naive,
            };
        }
        Ok(f)
    }
}

/// Refuses the KVIMR flags on a device that is not an interlaced image.
pub fn refuse_flags_off_imr(a: &KvimrArgs, image: &Path) -> Result<()> {
    if a.given() {
        bail!(
            "--sstable-size, --policy and --rmw apply to an interlaced (imr) disk image, which \
             `db create` formats with a KVIMR store; {} is not one",
            image.display()
        );
    }
    Ok(())
}

/// Why a drive-managed IMR image holds no database.
pub fn refuse_drive_managed(image: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is a drive-managed IMR drive (made with `disk create --drive-managed`): a block \
         device without zones, whose translation layer hides the tracks, so SMRDB cannot keep \
         a database on it (serve it with `tegula serve nbd`). To keep a database on an IMR \
         drive, create the image without --drive-managed: `tegula db create` then formats a \
         KVIMR store that places SSTables on the tracks itself",
        image.display()
    )
}

/// `db create` on a disk image: formats a KVIMR store and SMRDB-LOC on it when the image is
/// interlaced (raw, or already a KVIMR store and `force`) and gives `None`; refuses a
/// drive-managed IMR image; gives any other image back, opened, for the usual path.
pub fn create(spec: &Spec, image: &Path, a: &KvimrArgs, force: bool) -> Result<Option<Opened>> {
    let opened = match device::open(spec) {
        Ok(o) => o,
        // A store too damaged to open is formatted anew when forced.
        Err(e) if force && device::kind_of(image) == PathKind::ZonedImage => {
            let d = device::open_raw_disk(spec).context(format!("{e:#}"))?;
            if !kvimr::is_raw_interlaced(&d) {
                return Err(e);
            }
            return format_new(d, image, a);
        }
        Err(e) => return Err(e),
    };
    match opened {
        Opened::DmImr(_) => Err(refuse_drive_managed(image)),
        Opened::Kvimr(k) => {
            let found = signature::of_zoned(&k.zoned())?;
            if found.contains(&Found::Smrdb) && !force {
                bail!(
                    "{} already holds a database on a KVIMR store (give --force to erase it)",
                    image.display()
                );
            }
            if !force {
                bail!(
                    "{} holds a KVIMR store; creating a database would destroy it (give \
                     --force to do it anyway)",
                    image.display()
                );
            }
            format_new(k.into_disk()?, image, a)
        }
        Opened::Disk(d) if kvimr::is_raw_interlaced(&d) => {
            let d = Arc::new(d);
            if !force {
                let dev: Arc<dyn ZonedDevice> = d.clone();
                let found = signature::of_zoned(&dev).with_context(|| {
                    format!(
                        "reading what {} holds (give --force to format it anyway)",
                        image.display()
                    )
                })?;
                signature::refuse_unless_forced(image, &found, "creating a database", force)?;
            }
            let d = Arc::try_unwrap(d)
                .ok()
                .context("the drive is still held after reading what it holds")?;
            format_new(d, image, a)
        }
        other => {
            refuse_flags_off_imr(a, image)?;
            Ok(Some(other))
        }
    }
}

/// Formats the KVIMR store on the raw interlaced drive `d` and SMRDB-LOC on its zoned view.
fn format_new(d: Disk, image: &Path, a: &KvimrArgs) -> Result<Option<Opened>> {
    let f = a.format()?;
    let k = KvimrDrive::format(d, &f)
        .with_context(|| format!("formatting a KVIMR store on {}", image.display()))?;
    let db = Db::create(k.zoned(), FormatOptions::loc(), super::cli_options())?;
    db.close()?;
    k.close()?;
    println!(
        "created an SMRDB-Loc database on a KVIMR store on {} ({} allocation, {} read-modify-write, SSTables of {})",
        image.display(),
        f.options.policy.name(),
        f.options.rmw.name(),
        format_size(f.zoned.zone_bytes)
    );
    Ok(None)
}

/// The store's figures `db stats` shows.
#[derive(Serialize)]
pub struct KvimrStats {
    /// Track allocation policy.
    pub policy: &'static str,
    /// Read-modify-write mode.
    pub rmw: &'static str,
    /// SSTable (zone) size in bytes.
    pub sstable_bytes: u64,
    /// Zones whose logs live in the safe region.
    pub log_zones: u32,
    /// Staging area for RMW backups, in bytes.
    pub staging_bytes: u64,
    /// Bytes of the data tracks.
    pub data_track_bytes: u64,
    /// Share of the data tracks in use (deleted files' tracks until the next map write).
    pub usage: f64,
    /// Share of the data tracks owned by live files.
    pub live_usage: f64,
    /// Bytes new data can still take.
    pub room_bytes: u64,
    /// Files of the store: SSTables on data tracks, logs in safe slots.
    pub data_files: u64,
    /// Logs in safe slots.
    pub safe_files: u64,
    /// Media bytes written per byte appended to data files, over the store's life.
    pub media_write_amplification: f64,
    /// The store's counters over its life (as of its last map copy, plus this open).
    pub lifetime: Stats,
}

impl KvimrStats {
    /// The figures of the store under `a`.
    pub fn of(a: &ZonedAdapter) -> KvimrStats {
        let s = a.store();
        let o = s.options();
        let zo = a.zoned_options();
        let layout = s.layout();
        let files = s.files();
        let safe = files
            .iter()
            .filter(|f| matches!(f.place, tegula_open::kvimr::Place::Safe { .. }))
            .count() as u64;
        let lifetime = s.lifetime_stats();
        KvimrStats {
            policy: o.policy.name(),
            rmw: o.rmw.name(),
            sstable_bytes: zo.zone_bytes,
            log_zones: zo.log_zones,
            staging_bytes: zo.staging_bytes,
            data_track_bytes: layout.data_sectors * layout.ss,
            usage: s.usage(),
            live_usage: s.live_usage(),
            room_bytes: s.room() * layout.ss,
            data_files: files.len() as u64 - safe,
            safe_files: safe,
            media_write_amplification: lifetime.media_write_amplification(),
            lifetime,
        }
    }

    /// Lines for `db stats`.
    pub fn lines(&self) -> Vec<(String, String)> {
        let l = &self.lifetime;
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let mut v = vec![
            (
                "kvimr store".into(),
                format!(
                    "{} allocation, {} read-modify-write, SSTables of {}",
                    self.policy,
                    self.rmw,
                    format_size(self.sstable_bytes)
                ),
            ),
            (
                "space usage".into(),
                format!(
                    "{} of {} of data tracks ({} live), room {}",
                    pct(self.usage),
                    format_size(self.data_track_bytes),
                    pct(self.live_usage),
                    format_size(self.room_bytes)
                ),
            ),
            (
                "files".into(),
                format!(
                    "{} on data tracks, {} in the safe region (logs)",
                    self.data_files, self.safe_files
                ),
            ),
            (
                "read-modify-writes".into(),
                format!(
                    "{} ({}), {} backed up and restored",
                    l.rmw_ops,
                    self.rmw,
                    format_size(l.rmw_bytes)
                ),
            ),
            ("top-track rewrites".into(), l.top_rewrites.to_string()),
            (
                "syncs".into(),
                format!("{} ({} inside read-modify-writes)", l.syncs, l.rmw_syncs),
            ),
            (
                "data written".into(),
                format!(
                    "{} appended; {} to top tracks, {} to bottom tracks",
                    format_size(l.bytes_appended),
                    format_size(l.data_bytes_top),
                    format_size(l.data_bytes_bottom)
                ),
            ),
            (
                "media write amp.".into(),
                format!("{:.3}", self.media_write_amplification),
            ),
            (
                "map copies".into(),
                format!("{} ({})", l.map_writes, format_size(l.map_bytes)),
            ),
            ("recovered RMWs".into(), l.recovered_rmw.to_string()),
        ];
        for (level, p) in &l.levels {
            if p.files > 0 {
                v.push((
                    format!("placement {level}"),
                    format!(
                        "{} files: {} on top tracks, {} on bottom tracks",
                        p.files,
                        format_size(p.top_bytes),
                        format_size(p.bottom_bytes)
                    ),
                ));
            }
        }
        v
    }
}
