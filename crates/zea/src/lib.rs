//! ZEA, a zone-based extent allocator (seed 001). One [`Zea`] instance manages one sequential
//! zone: [`Zea::put`] appends an extent at the write pointer followed by a metadata block
//! (logical address, length, checksums, a marker, a sequence number and back pointers to the
//! previous extents' metadata) and returns its LBA once both are durable; [`Zea::get`]
//! returns an extent only when asked for exactly an extent ZEA placed, after checking its
//! checksum; [`Zea::iter_forward`] and [`Zea::iter_back`] rediscover every extent of a zone
//! and its order from the zone alone, also after a crash that tore the last extent.
//! Garbage collection is left to the consumer. The on-disk format is `docs/formats/zea.md`.
//!
//! ```
//! use std::sync::Arc;
//! use tegula_device::{profile, Disk, ZonedDevice};
//! let mut cfg = profile("hm-smr").unwrap();
//! cfg.capacity = 256 << 20;
//! cfg.zones.zone_size = 16 << 20;
//! let disk: Arc<dyn ZonedDevice> = Arc::new(Disk::in_memory(cfg).unwrap());
//! let mut z = tegula_zea::Zea::open(disk, 3, tegula_zea::Options::default()).unwrap();
//! let p = z.put(42, b"hello").unwrap();
//! assert_eq!(z.get(p.lba, 5).unwrap(), b"hello");
//! assert_eq!(z.iter_forward().next().unwrap().unwrap().zba, 42);
//! ```

mod alloc;
mod error;
mod iter;
pub mod meta;
mod options;

pub use alloc::{Placed, Recovery, Zea};
pub use error::{MetaError, Result, ZeaError};
pub use iter::{BackIter, ForwardIter};
pub use meta::ExtentMeta;
pub use options::{Durability, Options};
