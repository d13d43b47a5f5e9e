//! SMRDB (engines `tegula` = SMRDB-SOC and `tegula-loc` = SMRDB-LOC) on an emulated drive
//! (in memory or on a disk image) or on a banded plain file. Reports the device's modelled
//! time (emulated drives) and byte counters, and SMRDB's own statistics.

use super::counted::Counted;
use crate::durability::{Durability, SyncPolicy};
use crate::error::{Error, Result};
use crate::StorageLabel;
use crate::{BatchOp, DeviceCounters, EngineKind, EngineOptions, KvEngine};
use std::sync::Arc;
use tegula_device::{BlockDevice, Disk, HostBanded, ZoneFiles, ZonedDevice};
use tegula_smrdb::{Db, Error as DbError, FormatOptions, Mode, Options, WriteBatch, WriteOptions};

/// The device under the database.
enum Backing {
    /// An emulated drive (in memory or on an image), with the raw media rate of each zone
    /// (bytes per second, the faster end of the zone).
    Emulated {
        disk: Arc<Disk>,
        storage: StorageLabel,
        zone_rates: Vec<f64>,
    },
    /// Plain files (a banded file or a directory of zone files), their I/O counted.
    Files {
        dev: Arc<dyn CountedFiles>,
        storage: StorageLabel,
    },
}

/// What the harness asks of a device of plain files: its byte counters, and a flush at close.
trait CountedFiles: Send + Sync {
    fn bytes_read(&self) -> u64;
    fn bytes_written(&self) -> u64;
    fn flush(&self) -> tegula_device::Result<tegula_device::IoDone>;
}

impl<D: ZonedDevice> CountedFiles for Counted<D> {
    fn bytes_read(&self) -> u64 {
        Counted::bytes_read(self)
    }
    fn bytes_written(&self) -> u64 {
        Counted::bytes_written(self)
    }
    fn flush(&self) -> tegula_device::Result<tegula_device::IoDone> {
        BlockDevice::flush(self)
    }
}

/// An open SMRDB database and the device under it.
pub struct SmrdbEngine {
    db: Option<Db>,
    backing: Backing,
    kind: EngineKind,
    /// Unsynced writes skip the log (`--disable_wal`).
    disable_wal: bool,
}

/// The raw media rate of every zone of `disk` at its faster end, in bytes per second.
fn zone_rates(disk: &Disk) -> Result<Vec<f64>> {
    let cfg = disk.config();
    let mech = cfg
        .mechanics()
        .map_err(|e| Error::device("modelling the drive's media", e))?;
    let g = mech.geometry();
    let zs = cfg.zone_sectors().max(1);
    Ok((0..cfg.zone_count() as u64)
        .map(|z| {
            let first = z * zs;
            let last = (first + zs - 1).min(g.total_sectors().saturating_sub(1));
            g.media_rate_at(first).max(g.media_rate_at(last))
        })
        .collect())
}

impl SmrdbEngine {
    /// Opens SMRDB on the emulated drive `disk` (held on `storage`: memory or an image), or
    /// creates it on a drive without one, in LOC mode if `loc` (a database of the other
    /// organisation already there is an error). The block cache and Bloom filter follow `o`;
    /// the memtable stays band-sized (SMRDB's default, which equals the other engines' 256
    /// MiB write buffer on 256 MiB zones).
    pub fn open(disk: Disk, storage: StorageLabel, loc: bool, o: &EngineOptions) -> Result<Self> {
        let zone_rates = zone_rates(&disk)?;
        let disk = Arc::new(disk);
        let dev: Arc<dyn ZonedDevice> = disk.clone();
        let backing = Backing::Emulated {
            disk,
            storage,
            zone_rates,
        };
        Self::open_on(dev, backing, loc, o)
    }

    /// Opens (or creates) SMRDB-LOC on the KVIMR store of an interlaced image (its zoned
    /// view); like [`SmrdbEngine::open`], with the raw drive's clock and counters. The store
    /// places SSTables by their LSM level, which only LOC gives it: SOC is refused.
    pub fn open_kvimr(
        k: tegula_open::KvimrDrive,
        storage: StorageLabel,
        loc: bool,
        o: &EngineOptions,
    ) -> Result<Self> {
        if !loc {
            return Err(Self::soc_on_kvimr());
        }
        let disk = k.disk().clone();
        let zone_rates = zone_rates(&disk)?;
        // The engine holds the store's zoned view; the raw drive closes when both go.
        let dev = k.zoned();
        drop(k);
        let backing = Backing::Emulated {
            disk,
            storage,
            zone_rates,
        };
        Self::open_on(dev, backing, loc, o)
    }

    /// Why SMRDB-SOC does not run on an interlaced (IMR) image.
    pub fn soc_on_kvimr() -> Error {
        Error::invalid(
            "engine tegula (SMRDB-SOC) cannot run on an IMR image: SMRDB runs there on a KVIMR \
             store, which places SSTables by their LSM level and holds SMRDB-LOC; run engine \
             tegula-loc (--engine tegula-loc)",
        )
    }

    /// Opens (or creates) SMRDB on a banded plain file; like [`SmrdbEngine::open`].
    pub fn open_banded(dev: HostBanded, loc: bool, o: &EngineOptions) -> Result<Self> {
        Self::open_files(dev, StorageLabel::Banded, loc, o)
    }

    /// Opens (or creates) SMRDB on a zone-files directory; like [`SmrdbEngine::open`].
    pub fn open_zone_files(dev: ZoneFiles, loc: bool, o: &EngineOptions) -> Result<Self> {
        Self::open_files(dev, StorageLabel::ZoneFiles, loc, o)
    }

    /// Opens (or creates) SMRDB on a Linux zoned block device; like [`SmrdbEngine::open`].
    pub fn open_zoned(dev: tegula_device::Zbd, loc: bool, o: &EngineOptions) -> Result<Self> {
        Self::open_files(dev, StorageLabel::ZonedDevice, loc, o)
    }

    fn open_files<D: ZonedDevice + 'static>(
        dev: D,
        storage: StorageLabel,
        loc: bool,
        o: &EngineOptions,
    ) -> Result<Self> {
        let dev = Arc::new(Counted::new(dev));
        let zoned: Arc<dyn ZonedDevice> = dev.clone();
        Self::open_on(zoned, Backing::Files { dev, storage }, loc, o)
    }

    fn open_on(
        dev: Arc<dyn ZonedDevice>,
        backing: Backing,
        loc: bool,
        o: &EngineOptions,
    ) -> Result<Self> {
        let d = Options::default();
        let mode = if loc { Mode::Loc } else { Mode::Soc };
        let opts = Options {
            block_cache_bytes: o.cache_size,
            bloom_bits_per_key: o.bloom_bits,
            l0_compaction_trigger: o.l0_compaction_trigger.unwrap_or(d.l0_compaction_trigger),
            l0_slowdown: o.l0_slowdown.unwrap_or(d.l0_slowdown),
            l0_stop: o.l0_stop.unwrap_or(d.l0_stop),
            verify_checksums: o.verify_checksums,
            ..d
        };
        let opts = with_overrides(opts, &o.smrdb_options)?;
        let db = match Db::open(dev.clone(), opts.clone()) {
            Err(DbError::NotFound(_)) => Db::create(dev, FormatOptions { mode }, opts)
                .map_err(|e| Error::engine("creating SMRDB", e))?,
            r => r.map_err(|e| Error::engine("opening SMRDB", e))?,
        };
        if db.mode() != mode {
            return Err(Error::invalid(format!(
                "the device holds an SMRDB-{:?} database, not SMRDB-{mode:?}",
                db.mode()
            )));
        }
        Ok(SmrdbEngine {
            db: Some(db),
            backing,
            kind: if loc {
                EngineKind::TegulaLoc
            } else {
                EngineKind::Tegula
            },
            disable_wal: o.disable_wal,
        })
    }

    fn db(&self) -> Result<&Db> {
        self.db
            .as_ref()
            .ok_or_else(|| Error::Internal("SMRDB is closed".into()))
    }

    /// Write options of an unsynced write.
    fn unsynced(&self) -> WriteOptions {
        WriteOptions {
            sync: false,
            disable_wal: self.disable_wal,
        }
    }
}

/// Applies `NAME=VALUE` overrides to SMRDB's options through their serde form, refusing
/// unknown names and ill-typed values.
fn with_overrides(opts: Options, over: &[(String, serde_json::Value)]) -> Result<Options> {
    if over.is_empty() {
        return Ok(opts);
    }
    let mut v = serde_json::to_value(&opts)
        .map_err(|e| Error::Internal(format!("encoding SMRDB options: {e}")))?;
    let map = v
        .as_object_mut()
        .ok_or_else(|| Error::Internal("SMRDB options are not a JSON object".into()))?;
    for (k, val) in over {
        if !map.contains_key(k) {
            let known: Vec<&String> = map.keys().collect();
            return Err(Error::invalid(format!(
                "unknown SMRDB option {k:?} (one of {known:?})"
            )));
        }
        map.insert(k.clone(), val.clone());
    }
    serde_json::from_value(v).map_err(|e| {
        Error::invalid(format!(
            "an SMRDB option has a value of the wrong type: {e}"
        ))
    })
}

/// Maps an SMRDB error of operation `op` to an engine error naming it.
fn smrdb(op: &'static str) -> impl Fn(tegula_smrdb::Error) -> Error {
    move |e| Error::engine(format!("smrdb {op}"), e)
}

impl KvEngine for SmrdbEngine {
    fn name(&self) -> &str {
        self.kind.name()
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::with_capacity(key.len() + value.len() + 12);
        b.put(key, value);
        self.db()?.write(b, self.unsynced()).map_err(smrdb("put"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db()?.get(key).map_err(smrdb("get"))
    }

    fn delete(&self, key: &[u8]) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.db()?
            .write(b, self.unsynced())
            .map_err(smrdb("delete"))
    }

    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()> {
        let mut b = WriteBatch::new();
        for op in ops {
            match op {
                BatchOp::Put(k, v) => b.put(k, v),
                BatchOp::Delete(k) => b.delete(k),
            }
        }
        let wo = if sync {
            WriteOptions {
                sync: true,
                disable_wal: false,
            }
        } else {
            self.unsynced()
        };
        self.db()?.write(b, wo).map_err(smrdb("write"))
    }

    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let mut n = 0;
        if limit == 0 {
            return Ok(0);
        }
        let mut it = self.db()?.scan(start, None).map_err(smrdb("scan"))?;
        while let Some((k, v)) = it.next_ref().map_err(smrdb("scan"))? {
            n += 1;
            if !visit(k, v) || n >= limit {
                break;
            }
        }
        Ok(n)
    }

    fn flush(&self) -> Result<()> {
        self.db()?.flush().map_err(smrdb("flush"))
    }

    fn stats_json(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.db.as_ref()?.stats()).ok()
    }

    fn device_counters(&self) -> Option<DeviceCounters> {
        Some(match &self.backing {
            Backing::Emulated { disk, .. } => {
                let s = disk.stats();
                DeviceCounters {
                    now_ns: Some(disk.now()),
                    bytes_read: s.bytes_read,
                    bytes_written: s.bytes_written,
                    zone_bytes_written: s.zone_bytes_written,
                }
            }
            Backing::Files { dev, .. } => DeviceCounters {
                now_ns: None,
                bytes_read: dev.bytes_read(),
                bytes_written: dev.bytes_written(),
                zone_bytes_written: Vec::new(),
            },
        })
    }

    fn device_time_ns(&self) -> Option<u64> {
        match &self.backing {
            Backing::Emulated { disk, .. } => Some(disk.now()),
            Backing::Files { .. } => None,
        }
    }

    fn media_limit(&self, since: &DeviceCounters) -> Option<f64> {
        let Backing::Emulated {
            disk, zone_rates, ..
        } = &self.backing
        else {
            return None;
        };
        let now = disk.stats().zone_bytes_written;
        now.iter()
            .enumerate()
            .filter(|&(z, &b)| b > since.zone_bytes_written.get(z).copied().unwrap_or(0))
            .filter_map(|(z, _)| zone_rates.get(z).copied())
            .reduce(f64::max)
    }

    fn storage(&self) -> StorageLabel {
        match &self.backing {
            Backing::Emulated { storage, .. } | Backing::Files { storage, .. } => *storage,
        }
    }

    fn durability(&self, sync: SyncPolicy) -> Durability {
        let cache = match &self.backing {
            Backing::Emulated { disk, .. } => {
                let c = &disk.config().cache;
                Some(if c.write_cache { c.size } else { 0 })
            }
            Backing::Files { .. } => None,
        };
        let through = self.db.as_ref().is_some_and(|d| d.log_write_through());
        Durability::of(
            self.kind,
            self.storage(),
            sync,
            self.disable_wal,
            cache,
            through,
        )
    }

    /// SMRDB's (flush + compaction bytes) / user bytes — the paper's measure, log excluded,
    /// as for RocksDB and LevelDB; the figure with the log is in the engine statistics.
    fn write_amp(&self) -> Option<f64> {
        Some(self.db.as_ref()?.stats().write_amplification_no_log)
    }

    fn compaction_bytes(&self) -> Option<u64> {
        Some(self.db.as_ref()?.stats().compaction_bytes_written)
    }

    fn wait_for_background(&self) -> Result<()> {
        self.db()?
            .wait_for_compactions()
            .map_err(smrdb("waiting for compactions"))
    }

    fn close(mut self: Box<Self>) -> Result<()> {
        if let Some(db) = self.db.take() {
            db.close().map_err(smrdb("close"))?;
        }
        let SmrdbEngine { backing, .. } = *self;
        match backing {
            Backing::Emulated { disk, .. } => match Arc::try_unwrap(disk) {
                Ok(d) => d
                    .close()
                    .map_err(|e| Error::device("closing the disk", e))?,
                Err(d) => drop(d),
            },
            Backing::Files { dev, storage } => {
                dev.flush().map_err(|e| {
                    Error::device(format!("flushing the {} storage", storage.name()), e)
                })?;
            }
        }
        Ok(())
    }
}
