//! The engine interface the benchmarks drive, and how an engine is named and opened.
//!
//! Every engine — SMRDB (SOC and LOC), RocksDB, LevelDB, and the in-memory reference — is
//! reached through [`KvEngine`], so that a benchmark runs the same code path over all of them.

use crate::durability::{Durability, SyncPolicy};
use crate::error::{Error, Result};
use crate::storage::StorageLabel;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_device::{Disk, DiskConfig, HostBanded, HostBandedOptions, ZoneFiles, ZoneFilesOptions};

/// One operation of an atomic write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOp {
    /// Insert or overwrite `key` with `value`.
    Put(Vec<u8>, Vec<u8>),
    /// Delete `key` (a tombstone in an LSM engine).
    Delete(Vec<u8>),
}

/// Host-visible counters of the device under an engine.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceCounters {
    /// Modelled device time in nanoseconds (the emulated drive's virtual clock); `None` on a
    /// device without a model (a banded plain file).
    pub now_ns: Option<u64>,
    /// Bytes the host read from the device.
    pub bytes_read: u64,
    /// Bytes the host wrote to the device.
    pub bytes_written: u64,
    /// Bytes written to each zone so far (emulated drives; empty elsewhere): which zones a
    /// benchmark wrote, for the media-rate check.
    pub zone_bytes_written: Vec<u64>,
}

/// A key-value engine as the benchmarks see it. Implementations must be usable from several
/// benchmark threads at once.
pub trait KvEngine: Send + Sync {
    /// Engine name as printed and written to JSON (`tegula`, `rocksdb`, …).
    fn name(&self) -> &str;
    /// Inserts or overwrites one key, without asking for durability.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Reads one key.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Reads one key into `out` (replacing its contents, reusing its allocation where the
    /// engine can); whether the key exists. The benchmarks' read loops use this.
    fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        match self.get(key)? {
            Some(v) => {
                *out = v;
                Ok(true)
            }
            None => {
                out.clear();
                Ok(false)
            }
        }
    }
    /// Reads one key and hands its value to `f` (where the engine can, without copying it out
    /// first: RocksDB's pinned slice); whether the key exists. db_bench's `readrandom` reads
    /// this way: it looks at the value's length only.
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        match self.get(key)? {
            Some(v) => {
                f(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    /// Called in each benchmark thread before its first operation, for per-thread engine
    /// settings (RocksDB's perf level is thread-local).
    fn thread_started(&self) {}
    /// Deletes one key, without asking for durability.
    fn delete(&self, key: &[u8]) -> Result<()>;
    /// Applies `ops` atomically; with `sync` the batch is durable when this returns.
    fn write_batch(&self, ops: &[BatchOp], sync: bool) -> Result<()>;
    /// Visits up to `limit` pairs in key order starting at the first key `>= start`; `visit`
    /// returns false to stop early. Returns the number of pairs visited.
    fn scan(
        &self,
        start: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize>;
    /// Writes everything buffered in memory to persistent structures (a memtable flush).
    fn flush(&self) -> Result<()>;
    /// The engine's own statistics as JSON, if it reports any.
    fn stats_json(&self) -> Option<serde_json::Value> {
        None
    }
    /// The device's modelled time in nanoseconds, for engines on an emulated device.
    fn device_time_ns(&self) -> Option<u64> {
        self.device_counters().and_then(|c| c.now_ns)
    }
    /// Device counters, for engines on a device the harness can see (an emulated drive, a
    /// banded file).
    fn device_counters(&self) -> Option<DeviceCounters> {
        None
    }
    /// The fastest rate, in bytes per second, at which the media can transfer data in any
    /// zone written since `since` (the raw media rate at those LBAs, track switches ignored):
    /// an upper bound on user bytes per device second once they are durable. `None` without
    /// a drive model.
    fn media_limit(&self, _since: &DeviceCounters) -> Option<f64> {
        None
    }
    /// What the engine's data lives on.
    fn storage(&self) -> StorageLabel {
        StorageLabel::Memory
    }
    /// What a crash loses of the writes this engine acknowledges under `sync`.
    fn durability(&self, sync: SyncPolicy) -> Durability {
        Durability::of(EngineKind::Memory, self.storage(), sync, false, None)
    }
    /// Write amplification since the database was opened, if the engine can tell.
    fn write_amp(&self) -> Option<f64> {
        None
    }
    /// Bytes written by compaction since the database was opened, if the engine can tell.
    fn compaction_bytes(&self) -> Option<u64> {
        None
    }
    /// Waits until background flushes and compactions have finished and none is due
    /// (`--settle`; engines without background work return at once).
    fn wait_for_background(&self) -> Result<()> {
        Ok(())
    }
    /// Closes the engine, making everything durable.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Which engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// SMRDB with sequential-organised compaction (SMRDB-SOC, the default).
    Tegula,
    /// SMRDB with LevelDB-style organisation (SMRDB-LOC).
    TegulaLoc,
    /// RocksDB through its C API.
    Rocksdb,
    /// LevelDB through its C API.
    Leveldb,
    /// The in-memory `BTreeMap` reference engine (measures the harness itself).
    Memory,
}

impl EngineKind {
    /// Every engine name accepted by `--engine`.
    pub const NAMES: [&'static str; 5] = ["tegula", "tegula-loc", "rocksdb", "leveldb", "memory"];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Tegula => "tegula",
            EngineKind::TegulaLoc => "tegula-loc",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::Leveldb => "leveldb",
            EngineKind::Memory => "memory",
        }
    }

    /// Parses one engine name.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "tegula" | "smrdb" | "tegula-soc" => EngineKind::Tegula,
            "tegula-loc" | "smrdb-loc" => EngineKind::TegulaLoc,
            "rocksdb" => EngineKind::Rocksdb,
            "leveldb" => EngineKind::Leveldb,
            "memory" | "btreemap" => EngineKind::Memory,
            other => {
                return Err(Error::invalid(format!(
                    "unknown engine {other:?} (one of: {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }

    /// Parses a comma-separated list of engine names.
    pub fn parse_list(s: &str) -> Result<Vec<Self>> {
        let v = s
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(Self::parse)
            .collect::<Result<Vec<_>>>()?;
        if v.is_empty() {
            return Err(Error::invalid("no engine given"));
        }
        Ok(v)
    }

    /// Whether the engine keeps its data on an emulated zoned device.
    pub fn on_device(self) -> bool {
        matches!(self, EngineKind::Tegula | EngineKind::TegulaLoc)
    }
}

/// Where an engine keeps its data.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A fresh in-memory emulated drive of this configuration (SMRDB).
    Emulated(DiskConfig),
    /// A disk image file (SMRDB); created with the given configuration if it does not exist.
    Image(PathBuf, Option<DiskConfig>),
    /// A plain file banded like host-managed SMR (SMRDB): zones of `zone_size` bytes, the
    /// file created (sparse) or grown to `capacity` bytes.
    Banded {
        /// The file; its write pointers go to `PATH.zones`.
        path: PathBuf,
        /// Zone (band) size in bytes.
        zone_size: u64,
        /// Size of the file.
        capacity: u64,
        /// A directory of one file per zone ([`tegula_device::ZoneFiles`]) instead of one
        /// banded file.
        zone_files: bool,
    },
    /// A Linux zoned block device (SMRDB): a host-managed SMR drive, a ZNS namespace; fresh
    /// means every zone reset.
    Zoned(PathBuf),
    /// A directory on the host file system (RocksDB, LevelDB); `None` means a temporary one.
    Dir(Option<PathBuf>),
    /// Nothing: the in-memory reference engine.
    Memory,
}

/// Engine settings shared by all engines, chosen to give every engine the same memory budget.
/// [`EngineOptions::default`] is the one source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineOptions {
    /// Memtable / write buffer size in bytes (default: the band size, 256 MiB).
    pub write_buffer_size: u64,
    /// Block cache size in bytes (default 8 MiB).
    pub cache_size: u64,
    /// Bloom filter bits per key (default 10).
    pub bloom_bits: u32,
    /// Collect engine statistics that cost time (RocksDB's `statistics`); needed for RocksDB's
    /// write amplification and compaction bytes.
    pub statistics: bool,
    /// L0 file / band count that triggers a compaction (`None`: 4, LevelDB's and SMRDB's
    /// default; RocksDB's default is also 4).
    pub l0_compaction_trigger: Option<usize>,
    /// L0 count at which writes are slowed down (`None`: 8 for LevelDB, 20 for RocksDB and
    /// SMRDB, each engine's own default; SMRDB caps it on small drives).
    pub l0_slowdown: Option<usize>,
    /// L0 count at which writes stop until compaction catches up (`None`: 12 for LevelDB, 36
    /// for RocksDB and SMRDB).
    pub l0_stop: Option<usize>,
    /// SMRDB options by name (`tegula_smrdb::Options` field = JSON value), applied after the settings
    /// above: `--smrdb_option l1_overlap_trigger=8`. Ignored by the other engines.
    pub smrdb_options: Vec<(String, serde_json::Value)>,
    /// Write without the write-ahead log (db_bench's `--disable_wal`): SMRDB's
    /// `WriteOptions::disable_wal`, RocksDB's `WriteOptions::disableWAL`; writes are durable
    /// once flushed. LevelDB has no such option: opening it with this set fails.
    pub disable_wal: bool,
    /// Check each block's checksum when it is read from storage (default on). On for every
    /// engine by default, so that all of them check what they read: SMRDB's and RocksDB's
    /// default; LevelDB's default is off (`ReadOptions::verify_checksums`), so the harness
    /// turns it on for LevelDB unless this is off.
    pub verify_checksums: bool,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            write_buffer_size: 256 << 20,
            cache_size: 8 << 20,
            bloom_bits: 10,
            statistics: false,
            l0_compaction_trigger: None,
            l0_slowdown: None,
            l0_stop: None,
            smrdb_options: Vec::new(),
            disable_wal: false,
            verify_checksums: true,
        }
    }
}

/// Parses `NAME=VALUE` (VALUE as JSON, or as a string if it is not JSON) for
/// [`EngineOptions::smrdb_options`].
pub fn parse_engine_option(s: &str) -> std::result::Result<(String, serde_json::Value), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=VALUE"))?;
    let v = serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()));
    Ok((k.trim().to_string(), v))
}

impl Target {
    /// What data on this target lives on.
    pub fn storage(&self) -> StorageLabel {
        match self {
            Target::Emulated(_) | Target::Memory => StorageLabel::Memory,
            Target::Image(..) => StorageLabel::Image,
            Target::Banded {
                zone_files: false, ..
            } => StorageLabel::Banded,
            Target::Banded {
                zone_files: true, ..
            } => StorageLabel::ZoneFiles,
            Target::Zoned(_) => StorageLabel::ZonedDevice,
            Target::Dir(_) => StorageLabel::Dir,
        }
    }

    /// The file or directory the target writes, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Target::Image(p, _)
            | Target::Banded { path: p, .. }
            | Target::Zoned(p)
            | Target::Dir(Some(p)) => Some(p),
            _ => None,
        }
    }
}

/// Opens engines of one kind on one target, fresh or reusing what is there; the benchmarks
/// reopen through it when a benchmark wants an empty database (db_bench's `fresh_db`).
#[derive(Debug)]
pub struct EngineFactory {
    kind: EngineKind,
    target: Target,
    opts: EngineOptions,
    /// Temporary directory owned by this factory (removed on drop).
    tmp: Option<tempfile::TempDir>,
    /// The run's directory, kept alive as long as the factory (see [`crate::storage::RunDir`]).
    run_dir: Option<Arc<crate::storage::RunDir>>,
    /// This process runs no other engine, so its peak RSS is this engine's.
    alone: bool,
}

impl EngineFactory {
    /// A factory; checks that the target suits the engine and that the engine was built in.
    pub fn new(kind: EngineKind, target: Target, opts: EngineOptions) -> Result<Self> {
        match (kind, &target) {
            (EngineKind::Memory, _) => {}
            (
                EngineKind::Tegula | EngineKind::TegulaLoc,
                Target::Emulated(_) | Target::Image(..) | Target::Banded { .. } | Target::Zoned(_),
            ) => {}
            (EngineKind::Rocksdb | EngineKind::Leveldb, Target::Dir(_)) => {}
            (k, t) => {
                return Err(Error::invalid(format!(
                    "engine {} cannot run on {t:?}",
                    k.name()
                )))
            }
        }
        if kind.on_device() && !cfg!(feature = "smrdb") {
            return Err(Error::Unavailable(format!(
                "engine {} needs tegula-bench built with the `smrdb` feature",
                kind.name()
            )));
        }
        if kind == EngineKind::Leveldb && opts.disable_wal {
            return Err(Error::invalid(
                "engine leveldb cannot run with --disable_wal: LevelDB has no option to write \
                 without its log (RocksDB's disableWAL has no LevelDB counterpart); run it \
                 without the flag, or leave leveldb out",
            ));
        }
        if matches!(kind, EngineKind::Rocksdb | EngineKind::Leveldb) && !cfg!(feature = "compare") {
            return Err(Error::Unavailable(format!(
                "engine {} needs tegula-bench built with the `compare` feature (librocksdb-dev, libleveldb-dev)",
                kind.name()
            )));
        }
        let tmp = match &target {
            Target::Dir(None) => Some(
                tempfile::Builder::new()
                    .prefix(&format!("tegula-bench-{}-", kind.name()))
                    .tempdir()
                    .map_err(|e| Error::io("creating a temporary database directory", e))?,
            ),
            _ => None,
        };
        Ok(EngineFactory {
            kind,
            target,
            opts,
            tmp,
            run_dir: None,
            alone: false,
        })
    }

    /// Says that this process runs no other engine: results then carry the process's peak
    /// RSS as this engine's ([`crate::BenchResult::peak_rss_bytes`]).
    pub fn mark_alone_in_process(&mut self) {
        self.alone = true;
    }

    /// Whether this process runs no other engine.
    pub fn alone_in_process(&self) -> bool {
        self.alone
    }

    /// Keeps the run's directory alive while this factory lives.
    pub fn in_run_dir(mut self, dir: Arc<crate::storage::RunDir>) -> Self {
        self.run_dir = Some(dir);
        self
    }

    /// The engine kind.
    pub fn kind(&self) -> EngineKind {
        self.kind
    }

    /// The engine options.
    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The database directory for RocksDB / LevelDB.
    fn dir(&self) -> Option<&Path> {
        match &self.target {
            Target::Dir(Some(p)) => Some(p),
            Target::Dir(None) => self.tmp.as_ref().map(|t| t.path()),
            _ => None,
        }
    }

    /// Opens the engine. With `fresh`, whatever the target held is destroyed first (an
    /// in-memory drive is new anyway; a disk image is recreated with its own configuration; a
    /// RocksDB / LevelDB directory is destroyed with the engine's own `DestroyDB`).
    pub fn open(&self, fresh: bool) -> Result<Box<dyn KvEngine>> {
        match self.kind {
            EngineKind::Memory => Ok(Box::new(crate::engines::memory::MemoryEngine::new())),
            EngineKind::Tegula | EngineKind::TegulaLoc => self.open_smrdb(fresh),
            EngineKind::Rocksdb | EngineKind::Leveldb => self.open_dir_engine(fresh),
        }
    }

    /// Opens (or creates) the emulated disk of the target.
    pub fn open_disk(&self, fresh: bool) -> Result<Disk> {
        match &self.target {
            Target::Emulated(cfg) => Disk::in_memory(cfg.clone())
                .map_err(|e| Error::device("creating the in-memory emulated drive", e)),
            Target::Image(path, cfg) => {
                let shown = path.display();
                if path.exists() {
                    if !fresh {
                        return Disk::open_image(path, Default::default())
                            .map_err(|e| Error::device(format!("opening disk image {shown}"), e));
                    }
                    let old = Disk::open_image(path, Default::default())
                        .map_err(|e| Error::device(format!("opening disk image {shown}"), e))?;
                    let cfg = old.config().clone();
                    drop(old);
                    std::fs::remove_file(path)
                        .map_err(|e| Error::io(format!("removing {shown} to start fresh"), e))?;
                    Disk::create_image(path, cfg)
                        .map_err(|e| Error::device(format!("recreating disk image {shown}"), e))
                } else {
                    let Some(cfg) = cfg else {
                        return Err(Error::invalid(format!(
                            "disk image {shown} does not exist (create it with `tegula disk create` or give --profile)"
                        )));
                    };
                    Disk::create_image(path, cfg.clone())
                        .map_err(|e| Error::device(format!("creating disk image {shown}"), e))
                }
            }
            other => Err(Error::invalid(format!("target {other:?} is not a device"))),
        }
    }

    /// Opens (or creates) the banded plain file of the target; with `fresh`, the file and its
    /// write pointers are removed first. Reads go through a read-only mapping of the file
    /// ([`HostBandedOptions::mmap_reads`]), as LevelDB reads its table files: without, every
    /// block a seek misses in the 8 MiB block cache costs a `pread` system call (3-4 µs here),
    /// which LevelDB does not pay.
    pub fn open_banded(&self, fresh: bool) -> Result<HostBanded> {
        let Target::Banded {
            path,
            zone_size,
            capacity,
            zone_files: false,
        } = &self.target
        else {
            return Err(Error::invalid(format!(
                "target {:?} is not a banded file",
                self.target
            )));
        };
        let mut sidecar = path.as_os_str().to_owned();
        sidecar.push(".zones");
        if fresh {
            for p in [path.as_path(), Path::new(&sidecar)] {
                match std::fs::remove_file(p) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io(
                            format!("removing {} to start fresh", p.display()),
                            e,
                        ))
                    }
                    _ => {}
                }
            }
        }
        let opts = HostBandedOptions {
            zone_size: *zone_size,
            capacity: Some(*capacity),
            mmap_reads: true,
            ..HostBandedOptions::default()
        };
        HostBanded::open(path, opts)
            .map_err(|e| Error::device(format!("opening {} as a banded file", path.display()), e))
    }

    /// Opens (or creates) the zone-files directory of the target; with `fresh`, a device
    /// already there is removed first (a directory holding anything else is refused).
    pub fn open_zone_files(&self, fresh: bool) -> Result<ZoneFiles> {
        let Target::Banded {
            path,
            zone_size,
            capacity,
            zone_files: true,
        } = &self.target
        else {
            return Err(Error::invalid(format!(
                "target {:?} is not a zone-files directory",
                self.target
            )));
        };
        if fresh && path.exists() {
            if !ZoneFiles::is_device(path) {
                return Err(Error::invalid(format!(
                    "{} exists and is not a zone-files device; remove it or name another                      --disk",
                    path.display()
                )));
            }
            std::fs::remove_dir_all(path)
                .map_err(|e| Error::io(format!("removing {} to start fresh", path.display()), e))?;
        }
        let opts = ZoneFilesOptions {
            zone_size: *zone_size,
            capacity: Some(*capacity / *zone_size * *zone_size),
            mmap_reads: true,
            ..ZoneFilesOptions::default()
        };
        ZoneFiles::open(path, opts)
            .map_err(|e| Error::device(format!("opening {} as zone files", path.display()), e))
    }

    /// Opens the zoned block device of the target; with `fresh`, every zone is reset first.
    pub fn open_zbd(&self, fresh: bool) -> Result<tegula_device::Zbd> {
        let Target::Zoned(path) = &self.target else {
            return Err(Error::invalid(format!(
                "target {:?} is not a zoned block device",
                self.target
            )));
        };
        let dev = tegula_device::Zbd::open(path, tegula_device::ZbdOptions::default())
            .map_err(|e| Error::device(format!("opening {}", path.display()), e))?;
        if fresh {
            use tegula_device::ZonedDevice;
            dev.zone_action(
                tegula_device::ZoneAction::Reset,
                tegula_device::ZoneTarget::All,
            )
            .map_err(|e| Error::device(format!("resetting every zone of {}", path.display()), e))?;
        }
        Ok(dev)
    }

    #[cfg(feature = "smrdb")]
    fn open_smrdb(&self, fresh: bool) -> Result<Box<dyn KvEngine>> {
        use crate::engines::smrdb::SmrdbEngine;
        let loc = self.kind == EngineKind::TegulaLoc;
        let engine = match &self.target {
            Target::Banded {
                zone_files: false, ..
            } => SmrdbEngine::open_banded(self.open_banded(fresh)?, loc, &self.opts)?,
            Target::Banded {
                zone_files: true, ..
            } => SmrdbEngine::open_zone_files(self.open_zone_files(fresh)?, loc, &self.opts)?,
            Target::Zoned(_) => SmrdbEngine::open_zoned(self.open_zbd(fresh)?, loc, &self.opts)?,
            t => SmrdbEngine::open(self.open_disk(fresh)?, t.storage(), loc, &self.opts)?,
        };
        Ok(Box::new(engine))
    }

    #[cfg(not(feature = "smrdb"))]
    fn open_smrdb(&self, _fresh: bool) -> Result<Box<dyn KvEngine>> {
        Err(Error::Unavailable(
            "built without the `smrdb` feature".into(),
        ))
    }

    #[cfg(feature = "compare")]
    fn open_dir_engine(&self, fresh: bool) -> Result<Box<dyn KvEngine>> {
        let dir = self
            .dir()
            .ok_or_else(|| Error::invalid("RocksDB and LevelDB need a directory (--db DIR)"))?;
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        Ok(match self.kind {
            EngineKind::Rocksdb => Box::new(crate::engines::rocksdb::RocksEngine::open(
                dir, &self.opts, fresh,
            )?),
            _ => Box::new(crate::engines::leveldb::LevelEngine::open(
                dir, &self.opts, fresh,
            )?),
        })
    }

    #[cfg(not(feature = "compare"))]
    fn open_dir_engine(&self, _fresh: bool) -> Result<Box<dyn KvEngine>> {
        let _ = self.dir();
        Err(Error::Unavailable(
            "built without the `compare` feature".into(),
        ))
    }
}
