//! `DmImr`: the drive behind the block interface. Thread safe: commands serialize on one
//! mutex, as on one actuator. The write path is in `write`, formatting, opening and recovery
//! in `open`.

use crate::error::{Error, Result};
use crate::mapping::Mapping;
use crate::stats::DmImrStats;
use crate::superblock::Superblock;
use parking_lot::Mutex;
use std::sync::Arc;
use tegula_device::api::submit_serially;
use tegula_device::{
    BlockDevice, Completion, DeviceError, DeviceInfo, Disk, IoDone, Nanos, Request, TrackLayout,
    WriteFlags,
};
use tegula_kvimr::layout::Layout;

/// Results of the block interface, whose errors are the device layer's.
type DevResult<T> = std::result::Result<T, DeviceError>;

/// The layer's state behind its mutex.
pub(crate) struct Inner {
    /// The raw interlaced drive.
    pub disk: Arc<Disk>,
    /// Its track-level interface (the damage rule).
    pub tl: TrackLayout,
    /// Safe region, guards and data tracks.
    pub layout: Layout,
    /// Host sectors onto data tracks.
    pub map: Mapping,
    /// The superblock read or written.
    pub sb: Superblock,
    /// Sector size in bytes.
    pub ss: u64,
    /// Per track: holds host data (a bottom write protects such a top; a top without
    /// reads as zeros).
    pub valid: Vec<bool>,
    /// Sequence number of the newest metadata record written.
    pub meta_seq: u64,
    /// The flags or the applied RMW changed since the last metadata record.
    pub meta_dirty: bool,
    /// The newest read-modify-write whose restore is durable.
    pub applied: u64,
    /// The newest read-modify-write staged.
    pub rmw_seq: u64,
    /// Bottom tracks written since the last cache flush of the raw drive.
    pub dirty_bottoms: Vec<u32>,
    /// Counters.
    pub stats: DmImrStats,
    /// Set when a write failed half way: further writes are refused until reopened.
    pub poisoned: Option<String>,
    /// What opening noticed without failing.
    pub warnings: Vec<String>,
    /// Sectors of one metadata record.
    pub record_sectors: u64,
    /// The format keeps two copies of each metadata record and superblock copy B.
    pub twins: bool,
    /// Damaged copies of the newest metadata record found by `load_meta`, to repair.
    pub meta_damage: Vec<String>,
    /// Damaged copies opening rewrote from their good twins.
    pub repaired: Vec<String>,
}

/// A drive-managed IMR drive.
pub struct DmImr {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) info: DeviceInfo,
}

impl std::fmt::Debug for DmImr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmImr").field("info", &self.info).finish()
    }
}

impl DmImr {
    /// Counters of the layer.
    pub fn stats(&self) -> DmImrStats {
        self.inner.lock().stats
    }

    /// The raw interlaced drive underneath (its media statistics, power cuts in tests).
    pub fn raw(&self) -> Arc<Disk> {
        self.inner.lock().disk.clone()
    }

    /// Host sectors at the end of the bottoms-only phase and of the alternate-tops phase.
    pub fn phase_ends(&self) -> [u64; 2] {
        self.inner.lock().map.phase_ends()
    }

    /// Data tracks holding host data, as (bottom, top) counts.
    pub fn tracks_in_use(&self) -> (u64, u64) {
        let g = self.inner.lock();
        let mut n = (0, 0);
        for &t in &g.layout.data {
            if g.valid[t as usize] {
                if g.layout.track(t).bottom {
                    n.0 += 1;
                } else {
                    n.1 += 1;
                }
            }
        }
        n
    }

    /// Problems opening noticed without failing (a damaged metadata or staging slot passed
    /// over, a damaged copy rewritten from its twin), for the caller to show.
    pub fn open_warnings(&self) -> Vec<String> {
        let g = self.inner.lock();
        g.warnings
            .iter()
            .chain(g.repaired.iter())
            .cloned()
            .collect()
    }

    /// Damaged copies (superblock, newest metadata record) that opening found and rewrote
    /// from their good twins: nothing was lost, something was wrong (`disk check` reports
    /// them).
    pub fn repaired_at_open(&self) -> Vec<String> {
        self.inner.lock().repaired.clone()
    }

    /// Top tracks that hold host data yet have destroyed sectors: always empty unless the
    /// layer has a bug (tests and `disk check` use it).
    pub fn damaged_valid_tops(&self) -> Vec<u64> {
        let g = self.inner.lock();
        let mut out = Vec::new();
        g.disk.with_media(|m| {
            for &t in &g.layout.data {
                let tr = g.layout.track(t);
                if g.valid[t as usize]
                    && !tr.bottom
                    && m.shingling()
                        .first_destroyed(tr.lba, tr.sectors as u64)
                        .is_some()
                {
                    out.push(t as u64);
                }
            }
        });
        out
    }

    /// Makes everything written durable and closes the raw drive (its image is complete
    /// afterwards). Fails if another handle to the raw drive is still open.
    pub fn close(self) -> Result<()> {
        let mut g = self.inner.into_inner();
        if g.poisoned.is_none() {
            g.sync_all()?;
        }
        let disk = Arc::try_unwrap(g.disk)
            .map_err(|_| Error::Invalid("the raw drive is still in use elsewhere".into()))?;
        disk.close()?;
        Ok(())
    }
}

impl Inner {
    /// Reads host sectors `[lba, lba + n)` into `buf`: a top track without host data reads
    /// as zeros, whatever its media holds.
    pub fn read(&mut self, lba: u64, n: u64, buf: &mut [u8]) -> DevResult<()> {
        for p in self.map.pieces(&self.layout, lba, n, self.ss) {
            let out = &mut buf[p.at..p.at + (p.sectors * self.ss) as usize];
            if !p.bottom && !self.valid[p.track as usize] {
                out.fill(0);
            } else {
                self.disk.read(p.lba, out)?;
            }
        }
        Ok(())
    }
}

impl BlockDevice for DmImr {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> DevResult<IoDone> {
        let n = self.info.transfer_sectors(lba, buf.len())?;
        let mut g = self.inner.lock();
        let start = g.disk.now();
        g.read(lba, n, buf)?;
        Ok(IoDone {
            start,
            end: g.disk.now(),
        })
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> DevResult<IoDone> {
        self.info.transfer_sectors(lba, data.len())?;
        let mut g = self.inner.lock();
        if let Some(why) = &g.poisoned {
            return Err(DeviceError::Poisoned(why.clone()));
        }
        let start = g.disk.now();
        let r = g.write(lba, data, flags.fua);
        if let Err(e) = &r {
            g.poisoned = Some(format!("a write at LBA {lba} failed: {e}"));
        }
        r?;
        Ok(IoDone {
            start,
            end: g.disk.now(),
        })
    }

    fn flush(&self) -> DevResult<IoDone> {
        let mut g = self.inner.lock();
        if let Some(why) = &g.poisoned {
            return Err(DeviceError::Poisoned(why.clone()));
        }
        let start = g.disk.now();
        let r = g.sync_all();
        if let Err(e) = &r {
            g.poisoned = Some(format!("a flush failed: {e}"));
        }
        r?;
        Ok(IoDone {
            start,
            end: g.disk.now(),
        })
    }

    fn discard(&self, lba: u64, sectors: u64) -> DevResult<IoDone> {
        if sectors == 0 {
            let now = self.now();
            return Ok(IoDone {
                start: now,
                end: now,
            });
        }
        self.info.check_sectors(lba, sectors)?;
        let mut g = self.inner.lock();
        if let Some(why) = &g.poisoned {
            return Err(DeviceError::Poisoned(why.clone()));
        }
        let start = g.disk.now();
        let r = g.discard(lba, sectors);
        if let Err(e) = &r {
            g.poisoned = Some(format!("a discard failed: {e}"));
        }
        r?;
        Ok(IoDone {
            start,
            end: g.disk.now(),
        })
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<DevResult<Completion>> {
        submit_serially(self, reqs)
    }

    fn now(&self) -> Nanos {
        self.inner.lock().disk.now()
    }

    fn idle(&self, d: Nanos) {
        let disk = self.inner.lock().disk.clone();
        disk.idle(d);
    }
}
