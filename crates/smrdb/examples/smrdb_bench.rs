//! Modelled-device figures for SMRDB: `fillseq` throughput against the media's sequential
//! write rate, and random inserts in SOC vs LOC (write amplification, compaction bytes and
//! device time).
//!
//! `cargo run --release -p tegula-smrdb --example smrdb_bench -- [num] [value_size] [capacity_gib] [zone_mib] [seq,soc,loc]`
#![allow(clippy::unwrap_used)] // a measurement tool: fail loudly

use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk, ZoneFilter, ZonedDevice};
use tegula_smrdb::{Db, FormatOptions, Mode, Options};

fn disk(cap_gib: u64, zone_mib: u64) -> Arc<Disk> {
    let mut cfg = profile("hm-smr").unwrap();
    cfg.capacity = cap_gib << 30;
    cfg.zones.zone_size = zone_mib << 20;
    Arc::new(Disk::in_memory(cfg).unwrap())
}

/// Media sequential write rate at the first sequential zone (1 MiB writes, then a flush).
fn media_rate(cap: u64, zone_mib: u64) -> f64 {
    let d = disk(cap, zone_mib);
    let z = d
        .report_zones(ZoneFilter::All)
        .into_iter()
        .find(|z| z.zone_type.is_sequential())
        .unwrap();
    let buf = vec![0x5au8; 1 << 20];
    let t0 = d.now();
    let n = (zone_mib).min(64);
    for i in 0..n {
        d.write(z.start_lba + i * 256, &buf).unwrap();
    }
    d.flush().unwrap();
    (n << 20) as f64 / ((d.now() - t0) as f64 / 1e9) / 1e6
}

fn key(i: u64) -> Vec<u8> {
    format!("{i:016}").into_bytes()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn fill(mode: Mode, random: bool, num: u64, vsize: usize, cap: u64, zone_mib: u64) {
    let d = disk(cap, zone_mib);
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let od = Options::default();
    let opts = Options {
        background_compaction: false,
        l1_overlap_trigger: env("SMRDB_L1_OVERLAP_TRIGGER").unwrap_or(od.l1_overlap_trigger),
        l0_compaction_max_bands: env("SMRDB_L0_MAX_BANDS").unwrap_or(od.l0_compaction_max_bands),
        ..od
    };
    let db = Db::create(d.clone(), FormatOptions { mode }, opts).unwrap();
    let before = d.stats();
    let t0 = d.now();
    let w0 = std::time::Instant::now();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let val = vec![b'x'; vsize];
    for i in 0..num {
        let k = if random { rng.next() % num } else { i };
        db.put(&key(k), &val).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    d.flush().unwrap();
    let dt = (d.now() - t0) as f64 / 1e9;
    let s = db.stats();
    let after = d.stats();
    let user_mb = s.user_bytes as f64 / 1e6;
    let dev_mb = (after.bytes_written - before.bytes_written) as f64 / 1e6;
    println!(
        "{:<10} {:?} num={num} value={vsize}: device {dt:.2} s, {:.0} ops/s, user {:.1} MB/s, device writes {:.1} MB/s, WA {:.2} (no log {:.2}), compaction read {:.1} MB written {:.1} MB in {:.2} s device time, bands/level {:?}, overlaps {}, wall {:.1} s",
        if random { "fillrandom" } else { "fillseq" },
        mode,
        num as f64 / dt,
        user_mb / dt,
        dev_mb / dt,
        s.write_amplification,
        s.write_amplification_no_log,
        s.compaction_bytes_read as f64 / 1e6,
        s.compaction_bytes_written as f64 / 1e6,
        s.compaction_time_ns as f64 / 1e9,
        s.bands_per_level,
        s.overlap_count,
        w0.elapsed().as_secs_f64()
    );
    // Read back a sample.
    let t1 = d.now();
    let w1 = std::time::Instant::now();
    let mut rng = Rng(7);
    let reads = 20000u64;
    for _ in 0..reads {
        let k = rng.next() % num;
        let _ = db.get(&key(k)).unwrap();
    }
    let s = db.stats();
    println!(
        "           readrandom: {:.0} ops/s (device time), {:.0} ops/s (wall), {:.2} bands probed per get",
        reads as f64 / ((d.now() - t1) as f64 / 1e9),
        reads as f64 / w1.elapsed().as_secs_f64(),
        s.avg_bands_probed_per_get
    );
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let num: u64 = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let vsize: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let cap: u64 = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(16);
    let zone_mib: u64 = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(256);
    println!(
        "hm-smr {cap} GiB, {zone_mib} MiB zones: media sequential write {:.1} MB/s",
        media_rate(cap, zone_mib)
    );
    let which = a.get(5).cloned().unwrap_or_else(|| "seq,soc,loc".into());
    for w in which.split(',') {
        match w {
            "seq" => fill(Mode::Soc, false, num, vsize, cap, zone_mib),
            "soc" => fill(Mode::Soc, true, num, vsize, cap, zone_mib),
            "loc" => fill(Mode::Loc, true, num, vsize, cap, zone_mib),
            other => eprintln!("unknown run {other:?} (seq, soc, loc)"),
        }
    }
}
