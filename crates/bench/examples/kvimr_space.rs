//! Where the space goes when SMRDB-LOC runs on the zoned adapter: loads random 1 KB records
//! (the `tegula bench paper kvimr` small scale by default) until the engine reports no space,
//! printing at every 5% of the data tracks the breakdown of the data tracks: SSTables per
//! level (their bytes, the tracks they own, the slack of their last tracks), deleted files'
//! tracks pending a map write, and free tracks; and the engine's view (free zones).
//!
//! `cargo run --release -p tegula-bench --example kvimr_space -- [capacity_mib] [zone_mib] [seq|three-phase|kvimr-n|kvimr-m|cmr]`
#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use tegula_device::{profile, BlockDevice, Disk};
use tegula_kvimr::{Options, Place, Policy, RmwMode, ZonedAdapter, ZonedOptions};
use tegula_smrdb::{Db, FormatOptions, Options as DbOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cap_mib: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3072);
    let zone_mib: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(16);
    let scheme = args.get(3).map_or("kvimr-m", String::as_str);
    let (policy, rmw) = match scheme {
        "seq" => (Policy::Seq, RmwMode::Naive),
        "three-phase" | "cmr" => (Policy::ThreePhase, RmwMode::Naive),
        "kvimr-n" => (Policy::CompactionAware, RmwMode::Naive),
        _ => (Policy::CompactionAware, RmwMode::Merged),
    };
    let mut cfg = profile("imr-paper").unwrap();
    cfg.capacity = cap_mib << 20;
    cfg.zones.zone_size = 16 << 20;
    if scheme == "cmr" {
        cfg = cfg.cmr_twin();
    }
    let disk = Arc::new(Disk::in_memory(cfg).unwrap());
    let tracks = disk.track_layout().unwrap().clone();
    let dev: Arc<dyn BlockDevice> = disk.clone();
    let zo = ZonedOptions {
        zone_bytes: zone_mib << 20,
        conventional_zones: 1,
        log_zones: 3,
        staging_bytes: 20 << 20,
    };
    let opts = Options {
        policy,
        rmw,
        ..Options::default()
    };
    let a = Arc::new(ZonedAdapter::format(dev, &tracks, zo, opts).unwrap());
    let layout = a.store().layout();
    let ss = layout.ss;
    let data_bytes = layout.data_sectors * ss;
    let bottoms = layout
        .data
        .iter()
        .filter(|&&t| layout.track(t).bottom)
        .count();
    println!(
        "data tracks {} ({} bottom), {:.1} MiB; track sectors max {}; zones {}",
        layout.data.len(),
        bottoms,
        data_bytes as f64 / 1048576.0,
        layout.max_track_sectors(),
        tegula_device::BlockDevice::info(&*a).zones
    );
    let dbo = DbOptions {
        background_compaction: false,
        loc_level1_bands: if zone_mib <= 2 { 2 } else { 4 },
        loc_level_multiplier: if zone_mib <= 2 { 4 } else { 10 },
        ..DbOptions::default()
    };
    let db = Db::create(a.clone(), FormatOptions::loc(), dbo).unwrap();
    let mut inserted = 0u64;
    let mut next_report = 0.05;
    let mut last = (0u64, 0u64, a.store().stats());
    let mut value = vec![0u8; 1000];
    let mut x = 0x1234_5678_9abc_def0u64;
    for k in 0u64.. {
        let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
        let key = format!("user{h:016x}");
        for b in value.chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = b.len();
            b.copy_from_slice(&x.to_le_bytes()[..n]);
        }
        let r = db.put(key.as_bytes(), &value);
        let done = r.is_err();
        if !done {
            inserted += (key.len() + value.len()) as u64;
        }
        let u = inserted as f64 / data_bytes as f64;
        if u >= next_report || done {
            next_report += 0.05;
            let now = disk.now();
            let st = a.store().stats();
            println!(
                "step: {:.0} ops/s, {} RMWs, {} top rewrites, {:.1} s persisting ({:.1} s RMW)",
                (k + 1 - last.0) as f64 / ((now - last.1) as f64 / 1e9),
                st.rmw_ops - last.2.rmw_ops,
                st.top_rewrites - last.2.top_rewrites,
                (st.persist_ns - last.2.persist_ns) as f64 / 1e9,
                (st.rmw_ns - last.2.rmw_ns) as f64 / 1e9,
            );
            last = (k + 1, now, st);
            report(&a, &db, inserted, data_bytes);
        }
        if let Err(e) = r {
            println!("stopped: {e}");
            break;
        }
    }
}

fn report(a: &ZonedAdapter, db: &Db, inserted: u64, data_bytes: u64) {
    let st = a.store();
    let layout = st.layout();
    let ss = layout.ss;
    let mib = |b: u64| b as f64 / 1048576.0;
    // Per level: files, bytes, track bytes.
    let mut per: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    let mut owned = 0u64;
    for f in st.files() {
        if !matches!(f.place, Place::Data { .. }) {
            continue;
        }
        let cap: u64 = f
            .tracks
            .iter()
            .map(|&t| layout.track(t).sectors as u64 * ss)
            .sum();
        owned += cap;
        let lv = match f.place {
            Place::Data { level: Some(l) } => format!("L{l}"),
            _ => "none".into(),
        };
        let e = per.entry(lv).or_default();
        e.0 += 1;
        e.1 += f.len;
        e.2 += cap;
    }
    let used = st.usage() * data_bytes as f64;
    let ds = db.stats();
    println!(
        "inserted {:.1}% ({:.0} MiB); track usage {:.1}% (live files {:.1}% = {:.1}%, pending {:.1}%); room {:.0} MiB; engine free bands {}, bands/level {:?}, compactions {} (low-space {}, checkpoints {})",
        inserted as f64 / data_bytes as f64 * 100.0,
        mib(inserted),
        st.usage() * 100.0,
        owned as f64 / data_bytes as f64 * 100.0,
        st.live_usage() * 100.0,
        (used - owned as f64) / data_bytes as f64 * 100.0,
        mib(st.room() * ss),
        ds.free_bands,
        ds.bands_per_level,
        ds.compactions,
        ds.low_space_compactions,
        ds.checkpoints,
    );
    // Census of the free data tracks (pending tracks count as used here).
    let mut used = vec![false; layout.tracks.len()];
    for f in st.files() {
        for &t in &f.tracks {
            used[t as usize] = true;
        }
    }
    let (mut fb_clean, mut fb_dirty, mut ft_over_used, mut ft_other) = (0, 0, 0, 0);
    let mut runs: BTreeMap<usize, usize> = BTreeMap::new();
    let mut run = 0usize;
    let mut prev: Option<u32> = None;
    for &t in &layout.data {
        let tr = layout.track(t);
        let free = !used[t as usize];
        if free {
            if tr.bottom {
                if tr.neighbours().any(|n| used[n as usize]) {
                    fb_dirty += 1;
                } else {
                    fb_clean += 1;
                }
            } else if tr.neighbours().all(|n| used[n as usize]) {
                ft_over_used += 1;
            } else {
                ft_other += 1;
            }
            let adj = prev.is_some_and(|p| tr.neighbours().any(|n| n == p) && !used[p as usize]);
            if adj {
                run += 1;
            } else {
                if run > 0 {
                    *runs.entry(run).or_default() += 1;
                }
                run = 1;
            }
        } else if run > 0 {
            *runs.entry(run).or_default() += 1;
            run = 0;
        }
        prev = Some(t);
    }
    if run > 0 {
        *runs.entry(run).or_default() += 1;
    }
    println!(
        "  free: bottoms clean {fb_clean} dirty {fb_dirty}; tops over used bottoms {ft_over_used}, other {ft_other}; runs (len: count) {runs:?}"
    );
    for (l, (n, b, c)) in per {
        println!(
            "  {l}: {n} files, {:.1} MiB data, {:.1} MiB of tracks ({:.1}% of the data tracks; slack {:.1} MiB)",
            mib(b),
            mib(c),
            c as f64 / data_bytes as f64 * 100.0,
            mib(c - b)
        );
    }
}
