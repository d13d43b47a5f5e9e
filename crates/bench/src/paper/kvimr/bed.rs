//! The test bed of one scheme: the `imr-paper` drive (or its CMR twin) at the scale's
//! capacity, the KVIMR middleware's zoned adapter on it, SMRDB-LOC on that; and snapshots of
//! every counter, turned into a [`Row`] for the span between two of them.

use super::{KvimrSizes, Row, Scheme};
use crate::error::{Error, Result};
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk};
use tegula_kvimr::{Options, ZonedAdapter, ZonedOptions};
use tegula_smrdb::{Db, DbStats, FormatOptions, Options as DbOptions};

/// A drive, the middleware and the engine.
pub(super) struct Bed {
    pub disk: Arc<Disk>,
    pub adapter: Arc<ZonedAdapter>,
    pub db: Db,
    /// Bytes of the data tracks (what space usage is a fraction of).
    pub data_bytes: u64,
    pub scheme: Scheme,
}

fn engine<E: std::error::Error + Send + Sync + 'static>(
    what: &str,
) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error::Engine {
        what: what.to_string(),
        source: Box::new(e),
    }
}

/// SMRDB's options for the experiment: inline compaction (deterministic; its device time is
/// the run's), LevelDB-style levels of `level1_bands` bands growing `level_multiplier`-fold.
pub(super) fn db_options(s: &KvimrSizes) -> DbOptions {
    DbOptions {
        background_compaction: false,
        loc_level1_bands: s.level1_bands,
        loc_level_multiplier: s.level_multiplier,
        ..DbOptions::default()
    }
}

impl Bed {
    /// A fresh bed for `scheme`.
    pub fn new(scheme: Scheme, s: &KvimrSizes) -> Result<Bed> {
        let mut cfg = profile("imr-paper").map_err(|e| Error::Device {
            what: "profile imr-paper".into(),
            source: e,
        })?;
        cfg.capacity = s.capacity;
        cfg.zones.zone_size = 16 << 20;
        if scheme == Scheme::Cmr {
            cfg = cfg.cmr_twin();
        }
        let disk = Arc::new(Disk::in_memory(cfg).map_err(|e| Error::Device {
            what: "creating the imr-paper drive".into(),
            source: e,
        })?);
        let tracks = disk
            .track_layout()
            .cloned()
            .ok_or_else(|| Error::invalid("imr-paper has no tracks"))?;
        let (policy, rmw) = scheme.policy();
        let zo = ZonedOptions {
            zone_bytes: s.zone_bytes,
            conventional_zones: 1,
            log_zones: s.log_zones,
            staging_bytes: s.staging_bytes,
        };
        let dev: Arc<dyn BlockDevice> = disk.clone();
        let opts = Options {
            policy,
            rmw,
            ..Options::default()
        };
        let adapter = Arc::new(
            ZonedAdapter::format(dev, &tracks, zo, opts)
                .map_err(engine("formatting the kvimr middleware"))?,
        );
        let data_bytes = {
            let l = adapter.store().layout();
            l.data_sectors * l.ss
        };
        let db = Db::create(adapter.clone(), FormatOptions::loc(), db_options(s))
            .map_err(engine("creating SMRDB-LOC"))?;
        Ok(Bed {
            disk,
            adapter,
            db,
            data_bytes,
            scheme,
        })
    }

    /// Every counter now.
    pub fn snap(&self, ops: u64) -> Snap {
        Snap {
            now: self.disk.now(),
            ops,
            kv: self.adapter.store().stats(),
            db: self.db.stats(),
            hint: self.adapter.hint_persist_ns(),
            usage: self.adapter.store().usage(),
            live: self.adapter.store().live_usage(),
        }
    }

    /// A put, as the engine's error.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put(key, value).map_err(engine("smrdb put"))
    }

    /// A get.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key).map_err(engine("smrdb get"))
    }
}

/// Counters at one moment.
#[derive(Debug, Clone)]
pub(super) struct Snap {
    pub now: u64,
    pub ops: u64,
    pub kv: tegula_kvimr::Stats,
    pub db: DbStats,
    pub hint: (u64, u64),
    pub usage: f64,
    pub live: f64,
}

impl Snap {
    fn compaction_ns(&self) -> u64 {
        self.db.compaction_time_ns + self.hint.1
    }
}

/// The row of the span `a` → `b`.
pub(super) fn row(phase: &str, scheme: Scheme, usage: f64, a: &Snap, b: &Snap) -> Row {
    let secs = |ns: u64| ns as f64 / 1e9;
    let device_s = secs(b.now - a.now);
    let ops = b.ops - a.ops;
    let engine_bytes = b.kv.bytes_appended + b.kv.safe_bytes + b.kv.raw_bytes;
    let media = b.kv.data_bytes_top
        + b.kv.data_bytes_bottom
        + b.kv.rmw_bytes
        + b.kv.staging_bytes
        + b.kv.map_bytes
        + b.kv.safe_bytes
        + b.kv.raw_bytes;
    Row {
        phase: phase.to_string(),
        scheme: scheme.name().to_string(),
        usage,
        space_usage: b.usage,
        live_usage: b.live,
        ops,
        device_s,
        ops_per_sec: if device_s > 0.0 {
            ops as f64 / device_s
        } else {
            0.0
        },
        top_rewrites: b.kv.top_rewrites - a.kv.top_rewrites,
        rmw_ops: b.kv.rmw_ops - a.kv.rmw_ops,
        syncs: b.kv.syncs - a.kv.syncs,
        compactions: b.db.compactions - a.db.compactions,
        compaction_s: secs(b.compaction_ns() - a.compaction_ns()),
        rmw_s: secs(b.kv.rmw_ns - a.kv.rmw_ns),
        persist_s: secs(b.kv.persist_ns - a.kv.persist_ns),
        sync_s: secs(b.kv.sync_ns - a.kv.sync_ns),
        top_rewrites_total: b.kv.top_rewrites,
        rmw_ops_total: b.kv.rmw_ops,
        syncs_total: b.kv.syncs,
        compactions_total: b.db.compactions,
        compaction_s_total: secs(b.compaction_ns()),
        device_s_total: secs(b.now),
        media_write_amp: if engine_bytes > 0 {
            media as f64 / engine_bytes as f64
        } else {
            0.0
        },
        lsm_write_amp: b.db.write_amplification,
    }
}
