//! KVIMR: a key-value-store-aware data management middleware for interlaced magnetic
//! recording (IMR) drives, after Liang, Yang and Yang, *KVIMR* (USENIX ATC 2021).
//!
//! An LSM engine stores its SSTables here as files, each created with the LSM level it
//! belongs to. The middleware places them on the drive's tracks — [`Policy::Seq`],
//! [`Policy::ThreePhase`] or KVIMR's [`Policy::CompactionAware`] allocation — and protects
//! the valid data of top tracks that a bottom-track write would destroy by read-modify-write,
//! [`RmwMode::Naive`] (track by track) or KVIMR's [`RmwMode::Merged`] (one per file). The
//! backups live in a staging area on top tracks nothing can damage, so that a power cut at
//! any point loses nothing; a crash-safe, checksummed map records which tracks each file
//! holds (`docs/formats/kvimr-map.md`). [`ZonedAdapter`] shows the store to an engine as a
//! zoned device whose zones are SSTable slots, so SMRDB's LevelDB-style mode runs on it.
//!
//! ```
//! use std::sync::Arc;
//! use tegula_device::{profile, Disk};
//! use tegula_kvimr::{FormatOptions, NewFile, Options, Store};
//! let mut cfg = profile("imr").unwrap();
//! cfg.capacity = 1 << 30;
//! let disk = Arc::new(Disk::in_memory(cfg).unwrap());
//! let tracks = disk.track_layout().unwrap().clone();
//! let store = Store::format(disk, &tracks, FormatOptions::default(), Options::default()).unwrap();
//! let f = store.create(7, NewFile::Data { level: Some(3) }).unwrap();
//! store.append(f, &vec![1u8; 1 << 20]).unwrap();
//! store.seal(f).unwrap();
//! store.sync().unwrap();
//! let mut back = vec![0u8; 4096];
//! store.read(f, 0, &mut back).unwrap();
//! assert_eq!(back, vec![1u8; 4096]);
//! ```

#![warn(missing_docs)]

pub mod alloc;
pub mod error;
mod io;
pub mod layout;
pub mod map;
pub mod options;
mod recovery;
mod rmw;
pub mod staging;
pub mod stats;
mod store;
pub mod superblock;
pub mod tracks;
pub mod zoned;

pub use error::{Error, Result};
pub use map::Place;
pub use options::{FormatOptions, Options, Policy, RmwMode};
pub use stats::{Placement, Stats};
pub use store::{FileInfo, NewFile, Store};
pub use zoned::{ZonedAdapter, ZonedOptions};
