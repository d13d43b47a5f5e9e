//! Drive-managed SMR drives for tegula: raw shingled media from `tegula-device` behind a shingle
//! translation layer (STL) and the block interface, as Skylight (seed 004) found them.
//!
//! Three layers share one internal interface: the journal with quantized entries and a bounded
//! extent map (the Seagate drives), Cassuto's set-associative layer (disk or flash cache), and a
//! fully associative layer with dynamic band mapping. Every physical access goes through the
//! media model, so timing and shingled damage are real; every layer persists its map so that a
//! power cut loses nothing acknowledged.
//!
//! ```
//! use tegula_stl::{DmConfig, DmDrive};
//! use tegula_device::BlockDevice;
//! let cfg = DmConfig::from_toml(
//!     "kind = \"dm-smr\"\ncapacity = \"256MiB\"\ncache_size = \"64MiB\"\nmap_entries = 1000\n",
//! ).unwrap();
//! let drive = DmDrive::new(cfg).unwrap();
//! drive.write(8, &vec![7u8; 4096]).unwrap();
//! let mut back = vec![0u8; 4096];
//! drive.read(8, &mut back).unwrap();
//! assert_eq!(back, vec![7u8; 4096]);
//! ```

mod bands;
pub mod check;
pub mod config;
mod damage;
#[cfg(test)]
mod decoder_tests;
mod drive;
mod durable;
pub mod error;
mod extmap;
mod fullassoc;
#[doc(hidden)]
pub mod fuzzing;
mod idle;
pub mod image;
mod journal;
mod layer;
pub mod layout;
pub mod metalog;
pub mod profiles;
mod setassoc;
pub mod stats;

pub use check::{CheckReport, Finding, Severity};
pub use config::{CacheLocation, CacheMedia, Cleaning, DmConfig, Mapping, StlKind};
pub use drive::{DmDrive, NCQ_DEPTH};
pub use error::{Result, StlError};
pub use image::is_dm_image;
pub use profiles::{dm_profile, DM_PROFILES};
pub use stats::StlStats;
