//! A drive-managed interlaced magnetic recording (IMR) drive: raw interlaced media from
//! `tegula-device` behind the block interface, with the track management inside the drive,
//! as `tegula-stl` does for shingled media.
//!
//! Host sectors map statically onto the data tracks in three-phase order
//! ([`mapping`]): bottoms first, then every other top, then the rest. A host write that lands
//! on a bottom track next to a top track holding data is a read-modify-write: the damaged span
//! of those tops is read, staged in a safe area nothing can damage and synced, the bottom is
//! written and synced, and the tops are restored and synced, so that a power cut at any point
//! loses nothing the host was told is durable. The safe region, guard tracks and the staging
//! record are `tegula-kvimr`'s ([`tegula_kvimr::layout`], [`tegula_kvimr::staging`]); the
//! drive's own metadata (which tracks hold data, the newest restored RMW) is in
//! [`meta`], its superblock in [`superblock`]; byte layouts in `docs/formats/dm-imr.md`.
//!
//! ```
//! use std::sync::Arc;
//! use tegula_device::{profile, BlockDevice, Disk};
//! use tegula_dmimr::{DmImr, FormatOptions};
//! let mut cfg = profile("imr").unwrap();
//! cfg.capacity = 256 << 20;
//! let raw = Arc::new(Disk::in_memory(cfg).unwrap());
//! let drive = DmImr::format(raw, FormatOptions::default()).unwrap();
//! drive.write(0, &vec![7u8; 8192]).unwrap();
//! drive.flush().unwrap();
//! let mut back = vec![0u8; 8192];
//! drive.read(0, &mut back).unwrap();
//! assert_eq!(back, vec![7u8; 8192]);
//! ```

#![warn(missing_docs)]

mod drive;
pub mod error;
pub mod mapping;
pub mod meta;
mod open;
pub mod options;
pub mod stats;
pub mod superblock;
mod write;

pub use drive::DmImr;
pub use error::{Error, Result};
pub use open::{MetaCheck, MetaLocations, Probe};
pub use options::FormatOptions;
pub use stats::DmImrStats;
