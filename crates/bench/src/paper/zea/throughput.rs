//! Figure 2 (b) and (c): ZEA puts against raw writes, and reads through `Zea::get` against
//! raw reads, per extent size.

use super::writers::{disk, zea_err, Raw, ZeaSeq};
use super::MIB;
use crate::error::{Error, Result};
use serde::Serialize;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZonedDevice};
use tegula_zea::{Options, Zea};

/// One point of (b) or (c).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// Extent size in bytes.
    pub extent: u64,
    /// Extents written or read.
    pub extents: u64,
    /// MB/s of device time through ZEA.
    pub zea_mb_s: f64,
    /// MB/s of device time of the raw writes or reads.
    pub raw_mb_s: f64,
    /// How much slower ZEA is, in percent.
    pub overhead_pct: f64,
}

impl Throughput {
    fn new(extent: u64, extents: u64, zea_ns: u64, raw_ns: u64) -> Self {
        let mb = (extents * extent) as f64 / 1e6;
        let zea_mb_s = mb / secs(zea_ns);
        let raw_mb_s = mb / secs(raw_ns);
        Throughput {
            extent,
            extents,
            zea_mb_s,
            raw_mb_s,
            overhead_pct: (raw_mb_s / zea_mb_s - 1.0) * 100.0,
        }
    }
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn flush(dev: &dyn ZonedDevice) -> Result<()> {
    dev.flush()
        .map(|_| ())
        .map_err(|e| Error::device("flush", e))
}

/// (b): `extents` extents of each size, each made durable before the next (ZEA: data +
/// metadata block + flush, its durability contract; raw: data + flush).
pub(super) fn writes(sizes: &[u64], extents: u64) -> Result<Vec<Throughput>> {
    let mut out = Vec::new();
    for &size in sizes {
        let cap = (extents * size * 5 / 4 + 2 * 256 * MIB).next_multiple_of(256 * MIB);
        let data = vec![0xa5u8; size as usize];
        let zd = disk(cap, false)?;
        let zdev: Arc<dyn ZonedDevice> = zd.clone();
        let mut z = ZeaSeq::new(zdev.clone())?;
        let t0 = zdev.now();
        for i in 0..extents {
            z.put(i, &data)?;
        }
        let zea_ns = zdev.now() - t0;
        let rd = disk(cap, false)?;
        let rdev: Arc<dyn ZonedDevice> = rd.clone();
        let mut r = Raw::new(rdev.clone())?;
        let t0 = rdev.now();
        for _ in 0..extents {
            r.write(&data)?;
            flush(rdev.as_ref())?;
        }
        let raw_ns = rdev.now() - t0;
        out.push(Throughput::new(size, extents, zea_ns, raw_ns));
    }
    Ok(out)
}

/// (c): `total` bytes of extents of each size, written by both writers, then read back in
/// write order after both drives idled a second.
pub(super) fn reads(sizes: &[u64], total: u64) -> Result<Vec<Throughput>> {
    let mut out = Vec::new();
    for &size in sizes {
        let extents = (total / size).max(1);
        let cap = (extents * (size + 4096) * 5 / 4 + 2 * 256 * MIB).next_multiple_of(256 * MIB);
        let data: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
        let zd = disk(cap, true)?;
        let zdev: Arc<dyn ZonedDevice> = zd.clone();
        let mut z = ZeaSeq::new(zdev.clone())?;
        let placed: Vec<(u32, u64)> = (0..extents)
            .map(|i| z.put(i, &data))
            .collect::<Result<_>>()?;
        let rd = disk(cap, true)?;
        let rdev: Arc<dyn ZonedDevice> = rd.clone();
        let mut r = Raw::new(rdev.clone())?;
        let lbas: Vec<u64> = (0..extents)
            .map(|_| r.write(&data))
            .collect::<Result<_>>()?;
        flush(rdev.as_ref())?;
        // Let both drives settle, then read everything back in write order.
        zdev.idle(1_000_000_000);
        rdev.idle(1_000_000_000);
        let mut zeas: Vec<Option<Zea>> = Vec::new();
        let t0 = zdev.now();
        for (i, &(zone, lba)) in placed.iter().enumerate() {
            let zi = zone as usize;
            if zeas.len() <= zi {
                zeas.resize_with(zi + 1, || None);
            }
            let zea = match &mut zeas[zi] {
                Some(z) => z,
                slot => slot.insert(
                    Zea::open(zdev.clone(), zone, Options::default()).map_err(zea_err("open"))?,
                ),
            };
            let got = zea.get(lba, size).map_err(zea_err("get"))?;
            if got != data {
                return Err(Error::Corrupt(format!(
                    "extent {i} of {size} bytes read back through zea differs from what was put"
                )));
            }
        }
        let zea_ns = zdev.now() - t0;
        let mut buf = vec![0u8; size.next_multiple_of(4096) as usize];
        let t0 = rdev.now();
        for &lba in &lbas {
            rdev.read(lba, &mut buf)
                .map_err(|e| Error::device("raw read", e))?;
        }
        let raw_ns = rdev.now() - t0;
        out.push(Throughput::new(size, extents, zea_ns, raw_ns));
    }
    Ok(out)
}
