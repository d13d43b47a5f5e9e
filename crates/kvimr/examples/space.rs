//! Where the space goes when SMRDB-LOC runs on the zoned adapter: loads random 1 KB records
//! (the `tegula bench paper kvimr` small scale by default) until the engine reports no space,
//! printing at every 5% of the data tracks the breakdown of the data tracks: SSTables per
//! level (their bytes, the tracks they own, the slack of their last tracks), deleted files'
//! tracks pending a map write, and free tracks; and the engine's view (free zones).
//!
//! `cargo run --release -p tegula-kvimr --example space -- [capacity_mib] [zone_mib] [policy]`
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
    let policy = match args.get(3).map(String::as_str) {
        Some("seq") => Policy::Seq,
        Some("three-phase") => Policy::ThreePhase,
        _ => Policy::CompactionAware,
    };
    let mut cfg = profile("imr-paper").unwrap();
    cfg.capacity = cap_mib << 20;
    cfg.zones.zone_size = 16 << 20;
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
        rmw: RmwMode::Merged,
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
