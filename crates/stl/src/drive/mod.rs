//! `DmDrive`: a drive-managed SMR drive — raw shingled media, a translation layer, an optional
//! volatile write cache — behind the block interface, in memory or in a drive image. Thread
//! safe: commands serialize on one mutex, as on one actuator.
//!
//! The drive's methods are grouped by job in private modules: `open` (building, opening,
//! closing), `io` (reads, writes, FLUSH, discard), `vcache` (the volatile write cache's
//! destage), `queue` (queued submit), `clock` (virtual and paced time, idle), `state` (the
//! drive state in the image, poisoning) and `power` (power cuts and recovery), `check` (the damage map against the live data).

mod check;
mod clock;
mod io;
mod open;
mod power;
mod queue;
pub use queue::NCQ_DEPTH;
mod state;
mod vcache;

use crate::check::{CheckReport, Finding, Severity};
use crate::config::DmConfig;
use crate::image::DmImage;
use crate::layer::Layer;
use crate::stats::StlStats;
use parking_lot::Mutex;
use std::time::Instant;
use tegula_device::cache::WriteCache;
use tegula_device::media::{ClockMode, Completion, IoDone, Media, Request};
use tegula_device::{BlockDevice, DeviceError, DeviceInfo, Nanos, Stats, WriteFlags};

/// Results of the block interface, whose errors are the device layer's.
type DevResult<T> = std::result::Result<T, DeviceError>;

/// The drive's state behind its mutex.
struct Inner {
    media: Media,
    layer: Box<dyn Layer>,
    /// Volatile write cache: dirty extents by logical LBA (their data only when the drive
    /// stores data: a metadata-only drive's cache keeps extents, and destages zeros).
    vcache: Option<WriteCache>,
    /// Whether the drive keeps what is written (`DmConfig::store_data`).
    store_data: bool,
    /// Dirty sectors beyond which a write destages half the cache.
    vcache_max: u64,
    /// Runs of at least this many sectors bypass the persistent cache on destage.
    bypass_min: u64,
    last_io: Nanos,
    clock: ClockMode,
    epoch: Option<(Instant, Nanos)>,
    image: Option<DmImage>,
    read_only: bool,
    poisoned: Option<String>,
    destage_buf: Vec<u8>,
    last_save: Instant,
    /// An armed power cut stands for a crash of the host process: nothing more is persisted.
    crash_armed: bool,
    /// What opening the image noticed without failing.
    warnings: Vec<Finding>,
}

/// A drive-managed SMR drive.
pub struct DmDrive {
    inner: Mutex<Inner>,
    config: DmConfig,
    info: DeviceInfo,
}

impl std::fmt::Debug for DmDrive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmDrive").field("info", &self.info).finish()
    }
}

impl DmDrive {
    /// Whether the drive lives in an image file.
    pub fn is_image(&self) -> bool {
        self.inner.lock().image.is_some()
    }

    /// The configuration.
    pub fn config(&self) -> &DmConfig {
        &self.config
    }

    /// Translation-layer statistics.
    pub fn stl_stats(&self) -> StlStats {
        let g = self.inner.lock();
        let mut s = g.layer.stats();
        s.volatile_dirty_bytes =
            g.vcache.as_ref().map_or(0, |c| c.dirty_sectors()) * self.info.sector_size as u64;
        s
    }

    /// Statistics of the raw media (seeks, media bytes, busy time).
    pub fn media_stats(&self) -> Stats {
        self.inner.lock().media.stats()
    }

    /// Problems found when the image was opened that did not stop it (a damaged drive-state
    /// slot or metadata checkpoint passed over, a torn metadata tail), for the caller to show;
    /// empty for a healthy image or a drive in memory.
    pub fn open_warnings(&self) -> Vec<String> {
        let g = self.inner.lock();
        g.warnings
            .iter()
            .filter(|f| f.severity >= Severity::Warning)
            .map(|f| f.message.clone())
            .collect()
    }

    /// Checks the dm-smr image at `path` without modifying it; see
    /// [`check_image`](crate::check::check_image).
    pub fn check(path: &std::path::Path) -> crate::error::Result<CheckReport> {
        crate::check::check_image(path)
    }

    /// Everything opening the image noticed, notes included.
    pub(crate) fn open_findings(&self) -> Vec<Finding> {
        self.inner.lock().warnings.clone()
    }

    /// Runs `f` on the raw media (tests and tools: inspect destroyed sectors, positions).
    pub fn with_media<R>(&self, f: impl FnOnce(&mut Media) -> R) -> R {
        f(&mut self.inner.lock().media)
    }
}

impl Inner {
    /// Sector size in bytes.
    fn ss(&self) -> u64 {
        self.media.sector_size() as u64
    }
}

impl BlockDevice for DmDrive {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.read(self.info.capacity_sectors, lba, buf);
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.write(self.info.capacity_sectors, lba, data, flags.fua);
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn flush(&self) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        let r = g.flush();
        if let Err(e) = &r {
            g.after_error(e);
        }
        r
    }

    fn discard(&self, lba: u64, sectors: u64) -> DevResult<IoDone> {
        self.inner
            .lock()
            .discard(self.info.capacity_sectors, lba, sectors)
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<DevResult<Completion>> {
        self.inner.lock().submit(self.info.capacity_sectors, reqs)
    }

    fn now(&self) -> Nanos {
        self.inner.lock().media.now()
    }

    fn idle(&self, d: Nanos) {
        let mut g = self.inner.lock();
        let target = g.media.now() + d;
        g.idle_until(target);
    }
}
