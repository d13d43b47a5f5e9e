//! [`EngineSetup`]: which engines a `db` or `ycsb` run compares and where each keeps its data
//! (by default all of them in files of one directory, [`crate::storage`]); it turns into one
//! [`EngineFactory`] per engine.

use crate::drive::zoned_for_smrdb;
use crate::error::{Error, Result};
use crate::storage::{RunDir, Storage};
use std::path::PathBuf;
use std::sync::Arc;
use tegula_device::{profile, DiskConfig, DriveKind};
use tegula_kv::{EngineFactory, EngineKind, EngineOptions, Target};
use tegula_open::{kind_of, Access, PathKind, Spec};

/// Engines, targets and the settings every engine shares (the same memory budget for all).
/// [`EngineSetup::default`] is the one source of the defaults documented on each field.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSetup {
    /// Engines, run one after the other in this order (default: `tegula`).
    pub engines: Vec<EngineKind>,
    /// Where the tegula engines keep their data (default [`Storage::Image`]: an emulated
    /// drive on a disk image beside the other engines' databases).
    pub storage: Storage,
    /// The tegula engines' file: a disk image, created from `profile` and `capacity` if
    /// missing (recreated when a benchmark wants a fresh database), or with
    /// [`Storage::Banded`] a plain file (default: none, `<db>/<engine>.img` or `.banded`).
    pub disk: Option<PathBuf>,
    /// Drive profile of a new emulated drive (default `hm-smr`). A conventional profile is
    /// banded for SMRDB ([`crate::drive::zoned_for_smrdb`]).
    pub profile: String,
    /// Capacity of a new emulated drive or banded file in bytes (default 16 GiB; files are
    /// sparse).
    pub capacity: u64,
    /// The run's directory: RocksDB's and LevelDB's databases and the tegula engines' image or
    /// banded file (default: none, one temporary directory for the run; see
    /// [`crate::storage`] for the layout).
    pub db: Option<PathBuf>,
    /// Write buffer (memtable) of RocksDB and LevelDB in bytes (default `None`: the band
    /// (zone) size of the drive the tegula engines use, so all engines buffer alike).
    pub write_buffer_size: Option<u64>,
    /// Block cache of every engine in bytes (default 8 MiB).
    pub cache_size: u64,
    /// Bloom filter bits per key of every engine (default 10).
    pub bloom_bits: u32,
    /// Collect RocksDB statistics (default off): gives its write amplification and
    /// compaction bytes, costs a little time.
    pub statistics: bool,
    /// SMRDB options by name for the tegula engines (default none).
    pub smrdb_options: Vec<(String, serde_json::Value)>,
    /// Write without the write-ahead log (default off; see [`EngineOptions::disable_wal`]).
    pub disable_wal: bool,
    /// Every engine checks block checksums on reads (default on; see
    /// [`EngineOptions::verify_checksums`]).
    pub verify_checksums: bool,
}

impl Default for EngineSetup {
    fn default() -> Self {
        let o = EngineOptions::default();
        EngineSetup {
            engines: vec![EngineKind::Tegula],
            storage: Storage::default(),
            disk: None,
            profile: "hm-smr".into(),
            capacity: 16 << 30,
            db: None,
            write_buffer_size: None,
            cache_size: o.cache_size,
            bloom_bits: o.bloom_bits,
            statistics: o.statistics,
            smrdb_options: o.smrdb_options,
            disable_wal: o.disable_wal,
            verify_checksums: o.verify_checksums,
        }
    }
}

impl EngineSetup {
    /// The configuration of a new emulated drive: `profile` at `capacity`, banded if
    /// conventional.
    pub fn device_config(&self) -> Result<DiskConfig> {
        let mut cfg = profile(&self.profile).map_err(|e| Error::invalid(e.to_string()))?;
        zoned_for_smrdb(&mut cfg, &self.profile)?;
        cfg.capacity = self.capacity;
        cfg.validate()
            .map_err(|e| Error::invalid(format!("profile {}: {e}", self.profile)))?;
        Ok(cfg)
    }

    /// The band size the tegula engines would use: the banded file's zone size, the zone
    /// capacity of the `disk` image or zoned block device if it exists, else of the new
    /// drive's configuration.
    pub fn band_size(&self) -> Result<u64> {
        if let Storage::Banded(z) | Storage::ZoneFiles(z) = self.storage {
            return Ok(z);
        }
        if let Some(p) = self
            .disk
            .as_ref()
            .filter(|p| p.exists() && self.storage == Storage::Image)
        {
            let spec = Spec::new(p, Access::ReadOnly);
            if kind_of(p) == PathKind::ZonedBlock {
                let d = tegula_open::open(&spec).map_err(tegula_kv::Error::from)?;
                let i = d.device.as_block().info();
                return Ok(i.zone_capacity_sectors * u64::from(i.sector_size));
            }
            let d = tegula_open::open_raw_disk(&spec)
                .map_err(tegula_kv::Error::from)?
                .device;
            let cfg = d.config();
            if matches!(cfg.kind, DriveKind::Cmr | DriveKind::SmrRaw) {
                return Err(Error::invalid(format!(
                    "disk image {} has no sequential zones for SMRDB; remove it and give \
                     --profile (a conventional profile such as cmr-7200 is banded into zones), \
                     or create a zoned image with `tegula disk create --profile hm-smr`",
                    p.display()
                )));
            }
            return Ok(cfg.zone_capacity_sectors() * u64::from(cfg.sector_size));
        }
        let cfg = self.device_config()?;
        Ok(cfg.zone_capacity_sectors() * u64::from(cfg.sector_size))
    }

    /// The options every engine gets.
    pub fn engine_options(&self) -> Result<EngineOptions> {
        let needs_band = self.write_buffer_size.is_none()
            || self.engines.iter().any(|k| k.on_device()) && self.disk.is_some();
        let band = if needs_band {
            Some(self.band_size()?)
        } else {
            None
        };
        Ok(EngineOptions {
            write_buffer_size: self.write_buffer_size.or(band).unwrap_or_default(),
            cache_size: self.cache_size,
            bloom_bits: self.bloom_bits,
            statistics: self.statistics,
            smrdb_options: self.smrdb_options.clone(),
            disable_wal: self.disable_wal,
            verify_checksums: self.verify_checksums,
            ..EngineOptions::default()
        })
    }

    /// Checks the storage settings against each other.
    fn check_storage(&self) -> Result<()> {
        if self.engines.is_empty() {
            return Err(Error::invalid("no engine given"));
        }
        let on_device = self.engines.iter().filter(|k| k.on_device()).count();
        if on_device > 1 && self.disk.is_some() {
            return Err(Error::invalid(
                "tegula and tegula-loc cannot share one --disk image; run them one at a time",
            ));
        }
        match self.storage {
            Storage::Memory if self.disk.is_some() => Err(Error::invalid(
                "--disk names a file for the tegula engines, --in-memory keeps their drive in \
                 memory: give one of them",
            )),
            Storage::Banded(z) | Storage::ZoneFiles(z) if z == 0 || z % 4096 != 0 => {
                Err(Error::invalid(format!(
                    "--banded/--zone-files {z}: the zone size must be a positive multiple of \
                     4096 bytes"
                )))
            }
            Storage::Banded(z) | Storage::ZoneFiles(z) if self.capacity / z < 8 => {
                Err(Error::invalid(format!(
                    "--capacity {} holds fewer than 8 zones of {z} bytes (SMRDB needs a \
                 conventional zone and several bands)",
                    self.capacity
                )))
            }
            _ => Ok(()),
        }
    }

    /// The target of engine `kind` in run directory `dir` (none for in-memory targets).
    fn target(&self, kind: EngineKind, dir: Option<&RunDir>) -> Result<Target> {
        let place = || {
            dir.and_then(|d| d.place(kind, self.storage, &self.engines))
                .ok_or_else(|| Error::internal(format!("no place for {}", kind.name())))
        };
        Ok(match kind {
            EngineKind::Memory => Target::Memory,
            EngineKind::Rocksdb | EngineKind::Leveldb => Target::Dir(Some(place()?)),
            EngineKind::Tegula | EngineKind::TegulaLoc => match self.storage {
                Storage::Memory => Target::Emulated(self.device_config()?),
                Storage::Image => {
                    let p = match &self.disk {
                        Some(p) => p.clone(),
                        None => place()?,
                    };
                    if matches!(
                        tegula_device::zbd::zoned_model_of(&p),
                        Some(
                            tegula_device::zbd::ZonedModel::HostManaged
                                | tegula_device::zbd::ZonedModel::HostAware
                        )
                    ) {
                        return Ok(Target::Zoned(p));
                    }
                    let cfg = if p.exists() {
                        None
                    } else {
                        Some(self.device_config()?)
                    };
                    Target::Image(p, cfg)
                }
                Storage::Banded(zone_size) | Storage::ZoneFiles(zone_size) => Target::Banded {
                    path: match &self.disk {
                        Some(p) => p.clone(),
                        None => place()?,
                    },
                    zone_size,
                    capacity: self.capacity,
                    zone_files: matches!(self.storage, Storage::ZoneFiles(_)),
                },
            },
        })
    }

    /// Whether engine `kind` keeps files in the run directory.
    fn uses_run_dir(&self, kind: EngineKind) -> bool {
        match kind {
            EngineKind::Memory => false,
            EngineKind::Rocksdb | EngineKind::Leveldb => true,
            EngineKind::Tegula | EngineKind::TegulaLoc => {
                self.storage != Storage::Memory && self.disk.is_none()
            }
        }
    }

    /// The factories of every engine, in order, their files in one run directory (`db`, or
    /// a temporary one removed when the last factory is dropped).
    pub fn factories(&self) -> Result<Vec<EngineFactory>> {
        self.check_storage()?;
        let opts = self.engine_options()?;
        let dir = if self.engines.iter().any(|&k| self.uses_run_dir(k)) {
            Some(Arc::new(RunDir::new(self.db.as_deref())?))
        } else {
            None
        };
        self.engines
            .iter()
            .map(|&k| {
                let f = EngineFactory::new(k, self.target(k, dir.as_deref())?, opts.clone())?;
                Ok(match &dir {
                    Some(d) => f.keep_alive(d.clone()),
                    None => f,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_engine_defaults_and_the_band_size() {
        let s = EngineSetup::default();
        let o = s.engine_options().expect("options");
        assert_eq!(o.write_buffer_size, 256 << 20);
        assert_eq!(o.cache_size, 8 << 20);
        assert_eq!(s.capacity, 16 << 30);
    }

    #[test]
    fn a_conventional_profile_is_banded_and_a_raw_one_refused() {
        let s = EngineSetup {
            profile: "cmr-7200".into(),
            ..EngineSetup::default()
        };
        let cfg = s.device_config().expect("banded");
        assert_eq!(cfg.kind, DriveKind::HmSmr);
        assert_eq!(s.band_size().expect("band"), 256 << 20);
        let s = EngineSetup {
            profile: "smr-5900".into(),
            ..EngineSetup::default()
        };
        assert!(s.factories().is_err_and(|e| e.is_invalid_argument()));
    }

    #[test]
    fn engines_missing_from_the_build_are_refused_with_a_reason() {
        let s = EngineSetup {
            engines: vec![],
            ..EngineSetup::default()
        };
        assert!(s.factories().is_err());
        if !cfg!(feature = "compare") {
            let s = EngineSetup {
                engines: vec![EngineKind::Rocksdb],
                ..EngineSetup::default()
            };
            let e = s.factories().expect_err("no compare feature");
            assert!(e.is_unavailable(), "{e}");
            assert!(e.to_string().contains("compare"), "{e}");
        }
    }
}
