//! The accuracy matrix (issue 31): drive-managed drives drawn at random across the space
//! `tegula disk create --config` accepts — every translation layer, cache medium and
//! location, cache sizes of 2-32 GiB, track bands of 4-32 tracks and fixed bands up to
//! 128 MiB, lazy and aggressive cleaning (idle 0.2-5 s), journal map sizes, entry quanta and
//! merge periods, volatile write cache on and off, 500 GB-8 TB on the 5,900 and 7,200 rpm
//! media — each probed in memory (a metadata-only drive, secure erase and power control as
//! `tegula probe` gives them) and graded field by field against its configuration with the
//! shipped-drive rules (`common::checks_dm_truth`: categories exact, sizes within 5%, the
//! count within 15% printed next to it; a null is wrong, except for a journal's map size
//! where the drive hides it: `common::map_hidden`, entries of 32 extents, the most a drive's
//! command queue packs, fill the cache before the map's watermark, so no host sees the map's
//! limit and null is the right answer). It prints the accuracy per field,
//! per drive class, and each drive's wall time.
//!
//! The default run draws two drives and runs TESTs 1-3 only (the fields they decide), so the
//! ordinary test suite stays fast; and two property tests (proptest) over the whole space:
//! every drawn configuration is one `disk create --config` accepts, inside the issue's ranges,
//! and TEST 1 gets the drive type and cache medium right on any drawn drive (a failure
//! shrinks to the smallest seed and index and is kept in
//! `tests/proptest-regressions/accuracy_matrix.txt`). The full matrix, in release mode:
//!
//! ```text
//! cargo test --release -p tegula-skylight --test accuracy_matrix --no-run
//! TEGULA_PROBE_MATRIX=60 target/release/deps/accuracy_matrix-* --nocapture --test-threads 1
//! ```
//!
//! `TEGULA_PROBE_MATRIX=N` probes drives 0..N; `TEGULA_PROBE_MATRIX_ONLY=3,7` or
//! `=fully-assoc` probes only those drives (by index, or by a piece of their class name);
//! `TEGULA_PROBE_MATRIX_SEED` changes the draw (default 31); `TEGULA_PROBE_MATRIX_JSON=DIR`
//! writes each report there; `TEGULA_PROBE_MATRIX_LIST=1` only lists the drawn drives (and writes their TOML there). Drive `i` depends only on the seed and `i`, so a smaller run
//! probes the first drives of a larger one.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{checks_dm_truth, probe_dm_within, Check, Truth};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};
use tegula_stl::{
    CacheLocation as Loc, CacheMedia as Med, Cleaning, DmConfig, DmDrive, Mapping, StlKind,
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A value drawn log-uniformly from `[lo, hi]`.
fn log_uniform(rng: &mut SmallRng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.gen::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// Drive `i` of the matrix drawn with `seed`: its configuration (round-tripped through the
/// TOML `disk create --config` reads) and its real cache size in bytes (whole bands).
fn draw(seed: u64, i: usize) -> (DmConfig, u64) {
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
    loop {
        let stl = [
            StlKind::Journal,
            StlKind::SetAssociative,
            StlKind::FullyAssociative,
        ][i % 3];
        let capacity = (log_uniform(&mut rng, 500e9, 8e12) / 1e9).round() as u64 * 1_000_000_000;
        // smr-5900 holds at most ~5.5 TB; beyond it (and for a third of the rest) the
        // 7,200 rpm media.
        let media = if capacity > 5_300_000_000_000 || rng.gen_bool(0.3) {
            "hm-smr"
        } else {
            "smr-5900"
        };
        let mut c = DmConfig {
            media: media.into(),
            capacity,
            stl,
            cleaning: if rng.gen_bool(0.4) {
                Cleaning::Lazy
            } else {
                Cleaning::Aggressive
            },
            idle_before_cleaning: (log_uniform(&mut rng, 0.2, 5.0) * 100.0).round() as u64
                * 10_000_000,
            volatile_cache: rng.gen_bool(0.3),
            cache_size: (log_uniform(&mut rng, 2.0, 32.0) * 1024.0).round() as u64 * MIB,
            cache_location: [Loc::Od, Loc::Md, Loc::Id, Loc::Distributed][rng.gen_range(0..4)],
            store_data: false,
            seed: i as u64,
            ..DmConfig::default()
        };
        let track_bands = stl != StlKind::FullyAssociative && rng.gen_bool(0.35);
        if track_bands {
            c.band_size = 0;
            c.band_tracks = rng.gen_range(4..=32);
        } else {
            c.band_size = (log_uniform(&mut rng, 8.0, 128.0)).round() as u64 * MIB;
        }
        match stl {
            StlKind::Journal => {
                c.map_entries = (log_uniform(&mut rng, 20e3, 400e3) / 1e3).round() as u64 * 1000;
                c.journal_entry_min = [512 << 10, MIB, 2 * MIB][rng.gen_range(0..3)];
                c.journal_entry_quantum = [512 << 10, MIB][rng.gen_range(0..2)];
                c.journal_entry_max =
                    c.journal_entry_min + c.journal_entry_quantum * rng.gen_range(2..=6);
                c.journal_oob = rng.gen_range(2..=16) * (512 << 10);
                c.map_merge_every = if rng.gen_bool(0.2) {
                    0
                } else {
                    rng.gen_range(60..=1000)
                };
            }
            StlKind::SetAssociative => {
                if rng.gen_bool(0.3) {
                    c.cache_media = Med::Flash;
                    c.flash_latency_us = rng.gen_range(50..=300);
                    c.flash_mb_s = rng.gen_range(200..=800);
                }
            }
            StlKind::FullyAssociative => {
                c.mapping = Mapping::Dynamic;
                // Several zones, each with a share of the spare bands.
                let zmax = (capacity / 4).min(64 * GIB) as f64;
                c.zone_size = (log_uniform(&mut rng, 8.0 * GIB as f64, zmax.max(8.0 * GIB as f64))
                    / GIB as f64)
                    .round() as u64
                    * GIB;
            }
        }
        let Ok(c) = DmConfig::from_toml(&c.to_toml()) else {
            continue;
        };
        let Ok(d) = DmDrive::new(c.clone()) else {
            continue;
        };
        let real = d.stl_stats().cache_bytes;
        // A fully associative drive rounds its spares up to two bands per zone: keep drives
        // whose spares are what the configuration asks for.
        if stl == StlKind::FullyAssociative && real as f64 > 1.1 * c.cache_size as f64 {
            continue;
        }
        return (c, real);
    }
}

/// The drive's class in the per-class table.
fn class(c: &DmConfig) -> &'static str {
    match (c.stl, c.cache_media, c.cache_location, c.band_size == 0) {
        (StlKind::Journal, _, _, true) => "journal, track bands",
        (StlKind::Journal, _, _, false) => "journal, fixed bands",
        (StlKind::SetAssociative, Med::Flash, _, _) => "set-assoc, flash",
        (StlKind::SetAssociative, _, Loc::Distributed, _) => "set-assoc, distributed",
        (StlKind::SetAssociative, _, _, _) => "set-assoc, single",
        (StlKind::FullyAssociative, _, _, _) => "fully-assoc",
    }
}

fn describe(c: &DmConfig) -> String {
    let band = if c.band_size == 0 {
        format!("{}-track bands", c.band_tracks)
    } else {
        format!("{} MiB bands", c.band_size >> 20)
    };
    let cache = match c.cache_media {
        Med::Flash => "flash".to_string(),
        Med::Disk => format!("{:?}", c.cache_location).to_lowercase(),
    };
    let mut d = format!(
        "{:?} {} {:.1} TB, {cache} {:.1} GiB, {band}, {:?}{}, vc {}",
        c.stl,
        c.media,
        c.capacity as f64 / 1e12,
        c.cache_size as f64 / GIB as f64,
        c.cleaning,
        if c.cleaning == Cleaning::Aggressive {
            format!(" {:.2}s", c.idle_before_cleaning as f64 / 1e9)
        } else {
            String::new()
        },
        c.volatile_cache
    );
    if c.stl == StlKind::Journal {
        d.push_str(&format!(
            ", map {}k, merge {}, entries {}K+{}K..{}K oob {}K",
            c.map_entries / 1000,
            c.map_merge_every,
            c.journal_entry_min >> 10,
            c.journal_entry_quantum >> 10,
            c.journal_entry_max >> 10,
            c.journal_oob >> 10
        ));
    }
    if c.stl == StlKind::FullyAssociative {
        d.push_str(&format!(", zones {} GiB", c.zone_size >> 30));
    }
    d
}

/// One probed drive.
struct Row {
    index: usize,
    class: &'static str,
    name: String,
    checks: Vec<Check>,
    wall_s: f64,
    note: String,
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

/// Prints the tables; returns (right, loose, total).
fn tables(rows: &[Row]) -> (usize, usize, usize) {
    let all: Vec<&Check> = rows.iter().flat_map(|r| r.checks.iter()).collect();
    let mut props: Vec<&'static str> = Vec::new();
    for c in &all {
        if !props.contains(&c.property) {
            props.push(c.property);
        }
    }
    println!("\n| field | checks | right | wrong | null | right (15%) |\n| --- | --- | --- | --- | --- | --- |");
    for p in &props {
        let cs: Vec<&&Check> = all.iter().filter(|c| c.property == *p).collect();
        let right = cs.iter().filter(|c| c.right).count();
        let null = cs.iter().filter(|c| !c.answered).count();
        let loose = cs.iter().filter(|c| c.loose).count();
        println!(
            "| {p} | {} | {right} | {} | {null} | {loose} |",
            cs.len(),
            cs.len() - right - null
        );
    }
    let mut classes: Vec<&'static str> = Vec::new();
    for r in rows {
        if !classes.contains(&r.class) {
            classes.push(r.class);
        }
    }
    classes.sort_unstable();
    println!("\n| class | drives | checks | right | wrong | null | accuracy | accuracy (15%) | slowest probe |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for cl in classes {
        let rs: Vec<&Row> = rows.iter().filter(|r| r.class == cl).collect();
        let cs: Vec<&Check> = rs.iter().flat_map(|r| r.checks.iter()).collect();
        let right = cs.iter().filter(|c| c.right).count();
        let null = cs.iter().filter(|c| !c.answered).count();
        let loose = cs.iter().filter(|c| c.loose).count();
        let slow = rs.iter().map(|r| r.wall_s).fold(0.0, f64::max);
        println!(
            "| {cl} | {} | {} | {right} | {} | {null} | {} | {} | {slow:.1} s |",
            rs.len(),
            cs.len(),
            cs.len() - right - null,
            pct(right, cs.len()),
            pct(loose, cs.len())
        );
    }
    println!("\nwrong or null answers:");
    for r in rows {
        for c in r.checks.iter().filter(|c| !c.right) {
            println!(
                "  #{} {}: {} expected {} got {}",
                r.index, r.class, c.property, c.expected, c.got
            );
        }
    }
    let right = all.iter().filter(|c| c.right).count();
    let loose = all.iter().filter(|c| c.loose).count();
    let answered = all.iter().filter(|c| c.answered).count();
    let mut walls: Vec<f64> = rows.iter().map(|r| r.wall_s).collect();
    walls.sort_by(f64::total_cmp);
    println!(
        "\nall: {right} right of {} checks ({}; {} within 15%), {} wrong, {} null; {} drives, wall time median {:.1} s, max {:.1} s, total {:.0} s",
        all.len(),
        pct(right, all.len()),
        pct(loose, all.len()),
        answered - right,
        all.len() - answered,
        rows.len(),
        walls.get(walls.len() / 2).copied().unwrap_or(0.0),
        walls.last().copied().unwrap_or(0.0),
        walls.iter().sum::<f64>()
    );
    (right, loose, all.len())
}

/// Probes drive `i` with `tests`, keeping only the checks of `fields` (all when empty).
fn run_one(seed: u64, i: usize, tests: &str, fields: &[&str], budget: Duration) -> Row {
    let (cfg, _) = draw(seed, i);
    let name = describe(&cfg);
    let t = Instant::now();
    let got = probe_dm_within(&cfg, tests, Some(budget));
    let wall_s = t.elapsed().as_secs_f64();
    let (checks, note) = match got {
        Ok(r) => {
            if let Ok(dir) = std::env::var("TEGULA_PROBE_MATRIX_JSON") {
                let _ = std::fs::create_dir_all(&dir);
                let _ = std::fs::write(
                    format!("{dir}/drive-{i:03}.json"),
                    serde_json::to_string_pretty(&r).unwrap_or_default(),
                );
                let _ = std::fs::write(format!("{dir}/drive-{i:03}.toml"), cfg.to_toml());
            }
            let mut slow: Vec<(f64, u8)> = r.tests.iter().map(|t| (t.wall_s, t.id)).collect();
            slow.sort_by(|a, b| b.0.total_cmp(&a.0));
            let note = slow
                .iter()
                .take(3)
                .map(|(w, id)| format!("T{id} {w:.1}s"))
                .collect::<Vec<_>>()
                .join(", ");
            (checks_dm_truth(&cfg, &r, Some(Truth::of(&cfg))), note)
        }
        Err(why) => {
            // Stopped by the harness: every field of the drive counts as null.
            let empty = tegula_skylight::Report::new(
                String::new(),
                tegula_skylight::ClockKind::Virtual,
                cfg.capacity,
                4096,
            );
            (checks_dm_truth(&cfg, &empty, Some(Truth::of(&cfg))), why)
        }
    };
    let checks: Vec<Check> = checks
        .into_iter()
        .filter(|c| fields.is_empty() || fields.contains(&c.property))
        .collect();
    let right = checks.iter().filter(|c| c.right).count();
    println!(
        "#{i} [{}] {name}: {right}/{} right, {wall_s:.1} s wall ({note})",
        class(&cfg),
        checks.len()
    );
    Row {
        index: i,
        class: class(&cfg),
        name,
        checks,
        wall_s,
        note,
    }
}

#[test]
fn drawn_drives_are_probed_right() {
    let seed: u64 = std::env::var("TEGULA_PROBE_MATRIX_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(31);
    let n: Option<usize> = std::env::var("TEGULA_PROBE_MATRIX")
        .ok()
        .and_then(|v| v.parse().ok());
    let only = std::env::var("TEGULA_PROBE_MATRIX_ONLY").unwrap_or_default();
    let budget = Duration::from_secs(
        std::env::var("TEGULA_PROBE_MATRIX_BUDGET")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(600),
    );
    let (count, tests, fields): (usize, &str, &[&str]) = match n {
        Some(n) => (n, "", &[]),
        // The quick run: TESTs 1-3 on two drives, graded on what those tests decide.
        None => (
            2,
            "1-3",
            &[
                "drive_type",
                "cache.media",
                "volatile_cache",
                "cache.layout",
                "cache.location",
                "cleaning.kind",
                "cleaning.idle_delay_s",
                "journal.entry_min_bytes",
                "journal.entry_quantum_bytes",
                "journal.oob_bytes",
                "journal.map_merge_every",
            ],
        ),
    };
    let picked: Vec<usize> = (0..count.max(1))
        .filter(|&i| {
            only.is_empty()
                || only.split(',').any(|p| {
                    p.trim().parse::<usize>().ok() == Some(i)
                        || (!p.trim().is_empty()
                            && p.trim().parse::<usize>().is_err()
                            && class(&draw(seed, i).0).contains(p.trim()))
                })
        })
        .collect();
    if std::env::var("TEGULA_PROBE_MATRIX_LIST").is_ok() {
        for &i in &picked {
            let (c, real) = draw(seed, i);
            if let Ok(dir) = std::env::var("TEGULA_PROBE_MATRIX_JSON") {
                let _ = std::fs::create_dir_all(&dir);
                let _ = std::fs::write(format!("{dir}/drive-{i:03}.toml"), c.to_toml());
            }
            println!(
                "#{i} [{}] {} (real cache {:.2} GiB)",
                class(&c),
                describe(&c),
                real as f64 / GIB as f64
            );
        }
        return;
    }
    let mut rows = Vec::new();
    for i in picked {
        rows.push(run_one(seed, i, tests, fields, budget));
    }
    for r in &rows {
        println!("#{} {}: {:.1} s ({})", r.index, r.name, r.wall_s, r.note);
    }
    let (right, _, total) = tables(&rows);
    if n.is_none() {
        assert!(right * 10 >= total * 8, "{right} of {total}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 64,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(
            "tests/proptest-regressions/accuracy_matrix.txt",
        ))),
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// The generator's space is the issue's: every STL, 500 GB-8 TB, caches of 2-32 GiB
    /// (a fully associative drive's spares as asked), track bands of 4-32 tracks or bands
    /// of 8-128 MiB, idle 0.2-5 s, journal entries that grow to a bound, and a configuration
    /// that survives its TOML (what `disk create --config` reads) and builds a drive.
    #[test]
    fn drawn_configurations_are_valid_and_in_range(seed in 0u64..1_000_000, i in 0usize..300) {
        let (c, real) = draw(seed, i);
        proptest::prop_assert!((500_000_000_000..=8_000_000_000_000).contains(&c.capacity));
        proptest::prop_assert!((2 * GIB - MIB..=32 * GIB + MIB).contains(&c.cache_size), "{}", c.cache_size);
        proptest::prop_assert!(real > 0);
        if c.band_size == 0 {
            proptest::prop_assert!((4..=32).contains(&c.band_tracks));
            proptest::prop_assert!(c.stl != StlKind::FullyAssociative);
        } else {
            proptest::prop_assert!((8 * MIB..=128 * MIB).contains(&c.band_size));
        }
        proptest::prop_assert!((200_000_000..=5_000_000_000).contains(&c.idle_before_cleaning));
        if c.stl == StlKind::Journal {
            proptest::prop_assert!(c.journal_entry_min < c.journal_entry_max);
            proptest::prop_assert_eq!(
                (c.journal_entry_max - c.journal_entry_min) % c.journal_entry_quantum,
                0
            );
        }
        let back = DmConfig::from_toml(&c.to_toml()).ok();
        proptest::prop_assert_eq!(back, Some(c.clone()));
        proptest::prop_assert!(DmDrive::new(c).is_ok());
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 3,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Direct(
            "tests/proptest-regressions/accuracy_matrix.txt",
        ))),
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// TEST 1 on any drawn drive: an SMR drive, and its cache medium.
    #[test]
    fn test_1_gets_the_drive_type_and_cache_medium_of_any_drawn_drive(seed in 0u64..1_000_000, i in 0usize..300) {
        let (c, _) = draw(seed, i);
        let r = probe_dm_within(&c, "1", Some(Duration::from_secs(300)));
        proptest::prop_assert!(r.is_ok(), "{}: {:?}", describe(&c), r.err());
        let r = r.unwrap();
        proptest::prop_assert_eq!(r.drive_type, Some(tegula_skylight::report::DriveType::Smr), "{}", describe(&c));
        let want = match c.cache_media {
            Med::Flash => tegula_skylight::report::CacheMedia::Flash,
            Med::Disk => tegula_skylight::report::CacheMedia::Disk,
        };
        proptest::prop_assert_eq!(r.cache.media, Some(want), "{}", describe(&c));
    }
}
