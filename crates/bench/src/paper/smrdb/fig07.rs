//! Figure 7: raw sequential write bandwidth of the drive.

use super::context::Out;
use super::{Sizes, MIB};
use crate::error::{Error, Result};
use crate::plot::bars_x;
use std::fmt::Write as _;
use tegula_device::{BlockDevice, Disk, DiskConfig, Request, ZoneFilter, ZoneType, ZonedDevice};

/// Raw sequential write bandwidth over the first sequential bands, in MB/s of device time:
/// `(one 1 MiB write at a time, 32 queued 1 MiB writes per batch)`. The second is the media's
/// sustained sequential rate there (what `fio` with a queue measures); the first is what a
/// writer that waits for each write gets.
pub fn raw_seq_write(cfg: &DiskConfig, bytes: u64) -> Result<(f64, f64)> {
    Ok((raw_pass(cfg, bytes, 1)?, raw_pass(cfg, bytes, 32)?))
}

fn raw_pass(cfg: &DiskConfig, bytes: u64, depth: usize) -> Result<f64> {
    let mut cfg = cfg.clone();
    cfg.store_data = false;
    let disk = Disk::in_memory(cfg).map_err(|e| Error::device("creating the drive", e))?;
    let zones = disk.report_zones(ZoneFilter::All);
    let ss = disk.info().sector_size as u64;
    let mut extents = Vec::new();
    let mut planned = 0u64;
    for z in zones
        .iter()
        .filter(|z| z.zone_type != ZoneType::Conventional)
    {
        let mut lba = z.start_lba;
        while lba < z.end_lba() && planned < bytes {
            let n = ((z.end_lba() - lba) * ss).min(MIB);
            extents.push((lba, n as usize));
            lba += n / ss;
            planned += n;
        }
        if planned >= bytes {
            break;
        }
    }
    let t0 = disk.now();
    for batch in extents.chunks(depth.max(1)) {
        let reqs = batch
            .iter()
            .map(|&(lba, n)| Request::Write {
                lba,
                data: vec![0x5a; n],
                fua: false,
            })
            .collect();
        for c in disk.submit(reqs) {
            c.map_err(|e| Error::device("raw sequential write", e))?;
        }
    }
    disk.flush()
        .map_err(|e| Error::device("flushing after the raw writes", e))?;
    let secs = disk.now().saturating_sub(t0) as f64 / 1e9;
    if secs <= 0.0 {
        return Err(Error::internal(format!(
            "the drive reported no time for {planned} bytes"
        )));
    }
    Ok(planned as f64 / 1e6 / secs)
}

/// Writes figure 7's table and plot from the measured `(profile, (one, queued))` pairs.
pub(super) fn table(out: &mut Out<'_>, s: &Sizes, raw: &[(String, (f64, f64))]) -> Result<()> {
    let _ = writeln!(
        out.md,
        "## Figure 7: raw sequential write bandwidth\n\n\
         {} of 1 MiB writes from the first sequential band on, one at a time and 32 queued \
         (what `fio` measured in the paper). The queued figure is the media's sustained \
         sequential write bandwidth there: the limit figure 8's puts are measured against.\n\n\
         | drive | MB/s, 1 MiB writes one at a time | MB/s, 32 queued (media limit) |\n\
         | --- | ---: | ---: |",
        tegula_device::format_size(s.raw_bytes)
    );
    for (p, (one, queued)) in raw {
        let _ = writeln!(out.md, "| {p} | {one:.1} | {queued:.1} |");
    }
    let cats: Vec<String> = raw.iter().map(|r| r.0.clone()).collect();
    let p = out.svg("fig07-raw-seq-write.svg");
    bars_x(
        &p,
        "Figure 7: raw sequential write bandwidth of 1 MiB writes, per drive",
        "drive profile",
        "write bandwidth (MB per device s)",
        &cats,
        &[
            (
                "one at a time".to_string(),
                raw.iter().map(|r| r.1 .0).collect(),
            ),
            (
                "32 queued".to_string(),
                raw.iter().map(|r| r.1 .1).collect(),
            ),
        ],
    )
}
