//! A drive's clock and cumulative counters, read while db_bench runs, and the byte-counting
//! device between the NBD server and an emulated drive.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tegula_device::mechanics::MechStats;
use tegula_device::{
    BlockDevice, Completion, DeviceError, DeviceInfo, Disk, IoDone, Nanos, Request, WriteFlags,
};
use tegula_stl::DmDrive;

/// Bytes in a MiB, as a float.
pub(super) const MIB: f64 = (1u64 << 20) as f64;

/// A drive's virtual clock, busy time (ns) and the bytes the host read and wrote.
#[derive(Clone, Copy, Default)]
pub(super) struct Clock {
    /// The drive's virtual time.
    pub now: Nanos,
    /// Nanoseconds the drive was busy.
    pub busy: u64,
    /// Bytes the host read.
    pub read: u64,
    /// Bytes the host wrote.
    pub written: u64,
}

/// Reads a drive's [`Clock`].
pub(super) type Probe = Arc<dyn Fn() -> Clock + Send + Sync>;
/// Reads a drive's cumulative counters.
pub(super) type Counters = Arc<dyn Fn() -> BTreeMap<String, f64> + Send + Sync>;

/// Counts what the host (the NBD client) asked of a block device.
pub(super) struct Counted {
    inner: Arc<dyn BlockDevice>,
    reads: AtomicU64,
    writes: AtomicU64,
    flushes: AtomicU64,
    discards: AtomicU64,
    bytes_read: AtomicU64,
    bytes_written: AtomicU64,
}

impl Counted {
    fn new(inner: Arc<dyn BlockDevice>) -> Self {
        Counted {
            inner,
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            discards: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
        }
    }

    fn snapshot(&self, m: &mut BTreeMap<String, f64>) {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        m.insert("host_reads".into(), g(&self.reads));
        m.insert("host_writes".into(), g(&self.writes));
        m.insert("host_flushes".into(), g(&self.flushes));
        m.insert("host_discards".into(), g(&self.discards));
        m.insert("host_mib_read".into(), g(&self.bytes_read) / MIB);
        m.insert("host_mib_written".into(), g(&self.bytes_written) / MIB);
    }
}

impl BlockDevice for Counted {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone, DeviceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes_read
            .fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.inner.read(lba, buf)
    }
    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone, DeviceError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.bytes_written
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        self.inner.write_with(lba, data, flags)
    }
    fn flush(&self) -> Result<IoDone, DeviceError> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.inner.flush()
    }
    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone, DeviceError> {
        self.discards.fetch_add(1, Ordering::Relaxed);
        self.inner.discard(lba, sectors)
    }
    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion, DeviceError>> {
        self.inner.submit(reqs)
    }
    fn now(&self) -> Nanos {
        self.inner.now()
    }
    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

/// The mechanical counters of a drive's media: seeks and the seconds spent seeking, waiting
/// for rotation and transferring.
fn mech_counters(mech: &MechStats, m: &mut BTreeMap<String, f64>) {
    m.insert("seeks".into(), mech.seeks as f64);
    m.insert("seek_s".into(), mech.seek_ns as f64 / 1e9);
    m.insert("rotation_s".into(), mech.rotation_ns as f64 / 1e9);
    m.insert("transfer_s".into(), mech.transfer_ns as f64 / 1e9);
}

/// The counters of an emulated disk (host-managed or conventional).
pub(super) fn disk_counters(disk: &Disk, m: &mut BTreeMap<String, f64>) {
    let s = disk.stats();
    let f = |x: u64| x as f64;
    m.insert("reads".into(), f(s.reads));
    m.insert("writes".into(), f(s.writes));
    m.insert("flushes".into(), f(s.flushes));
    m.insert("zone_ops".into(), f(s.zone_ops));
    m.insert("mib_read".into(), f(s.bytes_read) / MIB);
    m.insert("mib_written".into(), f(s.bytes_written) / MIB);
    m.insert("media_mib_written".into(), f(s.media_bytes_written) / MIB);
    mech_counters(&s.mech, m);
}

/// The counters of a drive-managed drive: its media and its translation layer.
pub(super) fn dm_counters(d: &DmDrive, m: &mut BTreeMap<String, f64>) {
    let s = d.media_stats();
    let t = d.stl_stats();
    let f = |x: u64| x as f64;
    m.insert("media_mib_read".into(), f(s.bytes_read) / MIB);
    m.insert("media_mib_written".into(), f(s.bytes_written) / MIB);
    mech_counters(&s.mech, m);
    m.insert("journal_entries".into(), f(t.journal_entries));
    m.insert("map_merges".into(), f(t.map_merges));
    m.insert("cleaning_runs".into(), f(t.cleaning_runs));
    m.insert("bands_cleaned".into(), f(t.bands_cleaned));
    m.insert("cleaning_mib_read".into(), f(t.cleaning_bytes_read) / MIB);
    m.insert(
        "cleaning_mib_written".into(),
        f(t.cleaning_bytes_written) / MIB,
    );
    m.insert("cleaning_s".into(), f(t.cleaning_ns) / 1e9);
    m.insert("bypass_writes".into(), f(t.bypass_writes));
}

/// `b - a` per counter, rounded to 3 decimals.
pub(super) fn delta(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    b.iter()
        .map(|(k, v)| {
            let d = v - a.get(k).copied().unwrap_or(0.0);
            (k.clone(), (d * 1000.0).round() / 1000.0)
        })
        .collect()
}

/// Wraps a drive for an ext4 run: the byte-counting device the NBD server serves, the clock
/// probe the sampler reads, and the end-of-run counters.
pub(super) fn instrument<D: BlockDevice + Send + Sync + 'static>(
    dev: Arc<D>,
    busy: fn(&D) -> u64,
    drive_counters: fn(&D, &mut BTreeMap<String, f64>),
) -> (Arc<Counted>, Probe, Counters) {
    let inner: Arc<dyn BlockDevice> = dev.clone();
    let counted = Arc::new(Counted::new(inner));
    let (d, c) = (dev.clone(), counted.clone());
    let probe: Probe = Arc::new(move || Clock {
        now: d.now(),
        busy: busy(&d),
        read: c.bytes_read.load(Ordering::Relaxed),
        written: c.bytes_written.load(Ordering::Relaxed),
    });
    let c = counted.clone();
    let counters: Counters = Arc::new(move || {
        let mut m = BTreeMap::new();
        drive_counters(&dev, &mut m);
        c.snapshot(&mut m);
        m
    });
    (counted, probe, counters)
}
