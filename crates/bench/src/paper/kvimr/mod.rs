//! `tegula bench paper kvimr`: seed 002's evaluation (KVIMR, USENIX ATC 2021) on the modelled
//! `imr-paper` drive (uniform tracks averaging 2 MiB, as the slides), in virtual device time,
//! scaled to run in minutes. SMRDB's LevelDB-style mode (one SSTable per band) runs on the
//! KVIMR middleware through its zoned adapter, passing each band's level down.
//!
//! | part | experiment | file |
//! | --- | --- | --- |
//! | load | random load of 1 KB values to high space usage, throughput per usage step (the slides' timeline and bar charts (a)-(e)) | `load.rs` |
//! | sweep | overwrites of random keys at steady space usage, 40% to 85% | `sweep.rs` |
//! | ycsb | YCSB A, B, C, F, D, E run phases after the load | `ycsb.rs` |
//!
//! Schemes: `seq` (tracks in order, naive RMW), `three-phase` (naive RMW), `kvimr-n`
//! (compaction-aware allocation, naive RMW), `kvimr-m` (compaction-aware, merged RMW) and
//! `cmr` (three-phase on the CMR twin: the same drive with no damage); and, beyond the paper,
//! `dm-imr` (the same engine on a drive-managed IMR drive: the host places SSTables in order
//! with no damage to care about, the drive maps them three-phase and does the RMWs inside,
//! `tegula-dmimr`; run with `--schemes dm-imr`). The output directory
//! receives `kvimr.json` (one object per scheme and step), `kvimr.md` (the tables) and
//! `kvimr-{timeline,sweep,ycsb,counts}.svg`. Everything is deterministic for a seed.

mod bed;
mod load;
mod report;
pub mod split;
mod sweep;
mod ycsb;

use crate::error::{Error, Result};
use crate::observer::Observer;
use crate::paper::PaperReport;
use serde::Serialize;
use std::path::PathBuf;
use tegula_kvimr::{Policy, RmwMode};

const MIB: u64 = 1 << 20;

/// How much work the experiment does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvimrScale {
    /// Seconds: a 192 MiB drive, 2 MiB SSTables, levels growing fourfold (a smoke run; the
    /// tests use it).
    Tiny,
    /// Minutes in a release build: a 3 GiB drive, 16 MiB SSTables (8 tracks).
    #[default]
    Small,
    /// Longer: a 6 GiB drive, 32 MiB SSTables (16 tracks; the paper's 64 MiB are 32).
    Full,
    /// The paper's ratios at a size this machine runs: 64 MiB SSTables (32 of the 2 MiB
    /// tracks, as the paper), 1000-byte values, a load to 75% of the data tracks (75 M
    /// inserts of 1 KB into 100 GB), on a drive of 8 GiB (128 SSTables instead of the
    /// paper's ~1,500); sweep at 40, 60 and 70%. Combine with `--wal-on cmr` for the paper's
    /// log placement.
    Paper,
}

impl KvimrScale {
    /// Every scale's name, smallest first.
    pub const NAMES: [&'static str; 4] = ["tiny", "small", "full", "paper"];

    /// Parses `tiny`, `small` or `full`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "tiny" => Ok(KvimrScale::Tiny),
            "small" => Ok(KvimrScale::Small),
            "full" => Ok(KvimrScale::Full),
            "paper" => Ok(KvimrScale::Paper),
            o => Err(Error::invalid(format!(
                "unknown scale {o:?} (tiny, small, full, paper)"
            ))),
        }
    }

    /// The name [`KvimrScale::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            KvimrScale::Tiny => "tiny",
            KvimrScale::Small => "small",
            KvimrScale::Full => "full",
            KvimrScale::Paper => "paper",
        }
    }

    /// The sizes of this scale.
    pub fn sizes(self) -> KvimrSizes {
        let base = KvimrSizes {
            capacity: 3072 * MIB,
            zone_bytes: 16 * MIB,
            value_bytes: 1000,
            load_usage: 0.85,
            step: 0.05,
            sweep: vec![0.4, 0.5, 0.6, 0.7, 0.8],
            sweep_ops: 100_000,
            ycsb_ops: 20_000,
            staging_bytes: 20 * MIB,
            log_zones: 3,
            level1_bands: 4,
            level_multiplier: 10,
            wal_on: WalOn::Imr,
            drive_set: Vec::new(),
            smrdb_options: Vec::new(),
        };
        match self {
            KvimrScale::Tiny => KvimrSizes {
                capacity: 192 * MIB,
                zone_bytes: 2 * MIB,
                load_usage: 0.4,
                step: 0.1,
                sweep: vec![0.3],
                sweep_ops: 5_000,
                ycsb_ops: 300,
                staging_bytes: 6 * MIB,
                log_zones: 2,
                level1_bands: 2,
                level_multiplier: 4,
                ..base
            },
            KvimrScale::Small => base,
            KvimrScale::Full => KvimrSizes {
                capacity: 6144 * MIB,
                zone_bytes: 32 * MIB,
                sweep_ops: 200_000,
                ycsb_ops: 50_000,
                staging_bytes: 40 * MIB,
                ..base
            },
            KvimrScale::Paper => KvimrSizes {
                capacity: 8192 * MIB,
                zone_bytes: 64 * MIB,
                load_usage: 0.75,
                sweep: vec![0.4, 0.6, 0.7],
                sweep_ops: 200_000,
                ycsb_ops: 50_000,
                staging_bytes: 80 * MIB,
                ..base
            },
        }
    }
}

/// Where SMRDB's write-ahead log and manifest live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WalOn {
    /// On the IMR drive with the SSTables (logs in the KVIMR store's safe region, the
    /// manifest in its raw area): everything on one drive.
    #[default]
    Imr,
    /// On a separate modelled CMR drive (the IMR drive's CMR twin, sized for the logs and
    /// the manifest), SSTables only on the IMR drive: the paper's setup (RocksDB's WAL and
    /// MANIFEST on ext4, only SSTables through KVIMR). See [`split`].
    Cmr,
}

impl WalOn {
    /// Parses `imr` or `cmr`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "imr" => Ok(WalOn::Imr),
            "cmr" => Ok(WalOn::Cmr),
            o => Err(Error::invalid(format!("unknown --wal-on {o:?} (imr, cmr)"))),
        }
    }

    /// The name [`WalOn::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            WalOn::Imr => "imr",
            WalOn::Cmr => "cmr",
        }
    }
}

/// The sizes of one scale.
#[derive(Debug, Clone, PartialEq)]
pub struct KvimrSizes {
    /// Drive capacity in bytes.
    pub capacity: u64,
    /// SSTable (band, zone) size in bytes.
    pub zone_bytes: u64,
    /// Value size in bytes (the paper's 1 KB).
    pub value_bytes: usize,
    /// The load stops when the data inserted reaches this fraction of the data tracks.
    pub load_usage: f64,
    /// Width of a timeline step as a fraction of the data tracks.
    pub step: f64,
    /// Space usages of the sweep.
    pub sweep: Vec<f64>,
    /// Overwrites measured at each sweep point.
    pub sweep_ops: u64,
    /// Operations of each YCSB run phase.
    pub ycsb_ops: u64,
    /// Staging area for RMW backups.
    pub staging_bytes: u64,
    /// Zones that may hold a log at once.
    pub log_zones: u32,
    /// SMRDB-LOC's level-1 size in bands.
    pub level1_bands: u64,
    /// Size ratio of adjacent levels (LevelDB's 10).
    pub level_multiplier: u64,
    /// Where the log and the manifest live.
    pub wal_on: WalOn,
    /// Overrides of the drive configuration ([`KvimrOptions::drive_set`]).
    pub drive_set: Vec<(String, String)>,
    /// SMRDB option overrides ([`KvimrOptions::smrdb_options`]).
    pub smrdb_options: Vec<(String, serde_json::Value)>,
}

/// One storage scheme of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Tracks in physical order, naive RMW.
    Seq,
    /// Three-phase allocation, naive RMW.
    ThreePhase,
    /// Compaction-aware allocation, naive RMW.
    KvimrN,
    /// Compaction-aware allocation, merged RMW.
    KvimrM,
    /// Three-phase allocation on the CMR twin (no damage, no RMW).
    Cmr,
    /// Beyond the paper: the engine on a drive-managed IMR drive (three-phase mapping and
    /// read-modify-write inside the drive; the host sees a plain block device).
    DmImr,
}

impl Scheme {
    /// Every scheme, in the slides' order.
    pub const ALL: [Scheme; 5] = [
        Scheme::Seq,
        Scheme::ThreePhase,
        Scheme::KvimrN,
        Scheme::KvimrM,
        Scheme::Cmr,
    ];

    /// Every scheme there is: the paper's five and `dm-imr`.
    pub const EVERY: [Scheme; 6] = [
        Scheme::Seq,
        Scheme::ThreePhase,
        Scheme::KvimrN,
        Scheme::KvimrM,
        Scheme::Cmr,
        Scheme::DmImr,
    ];

    /// Name in the JSON (`seq`, `three-phase`, `kvimr-n`, `kvimr-m`, `cmr`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Seq => "seq",
            Scheme::ThreePhase => "three-phase",
            Scheme::KvimrN => "kvimr-n",
            Scheme::KvimrM => "kvimr-m",
            Scheme::Cmr => "cmr",
            Scheme::DmImr => "dm-imr",
        }
    }

    /// Parses a name of [`Scheme::name`].
    pub fn parse(s: &str) -> Result<Self> {
        Scheme::EVERY
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown scheme {s:?} (seq, three-phase, kvimr-n, kvimr-m, cmr, dm-imr)"
                ))
            })
    }

    /// Allocation policy and RMW scheme.
    pub fn policy(self) -> (Policy, RmwMode) {
        match self {
            Scheme::Seq | Scheme::DmImr => (Policy::Seq, RmwMode::Naive),
            Scheme::ThreePhase | Scheme::Cmr => (Policy::ThreePhase, RmwMode::Naive),
            Scheme::KvimrN => (Policy::CompactionAware, RmwMode::Naive),
            Scheme::KvimrM => (Policy::CompactionAware, RmwMode::Merged),
        }
    }
}

/// Which parts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parts {
    /// The load timeline.
    pub load: bool,
    /// The usage sweep.
    pub sweep: bool,
    /// YCSB run phases after the load (needs `load`).
    pub ycsb: bool,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            load: true,
            sweep: true,
            ycsb: true,
        }
    }
}

/// Settings of `tegula bench paper kvimr`. [`KvimrOptions::default`] is the one source of
/// the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct KvimrOptions {
    /// Amount of work (default [`KvimrScale::Small`]).
    pub scale: KvimrScale,
    /// Output directory (default `paper-kvimr`).
    pub out: PathBuf,
    /// Schemes to run (default all five).
    pub schemes: Vec<Scheme>,
    /// Parts to run (default all).
    pub parts: Parts,
    /// Random seed (default 2021).
    pub seed: u64,
    /// Where the log and the manifest live (default [`WalOn::Imr`]).
    pub wal_on: WalOn,
    /// SSTable (zone) size in bytes, overriding the scale's (default `None`: the scale's).
    pub sst_bytes: Option<u64>,
    /// Value size in bytes, overriding the scale's 1000 (default `None`).
    pub value_bytes: Option<usize>,
    /// Drive capacity in bytes, overriding the scale's (default `None`).
    pub capacity: Option<u64>,
    /// Overrides of the `imr-paper` drive's configuration, `(key, value)` as `tegula disk
    /// create --set` takes them (e.g. `timing.seek_read.avg_ms`, `cache.write_cache`); they
    /// apply to its CMR twin and to the log drive of `--wal-on cmr` too (default none).
    pub drive_set: Vec<(String, String)>,
    /// SMRDB options for every scheme, `(field of tegula_smrdb::Options, JSON value)`, applied
    /// after the experiment's own (e.g. `compaction_read_ahead_bytes`; default none).
    pub smrdb_options: Vec<(String, serde_json::Value)>,
}

impl Default for KvimrOptions {
    fn default() -> Self {
        KvimrOptions {
            scale: KvimrScale::default(),
            out: PathBuf::from("paper-kvimr"),
            schemes: Scheme::ALL.to_vec(),
            parts: Parts::default(),
            seed: 2021,
            wal_on: WalOn::default(),
            sst_bytes: None,
            value_bytes: None,
            capacity: None,
            drive_set: Vec::new(),
            smrdb_options: Vec::new(),
        }
    }
}

impl KvimrOptions {
    /// The scale's sizes with this run's overrides. The staging area grows with the SSTable
    /// size (merged RMW backs up one SSTable's victims at a time).
    pub fn sizes(&self) -> Result<KvimrSizes> {
        let mut s = self.scale.sizes();
        if let Some(b) = self.sst_bytes {
            if b == 0 || !b.is_multiple_of(1 << 20) {
                return Err(Error::invalid(format!(
                    "--sst-size {b} is not a positive whole number of MiB"
                )));
            }
            s.staging_bytes = (s.staging_bytes * b / s.zone_bytes).max(4 * MIB);
            s.zone_bytes = b;
        }
        if let Some(v) = self.value_bytes {
            if v == 0 {
                return Err(Error::invalid("--value-bytes must be positive"));
            }
            s.value_bytes = v;
        }
        if let Some(c) = self.capacity {
            if c < 64 * MIB {
                return Err(Error::invalid("--capacity below 64 MiB"));
            }
            s.capacity = c.div_ceil(16 * MIB) * 16 * MIB;
        }
        s.wal_on = self.wal_on;
        s.drive_set = self.drive_set.clone();
        let mut cfg = tegula_device::profile("imr-paper")
            .map_err(|e| Error::device("profile imr-paper", e))?;
        for (k, v) in &s.drive_set {
            cfg.set(k, v)
                .map_err(|e| Error::device(format!("--drive-set {k}={v}"), e))?;
        }
        s.smrdb_options = self.smrdb_options.clone();
        bed::db_options(&s)?;
        Ok(s)
    }
}

/// One measured step: a scheme at one space usage of one phase. The counters without
/// `_total` are those of the step; `_total` ones are cumulative since the drive was formatted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `load`, `sweep`, or `ycsb-a` … `ycsb-f`.
    pub phase: String,
    /// The scheme.
    pub scheme: String,
    /// Data inserted so far over the data tracks' capacity (the step's x position).
    pub usage: f64,
    /// Fraction of the data tracks' sectors in use at the end of the step (SSTables and
    /// tracks of deleted SSTables not yet freed).
    pub space_usage: f64,
    /// Fraction of the data tracks' sectors owned by live SSTables (and logs) at the end of
    /// the step: `space_usage` without the tracks of deleted SSTables.
    pub live_usage: f64,
    /// Operations of the step.
    pub ops: u64,
    /// Modelled device seconds of the step.
    pub device_s: f64,
    /// Operations per modelled device second.
    pub ops_per_sec: f64,
    /// Top tracks restored after bottom writes.
    pub top_rewrites: u64,
    /// Read-modify-writes.
    pub rmw_ops: u64,
    /// Device flushes (syncs) the middleware issued.
    pub syncs: u64,
    /// Compactions that copied data.
    pub compactions: u64,
    /// Device seconds of compaction I/O (reads, writes, RMW).
    pub compaction_s: f64,
    /// Device seconds of read-modify-write beyond the bottom writes.
    pub rmw_s: f64,
    /// Device seconds of persisting SSTables to tracks (their writes with the
    /// read-modify-writes and ordering syncs they needed; `rmw_s` is part of it).
    pub persist_s: f64,
    /// Device seconds of the middleware's syncs beyond those persists: the flushes that put
    /// cached SSTable writes on the media, and the map writes.
    pub sync_s: f64,
    /// Cumulative top-track rewrites.
    pub top_rewrites_total: u64,
    /// Cumulative read-modify-writes.
    pub rmw_ops_total: u64,
    /// Cumulative syncs.
    pub syncs_total: u64,
    /// Cumulative compactions.
    pub compactions_total: u64,
    /// Cumulative compaction device seconds.
    pub compaction_s_total: f64,
    /// Cumulative device seconds since the drive was formatted.
    pub device_s_total: f64,
    /// Busy seconds of the separate CMR drive in the step (`--wal-on cmr`; 0 otherwise): its
    /// log and manifest I/O, part of `device_s`.
    pub cmr_busy_s: f64,
    /// Media bytes written per byte the engine wrote (restores, staging, map included).
    pub media_write_amp: f64,
    /// The LSM's own write amplification (bytes the engine wrote per user byte).
    pub lsm_write_amp: f64,
}

/// Everything measured.
#[derive(Debug, Clone, Default)]
pub struct Results {
    /// Every row, in run order.
    pub rows: Vec<Row>,
    /// Lines for a person (a scheme that ran out of space, …).
    pub notes: Vec<String>,
}

/// Runs the experiment and writes its tables, JSON and plots into `opts.out`.
pub fn run(opts: &KvimrOptions, obs: &dyn Observer) -> Result<PaperReport> {
    if opts.schemes.is_empty() {
        return Err(Error::invalid("no scheme to run"));
    }
    if opts.parts.ycsb && !opts.parts.load {
        return Err(Error::invalid("the YCSB phases run after the load"));
    }
    let s = opts.sizes()?;
    crate::report::output_dir(&opts.out)?;
    let per_scheme = opts.parts.load as u64 + opts.parts.sweep as u64;
    obs.job_started("paper kvimr", per_scheme * opts.schemes.len() as u64);
    let mut res = Results::default();
    let r = (|| -> Result<()> {
        for &scheme in &opts.schemes {
            if opts.parts.load {
                obs.step(&format!("{}: load", scheme.name()));
                load::run(scheme, &s, opts, obs, &mut res)?;
            }
            if opts.parts.sweep {
                obs.step(&format!("{}: usage sweep", scheme.name()));
                sweep::run(scheme, &s, opts.seed, &mut res)?;
            }
        }
        Ok(())
    })();
    obs.job_finished();
    r?;
    for n in &res.notes {
        obs.note(n);
    }
    report::write(&opts.out, opts, &s, &res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for s in Scheme::EVERY {
            assert_eq!(Scheme::parse(s.name()).ok(), Some(s));
        }
        for n in KvimrScale::NAMES {
            assert_eq!(KvimrScale::parse(n).map(|s| s.name()).ok(), Some(n));
        }
        assert!(Scheme::parse("nope").is_err());
        for w in [WalOn::Imr, WalOn::Cmr] {
            assert_eq!(WalOn::parse(w.name()).ok(), Some(w));
        }
        assert!(WalOn::parse("ssd").is_err());
        let set = |k: &str, v: &str| KvimrOptions {
            drive_set: vec![(k.into(), v.into())],
            ..KvimrOptions::default()
        };
        assert!(set("timing.seek_read.avg_ms", "8.5").sizes().is_ok());
        assert!(set("timing.bogus", "1").sizes().is_err());
        let smrdb = |k: &str, v: serde_json::Value| KvimrOptions {
            smrdb_options: vec![(k.into(), v)],
            ..KvimrOptions::default()
        };
        let ra = smrdb("compaction_read_ahead_bytes", serde_json::json!(8 << 20));
        let s = ra.sizes().unwrap();
        assert_eq!(
            bed::db_options(&s).unwrap().compaction_read_ahead_bytes,
            8 << 20
        );
        assert!(smrdb("no_such_option", serde_json::json!(1))
            .sizes()
            .is_err());
        assert!(smrdb("compaction_read_ahead_bytes", serde_json::json!("x"))
            .sizes()
            .is_err());
    }

    #[test]
    fn the_setup_options_override_the_scale_and_default_to_it() {
        let d = KvimrOptions::default();
        assert_eq!(d.wal_on, WalOn::Imr);
        let s = d.sizes().unwrap();
        assert_eq!(s, KvimrScale::Small.sizes());
        let p = KvimrOptions {
            scale: KvimrScale::Paper,
            ..KvimrOptions::default()
        }
        .sizes()
        .unwrap();
        assert_eq!((p.zone_bytes, p.value_bytes), (64 * MIB, 1000));
        assert!((p.load_usage - 0.75).abs() < 1e-9);
        let o = KvimrOptions {
            wal_on: WalOn::Cmr,
            sst_bytes: Some(64 * MIB),
            value_bytes: Some(1024),
            capacity: Some(1000 * MIB),
            ..KvimrOptions::default()
        }
        .sizes()
        .unwrap();
        assert_eq!(o.wal_on, WalOn::Cmr);
        assert_eq!((o.zone_bytes, o.value_bytes), (64 * MIB, 1024));
        assert_eq!(o.capacity, 1008 * MIB, "whole 16 MiB zones of the drive");
        assert_eq!(o.staging_bytes, 80 * MIB, "staging grows with the SSTable");
        for bad in [
            KvimrOptions {
                sst_bytes: Some(MIB + 1),
                ..KvimrOptions::default()
            },
            KvimrOptions {
                value_bytes: Some(0),
                ..KvimrOptions::default()
            },
        ] {
            assert!(bad.sizes().is_err());
        }
    }

    #[test]
    fn tiny_runs_end_to_end_with_the_log_on_a_cmr_drive() {
        let dir = tempfile::tempdir().unwrap();
        let opts = KvimrOptions {
            scale: KvimrScale::Tiny,
            out: dir.path().join("out"),
            schemes: vec![Scheme::Seq, Scheme::KvimrM],
            parts: Parts {
                load: true,
                sweep: false,
                ycsb: false,
            },
            wal_on: WalOn::Cmr,
            ..KvimrOptions::default()
        };
        let rep = run(&opts, &crate::observer::Quiet).unwrap();
        assert!(rep.markdown.contains("--wal-on cmr"), "{}", rep.markdown);
        let json = std::fs::read_to_string(opts.out.join("kvimr.json")).unwrap();
        let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
        let rows = rows.as_array().unwrap();
        assert!(!rows.is_empty());
        for sc in ["seq", "kvimr-m"] {
            let load: Vec<_> = rows.iter().filter(|r| r["scheme"] == sc).collect();
            assert_eq!(load.len(), 4, "{sc}: 10% steps to 40%");
            let cmr: f64 = load.iter().map(|r| r["cmr_busy_s"].as_f64().unwrap()).sum();
            let dev: f64 = load.iter().map(|r| r["device_s"].as_f64().unwrap()).sum();
            assert!(cmr > 0.0 && cmr < dev, "{sc}: cmr {cmr} of {dev}");
        }
    }
}
