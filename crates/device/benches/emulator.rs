//! Emulator speed: how many modelled I/Os per second of wall time the device layer sustains
//! (metadata-only, full-size drives) and how fast it moves data in memory. Not a timed test:
//! it prints a table and one JSON line. Run with `cargo bench -p tegula-device --bench emulator`.
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Instant;
use tegula_device::{profile, BlockDevice, Disk, DriveKind, ZoneFilter, ZonedDevice};

struct Row {
    name: &'static str,
    ops: u64,
    bytes: u64,
    wall_s: f64,
    modelled_s: f64,
}

fn seq_writes(d: &Disk, ios: u64, size: usize) -> (u64, u64) {
    let ss = d.info().sector_size as u64;
    let per = size as u64 / ss;
    let buf = vec![0x5au8; size];
    let zones = d.report_zones(ZoneFilter::Condition(tegula_device::ZoneCondition::Empty));
    let mut zi = 0;
    let mut lba = zones[0].start_lba;
    let mut end = zones[0].end_lba();
    let mut done = 0;
    while done < ios {
        if lba + per > end {
            zi += 1;
            lba = zones[zi].start_lba;
            end = zones[zi].end_lba();
        }
        d.write(lba, &buf).unwrap();
        lba += per;
        done += 1;
    }
    (done, done * size as u64)
}

fn run(name: &'static str, d: &Disk, f: impl FnOnce(&Disk) -> (u64, u64)) -> Row {
    // `EMULATOR_ONLY=random` runs only the workloads whose name contains that text (profiling).
    if std::env::var("EMULATOR_ONLY").is_ok_and(|o| !name.contains(o.as_str())) {
        return Row {
            name,
            ops: 0,
            bytes: 0,
            wall_s: f64::NAN,
            modelled_s: 0.0,
        };
    }
    let t0 = d.now();
    let w = Instant::now();
    let (ops, bytes) = f(d);
    let wall_s = w.elapsed().as_secs_f64();
    Row {
        name,
        ops,
        bytes,
        wall_s,
        modelled_s: (d.now() - t0) as f64 / 1e9,
    }
}

fn main() {
    // Honour `cargo bench -- --quick` style filters loosely: a smaller run for smoke tests.
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let mut rows = Vec::new();

    let mut c = profile("hm-smr").unwrap();
    c.store_data = false;
    let d = Disk::in_memory(c).unwrap();
    rows.push(run("hm-smr meta-only seq 4KiB writes", &d, |d| {
        seq_writes(d, 2_000_000 / scale, 4096)
    }));

    let mut c = profile("cmr-7200").unwrap();
    c.store_data = false;
    let d = Disk::in_memory(c).unwrap();
    let cap = d.info().capacity_sectors;
    rows.push(run("cmr-7200 meta-only random 4KiB reads", &d, |d| {
        let n = 1_000_000 / scale;
        let mut buf = vec![0u8; 4096];
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            d.read(x % cap, &mut buf).unwrap();
        }
        (n, n * 4096)
    }));
    rows.push(run("cmr-7200 meta-only seq 4KiB reads", &d, |d| {
        let n = 1_000_000 / scale;
        let mut buf = vec![0u8; 4096];
        for i in 0..n {
            d.read(1000 + i, &mut buf).unwrap();
        }
        (n, n * 4096)
    }));

    let mut c = profile("hm-smr").unwrap();
    c.capacity = 2 << 30;
    c.kind = DriveKind::HmSmr;
    let d = Disk::in_memory(c.clone()).unwrap();
    rows.push(run("hm-smr in-memory 1MiB writes", &d, |d| {
        seq_writes(d, 1024 / scale, 1 << 20)
    }));
    let d = Disk::in_memory(c).unwrap();
    rows.push(run("hm-smr in-memory 4KiB writes", &d, |d| {
        seq_writes(d, 131_072 / scale, 4096)
    }));

    println!(
        "{:<40} {:>10} {:>9} {:>14} {:>10} {:>12}",
        "workload", "ops", "wall s", "ops/wall s", "GB/s", "modelled s"
    );
    let mut json = Vec::new();
    for r in &rows {
        let ops_s = r.ops as f64 / r.wall_s;
        let gbs = r.bytes as f64 / r.wall_s / 1e9;
        println!(
            "{:<40} {:>10} {:>9.3} {:>14.0} {:>10.2} {:>12.1}",
            r.name, r.ops, r.wall_s, ops_s, gbs, r.modelled_s
        );
        json.push(format!(
            "{{\"workload\":\"{}\",\"ops\":{},\"wall_s\":{:.4},\"ops_per_wall_s\":{:.0},\"gb_per_s\":{:.3},\"modelled_s\":{:.3}}}",
            r.name, r.ops, r.wall_s, ops_s, gbs, r.modelled_s
        ));
    }
    println!(
        "{{\"bench\":\"emulator\",\"results\":[{}]}}",
        json.join(",")
    );
}
