//! SMRDB: a key-value engine for host-managed shingled (SMR) disks, after Pitchumani, Hughes
//! and Miller, *SMRDB: Key-Value Data Store for Shingled Magnetic Recording Disks*
//! (SYSTOR 2015).
//!
//! The conventional zones hold only a superblock and a manifest of bands; every key-value pair
//! and per-band structure lives in sequential-write-required zones (bands), written strictly
//! sequentially. A memtable the size of a band is flushed to one band (sorted data blocks,
//! index, Bloom filter, byte-based equi-depth histogram, footer). Two organisations:
//! [`Mode::Soc`] (the paper's SMR-friendly two-level scheme with overlapping bands) and
//! [`Mode::Loc`] (LevelDB-style levels). See `docs/formats/smrdb.md` and `docs/guides/smrdb.md`.
//!
//! ```
//! use std::sync::Arc;
//! use tegula_smrdb::{Db, FormatOptions, Options};
//! use tegula_device::{profile, Disk};
//! let mut cfg = profile("hm-smr").unwrap();
//! cfg.zones.zone_size = 1 << 20;
//! cfg.capacity = 64 << 20;
//! let dev = Arc::new(Disk::in_memory(cfg).unwrap());
//! let db = Db::create(dev.clone(), FormatOptions::default(), Options::default()).unwrap();
//! db.put(b"k", b"v").unwrap();
//! db.close().unwrap();
//! let db = Db::open(dev, Options::default()).unwrap(); // the mode comes from the disk
//! assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
//! ```

#![warn(missing_docs)]

pub mod band;
pub mod cache;
pub mod check;
pub mod compaction;
pub mod cursor;
pub mod db;
pub mod error;
pub mod io;
pub mod iter;
pub mod keyorder;
pub mod log;
pub mod manifest;
pub mod memfilter;
pub mod memtable;
pub mod options;
pub mod stats;
pub mod superblock;
pub mod version;

pub use check::CheckReport;
pub use db::{Db, ScanIter, Snapshot, WriteBatch};
pub use error::{Error, Result};
pub use options::{FormatOptions, Mode, Options, WriteOptions};
pub use stats::DbStats;
