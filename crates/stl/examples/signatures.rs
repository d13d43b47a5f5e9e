//! The Skylight signatures of a configured drive, in modelled time (the figures quoted in
//! `docs/drive-managed-smr.md`): QD1 random 4 KiB write latency and its periodic map merges,
//! packing at queue depth 31, when idle-time cleaning starts, and a fragmented read before and
//! after cleaning. Prints one JSON object.
//!
//! `cargo run --release -p tegula-stl --example signatures -- configs/dm-smr/seagate-5tb.toml`

use rand::{Rng, SeedableRng};
use tegula_device::media::Request;
use tegula_device::{BlockDevice, MS, SEC};
use tegula_stl::DmDrive;

fn ms(ns: u64) -> f64 {
    ns as f64 / MS as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or("configs/dm-smr/seagate-5tb.toml".into());
    let text = std::fs::read_to_string(&path)?;
    let buf = vec![0u8; 4096];

    // QD1 random writes.
    let d = DmDrive::from_toml(&text)?;
    let cap = d.info().capacity_sectors;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
    let lat: Vec<u64> = (0..720)
        .map(|_| d.write(rng.gen_range(0..cap), &buf).map(|x| x.service()))
        .collect::<Result<_, _>>()?;
    let slow: Vec<usize> = (0..lat.len()).filter(|&i| lat[i] > 200 * MS).collect();
    let normal: Vec<f64> = (1..lat.len())
        .filter(|i| !slow.contains(i))
        .map(|i| ms(lat[i]))
        .collect();
    let mean = normal.iter().sum::<f64>() / normal.len() as f64;
    let sd = (normal.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / normal.len() as f64).sqrt();
    let merge_ms: Vec<f64> = slow.iter().map(|&i| ms(lat[i])).collect();

    // QD31: 256 writes in batches of 31.
    let q = DmDrive::from_toml(&text)?;
    let t0 = q.now();
    for _ in 0..256usize.div_ceil(31) {
        let reqs = (0..31)
            .map(|_| Request::Write {
                lba: rng.gen_range(0..cap),
                data: buf.clone(),
                fua: false,
            })
            .collect();
        for r in q.submit(reqs) {
            r?;
        }
    }
    let qd31_ms = ms(q.now() - t0);
    let qd31_entries = q.stl_stats().journal_entries;

    // Idle-time cleaning: when does the first band get cleaned after 50 writes?
    let c = DmDrive::from_toml(&text)?;
    for _ in 0..50 {
        c.write(rng.gen_range(0..cap), &buf)?;
    }
    let mut first_clean_ms = None;
    for step in 1..=100u64 {
        c.idle(100 * MS);
        if c.stl_stats().bands_cleaned > 0 {
            first_clean_ms = Some(step * 100);
            break;
        }
    }

    // Fragmented read: every other 4 KiB block of 4 MiB rewritten, then read block by block.
    let f = DmDrive::from_toml(&text)?;
    let start = cap / 2;
    for i in 0..512 {
        f.write(start + 2 * i, &buf)?;
    }
    let read_ms = |d: &DmDrive| -> Result<f64, Box<dyn std::error::Error>> {
        let mut b = vec![0u8; 4096];
        let t = d.now();
        for i in 0..1024 {
            d.read(start + i, &mut b)?;
        }
        Ok(ms(d.now() - t) / 1024.0)
    };
    let before = read_ms(&f)?;
    f.idle(30 * SEC);
    let after = read_ms(&f)?;
    let s = f.stl_stats();

    println!(
        "{}",
        serde_json::json!({
            "config": path,
            "qd1_writes": lat.len(),
            "qd1_latency_ms_mean": (mean * 100.0).round() / 100.0,
            "qd1_latency_ms_sd": (sd * 100.0).round() / 100.0,
            "slow_writes_at": slow,
            "slow_write_ms": merge_ms.iter().map(|x| (x * 10.0).round() / 10.0).collect::<Vec<_>>(),
            "qd1_256_writes_ms": (ms(lat[..256].iter().sum::<u64>()) * 10.0).round() / 10.0,
            "qd31_256_writes_ms": (qd31_ms * 10.0).round() / 10.0,
            "qd31_internal_writes": qd31_entries,
            "first_idle_cleaning_after_ms": first_clean_ms,
            "fragmented_read_ms_per_block_before": (before * 100.0).round() / 100.0,
            "fragmented_read_ms_per_block_after_30s_idle": (after * 100.0).round() / 100.0,
            "bands_cleaned_in_30s_idle": s.bands_cleaned,
        })
    );
    Ok(())
}
