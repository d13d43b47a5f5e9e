#![allow(missing_docs, clippy::unwrap_used)]
//! Prints modelled sequential rates and random latency of each profile (full size, metadata-only).
use tegula_device::*;
fn main() {
    for p in ["cmr-7200", "hm-smr", "smr-5900"] {
        let mut c = profile(p).unwrap();
        c.store_data = false;
        c.cache.write_cache = false;
        c.kind = DriveKind::Cmr;
        let d = Disk::in_memory(c.clone()).unwrap();
        let info = d.info();
        let _ss = info.sector_size as u64;
        let buf = vec![0u8; 1 << 20];
        let mut rates = vec![];
        for frac in [0.0, 0.5, 0.999] {
            let start = ((info.capacity_sectors as f64 * frac) as u64)
                .min(info.capacity_sectors - 300 * 256)
                / 256
                * 256;
            let t0 = d.now();
            let reqs = (0..256u64)
                .map(|i| Request::Write {
                    lba: start + i * 256,
                    data: buf.clone(),
                    fua: false,
                })
                .collect();
            for r in d.submit(reqs) {
                r.unwrap();
            }
            let t1 = d.now();
            rates.push(256.0 * 1048576.0 / ((t1 - t0) as f64 / 1e9) / 1e6);
        }
        let mut rng = 12345u64;
        let mut b4 = vec![0u8; 4096];
        let n = 2000;
        let t0 = d.now();
        for _ in 0..n {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lba = (rng >> 11) % info.capacity_sectors;
            d.read(lba, &mut b4).unwrap();
        }
        let avg = (d.now() - t0) as f64 / n as f64 / 1e6;
        let s = d.stats();
        println!("{p}: cap {:.2} TB seq write OD {:.1} MD {:.1} ID {:.1} MB/s; random 4K read avg {:.2} ms; seeks {}", c.capacity as f64/1e12, rates[0], rates[1], rates[2], avg, s.mech.seeks);
    }
}
