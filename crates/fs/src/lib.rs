//! tegula's file system on zones (seeds 001 and 003): metadata — namespace, inodes with
//! their extent maps, sizes, times, modes — lives in the conventional zones as a checksummed
//! log plus alternating checkpoints; file data is written through a per-file write buffer as
//! ZEA extents in the sequential zones. [`Fs`] is a plain Rust API by inode number; the FUSE
//! adapter ([`fuse`]) and the `tegula fs` commands call it. Formats: `docs/formats/fs.md`.

mod buffer;
mod check;
mod cleaner;
mod error;
mod estimate;
pub mod formats;
mod fs;
pub mod fuse;
mod io;
mod journal;
mod mount;
mod passthrough;
pub mod placement;
mod pool;
pub mod profile;
mod serve;
mod state;
mod triggers;
mod unmount_error;

pub use check::{CheckReport, MetaStat, ZoneStat};
pub use cleaner::{
    CleanCandidate, CleanKind, CleanPolicy, CleanReport, CleanStep, UnknownCleanPolicy,
};
pub use error::{FsError, Result};
pub use estimate::GcEstimate;
pub use fs::{now_ns, Attr, DirEntry, Fs, FsOptions, SetAttr, StatFs, NAME_MAX};
pub use io::{ChunkTarget, FlushJob};
pub use journal::SB_MAGIC as SUPERBLOCK_MAGIC;
pub use mount::{mount, mount_passthrough, MountEvent, MountOptions, Mounted};
pub use placement::{Placement, UnknownPlacement};
pub use pool::Pool;
pub use profile::{Profile, Profiler};
pub use state::{Kind, ROOT};
pub use triggers::{Triggers, Urgency};
pub use unmount_error::UnmountError;
