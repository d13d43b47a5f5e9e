//! Figure 2 (a): start-up discovery of one zone against the number of extents in it.

use super::writers::{disk, zea_err};
use super::MIB;
use crate::error::{Error, Result};
use serde::Serialize;
use std::sync::Arc;
use tegula_device::{BlockDevice, ZonedDevice};
use tegula_zea::{Options, Zea};

/// One point of (a).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Discovery {
    /// Back pointers per metadata block.
    pub back_pointers: u16,
    /// Extents in the zone.
    pub extents: u64,
    /// Device seconds for `Zea::open` plus a full forward iteration.
    #[serde(rename = "forward_device_s")]
    pub forward_s: f64,
    /// Device seconds for a full backward iteration.
    #[serde(rename = "backward_device_s")]
    pub backward_s: f64,
    /// Metadata blocks read by the forward iterator's skip pass.
    pub skip_reads: u64,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Fills one zone with 4 KiB extents up to each count of `counts` and measures a start-up
/// discovery at each, for every back-pointer count of `bps`.
pub(super) fn run(bps: &[u16], counts: &[u64]) -> Result<Vec<Discovery>> {
    let mut out = Vec::new();
    for &bp in bps {
        let d = disk(512 * MIB, true)?;
        let dev: Arc<dyn ZonedDevice> = d.clone();
        let opts = Options {
            back_pointers: bp,
            ..Options::default()
        };
        let mut z = Zea::open(dev.clone(), 1, opts.clone()).map_err(zea_err("open"))?;
        let block = vec![0x5au8; 4096];
        let mut written = 0u64;
        for &n in counts {
            while written < n {
                z.put(written, &block).map_err(zea_err("put"))?;
                written += 1;
            }
            let t0 = dev.now();
            let z2 = Zea::open(dev.clone(), 1, opts.clone()).map_err(zea_err("open"))?;
            let mut it = z2.iter_forward();
            let found = it.by_ref().filter(|m| m.is_ok()).count() as u64;
            let skip_reads = it.skip_reads();
            let t1 = dev.now();
            let back = z2.iter_back().filter(|m| m.is_ok()).count() as u64;
            let t2 = dev.now();
            if found != n || back != n {
                return Err(Error::Corrupt(format!(
                    "zea discovery with {bp} back pointers found {found} extents forward and \
                     {back} backward of {n} written"
                )));
            }
            out.push(Discovery {
                back_pointers: bp,
                extents: n,
                forward_s: secs(t1 - t0),
                backward_s: secs(t2 - t1),
                skip_reads,
            });
        }
    }
    Ok(out)
}
