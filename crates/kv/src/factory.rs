//! Opening an engine of one kind on one target, fresh or reusing what is there
//! ([`EngineFactory`]): the one place that turns a target into a device (through the one
//! device opener, [`tegula_open`]) or a directory.

use crate::engine::KvEngine;
use crate::error::{Error, Result};
use crate::kind::EngineKind;
use crate::options::EngineOptions;
use crate::storage_label::StorageLabel;
use crate::target::Target;
use std::any::Any;
use std::path::Path;
use std::sync::Arc;
use tegula_device::{Disk, HostBanded, ZoneFiles};
use tegula_open::{Access, Opened, Spec};

/// Opens engines of one kind on one target, fresh or reusing what is there; the benchmarks
/// reopen through it when a benchmark wants an empty database (db_bench's `fresh_db`).
pub struct EngineFactory {
    kind: EngineKind,
    target: Target,
    opts: EngineOptions,
    /// Temporary directory owned by this factory (removed on drop).
    tmp: Option<tempfile::TempDir>,
    /// What the caller keeps alive as long as the factory (a benchmark run's directory).
    keep_alive: Option<Arc<dyn Any + Send + Sync>>,
    /// This process runs no other engine, so its peak RSS is this engine's.
    alone: bool,
}

impl std::fmt::Debug for EngineFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineFactory")
            .field("kind", &self.kind)
            .field("target", &self.target)
            .field("opts", &self.opts)
            .field("tmp", &self.tmp)
            .field("alone", &self.alone)
            .finish_non_exhaustive()
    }
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
                "engine {} needs tegula-kv built with the `smrdb` feature",
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
                "engine {} needs tegula-kv built with the `compare` feature (librocksdb-dev, libleveldb-dev)",
                kind.name()
            )));
        }
        let tmp = match &target {
            Target::Dir(None) => Some(
                tempfile::Builder::new()
                    .prefix(&format!("tegula-{}-", kind.name()))
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
            keep_alive: None,
            alone: false,
        })
    }

    /// Says that this process runs no other engine: results then carry the process's peak
    /// RSS as this engine's (tegula-bench's `BenchResult::peak_rss_bytes`).
    pub fn mark_alone_in_process(&mut self) {
        self.alone = true;
    }

    /// Whether this process runs no other engine.
    pub fn alone_in_process(&self) -> bool {
        self.alone
    }

    /// Keeps `guard` (a benchmark run's directory, which the target lies in) alive while this
    /// factory lives.
    pub fn keep_alive(mut self, guard: Arc<dyn Any + Send + Sync>) -> Self {
        self.keep_alive = Some(guard);
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

    /// Opens (or creates) the device of a target on a path through the one opener
    /// ([`tegula_open`]), fresh if asked: the spec of `path` for the target's kind. Reads of
    /// a banded file or zone files go through a read-only mapping
    /// ([`tegula_open::Spec::mmap_reads`]), as LevelDB reads its table files: without, every
    /// block a seek misses in the 8 MiB block cache costs a `pread` system call (3-4 µs
    /// here), which LevelDB does not pay.
    fn open_device(&self, fresh: bool) -> Result<Opened> {
        let mut spec = match &self.target {
            Target::Image(path, cfg) => {
                if !path.exists() && cfg.is_none() {
                    return Err(Error::invalid(format!(
                        "disk image {} does not exist (create it with `tegula disk create` or give --profile)",
                        path.display()
                    )));
                }
                let mut spec = Spec::new(path, Access::ReadWrite);
                spec.new_image = cfg.clone();
                spec
            }
            Target::Banded {
                path,
                zone_size,
                capacity,
                zone_files,
            } => {
                let mut spec = Spec::new(path, Access::ReadWrite);
                if *zone_files {
                    spec.zone_files = Some(*zone_size);
                    spec.capacity = Some(*capacity / *zone_size * *zone_size);
                } else {
                    spec.banded = Some(*zone_size);
                    spec.capacity = Some(*capacity);
                }
                spec.mmap_reads = true;
                spec
            }
            Target::Zoned(path) => Spec::new(path, Access::ReadWrite),
            other => return Err(Error::invalid(format!("target {other:?} is not a device"))),
        };
        spec.create = true;
        spec.offers_banded = true;
        spec.fresh = fresh;
        Ok(tegula_open::open(&spec)?.device)
    }

    /// Opens (or creates) the emulated disk of the target: a new in-memory drive, or a disk
    /// image (created with the target's configuration if missing; with `fresh`, recreated
    /// with its own configuration). A KVIMR image is not a plain disk: SMRDB opens it on its
    /// store ([`EngineFactory::open`]).
    pub fn open_disk(&self, fresh: bool) -> Result<Disk> {
        match &self.target {
            Target::Emulated(cfg) => Disk::in_memory(cfg.clone())
                .map_err(|e| Error::device("creating the in-memory emulated drive", e)),
            Target::Image(path, _) => match self.open_device(fresh)? {
                Opened::Disk(d) => Ok(d),
                Opened::Kvimr(_) => Err(Error::invalid(format!(
                    "{} holds a KVIMR store: SMRDB opens it on the store, not on the raw drive",
                    path.display()
                ))),
                // A drive-managed drive says it has no zones; anything else is no image.
                other => Err(match other.zoned(path) {
                    Err(e) => e.into(),
                    Ok(_) => Error::invalid(format!("{} is not a disk image", path.display())),
                }),
            },
            other => Err(Error::invalid(format!("target {other:?} is not a device"))),
        }
    }

    /// Opens (or creates) the banded plain file of the target; with `fresh`, the file and its
    /// write pointers are removed first.
    pub fn open_banded(&self, fresh: bool) -> Result<HostBanded> {
        match (&self.target, self.open_device_of(fresh, "a banded file")?) {
            (
                Target::Banded {
                    zone_files: false, ..
                },
                Opened::Banded(d),
            ) => Ok(d),
            _ => Err(self.not_a("a banded file")),
        }
    }

    /// Opens (or creates) the zone-files directory of the target; with `fresh`, a device
    /// already there is removed first (a directory holding anything else is refused).
    pub fn open_zone_files(&self, fresh: bool) -> Result<ZoneFiles> {
        match (
            &self.target,
            self.open_device_of(fresh, "a zone-files directory")?,
        ) {
            (
                Target::Banded {
                    zone_files: true, ..
                },
                Opened::ZoneFiles(d),
            ) => Ok(d),
            _ => Err(self.not_a("a zone-files directory")),
        }
    }

    /// Opens the zoned block device of the target; with `fresh`, every zone is reset first.
    pub fn open_zbd(&self, fresh: bool) -> Result<tegula_device::Zbd> {
        match (
            &self.target,
            self.open_device_of(fresh, "a zoned block device")?,
        ) {
            (Target::Zoned(_), Opened::Zbd(d)) => Ok(d),
            _ => Err(self.not_a("a zoned block device")),
        }
    }

    /// [`EngineFactory::open_device`] for a target that should be `what`.
    fn open_device_of(&self, fresh: bool, what: &str) -> Result<Opened> {
        match &self.target {
            Target::Banded { .. } | Target::Zoned(_) => self.open_device(fresh),
            _ => Err(self.not_a(what)),
        }
    }

    fn not_a(&self, what: &str) -> Error {
        Error::invalid(format!("target {:?} is not {what}", self.target))
    }

    #[cfg(feature = "smrdb")]
    fn open_smrdb(&self, fresh: bool) -> Result<Box<dyn KvEngine>> {
        use crate::engines::smrdb::SmrdbEngine;
        let loc = self.kind == EngineKind::TegulaLoc;
        if let Target::Image(path, _) = &self.target {
            // Before a fresh start recreates it.
            if !loc && tegula_open::kvimr::is_interlaced_image(path) {
                return Err(SmrdbEngine::soc_on_kvimr());
            }
        }
        let engine = match &self.target {
            Target::Banded {
                zone_files: false, ..
            } => SmrdbEngine::open_banded(self.open_banded(fresh)?, loc, &self.opts)?,
            Target::Banded {
                zone_files: true, ..
            } => SmrdbEngine::open_zone_files(self.open_zone_files(fresh)?, loc, &self.opts)?,
            Target::Zoned(_) => SmrdbEngine::open_zoned(self.open_zbd(fresh)?, loc, &self.opts)?,
            Target::Image(path, _) => match self.open_device(fresh)? {
                // A raw interlaced image: a KVIMR store with the defaults of `tegula db
                // create`, and SMRDB-LOC on it.
                Opened::Disk(d) if tegula_open::kvimr::is_raw_interlaced(&d) => {
                    if !loc {
                        return Err(SmrdbEngine::soc_on_kvimr());
                    }
                    let k =
                        tegula_open::KvimrDrive::format(d, &tegula_open::KvimrFormat::default())?;
                    SmrdbEngine::open_kvimr(k, StorageLabel::Image, loc, &self.opts)?
                }
                Opened::Disk(d) => SmrdbEngine::open(d, StorageLabel::Image, loc, &self.opts)?,
                // A KVIMR image (`tegula db create` on an imr image): SMRDB-LOC on the store.
                Opened::Kvimr(k) => {
                    SmrdbEngine::open_kvimr(k, StorageLabel::Image, loc, &self.opts)?
                }
                other => {
                    return Err(match other.zoned(path) {
                        Err(e) => e.into(),
                        Ok(_) => Error::invalid(format!("{} is not a disk image", path.display())),
                    })
                }
            },
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
