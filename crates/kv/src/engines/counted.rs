//! A zoned device that counts the bytes the engine reads and writes through it: the banded
//! plain file has no drive model and keeps no statistics of its own, so the harness counts
//! its real I/O here (the device figures of a banded run: bytes, no modelled time).

use std::sync::atomic::{AtomicU64, Ordering};
use tegula_device::{
    BlockDevice, Completion, DeviceInfo, IoDone, Nanos, Request, Result, WriteFlags, Zone,
    ZoneAction, ZoneFilter, ZoneTarget, ZonedDevice,
};

/// `D` with byte counters.
pub struct Counted<D> {
    inner: D,
    read: AtomicU64,
    written: AtomicU64,
    flushes: AtomicU64,
}

impl<D> Counted<D> {
    /// Counts the I/O through `inner` from now on.
    pub fn new(inner: D) -> Self {
        Counted {
            inner,
            read: AtomicU64::new(0),
            written: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
        }
    }

    /// Bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Flushes so far.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Ordering::Relaxed)
    }

    /// The device.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: BlockDevice> BlockDevice for Counted<D> {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }

    fn read(&self, lba: u64, buf: &mut [u8]) -> Result<IoDone> {
        let d = self.inner.read(lba, buf)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(d)
    }

    fn read_bytes(&self, offset: u64, buf: &mut [u8]) -> Result<IoDone> {
        let d = self.inner.read_bytes(offset, buf)?;
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(d)
    }

    fn write_with(&self, lba: u64, data: &[u8], flags: WriteFlags) -> Result<IoDone> {
        let d = self.inner.write_with(lba, data, flags)?;
        self.written.fetch_add(data.len() as u64, Ordering::Relaxed);
        Ok(d)
    }

    fn flush(&self) -> Result<IoDone> {
        let d = self.inner.flush()?;
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(d)
    }

    fn discard(&self, lba: u64, sectors: u64) -> Result<IoDone> {
        self.inner.discard(lba, sectors)
    }

    fn submit(&self, reqs: Vec<Request>) -> Vec<Result<Completion>> {
        let ss = self.inner.info().sector_size as u64;
        let sizes: Vec<(bool, u64)> = reqs
            .iter()
            .map(|r| match r {
                Request::Read { sectors, .. } => (false, sectors * ss),
                Request::Write { data, .. } => (true, data.len() as u64),
                Request::Flush => (false, 0),
            })
            .collect();
        let out = self.inner.submit(reqs);
        for ((write, bytes), r) in sizes.into_iter().zip(&out) {
            if r.is_ok() {
                let c = if write { &self.written } else { &self.read };
                c.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        out
    }

    fn now(&self) -> Nanos {
        self.inner.now()
    }

    fn idle(&self, d: Nanos) {
        self.inner.idle(d)
    }
}

impl<D: ZonedDevice> ZonedDevice for Counted<D> {
    fn report_zones(&self, filter: ZoneFilter) -> Vec<Zone> {
        self.inner.report_zones(filter)
    }

    fn zone(&self, index: u32) -> Result<Zone> {
        self.inner.zone(index)
    }

    fn zone_action(&self, action: ZoneAction, target: ZoneTarget) -> Result<IoDone> {
        self.inner.zone_action(action, target)
    }

    fn can_rewind(&self) -> bool {
        self.inner.can_rewind()
    }

    fn rewind_write_pointer(&self, index: u32, lba: u64) -> Result<IoDone> {
        self.inner.rewind_write_pointer(index, lba)
    }

    fn flush_zones(&self, zones: &[u32]) -> Result<IoDone> {
        let d = self.inner.flush_zones(zones)?;
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(d)
    }

    fn durable_only_when_flushed(&self) -> bool {
        self.inner.durable_only_when_flushed()
    }

    fn read_beyond_write_pointer(&self, lba: u64, buf: &mut [u8]) -> Result<Option<IoDone>> {
        self.inner.read_beyond_write_pointer(lba, buf)
    }

    fn host_page_cache(&self) -> bool {
        self.inner.host_page_cache()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tegula_device::{HostBanded, HostBandedOptions};

    #[test]
    fn reads_writes_and_flushes_are_counted() {
        let dir = tempfile::tempdir().expect("tmp");
        let opts = HostBandedOptions {
            zone_size: 1 << 20,
            capacity: Some(8 << 20),
            ..HostBandedOptions::default()
        };
        let d = Counted::new(HostBanded::open(&dir.path().join("f"), opts).expect("open"));
        let z = d.report_zones(ZoneFilter::All)[1].clone();
        d.write(z.start_lba, &[7u8; 8192]).expect("write");
        let mut b = [0u8; 4096];
        d.read(z.start_lba, &mut b).expect("read");
        d.flush().expect("flush");
        assert_eq!(
            (d.bytes_written(), d.bytes_read(), d.flushes()),
            (8192, 4096, 1)
        );
        assert_eq!(b, [7u8; 4096]);
    }
}
