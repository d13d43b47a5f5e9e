//! The test bed of one scheme: the `imr-paper` drive (or its CMR twin) at the scale's
//! capacity, the KVIMR middleware's zoned adapter on it, SMRDB-LOC on that; and snapshots of
//! every counter, turned into a [`Row`] for the span between two of them.

use super::split::SplitZoned;
use super::{KvimrSizes, Row, Scheme, WalOn};
use crate::error::{Error, Result};
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, TrackLayout, ZonedDevice};
use tegula_dmimr::{DmImr, DmImrStats};
use tegula_kvimr::layout::Layout;
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
    /// The drive-managed layer of the `dm-imr` scheme.
    pub dm: Option<Arc<DmImr>>,
    /// With `--wal-on cmr`: the CMR drive holding the logs and the manifest.
    pub cmr: Option<Arc<Disk>>,
}

/// Log slots on the CMR drive of `--wal-on cmr`: SMRDB's `max_log_bands` (4) for the
/// mutable memtable and as many for the immutable one.
pub(super) const CMR_LOG_SLOTS: u32 = 8;

fn engine<E: std::error::Error + Send + Sync + 'static>(
    what: &str,
) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error::engine(what, e)
}

/// SMRDB's options for the experiment: inline compaction (deterministic; its device time is
/// the run's), LevelDB-style levels of `level1_bands` bands growing `level_multiplier`-fold,
/// LevelDB's L0 limits (the figures were measured with them), the log buffered in the process,
/// every missed block cached.
/// Then the run's `--smrdb-option`s.
pub(super) fn db_options(s: &KvimrSizes) -> Result<DbOptions> {
    let opts = DbOptions {
        background_compaction: false,
        loc_level1_bands: s.level1_bands,
        loc_level_multiplier: s.level_multiplier,
        // The paper's log buffer (see `paper::smrdb`'s engine options).
        log_write_through: Some(false),
        // Every missed block cached, as the figures were measured.
        block_cache_second_miss: false,
        ..DbOptions::default().with_leveldb_l0_limits()
    };
    if s.smrdb_options.is_empty() {
        return Ok(opts);
    }
    let mut v = serde_json::to_value(&opts)
        .map_err(|e| Error::internal(format!("encoding SMRDB options: {e}")))?;
    let map = v
        .as_object_mut()
        .ok_or_else(|| Error::internal("SMRDB options are not a JSON object"))?;
    for (k, val) in &s.smrdb_options {
        if !map.contains_key(k) {
            return Err(Error::invalid(format!("unknown SMRDB option {k:?}")));
        }
        map.insert(k.clone(), val.clone());
    }
    serde_json::from_value(v).map_err(|e| {
        Error::invalid(format!(
            "an SMRDB option has a value of the wrong type: {e}"
        ))
    })
}

impl Bed {
    /// A fresh bed for `scheme`.
    pub fn new(scheme: Scheme, s: &KvimrSizes) -> Result<Bed> {
        let mut cfg = profile("imr-paper").map_err(|e| Error::device("profile imr-paper", e))?;
        for (k, v) in &s.drive_set {
            cfg.set(k, v)
                .map_err(|e| Error::device(format!("--drive-set {k}={v}"), e))?;
        }
        cfg.capacity = s.capacity;
        cfg.zones.zone_size = 16 << 20;
        if scheme == Scheme::Cmr {
            cfg = cfg.cmr_twin();
        }
        let disk = Arc::new(
            Disk::in_memory(cfg).map_err(|e| Error::device("creating the imr-paper drive", e))?,
        );
        let raw_tracks = disk
            .track_layout()
            .cloned()
            .ok_or_else(|| Error::invalid("imr-paper has no tracks"))?;
        let zo = ZonedOptions {
            zone_bytes: s.zone_bytes,
            conventional_zones: 1,
            // With the logs on the CMR drive the IMR drive keeps no safe slots for them.
            log_zones: match s.wal_on {
                WalOn::Imr => s.log_zones,
                WalOn::Cmr => 0,
            },
            staging_bytes: s.staging_bytes,
        };
        // The data tracks a host-managed store has on the raw drive (the CMR twin has the
        // same tracks): on the drive-managed drive too, space usage is a fraction of these, so
        // that every scheme gets the same inserts (the drive's own safe region and the host
        // store's leave the host there a little less).
        let ss = u64::from(disk.info().sector_size);
        let data_bytes = Layout::new(&raw_tracks, ss, &zo.format())
            .map_err(engine("laying out the kvimr store"))?
            .data_sectors
            * ss;
        let (dev, tracks, dm): (Arc<dyn BlockDevice>, TrackLayout, Option<Arc<DmImr>>) =
            if scheme == Scheme::DmImr {
                // The host sees a plain block device: its store lays SSTables out in order on
                // tracks of the same geometry with no damage, the drive does the rest.
                let dm = Arc::new(
                    DmImr::format(disk.clone(), tegula_dmimr::FormatOptions::default())
                        .map_err(engine("formatting the drive-managed IMR drive"))?,
                );
                let host = TrackLayout::new(
                    raw_tracks.geometry().clone(),
                    dm.info().capacity_sectors,
                    false,
                );
                (dm.clone(), host, Some(dm))
            } else {
                (disk.clone(), raw_tracks, None)
            };
        let (policy, rmw) = scheme.policy();
        let opts = Options {
            policy,
            rmw,
            ..Options::default()
        };
        let adapter = Arc::new(
            ZonedAdapter::format(dev, &tracks, zo, opts)
                .map_err(engine("formatting the kvimr middleware"))?,
        );
        let (dev, cmr): (Arc<dyn ZonedDevice>, _) = match s.wal_on {
            WalOn::Imr => (adapter.clone(), None),
            WalOn::Cmr => {
                let (split, cmr) = split_over(adapter.clone(), &disk)?;
                (split, Some(cmr))
            }
        };
        let db = Db::create(dev, FormatOptions::loc(), db_options(s)?)
            .map_err(engine("creating SMRDB-LOC"))?;
        Ok(Bed {
            disk,
            adapter,
            db,
            data_bytes,
            scheme,
            dm,
            cmr,
        })
    }

    /// Every counter now.
    pub fn snap(&self, ops: u64) -> Snap {
        let (cmr_now, cmr_busy) = self
            .cmr
            .as_ref()
            .map_or((0, 0), |c| (c.now(), c.stats().busy_ns));
        Snap {
            now: self.disk.now().max(cmr_now),
            cmr_busy,
            ops,
            kv: self.adapter.store().stats(),
            db: self.db.stats(),
            hint: self.adapter.hint_persist_ns(),
            usage: self.adapter.store().usage(),
            live: self.adapter.store().live_usage(),
            dm: self.dm.as_ref().map(|d| d.stats()),
            raw_written: self.disk.stats().bytes_written,
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

/// The split device of `--wal-on cmr` over `adapter`: a CMR drive (the CMR twin of `imr`'s
/// configuration, as small as the logs and the manifest need) and the slot table on it.
pub(super) fn split_over(
    adapter: Arc<ZonedAdapter>,
    imr: &Disk,
) -> Result<(Arc<SplitZoned>, Arc<Disk>)> {
    let mut cfg = imr.config().cmr_twin();
    // A few files on an otherwise empty disk (ext4 in the paper): the first bytes of the
    // full-size drive, so the log and the manifest are short seeks apart.
    cfg.span = tegula_device::Span::Partition;
    let zone = cfg.zones.zone_size.max(1);
    cfg.capacity = SplitZoned::cmr_bytes(&*adapter, CMR_LOG_SLOTS)
        .div_ceil(zone)
        .max(4)
        * zone;
    let cmr =
        Arc::new(Disk::in_memory(cfg).map_err(|e| Error::device("creating the CMR log drive", e))?);
    let split = SplitZoned::format(adapter, cmr.clone(), CMR_LOG_SLOTS)
        .map_err(|e| Error::device("formatting the split log table", e))?;
    Ok((Arc::new(split), cmr))
}

/// Counters at one moment.
#[derive(Debug, Clone)]
pub(super) struct Snap {
    pub now: u64,
    /// Busy time of the CMR drive of `--wal-on cmr` (0 without one).
    pub cmr_busy: u64,
    pub ops: u64,
    pub kv: tegula_kvimr::Stats,
    pub db: DbStats,
    pub hint: (u64, u64),
    pub usage: f64,
    pub live: f64,
    /// The drive-managed layer's counters (`dm-imr` only).
    pub dm: Option<DmImrStats>,
    /// Bytes written to the raw drive.
    pub raw_written: u64,
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
    // On the drive-managed drive the RMWs, top rewrites and syncs are the drive's, and the
    // media bytes are what reached the raw drive.
    let (top_rewrites, rmw_ops, syncs, rmw_ns, media) = match (&a.dm, &b.dm) {
        (Some(x), Some(y)) => (
            (x.top_rewrites, y.top_rewrites),
            (x.rmw_ops, y.rmw_ops),
            (x.syncs, y.syncs),
            (x.rmw_ns, y.rmw_ns),
            b.raw_written,
        ),
        _ => (
            (a.kv.top_rewrites, b.kv.top_rewrites),
            (a.kv.rmw_ops, b.kv.rmw_ops),
            (a.kv.syncs, b.kv.syncs),
            (a.kv.rmw_ns, b.kv.rmw_ns),
            media,
        ),
    };
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
        top_rewrites: top_rewrites.1 - top_rewrites.0,
        rmw_ops: rmw_ops.1 - rmw_ops.0,
        syncs: syncs.1 - syncs.0,
        compactions: b.db.compactions - a.db.compactions,
        compaction_s: secs(b.compaction_ns() - a.compaction_ns()),
        rmw_s: secs(rmw_ns.1 - rmw_ns.0),
        persist_s: secs(b.kv.persist_ns - a.kv.persist_ns),
        sync_s: secs(b.kv.sync_ns - a.kv.sync_ns),
        top_rewrites_total: top_rewrites.1,
        rmw_ops_total: rmw_ops.1,
        syncs_total: syncs.1,
        compactions_total: b.db.compactions,
        compaction_s_total: secs(b.compaction_ns()),
        device_s_total: secs(b.now),
        cmr_busy_s: secs(b.cmr_busy - a.cmr_busy),
        media_write_amp: if engine_bytes > 0 {
            media as f64 / engine_bytes as f64
        } else {
            0.0
        },
        lsm_write_amp: b.db.write_amplification,
    }
}

#[cfg(test)]
mod tests {
    use super::super::KvimrScale;
    use super::*;

    #[test]
    fn every_scheme_gets_the_data_tracks_of_the_host_managed_store() {
        let s = KvimrScale::Tiny.sizes();
        let seq = Bed::new(Scheme::Seq, &s).unwrap();
        let l = seq.adapter.store().layout();
        assert_eq!(seq.data_bytes, l.data_sectors * l.ss);
        assert!(seq.data_bytes > 0);
        for scheme in [Scheme::Cmr, Scheme::DmImr] {
            assert_eq!(
                Bed::new(scheme, &s).unwrap().data_bytes,
                seq.data_bytes,
                "{scheme:?}"
            );
        }
    }
}
