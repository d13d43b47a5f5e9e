//! Where each engine of a run keeps its data. By default every engine writes files in one
//! directory of the host file system — RocksDB and LevelDB their databases, the tegula engines
//! a disk image whose reads, writes and flushes are real `pread`/`pwrite`/`fdatasync` on that
//! file — so that a comparison measures the engines on the same storage. An in-memory drive
//! (`Storage::Memory`) is there when asked for; there a sync costs the host nothing.
//!
//! Layout of the run directory (`--db DIR`, or one temporary directory for the whole run):
//!
//! | engine | where |
//! | --- | --- |
//! | `rocksdb`, `leveldb` | `DIR/rocksdb`, `DIR/leveldb`; `DIR` itself when it is the only engine (db_bench's `--db`) |
//! | `tegula`, `tegula-loc` on an image | `DIR/tegula.img`, `DIR/tegula-loc.img` (or `--disk PATH`) |
//! | `tegula`, `tegula-loc` banded | `DIR/tegula.banded` and its `DIR/tegula.banded.zones` (or `--disk PATH`) |
//! | `tegula`, `tegula-loc` on zone files | the directory `DIR/tegula.zones/` (or `--disk PATH`) |

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tegula_kv::{EngineKind, StorageLabel};

/// Where the tegula engines keep their data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// An emulated drive whose media is a disk image file in the run directory (the default):
    /// timed on the drive model, stored with real file I/O, a drive flush `fdatasync`s it.
    #[default]
    Image,
    /// An emulated drive in this process's memory (`--in-memory`): nothing reaches a file,
    /// a sync costs the host nothing, and the drive's contents count in the process's RSS.
    Memory,
    /// A plain file banded like host-managed SMR with zones of this many bytes (`--banded`):
    /// real `pread`/`pwrite`/`fdatasync`, write pointers in a sidecar, no drive model (no
    /// modelled device time).
    Banded(u64),
    /// A directory with one file per zone of this many bytes (`--zone-files`,
    /// `docs/formats/zone-files.md`): like `Banded`, but a flush can be scoped to some zones
    /// and syncs only their files, so that one zone's flush never writes another's pages.
    ZoneFiles(u64),
}

impl Storage {
    /// The label of this storage in results: `image`, `memory` or `banded`.
    pub fn label(self) -> StorageLabel {
        match self {
            Storage::Image => StorageLabel::Image,
            Storage::Memory => StorageLabel::Memory,
            Storage::Banded(_) => StorageLabel::Banded,
            Storage::ZoneFiles(_) => StorageLabel::ZoneFiles,
        }
    }
}

/// The directory every engine of a run writes into: the one given (`--db DIR`) or a
/// temporary one, removed when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
    _tmp: Option<Arc<tempfile::TempDir>>,
}

impl RunDir {
    /// `dir` if given (created if missing), else a new temporary directory.
    pub fn new(dir: Option<&Path>) -> Result<Self> {
        match dir {
            Some(d) => {
                std::fs::create_dir_all(d)
                    .map_err(|e| Error::io(format!("creating {}", d.display()), e))?;
                Ok(RunDir {
                    path: d.to_path_buf(),
                    _tmp: None,
                })
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("tegula-bench-")
                    .tempdir()
                    .map_err(|e| Error::io("creating a temporary directory for the run", e))?;
                Ok(RunDir {
                    path: t.path().to_path_buf(),
                    _tmp: Some(Arc::new(t)),
                })
            }
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the directory is temporary (removed at the end of the run).
    pub fn is_temporary(&self) -> bool {
        self._tmp.is_some()
    }

    /// Where engine `kind` of a run of `engines` keeps its data (see the module's table);
    /// `None` for engines that keep nothing on the host (the in-memory ones).
    pub fn place(
        &self,
        kind: EngineKind,
        storage: Storage,
        engines: &[EngineKind],
    ) -> Option<PathBuf> {
        match kind {
            EngineKind::Memory => None,
            EngineKind::Rocksdb | EngineKind::Leveldb => Some(if engines.len() == 1 {
                self.path.clone()
            } else {
                self.path.join(kind.name())
            }),
            EngineKind::Tegula | EngineKind::TegulaLoc => match storage {
                Storage::Memory => None,
                Storage::Image => Some(self.path.join(format!("{}.img", kind.name()))),
                Storage::Banded(_) => Some(self.path.join(format!("{}.banded", kind.name()))),
                Storage::ZoneFiles(_) => Some(self.path.join(format!("{}.zones", kind.name()))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_gets_its_own_place_in_one_directory() {
        let d = RunDir::new(None).expect("tmp");
        assert!(d.is_temporary() && d.path().is_dir());
        let all = [EngineKind::Tegula, EngineKind::Rocksdb, EngineKind::Leveldb];
        let p = |k, s| d.place(k, s, &all).expect("a place");
        assert_eq!(
            p(EngineKind::Tegula, Storage::Image),
            d.path().join("tegula.img")
        );
        assert_eq!(
            p(EngineKind::Tegula, Storage::Banded(1 << 20)),
            d.path().join("tegula.banded")
        );
        assert_eq!(
            p(EngineKind::Rocksdb, Storage::Image),
            d.path().join("rocksdb")
        );
        assert_eq!(
            p(EngineKind::Leveldb, Storage::Image),
            d.path().join("leveldb")
        );
        assert!(d.place(EngineKind::Tegula, Storage::Memory, &all).is_none());
        // Alone, RocksDB uses the directory itself, as db_bench's --db does.
        assert_eq!(
            d.place(EngineKind::Rocksdb, Storage::Image, &[EngineKind::Rocksdb]),
            Some(d.path().to_path_buf())
        );
        let path = d.path().to_path_buf();
        drop(d);
        assert!(!path.exists(), "the temporary directory goes with the run");
    }

    #[test]
    fn labels_are_the_json_names() {
        assert_eq!(Storage::Image.label().name(), "image");
        assert_eq!(Storage::Memory.label().name(), "memory");
        assert_eq!(Storage::Banded(4096).label().name(), "banded");
        assert_eq!(
            serde_json::to_value(StorageLabel::Dir).expect("json"),
            serde_json::json!("dir")
        );
    }
}
